//! One `[[cluster]]` entry: the keys every kind shares (`name`, `kind`, `refresh_seconds`,
//! `timeout_seconds`) and the typed section its kind owns.
//!
//! The config module knows no kind. Each adapter hands it a [`KindConfig`] (its keys and a
//! parser for its section) through the backend registry, which also says what the embedded
//! default holds ([`KindTable::default_clusters`]); the parser gets a [`ClusterSection`], which makes every error name the file,
//! the line and the key the way the rest of the file does.

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::DeValue;

pub use crate::model::ClusterKind;
use crate::tomlfile::FileError;
use crate::tomlfile::pos::{self, Doc, Seg};

/// Refresh interval when the file does not say.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(10);
/// Per-command timeout when the file does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// GPU telemetry cadence when the file does not say: slower than the queue, since reading
/// every busy node's GPUs costs more than one `squeue`.
pub const DEFAULT_TELEMETRY: Duration = Duration::from_secs(30);

/// Where a cluster's GPU telemetry is read from Prometheus (dcgm-exporter or AMD's
/// device-metrics-exporter behind it): `prometheus_url`, `prometheus_token_env`,
/// `prometheus_ca_file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusConfig {
    pub url: String,
    /// The environment variable holding a bearer token, read afresh per request.
    pub token_env: Option<String>,
    pub ca_file: Option<PathBuf>,
}

/// A kind's own section of `[[cluster]]`, typed by its adapter (`SlurmConfig`, `KubeConfig`).
pub trait KindSettings: fmt::Debug + Clone + PartialEq + Send + Sync + 'static {
    /// The kind this section belongs to.
    const KIND: ClusterKind;
}

/// [`KindSettings`] behind a pointer: what lets a [`Config`](super::Config) hold sections of
/// kinds it has never heard of, and still compare and print them.
trait ErasedSettings: fmt::Debug + Send + Sync {
    fn kind(&self) -> ClusterKind;
    fn as_any(&self) -> &dyn Any;
    fn same_as(&self, other: &dyn ErasedSettings) -> bool;
}

impl<T: KindSettings> ErasedSettings for T {
    fn kind(&self) -> ClusterKind {
        T::KIND
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same_as(&self, other: &dyn ErasedSettings) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// A kind's section with its type put away; [`ClusterConfig::section`] gives it back.
#[derive(Debug, Clone)]
pub struct Settings(Arc<dyn ErasedSettings>);

impl Settings {
    pub fn new<T: KindSettings>(settings: T) -> Settings {
        Settings(Arc::new(settings))
    }

    pub fn kind(&self) -> ClusterKind {
        self.0.kind()
    }

    /// The section as its adapter's type, when it is of that kind.
    pub fn get<T: KindSettings>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }
}

impl PartialEq for Settings {
    fn eq(&self, other: &Settings) -> bool {
        self.0.same_as(other.0.as_ref())
    }
}

impl Eq for Settings {}

/// One cluster and how to reach it. In a [`Config`](super::Config) the section is
/// [`Settings`]; an adapter works with `ClusterConfig<ItsConfig>` ([`ClusterConfig::typed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig<S = Settings> {
    /// Unique; `[A-Za-z0-9_.-]+`, never `/`, never starting with `-`.
    pub name: String,
    /// Full refresh interval (`refresh_seconds`).
    pub refresh: Duration,
    /// Bound on every command and request (`timeout_seconds`).
    pub timeout: Duration,
    /// GPU telemetry cadence (`telemetry_seconds`).
    pub telemetry_every: Duration,
    /// GPU telemetry from Prometheus, preferred over the backend's own reach when set.
    pub prometheus: Option<PrometheusConfig>,
    /// What the cluster's kind owns (`host`, `context` …).
    pub settings: S,
}

impl<S> ClusterConfig<S> {
    /// A cluster with the default refresh and timeout.
    pub fn new(name: impl Into<String>, settings: S) -> Self {
        Self {
            name: name.into(),
            refresh: DEFAULT_REFRESH,
            timeout: DEFAULT_TIMEOUT,
            telemetry_every: DEFAULT_TELEMETRY,
            prometheus: None,
            settings,
        }
    }

    pub fn with_refresh(self, refresh: Duration) -> Self {
        Self { refresh, ..self }
    }

    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout, ..self }
    }

    pub fn with_prometheus(self, prometheus: PrometheusConfig) -> Self {
        Self { prometheus: Some(prometheus), ..self }
    }
}

impl<T: KindSettings> ClusterConfig<T> {
    /// The same cluster as a [`Config`](super::Config) holds it.
    pub fn erase(self) -> ClusterConfig {
        ClusterConfig {
            name: self.name,
            refresh: self.refresh,
            timeout: self.timeout,
            telemetry_every: self.telemetry_every,
            prometheus: self.prometheus,
            settings: Settings::new(self.settings),
        }
    }
}

