//! A backend kind added from outside the crate: its own typed config section, its own
//! checks, one registry line, and the fleet built from a config that names it. Everything
//! the `stub` kind needs is in this file.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use flightdeck::backend::DialectEntry;
use flightdeck::backend::registry::typed;
use flightdeck::backend::registry::{Discovery, Found, Line, Look};
use flightdeck::backend::{
    Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction, Registry,
};
use flightdeck::config::{
    ClusterConfig, ClusterKind, ClusterSection, Config, ConfigError, FileError, KindConfig, KindSettings, Settings,
};
use flightdeck::fleet::{Fleet, FleetOptions};
use flightdeck::model::{Caveat, Dialect, JobRef, LogHandle, Native, Partitions, Placement, Snapshot};
use flightdeck::spec::{ImportError, Imported, JobSpec};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use toml::Spanned;

// ---- the stub kind: what a new backend folder would hold ----

/// The stub's own section: one required key.
#[derive(Debug, Clone, PartialEq)]
struct StubConfig {
    endpoint: String,
}

impl KindSettings for StubConfig {
    const KIND: ClusterKind = ClusterKind::from_static("stub");
}

#[derive(Deserialize)]
struct RawStub {
    endpoint: Spanned<String>,
}

impl StubConfig {
    fn parse(section: &ClusterSection<'_>) -> Result<StubConfig, FileError> {
        let raw: RawStub = section.deserialize()?;
        if !raw.endpoint.get_ref().starts_with("http://") {
            return Err(section.bad_value("endpoint", &raw.endpoint, "expected an http:// address"));
        }
        Ok(StubConfig { endpoint: raw.endpoint.into_inner() })
    }
}

struct StubBackend {
    name: String,
    endpoint: String,
}

#[async_trait]
impl Backend for StubBackend {
    fn name(&self) -> &str {
        &self.name
    }
    fn capabilities(&self) -> Capabilities {
        STUB_CAPABILITIES
    }
    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        Ok(Snapshot {
            cluster: self.name.clone(),
            release: Some("stub-1".into()),
            notes: vec![format!("served by {}", self.endpoint)],
            ..Snapshot::default()
        })
    }
    async fn submit(&self, _spec: &JobSpec) -> Result<JobRef, BackendError> {
        Err(BackendError::Unsupported("the stub runs nothing".into()))
    }
    async fn job_action(&self, _job: &JobRef, _action: JobAction) -> Result<(), BackendError> {
        Err(BackendError::Unsupported("the stub runs nothing".into()))
    }
    async fn node_action(&self, _node: &str, _action: &NodeAction) -> Result<String, BackendError> {
        Err(BackendError::Unsupported("the stub has no nodes".into()))
    }
    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        Ok(Diagnosis { transport: self.endpoint.clone(), ..Diagnosis::default() })
    }
    async fn read_log(&self, _log: &LogHandle, _from: Option<u64>, _max: u64) -> Result<LogChunk, BackendError> {
        Ok(LogChunk::default())
    }
}

const STUB_CAPABILITIES: Capabilities = Capabilities {
    submit: false,
    cancel: false,
    hold_release: false,
    requeue: false,
    drain_resume: false,
    cordon_uncordon: false,
    delete: false,
    teardown: false,
};

/// The stub's line in the registry.
fn stub_entry() -> KindEntry {
    KindEntry {
        config: KindConfig {
            kind: StubConfig::KIND,
            keys: &["endpoint"],
            parse: |section| StubConfig::parse(section).map(Settings::new),
        },
        build: |cluster| {
            let cluster = typed::<StubConfig>(cluster)?;
            Ok(Arc::new(StubBackend { name: cluster.name, endpoint: cluster.settings.endpoint }))
        },
        capabilities: STUB_CAPABILITIES,
        placement: Placement {
            partition: Partitions::Fleet,
            provisions: Some("the stub conjures machines (not known here)".into()),
            caveats: vec![Caveat::new("image", "the stub ignores images")],
            ..Placement::default()
        },
        dialects: vec![DialectEntry {
            dialect: STUB_JOB,
            detect: is_stub_job,
            import: read_stub_job,
            export: write_stub_job,
        }],
        expand: None,
        discover: discover_stubs,
    }
}

