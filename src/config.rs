//! The configuration file: which clusters to watch and how to reach them.
//!
//! ```toml
//! read_only = false            # optional: refuse every action that changes anything
//! theme = "default"            # optional: default | light | high-contrast | mono | a theme file
//! keymap = "default"           # optional: default | vim | a keymap file
//!
//! [[cluster]]
//! name = "hpc"                 # unique; used in job refs like hpc/1234
//! kind = "slurm"               # which adapter reads the rest (see backend::Registry)
//! refresh_seconds = 10         # full refresh interval (default 10, at least 1)
//! timeout_seconds = 30         # per-command timeout (default 30, at least 1)
//! host = "login.example.org"   # the kind's own keys: backend/slurm/config.rs
//!
//! [[cluster]]
//! name = "k8s-prod"
//! kind = "kubernetes"
//! context = "prod"             # the kind's own keys: backend/kube/config.rs
//! ```
//!
//! This module owns the top-level keys, the keys every `[[cluster]]` shares ([`cluster`]),
//! where the file lives, and program lookup. Each cluster kind owns and checks its own
//! section; the kinds come in as a [`KindTable`] (the backend registry), so a key of another
//! kind is refused naming that kind's keys, and an unknown kind lists the accepted ones.
//!
//! The file lives at `$XDG_CONFIG_HOME/flightdeck/config.toml` (`~/.config/flightdeck/config.toml`)
//! unless `--config FILE` names another. Without a file the embedded default asks each kind
//! what it would watch here (Slurm: this machine when it has Slurm's commands; Kubernetes:
//! the kubeconfig's current context).
//!
//! Every problem is refused with a message that names the file, the 1-based line and the key:
//! `/home/a/.config/flightdeck/config.toml:7: unknown key `hostt` in [[cluster]] "hpc" (expected one of: name, kind, …)`.

pub mod cluster;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

pub use self::cluster::{
    ClusterConfig, ClusterKind, ClusterSection, DEFAULT_REFRESH, DEFAULT_TELEMETRY, DEFAULT_TIMEOUT, KindConfig,
    KindSettings, KindTable, PrometheusConfig, SHARED_KEYS, Settings, check_cluster_name,
};
pub use crate::tomlfile::FileError;
use crate::tomlfile::pos;

/// Errors of the config file.
pub type ConfigError = FileError;

/// The cockpit's shipped themes (`tui` embeds one file per name, in this order).
pub const BUILTIN_THEMES: &[&str] = &["default", "light", "high-contrast", "mono"];
/// The cockpit's shipped keymaps (`tui` embeds one file per name).
pub const BUILTIN_KEYMAPS: &[&str] = &["default", "vim"];

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
    /// When a job's GPUs count as idle (`[idle]`).
    pub idle: IdleRule,
    /// How a watched job's change reaches someone not looking (`[notify]`).
    pub notify: crate::notify::NotifySettings,
    /// Where this configuration came from (for messages and `flightdeck doctor`).
    pub source: ConfigSource,
}

/// `[idle]`: a job whose GPUs' mean utilisation stays under `below_percent` for longer than
/// `minutes` is flagged idle (allocated but idle, the GPUs operators hunt for).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleRule {
    pub below_percent: f32,
    pub window: std::time::Duration,
}

impl Default for IdleRule {
    fn default() -> Self {
        IdleRule { below_percent: 5.0, window: std::time::Duration::from_secs(20 * 60) }
    }
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

impl Config {
    /// Read the configuration; `kinds` are the cluster kinds it may name (the backend
    /// registry).
    ///
    /// With `Some(path)` (from `--config`) the file must exist. With `None` the default path
    /// is used when a file is there, else [`Config::embedded_default`].
    pub fn load(path: Option<&Path>, kinds: &dyn KindTable) -> Result<Config, ConfigError> {
        match path {
            Some(path) => Self::load_file(path, true, kinds),
            None => match default_config_path() {
                Some(path) => Self::load_file(&path, false, kinds),
                None => Ok(Self::embedded_default(kinds)),
            },
        }
    }

