//! The configuration file: which clusters to watch and how to reach them.
//!
//! ```toml
//! read_only = false            # optional: refuse every action that changes anything
//! theme = "default"            # optional: default | light | high-contrast | mono | a theme file
//! keymap = "default"           # optional: default | vim | a keymap file
//!
//! [[cluster]]
//! name = "hpc"                 # unique; used in job refs like hpc/1234
//! kind = "slurm"
//! host = "login.example.org"   # ssh destination (an ~/.ssh/config alias works); omit for local commands
//! user = "alice"               # optional
//! port = 22                    # optional
//! identity_file = "~/.ssh/id_ed25519"   # optional, ~ expanded
//! known_hosts = "strict"       # strict (default) | accept-new | off
//! known_hosts_file = "/path"   # optional: use this known_hosts file instead of the user's
//! refresh_seconds = 10         # full refresh interval (default 10, at least 1)
//! timeout_seconds = 30         # per-command timeout (default 30, at least 1)
//!
//! [[cluster]]
//! name = "k8s-prod"
//! kind = "kubernetes"
//! context = "prod"             # optional: a kubeconfig context (default: the current one)
//! kubeconfig = "~/.kube/config" # optional (default: $KUBECONFIG, else ~/.kube/config)
//! namespaces = ["ml", "infer"] # optional (default: every namespace the user may list)
//! queue = "team-a"             # optional: Kueue LocalQueue for submissions
//! refresh_seconds = 10         # how often the (watched) picture is re-read at the latest
//! timeout_seconds = 30         # bound on every request and action
//! ```
//!
//! The ssh keys (`host`, `user`, `port`, `identity_file`, `known_hosts`, `known_hosts_file`)
//! belong to Slurm clusters, the kubeconfig keys (`context`, `kubeconfig`, `namespaces`,
//! `queue`) to Kubernetes clusters; a key of the other kind is refused. Several contexts are
//! several `[[cluster]]` entries.
//!
//! The file lives at `$XDG_CONFIG_HOME/flightdeck/config.toml` (`~/.config/flightdeck/config.toml`)
//! unless `--config FILE` names another. Without a file the embedded default watches this
//! machine when it has Slurm's commands, and the kubeconfig's current context when there is
//! one (a cluster named after the context).
//!
//! Every problem is refused with a message that names the file, the 1-based line and the key:
//! `/home/a/.config/flightdeck/config.toml:7: unknown key `hostt` in [[cluster]] "hpc" (expected one of: name, kind, …)`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// Refresh interval when the file does not say.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(10);
/// Per-command timeout when the file does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The name of the cluster the embedded default creates for this machine.
pub const LOCAL_CLUSTER_NAME: &str = "local";

/// The whole configuration, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Refuse every action that changes anything (submit, cancel, drain …).
    pub read_only: bool,
    pub clusters: Vec<ClusterConfig>,
    /// The cockpit's theme: a builtin name or a file path (`~` expanded).
    pub theme: Option<String>,
    /// The cockpit's keymap: a builtin name or a file path (`~` expanded).
    pub keymap: Option<String>,
    /// Where this configuration came from (for messages and `flightdeck doctor`).
    pub source: ConfigSource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    /// No file: this machine, see [`Config::embedded_default`].
    EmbeddedDefault,
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::File(path) => write!(f, "{}", path.display()),
            ConfigSource::EmbeddedDefault => f.write_str("the embedded default (no config file)"),
        }
    }
}

/// One cluster and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Unique; `[A-Za-z0-9_.-]+`, never `/`, never starting with `-`.
    pub name: String,
    pub kind: ClusterKind,
    /// The ssh destination; `None` runs the commands on this machine.
    pub host: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// `~` already expanded.
    pub identity_file: Option<PathBuf>,
    pub known_hosts: KnownHosts,
    /// `~` already expanded.
    pub known_hosts_file: Option<PathBuf>,
    pub refresh: Duration,
    pub timeout: Duration,
    /// Kubernetes: the kubeconfig context; `None` is the current one.
    pub context: Option<String>,
    /// Kubernetes: the kubeconfig file (`~` already expanded); `None` is `$KUBECONFIG`,
    /// else `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// Kubernetes: the namespaces to watch; empty means every namespace the user may list.
    pub namespaces: Vec<String>,
    /// Kubernetes: the Kueue LocalQueue that submissions go to.
    pub queue: Option<String>,
}

impl ClusterConfig {
    /// A cluster with every optional setting at its default (local commands, strict host keys,
    /// the current kubeconfig context).
    pub fn new(name: impl Into<String>, kind: ClusterKind) -> Self {
        Self {
            name: name.into(),
            kind,
            host: None,
            user: None,
            port: None,
            identity_file: None,
            known_hosts: KnownHosts::Strict,
            known_hosts_file: None,
            refresh: DEFAULT_REFRESH,
            timeout: DEFAULT_TIMEOUT,
            context: None,
            kubeconfig: None,
            namespaces: Vec::new(),
            queue: None,
        }
    }

    /// Commands run on this machine rather than over ssh.
    pub fn is_local(&self) -> bool {
        self.host.is_none()
    }
}

/// The orchestrators a cluster entry can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterKind {
    Slurm,
    Kubernetes,
}

impl ClusterKind {
    /// Every kind the config file accepts, as written there.
    pub const ACCEPTED: &'static [&'static str] = &["slurm", "kubernetes"];

    pub fn as_str(self) -> &'static str {
        match self {
            ClusterKind::Slurm => "slurm",
            ClusterKind::Kubernetes => "kubernetes",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "slurm" => Some(ClusterKind::Slurm),
            "kubernetes" => Some(ClusterKind::Kubernetes),
            _ => None,
        }
    }

    /// The keys a `[[cluster]]` of this kind may use, as written in the file.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            ClusterKind::Slurm => &[
                "name",
                "kind",
                "host",
                "user",
                "port",
                "identity_file",
                "known_hosts",
                "known_hosts_file",
                "refresh_seconds",
                "timeout_seconds",
            ],
            ClusterKind::Kubernetes => {
                &["name", "kind", "context", "kubeconfig", "namespaces", "queue", "refresh_seconds", "timeout_seconds"]
            }
        }
    }
}

impl std::fmt::Display for ClusterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the ssh transport treats host keys it does not know yet.
///
/// The default is strict: an unknown or changed host key stops the connection. Nothing
/// accepts keys silently unless the user wrote so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KnownHosts {
    /// Only hosts already in known_hosts (`StrictHostKeyChecking=yes`).
    #[default]
    Strict,
    /// Record keys of new hosts, refuse changed ones (`StrictHostKeyChecking=accept-new`).
    AcceptNew,
    /// No checking at all (`StrictHostKeyChecking=no`); for throw-away test beds only.
    Off,
}

impl KnownHosts {
    /// Every value the config file accepts, as written there.
    pub const ACCEPTED: &'static [&'static str] = &["strict", "accept-new", "off"];

    pub fn as_str(self) -> &'static str {
        match self {
            KnownHosts::Strict => "strict",
            KnownHosts::AcceptNew => "accept-new",
            KnownHosts::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "strict" => Some(KnownHosts::Strict),
            "accept-new" => Some(KnownHosts::AcceptNew),
            "off" => Some(KnownHosts::Off),
            _ => None,
        }
    }

    /// The value of ssh's `StrictHostKeyChecking` option.
    pub fn ssh_option_value(self) -> &'static str {
        match self {
            KnownHosts::Strict => "yes",
            KnownHosts::AcceptNew => "accept-new",
            KnownHosts::Off => "no",
        }
    }
}