/// What a stub finds on a machine: one server that answers (active), one that does not,
/// and a file it looked for in vain.
fn discover_stubs(_look: &Look) -> BoxFuture<'static, Discovery> {
    let stub = |name: &str, port: u16, active: bool| {
        let endpoint = format!("http://127.0.0.1:{port}");
        Found {
            names: vec![name.to_string()],
            why: format!("stub server at {endpoint} ({})", if active { "it answered" } else { "it did not answer" }),
            active,
            settings: Settings::new(StubConfig { endpoint: endpoint.clone() }),
            section: vec![Line::text("endpoint", endpoint)],
        }
    };
    let discovery = Discovery {
        found: vec![stub("stub-here", 9001, true), stub("stub-here", 9002, false)],
        missing: vec!["stub (no ~/.stub/servers.toml)".into()],
        notes: vec!["a stub note\nin two lines".into()],
    };
    Box::pin(async move { discovery })
}

/// The stub's own job form: `stub-job NAME` then the command on the next line.
const STUB_JOB: Dialect = Dialect::new("stub_job", "stub", "a stub job", "stub job");

fn is_stub_job(text: &str) -> bool {
    text.starts_with("stub-job ")
}

fn read_stub_job(text: &str) -> Result<Imported, ImportError> {
    let mut lines = text.lines();
    let name = lines
        .next()
        .and_then(|l| l.strip_prefix("stub-job "))
        .ok_or_else(|| ImportError { line: Some(1), message: "not a stub job".into() })?;
    let command = lines.next().unwrap_or_default();
    let spec = JobSpec { name: name.into(), command: Some(command.into()), ..JobSpec::default() };
    Ok(Imported { spec, warnings: Vec::new() })
}

fn write_stub_job(spec: &JobSpec) -> Result<Native, BackendError> {
    let text = format!("stub-job {}\n{}\n", spec.name, spec.command.as_deref().unwrap_or_default());
    Ok(Native { dialect: STUB_JOB, text, warnings: Vec::new() })
}

// ---- the tests ----

const FILE: &str = "/etc/flightdeck/config.toml";

const CONFIG: &str = r#"[[cluster]]
name = "hpc"
kind = "slurm"

[[cluster]]
name = "s"
kind = "stub"
endpoint = "http://stub.example:8080"
refresh_seconds = 1
"#;

fn registry() -> Registry {
    Registry::builtin().with(stub_entry())
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, Path::new(FILE), &registry())
}

/// The error's text, after checking it names the file, the line and the key.
fn refused(text: &str, line: usize, key: &str) -> String {
    let err = parse(text).expect_err("the config should be refused");
    let shown = err.to_string();
    assert_eq!((err.line(), err.key()), (Some(line), Some(key)), "{shown}");
    assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
    shown
}

const STUB: &str = "[[cluster]]\nname = \"s\"\nkind = \"stub\"\n";

#[test]
fn a_registered_kind_reads_its_own_section() {
    let config = parse(CONFIG).unwrap();
    let stub = config.cluster("s").unwrap();
    assert_eq!(stub.kind(), ClusterKind::from("stub"));
    assert_eq!(stub.refresh, Duration::from_secs(1));
    assert_eq!(stub.section::<StubConfig>(), Some(&StubConfig { endpoint: "http://stub.example:8080".into() }));
    assert_eq!(
        stub,
        &ClusterConfig::new("s", StubConfig { endpoint: "http://stub.example:8080".into() })
            .with_refresh(Duration::from_secs(1))
            .erase()
    );
    assert_eq!(config.cluster("hpc").unwrap().kind(), ClusterKind::SLURM, "the shipped kinds still work");
}

#[test]
fn the_kinds_own_checks_name_file_line_and_key() {
    let shown = refused(&format!("{STUB}endpoint = \"ftp://x\"\n"), 4, "endpoint");
    assert_eq!(shown, format!("{FILE}:4: bad value for `endpoint` in [[cluster]] \"s\": expected an http:// address"));
    let shown = refused(&format!("{STUB}endpoint = 8080\n"), 4, "endpoint");
    assert_eq!(
        shown,
        format!("{FILE}:4: bad value for `endpoint` in [[cluster]] \"s\": expected a string, found integer `8080`")
    );
    let shown = refused(STUB, 1, "endpoint");
    assert_eq!(shown, format!("{FILE}:1: missing key `endpoint` in [[cluster]] \"s\""));
}

