//! Kubernetes through the API server, with watches rather than polling.
//!
//! One kube-runtime watcher + reflector store per kind ([`watch`]): nodes, pods and batch
//! Jobs (required: their failure makes the cluster stale), `FailedScheduling` events, and
//! Kueue Workloads, LocalQueues and ClusterQueues when their CRDs exist ([`kueue`]). A kind
//! that is absent or forbidden only reduces the view, with a note ([`KubeBackend::notes`],
//! `doctor`). GPU allocation per node is kept up to date per pod event ([`gpu`]); a
//! snapshot is a cheap read of the stores ([`map`]), and every event bumps
//! [`Backend::changes`] so the fleet re-reads promptly.
//!
//! Actions ([`manifest`] for submit, [`drain`] for cordon and drain, [`logs`]) run on a
//! client that never retries by itself, each bounded by the cluster's `timeout`.

pub mod body_cap;
pub mod config;
pub mod dialect;
pub mod discover;
pub mod drain;
pub mod gpu;
pub mod kueue;
pub mod logs;
pub mod manifest;
pub mod map;
pub mod slurm_lines;
pub mod trim;
pub mod visibility;
pub mod watch;
pub mod workloads;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::kube::Client;
use ::kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::core::DynamicObject;
use ::kube::runtime::watcher;
use async_trait::async_trait;
use chrono::Utc;
use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::{Event, Node as KNode, Pod};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::backend::naming::{self, PLACEHOLDER_SUFFIX, SUFFIX_LEN};
use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction};
use crate::config::ClusterConfig;
use crate::model::{FieldUse, JobRef, LogHandle, Native, Need, Snapshot, SpecFields, gpu_names};
use crate::model::{Partitions, Placement};
use crate::spec::{Imported, JobSpec};

pub use self::config::KubeConfig;
use self::drain::{DrainOptions, DrainReport};
use self::kueue::{ClusterQueueInfo, KueueKind, LocalQueueInfo, WorkloadInfo};
use self::manifest::GpuPlacement;
use self::map::Target;
use self::watch::{Registry, Scope, Shared};
use self::workloads::{AuxKind, KindDef, WorkloadKind};

/// A required watch failing for this long (or the cluster's timeout, if shorter) makes the
/// cluster stale; a dropped connection that comes back at once does not.
const STALE_GRACE: Duration = Duration::from_secs(5);
/// With no event for this long, a snapshot first checks that the server still answers.
const QUIET: Duration = Duration::from_secs(10);

struct Registries {
    nodes: Arc<Registry<KNode>>,
    pods: Arc<Registry<Pod>>,
    jobs: Arc<Registry<KJob>>,
    events: Arc<Registry<Event>>,
    kueue: BTreeMap<KueueKind, Arc<Registry<DynamicObject>>>,
    workloads: BTreeMap<WorkloadKind, Arc<Registry<DynamicObject>>>,
    aux: BTreeMap<AuxKind, Arc<Registry<DynamicObject>>>,
    /// The version each workload kind is watched at (the first one served), for actions.
    served: Arc<Mutex<HashMap<WorkloadKind, &'static str>>>,
}

/// What a spec becomes: a batch Job, or (several nodes) a workload object.
enum Planned {
    Job(Box<KJob>),
    Workload(workloads::submit::WorkloadManifest),
}

/// One Kubernetes context.
pub struct KubeBackend {
    name: String,
    context: Option<String>,
    kubeconfig: Option<PathBuf>,
    namespaces: Vec<String>,
    queue: Option<String>,
    /// What a multi-node spec is submitted as.
    multi_node: workloads::submit::MultiNode,
    timeout: Duration,
    refresh: Duration,
    shared: Arc<Shared>,
    stores: Registries,
    client: OnceCell<Client>,
    started: OnceCell<()>,
    /// Workload jobs of the last snapshot, kept while nothing they are built from changed.
    workload_jobs: workloads::cache::JobCache,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    release: Mutex<Option<String>>,
    /// `GET /version` was tried once (the release comes from it).
    version_asked: std::sync::atomic::AtomicBool,
    cursors: Mutex<logs::Cursors>,
    /// How `NodeAction::Drain` treats pods (kubectl's defaults: no `--force`, no
    /// `--delete-emptydir-data`).
    pub drain_options: DrainOptions,
}

impl Drop for KubeBackend {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            t.abort();
        }
    }
}

/// A kube client error in words: the API's status, or the transport's chain of causes.
pub fn describe_client_error(err: &::kube::Error) -> String {
    match err {
        ::kube::Error::Api(s) => {
            let reason = if s.reason.is_empty() { String::new() } else { format!(" {}", s.reason) };
            if s.message.is_empty() {
                format!("{}{reason}", s.code)
            } else {
                format!("{}{reason}: {}", s.code, s.message)
            }
        }
        other => {
            let mut parts = vec![other.to_string()];
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                let text = s.to_string();
                if !parts.iter().any(|p| p.contains(&text)) {
                    parts.push(text);
                }
                source = s.source();
            }
            parts.join(": ")
        }
    }
}

/// A waiting Volcano gang's reason in words, from what the nodes hold now (`gang of 4 pods of
/// 8×h100 waits: 2 nodes can take one`), Volcano's own words kept after it in parentheses
/// (`why` reads the gang's size there). Done on each snapshot's jobs, not in the mapping,
/// since the nodes change without the workload changing; the cached job keeps the raw reason.
fn gang_reasons_in_words(jobs: &mut [crate::model::Job], nodes: &[crate::model::Node]) {
    for job in jobs.iter_mut().filter(|j| j.state == crate::model::JobState::Pending) {
        let Some(reason) = job.reason.as_deref() else { continue };
        if let Some(gang) = crate::model::workload::GangWait::of(nodes, job, reason) {
            job.reason = Some(format!("{} ({reason})", gang.short()));
        }
    }
}

/// The kubeconfig with every exec credential plugin run under coreutils `timeout`: kube
/// runs plugins as blocking child processes inside its request path (at client creation
/// and again whenever the token expires), where no async timeout can reach them, so a
/// plugin waiting on a browser login or a dead SSO endpoint would hang the cluster's
/// refresh forever. Under `timeout` it is killed after the cluster's timeout (then SIGKILL
/// two seconds later) and kube reports the failure. Without a `timeout` program the
/// kubeconfig is used as it is.
pub fn bound_exec_plugins(mut kubeconfig: Kubeconfig, limit: Duration) -> Kubeconfig {
    let Some(timeout) = crate::config::find_program("timeout") else { return kubeconfig };
    for named in &mut kubeconfig.auth_infos {
        let Some(exec) = named.auth_info.as_mut().and_then(|a| a.exec.as_mut()) else { continue };
        let Some(command) = exec.command.take() else { continue };
        let mut args = vec!["--kill-after=2".to_string(), format!("{}s", limit.as_secs().max(1)), command];
        args.extend(exec.args.take().unwrap_or_default());
        exec.command = Some(timeout.display().to_string());
        exec.args = Some(args);
    }
    kubeconfig
}

