//! The table of cluster kinds: kind name → config section parser → constructor →
//! capabilities, placement, dialects and discovery. The config module reads `[[cluster]]`
//! through it, the fleet builds backends through it, `init`, `doctor` and the embedded
//! default ask it what is on this machine ([`discovery`]).
//!
//! Adding a kind is a new folder under `backend/` (its `Backend`, its `config.rs` with the
//! section type, and a `kind_entry()`) plus one line in [`BUILTIN`]. Tests and embedders add
//! kinds at run time with [`Registry::with`].

pub mod discovery;

use std::sync::Arc;

pub use self::discovery::{Discover, Discovery, Found, KindDiscovery, Line, Look, Probe};
use crate::backend::{Backend, BackendError, Capabilities, dstack, hub, kube, local, skypilot, slurm};
use crate::config::{ClusterConfig, ClusterKind, KindConfig, KindSettings, KindTable};
use crate::model::{Dialect, Native, Placement};
use crate::spec::{ImportError, Imported, JobSpec};

/// The kinds flightdeck ships, in the order messages list them. One line per kind.
const BUILTIN: &[fn() -> KindEntry] = &[
    slurm::kind_entry,
    kube::kind_entry,
    skypilot::kind_entry,
    dstack::kind_entry,
    hub::kind_entry,
    local::kind_entry,
];

/// Everything flightdeck knows about one cluster kind.
#[derive(Clone)]
pub struct KindEntry {
    /// Its name, keys and section parser (`config.kind` is the kind).
    pub config: KindConfig,
    /// A backend for one configured cluster of this kind.
    pub build: fn(&ClusterConfig) -> Result<Arc<dyn Backend>, BackendError>,
    /// What clusters of this kind can do beyond reading state.
    pub capabilities: Capabilities,
    /// How the kind places jobs (what `partition` names, whether it provisions, its managed
    /// queue, caveats): put on each of its clusters' state, where advice reads it.
    pub placement: Placement,
    /// The kind's own job forms, read and written offline (`spec convert`, `submit` of a
    /// native file): its plain form first, then any others (Kubernetes' workload kinds);
    /// empty for a kind without one.
    pub dialects: Vec<DialectEntry>,
    /// For a kind whose one entry stands for several clusters (a hub): the backends it
    /// serves, asked for once when the fleet connects. `build` then makes what stands in
    /// when that fails.
    pub expand: Option<Expand>,
    /// What of this kind is on this machine: the clusters found, each with why, and what
    /// was looked for and missing. `init` writes it, the embedded default watches the active
    /// ones, `doctor` says it when nothing was found ([`discovery::nothing`] for none).
    pub discover: Discover,
}