#[test]
fn keys_are_checked_against_every_registered_kind() {
    let shown = refused(&format!("{STUB}endpoint = \"http://x\"\nendpiont = 1\n"), 5, "endpiont");
    assert_eq!(
        shown,
        format!(
            "{FILE}:5: unknown key `endpiont` in [[cluster]] \"s\" (expected one of: name, kind, host, user, port, \
             identity_file, known_hosts, known_hosts_file, telemetry_via, telemetry_max_nodes, nvidia_smi, \
             refresh_seconds, timeout_seconds, telemetry_seconds, prometheus_url, prometheus_token_env, prometheus_ca_file, context, kubeconfig, multi_node, namespaces, queue, url, token_env, token_file, \
             project, retry, ca_file, clusters, insecure, gpu_source, endpoint)"
        )
    );
    let shown = refused(&format!("{STUB}endpoint = \"http://x\"\nhost = \"login\"\n"), 5, "host");
    assert_eq!(
        shown,
        format!(
            "{FILE}:5: `host` does not apply to a stub cluster in [[cluster]] \"s\" (keys for kind = \"stub\": name, \
             kind, endpoint, refresh_seconds, timeout_seconds, telemetry_seconds, prometheus_url, prometheus_token_env, prometheus_ca_file)"
        )
    );
    let shown = refused("[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nendpoint = \"http://x\"\n", 4, "endpoint");
    assert!(shown.contains("`endpoint` does not apply to a slurm cluster"), "{shown}");
    let shown = refused("[[cluster]]\nname = \"x\"\nkind = \"pbs\"\n", 3, "kind");
    assert!(shown.ends_with("(accepted kinds: slurm, kubernetes, skypilot, dstack, hub, local, stub)"), "{shown}");
}

#[test]
fn without_its_line_the_kind_is_unknown() {
    let err = Config::from_toml_str(CONFIG, Path::new(FILE), &Registry::builtin()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{FILE}:7: bad value for `kind` in [[cluster]] \"s\": unknown cluster kind \"stub\" (accepted kinds: slurm, kubernetes, skypilot, dstack, hub, local)"
        )
    );
    assert_eq!(registry().capabilities(&StubConfig::KIND), Some(STUB_CAPABILITIES));
    assert_eq!(Registry::builtin().capabilities(&StubConfig::KIND), None);
}

fn options() -> FleetOptions {
    FleetOptions { read_only: true, poll: true, audit: None, actor: "test".into() }
}

#[tokio::test]
async fn the_fleet_is_built_from_the_config_with_the_registry() {
    let config = parse(CONFIG).unwrap();
    let fleet = Fleet::builder(&config).registry(registry()).only(&["s".to_string()]).start(options()).unwrap();
    let state = fleet.wait_for(Duration::from_secs(10), |s| s.clusters.iter().all(|c| c.health.is_fresh())).await;
    assert_eq!(state.clusters.len(), 1, "only the cluster asked for");
    let stub = &state.clusters[0];
    assert_eq!((stub.name.as_str(), stub.kind.as_str()), ("s", "stub"));
    assert!(stub.health.is_fresh(), "{:?}", stub.health);
    let snapshot = stub.snapshot.as_ref().expect("the stub's snapshot");
    assert_eq!(snapshot.release.as_deref(), Some("stub-1"));
    assert_eq!(snapshot.notes, vec!["served by http://stub.example:8080".to_string()]);
    assert_eq!(fleet.diagnose("s").await.unwrap().transport, "http://stub.example:8080");
}

#[tokio::test]
async fn advice_reads_the_stubs_placement_from_its_line() {
    let config = parse(CONFIG).unwrap();
    let fleet = Fleet::builder(&config).registry(registry()).only(&["s".to_string()]).start(options()).unwrap();
    let state = fleet.wait_for(Duration::from_secs(10), |s| s.clusters.iter().all(|c| c.health.is_fresh())).await;
    assert_eq!(state.clusters[0].placement, stub_entry().placement, "the fleet put the kind's placement on its state");
    // The stub is read-only; as one that took jobs, advice would weigh it by its placement.
    let mut state = (*state).clone();
    state.clusters[0].capabilities.submit = true;
    let spec = JobSpec { name: "t".into(), gpus: 1, image: Some("img".into()), ..JobSpec::default() };
    let advice = flightdeck::fleet::advice::advise(&state, &spec);
    let a = &advice[0];
    assert_eq!(a.verdict, flightdeck::fleet::advice::Verdict::Queued, "{a:?}");
    assert!(a.reason.ends_with("; the stub conjures machines (not known here)"), "{}", a.reason);
    assert_eq!(a.caveats, ["the stub ignores images"]);
}