/// What a Kubernetes cluster can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    submit: true,
    cancel: true,
    hold_release: true,
    requeue: false,
    drain_resume: true,
    cordon_uncordon: true,
    delete: false,
    teardown: false,
};

/// `partition` names a Kueue queue with a quota; one job's pods may share a node.
pub fn placement() -> Placement {
    Placement { partition: Partitions::QuotaQueue, shares_nodes: true, workload_kinds: true, ..Placement::default() }
}

/// The kind's line in the backend registry.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            let cluster = crate::backend::registry::typed::<KubeConfig>(cluster)?;
            Ok(Arc::new(KubeBackend::new(&cluster)))
        },
        capabilities: CAPABILITIES,
        placement: placement(),
        dialects: dialect::entries(),
        expand: None,
        discover: discover::discover,
    }
}

impl KubeBackend {
    pub fn new(cfg: &ClusterConfig<KubeConfig>) -> Self {
        let kube = &cfg.settings;
        Self {
            name: cfg.name.clone(),
            context: kube.context.clone(),
            kubeconfig: kube.kubeconfig.clone(),
            namespaces: kube.namespaces.clone(),
            queue: kube.queue.clone(),
            multi_node: kube.multi_node,
            timeout: cfg.timeout,
            refresh: cfg.refresh,
            shared: Shared::new(&cfg.name),
            stores: Registries {
                nodes: Arc::default(),
                pods: Arc::default(),
                jobs: Arc::default(),
                events: Arc::default(),
                kueue: KueueKind::ALL.into_iter().map(|k| (k, Arc::default())).collect(),
                workloads: WorkloadKind::ALL.into_iter().map(|k| (k, Arc::default())).collect(),
                aux: AuxKind::ALL.into_iter().map(|k| (k, Arc::default())).collect(),
                served: Arc::default(),
            },
            client: OnceCell::new(),
            started: OnceCell::new(),
            workload_jobs: workloads::cache::JobCache::default(),
            tasks: Mutex::new(Vec::new()),
            release: Mutex::new(None),
            version_asked: std::sync::atomic::AtomicBool::new(false),
            cursors: Mutex::new(logs::Cursors::default()),
            drain_options: DrainOptions::default(),
        }
    }

    /// A backend over an existing client (tests; embedding).
    pub fn with_client(cfg: &ClusterConfig<KubeConfig>, client: Client) -> Self {
        let me = Self::new(cfg);
        let _ = me.client.set(client);
        me
    }

    fn target(&self) -> String {
        let file = self.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the kubeconfig".into());
        match &self.context {
            Some(c) => format!("context `{c}` of {file}"),
            None => format!("the current context of {file}"),
        }
    }

    fn stale_after(&self) -> Duration {
        STALE_GRACE.min(self.timeout)
    }

    /// The client: from the kubeconfig, with kube's own retries off (every call here is
    /// bounded by the cluster's timeout instead).
    /// The client, made on first use. Making it reads the kubeconfig and may run its exec
    /// credential plugin, which can hang: that is bounded by the cluster timeout too, so an
    /// action that needs the client never waits longer than an action may.
    pub async fn client(&self) -> Result<Client, BackendError> {
        let what = format!("connecting to {}", self.target());
        self.bounded(what, self.client_unbounded()).await
    }