/// Connect and list the backends one config entry stands for.
pub type Expand =
    fn(
        &ClusterConfig,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Arc<dyn Backend>>, BackendError>> + Send>>;

/// One native job form: how to recognise it, read it into a [`JobSpec`] and write one out,
/// with no cluster at hand. The choices a live cluster would make (pyxis or not, a
/// namespace, a generated name) are assumed and said in the warnings.
#[derive(Debug, Clone)]
pub struct DialectEntry {
    pub dialect: Dialect,
    /// Whether `text` is in this dialect: by content, cheaply, without a full import. The
    /// shipped dialects' detectors are exclusive (tests hold them to it).
    pub detect: fn(&str) -> bool,
    pub import: fn(&str) -> Result<Imported, ImportError>,
    pub export: fn(&JobSpec) -> Result<Native, BackendError>,
}

impl KindEntry {
    pub fn kind(&self) -> &ClusterKind {
        &self.config.kind
    }
}

impl std::fmt::Debug for KindEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindEntry")
            .field("config", &self.config)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// The cluster kinds of one run.
#[derive(Debug, Clone)]
pub struct Registry {
    entries: Vec<KindEntry>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Registry {
    /// The kinds flightdeck ships.
    pub fn builtin() -> Registry {
        Registry { entries: BUILTIN.iter().map(|entry| entry()).collect() }
    }

    /// No kinds at all.
    pub fn empty() -> Registry {
        Registry { entries: Vec::new() }
    }

    /// This registry plus `entry`, which replaces a kind of the same name.
    pub fn with(mut self, entry: KindEntry) -> Registry {
        match self.entries.iter_mut().find(|e| e.kind() == entry.kind()) {
            Some(same) => *same = entry,
            None => self.entries.push(entry),
        }
        self
    }

    pub fn get(&self, kind: &ClusterKind) -> Option<&KindEntry> {
        self.entries.iter().find(|e| e.kind() == kind)
    }

    pub fn entries(&self) -> &[KindEntry] {
        &self.entries
    }

    /// The backend for one configured cluster.
    pub fn build(&self, cluster: &ClusterConfig) -> Result<Arc<dyn Backend>, BackendError> {
        let kind = cluster.kind();
        match self.get(&kind) {
            Some(entry) => (entry.build)(cluster),
            None => Err(BackendError::Unsupported(format!(
                "cluster {} is of kind `{kind}`, which this flightdeck has no backend for",
                cluster.name
            ))),
        }
    }

    /// The dialect named `name`: a kind's plain form by the kind (`slurm`, `kubernetes` …),
    /// another by its own word (`pytorchjob`, see `Dialect::kind_name`).
    pub fn dialect(&self, name: &str) -> Option<&DialectEntry> {
        self.entries
            .iter()
            .filter(|e| e.kind().as_str() == name)
            .find_map(|e| e.dialects.first())
            .or_else(|| self.dialects().find(|d| d.dialect.kind_name() == name))
    }

    /// The dialect whose JSON name is `name` (`kubernetes_job`).
    pub fn dialect_by_name(&self, name: &str) -> Option<&DialectEntry> {
        self.dialects().find(|d| d.dialect.name() == name)
    }

    /// Every dialect of this run, in the table's order.
    pub fn dialects(&self) -> impl Iterator<Item = &DialectEntry> {
        self.entries.iter().flat_map(|e| e.dialects.iter())
    }

    /// The dialect `text` is written in, by content; `None` when no dialect claims it (the
    /// portable TOML, or nothing flightdeck reads).
    pub fn detect(&self, text: &str) -> Option<&DialectEntry> {
        self.dialects().find(|d| (d.detect)(text))
    }

    /// How clusters of `kind` place jobs; the default (labels, nothing more) for a kind not
    /// in the table.
    pub fn placement(&self, kind: &ClusterKind) -> Placement {
        self.get(kind).map(|e| e.placement.clone()).unwrap_or_default()
    }

    /// What clusters of `kind` can do; `None` for a kind not in the table.
    pub fn capabilities(&self, kind: &ClusterKind) -> Option<Capabilities> {
        self.get(kind).map(|e| e.capabilities)
    }

    /// Every kind's discovery, all looking at once, in the table's order.
    pub async fn discover(&self, look: &Look) -> Vec<KindDiscovery> {
        let each = self.entries.iter().map(|e| {
            let (kind, looking) = (e.kind().clone(), (e.discover)(look));
            async move { KindDiscovery { kind, discovery: looking.await } }
        });
        futures_util::future::join_all(each).await
    }

    /// [`Registry::discover`] for code that is not async (loading the config, `doctor`'s
    /// words), inside a runtime or not: it runs on a thread and a runtime of its own.
    pub fn discover_blocking(&self, look: &Look) -> Vec<KindDiscovery> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime.block_on(self.discover(look)),
                    Err(e) => self
                        .entries
                        .iter()
                        .map(|entry| KindDiscovery {
                            kind: entry.kind().clone(),
                            discovery: Discovery {
                                missing: vec![format!("{} (could not look: {e})", entry.kind())],
                                ..Discovery::default()
                            },
                        })
                        .collect(),
                })
                .join()
                .unwrap_or_default()
        })
    }

    /// What was looked for on this machine and found or missed, one item per source, in the
    /// table's order: what `doctor` and the cockpit say when there is no cluster to show.
    pub fn looked_for(&self, look: &Look) -> Vec<String> {
        discovery::looked_for(&self.discover_blocking(look))
    }
}

impl KindTable for Registry {
    fn kinds(&self) -> Vec<&KindConfig> {
        self.entries.iter().map(|e| &e.config).collect()
    }

    /// The active clusters every kind finds here, files and `PATH` only.
    fn default_clusters(&self) -> Vec<ClusterConfig> {
        discovery::embedded(&self.discover_blocking(&Look::here()))
    }
}

/// `cluster` with its section as `T`, for a kind's `build`: a cluster of another kind is
/// refused rather than read as defaults.
pub fn typed<T: KindSettings>(cluster: &ClusterConfig) -> Result<ClusterConfig<T>, BackendError> {
    cluster.typed::<T>().ok_or_else(|| {
        BackendError::Unsupported(format!(
            "cluster {} is a {} cluster, not a {} one",
            cluster.name,
            cluster.kind(),
            T::KIND
        ))
    })
}