    fn load_file(path: &Path, must_exist: bool, kinds: &dyn KindTable) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_toml_str(&text, path, kinds),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if must_exist {
                    Err(ConfigError::NotFound { what: "config", path: path.to_path_buf() })
                } else {
                    Ok(Self::embedded_default(kinds))
                }
            }
            Err(source) => Err(ConfigError::Io { path: path.to_path_buf(), source }),
        }
    }

    /// Parse and validate a configuration; `origin` names the file in messages and in
    /// [`Config::source`].
    pub fn from_toml_str(text: &str, origin: &Path, kinds: &dyn KindTable) -> Result<Config, ConfigError> {
        let kinds = kinds.kinds();
        let refuse = |err: toml::de::Error| {
            let problem = pos::describe(text, &err, &cluster::describe_section);
            FileError::invalid(origin, improve_cluster_problem(problem, &kinds))
        };
        let raw: RawConfig = toml::from_str(text).map_err(refuse)?;
        // The same text again, keeping every key's position, for the kinds' own sections.
        let root = DeTable::parse(text).map_err(refuse)?;
        let tables: &[Spanned<DeValue<'_>>] = match root.get_ref().get("cluster").map(|v| v.get_ref()) {
            Some(DeValue::Array(items)) => items,
            _ => &[],
        };
        let clusters = cluster::parse_clusters(text, origin, &raw.cluster, tables, &kinds)?;

        let mut choices = [(None, &raw.theme, "theme", BUILTIN_THEMES), (None, &raw.keymap, "keymap", BUILTIN_KEYMAPS)];
        for (resolved, value, key, builtins) in choices.iter_mut() {
            let Some(value) = value else { continue };
            let name = value.get_ref();
            if builtins.contains(&name.as_str()) {
                *resolved = Some(name.clone());
                continue;
            }
            let path = expand_tilde(name);
            if !path.is_file() {
                return Err(FileError::Invalid {
                    path: origin.to_path_buf(),
                    line: pos::line_of(text, value.span().start),
                    key: Some(key.to_string()),
                    message: format!(
                        "bad value for `{key}`: `{name}` is neither a builtin {key} ({}) nor an existing file",
                        builtins.join(", ")
                    ),
                });
            }
            *resolved = Some(path.display().to_string());
        }
        let [(theme, ..), (keymap, ..)] = choices;
        let idle = match &raw.idle {
            Some(idle) => idle_rule(idle, text, origin)?,
            None => IdleRule::default(),
        };
        let notify = match &raw.notify {
            Some(notify) => notify_settings(notify, text, origin)?,
            None => crate::notify::NotifySettings::default(),
        };

        Ok(Config {
            read_only: raw.read_only.unwrap_or(false),
            clusters,
            theme,
            keymap,
            idle,
            notify,
            source: ConfigSource::File(origin.to_path_buf()),
        })
    }

    /// No config file: what the table says this machine has ([`KindTable::default_clusters`]:
    /// the backend registry asks each kind, Slurm giving this machine as `local` when
    /// `squeue` is on `PATH`, Kubernetes the kubeconfig's current context). Possibly no
    /// clusters at all (the CLI explains what to write).
    pub fn embedded_default(kinds: &dyn KindTable) -> Config {
        Config {
            read_only: false,
            clusters: kinds.default_clusters(),
            theme: None,
            keymap: None,
            idle: IdleRule::default(),
            notify: crate::notify::NotifySettings::default(),
            source: ConfigSource::EmbeddedDefault,
        }
    }

    /// The cluster with this name.
    pub fn cluster(&self, name: &str) -> Option<&ClusterConfig> {
        self.clusters.iter().find(|c| c.name == name)
    }
}

/// `$XDG_CONFIG_HOME/flightdeck/config.toml`, else `~/.config/flightdeck/config.toml`;
/// `None` only when there is no home directory either.
pub fn default_config_path() -> Option<PathBuf> {
    config_path_from(std::env::var_os("XDG_CONFIG_HOME").as_deref(), home_dir().as_deref())
}