    async fn client_unbounded(&self) -> Result<Client, BackendError> {
        self.client
            .get_or_try_init(|| async {
                let connect = |message: String| BackendError::Connect { target: self.target(), message };
                let kubeconfig = match &self.kubeconfig {
                    Some(path) => Kubeconfig::read_from(path),
                    None => Kubeconfig::read(),
                }
                .map_err(|e| connect(format!("cannot read the kubeconfig: {e}")))?;
                let kubeconfig = bound_exec_plugins(kubeconfig, self.timeout);
                let options = KubeConfigOptions { context: self.context.clone(), ..KubeConfigOptions::default() };
                let mut config = ::kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|e| connect(format!("unusable kubeconfig: {e}")))?;
                config.default_retry = false;
                config.connect_timeout = Some(self.timeout.min(Duration::from_secs(10)));
                let builder =
                    ::kube::client::ClientBuilder::try_from(config).map_err(|e| connect(describe_client_error(&e)))?;
                Ok(builder.with_layer(&body_cap::BodyCapLayer::default()).build())
            })
            .await
            .cloned()
    }

    /// The namespace submissions and fallbacks use: the first configured one, else the
    /// context's.
    async fn home_namespace(&self) -> Result<String, BackendError> {
        match self.namespaces.first() {
            Some(ns) => Ok(ns.clone()),
            None => Ok(self.client().await?.default_namespace().to_string()),
        }
    }

    /// Start the watches (once; `snapshot` does it by itself).
    pub async fn start(&self) -> Result<(), BackendError> {
        self.started
            .get_or_try_init(|| async {
                let client = self.client().await?;
                let fallback = client.default_namespace().to_string();
                let mut tasks = Vec::new();
                let shared = &self.shared;
                let scopes = watch::scopes(&self.namespaces, &fallback);

                let c = client.clone();
                tasks.push(spawn(
                    shared,
                    "nodes",
                    Scope::Cluster,
                    true,
                    watcher::Config::default(),
                    &self.stores.nodes,
                    None,
                    move |_, variant| (variant == 0).then(|| (Api::<KNode>::all(c.clone()), ())),
                    String::new(),
                ));
                for scope in &scopes {
                    let c = client.clone();
                    tasks.push(spawn(
                        shared,
                        "pods",
                        scope.clone(),
                        true,
                        watcher::Config::default(),
                        &self.stores.pods,
                        Some(watch::pod_hook),
                        move |ns, variant| (variant == 0).then(|| (namespaced::<Pod>(&c, ns), ())),
                        String::new(),
                    ));
                    let c = client.clone();
                    tasks.push(spawn(
                        shared,
                        "jobs",
                        scope.clone(),
                        true,
                        watcher::Config::default(),
                        &self.stores.jobs,
                        None,
                        move |ns, variant| (variant == 0).then(|| (namespaced::<KJob>(&c, ns), ())),
                        String::new(),
                    ));
                    let c = client.clone();
                    tasks.push(spawn(
                        shared,
                        "FailedScheduling events",
                        scope.clone(),
                        false,
                        watcher::Config::default().fields("reason=FailedScheduling"),
                        &self.stores.events,
                        None,
                        move |ns, variant| (variant == 0).then(|| (namespaced::<Event>(&c, ns), ())),
                        String::new(),
                    ));
                }
                // One note for every Kueue kind and scope (notes are shown once each).
                let absent = format!(
                    "Kueue is not installed ({}/{} and /{} not served): queues are namespaces and node pools, pending reasons come from the scheduler",
                    kueue::GROUP,
                    kueue::VERSIONS[0],
                    kueue::VERSIONS[1],
                );
                for kind in KueueKind::ALL {
                    let kind_scopes = if kind.namespaced() { scopes.clone() } else { vec![Scope::Cluster] };
                    for scope in kind_scopes {
                        let c = client.clone();
                        tasks.push(spawn(
                            shared,
                            &format!("Kueue {}s", kind.kind()),
                            scope,
                            false,
                            watcher::Config::default(),
                            &self.stores.kueue[&kind],
                            None,
                            move |ns, variant| {
                                let version = kueue::VERSIONS.get(variant)?;
                                let ar = kind.resource(version);
                                let api = match ns {
                                    Some(ns) => Api::<DynamicObject>::namespaced_with(c.clone(), ns, &ar),
                                    None => Api::<DynamicObject>::all_with(c.clone(), &ar),
                                };
                                Some((api, ar))
                            },
                            absent.clone(),
                        ));
                    }
                }
                tasks.extend(self.spawn_workload_watches(&client, &scopes));
                self.tasks.lock().unwrap_or_else(|e| e.into_inner()).extend(tasks);
                Ok::<(), BackendError>(())
            })
            .await
            .map(drop)
    }

    /// One watch per workload kind and scope (and for Volcano's PodGroups and Queues); an
    /// absent CRD is one note per project.
    fn spawn_workload_watches(&self, client: &Client, scopes: &[Scope]) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        let mut start = |def: KindDef, registry: &Arc<Registry<DynamicObject>>, on_serve: Option<WorkloadKind>| {
            let kind_scopes = if def.namespaced { scopes.to_vec() } else { vec![Scope::Cluster] };
            let absent = workloads::ABSENT_NOTE.to_string();
            for scope in kind_scopes {
                let c = client.clone();
                let served = self.stores.served.clone();
                tasks.push(spawn(
                    &self.shared,
                    &format!("{} {}s", def.group, def.kind),
                    scope,
                    false,
                    watcher::Config::default(),
                    registry,
                    None,
                    move |ns, variant| {
                        let version = def.versions.get(variant)?;
                        if let Some(kind) = on_serve {
                            served.lock().unwrap_or_else(|e| e.into_inner()).insert(kind, version);
                        }
                        let ar = def.resource(version);
                        let api = match ns {
                            Some(ns) => Api::<DynamicObject>::namespaced_with(c.clone(), ns, &ar),
                            None => Api::<DynamicObject>::all_with(c.clone(), &ar),
                        };
                        Some((api, ar))
                    },
                    absent.clone(),
                ));
            }
        };
        for kind in WorkloadKind::ALL {
            start(kind.def(), &self.stores.workloads[&kind], Some(kind));
        }
        for kind in AuxKind::ALL {
            start(kind.def(), &self.stores.aux[&kind], None);
        }
        tasks
    }

    /// The workload kind a job id's word names; an owner flightdeck does not manage (a
    /// Deployment, a StatefulSet) is refused with the kubectl command that would do it.
    fn workload_kind(&self, word: &str, namespace: &str, name: &str) -> Result<WorkloadKind, BackendError> {
        WorkloadKind::from_word(word).ok_or_else(|| {
            BackendError::Unsupported(format!(
                "{namespace}/{name} is a {word}, which flightdeck shows but does not manage: use kubectl (kubectl -n {namespace} delete {word} {name})"
            ))
        })
    }

    /// The version `kind` is watched at (its newest before the watch found one).
    fn served_version(&self, kind: WorkloadKind) -> &'static str {
        self.stores
            .served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&kind)
            .copied()
            .unwrap_or(kind.def().versions[0])
    }

    /// Wait (within the timeout) until nodes, pods and jobs have been listed once; a failure
    /// before that is reported at once.
    async fn wait_synced(&self) -> Result<(), BackendError> {
        let mut rx = self.shared.subscribe();
        let deadline = tokio::time::Instant::now() + self.timeout.mul_f32(0.9);
        loop {
            if self.shared.synced() {
                return Ok(());
            }
            if let Some(err) = self.shared.failure(Duration::ZERO) {
                return Err(BackendError::Connect { target: self.target(), message: err });
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => {
                    return Err(BackendError::Timeout {
                        what: "the first list of nodes, pods and jobs".into(),
                        secs: self.timeout.as_secs(),
                    });
                }
            }
        }
    }

    /// Ask the server for its version when the watches have been quiet for a while (or the
    /// release is unknown): a server that went away without closing the watches shows here.
    async fn check_alive(&self) -> Result<(), BackendError> {
        let quiet = self.shared.last_event().is_none_or(|t| t.elapsed() >= QUIET.max(self.refresh));
        let unknown = !self.version_asked.swap(true, std::sync::atomic::Ordering::Relaxed);
        if !quiet && !unknown {
            return Ok(());
        }
        let client = self.client().await?;
        let bound = self.timeout.min(Duration::from_secs(5));
        match tokio::time::timeout(bound, client.apiserver_version()).await {
            Ok(Ok(info)) => {
                *self.release.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.git_version);
                self.shared.mark_alive();
                Ok(())
            }
            // The server answered, if not with a version: it is there.
            Ok(Err(::kube::Error::Api(s))) if s.code < 500 => {
                self.shared.mark_alive();
                Ok(())
            }
            Ok(Err(e)) if !quiet => {
                tracing::debug!(cluster = %self.name, error = %describe_client_error(&e), "no server version");
                Ok(())
            }
            Ok(Err(e)) => Err(BackendError::Connect {
                target: self.target(),
                message: format!("the API server does not answer: {}", describe_client_error(&e)),
            }),
            Err(_) if !quiet => Ok(()),
            Err(_) => Err(BackendError::Timeout { what: "GET /version".into(), secs: bound.as_secs() }),
        }
    }

    /// What the view lacks and why: absent kinds (Kueue not installed), missing permissions,
    /// failing watches. (Shown by `doctor`; the model has no place for it yet.)
    pub fn notes(&self) -> Vec<String> {
        self.shared.notes()
    }

    /// Every watch and its health, by label (`nodes`, `pods in ml`, `Kueue workloads` …).
    pub fn watches(&self) -> BTreeMap<String, watch::WatchHealth> {
        self.shared.health()
    }

    /// The pods and nodes as the watch caches hold them (cut to what is read: `trim`).
    pub fn cached(&self) -> (Vec<Arc<Pod>>, Vec<Arc<KNode>>) {
        (self.stores.pods.all(), self.stores.nodes.all())
    }

    /// What the pods hold on each node now (the incremental tallies).
    pub fn node_tallies(&self) -> HashMap<Box<str>, gpu::NodeTally> {
        self.shared.ledger.lock().unwrap_or_else(|e| e.into_inner()).nodes().clone()
    }

    /// The picture as the stores hold it now.
    pub fn build_snapshot(&self) -> Snapshot {
        let nodes = self.stores.nodes.all();
        let pods = self.stores.pods.all();
        let jobs = self.stores.jobs.all();
        let events = self.stores.events.all();
        let workloads: Vec<WorkloadInfo> =
            self.stores.kueue[&KueueKind::Workload].all().iter().map(|o| WorkloadInfo::from_object(o)).collect();
        let local_queues: Vec<LocalQueueInfo> =
            self.stores.kueue[&KueueKind::LocalQueue].all().iter().map(|o| LocalQueueInfo::from_object(o)).collect();
        let cluster_queues: Vec<ClusterQueueInfo> = self.stores.kueue[&KueueKind::ClusterQueue]
            .all()
            .iter()
            .map(|o| ClusterQueueInfo::from_object(o))
            .collect();

        let lookup = Index {
            failed_scheduling: watch::failed_scheduling_index(&events),
            node_labels: nodes
                .iter()
                .filter_map(|n| Some((n.metadata.name.clone()?, n.metadata.labels.clone().unwrap_or_default())))
                .collect(),
            local_queues: local_queues.iter().fold(HashMap::new(), |mut by_ns, q| {
                if let Some(cq) = &q.cluster_queue {
                    by_ns.entry(q.namespace.clone()).or_default().insert(q.name.clone(), cq.clone());
                }
                by_ns
            }),
        };
        let mut model_nodes: Vec<crate::model::Node> = {
            let ledger = self.shared.ledger.lock().unwrap_or_else(|e| e.into_inner());
            nodes
                .iter()
                .map(|n| map::node(&self.name, n, n.metadata.name.as_deref().and_then(|name| ledger.node(name))))
                .collect()
        };
        model_nodes.sort_by(|a, b| a.name.cmp(&b.name));

        let workload_objects: Vec<(WorkloadKind, Arc<DynamicObject>)> = WorkloadKind::ALL
            .into_iter()
            .flat_map(|k| self.stores.workloads[&k].all().into_iter().map(move |o| (k, o)))
            .collect();
        let pod_groups: Vec<workloads::volcano::PodGroupInfo> = self.stores.aux[&AuxKind::PodGroup]
            .all()
            .iter()
            .map(|o| workloads::volcano::PodGroupInfo::from_object(o))
            .collect();
        let volcano_queues: Vec<workloads::volcano::QueueInfo> = self.stores.aux[&AuxKind::VolcanoQueue]
            .all()
            .iter()
            .map(|o| workloads::volcano::QueueInfo::from_object(o))
            .collect();
        let mut model_jobs = self.jobs_of(&pods, &jobs, &workload_objects, &workloads, &pod_groups, &lookup);
        model_jobs.sort_by(|a, b| a.job_ref.id.cmp(&b.job_ref.id));
        gang_reasons_in_words(&mut model_jobs, &model_nodes);

        let mut snap = Snapshot {
            cluster: self.name.clone(),
            taken_at: Some(Utc::now()),
            release: self.release.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            jobs: model_jobs,
            nodes: model_nodes,
            queues: Vec::new(),
            notes: self.notes(),
        };
        map::queues(&mut snap, &cluster_queues, &volcano_queues);
        snap
    }

    /// Every job: batch Jobs, workload objects and owners that hold GPU pods, bare GPU pods.
    #[allow(clippy::too_many_arguments)]
    fn jobs_of(
        &self,
        pods: &[Arc<Pod>],
        jobs: &[Arc<KJob>],
        workload_objects: &[(WorkloadKind, Arc<DynamicObject>)],
        kueue_workloads: &[WorkloadInfo],
        pod_groups: &[workloads::volcano::PodGroupInfo],
        lookup: &Index,
    ) -> Vec<crate::model::Job> {
        let grouped = workloads::owners::group(pods, jobs, workload_objects);
        // Kueue Workloads by the kind and name of what they queue.
        let kueue_of: HashMap<(&str, &str, &str), &WorkloadInfo> = kueue_workloads
            .iter()
            .filter_map(|w| {
                let (kind, name) = w.owner.as_ref()?;
                Some(((kind.as_str(), w.namespace.as_str(), name.as_str()), w))
            })
            .collect();
        let group_of: HashMap<&str, &workloads::volcano::PodGroupInfo> =
            pod_groups.iter().filter_map(|g| Some((g.owner_uid.as_deref()?, g))).collect();
        let mut out = Vec::with_capacity(jobs.len() + workload_objects.len() + grouped.bare.len());
        for (i, job) in jobs.iter().enumerate() {
            if grouped.batch_owned[i] {
                continue;
            }
            let ns = job.metadata.namespace.as_deref().unwrap_or("");
            let name = job.metadata.name.as_deref().unwrap_or("");
            let kueue = kueue_of.get(&("Job", ns, name)).copied();
            out.push(map::batch_job(&self.name, job, &grouped.batch[i], kueue, lookup));
        }
        let mut round = self.workload_jobs.round();
        workloads::job::workload_jobs(
            &self.name,
            workload_objects,
            &grouped,
            |kind, obj| {
                let ns = obj.metadata.namespace.as_deref().unwrap_or("");
                let name = obj.metadata.name.as_deref().unwrap_or("");
                workloads::job::Beside {
                    kueue: (kind != WorkloadKind::VolcanoJob)
                        .then(|| kueue_of.get(&(kind.def().kind, ns, name)).copied())
                        .flatten(),
                    pod_group: obj.metadata.uid.as_deref().and_then(|u| group_of.get(u).copied()),
                }
            },
            lookup,
            lookup.fingerprint(),
            &mut round,
            &mut out,
        );
        drop(round);
        for (key, members) in &grouped.unwatched {
            if members.iter().any(|p| gpu::pod_demand(p).gpus() > 0) {
                out.push(workloads::job::owner_job(&self.name, key, members, lookup));
            }
        }
        for pod in &grouped.bare {
            if gpu::pod_demand(pod).gpus() > 0 {
                out.push(map::bare_pod(&self.name, pod, lookup));
            }
        }
        out
    }

    /// Drain with explicit options, returning what happened to every pod.
    pub async fn drain_node(
        &self,
        node: &str,
        reason: &str,
        options: &DrainOptions,
    ) -> Result<DrainReport, BackendError> {
        let client = self.client().await?;
        let by = whoami::username().unwrap_or_else(|_| "unknown".into());
        // Evictions stop a little before the action's bound, so the report still comes back.
        let inner = self.timeout.saturating_sub(Duration::from_millis(500)).max(Duration::from_millis(500));
        let deadline = tokio::time::Instant::now() + inner;
        self.bounded(
            format!("drain {node}"),
            drain::drain(&client, node, reason, &by, &self.namespaces, options, deadline),
        )
        .await
    }

    async fn bounded<T>(
        &self,
        what: String,
        fut: impl std::future::Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        tokio::time::timeout(self.timeout, fut)
            .await
            .unwrap_or_else(|_| Err(BackendError::Timeout { what, secs: self.timeout.as_secs() }))
    }

    /// Where a job's GPUs come from: a MIG profile's resource, or the product labels of the
    /// nodes whose model matches `gpu_type` (case-insensitive substring: `h100` finds
    /// `NVIDIA-H100-80GB-HBM3`).
    async fn gpu_placement(&self, gpu_type: Option<&str>) -> Result<GpuPlacement, BackendError> {
        let mut nodes = self.stores.nodes.all();
        if nodes.is_empty() {
            // Not watching (a one-shot command): one list of the nodes.
            let client = self.client().await?;
            let api: Api<KNode> = Api::all(client);
            if let Ok(list) = tokio::time::timeout(self.timeout, api.list(&ListParams::default())).await {
                nodes = list.map(|l| l.items.into_iter().map(Arc::new).collect()).unwrap_or_default();
            }
        }
        let advertises = |n: &KNode, r: &str| {
            n.status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get(r))
                .is_some_and(|q| gpu::quantity_milli(q) > 0)
        };
        let Some(wanted) = gpu_type else {
            let resource = [gpu::NVIDIA_GPU, gpu::AMD_GPU, gpu::NVIDIA_SHARED]
                .into_iter()
                .find(|r| nodes.iter().any(|n| advertises(n, r)))
                .unwrap_or(gpu::NVIDIA_GPU);
            return Ok(GpuPlacement { resource: resource.into(), node_label: None });
        };
        if manifest::is_mig_profile(wanted) {
            return Ok(GpuPlacement { resource: format!("{}{}", gpu::NVIDIA_MIG_PREFIX, wanted), node_label: None });
        }
        let needle = wanted.to_ascii_lowercase();
        let wanted_model = gpu_names::canonical_model(wanted);
        let mut known: Vec<String> = Vec::new();
        for (label, resources) in [
            (map::NVIDIA_PRODUCT, [gpu::NVIDIA_GPU, gpu::NVIDIA_SHARED]),
            (map::AMD_PRODUCT, [gpu::AMD_GPU, gpu::AMD_GPU]),
        ] {
            let mut values: Vec<String> = Vec::new();
            let mut resource = None;
            for n in &nodes {
                let Some(v) = n.metadata.labels.as_ref().and_then(|l| l.get(label)) else { continue };
                if !known.contains(v) {
                    known.push(v.clone());
                }
                // `h100` finds `NVIDIA-H100-80GB-HBM3` by substring; `a100-80gb` (the model the
                // front ends show) finds `NVIDIA-A100-SXM4-80GB` by canonical name.
                if v.to_ascii_lowercase().contains(&needle) || gpu_names::canonical_model(v) == wanted_model {
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                    resource = resource.or_else(|| resources.into_iter().find(|r| advertises(n, r)));
                }
            }
            if !values.is_empty() {
                values.sort();
                return Ok(GpuPlacement {
                    resource: resource.unwrap_or(resources[0]).to_string(),
                    node_label: Some((label.to_string(), values)),
                });
            }
        }
        known.sort();
        Err(BackendError::InvalidSpec(if known.is_empty() {
            format!("`gpu_type`: no node carries a GPU model label to match {wanted:?} (GPU Feature Discovery labels)")
        } else {
            format!("`gpu_type`: no node has GPU model {wanted:?} (models here: {})", known.join(", "))
        }))
    }

    /// The Kueue LocalQueue a submission goes to: the spec's partition when it names a
    /// LocalQueue of the namespace, else the configured `queue`.
    /// The Job `submit` creates for `spec` (named with `suffix`), its namespace, and what of
    /// the spec the cluster does not use, by field.
    async fn plan_submission(
        &self,
        spec: &JobSpec,
        suffix: String,
    ) -> Result<(Planned, String, Vec<String>), BackendError> {
        spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
        let how = workloads::submit::MultiNode::for_spec(spec, self.multi_node)?;
        if spec.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
            // Checked before any request, so the message is the same on a dead cluster.
            manifest::job_manifest(
                &JobSpec { nodes: None, ..spec.clone() },
                &manifest::Target {
                    namespace: String::new(),
                    queue: None,
                    gpus: GpuPlacement::any_nvidia(),
                    user: String::new(),
                    suffix: String::new(),
                },
            )?;
        }
        let namespace = match &spec.account {
            Some(ns) if !ns.is_empty() => ns.clone(),
            _ => self.home_namespace().await?,
        };
        let gpus = if spec.gpus > 0 {
            self.gpu_placement(spec.gpu_type.as_deref()).await?
        } else {
            GpuPlacement::any_nvidia()
        };
        let queue = self.submission_queue(spec, &namespace);
        let mut warnings = Vec::new();
        // A Volcano Job's partition is its Volcano queue, not a Kueue one.
        let several = spec.nodes.unwrap_or(1) > 1;
        let volcano = several && how == workloads::submit::MultiNode::Volcano;
        if let Some(p) = spec.partition.as_deref().filter(|p| !volcano && queue.as_deref() != Some(*p)) {
            warnings.push(format!(
                "`partition`: {p:?} is no Kueue LocalQueue in namespace {namespace}; ignored{}",
                queue.as_deref().map(|q| format!(" (the job goes to {q})")).unwrap_or_default()
            ));
        }
        let target = manifest::Target {
            queue,
            namespace: namespace.clone(),
            gpus,
            user: whoami::username().unwrap_or_default(),
            suffix,
        };
        if let Some(word) = spec.multi_node.as_deref().filter(|_| !several) {
            warnings.push(format!("`multi_node`: {word} is for 2 or more nodes; one node runs as a plain Job"));
        }
        if several {
            let built = workloads::submit::multi_node_manifest(spec, &target, how)?;
            self.check_served(how).await?;
            warnings.extend(built.warnings.iter().cloned());
            return Ok((Planned::Workload(built), namespace, warnings));
        }
        let built = manifest::job_manifest(spec, &target)?;
        warnings.extend(built.warnings);
        Ok((Planned::Job(Box::new(built.job)), namespace, warnings))
    }

    /// Refuse, by name, a workload kind whose API this cluster does not serve (its CRD is
    /// not installed), before the preview shows a manifest nothing would run: one discovery
    /// GET of the group version, which a 404 answers when the CRD is absent.
    async fn check_served(&self, how: workloads::submit::MultiNode) -> Result<(), BackendError> {
        let api_version = how.api_version();
        let def = how.kind().def();
        let client = self.client().await?;
        let refused = || {
            BackendError::Unsupported(format!(
                "{} does not serve {api_version} (the {} CRD, from {}): install it, or ask for a kind it serves with `multi_node` (the cluster's setting, or the spec's and --multi-node for one job: {})",
                self.name,
                def.kind,
                def.project,
                workloads::submit::MultiNode::NAMES.join(", ")
            ))
        };
        match client.list_api_group_resources(&api_version).await {
            Ok(list) if list.resources.iter().any(|r| r.name == def.plural) => Ok(()),
            Ok(_) => Err(refused()),
            Err(::kube::Error::Api(s)) if s.code == 404 => Err(refused()),
            Err(e) => Err(BackendError::Command {
                command: format!("discover {api_version}"),
                status: None,
                stderr: describe_client_error(&e),
            }),
        }
    }

    fn submission_queue(&self, spec: &JobSpec, namespace: &str) -> Option<String> {
        if let Some(p) = &spec.partition {
            let lqs = self.stores.kueue[&KueueKind::LocalQueue].all();
            if lqs.iter().any(|q| {
                q.metadata.namespace.as_deref() == Some(namespace) && q.metadata.name.as_deref() == Some(p.as_str())
            }) {
                return Some(p.clone());
            }
            tracing::info!(cluster = %self.name, partition = %p, namespace, "partition is no LocalQueue here; ignored");
        }
        self.queue.clone()
    }
}