/// The cluster entry `--hub URL` (and `--insecure`) stands for: the one flag that names a
/// kind, answered here, where the kinds are listed, so that the CLI names none.
pub fn hub_flag_cluster(url: &str, insecure: bool) -> Result<ClusterConfig, String> {
    hub::config::flag_cluster(url, insecure)
}

/// What the shipped kinds looked for on this machine, in one line (`looked for: …; …`):
/// `flightdeck doctor` says it when there is no cluster to show.
pub fn looked_for_here() -> String {
    looked_for_on(&local::Host::this_machine())
}

/// [`looked_for_here`] with programs and GPU libraries looked for on `host` (the kinds read
/// the user's own files).
pub fn looked_for_on(host: &local::Host) -> String {
    format!("looked for: {}", looked_for_items(host).join("; "))
}

/// What [`looked_for_on`] says, one item per source, for a front end that lists them.
pub fn looked_for_items(host: &local::Host) -> Vec<String> {
    Registry::builtin().looked_for(&Look { host: host.clone(), ..Look::here() })
}

/// Reading config text through the shipped kinds, for the config tests of the registry and
/// of each adapter's section.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use super::Registry;
    use crate::config::{Config, ConfigError};

    pub const FILE: &str = "/home/a/.config/flightdeck/config.toml";

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, Path::new(FILE), &Registry::builtin())
    }

    /// The error's text, after checking it names the file, the line and the key.
    pub fn refused(text: &str, line: usize, key: &str) -> String {
        let err = parse(text).expect_err("config should be refused");
        let shown = err.to_string();
        assert_eq!((err.line(), err.key()), (Some(line), Some(key)), "{shown}");
        assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
        shown
    }

    /// [`refused`], and the message itself names the key in backticks.
    pub fn refused_naming_key(text: &str, line: usize, key: &str) -> String {
        let shown = refused(text, line, key);
        assert!(shown.contains(&format!("`{key}`")), "{shown}");
        shown
    }
}

#[cfg(test)]
mod tests {
    //! The config file through the shipped kinds: what the messages list depends on the table.

    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::backend::kube::config::KubeConfig;
    use crate::backend::slurm::config::{KnownHosts, SlurmConfig};
    use crate::config::{Config, ConfigSource, DEFAULT_REFRESH, DEFAULT_TIMEOUT};