/// Where logs and the audit log go: `$XDG_STATE_HOME/flightdeck`, else
/// `~/.local/state/flightdeck`; `None` without either (never a shared temp directory, where
/// anyone could read the audit log or plant one). The directory is not created here.
pub fn state_dir() -> Option<PathBuf> {
    state_dir_from(std::env::var_os("XDG_STATE_HOME").as_deref(), home_dir().as_deref())
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

fn expand_tilde_with(path: &str, home: Option<&Path>) -> PathBuf {
    match (path, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

/// `~` and `~/…` become the home directory; anything else (`~user/…` too) is kept as written.
pub fn expand_tilde(path: &str) -> PathBuf {
    expand_tilde_with(path, home_dir().as_deref())
}

/// A missing `kind` is worth the list of accepted kinds.
fn improve_cluster_problem(mut problem: pos::Problem, kinds: &[&KindConfig]) -> pos::Problem {
    if problem.key.as_deref() == Some("kind") && problem.message.starts_with("missing key") {
        problem.message.push_str(&format!(" (accepted kinds: {})", cluster::accepted_kinds(kinds)));
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
    idle: Option<RawIdle>,
    #[serde(default)]
    notify: Option<RawNotify>,
    #[serde(default)]
    cluster: Vec<Spanned<cluster::RawShared>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotify {
    #[serde(default)]
    terminal: Option<Spanned<String>>,
    #[serde(default)]
    tmux_passthrough: Option<bool>,
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
}

/// `[notify]` checked: a known terminal kind, a command of non-empty words.
fn notify_settings(raw: &RawNotify, text: &str, origin: &Path) -> Result<crate::notify::NotifySettings, FileError> {
    use crate::notify::{NotifySettings, TerminalSetting};
    let bad = |offset: usize, key: &str, why: String| FileError::Invalid {
        path: origin.to_path_buf(),
        line: pos::line_of(text, offset),
        key: Some(key.to_string()),
        message: format!("bad value for `{key}` in [notify]: {why}"),
    };
    let mut settings = NotifySettings { tmux_passthrough: raw.tmux_passthrough.unwrap_or(false), ..Default::default() };
    if let Some(terminal) = &raw.terminal {
        settings.terminal = TerminalSetting::from_name(terminal.get_ref()).ok_or_else(|| {
            bad(terminal.span().start, "terminal", format!("expected one of: {}", TerminalSetting::NAMES.join(", ")))
        })?;
    }
    if let Some(command) = &raw.command {
        let words = command.get_ref();
        if words.is_empty() || words.iter().any(|w| w.is_empty()) {
            return Err(bad(
                command.span().start,
                "command",
                "a program and its arguments, e.g. [\"notify-send\", \"flightdeck\"]".into(),
            ));
        }
        settings.command = words.clone();
    }
    Ok(settings)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdle {
    #[serde(default)]
    below_percent: Option<Spanned<f64>>,
    #[serde(default)]
    minutes: Option<Spanned<u64>>,
}

/// `[idle]` checked: a percentage in (0, 100], at least one minute.
fn idle_rule(raw: &RawIdle, text: &str, origin: &Path) -> Result<IdleRule, FileError> {
    let bad = |offset: usize, key: &str, why: &str| FileError::Invalid {
        path: origin.to_path_buf(),
        line: pos::line_of(text, offset),
        key: Some(key.to_string()),
        message: format!("bad value for `{key}` in [idle]: {why}"),
    };
    let mut rule = IdleRule::default();
    if let Some(percent) = &raw.below_percent {
        let value = *percent.get_ref();
        if !(value > 0.0 && value <= 100.0) {
            return Err(bad(percent.span().start, "below_percent", "a percentage above 0 and at most 100"));
        }
        rule.below_percent = value as f32;
    }
    if let Some(minutes) = &raw.minutes {
        if *minutes.get_ref() == 0 {
            return Err(bad(minutes.span().start, "minutes", "must be at least 1"));
        }
        rule.window = std::time::Duration::from_secs(minutes.get_ref().saturating_mul(60));
    }
    Ok(rule)
}

#[cfg(test)]
mod tests {
    //! The shared keys and the file as a whole, over two toy kinds (the shipped kinds'
    //! sections are tested in `backend/*/config.rs`, the shipped table in
    //! `backend/registry.rs`).

    use std::time::Duration;

    use super::*;

    const FILE: &str = "/home/a/.config/flightdeck/config.toml";

    #[derive(Debug, Clone, Default, PartialEq)]
    struct Alpha {
        port: Option<u16>,
    }

    impl KindSettings for Alpha {
        const KIND: ClusterKind = ClusterKind::from_static("alpha");
    }

    #[derive(Debug, Clone, Default, PartialEq)]
    struct Beta {
        queue: Option<String>,
    }

    impl KindSettings for Beta {
        const KIND: ClusterKind = ClusterKind::from_static("beta");
    }

    #[derive(Deserialize)]
    struct AlphaRaw {
        port: Option<Spanned<u16>>,
    }

    #[derive(Deserialize)]
    struct BetaRaw {
        queue: Option<Spanned<String>>,
    }

    fn kinds() -> [KindConfig; 2] {
        [
            KindConfig {
                kind: Alpha::KIND,
                keys: &["port"],
                parse: |section| {
                    let raw: AlphaRaw = section.deserialize()?;
                    if let Some(port) = raw.port.as_ref().filter(|p| *p.get_ref() == 0) {
                        return Err(section.bad_value("port", port, "0 is not a port"));
                    }
                    Ok(Settings::new(Alpha { port: raw.port.map(Spanned::into_inner) }))
                },
            },
            KindConfig {
                kind: Beta::KIND,
                keys: &["queue"],
                parse: |section| {
                    let raw: BetaRaw = section.deserialize()?;
                    Ok(Settings::new(Beta { queue: raw.queue.map(Spanned::into_inner) }))
                },
            },
        ]
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, Path::new(FILE), &kinds())
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

    const BASE: &str = "[[cluster]]\nname = \"a\"\nkind = \"alpha\"\n";

    #[test]
    fn clusters_get_their_kinds_section() {
        let text = "read_only = true\n[[cluster]]\nname = \"a\"\nkind = \"alpha\"\nport = 2222\nrefresh_seconds = 5\n\
                    timeout_seconds = 12\n\n[[cluster]]\nname = \"b\"\nkind = \"beta\"\nqueue = \"q\"\n";
        let config = parse(text).unwrap();
        assert!(config.read_only);
        assert_eq!(config.source, ConfigSource::File(PathBuf::from(FILE)));
        let a = config.cluster("a").unwrap();
        assert_eq!(a.kind(), Alpha::KIND);
        assert_eq!((a.refresh, a.timeout), (Duration::from_secs(5), Duration::from_secs(12)));
        assert_eq!(a.section::<Alpha>(), Some(&Alpha { port: Some(2222) }));
        assert_eq!(a.section::<Beta>(), None);
        let b = config.cluster("b").unwrap();
        assert_eq!(b, &ClusterConfig::new("b", Beta { queue: Some("q".into()) }).erase());
        assert_eq!((b.refresh, b.timeout), (DEFAULT_REFRESH, DEFAULT_TIMEOUT));
        assert_eq!(b.typed::<Beta>().map(|c| c.settings), Some(Beta { queue: Some("q".into()) }));
        assert_ne!(a, &ClusterConfig::new("a", Beta::default()).erase(), "sections of other kinds differ");
        let quick = ClusterConfig::new("q", Alpha::default())
            .with_refresh(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(2));
        assert_eq!((quick.refresh, quick.timeout), (Duration::from_secs(1), Duration::from_secs(2)));
    }

    #[test]
    fn empty_file_means_no_clusters() {
        let config = parse("").unwrap();
        assert!(!config.read_only);
        assert!(config.clusters.is_empty());
    }

    #[test]
    fn unknown_key_lists_the_keys_of_every_kind() {
        let text = "read_only = false\n\n[[cluster]]\nname = \"a\"\nkind = \"alpha\"\n\nportt = 1\n";
        let shown = refused(text, 7, "portt");
        assert_eq!(
            shown,
            format!(
                "{FILE}:7: unknown key `portt` in [[cluster]] \"a\" (expected one of: name, kind, port, refresh_seconds, \
                 timeout_seconds, telemetry_seconds, prometheus_url, prometheus_token_env, prometheus_ca_file, queue)"
            )
        );
    }

    #[test]
    fn unknown_key_in_second_cluster_names_that_cluster() {
        let text = format!("{BASE}[[cluster]]\nname = \"b\"\nkind = \"alpha\"\nprot = 22\n");
        let shown = refused(&text, 7, "prot");
        assert!(shown.contains("in [[cluster]] \"b\""), "{shown}");
    }

    #[test]
    fn unknown_key_before_name_still_names_cluster() {
        let text = "[[cluster]]\nfoo = 1\nname = \"later\"\nkind = \"alpha\"\n";
        let shown = refused(text, 2, "foo");
        assert!(shown.contains("[[cluster]] \"later\""), "{shown}");
    }

    #[test]
    fn notify_is_read_and_checked() {
        use crate::notify::{NotifySettings, TerminalSetting};
        assert_eq!(parse(BASE).unwrap().notify, NotifySettings::default());
        let text = format!(
            "{BASE}[notify]\nterminal = \"osc777\"\ntmux_passthrough = true\ncommand = [\"notify-send\", \"flightdeck\"]\n"
        );
        let notify = parse(&text).unwrap().notify;
        assert_eq!(
            notify,
            NotifySettings {
                terminal: TerminalSetting::Osc777,
                tmux_passthrough: true,
                command: vec!["notify-send".into(), "flightdeck".into()]
            }
        );
        let shown = refused(&format!("{BASE}[notify]\nterminal = \"loud\"\n"), 5, "terminal");
        assert!(shown.ends_with("expected one of: auto, osc9, osc777, bell, off"), "{shown}");
        refused(&format!("{BASE}[notify]\ncommand = []\n"), 5, "command");
        refused(&format!("{BASE}[notify]\ncommand = [\"\"]\n"), 5, "command");
    }

    #[test]
    fn unknown_top_level_key() {
        let shown = refused("read_only = false\nthem = \"dark\"\n", 2, "them");
        assert_eq!(
            shown,
            format!("{FILE}:2: unknown key `them` (expected one of: read_only, theme, keymap, idle, notify, cluster)")
        );
    }

    #[test]
    fn unknown_sub_table_in_cluster() {
        let text = format!("{BASE}[cluster.ssh]\nx = 1\n");
        let shown = refused(&text, 4, "ssh");
        assert!(shown.contains("unknown key `ssh` in [[cluster]] \"a\""), "{shown}");
    }

    #[test]
    fn key_of_another_kind_lists_this_kinds_keys() {
        let shown = refused(&format!("{BASE}queue = \"q\"\n"), 4, "queue");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: `queue` does not apply to a alpha cluster in [[cluster]] \"a\" (keys for kind = \"alpha\": \
                 name, kind, port, refresh_seconds, timeout_seconds, telemetry_seconds, prometheus_url, \
                 prometheus_token_env, prometheus_ca_file)"
            )
        );
    }

    #[test]
    fn a_kinds_own_checks_name_file_line_and_key() {
        let shown = refused(&format!("{BASE}port = \"22\"\n"), 4, "port");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: bad value for `port` in [[cluster]] \"a\": expected an integer from 1 to 65535, found string \"22\""
            )
        );
        let shown = refused(&format!("{BASE}\nport = 0\n"), 5, "port");
        assert_eq!(shown, format!("{FILE}:5: bad value for `port` in [[cluster]] \"a\": 0 is not a port"));
        let shown = refused("read_only = \"yes\"\n", 1, "read_only");
        assert!(shown.contains("expected true or false"), "{shown}");
    }

    #[test]
    fn refresh_and_timeout_at_least_one() {
        let shown = refused(&format!("{BASE}refresh_seconds = 0\n"), 4, "refresh_seconds");
        assert!(shown.contains("at least 1"), "{shown}");
        refused(&format!("{BASE}timeout_seconds = 0\n"), 4, "timeout_seconds");
        refused(&format!("{BASE}refresh_seconds = 1.5\n"), 4, "refresh_seconds");
    }

    #[test]
    fn duplicate_cluster_names() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"alpha\"\n\n[[cluster]]\nname = \"hpc\"\nkind = \"beta\"\n";
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
            let text = format!("[[cluster]]\nkind = \"alpha\"\nname = {name:?}\n");
            let shown = refused(&text, 3, "name");
            assert!(shown.contains(why), "{name}: {shown}");
            assert!(shown.contains("[[cluster]] #1"), "{shown}");
        }
        parse("[[cluster]]\nname = \"A_b.c-9\"\nkind = \"alpha\"\n").unwrap();
    }

    #[test]
    fn unknown_kind_lists_accepted_kinds() {
        let shown = refused("[[cluster]]\nname = \"k\"\nkind = \"k8s\"\n", 3, "kind");
        assert_eq!(
            shown,
            format!(
                "{FILE}:3: bad value for `kind` in [[cluster]] \"k\": unknown cluster kind \"k8s\" (accepted kinds: alpha, beta)"
            )
        );
    }

    #[test]
    fn missing_keys() {
        let shown = refused("read_only = true\n[[cluster]]\nname = \"hpc\"\n", 2, "kind");
        assert_eq!(shown, format!("{FILE}:2: missing key `kind` in [[cluster]] \"hpc\" (accepted kinds: alpha, beta)"));
        let shown = refused("[[cluster]]\nkind = \"alpha\"\n", 1, "name");
        assert!(shown.contains("missing key `name` in [[cluster]] #1"), "{shown}");
    }

    #[test]
    fn duplicate_key_names_line_key_and_cluster() {
        let text = format!("{BASE}port = 1\nport = 2\n");
        let shown = refused(&text, 5, "port");
        assert_eq!(shown, format!("{FILE}:5: duplicate key `port` in [[cluster]] \"a\""));
    }

    #[test]
    fn syntax_error_names_line_and_key() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"alpha\nport = 1\n";
        let shown = parse(text).unwrap_err().to_string();
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
        assert_eq!(state_dir_from(None, None), None, "no shared temp directory stands in");
        assert_eq!(state_dir_from(Some(OsStr::new("relative")), None), None);
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

    /// A table that finds one cluster here.
    struct Finding;

    impl KindTable for Finding {
        fn kinds(&self) -> Vec<&KindConfig> {
            Vec::new()
        }

        fn default_clusters(&self) -> Vec<ClusterConfig> {
            vec![ClusterConfig::new("here", Alpha::default()).erase()]
        }
    }

    #[test]
    fn embedded_default_holds_what_the_table_finds() {
        let config = Config::embedded_default(&Finding);
        assert_eq!(config.source, ConfigSource::EmbeddedDefault);
        assert!(!config.read_only);
        let names: Vec<(&str, ClusterKind)> = config.clusters.iter().map(|c| (c.name.as_str(), c.kind())).collect();
        assert_eq!(names, vec![("here", Alpha::KIND)]);
        assert!(Config::embedded_default(&kinds()).clusters.is_empty(), "a bare list of kinds finds nothing");
    }

    #[test]
    fn load_explicit_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let err = Config::load(Some(&path), &kinds()).unwrap_err();
        assert!(matches!(err, ConfigError::NotFound { .. }));
        assert!(err.to_string().contains("nope.toml"), "{err}");
    }

    #[test]
    fn load_reads_the_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, BASE).unwrap();
        let config = Config::load(Some(&path), &kinds()).unwrap();
        assert_eq!(config.source, ConfigSource::File(path.clone()));
        std::fs::write(&path, format!("{BASE}bogus = 1\n")).unwrap();
        let shown = Config::load(Some(&path), &kinds()).unwrap_err().to_string();
        assert!(shown.starts_with(&format!("{}:4: unknown key `bogus`", path.display())), "{shown}");
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