/// Why a configuration was refused. `Display` is the text the user reads.
/// Why a TOML file of ours (the config, a keymap, a theme) was refused. `Display` is the
/// text the user reads: the file, the 1-based line and what is wrong there.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A file named explicitly (`--config FILE`, `keymap = "…"`) does not exist.
    #[error("{}: no such {what} file", path.display())]
    NotFound { what: &'static str, path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax, unknown key, wrong type or bad value, at `line` (1-based).
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        /// The key at fault, where there is one (`hostt`, `port`, `C` in a keymap, `error.fg`
        /// in a theme).
        key: Option<String>,
        message: String,
    },
}

/// Errors of the config file.
pub type ConfigError = FileError;

impl FileError {
    /// The 1-based line, for [`FileError::Invalid`].
    pub fn line(&self) -> Option<usize> {
        match self {
            FileError::Invalid { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The key at fault, for [`FileError::Invalid`].
    pub fn key(&self) -> Option<&str> {
        match self {
            FileError::Invalid { key, .. } => key.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn invalid(path: &Path, problem: tomlpos::Problem) -> FileError {
        FileError::Invalid { path: path.to_path_buf(), line: problem.line, key: problem.key, message: problem.message }
    }
}

/// Read a whole `what` file (`config`, `keymap`, `theme`), a missing one named as such.
pub(crate) fn read_file(path: &Path, what: &'static str) -> Result<String, FileError> {
    std::fs::read_to_string(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound { what, path: path.to_path_buf() },
        _ => FileError::Io { path: path.to_path_buf(), source: err },
    })
}

impl Config {
    /// Read the configuration.
    ///
    /// With `Some(path)` (from `--config`) the file must exist. With `None` the default path
    /// is used when a file is there, else [`Config::embedded_default`].
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        match path {
            Some(path) => Self::load_file(path, true),
            None => match default_config_path() {
                Some(path) => Self::load_file(&path, false),
                None => Ok(Self::embedded_default()),
            },
        }
    }

    fn load_file(path: &Path, must_exist: bool) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_toml_str(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if must_exist {
                    Err(ConfigError::NotFound { what: "config", path: path.to_path_buf() })
                } else {
                    Ok(Self::embedded_default())
                }
            }
            Err(source) => Err(ConfigError::Io { path: path.to_path_buf(), source }),
        }
    }

    /// Parse and validate a configuration; `origin` names the file in messages and in
    /// [`Config::source`].
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        let config_text = text;
        let invalid = |line: usize, key: Option<&str>, message: String| ConfigError::Invalid {
            path: origin.to_path_buf(),
            line,
            key: key.map(str::to_string),
            message,
        };

        let raw: RawConfig = toml::from_str(text).map_err(|err| {
            let problem = tomlpos::describe(text, &err, &describe_section);
            let problem = improve_cluster_problem(problem);
            invalid(problem.line, problem.key.as_deref(), problem.message)
        })?;

        let mut clusters: Vec<ClusterConfig> = Vec::with_capacity(raw.cluster.len());
        let mut first_line_of: Vec<(String, usize)> = Vec::new();
        for (index, entry) in raw.cluster.iter().enumerate() {
            let raw_cluster = entry.get_ref();
            let name = raw_cluster.name.get_ref();
            let section = format!("[[cluster]] {}", cluster_label(Some(name), index));
            let at = |spanned_start: usize| tomlpos::line_of(text, spanned_start);

            // name
            let name_line = at(raw_cluster.name.span().start);
            if let Err(why) = check_cluster_name(name) {
                return Err(invalid(
                    name_line,
                    Some("name"),
                    format!("bad value for `name` in [[cluster]] #{}: {why}", index + 1),
                ));
            }
            if let Some((_, first)) = first_line_of.iter().find(|(n, _)| n == name) {
                return Err(invalid(
                    name_line,
                    Some("name"),
                    format!(
                        "bad value for `name` in [[cluster]] #{}: duplicate cluster name {name:?} (first used on line {first})",
                        index + 1
                    ),
                ));
            }
            first_line_of.push((name.clone(), name_line));

            // kind
            let kind_text = raw_cluster.kind.get_ref();
            let Some(kind) = ClusterKind::parse(kind_text) else {
                return Err(invalid(
                    at(raw_cluster.kind.span().start),
                    Some("kind"),
                    format!(
                        "bad value for `kind` in {section}: unknown cluster kind {kind_text:?} (accepted kinds: {})",
                        ClusterKind::ACCEPTED.join(", ")
                    ),
                ));
            };

            let mut cluster = ClusterConfig::new(name.clone(), kind);

            // Keys of the other kind.
            let present: [(&str, Option<usize>); 10] = [
                ("host", raw_cluster.host.as_ref().map(|v| v.span().start)),
                ("user", raw_cluster.user.as_ref().map(|v| v.span().start)),
                ("port", raw_cluster.port.as_ref().map(|v| v.span().start)),
                ("identity_file", raw_cluster.identity_file.as_ref().map(|v| v.span().start)),
                ("known_hosts", raw_cluster.known_hosts.as_ref().map(|v| v.span().start)),
                ("known_hosts_file", raw_cluster.known_hosts_file.as_ref().map(|v| v.span().start)),
                ("context", raw_cluster.context.as_ref().map(|v| v.span().start)),
                ("kubeconfig", raw_cluster.kubeconfig.as_ref().map(|v| v.span().start)),
                ("namespaces", raw_cluster.namespaces.as_ref().map(|v| v.span().start)),
                ("queue", raw_cluster.queue.as_ref().map(|v| v.span().start)),
            ];
            if let Some((key, Some(offset))) =
                present.iter().find(|(key, offset)| offset.is_some() && !kind.keys().contains(key))
            {
                let key_line = tomlpos::Doc::parse(text)
                    .key_offset(&[
                        tomlpos::Seg::Key("cluster".into()),
                        tomlpos::Seg::Index(index),
                        tomlpos::Seg::Key((*key).into()),
                    ])
                    .map(&at)
                    .unwrap_or_else(|| at(*offset));
                return Err(invalid(
                    key_line,
                    Some(key),
                    format!(
                        "`{key}` does not apply to a {kind} cluster in {section} (keys for kind = \"{kind}\": {})",
                        kind.keys().join(", ")
                    ),
                ));
            }

            // context, queue: one word each.
            for (key, value, slot) in [
                ("context", &raw_cluster.context, &mut cluster.context),
                ("queue", &raw_cluster.queue, &mut cluster.queue),
            ] {
                if let Some(value) = value {
                    let why = match key {
                        "queue" => check_k8s_name(value.get_ref(), 63, true).err(),
                        _ => check_context(value.get_ref()).err(),
                    };
                    if let Some(why) = why {
                        return Err(invalid(
                            at(value.span().start),
                            Some(key),
                            format!("bad value for `{key}` in {section}: {why}"),
                        ));
                    }
                    *slot = Some(value.get_ref().clone());
                }
            }

            if let Some(value) = &raw_cluster.kubeconfig {
                let path = value.get_ref();
                if path.trim().is_empty() || path.chars().any(char::is_control) {
                    return Err(invalid(
                        at(value.span().start),
                        Some("kubeconfig"),
                        format!("bad value for `kubeconfig` in {section}: expected a file path, found {path:?}"),
                    ));
                }
                cluster.kubeconfig = Some(expand_tilde(path));
            }

            if let Some(list) = &raw_cluster.namespaces {
                if list.get_ref().is_empty() {
                    return Err(invalid(
                        at(list.span().start),
                        Some("namespaces"),
                        format!(
                            "bad value for `namespaces` in {section}: the list is empty (leave `namespaces` out to watch every namespace you may list)"
                        ),
                    ));
                }
                for ns in list.get_ref() {
                    let value = ns.get_ref();
                    let why = check_k8s_name(value, 63, false)
                        .err()
                        .or_else(|| cluster.namespaces.contains(value).then(|| format!("{value:?} is listed twice")));
                    if let Some(why) = why {
                        return Err(invalid(
                            at(ns.span().start),
                            Some("namespaces"),
                            format!("bad value for `namespaces` in {section}: {why}"),
                        ));
                    }
                    cluster.namespaces.push(value.clone());
                }
            }

            // host, user: handed to ssh as arguments; refuse what ssh would read as an option.
            for (key, value, slot) in
                [("host", &raw_cluster.host, &mut cluster.host), ("user", &raw_cluster.user, &mut cluster.user)]
            {
                if let Some(value) = value {
                    if let Err(why) = check_ssh_word(value.get_ref()) {
                        return Err(invalid(
                            at(value.span().start),
                            Some(key),
                            format!("bad value for `{key}` in {section}: {why}"),
                        ));
                    }
                    *slot = Some(value.get_ref().clone());
                }
            }

            if let Some(port) = &raw_cluster.port {
                if *port.get_ref() == 0 {
                    return Err(invalid(
                        at(port.span().start),
                        Some("port"),
                        format!("bad value for `port` in {section}: 0 is not a port (use 1–65535)"),
                    ));
                }
                cluster.port = Some(*port.get_ref());
            }

            for (key, value, slot) in [
                ("identity_file", &raw_cluster.identity_file, &mut cluster.identity_file),
                ("known_hosts_file", &raw_cluster.known_hosts_file, &mut cluster.known_hosts_file),
            ] {
                if let Some(value) = value {
                    let path = value.get_ref();
                    if path.trim().is_empty() || path.chars().any(char::is_control) {
                        return Err(invalid(
                            at(value.span().start),
                            Some(key),
                            format!("bad value for `{key}` in {section}: expected a file path, found {path:?}"),
                        ));
                    }
                    *slot = Some(expand_tilde(path));
                }
            }

            if let Some(value) = &raw_cluster.known_hosts {
                let text_value = value.get_ref();
                let Some(policy) = KnownHosts::parse(text_value) else {
                    return Err(invalid(
                        at(value.span().start),
                        Some("known_hosts"),
                        format!(
                            "bad value for `known_hosts` in {section}: {text_value:?} (expected one of: {})",
                            KnownHosts::ACCEPTED.join(", ")
                        ),
                    ));
                };
                cluster.known_hosts = policy;
            }

            for (key, value, slot) in [
                ("refresh_seconds", &raw_cluster.refresh_seconds, &mut cluster.refresh),
                ("timeout_seconds", &raw_cluster.timeout_seconds, &mut cluster.timeout),
            ] {
                if let Some(value) = value {
                    if *value.get_ref() == 0 {
                        return Err(invalid(
                            at(value.span().start),
                            Some(key),
                            format!("bad value for `{key}` in {section}: must be at least 1"),
                        ));
                    }
                    *slot = Duration::from_secs(*value.get_ref());
                }
            }

            clusters.push(cluster);
        }

        let mut choices = [
            (None, &raw.theme, "theme", crate::tui::theme::Theme::names()),
            (None, &raw.keymap, "keymap", crate::tui::keymap::Keymap::names()),
        ];
        for (resolved, value, key, builtins) in choices.iter_mut() {
            let Some(value) = value else { continue };
            let text = value.get_ref();
            if builtins.contains(&text.as_str()) {
                *resolved = Some(text.clone());
                continue;
            }
            let path = expand_tilde(text);
            if !path.is_file() {
                return Err(invalid(
                    tomlpos::line_of(config_text, value.span().start),
                    Some(key),
                    format!(
                        "bad value for `{key}`: `{text}` is neither a builtin {key} ({}) nor an existing file",
                        builtins.join(", ")
                    ),
                ));
            }
            *resolved = Some(path.display().to_string());
        }
        let [(theme, ..), (keymap, ..)] = choices;

        Ok(Config {
            read_only: raw.read_only.unwrap_or(false),
            clusters,
            theme,
            keymap,
            source: ConfigSource::File(origin.to_path_buf()),
        })
    }