/// A failed GET of one object: 404 is "no such job", the rest the API's words.
fn get_error(what: &str, err: ::kube::Error) -> BackendError {
    match err {
        ::kube::Error::Api(s) if s.code == 404 => BackendError::NotFound(format!("no {what}")),
        e => BackendError::Command { command: format!("get {what}"), status: None, stderr: describe_client_error(&e) },
    }
}

fn namespaced<K>(client: &Client, ns: Option<&str>) -> Api<K>
where
    K: ::kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Run the watches of one kind in one scope for ever: switch to the next API version on a
/// 404 (Kueue `v1beta2` → `v1beta1`), to the fallback namespace on a 403 in all namespaces,
/// and otherwise note why the kind is off and try again later.
#[allow(clippy::too_many_arguments)]
fn spawn<K, F>(
    shared: &Arc<Shared>,
    what: &str,
    scope: Scope,
    required: bool,
    config: watcher::Config,
    registry: &Arc<Registry<K>>,
    hook: Option<watch::HookFactory<K>>,
    make_api: F,
    absent_note: String,
) -> JoinHandle<()>
where
    K: ::kube::Resource + trim::Trim + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    F: Fn(Option<&str>, usize) -> Option<(Api<K>, K::DynamicType)> + Send + 'static,
{
    let shared = shared.clone();
    let registry = registry.clone();
    let what = what.to_string();
    // Known before any task runs, so the first snapshot waits for every required kind.
    shared.register(&scope.label(&what), required);
    tokio::spawn(async move {
        let mut scope = scope;
        let mut variant = 0;
        let mut last_absent: Option<watch::Disabled> = None;
        loop {
            let label = scope.label(&what);
            let Some((api, dyntype)) = make_api(scope.namespace(), variant) else {
                let note = match (&last_absent, absent_note.is_empty()) {
                    (_, false) => absent_note.clone(),
                    (Some(d), true) => d.describe(&label),
                    (None, true) => format!("{label}: not served by this cluster"),
                };
                shared.set_note(&label, Some(note));
                tokio::time::sleep(watch::RETRY_DISABLED).await;
                variant = 0;
                continue;
            };
            let h = hook.map(|f| f(shared.clone(), scope.namespace().map(str::to_string)));
            let ended =
                watch::run(shared.clone(), label.clone(), required, api, config.clone(), dyntype, registry.clone(), h)
                    .await;
            match (&scope, ended.code) {
                (_, 404) => {
                    variant += 1;
                    last_absent = Some(ended);
                }
                (Scope::AllNamespaces { fallback }, 403) => {
                    shared.set_note(
                        &label,
                        Some(format!(
                            "{}; showing namespace `{fallback}` only (set `namespaces` in the config to choose)",
                            ended.describe(&format!("{what} in all namespaces"))
                        )),
                    );
                    shared.forget(&label);
                    scope = Scope::Namespace(fallback.clone());
                    variant = 0;
                }
                _ => {
                    shared.set_note(&label, Some(ended.describe(&label)));
                    tokio::time::sleep(watch::RETRY_DISABLED).await;
                    variant = 0;
                }
            }
        }
    })
}