#[test]
fn the_stubs_dialect_is_found_by_its_kind_and_by_its_content() {
    let registry = registry();
    // What `spec convert --to stub` asks.
    let entry = registry.dialect("stub").expect("the stub's form by its kind's name");
    let spec = JobSpec { name: "train".into(), command: Some("python train.py".into()), ..JobSpec::default() };
    let native = (entry.export)(&spec).unwrap();
    assert_eq!((native.dialect.title(), native.text.as_str()), ("stub job", "stub-job train\npython train.py\n"));
    // What reading a job file asks: the content claims it, and it reads back.
    let found = registry.detect(&native.text).expect("claimed by the stub's form");
    assert_eq!(found.dialect, STUB_JOB);
    assert_eq!((found.import)(&native.text).unwrap().spec.command, spec.command);
    assert!(Registry::builtin().dialect("stub").is_none(), "no stub form without its line");
}

#[tokio::test]
async fn building_names_what_is_missing() {
    let config = parse(CONFIG).unwrap();
    let err = Fleet::builder(&config).registry(registry()).only(&["nope".to_string()]).start(options()).err().unwrap();
    assert_eq!(err.to_string(), format!("no cluster named `nope` in {FILE}"));
    // A config read with the stub, built without it: the cluster is named, nothing panics.
    let err = Fleet::from_config(&config, options()).err().expect("no stub backend in the shipped registry");
    assert_eq!(err.to_string(), "s: cluster s is of kind `stub`, which this flightdeck has no backend for");
    let every = Fleet::builder(&config).registry(registry()).members().unwrap();
    let kinds: Vec<(String, ClusterKind)> =
        every.iter().map(|m| (m.backend.name().to_string(), m.kind.clone())).collect();
    assert_eq!(kinds, vec![("hpc".into(), ClusterKind::SLURM), ("s".into(), StubConfig::KIND)]);
}

#[tokio::test]
async fn init_writes_what_the_stub_discovers() {
    // What `flightdeck init --print` does, with the stub's line in the registry.
    let look = Look { ask: true, ssh_config: None, ..Look::here() };
    let written = flightdeck::cli::init::written(&registry(), &look).await.expect("init's config reads back");
    let text = &written.text;
    let live = "# stub server at http://127.0.0.1:9001 (it answered)\n[[cluster]]\nname = \"stub-here\"\nkind = \"stub\"\nendpoint = \"http://127.0.0.1:9001\"\n";
    assert!(text.contains(live), "{text}");
    let commented = "# stub server at http://127.0.0.1:9002 (it did not answer)\n# [[cluster]]\n# name = \"stub-here-2\"\n# kind = \"stub\"\n# endpoint = \"http://127.0.0.1:9002\"\n";
    assert!(text.contains(commented), "{text}");
    assert!(text.contains("\n# a stub note\n# in two lines\n"), "{text}");
    let missing = text.split("# Looked for and not found:\n").nth(1).expect("what was missing, last");
    assert!(missing.contains("#   stub (no ~/.stub/servers.toml)\n"), "{text}");
    let config = Config::from_toml_str(text, Path::new("init"), &registry()).unwrap();
    let stub = config.cluster("stub-here").expect("the stub's live cluster");
    assert_eq!(stub.section::<StubConfig>(), Some(&StubConfig { endpoint: "http://127.0.0.1:9001".into() }));
    assert!(config.cluster("stub-here-2").is_none(), "written commented out");
    assert!(written.active >= 1 && written.commented_out >= 1, "{written:?}");
}

#[tokio::test]
async fn doctor_without_a_config_watches_and_names_what_the_stub_discovers() {
    // No config file: the embedded default holds the stub's active server, which doctor
    // diagnoses like any cluster.
    let config = Config::embedded_default(&registry());
    let stub = config.cluster("stub-here").expect("the stub's active server");
    assert_eq!(stub.kind(), StubConfig::KIND);
    let stubs = config.clusters.iter().filter(|c| c.kind() == StubConfig::KIND).count();
    assert_eq!(stubs, 1, "the server that did not answer is not watched");
    let fleet = Fleet::builder(&config).registry(registry()).only(&["stub-here".to_string()]).start(options()).unwrap();
    assert_eq!(fleet.diagnose("stub-here").await.unwrap().transport, "http://127.0.0.1:9001");
    // With nothing to show, doctor says what each kind looked for: the stub's words too.
    let said = registry().looked_for(&Look::here());
    assert!(said.contains(&"stub server at http://127.0.0.1:9001 (it answered)".to_string()), "{said:?}");
    assert!(said.contains(&"stub (no ~/.stub/servers.toml)".to_string()), "{said:?}");
    assert!(!Registry::builtin().looked_for(&Look::here()).iter().any(|s| s.starts_with("stub")));
}