    use super::testing::{FILE, parse, refused};

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
        let hpc = ClusterConfig {
            name: "hpc".into(),
            refresh: Duration::from_secs(5),
            timeout: Duration::from_secs(12),
            telemetry_every: crate::config::cluster::DEFAULT_TELEMETRY,
            prometheus: None,
            settings: SlurmConfig {
                host: Some("login.example.org".into()),
                user: Some("alice".into()),
                port: Some(2222),
                identity_file: Some(PathBuf::from("/keys/id_ed25519")),
                known_hosts: KnownHosts::AcceptNew,
                known_hosts_file: Some(PathBuf::from("/etc/fd/known_hosts")),
                ..SlurmConfig::default()
            },
        };
        assert_eq!(config.clusters[0], hpc.erase());
        let local = config.cluster("local-box").unwrap();
        assert_eq!(local, &ClusterConfig::new("local-box", SlurmConfig::default()).erase());
        assert!(local.section::<SlurmConfig>().unwrap().is_local());
        assert_eq!((local.refresh, local.timeout), (DEFAULT_REFRESH, DEFAULT_TIMEOUT));
    }

    #[test]
    fn unknown_key_lists_every_kinds_keys() {
        let text = "read_only = false\n\n[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n\nhostt = \"x\"\n";
        let shown = refused(text, 7, "hostt");
        assert_eq!(
            shown,
            format!(
                "{FILE}:7: unknown key `hostt` in [[cluster]] \"hpc\" (expected one of: name, kind, host, user, port, \
                 identity_file, known_hosts, known_hosts_file, telemetry_via, telemetry_max_nodes, nvidia_smi, refresh_seconds, timeout_seconds, telemetry_seconds, prometheus_url, prometheus_token_env, prometheus_ca_file, context, kubeconfig, \
                 multi_node, namespaces, queue, url, token_env, token_file, project, retry, ca_file, clusters, insecure, gpu_source)"
            )
        );
    }

    #[test]
    fn key_of_another_kind_names_this_kinds_keys() {
        let shown = refused("[[cluster]]\nname = \"k\"\nkind = \"kubernetes\"\nport = 22\n", 4, "port");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: `port` does not apply to a kubernetes cluster in [[cluster]] \"k\" (keys for kind = \
                 \"kubernetes\": name, kind, context, kubeconfig, multi_node, namespaces, queue, refresh_seconds, timeout_seconds, telemetry_seconds, prometheus_url, prometheus_token_env, prometheus_ca_file)"
            )
        );
    }

    #[test]
    fn unknown_kind_lists_accepted_kinds() {
        let text = "[[cluster]]\nname = \"k\"\nkind = \"k8s\"\n";
        let shown = refused(text, 3, "kind");
        assert_eq!(
            shown,
            format!(
                "{FILE}:3: bad value for `kind` in [[cluster]] \"k\": unknown cluster kind \"k8s\" (accepted kinds: slurm, kubernetes, skypilot, dstack, hub, local)"
            )
        );
        let shown = refused("read_only = true\n[[cluster]]\nname = \"hpc\"\n", 2, "kind");
        assert_eq!(
            shown,
            format!(
                "{FILE}:2: missing key `kind` in [[cluster]] \"hpc\" (accepted kinds: slurm, kubernetes, skypilot, dstack, hub, local)"
            )
        );
    }

    #[test]
    fn duplicate_key_names_line_key_and_cluster() {
        let text = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nhost = \"a\"\nhost = \"b\"\n";
        let shown = refused(text, 5, "host");
        assert_eq!(shown, format!("{FILE}:5: duplicate key `host` in [[cluster]] \"hpc\""));
    }

    #[test]
    fn builds_each_kind_and_refuses_a_stranger() {
        let registry = Registry::builtin();
        let slurm = ClusterConfig::new("hpc", SlurmConfig::default()).erase();
        let kube = ClusterConfig::new("k8s", KubeConfig::default()).erase();
        assert_eq!(registry.build(&slurm).unwrap().name(), "hpc");
        assert_eq!(registry.build(&kube).unwrap().name(), "k8s");
        let sky = ClusterConfig::new("sky", crate::backend::skypilot::SkyPilotConfig::default()).erase();
        assert_eq!(registry.build(&sky).unwrap().name(), "sky");
        let sky_caps = registry.capabilities(&crate::backend::skypilot::SkyPilotConfig::KIND).unwrap();
        assert!(sky_caps.teardown && sky_caps.cancel && !sky_caps.hold_release && !sky_caps.drain_resume);
        assert!(!registry.capabilities(&ClusterKind::KUBERNETES).unwrap().requeue);
        assert!(registry.capabilities(&ClusterKind::SLURM).unwrap().requeue);
        let err = Registry::empty().build(&slurm).err().expect("no slurm kind in an empty registry");
        assert!(err.to_string().contains("kind `slurm`"), "{err}");
        let err = typed::<KubeConfig>(&slurm).unwrap_err();
        assert_eq!(err.to_string(), "cluster hpc is a slurm cluster, not a kubernetes one");
    }

    #[test]
    fn embedded_default_is_every_active_cluster_found_here() {
        let config = Config::embedded_default(&Registry::builtin());
        assert_eq!(config.source, ConfigSource::EmbeddedDefault);
        let found = Registry::builtin().discover_blocking(&Look::here());
        assert_eq!(config.clusters, discovery::embedded(&found));
        let kinds: Vec<&ClusterKind> = found.iter().map(|d| &d.kind).collect();
        let registry = Registry::builtin();
        let table: Vec<&ClusterKind> = registry.entries().iter().map(|e| e.kind()).collect();
        assert_eq!(kinds, table, "every kind, in the table's order");
        assert!(Config::embedded_default(&Registry::empty()).clusters.is_empty());
    }

    #[test]
    fn what_was_looked_for_is_one_line_naming_every_source() {
        let empty = tempfile::tempdir().unwrap();
        let host = local::Host {
            path: empty.path().as_os_str().to_owned(),
            nvml_library: "/nonexistent/libnvidia-ml.so.1".into(),
            proc_root: "/proc".into(),
            hostname: "box".into(),
        };
        let said = looked_for_on(&host);
        assert!(!said.contains('\n'), "{said}");
        assert!(said.starts_with("looked for: Slurm's squeue not found on PATH; "), "{said}");
        assert!(said.contains("; NVML (/nonexistent/libnvidia-ml.so.1) not loadable: "), "{said}");
        for part in
            ["nvidia-smi not found on PATH", "Slurm's squeue not found on PATH", "kubeconfig", "dstack", "SkyPilot"]
        {
            assert!(said.contains(part), "{part}: {said}");
        }
    }
}