    /// No config file: this machine as one Slurm cluster named `local`, when `squeue` is on
    /// `PATH`, and the kubeconfig's current context (`$KUBECONFIG`, else `~/.kube/config`) as
    /// a Kubernetes cluster named after it, when there is one; otherwise no clusters at all
    /// (the CLI explains what to write).
    pub fn embedded_default() -> Config {
        let mut clusters = match find_program("squeue") {
            Some(_) => vec![ClusterConfig::new(LOCAL_CLUSTER_NAME, ClusterKind::Slurm)],
            None => Vec::new(),
        };
        if let Some(context) = current_kube_context() {
            clusters.push(kube_default_cluster(&context, &clusters));
        }
        Config { read_only: false, clusters, theme: None, keymap: None, source: ConfigSource::EmbeddedDefault }
    }

    /// The cluster with this name.
    pub fn cluster(&self, name: &str) -> Option<&ClusterConfig> {
        self.clusters.iter().find(|c| c.name == name)
    }
}

/// The current context of the user's kubeconfig (`$KUBECONFIG`, else `~/.kube/config`), when
/// one is set and names a context the file defines.
pub fn current_kube_context() -> Option<String> {
    let kubeconfig = ::kube::config::Kubeconfig::read().ok()?;
    let current = kubeconfig.current_context.clone().filter(|c| !c.is_empty())?;
    kubeconfig.contexts.iter().any(|c| c.name == current).then_some(current)
}

/// The embedded default's cluster for a kubeconfig context: named after the context (made
/// a usable cluster name), pinned to it.
fn kube_default_cluster(context: &str, taken: &[ClusterConfig]) -> ClusterConfig {
    let mut name: String = context
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' })
        .collect();
    name = name.trim_start_matches(['-', '.']).to_string();
    if name.is_empty() || check_cluster_name(&name).is_err() {
        name = "kubernetes".into();
    }
    if taken.iter().any(|c| c.name == name) {
        name.push_str("-k8s");
    }
    let mut cluster = ClusterConfig::new(name, ClusterKind::Kubernetes);
    cluster.context = Some(context.to_string());
    cluster
}

/// A kubeconfig context name: non-empty, no control characters.
fn check_context(value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err("the value is empty".into());
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{value:?} contains a control character"));
    }
    Ok(())
}

/// A Kubernetes name: a namespace (DNS-1123 label: `[a-z0-9-]`, starting and ending with a
/// letter or digit) or, with `label_value`, a label value (also `A-Z`, `_`, `.`), at most
/// `max` characters.
fn check_k8s_name(value: &str, max: usize, label_value: bool) -> Result<(), String> {
    let what = if label_value { "a queue name" } else { "a namespace name" };
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.len() > max {
        return Err(format!("{value:?} is longer than {max} characters"));
    }
    let allowed = |c: char| {
        c.is_ascii_digit()
            || c == '-'
            || c.is_ascii_lowercase()
            || (label_value && (c.is_ascii_uppercase() || c == '_' || c == '.'))
    };
    if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
        return Err(format!("{value:?} contains {bad:?}, which {what} cannot hold"));
    }
    if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) || !value.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err(format!("{what} starts and ends with a letter or digit, {value:?} does not"));
    }
    Ok(())
}

