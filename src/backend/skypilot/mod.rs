//! SkyPilot through its API server's REST API (never the `sky` CLI).
//!
//! A refresh is `/status` (every cluster, no pickled handle, no cloud refresh), then at once
//! `/queue` for each UP cluster and `/jobs/queue/v2` for the managed jobs: `2 + UP clusters`
//! operations, each a `POST` plus a `GET /api/get` ([`request`]). The first phase and the
//! second are each bounded by the cluster's timeout, so a refresh fits the fleet's bound;
//! a cluster whose queue cannot be read, or managed jobs that cannot be listed, only reduce
//! the picture, with a note.
//!
//! Actions: submit ([`task`]: a task YAML launched on a cluster or as a managed job), cancel
//! (`/cancel` or `/jobs/cancel`), teardown (`/down` of the whole cluster a node belongs to).
//! Launches and teardowns are left running on the server when the bound passes; everything
//! else is cancelled there once nobody waits for it.

pub mod api;
pub mod config;
pub mod dialect;
pub mod discover;
pub mod map;
pub mod request;
pub mod task;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use chrono::Utc;
use futures_util::StreamExt;

use crate::backend::http::Api;
use crate::backend::naming::{self, PLACEHOLDER_SUFFIX};
use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction};
use crate::config::ClusterConfig;
use crate::model::{FieldUse, JobRef, LogHandle, Native, Need, Snapshot, SpecFields};
use crate::model::{Partitions, Placement};
use crate::spec::{Imported, JobSpec};

pub use self::config::SkyPilotConfig;
use self::map::JobTarget;
use self::request::Requests;

/// Queues read at once during a refresh.
const QUEUE_CONCURRENCY: usize = 8;

/// What a SkyPilot server can do: submit, cancel, and tear down a whole cluster; SkyPilot
/// has no hold, requeue, drain or cordon.
pub const CAPABILITIES: Capabilities = Capabilities {
    submit: true,
    cancel: true,
    hold_release: false,
    requeue: false,
    drain_resume: false,
    cordon_uncordon: false,
    delete: false,
    teardown: true,
};

/// `partition` names a cloud cluster (launched when new) or the managed-jobs queue.
pub fn placement() -> Placement {
    Placement {
        partition: Partitions::CloudCluster,
        provisions: Some("launches a new cluster (capacity and price are the cloud's, not known here)".into()),
        managed_queue: Some(map::MANAGED_QUEUE.into()),
        ..Placement::default()
    }
}

/// The kind's line in the backend registry.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            let cluster = crate::backend::registry::typed::<SkyPilotConfig>(cluster)?;
            Ok(Arc::new(SkyPilotBackend::new(&cluster)?))
        },
        capabilities: CAPABILITIES,
        placement: placement(),
        dialects: vec![dialect::entry()],
        expand: None,
        discover: discover::discover,
    }
}

/// One SkyPilot API server.
pub struct SkyPilotBackend {
    name: String,
    req: Requests,
    release: Mutex<Option<String>>,
    /// HTTP requests the last refresh sent.
    last_refresh_requests: AtomicU64,
}

impl SkyPilotBackend {
    pub fn new(cfg: &ClusterConfig<SkyPilotConfig>) -> Result<Self, BackendError> {
        let api = Api::new(&cfg.name, &cfg.settings.url, cfg.timeout, cfg.settings.token.clone())
            .map_err(|message| BackendError::Connect { target: cfg.settings.url.clone(), message })?;
        Ok(Self {
            name: cfg.name.clone(),
            req: Requests::new(api, cfg.timeout),
            release: Mutex::new(None),
            last_refresh_requests: AtomicU64::new(0),
        })
    }

    /// The protocol client (tests, `doctor`).
    pub fn requests(&self) -> &Requests {
        &self.req
    }

    /// HTTP requests the last refresh sent.
    pub fn last_refresh_requests(&self) -> u64 {
        self.last_refresh_requests.load(Ordering::Relaxed)
    }

    async fn release(&self) -> Option<String> {
        let known = self.release.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if known.is_some() {
            return known;
        }
        let version = api::health(&self.req).await.ok()?.version;
        *self.release.lock().unwrap_or_else(|e| e.into_inner()) = version.clone();
        version
    }

