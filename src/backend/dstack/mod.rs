//! dstack through its server's REST API.
//!
//! A refresh is `runs/list` (pages of 100, newest first, [`api::MAX_RUNS`] at most),
//! `fleets/list` and `instances/list`, mapped by [`map`]: runs are jobs, fleets are queues,
//! instances are nodes with their GPUs busy or idle and their price. The server's release
//! is asked once. Submit sends a task run spec ([`manifest`]); cancel stops a run, delete
//! removes a stopped one; logs come from `logs/poll` ([`logs`]). Every call is bounded by
//! the cluster's timeout, and failures carry the server's own message.

pub mod api;
pub mod config;
pub mod dialect;
pub mod discover;
pub mod logs;
pub mod manifest;
pub mod map;

use crate::model::words::counted;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;

use crate::backend::http::{Api, Secret, TokenSource};
use crate::backend::naming::{self, PLACEHOLDER_SUFFIX, SUFFIX_LEN};
use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction};
use crate::config::ClusterConfig;
use crate::model::{FieldUse, JobRef, LogHandle, Native, Need, Snapshot, SpecFields};
use crate::model::{Partitions, Placement};
use crate::spec::{Imported, JobSpec};
use serde_json::{Value, json};

use self::api::DstackApi;
pub use self::config::DstackConfig;
use self::config::TokenFrom;

/// What a dstack cluster can do: submit, stop and delete runs. No hold, requeue, drain or
/// cordon: dstack has none of them.
pub const CAPABILITIES: Capabilities = Capabilities {
    submit: true,
    cancel: true,
    hold_release: false,
    requeue: false,
    drain_resume: false,
    cordon_uncordon: false,
    delete: true,
    teardown: false,
};

/// `partition` names a fleet; a run that finds no idle instance may get a new one.
pub fn placement() -> Placement {
    Placement {
        partition: Partitions::Fleet,
        provisions: Some("dstack provisions where a backend can, else waits or fails (not known here)".into()),
        ..Placement::default()
    }
}

/// The kind's line in the backend registry.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            let cluster = crate::backend::registry::typed::<DstackConfig>(cluster)?;
            Ok(Arc::new(DstackBackend::new(&cluster)?))
        },
        capabilities: CAPABILITIES,
        placement: placement(),
        dialects: vec![dialect::entry()],
        expand: None,
        discover: discover::discover,
    }
}

/// One project on one dstack server.
pub struct DstackBackend {
    name: String,
    api: DstackApi,
    timeout: Duration,
    retry_secs: Option<u64>,
    release: Mutex<Option<String>>,
    /// Requests the last refresh took.
    last_refresh_requests: Mutex<Option<u64>>,
    cursors: logs::Cursors,
}

impl DstackBackend {
    pub fn new(cfg: &ClusterConfig<DstackConfig>) -> Result<Self, BackendError> {
        let settings = &cfg.settings;
        let token = match &settings.token {
            None => None,
            Some(TokenFrom::Source(source)) => Some(source.clone()),
            Some(TokenFrom::CliConfig { path, project }) => Some(cli_token(&cfg.name, path, project)?),
        };
        let http = Api::new(cfg.name.clone(), &settings.url, cfg.timeout, token)
            .map_err(|message| BackendError::Connect { target: settings.url.clone(), message })?;
        Ok(Self {
            name: cfg.name.clone(),
            api: DstackApi::new(http, &settings.project),
            timeout: cfg.timeout,
            retry_secs: settings.retry_secs,
            release: Mutex::new(None),
            last_refresh_requests: Mutex::new(None),
            cursors: logs::Cursors::default(),
        })
    }

    /// The REST calls, for tests and embedding.
    pub fn api(&self) -> &DstackApi {
        &self.api
    }

    async fn bounded<T>(
        &self,
        what: impl Into<String>,
        fut: impl std::future::Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        tokio::time::timeout(self.timeout, fut)
            .await
            .unwrap_or_else(|_| Err(BackendError::Timeout { what: what.into(), secs: self.timeout.as_secs().max(1) }))
    }