/// What the mapping looks up across kinds. Namespaced facts are nested by namespace, so a
/// lookup borrows its `&str`s instead of building a `(String, String)` key per pod.
struct Index {
    failed_scheduling: HashMap<String, HashMap<String, String>>,
    node_labels: HashMap<String, BTreeMap<String, String>>,
    /// Namespace → LocalQueue → its ClusterQueue.
    local_queues: HashMap<String, HashMap<String, String>>,
}

impl Index {
    /// What the mapping reads here beside a workload's own pods (node labels for GPU models,
    /// LocalQueues for ClusterQueues), as one number: a kept workload job is built again
    /// when it changes (see `workloads::cache`). Events are looked up per pod instead.
    fn fingerprint(&self) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = foldhash::quality::FixedState::default().build_hasher();
        let mut nodes: Vec<_> = self.node_labels.iter().collect();
        nodes.sort_unstable_by(|a, b| a.0.cmp(b.0));
        nodes.hash(&mut h);
        let mut queues: Vec<(&String, &String, &String)> =
            self.local_queues.iter().flat_map(|(ns, queues)| queues.iter().map(move |(lq, cq)| (ns, lq, cq))).collect();
        queues.sort_unstable();
        queues.hash(&mut h);
        h.finish()
    }
}

impl map::Lookup for Index {
    fn failed_scheduling(&self, namespace: &str, pod: &str) -> Option<&str> {
        self.failed_scheduling.get(namespace)?.get(pod).map(String::as_str)
    }