    async fn refresh(&self) -> Result<Snapshot, BackendError> {
        let clusters = api::status(&self.req).await?;
        let mut notes = Vec::new();
        if clusters.skipped > 0 {
            let (records, were, are) = match clusters.skipped {
                1 => ("1 cluster record".to_string(), "was", "is"),
                n => (format!("{n} cluster records"), "were", "are"),
            };
            notes.push(format!("{records} of /status {were} not records and {are} left out"));
        }
        let release = self.release().await;

        // Phase two: every UP cluster's queue and the managed jobs, at once, bounded together.
        let deadline = tokio::time::Instant::now() + self.req.bound;
        let up: Vec<(usize, String)> = clusters
            .records
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_up() && !c.is_controller())
            .filter_map(|(i, c)| Some((i, c.name.clone()?)))
            .collect();
        let req = &self.req;
        let managed = api::managed_jobs(req);
        let queues = futures_util::stream::iter(up.iter().cloned())
            .map(|(i, name)| async move {
                let result = api::queue(req, &name).await;
                (i, name, result)
            })
            .buffer_unordered(QUEUE_CONCURRENCY)
            .collect::<Vec<_>>();
        let (mut queues, managed) =
            match tokio::time::timeout_at(deadline, futures_util::future::join(queues, managed)).await {
                Ok(both) => both,
                Err(_) => {
                    return Err(BackendError::Timeout {
                        what: format!(
                            "the job queues of {} and the managed jobs",
                            crate::model::words::counted(up.len() as u64, "cluster", "clusters")
                        ),
                        secs: self.req.bound.as_secs(),
                    });
                }
            };
        // In /status order, whatever order the answers came in.
        queues.sort_by_key(|(i, _, _)| *i);

        let mut jobs = Vec::new();
        for (i, name, result) in queues {
            match result {
                Ok(records) => jobs.extend(map::cluster_jobs(&self.name, &clusters.records[i], &records.records)),
                Err(e) => notes.push(format!("jobs on cluster {name} not listed: {e}")),
            }
        }
        match managed {
            Ok(records) => jobs.extend(map::managed_jobs(&self.name, &records.records)),
            Err(e) => notes.push(format!("managed jobs not listed: {e}")),
        }
        let nodes = map::nodes(&self.name, &clusters.records, &jobs);
        let mut snapshot = Snapshot {
            cluster: self.name.clone(),
            taken_at: Some(Utc::now()),
            release,
            jobs,
            nodes,
            queues: Vec::new(),
            notes,
        };
        snapshot.derive_queues();
        Ok(snapshot)
    }

    /// The task `spec` becomes, with its native preview.
    fn plan(&self, spec: &JobSpec, suffix: &str) -> Result<task::Task, BackendError> {
        task::task(spec, suffix)
    }
}