    /// The snapshot and the requests it took.
    async fn read_picture(&self) -> Result<(Snapshot, u64), BackendError> {
        let mut requests = 0;
        if self.release.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            requests += 1;
            let version = self.api.server_version().await?;
            *self.release.lock().unwrap_or_else(|e| e.into_inner()) = version;
        }
        let (runs, fleets, instances) =
            tokio::try_join!(self.api.list_runs(), self.api.list_fleets(), self.api.list_instances())?;
        requests += runs.requests + fleets.requests + instances.requests;
        let mut snap = map::snapshot(&self.name, &runs.items, &fleets.items, &instances.items);
        snap.taken_at = Some(Utc::now());
        snap.release = self.release.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (what, unreadable) in
            [("runs", runs.unreadable), ("fleets", fleets.unreadable), ("instances", instances.unreadable)]
        {
            if unreadable > 0 {
                snap.notes.push(format!("{unreadable} {what} in an unexpected shape are left out"));
            }
        }
        if runs.truncated {
            snap.notes.push(format!("only the newest {} runs are shown", api::MAX_RUNS));
        }
        Ok((snap, requests))
    }

    fn run_name<'a>(&self, job: &'a JobRef) -> Result<&'a str, BackendError> {
        let id = job.id.as_str();
        let ok = id.len() <= 64 && !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if ok { Ok(id) } else { Err(BackendError::NotFound(format!("`{id}` is not a dstack run name"))) }
    }
}

/// The token of `project` in a dstack CLI config file, for the embedded default. The file
/// is dstack's own (it writes it world-readable), so only its owner is checked.
fn cli_token(cluster: &str, path: &std::path::Path, project: &str) -> Result<TokenSource, BackendError> {
    use std::os::unix::fs::MetadataExt;
    let auth = |detail: String| BackendError::Auth { cluster: cluster.to_string(), detail };
    let meta = std::fs::metadata(path).map_err(|e| auth(format!("cannot read {}: {e}", path.display())))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(auth(format!("{} belongs to uid {}, not to you", path.display(), meta.uid())));
    }
    let token = config::cli_projects(path)
        .and_then(|ps| ps.into_iter().find(|p| p.name == project))
        .and_then(|p| p.token)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| auth(format!("{} has no token for project {project}", path.display())))?;
    Ok(TokenSource::Given {
        secret: Secret::new(token.trim()),
        from: format!("{} (project {project})", path.display()),
    })
}

/// A stop or delete of a run the server does not know is "not found", in its words.
fn not_found_in_words(err: BackendError, run: &str) -> BackendError {
    match err {
        BackendError::Http { status: 400, message, .. } if message.to_ascii_lowercase().contains("not found") => {
            BackendError::NotFound(format!("no dstack run {run}: {message}"))
        }
        other => other,
    }
}