    fn node_labels(&self, node: &str) -> Option<&BTreeMap<String, String>> {
        self.node_labels.get(node)
    }

    fn cluster_queue_of(&self, namespace: &str, local_queue: &str) -> Option<&str> {
        self.local_queues.get(namespace)?.get(local_queue).map(String::as_str)
    }
}

#[async_trait]
impl Backend for KubeBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn spec_fields(&self) -> SpecFields {
        SpecFields {
            image: FieldUse::new("image", Need::Required, "a Kubernetes job runs in a container"),
            account: FieldUse::new("namespace", Need::Optional, "default: the context's namespace"),
            partition: FieldUse::new("queue", Need::Optional, "a Kueue LocalQueue in the namespace"),
        }
    }

    fn shape_fields(&self) -> crate::model::ShapeFields {
        let kind = self.multi_node.kind().def().kind;
        crate::model::ShapeFields {
            nodes: FieldUse::new("nodes", Need::Optional, &format!("2 or more run as one {kind}, a pod per node")),
            tasks_per_node: FieldUse::new(
                "tasks/node",
                Need::Optional,
                "the command starts them (torchrun --nproc-per-node)",
            ),
            array: FieldUse::new("array", Need::Optional, "one node each: an Indexed Job (0-99%10)"),
        }
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        self.start().await?;
        self.wait_synced().await?;
        if let Some(err) = self.shared.failure(self.stale_after()) {
            return Err(BackendError::Connect { target: self.target(), message: err });
        }
        self.check_alive().await?;
        Ok(self.build_snapshot())
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        self.bounded("submit".into(), async {
            let (planned, namespace, _) = self.plan_submission(spec, naming::run_suffix()).await?;
            let client = self.client().await?;
            let create_error = |what: &str, e: ::kube::Error| BackendError::Command {
                command: format!("create {what} in {namespace}"),
                status: None,
                stderr: describe_client_error(&e),
            };
            match planned {
                Planned::Job(job) => {
                    let api: Api<KJob> = Api::namespaced(client, &namespace);
                    let created = api.create(&PostParams::default(), &job).await.map_err(|e| create_error("Job", e))?;
                    let name = created.metadata.name.unwrap_or_default();
                    Ok(JobRef::new(self.name.clone(), map::job_id(&namespace, &name)))
                }
                Planned::Workload(built) => {
                    let def = built.kind.def();
                    // At the version the manifest is written for (an MPIJob's v2beta1 body is no v1 one).
                    let version = built.object["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map(|(_, v)| v);
                    let version = version.unwrap_or(def.versions[0]).to_string();
                    let object: DynamicObject = serde_json::from_value(built.object).map_err(|e| {
                        BackendError::Parse { what: format!("the {} manifest", def.kind), message: e.to_string() }
                    })?;
                    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &def.resource(&version));
                    let created =
                        api.create(&PostParams::default(), &object).await.map_err(|e| create_error(def.kind, e))?;
                    let name = created.metadata.name.unwrap_or_default();
                    Ok(JobRef::new(
                        self.name.clone(),
                        workloads::job::workload_id(&namespace, built.kind.word(), &name),
                    ))
                }
            }
        })
        .await
    }

    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        self.bounded("preview".into(), async {
            // The name's random suffix is drawn at submit; the preview shows where it goes.
            let (planned, _, mut warnings) = self.plan_submission(spec, PLACEHOLDER_SUFFIX.into()).await?;
            let (kind, text, dialect) = match &planned {
                Planned::Job(job) => ("Job", serde_saphyr::to_string(job), dialect::KUBERNETES_JOB),
                Planned::Workload(built) => {
                    // The plan took the kind from the same spec: no word left to refuse.
                    let how = workloads::submit::MultiNode::for_spec(spec, self.multi_node)?;
                    (built.kind.def().kind, serde_saphyr::to_string(&built.object), how.dialect())
                }
            };
            warnings.push(format!(
                "`name`: the {kind}'s name gets a random {SUFFIX_LEN}-character suffix ({PLACEHOLDER_SUFFIX} here) at submit"
            ));
            let text =
                text.map_err(|e| BackendError::Parse { what: format!("the {kind} manifest"), message: e.to_string() })?;
            Ok(Native { dialect, text, warnings })
        })
        .await
    }

    /// A job that waits in Kueue: its place in its ClusterQueue and LocalQueue, from Kueue's
    /// visibility API (one request, for this job only; never per refresh).
    async fn priority_details(&self, job: &crate::model::Job) -> Result<Vec<String>, BackendError> {
        if !job.state.is_waiting() {
            return Ok(Vec::new());
        }
        let (namespace, kind, name) = match map::parse_job_id(&job.job_ref.id) {
            Some(Target::Job { namespace, name }) => (namespace, "Job", name),
            Some(Target::Workload { namespace, word, name }) => match WorkloadKind::from_word(&word) {
                Some(k) => (namespace, k.def().kind, name),
                None => return Ok(Vec::new()),
            },
            _ => return Ok(Vec::new()),
        };
        let found = self.stores.kueue[&KueueKind::Workload]
            .all()
            .iter()
            .map(|o| WorkloadInfo::from_object(o))
            .find(|w| w.namespace == namespace && w.owner.as_ref().is_some_and(|(k, n)| k == kind && *n == name));
        let Some(workload) = found.filter(|w| !w.admitted && !w.finished) else { return Ok(Vec::new()) };
        let cluster_queue = workload.cluster_queue.clone().or_else(|| {
            let lq = workload.queue.as_deref()?;
            self.stores.kueue[&KueueKind::LocalQueue]
                .all()
                .iter()
                .map(|o| LocalQueueInfo::from_object(o))
                .find(|q| q.namespace == namespace && q.name == lq)?
                .cluster_queue
        });
        let Some(cluster_queue) = cluster_queue else {
            return Ok(vec![format!(
                "no queue position: its LocalQueue {} leads to no ClusterQueue",
                workload.queue.as_deref().unwrap_or("(none)")
            )]);
        };
        let client = self.client().await?;
        let what = format!("asking Kueue where {} stands in ClusterQueue {cluster_queue}", job.job_ref);
        self.bounded(what, visibility::explain(&client, &cluster_queue, &namespace, &workload.name)).await
    }

    /// The Job object (or a bare pod) as the API server has it now, read back as a spec.
    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        let target = map::parse_job_id(&job.id).ok_or_else(|| {
            BackendError::NotFound(format!(
                "`{}` is not a Kubernetes job id (NAMESPACE:JOB, NAMESPACE:pod:POD, or NAMESPACE:KIND:NAME)",
                job.id
            ))
        })?;
        let client = self.client().await?;
        self.bounded(format!("read the spec of {job}"), async {
            let (what, imported) = match target {
                Target::Job { namespace, name } => {
                    let what = format!("Job {namespace}/{name}");
                    let api: Api<KJob> = Api::namespaced(client, &namespace);
                    let object = api.get(&name).await.map_err(|e| get_error(&what, e))?;
                    (what, dialect::import_job(&object))
                }
                Target::Pod { namespace, name } => {
                    let what = format!("pod {namespace}/{name}");
                    let api: Api<Pod> = Api::namespaced(client, &namespace);
                    let object = api.get(&name).await.map_err(|e| get_error(&what, e))?;
                    (what, dialect::import_pod(&object))
                }
                Target::Workload { namespace, word, name } => {
                    let kind = self.workload_kind(&word, &namespace, &name)?;
                    let what = format!("{} {namespace}/{name}", kind.def().kind);
                    let ar = kind.def().resource(self.served_version(kind));
                    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &ar);
                    let object = api.get(&name).await.map_err(|e| get_error(&what, e))?;
                    (what, workloads::status::import(kind, &object))
                }
            };
            imported.map_err(|e| BackendError::Parse { what, message: e.to_string() })
        })
        .await
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        self.job_action_if(job, action, None).await
    }

    /// With `uid`, a cancel deletes that object only: the API server refuses (409) when the
    /// name now belongs to a newer Job or pod, and nothing is deleted.
    async fn job_action_if(&self, job: &JobRef, action: JobAction, uid: Option<&str>) -> Result<(), BackendError> {
        let target = map::parse_job_id(&job.id).ok_or_else(|| {
            BackendError::NotFound(format!(
                "`{}` is not a Kubernetes job id (NAMESPACE:JOB, NAMESPACE:pod:POD, or NAMESPACE:KIND:NAME)",
                job.id
            ))
        })?;
        let client = self.client().await?;
        self.bounded(format!("{} {job}", action.verb()), async {
            match (action, target) {
                (JobAction::Cancel, Target::Job { namespace, name }) => {
                    let api: Api<KJob> = Api::namespaced(client, &namespace);
                    drain::delete(&api, &name, uid, &format!("delete Job {namespace}/{name}")).await
                }
                (JobAction::Cancel, Target::Pod { namespace, name }) => {
                    let api: Api<Pod> = Api::namespaced(client, &namespace);
                    drain::delete(&api, &name, uid, &format!("delete pod {namespace}/{name}")).await
                }
                (JobAction::Hold | JobAction::Release, Target::Job { namespace, name }) => {
                    let api: Api<KJob> = Api::namespaced(client.clone(), &namespace);
                    let current = api.get(&name).await.map_err(|e| match e {
                        ::kube::Error::Api(s) if s.code == 404 => {
                            BackendError::NotFound(format!("no Job {namespace}/{name}"))
                        }
                        e => BackendError::Command {
                            command: format!("get Job {namespace}/{name}"),
                            status: None,
                            stderr: describe_client_error(&e),
                        },
                    })?;
                    if current.metadata.labels.as_ref().is_some_and(|l| l.contains_key(kueue::QUEUE_LABEL)) {
                        // Kueue owns a queued Job's `spec.suspend`: hold it through its Workload.
                        let uid = current.metadata.uid.as_deref().unwrap_or_default();
                        let owner = format!("Job {namespace}/{name}");
                        let active = action == JobAction::Release;
                        return workloads::actions::set_kueue_active(&client, &namespace, uid, &owner, active).await;
                    }
                    let suspend = action == JobAction::Hold;
                    let patch = serde_json::json!({"spec": {"suspend": suspend}});
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(drop).map_err(|e| {
                        BackendError::Command {
                            command: format!("{} Job {namespace}/{name}", action.verb()),
                            status: None,
                            stderr: describe_client_error(&e),
                        }
                    })
                }
                (JobAction::Cancel, Target::Workload { namespace, word, name }) => {
                    let kind = self.workload_kind(&word, &namespace, &name)?;
                    workloads::actions::cancel(&client, kind, self.served_version(kind), &namespace, &name, uid).await
                }
                (JobAction::Hold | JobAction::Release, Target::Workload { namespace, word, name }) => {
                    let kind = self.workload_kind(&word, &namespace, &name)?;
                    let by = whoami::username().unwrap_or_else(|_| "unknown".into());
                    let version = self.served_version(kind);
                    let hold = action == JobAction::Hold;
                    workloads::actions::set_suspended(&client, kind, version, &namespace, &name, hold, &by).await
                }
                (JobAction::Hold | JobAction::Release, Target::Pod { .. }) => Err(BackendError::Unsupported(
                    "a pod cannot be held or released; only a Job can (spec.suspend)".into(),
                )),
                (JobAction::Requeue, _) => Err(BackendError::Unsupported(
                    "Kubernetes has no requeue: cancel the job and submit it again".into(),
                )),
                (JobAction::Delete, _) => Err(BackendError::Unsupported(
                    "on Kubernetes, cancel deletes the Job: there is no separate delete".into(),
                )),
            }
        })
        .await
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        let no_teardown = || {
            BackendError::Unsupported(format!(
                "{node} is a Kubernetes node, not a cloud cluster: it cannot be torn down from here"
            ))
        };
        if *action == NodeAction::Teardown {
            return Err(no_teardown());
        }
        let client = self.client().await?;
        match action {
            NodeAction::Teardown => Err(no_teardown()),
            NodeAction::Cordon => {
                self.bounded(format!("cordon {node}"), drain::set_schedulable(&client, node, true, None)).await?;
                Ok(String::new())
            }
            NodeAction::Uncordon | NodeAction::Resume => {
                self.bounded(format!("uncordon {node}"), drain::set_schedulable(&client, node, false, None)).await?;
                Ok(String::new())
            }
            NodeAction::Drain { reason, force } => {
                // Kept as a node annotation that other admins' tools print.
                crate::safe_text::check_typed("drain reason", reason.trim()).map_err(BackendError::InvalidSpec)?;
                let mut options = self.drain_options.clone();
                if *force {
                    options.force = true;
                    options.delete_emptydir_data = true;
                }
                let report = self.drain_node(node, reason, &options).await?;
                tracing::info!(cluster = %self.name, summary = %report.summary(), "drain");
                if report.complete() {
                    Ok(report.summary())
                } else {
                    Err(BackendError::Command {
                        command: format!("drain {node}"),
                        status: None,
                        stderr: report.summary(),
                    })
                }
            }
        }
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let started = Instant::now();
        let client = self.client().await?;
        let version = tokio::time::timeout(self.timeout, client.apiserver_version()).await;
        let mut d = Diagnosis {
            transport: format!("kube API via {}", self.target()),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            ..Diagnosis::default()
        };
        match version {
            Ok(Ok(info)) => {
                *self.release.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.git_version.clone());
                d.release = Some(info.git_version);
            }
            Ok(Err(e)) => d.notes.push(format!("GET /version failed: {}", describe_client_error(&e))),
            Err(_) => d.notes.push(format!("GET /version: no answer in {} s", self.timeout.as_secs())),
        }
        self.start().await?;
        let synced = self.wait_synced().await;
        for label in self.shared.health().keys() {
            d.fact("refresh runs", format!("watch {label}"));
        }
        d.notes.push("a refresh reads the watch caches: no API request per refresh".into());
        if let Err(e) = synced {
            d.notes.push(e.to_string());
        }
        d.notes.push(format!(
            "watching {}",
            watch::object_counts(&[
                ("nodes", self.stores.nodes.len()),
                ("pods", self.stores.pods.len()),
                ("jobs", self.stores.jobs.len()),
                ("Kueue workloads", self.stores.kueue[&KueueKind::Workload].len()),
                ("ClusterQueues", self.stores.kueue[&KueueKind::ClusterQueue].len()),
            ])
        ));
        for note in self.notes() {
            tracing::info!(cluster = %self.name, %note, "kubernetes note");
            d.notes.push(note);
        }
        Ok(d)
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.shared.subscribe())
    }

    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
        let client = self.client().await?;
        self.bounded(format!("read {log}"), logs::read(&client, &self.cursors, log, from, max_bytes)).await
    }
}