impl ClusterConfig {
    pub fn kind(&self) -> ClusterKind {
        self.settings.kind()
    }

    /// The kind's section as its adapter's type, when the cluster is of that kind.
    pub fn section<T: KindSettings>(&self) -> Option<&T> {
        self.settings.get::<T>()
    }

    /// The cluster with its section typed, when it is of that kind.
    pub fn typed<T: KindSettings>(&self) -> Option<ClusterConfig<T>> {
        Some(ClusterConfig {
            name: self.name.clone(),
            refresh: self.refresh,
            timeout: self.timeout,
            telemetry_every: self.telemetry_every,
            prometheus: self.prometheus.clone(),
            settings: self.section::<T>()?.clone(),
        })
    }
}

/// What the config module needs from one cluster kind; the backend registry holds one per
/// kind (see `backend::Registry`).
#[derive(Clone)]
pub struct KindConfig {
    pub kind: ClusterKind,
    /// The keys of its own section, in the order messages list them.
    pub keys: &'static [&'static str],
    /// Read and check its section of one `[[cluster]]` (only its own and the shared keys
    /// are there: the others were refused before).
    pub parse: fn(&ClusterSection<'_>) -> Result<Settings, FileError>,
}

impl KindConfig {
    /// Every key a cluster of this kind may write, as messages list them:
    /// `name, kind, <its own keys>, refresh_seconds, timeout_seconds, <telemetry keys>`.
    pub fn all_keys(&self) -> Vec<&'static str> {
        let mut keys = vec!["name", "kind"];
        keys.extend(self.keys.iter().copied().filter(|k| !SHARED_KEYS.contains(k)));
        keys.extend(SHARED_KEYS.iter().skip(2));
        keys
    }
}

impl fmt::Debug for KindConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KindConfig").field("kind", &self.kind).field("keys", &self.keys).finish_non_exhaustive()
    }
}

/// The kinds a config file may name, in the order messages list them.
pub trait KindTable {
    fn kinds(&self) -> Vec<&KindConfig>;

    /// What a run without a config file watches (the backend registry asks each kind what
    /// it finds on this machine); none unless the table says.
    fn default_clusters(&self) -> Vec<ClusterConfig> {
        Vec::new()
    }
}

impl KindTable for [KindConfig] {
    fn kinds(&self) -> Vec<&KindConfig> {
        self.iter().collect()
    }
}

impl<const N: usize> KindTable for [KindConfig; N] {
    fn kinds(&self) -> Vec<&KindConfig> {
        self.iter().collect()
    }
}

/// The keys every `[[cluster]]` has, whatever its kind.
pub const SHARED_KEYS: [&str; 8] = [
    "name",
    "kind",
    "refresh_seconds",
    "timeout_seconds",
    "telemetry_seconds",
    "prometheus_url",
    "prometheus_token_env",
    "prometheus_ca_file",
];

/// One `[[cluster]]` table as its kind's parser sees it: the TOML with its positions, and
/// helpers whose errors name the file, the line and the key.
pub struct ClusterSection<'a> {
    origin: &'a Path,
    text: &'a str,
    index: usize,
    name: &'a str,
    table: &'a Spanned<DeValue<'a>>,
}

impl ClusterSection<'_> {
    /// The cluster's `name`.
    pub fn name(&self) -> &str {
        self.name
    }

    /// `[[cluster]] "hpc"`, as messages name the table.
    pub fn label(&self) -> String {
        format!("[[cluster]] {}", cluster_label(Some(self.name), self.index))
    }

    /// Read the section into the kind's raw type (use `Option<Spanned<…>>` fields to keep
    /// positions for later checks). Wrong types and missing keys name file, line and key.
    /// The shared keys are in the table too: leave them out of `T` (and don't deny unknown
    /// fields; keys were checked before).
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, FileError> {
        T::deserialize(toml::de::ValueDeserializer::from(self.table.clone()))
            .map_err(|err| FileError::invalid(self.origin, pos::describe(self.text, &err, &describe_section)))
    }

    /// The 1-based line of byte `offset` (a `Spanned` value's `span().start`).
    pub fn line_of(&self, offset: usize) -> usize {
        pos::line_of(self.text, offset)
    }

    /// An error at `value`'s line, naming `key`, with the message as given.
    pub fn error<T>(&self, key: &str, value: &Spanned<T>, message: impl Into<String>) -> FileError {
        FileError::Invalid {
            path: self.origin.to_path_buf(),
            line: self.line_of(value.span().start),
            key: Some(key.to_string()),
            message: message.into(),
        }
    }

    /// `bad value for `key` in [[cluster]] "hpc": why`, at `value`'s line.
    pub fn bad_value<T>(&self, key: &str, value: &Spanned<T>, why: impl fmt::Display) -> FileError {
        self.error(key, value, format!("bad value for `{key}` in {}: {why}", self.label()))
    }

    /// A file path (`identity_file`, `kubeconfig` …): not blank, no control characters;
    /// `~` expanded.
    pub fn file_path(&self, key: &str, value: &Spanned<String>) -> Result<PathBuf, FileError> {
        let path = value.get_ref();
        if path.trim().is_empty() || path.chars().any(char::is_control) {
            return Err(self.bad_value(key, value, format!("expected a file path, found {path:?}")));
        }
        Ok(super::expand_tilde(path))
    }
}