/// `$XDG_CONFIG_HOME/flightdeck/config.toml`, else `~/.config/flightdeck/config.toml`;
/// `None` only when there is no home directory either.
pub fn default_config_path() -> Option<PathBuf> {
    config_path_from(std::env::var_os("XDG_CONFIG_HOME").as_deref(), home_dir().as_deref())
}

/// Where logs and the audit log go: `$XDG_STATE_HOME/flightdeck`, else
/// `~/.local/state/flightdeck`, else (no home at all) `flightdeck-state` in the temp dir.
/// The directory is not created here.
pub fn state_dir() -> PathBuf {
    state_dir_from(std::env::var_os("XDG_STATE_HOME").as_deref(), home_dir().as_deref())
        .unwrap_or_else(|| std::env::temp_dir().join("flightdeck-state"))
}

/// A `which`: the first executable file called `name` in the directories of `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    find_program_in(name, std::env::var_os("PATH")?.as_os_str())
}

/// [`find_program`] over an explicit `PATH`-style list.
pub fn find_program_in(name: &str, path_var: &OsStr) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    std::env::split_paths(path_var)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

fn home_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf())
}

/// An XDG base directory variable counts only when it holds an absolute path (the spec says
/// relative values are to be ignored).
fn xdg_base(var: Option<&OsStr>) -> Option<PathBuf> {
    var.map(PathBuf::from).filter(|p| p.is_absolute())
}

fn config_path_from(xdg_config_home: Option<&OsStr>, home: Option<&Path>) -> Option<PathBuf> {
    let base = xdg_base(xdg_config_home).or_else(|| home.map(|h| h.join(".config")))?;
    Some(base.join("flightdeck").join("config.toml"))
}

fn state_dir_from(xdg_state_home: Option<&OsStr>, home: Option<&Path>) -> Option<PathBuf> {
    let base = xdg_base(xdg_state_home).or_else(|| home.map(|h| h.join(".local").join("state")))?;
    Some(base.join("flightdeck"))
}

/// `~` and `~/…` become the home directory; anything else (`~user/…` too) is kept as written.
fn expand_tilde(path: &str) -> PathBuf {
    expand_tilde_with(path, home_dir().as_deref())
}

fn expand_tilde_with(path: &str, home: Option<&Path>) -> PathBuf {
    match (path, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

fn check_cluster_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        return Err(format!(
            "{name:?} contains {bad:?}; a cluster name uses only letters, digits, '_', '.' and '-' (no '/')"
        ));
    }
    if name.starts_with('-') {
        return Err(format!("{name:?} starts with '-', which reads as a command-line option"));
    }
    if name == "." || name == ".." {
        return Err(format!("{name:?} is not a usable name"));
    }
    Ok(())
}

/// Host and user names go to ssh as separate arguments: refuse empty ones, whitespace and
/// control characters, and a leading `-` (ssh would read it as an option).
fn check_ssh_word(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{value:?} contains whitespace or a control character"));
    }
    if value.starts_with('-') {
        return Err(format!("{value:?} starts with '-', which ssh would read as an option"));
    }
    Ok(())
}

fn cluster_label(name: Option<&str>, index: usize) -> String {
    match name {
        Some(name) => format!("{name:?}"),
        None => format!("#{}", index + 1),
    }
}

/// `[[cluster]] "hpc"` for a path inside the second cluster table; `None` at the top level.
fn describe_section(doc: &tomlpos::Doc<'_>, path: &[tomlpos::Seg]) -> Option<String> {
    match path {
        [tomlpos::Seg::Key(top), tomlpos::Seg::Index(index), ..] if top == "cluster" => {
            let name = doc.string_at(&[
                tomlpos::Seg::Key("cluster".into()),
                tomlpos::Seg::Index(*index),
                tomlpos::Seg::Key("name".into()),
            ]);
            Some(format!("[[cluster]] {}", cluster_label(name.as_deref(), *index)))
        }
        [tomlpos::Seg::Key(top), ..] if top == "cluster" => Some("[[cluster]]".into()),
        _ => None,
    }
}

/// A missing `kind` is worth the list of accepted kinds.
fn improve_cluster_problem(mut problem: tomlpos::Problem) -> tomlpos::Problem {
    if problem.key.as_deref() == Some("kind") && problem.message.starts_with("missing key") {
        problem.message.push_str(&format!(" (accepted kinds: {})", ClusterKind::ACCEPTED.join(", ")));
    }
    problem
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    theme: Option<Spanned<String>>,
    #[serde(default)]
    keymap: Option<Spanned<String>>,
    #[serde(default)]
    cluster: Vec<Spanned<RawCluster>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    host: Option<Spanned<String>>,
    #[serde(default)]
    user: Option<Spanned<String>>,
    #[serde(default)]
    port: Option<Spanned<u16>>,
    #[serde(default)]
    identity_file: Option<Spanned<String>>,
    #[serde(default)]
    known_hosts: Option<Spanned<String>>,
    #[serde(default)]
    known_hosts_file: Option<Spanned<String>>,
    #[serde(default)]
    refresh_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    timeout_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    context: Option<Spanned<String>>,
    #[serde(default)]
    kubeconfig: Option<Spanned<String>>,
    #[serde(default)]
    namespaces: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    queue: Option<Spanned<String>>,
}

/// Turning `toml` errors into `file:line: message naming the key`; shared with [`crate::spec`].
///
/// `toml::de::Error` carries a byte span but not (publicly) the key path. The document is
/// parsed a second time with `toml::de::DeTable::parse_recoverable`, which keeps the spans of
/// every key and value even when the text has errors; the innermost entry whose key or value
/// covers the error's offset is the key at fault.
pub(crate) mod tomlpos {
    use std::ops::Range;

    use toml::de::{DeTable, DeValue};