#[async_trait]
impl Backend for DstackBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.api.requests())
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn spec_fields(&self) -> SpecFields {
        SpecFields {
            image: FieldUse::new("image", Need::Optional, "default: dstack's base image"),
            account: FieldUse::new("account", Need::Ignored, "the project is the cluster's"),
            partition: FieldUse::new("fleet", Need::Optional, "a dstack fleet of the project"),
        }
    }

    fn shape_fields(&self) -> crate::model::ShapeFields {
        crate::model::ShapeFields {
            array: FieldUse::new("array", Need::Ignored, "dstack has no job arrays"),
            ..crate::model::ShapeFields::default()
        }
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        let (snap, requests) = self.bounded("refresh", self.read_picture()).await?;
        *self.last_refresh_requests.lock().unwrap_or_else(|e| e.into_inner()) = Some(requests);
        Ok(snap)
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        let target = manifest::Target { suffix: naming::run_suffix(), retry_secs: self.retry_secs };
        let (run_spec, _) = manifest::run_spec(spec, &target)?;
        let run = self.bounded("submit", self.api.apply(&manifest::apply_body(&run_spec))).await?;
        let name = run
            .run_spec
            .and_then(|s| s.run_name)
            .or_else(|| run_spec["run_name"].as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(JobRef::new(self.name.clone(), name))
    }

    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        let target = manifest::Target { suffix: PLACEHOLDER_SUFFIX.into(), retry_secs: self.retry_secs };
        let (run_spec, mut warnings) = manifest::run_spec_of(spec, &target)?;
        warnings.push(format!(
            "`name`: the run's name gets a random {SUFFIX_LEN}-character suffix ({PLACEHOLDER_SUFFIX} here) at submit"
        ));
        let text = serde_saphyr::to_string(&run_spec)
            .map_err(|e| BackendError::Parse { what: "the run spec".into(), message: e.to_string() })?;
        Ok(Native { dialect: dialect::DSTACK_RUN_SPEC, text, warnings })
    }

    /// The run spec the server stored (`runs/get` → `run_spec`), read by the dialect: the
    /// configuration as submitted, with the server's defaults read as unset.
    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        let run = self.run_name(job)?;
        let path = format!("/api/project/{}/runs/get", self.api.project);
        let record: Value = self
            .bounded(format!("read the spec of {job}"), self.api.call(&path, &json!({"run_name": run})))
            .await
            .map_err(|e| not_found_in_words(e, run))?;
        let run_spec = record.get("run_spec").filter(|s| s.is_object()).ok_or_else(|| BackendError::Parse {
            what: format!("POST {path}"),
            message: format!("the record of run {run} has no run spec"),
        })?;
        dialect::import_value(run_spec)
            .map_err(|e| BackendError::Parse { what: format!("the stored run spec of {job}"), message: e.to_string() })
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        let run = self.run_name(job)?;
        let what = format!("{} {job}", action.verb());
        match action {
            JobAction::Cancel => {
                // `runs/stop` answers 200 for a name it does not know: ask first.
                self.bounded(what, async {
                    self.api.get_run(run).await.map_err(|e| not_found_in_words(e, run))?;
                    self.api.stop(run).await.map_err(|e| not_found_in_words(e, run))
                })
                .await
            }
            JobAction::Delete => {
                self.bounded(what, async {
                    self.api.get_run(run).await.map_err(|e| not_found_in_words(e, run))?;
                    self.api.delete(run).await.map_err(|e| not_found_in_words(e, run))
                })
                .await
            }
            JobAction::Hold | JobAction::Release => Err(BackendError::Unsupported(format!(
                "dstack cannot {} a run: stop it and submit it again",
                action.verb()
            ))),
            JobAction::Requeue => {
                Err(BackendError::Unsupported("dstack has no requeue: stop the run and submit it again".into()))
            }
        }
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        Err(BackendError::Unsupported(format!(
            "{node} is a dstack instance: it cannot {} from here (manage fleets with dstack itself)",
            action.verb()
        )))
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let started = Instant::now();
        let mut d =
            Diagnosis { transport: format!("dstack REST API at {}", self.api.http.base), ..Diagnosis::default() };
        let version = self.bounded("POST /api/server/get_info", self.api.server_version()).await?;
        d.latency_ms = Some(started.elapsed().as_millis() as u64);
        d.fact("reachable", "yes");
        d.release = version.clone();
        *self.release.lock().unwrap_or_else(|e| e.into_inner()) = version;
        d.fact("project", self.api.project.clone());
        // get_info needs no token; the project does.
        match self.bounded("POST /api/projects/get", self.api.backends()).await {
            Ok(backends) => {
                d.fact("auth", "ok");
                d.fact("backends", if backends.is_empty() { "none".to_string() } else { backends.join(", ") });
            }
            Err(e @ BackendError::Auth { .. }) => {
                d.fact("auth", "failed");
                d.notes.push(e.to_string());
                return Ok(d);
            }
            Err(e) => d.notes.push(e.to_string()),
        }
        match self.bounded("refresh", self.read_picture()).await {
            Ok((snap, requests)) => {
                d.fact("requests per refresh", requests.to_string());
                d.fact("refresh runs", "POST /api/runs/list (pages of 100), /api/fleets/list, /api/instances/list");
                d.notes.push(format!(
                    "{}, {}, {}",
                    counted(snap.jobs.len() as u64, "run", "runs"),
                    counted(snap.nodes.len() as u64, "instance", "instances"),
                    counted(snap.queues.len() as u64, "fleet", "fleets")
                ));
                d.notes.extend(snap.notes);
            }
            Err(e) => d.notes.push(e.to_string()),
        }
        Ok(d)
    }

    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
        self.bounded(format!("read {log}"), logs::read(&self.api, &self.cursors, log.as_str(), from, max_bytes)).await
    }
}