#[async_trait]
impl Backend for SkyPilotBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.req.sent())
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn spec_fields(&self) -> SpecFields {
        SpecFields {
            image: FieldUse::new("image", Need::Optional, "a Docker image to run in (image_id: docker:IMAGE)"),
            account: FieldUse::new("account", Need::Ignored, "SkyPilot has no accounts"),
            partition: FieldUse::new(
                "cluster",
                Need::Optional,
                "a cluster to launch on (made if new), or managed-jobs for a managed job; default: a new cluster",
            ),
        }
    }

    fn shape_fields(&self) -> crate::model::ShapeFields {
        crate::model::ShapeFields {
            array: FieldUse::new("array", Need::Ignored, "SkyPilot has no job arrays"),
            ..crate::model::ShapeFields::default()
        }
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        let before = self.req.sent();
        let result = self.refresh().await;
        self.last_refresh_requests.store(self.req.sent().saturating_sub(before), Ordering::Relaxed);
        result
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        let task = self.plan(spec, &naming::run_suffix())?;
        let id = match &task.placement {
            task::Placement::Cluster(cluster) => {
                let id = api::launch(&self.req, cluster, &task.yaml).await?;
                format!("{cluster}:{id}")
            }
            task::Placement::Managed(name) => api::jobs_launch(&self.req, name, &task.yaml).await?.to_string(),
        };
        Ok(JobRef::new(self.name.clone(), id))
    }

    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        let task = self.plan(spec, PLACEHOLDER_SUFFIX)?;
        let mut warnings = task.warnings.clone();
        warnings.extend(task::placement_note(spec));
        Ok(Native { dialect: dialect::SKYPILOT_TASK, text: task::render(&task), warnings })
    }

    /// A managed job's task as its user sent it (`user_yaml` of `/jobs/queue/v2`), read by
    /// the dialect. A job on a cluster has none: SkyPilot keeps no task per cluster job.
    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        let target = map::parse_job_id(&job.id).ok_or_else(|| {
            BackendError::NotFound(format!(
                "`{}` is not a SkyPilot job id (CLUSTER:JOB_ID for a job on a cluster, JOB_ID for a managed job)",
                job.id
            ))
        })?;
        let job_id = match target {
            JobTarget::Managed { job_id } => job_id,
            JobTarget::OnCluster { cluster, job_id } => {
                return Err(BackendError::Unsupported(format!(
                    "{job}: SkyPilot keeps no task for a job on a cluster (its /queue record has the job's name, resources and state only, and the cluster's last_creation_yaml is the task that last started {cluster}, not necessarily job {job_id}); only managed jobs keep theirs"
                )));
            }
        };
        let records = api::managed_job(&self.req, job_id).await?;
        let record = records.first().ok_or_else(|| BackendError::NotFound(format!("no managed job {job_id}")))?;
        let yaml = record.user_yaml.as_deref().filter(|y| !y.trim().is_empty()).ok_or_else(|| {
            BackendError::Unsupported(format!("{job}: the server kept no task (user_yaml) for managed job {job_id}"))
        })?;
        let mut imported = dialect::import(yaml).map_err(|e| BackendError::Parse {
            what: format!("the stored task of managed job {job_id}"),
            message: e.to_string(),
        })?;
        imported.spec.managed = true;
        Ok(imported)
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        let target = map::parse_job_id(&job.id).ok_or_else(|| {
            BackendError::NotFound(format!(
                "`{}` is not a SkyPilot job id (CLUSTER:JOB_ID for a job on a cluster, JOB_ID for a managed job)",
                job.id
            ))
        })?;
        match (action, target) {
            (JobAction::Cancel, JobTarget::OnCluster { cluster, job_id }) => {
                api::cancel(&self.req, &cluster, job_id).await
            }
            (JobAction::Cancel, JobTarget::Managed { job_id }) => api::jobs_cancel(&self.req, job_id).await,
            (other, _) => Err(BackendError::Unsupported(format!(
                "SkyPilot cannot {} a job: it has cancel only (and teardown of a whole cluster)",
                other.verb()
            ))),
        }
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        match action {
            NodeAction::Teardown => {
                let cluster = map::cluster_of_node(node);
                api::down(&self.req, cluster).await?;
                Ok(format!("SkyPilot cluster {cluster} torn down: its machines and disks are deleted"))
            }
            other => Err(BackendError::Unsupported(format!(
                "{node} is a SkyPilot cluster node: SkyPilot cannot {} it (tear the cluster down instead)",
                other.verb()
            ))),
        }
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let started = Instant::now();
        let health = api::health(&self.req).await;
        let mut d = Diagnosis {
            transport: format!("SkyPilot API server {}", self.req.api.base),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            ..Diagnosis::default()
        };
        let health = match health {
            Ok(h) => h,
            Err(e) => {
                d.fact("reachable", "no");
                d.notes.push(e.to_string());
                return Ok(d);
            }
        };
        d.fact("reachable", "yes");
        d.release = health.version.clone();
        *self.release.lock().unwrap_or_else(|e| e.into_inner()) = health.version.clone();
        if let Some(v) = &health.api_version {
            d.fact("API version", v.clone());
        }
        if let Some(s) = &health.status {
            d.fact("server status", s.clone());
        }
        if let Some(token) = &self.req.api.token {
            d.fact("token", token.describe());
        }
        match api::enabled_clouds(&self.req).await {
            Ok(clouds) if clouds.is_empty() => {
                d.fact("auth", "ok");
                d.fact("enabled clouds", "none");
                d.notes.push(
                    "no cloud is enabled on the server: launches fail until `sky check` finds credentials".into(),
                );
            }
            Ok(clouds) => {
                d.fact("auth", "ok");
                d.fact("enabled clouds", clouds.join(", "));
            }
            Err(e @ BackendError::Auth { .. }) => {
                d.fact("auth", "failed");
                d.notes.push(e.to_string());
                return Ok(d);
            }
            Err(e) => d.notes.push(format!("enabled clouds: {e}")),
        }
        // What one refresh costs, measured on one.
        let up = match self.snapshot().await {
            Ok(s) => s
                .nodes
                .iter()
                .filter(|n| {
                    n.native_state == "UP" && !n.name.contains(':') && !n.name.starts_with(map::CONTROLLER_PREFIX)
                })
                .count(),
            Err(e) => {
                d.notes.push(format!("refresh: {e}"));
                0
            }
        };
        let n = self.last_refresh_requests();
        d.fact("requests per refresh", format!("{n} HTTP ({} operations: status, managed jobs, queue × {up} UP clusters; each a POST and a GET /api/get)", 2 + up));
        Ok(d)
    }

    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
        let target = map::parse_log_handle(log.as_str())
            .ok_or_else(|| BackendError::NotFound(format!("`{log}` is not a SkyPilot log handle")))?;
        let text = api::job_log(&self.req, &target).await?;
        let bytes = text.as_bytes();
        let (start, len, dropped) = crate::backend::log_window(bytes.len() as u64, from, max_bytes);
        let (start, end) = (start as usize, (start + len) as usize);
        Ok(LogChunk { data: String::from_utf8_lossy(&bytes[start..end]).into_owned(), offset: end as u64, dropped })
    }
}