    /// One step of a key path: a table key or an array index.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Seg {
        Key(String),
        Index(usize),
    }

    /// A located problem: 1-based line, the key (if one is known) and the message.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Problem {
        pub line: usize,
        pub key: Option<String>,
        pub message: String,
    }

    impl Problem {
        pub fn new(line: usize, key: impl Into<String>, message: impl Into<String>) -> Problem {
            Problem { line, key: Some(key.into()), message: message.into() }
        }
    }

    /// The 1-based line holding byte `offset` of `text`.
    pub fn line_of(text: &str, offset: usize) -> usize {
        let end = offset.min(text.len());
        text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
    }

    /// A span-keeping parse of the document, for locating keys.
    pub struct Doc<'t> {
        root: DeTable<'t>,
    }

    struct Entry {
        path: Vec<Seg>,
        key_span: Range<usize>,
        value_span: Range<usize>,
        /// A `[table]` or `[[array]]` header rather than `key = value`.
        is_header: bool,
    }

    impl<'t> Doc<'t> {
        pub fn parse(text: &'t str) -> Self {
            let (root, _errors) = DeTable::parse_recoverable(text);
            Self { root: root.into_inner() }
        }

        /// The string at `path`, if there is one.
        pub fn string_at(&self, path: &[Seg]) -> Option<String> {
            let (first, rest) = path.split_first()?;
            let Seg::Key(first) = first else { return None };
            let mut value: &DeValue<'_> = self.root.get(first.as_str())?.get_ref();
            for seg in rest {
                value = match (seg, value) {
                    (Seg::Key(k), DeValue::Table(t)) => t.get(k.as_str())?.get_ref(),
                    (Seg::Index(i), DeValue::Array(a)) => a.get(*i)?.get_ref(),
                    _ => return None,
                };
            }
            value.as_str().map(str::to_string)
        }

        /// Where the key at `path` is written (byte offset of the key).
        pub fn key_offset(&self, path: &[Seg]) -> Option<usize> {
            let mut entries = Vec::new();
            collect(&self.root, &mut Vec::new(), &mut entries);
            entries.into_iter().find(|e| e.path == path).map(|e| e.key_span.start)
        }

        /// What covers `offset`: the innermost key or value; else a table header (a missing
        /// key is reported on `[[cluster]]`); else the last header before it (a key the
        /// recoverable parse dropped, such as a duplicate, still belongs to that table).
        fn locate(&self, offset: usize) -> Option<(Vec<Seg>, Hit)> {
            let mut entries = Vec::new();
            collect(&self.root, &mut Vec::new(), &mut entries);
            let deepest = |hit: &dyn Fn(&Entry) -> bool| entries.iter().filter(|e| hit(e)).max_by_key(|e| e.path.len());
            if let Some(e) =
                deepest(&|e| e.key_span.contains(&offset) || (!e.is_header && e.value_span.contains(&offset)))
            {
                return Some((e.path.clone(), Hit::Key));
            }
            if let Some(e) = deepest(&|e| e.is_header && e.value_span.contains(&offset)) {
                return Some((e.path.clone(), Hit::Header));
            }
            entries
                .iter()
                .filter(|e| e.is_header && e.value_span.start <= offset)
                .max_by_key(|e| e.value_span.start)
                .map(|e| (e.path.clone(), Hit::Before))
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Hit {
        /// A `key = value` entry (or a table's key) covers the offset.
        Key,
        /// A `[table]` / `[[array]]` header covers the offset.
        Header,
        /// Nothing covers it; the path is the table the offset lies in.
        Before,
    }

    fn collect(table: &DeTable<'_>, prefix: &mut Vec<Seg>, out: &mut Vec<Entry>) {
        for (key, value) in table.iter() {
            prefix.push(Seg::Key(key.get_ref().to_string()));
            let key_span = key.span();
            let value_span = value.span();
            match value.get_ref() {
                DeValue::Table(inner) => {
                    // A `[table]` header's span starts before its key; an inline table's
                    // span starts after the `=`.
                    let is_header = value_span.start <= key_span.start;
                    out.push(Entry { path: prefix.clone(), key_span: key_span.clone(), value_span, is_header });
                    collect(inner, prefix, out);
                }
                DeValue::Array(items) => {
                    let is_header = value_span.start <= key_span.start;
                    out.push(Entry { path: prefix.clone(), key_span: key_span.clone(), value_span, is_header });
                    for (index, item) in items.iter().enumerate() {
                        prefix.push(Seg::Index(index));
                        let item_span = item.span();
                        if let DeValue::Table(inner) = item.get_ref() {
                            out.push(Entry {
                                path: prefix.clone(),
                                key_span: item_span.start..item_span.start,
                                value_span: item_span,
                                is_header,
                            });
                            collect(inner, prefix, out);
                        } else {
                            out.push(Entry {
                                path: prefix.clone(),
                                key_span: item_span.start..item_span.start,
                                value_span: item_span,
                                is_header: false,
                            });
                        }
                        prefix.pop();
                    }
                }
                _ => out.push(Entry { path: prefix.clone(), key_span, value_span, is_header: false }),
            }
            prefix.pop();
        }
    }

    /// The last key in a path (`port` for cluster.0.port).
    fn last_key(path: &[Seg]) -> Option<String> {
        path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.clone()),
            Seg::Index(_) => None,
        })
    }

    /// The names between backticks after `expected` in a serde message, in order.
    fn expected_names(message: &str) -> Vec<String> {
        let Some(at) = message.find("expected") else { return Vec::new() };
        message[at..].split('`').skip(1).step_by(2).map(str::to_string).collect()
    }

    fn first_backticked(message: &str) -> Option<String> {
        message.split('`').nth(1).map(str::to_string)
    }

    /// Describe a `toml` error as a [`Problem`]. `section` names the table a path lies in
    /// (`[[cluster]] "hpc"`, `[env]`), `None` for the top level.
    pub fn describe(
        text: &str,
        err: &toml::de::Error,
        section: &dyn Fn(&Doc<'_>, &[Seg]) -> Option<String>,
    ) -> Problem {
        let raw = err.message().trim().to_string();
        let Some(span) = err.span() else {
            return Problem { line: 1, key: None, message: raw };
        };
        let offset = span.start;
        let line = line_of(text, offset);
        let doc = Doc::parse(text);
        let located = doc.locate(offset);

        // The table the problem is in, and the key (when a key or header covers the offset).
        let (table_path, located_key): (Vec<Seg>, Option<String>) = match &located {
            Some((path, Hit::Key | Hit::Header)) => {
                let mut table = path.clone();
                // Drop the key itself (and a trailing index for array elements).
                while matches!(table.last(), Some(Seg::Index(_))) {
                    table.pop();
                }
                let key = last_key(&table);
                table.pop();
                (table, key)
            }
            Some((path, Hit::Before)) => (path.clone(), None),
            None => (Vec::new(), None),
        };
        let in_section = section(&doc, &table_path).map(|s| format!(" in {s}")).unwrap_or_default();
        let spanned_text = text.get(span.clone()).unwrap_or("").trim().to_string();

        if let Some(rest) = raw.strip_prefix("unknown field ") {
            let key = first_backticked(rest).unwrap_or(spanned_text);
            let expected = expected_names(rest);
            let hint = if expected.is_empty() {
                String::new()
            } else {
                format!(" (expected one of: {})", expected.join(", "))
            };
            return Problem { line, message: format!("unknown key `{key}`{in_section}{hint}"), key: Some(key) };
        }
        if let Some(rest) = raw.strip_prefix("missing field ") {
            let key = first_backticked(rest).unwrap_or_default();
            // A missing key is reported on the table; the table is the located path itself.
            let in_table = match &located {
                Some((path, Hit::Header)) => section(&doc, path).map(|s| format!(" in {s}")).unwrap_or_default(),
                _ => in_section.clone(),
            };
            return Problem { line, message: format!("missing key `{key}`{in_table}"), key: Some(key) };
        }
        if raw.starts_with("duplicate key") {
            let key = if spanned_text.is_empty() {
                located_key.clone()
            } else {
                Some(spanned_text.trim_matches('"').to_string())
            };
            let key_text = key.as_deref().map(|k| format!(" `{k}`")).unwrap_or_default();
            // The duplicate was dropped by the recoverable parse: its table is the located one.
            let table = match &located {
                Some((path, Hit::Before)) => section(&doc, path).map(|s| format!(" in {s}")).unwrap_or_default(),
                _ => in_section,
            };
            return Problem { line, message: format!("duplicate key{key_text}{table}"), key };
        }
        if let Some(key) = located_key.clone() {
            if let Some(rest) = raw.strip_prefix("invalid type: ") {
                // "string \"22\", expected u16"
                let (found, expected) = match rest.split_once(", expected ") {
                    Some((found, expected)) => (found, expected),
                    None => (rest, ""),
                };
                let message = if expected.is_empty() {
                    format!("bad value for `{key}`{in_section}: found {found}")
                } else if expected == "a sequence" && found == "map" {
                    format!(
                        "bad value for `{key}`{in_section}: expected an array of tables (write each as [[{key}]]), found a table"
                    )
                } else {
                    format!("bad value for `{key}`{in_section}: expected {}, found {found}", friendly_type(expected))
                };
                return Problem { line, key: Some(key), message };
            }
            if let Some(rest) = raw.strip_prefix("invalid value: ") {
                let message = match rest.split_once(", expected ") {
                    Some((found, expected)) => {
                        format!(
                            "bad value for `{key}`{in_section}: expected {}, found {found}",
                            friendly_type(expected)
                        )
                    }
                    None => format!("bad value for `{key}`{in_section}: {rest}"),
                };
                return Problem { line, key: Some(key), message };
            }
            if let Some(rest) = raw.strip_prefix("unknown variant ") {
                let expected = expected_names(rest);
                let value = first_backticked(rest).unwrap_or_default();
                return Problem {
                    line,
                    message: format!(
                        "bad value for `{key}`{in_section}: unknown value {value:?} (expected one of: {})",
                        expected.join(", ")
                    ),
                    key: Some(key),
                };
            }
            if is_semantic(&raw) {
                return Problem { line, message: format!("bad value for `{key}`{in_section}: {raw}"), key: Some(key) };
            }
        }
        // TOML syntax: name the key written on that line, when there is one.
        let key = located_key.or_else(|| key_written_on_line(text, line));
        let near = key.as_deref().map(|k| format!(" (at key `{k}`)")).unwrap_or_default();
        Problem { line, key, message: format!("TOML syntax error{near}: {raw}") }
    }

    /// Messages produced by our own `deserialize_with` helpers rather than the TOML parser.
    fn is_semantic(message: &str) -> bool {
        message.starts_with("expected ")
    }

    fn friendly_type(expected: &str) -> String {
        match expected {
            // The only u16 is a port, where 0 is refused as well.
            "u16" => "an integer from 1 to 65535".into(),
            "u32" | "u64" => "a whole number (0 or more)".into(),
            "a boolean" => "true or false".into(),
            "a map" => "a table".into(),
            other if other.starts_with("struct ") => "a table".into(),
            other => other.to_string(),
        }
    }

    /// `foo` for a line reading `foo = …` (or `"foo" = …`).
    fn key_written_on_line(text: &str, line: usize) -> Option<String> {
        let content = text.lines().nth(line.checked_sub(1)?)?.trim_start();
        let (key, _) = content.split_once('=')?;
        let key = key.trim().trim_matches('"').trim_matches('\'');
        (!key.is_empty() && !key.starts_with('[') && !key.starts_with('#') && !key.contains(char::is_whitespace))
            .then(|| key.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/home/a/.config/flightdeck/config.toml";

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, Path::new(FILE))
    }

    /// The error's text, after checking it names the file, the line and the key.
    fn refused(text: &str, line: usize, key: &str) -> String {
        let err = parse(text).expect_err("config should be refused");
        let shown = err.to_string();
        match &err {
            ConfigError::Invalid { line: got_line, key: got_key, .. } => {
                assert_eq!(*got_line, line, "line in {shown}");
                assert_eq!(got_key.as_deref(), Some(key), "key in {shown}");
            }
            other => panic!("unexpected error kind {other:?}"),
        }
        assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
        assert!(shown.contains(&format!("`{key}`")), "{shown}");
        shown
    }

    const FULL: &str = r#"read_only = true

[[cluster]]
name = "hpc"
kind = "slurm"
host = "login.example.org"
user = "alice"
port = 2222
identity_file = "/keys/id_ed25519"
known_hosts = "accept-new"
known_hosts_file = "/etc/fd/known_hosts"
refresh_seconds = 5
timeout_seconds = 12

[[cluster]]
name = "local-box"
kind = "slurm"
"#;

    #[test]
    fn full_file_is_read() {
        let config = parse(FULL).unwrap();
        assert!(config.read_only);
        assert_eq!(config.source, ConfigSource::File(PathBuf::from(FILE)));
        assert_eq!(config.clusters.len(), 2);
        let hpc = &config.clusters[0];
        assert_eq!(
            hpc,
            &ClusterConfig {
                name: "hpc".into(),
                kind: ClusterKind::Slurm,
                host: Some("login.example.org".into()),
                user: Some("alice".into()),
                port: Some(2222),
                identity_file: Some(PathBuf::from("/keys/id_ed25519")),
                known_hosts: KnownHosts::AcceptNew,
                known_hosts_file: Some(PathBuf::from("/etc/fd/known_hosts")),
                refresh: Duration::from_secs(5),
                timeout: Duration::from_secs(12),
                context: None,
                kubeconfig: None,
                namespaces: Vec::new(),
                queue: None,
            }
        );
        let local = config.cluster("local-box").unwrap();
        assert_eq!(local, &ClusterConfig::new("local-box", ClusterKind::Slurm));
        assert!(local.is_local());
        assert_eq!(local.known_hosts, KnownHosts::Strict);
        assert_eq!(local.refresh, DEFAULT_REFRESH);
        assert_eq!(local.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn empty_file_means_no_clusters() {
        let config = parse("").unwrap();
        assert!(!config.read_only);
        assert!(config.clusters.is_empty());
    }

    #[test]
    fn unknown_key_in_cluster() {
        let text = "read_only = false\n\n[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n\nhostt = \"x\"\n";
        let shown = refused(text, 7, "hostt");
        assert_eq!(
            shown,
            format!(
                "{FILE}:7: unknown key `hostt` in [[cluster]] \"hpc\" (expected one of: name, kind, host, user, port, \
                 identity_file, known_hosts, known_hosts_file, refresh_seconds, timeout_seconds, context, kubeconfig, \
                 namespaces, queue)"
            )
        );
    }

    #[test]
    fn unknown_key_in_second_cluster_names_that_cluster() {
        let text =
            "[[cluster]]\nname = \"a\"\nkind = \"slurm\"\n[[cluster]]\nname = \"b\"\nkind = \"slurm\"\nprot = 22\n";
        let shown = refused(text, 7, "prot");
        assert!(shown.contains("in [[cluster]] \"b\""), "{shown}");
    }

    #[test]
    fn unknown_key_before_name_still_names_cluster() {
        let text = "[[cluster]]\nfoo = 1\nname = \"later\"\nkind = \"slurm\"\n";
        let shown = refused(text, 2, "foo");
        assert!(shown.contains("[[cluster]] \"later\""), "{shown}");
    }

    #[test]
    fn unknown_top_level_key() {
        let shown = refused("read_only = false\nthem = \"dark\"\n", 2, "them");
        assert_eq!(shown, format!("{FILE}:2: unknown key `them` (expected one of: read_only, theme, keymap, cluster)"));
    }

    #[test]
    fn unknown_sub_table_in_cluster() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n[cluster.ssh]\nx = 1\n";
        let shown = refused(text, 4, "ssh");
        assert!(shown.contains("unknown key `ssh` in [[cluster]] \"hpc\""), "{shown}");
    }

    #[test]
    fn wrong_type() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nport = \"22\"\n";
        let shown = refused(text, 4, "port");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: bad value for `port` in [[cluster]] \"hpc\": expected an integer from 1 to 65535, found string \"22\""
            )
        );
        let shown = refused("read_only = \"yes\"\n", 1, "read_only");
        assert!(shown.contains("expected true or false"), "{shown}");
    }

    #[test]
    fn port_out_of_range_and_zero() {
        let base = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";
        let shown = refused(&format!("{base}port = 70000\n"), 4, "port");
        assert!(shown.contains("70000"), "{shown}");
        let shown = refused(&format!("{base}port = -1\n"), 4, "port");
        assert!(shown.contains("-1"), "{shown}");
        let shown = refused(&format!("{base}port = 0\n"), 4, "port");
        assert!(shown.contains("0 is not a port"), "{shown}");
    }

    #[test]
    fn refresh_and_timeout_at_least_one() {
        let base = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";
        let shown = refused(&format!("{base}refresh_seconds = 0\n"), 4, "refresh_seconds");
        assert!(shown.contains("at least 1"), "{shown}");
        refused(&format!("{base}timeout_seconds = 0\n"), 4, "timeout_seconds");
        refused(&format!("{base}refresh_seconds = 1.5\n"), 4, "refresh_seconds");
    }

    #[test]
    fn duplicate_cluster_names() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n\n[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";
        let shown = refused(text, 6, "name");
        assert_eq!(
            shown,
            format!(
                "{FILE}:6: bad value for `name` in [[cluster]] #2: duplicate cluster name \"hpc\" (first used on line 2)"
            )
        );
    }

    #[test]
    fn bad_cluster_names() {
        for (name, why) in [
            ("a/b", "'/'"),
            ("", "empty"),
            ("has space", "' '"),
            ("-x", "starts with '-'"),
            ("..", "not a usable name"),
            ("h\u{e9}", "'\u{e9}'"),
        ] {
            let text = format!("[[cluster]]\nkind = \"slurm\"\nname = {name:?}\n");
            let shown = refused(&text, 3, "name");
            assert!(shown.contains(why), "{name}: {shown}");
            assert!(shown.contains("[[cluster]] #1"), "{shown}");
        }
        parse("[[cluster]]\nname = \"A_b.c-9\"\nkind = \"slurm\"\n").unwrap();
    }

    #[test]
    fn unknown_kind_lists_accepted_kinds() {
        let text = "[[cluster]]\nname = \"k\"\nkind = \"k8s\"\n";
        let shown = refused(text, 3, "kind");
        assert_eq!(
            shown,
            format!(
                "{FILE}:3: bad value for `kind` in [[cluster]] \"k\": unknown cluster kind \"k8s\" (accepted kinds: slurm, kubernetes)"
            )
        );
    }

    #[test]
    fn missing_keys() {
        let shown = refused("read_only = true\n[[cluster]]\nname = \"hpc\"\n", 2, "kind");
        assert_eq!(
            shown,
            format!("{FILE}:2: missing key `kind` in [[cluster]] \"hpc\" (accepted kinds: slurm, kubernetes)")
        );
        let shown = refused("[[cluster]]\nkind = \"slurm\"\n", 1, "name");
        assert!(shown.contains("missing key `name` in [[cluster]] #1"), "{shown}");
    }

    #[test]
    fn known_hosts_values() {
        let base = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";
        for (text, want) in
            [("strict", KnownHosts::Strict), ("accept-new", KnownHosts::AcceptNew), ("off", KnownHosts::Off)]
        {
            let config = parse(&format!("{base}known_hosts = {text:?}\n")).unwrap();
            assert_eq!(config.clusters[0].known_hosts, want);
            assert_eq!(want.as_str(), text);
        }
        let shown = refused(&format!("{base}known_hosts = \"yes\"\n"), 4, "known_hosts");
        assert!(shown.contains("expected one of: strict, accept-new, off"), "{shown}");
        assert_eq!(KnownHosts::default().ssh_option_value(), "yes");
        assert_eq!(KnownHosts::AcceptNew.ssh_option_value(), "accept-new");
        assert_eq!(KnownHosts::Off.ssh_option_value(), "no");
    }

    #[test]
    fn host_and_user_that_ssh_would_misread() {
        let base = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";
        let shown = refused(&format!("{base}host = \"-oProxyCommand=x\"\n"), 4, "host");
        assert!(shown.contains("option"), "{shown}");
        refused(&format!("{base}host = \"\"\n"), 4, "host");
        refused(&format!("{base}host = \"a b\"\n"), 4, "host");
        refused(&format!("{base}user = \"al\\nice\"\n"), 4, "user");
        let ok = parse(&format!("{base}host = \"alice@login\"\nuser = \"a@corp\"\n")).unwrap();
        assert_eq!(ok.clusters[0].host.as_deref(), Some("alice@login"));
    }

    #[test]
    fn duplicate_key_names_line_key_and_cluster() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nhost = \"a\"\nhost = \"b\"\n";
        let shown = refused(text, 5, "host");
        assert_eq!(shown, format!("{FILE}:5: duplicate key `host` in [[cluster]] \"hpc\""));
    }

    #[test]
    fn syntax_error_names_line_and_key() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\nhost = \"x\"\n";
        let err = parse(text).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{FILE}:3: TOML syntax error")), "{shown}");
        assert!(shown.contains("`kind`"), "{shown}");
        let shown = parse("read_only = \n").unwrap_err().to_string();
        assert!(shown.starts_with(&format!("{FILE}:1: TOML syntax error (at key `read_only`)")), "{shown}");
    }

    #[test]
    fn cluster_table_instead_of_array() {
        let shown = refused("[cluster]\nname = \"hpc\"\n", 1, "cluster");
        assert_eq!(
            shown,
            format!(
                "{FILE}:1: bad value for `cluster`: expected an array of tables (write each as [[cluster]]), found a table"
            )
        );
    }

    #[test]
    fn tilde_is_expanded() {
        let home = Path::new("/home/a");
        assert_eq!(expand_tilde_with("~/.ssh/id", Some(home)), PathBuf::from("/home/a/.ssh/id"));
        assert_eq!(expand_tilde_with("~", Some(home)), PathBuf::from("/home/a"));
        assert_eq!(expand_tilde_with("~bob/id", Some(home)), PathBuf::from("~bob/id"));
        assert_eq!(expand_tilde_with("/abs/id", Some(home)), PathBuf::from("/abs/id"));
        assert_eq!(expand_tilde_with("~/id", None), PathBuf::from("~/id"));
        let config = parse("[[cluster]]\nname = \"h\"\nkind = \"slurm\"\nidentity_file = \"~/.ssh/k\"\n").unwrap();
        let path = config.clusters[0].identity_file.as_ref().unwrap();
        if home_dir().is_some() {
            assert!(!path.starts_with("~"), "{path:?}");
            assert!(path.ends_with(".ssh/k"));
        }
    }

    #[test]
    fn xdg_paths() {
        let home = Path::new("/home/a");
        assert_eq!(config_path_from(None, Some(home)), Some(PathBuf::from("/home/a/.config/flightdeck/config.toml")));
        assert_eq!(
            config_path_from(Some(OsStr::new("/xdg/conf")), Some(home)),
            Some(PathBuf::from("/xdg/conf/flightdeck/config.toml"))
        );
        // Relative XDG values are ignored, as the spec says.
        assert_eq!(
            config_path_from(Some(OsStr::new("rel")), Some(home)),
            Some(PathBuf::from("/home/a/.config/flightdeck/config.toml"))
        );
        assert_eq!(config_path_from(None, None), None);
        assert_eq!(state_dir_from(None, Some(home)), Some(PathBuf::from("/home/a/.local/state/flightdeck")));
        assert_eq!(state_dir_from(Some(OsStr::new("/st")), Some(home)), Some(PathBuf::from("/st/flightdeck")));
        assert!(state_dir().ends_with("flightdeck") || state_dir().ends_with("flightdeck-state"));
    }

    #[test]
    fn which_finds_executables_only() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("squeue");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let plain = bin.join("sinfo");
        std::fs::write(&plain, "not executable").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let path_var = std::env::join_paths([dir.path().join("missing"), bin.clone()]).unwrap();
        assert_eq!(find_program_in("squeue", &path_var), Some(exe));
        #[cfg(unix)]
        assert_eq!(find_program_in("sinfo", &path_var), None);
        assert_eq!(
            find_program_in("bin", &std::env::join_paths([dir.path()]).unwrap()),
            None,
            "directories are not programs"
        );
        assert_eq!(find_program_in("a/b", &path_var), None);
        assert_eq!(find_program_in("", &path_var), None);
    }

    #[test]
    fn embedded_default_follows_squeue() {
        let config = Config::embedded_default();
        assert_eq!(config.source, ConfigSource::EmbeddedDefault);
        assert!(!config.read_only);
        let slurm: Vec<&ClusterConfig> = config.clusters.iter().filter(|c| c.kind == ClusterKind::Slurm).collect();
        if find_program("squeue").is_some() {
            assert_eq!(slurm, vec![&ClusterConfig::new("local", ClusterKind::Slurm)]);
        } else {
            assert!(slurm.is_empty());
        }
        let kube: Vec<&ClusterConfig> = config.clusters.iter().filter(|c| c.kind == ClusterKind::Kubernetes).collect();
        match current_kube_context() {
            Some(ctx) => assert_eq!(kube.iter().map(|c| c.context.clone()).collect::<Vec<_>>(), vec![Some(ctx)]),
            None => assert!(kube.is_empty()),
        }
    }

    #[test]
    fn kubernetes_clusters() {
        let text = "[[cluster]]\nname = \"prod\"\nkind = \"kubernetes\"\ncontext = \"gke_proj_zone_prod\"\n\
                    kubeconfig = \"/etc/kube/config\"\nnamespaces = [\"ml\", \"infer\"]\nqueue = \"team-a\"\n\
                    timeout_seconds = 5\n\n[[cluster]]\nname = \"dev\"\nkind = \"kubernetes\"\n";
        let config = parse(text).unwrap();
        let prod = &config.clusters[0];
        assert_eq!(prod.kind, ClusterKind::Kubernetes);
        assert_eq!(prod.context.as_deref(), Some("gke_proj_zone_prod"));
        assert_eq!(prod.kubeconfig, Some(PathBuf::from("/etc/kube/config")));
        assert_eq!(prod.namespaces, vec!["ml".to_string(), "infer".to_string()]);
        assert_eq!(prod.queue.as_deref(), Some("team-a"));
        assert_eq!(prod.timeout, Duration::from_secs(5));
        assert_eq!(config.clusters[1], ClusterConfig::new("dev", ClusterKind::Kubernetes));
        assert_eq!(ClusterKind::Kubernetes.to_string(), "kubernetes");
    }

    #[test]
    fn kubernetes_keys_are_checked() {
        let base = "[[cluster]]\nname = \"k\"\nkind = \"kubernetes\"\n";
        let shown = refused(&format!("{base}host = \"login\"\n"), 4, "host");
        assert!(shown.contains("`host` does not apply to a kubernetes cluster in [[cluster]] \"k\""), "{shown}");
        assert!(shown.contains("context, kubeconfig, namespaces, queue"), "{shown}");
        let shown = refused("[[cluster]]\nname = \"s\"\nkind = \"slurm\"\nqueue = \"a\"\n", 4, "queue");
        assert!(shown.contains("`queue` does not apply to a slurm cluster"), "{shown}");
        let shown = refused(&format!("{base}namespaces = []\n"), 4, "namespaces");
        assert!(shown.contains("the list is empty"), "{shown}");
        let shown = refused(&format!("{base}namespaces = [\n  \"ml\",\n  \"ML_x\",\n]\n"), 6, "namespaces");
        assert!(shown.contains("\"ML_x\" contains 'M'"), "{shown}");
        let shown = refused(&format!("{base}namespaces = [\"ml\", \"ml\"]\n"), 4, "namespaces");
        assert!(shown.contains("listed twice"), "{shown}");
        refused(&format!("{base}namespaces = [\"-ml\"]\n"), 4, "namespaces");
        refused(&format!("{base}queue = \"team a\"\n"), 4, "queue");
        refused(&format!("{base}context = \"\"\n"), 4, "context");
        refused(&format!("{base}kubeconfig = \"\"\n"), 4, "kubeconfig");
        let shown = refused(&format!("{base}namespaces = \"ml\"\n"), 4, "namespaces");
        assert!(shown.contains("namespaces"), "{shown}");
        let ok = parse(&format!("{base}kubeconfig = \"~/.kube/other\"\nqueue = \"Team_A.1\"\n")).unwrap();
        assert!(ok.clusters[0].kubeconfig.as_ref().unwrap().ends_with(".kube/other"));
    }

    #[test]
    fn kube_default_cluster_names() {
        let c = kube_default_cluster("arn:aws:eks:us-west-2:1234:cluster/prod", &[]);
        assert_eq!(c.name, "arn-aws-eks-us-west-2-1234-cluster-prod");
        assert_eq!(c.context.as_deref(), Some("arn:aws:eks:us-west-2:1234:cluster/prod"));
        assert_eq!(c.kind, ClusterKind::Kubernetes);
        let local = ClusterConfig::new("local", ClusterKind::Slurm);
        assert_eq!(kube_default_cluster("local", std::slice::from_ref(&local)).name, "local-k8s");
        assert_eq!(kube_default_cluster("///", &[]).name, "kubernetes");
    }

    #[test]
    fn load_explicit_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let err = Config::load(Some(&path)).unwrap_err();
        assert!(matches!(err, ConfigError::NotFound { .. }));
        assert!(err.to_string().contains("nope.toml"), "{err}");
    }

    #[test]
    fn load_reads_the_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, FULL).unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert_eq!(config.source, ConfigSource::File(path.clone()));
        std::fs::write(&path, "[[cluster]]\nname = \"x\"\nkind = \"slurm\"\nbogus = 1\n").unwrap();
        let shown = Config::load(Some(&path)).unwrap_err().to_string();
        assert!(shown.starts_with(&format!("{}:4: unknown key `bogus`", path.display())), "{shown}");
    }

    #[test]
    fn line_of_counts_from_one() {
        use tomlpos::line_of;
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }

    #[test]
    fn theme_and_keymap_accept_builtins_and_files() {
        let config = parse("theme = \"light\"\nkeymap = \"vim\"\n").unwrap();
        assert_eq!((config.theme.as_deref(), config.keymap.as_deref()), (Some("light"), Some("vim")));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, "").unwrap();
        let config = parse(&format!("theme = \"{}\"\n", file.display())).unwrap();
        assert_eq!(config.theme, Some(file.display().to_string()));
    }

    #[test]
    fn unknown_theme_names_line_and_key() {
        let shown = refused("read_only = false\ntheme = \"neon\"\n", 2, "theme");
        assert!(shown.contains("`neon` is neither a builtin theme (default, light, high-contrast, mono)"), "{shown}");
        let shown = refused("keymap = \"emacs\"\n", 1, "keymap");
        assert!(shown.contains("builtin keymap (default, vim)"), "{shown}");
    }
}