/// The shared keys of one `[[cluster]]`; the kind's own keys are read by its parser.
#[derive(Deserialize)]
pub(super) struct RawShared {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    refresh_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    timeout_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    telemetry_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    prometheus_url: Option<Spanned<String>>,
    #[serde(default)]
    prometheus_token_env: Option<Spanned<String>>,
    #[serde(default)]
    prometheus_ca_file: Option<Spanned<String>>,
}

/// Every key some kind accepts, in the order of the table (the shared keys where the
/// first kind puts them): the list an unknown key's message offers.
fn every_key(kinds: &[&KindConfig]) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for kind in kinds {
        for key in kind.all_keys() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    if keys.is_empty() {
        keys.extend(SHARED_KEYS);
    }
    keys
}

/// The keys of a cluster table in the order they are written, with their lines.
fn keys_in_order<'t>(text: &str, table: &'t Spanned<DeValue<'_>>) -> Vec<(&'t str, usize)> {
    let Some(table) = table.get_ref().as_table() else { return Vec::new() };
    let mut keys: Vec<(usize, &'t str)> = table.iter().map(|(k, _)| (k.span().start, k.get_ref().as_ref())).collect();
    keys.sort_by_key(|(start, _)| *start);
    keys.into_iter().map(|(start, key)| (key, pos::line_of(text, start))).collect()
}

/// Check and build every `[[cluster]]`: `raw` is their shared keys (already read), `tables`
/// the same entries as TOML.
pub(super) fn parse_clusters(
    text: &str,
    origin: &Path,
    raw: &[Spanned<RawShared>],
    tables: &[Spanned<DeValue<'_>>],
    kinds: &[&KindConfig],
) -> Result<Vec<ClusterConfig>, FileError> {
    let invalid = |line: usize, key: &str, message: String| FileError::Invalid {
        path: origin.to_path_buf(),
        line,
        key: Some(key.to_string()),
        message,
    };
    let label =
        |index: usize| format!("[[cluster]] {}", cluster_label(Some(raw[index].get_ref().name.get_ref()), index));

    // Keys no kind knows, in every cluster first (before any value is looked at). A
    // cluster of an unknown kind is left to the kind's message: its keys may be right.
    let known = every_key(kinds);
    for (index, table) in tables.iter().enumerate().take(raw.len()) {
        if !kinds.iter().any(|k| k.kind == raw[index].get_ref().kind.get_ref().as_str()) {
            continue;
        }
        if let Some((key, line)) = keys_in_order(text, table).into_iter().find(|(key, _)| !known.contains(key)) {
            return Err(invalid(
                line,
                key,
                format!("unknown key `{key}` in {} (expected one of: {})", label(index), known.join(", ")),
            ));
        }
    }

    let mut clusters: Vec<ClusterConfig> = Vec::with_capacity(raw.len());
    let mut first_line_of: Vec<(String, usize)> = Vec::new();
    for (index, (entry, table)) in raw.iter().zip(tables).enumerate() {
        let shared = entry.get_ref();
        let name = shared.name.get_ref();
        let section = label(index);
        let at = |offset: usize| pos::line_of(text, offset);

        let name_line = at(shared.name.span().start);
        if let Err(why) = check_cluster_name(name) {
            return Err(invalid(
                name_line,
                "name",
                format!("bad value for `name` in [[cluster]] #{}: {why}", index + 1),
            ));
        }
        if let Some((_, first)) = first_line_of.iter().find(|(n, _)| n == name) {
            return Err(invalid(
                name_line,
                "name",
                format!(
                    "bad value for `name` in [[cluster]] #{}: duplicate cluster name {name:?} (first used on line {first})",
                    index + 1
                ),
            ));
        }
        first_line_of.push((name.clone(), name_line));

        let kind_text = shared.kind.get_ref();
        let Some(kind) = kinds.iter().find(|k| k.kind == kind_text.as_str()) else {
            return Err(invalid(
                at(shared.kind.span().start),
                "kind",
                format!(
                    "bad value for `kind` in {section}: unknown cluster kind {kind_text:?} (accepted kinds: {})",
                    accepted_kinds(kinds)
                ),
            ));
        };

        // Keys of another kind.
        let own = kind.all_keys();
        if let Some((key, line)) = keys_in_order(text, table).into_iter().find(|(key, _)| !own.contains(key)) {
            return Err(invalid(
                line,
                key,
                format!(
                    "`{key}` does not apply to a {} cluster in {section} (keys for kind = \"{}\": {})",
                    kind.kind,
                    kind.kind,
                    own.join(", ")
                ),
            ));
        }

        let settings = (kind.parse)(&ClusterSection { origin, text, index, name, table })?;
        let mut cluster = ClusterConfig::new(name.clone(), settings);

        for (key, value, slot) in [
            ("refresh_seconds", &shared.refresh_seconds, &mut cluster.refresh),
            ("timeout_seconds", &shared.timeout_seconds, &mut cluster.timeout),
            ("telemetry_seconds", &shared.telemetry_seconds, &mut cluster.telemetry_every),
        ] {
            if let Some(value) = value {
                if *value.get_ref() == 0 {
                    return Err(invalid(
                        at(value.span().start),
                        key,
                        format!("bad value for `{key}` in {section}: must be at least 1"),
                    ));
                }
                *slot = Duration::from_secs(*value.get_ref());
            }
        }
        cluster.prometheus = prometheus(shared, &|value: &Spanned<String>, key: &str, why: String| {
            invalid(at(value.span().start), key, format!("bad value for `{key}` in {section}: {why}"))
        })?;
        clusters.push(cluster);
    }
    Ok(clusters)
}

/// The `prometheus_*` keys of one cluster, checked; the token and CA keys need the URL.
fn prometheus(
    shared: &RawShared,
    bad: &dyn Fn(&Spanned<String>, &str, String) -> FileError,
) -> Result<Option<PrometheusConfig>, FileError> {
    let Some(url) = &shared.prometheus_url else {
        for (key, value) in
            [("prometheus_token_env", &shared.prometheus_token_env), ("prometheus_ca_file", &shared.prometheus_ca_file)]
        {
            if let Some(value) = value {
                return Err(bad(value, key, "it needs `prometheus_url` beside it".into()));
            }
        }
        return Ok(None);
    };
    check_http_url(url.get_ref()).map_err(|why| bad(url, "prometheus_url", why))?;
    let token_env = match &shared.prometheus_token_env {
        Some(name) if name.get_ref().is_empty() || name.get_ref().contains(['=', '\0']) => {
            return Err(bad(name, "prometheus_token_env", "not an environment variable name".into()));
        }
        Some(name) => Some(name.get_ref().clone()),
        None => None,
    };
    let ca_file = match &shared.prometheus_ca_file {
        Some(path) => {
            let expanded = super::expand_tilde(path.get_ref());
            if !expanded.is_file() {
                return Err(bad(path, "prometheus_ca_file", format!("no file at {}", expanded.display())));
            }
            Some(expanded)
        }
        None => None,
    };
    Ok(Some(PrometheusConfig { url: url.get_ref().trim_end_matches('/').to_string(), token_env, ca_file }))
}

/// An `http://` or `https://` URL with a host and no credentials in it (a token belongs in
/// the environment, never in the config text).
pub fn check_http_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("credentials do not belong in the URL; use `prometheus_token_env`".into());
    }
    if authority.is_empty() || authority.starts_with(':') {
        return Err(format!("`{url}` names no host"));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("`{url}` contains spaces or control characters"));
    }
    Ok(())
}

/// `slurm, kubernetes`: the kinds a file may name.
pub(super) fn accepted_kinds(kinds: &[&KindConfig]) -> String {
    kinds.iter().map(|k| k.kind.as_str()).collect::<Vec<_>>().join(", ")
}

/// A cluster name: `[A-Za-z0-9_.-]+`, not starting with `-`, not `.` or `..`.
pub fn check_cluster_name(name: &str) -> Result<(), String> {
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

fn cluster_label(name: Option<&str>, index: usize) -> String {
    match name {
        Some(name) => format!("{name:?}"),
        None => format!("#{}", index + 1),
    }
}

/// `[[cluster]] "hpc"` for a path inside the second cluster table; `None` at the top level.
pub(super) fn describe_section(doc: &Doc<'_>, path: &[Seg]) -> Option<String> {
    match path {
        [Seg::Key(top), Seg::Index(index), ..] if top == "cluster" => {
            let name = doc.string_at(&[Seg::Key("cluster".into()), Seg::Index(*index), Seg::Key("name".into())]);
            Some(format!("[[cluster]] {}", cluster_label(name.as_deref(), *index)))
        }
        [Seg::Key(top), ..] if top == "cluster" => Some("[[cluster]]".into()),
        _ => None,
    }
}
