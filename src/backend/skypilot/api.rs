//! The SkyPilot operations flightdeck uses, each one request of [`request`](super::request)
//! with the body SkyPilot 0.14.1 expects (`tests/fixtures/skypilot/openapi.json`).

use serde_json::{Value, json};

use super::map::{self, ClusterJobRecord, ClusterRecord, ManagedJobRecord, Records};
use super::request::{Failure, Requests};
use crate::backend::BackendError;
use crate::backend::http::clean_message;

/// What `/jobs/queue/v2` fails with when there is no managed job at all (the controller
/// was never started): an empty list, not an error.
pub const NO_MANAGED_JOBS: &str = "No in-progress managed jobs.";

/// The server's health: version and API version (`GET /api/health`, synchronous).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    pub version: Option<String>,
    pub api_version: Option<String>,
    pub status: Option<String>,
}

pub async fn health(req: &Requests) -> Result<Health, BackendError> {
    let v = req.get_now("/api/health").await?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(clean_message);
    Ok(Health { version: text("version"), api_version: text("api_version"), status: text("status") })
}

/// Every cluster of every user, without the pickled handle (`include_handle: false`) and
/// without refreshing them from the clouds (`refresh: NONE`: a listing must not cost cloud
/// API calls every few seconds).
pub async fn status(req: &Requests) -> Result<Records<ClusterRecord>, BackendError> {
    let body = json!({"include_handle": false, "all_users": true, "refresh": "NONE", "include_credentials": false});
    req.call("/status", Some(&body)).await.map(map::records).map_err(Failure::into_backend)
}

/// The jobs of one cluster, every user's.
pub async fn queue(req: &Requests, cluster: &str) -> Result<Records<ClusterJobRecord>, BackendError> {
    let body = json!({"cluster_name": cluster, "skip_finished": false, "all_users": true});
    req.call("/queue", Some(&body)).await.map(map::records).map_err(Failure::into_backend)
}

/// Managed jobs of every user; none at all is an empty list.
pub async fn managed_jobs(req: &Requests) -> Result<Records<ManagedJobRecord>, BackendError> {
    let body = json!({"refresh": false, "skip_finished": false, "all_users": true});
    match req.call("/jobs/queue/v2", Some(&body)).await {
        Ok(v) => Ok(map::records(v)),
        Err(Failure::Server { message, .. }) if message == NO_MANAGED_JOBS => {
            Ok(Records { records: Vec::new(), skipped: 0 })
        }
        Err(e) => Err(e.into_backend()),
    }
}

/// The records (one per task) of managed job `job_id`, every field included, the stored
/// `user_yaml` with them; none when the server knows no such job.
pub async fn managed_job(req: &Requests, job_id: u64) -> Result<Vec<ManagedJobRecord>, BackendError> {
    let body = json!({"refresh": false, "skip_finished": false, "all_users": true, "job_ids": [job_id]});
    match req.call("/jobs/queue/v2", Some(&body)).await {
        Ok(v) => {
            Ok(map::records::<ManagedJobRecord>(v).records.into_iter().filter(|r| r.job_id == Some(job_id)).collect())
        }
        Err(Failure::Server { message, .. }) if message == NO_MANAGED_JOBS => Ok(Vec::new()),
        Err(e) => Err(e.into_backend()),
    }
}

/// Launch `task` (YAML) on `cluster`, made if needed: the new job's id there.
pub async fn launch(req: &Requests, cluster: &str, task: &str) -> Result<u64, BackendError> {
    let body = json!({"task": task, "cluster_name": cluster});
    let v = req.call_detached("/launch", &body).await.map_err(Failure::into_backend)?;
    job_id_of("POST /launch", &v)
}

/// Launch `task` as a managed job named `name`: its managed job id.
pub async fn jobs_launch(req: &Requests, name: &str, task: &str) -> Result<u64, BackendError> {
    let body = json!({"task": task, "name": name});
    let v = req.call_detached("/jobs/launch", &body).await.map_err(Failure::into_backend)?;
    job_id_of("POST /jobs/launch", &v)
}

/// `{"job_id": N, "handle": …}` → N.
fn job_id_of(what: &str, v: &Value) -> Result<u64, BackendError> {
    v.get("job_id").and_then(Value::as_u64).ok_or_else(|| BackendError::Parse {
        what: what.to_string(),
        message: "the launch succeeded but its result names no job id".into(),
    })
}

pub async fn cancel(req: &Requests, cluster: &str, job_id: u64) -> Result<(), BackendError> {
    let body = json!({"cluster_name": cluster, "job_ids": [job_id], "all_users": true});
    req.call("/cancel", Some(&body)).await.map(drop).map_err(Failure::into_backend)
}

pub async fn jobs_cancel(req: &Requests, job_id: u64) -> Result<(), BackendError> {
    let body = json!({"job_ids": [job_id], "all_users": true});
    match req.call("/jobs/cancel", Some(&body)).await {
        Ok(_) => Ok(()),
        // The same words mean here that the job cannot be among the managed jobs.
        Err(Failure::Server { message, .. }) if message == NO_MANAGED_JOBS => {
            Err(BackendError::NotFound(format!("no managed job {job_id}: {NO_MANAGED_JOBS}")))
        }
        Err(e) => Err(e.into_backend()),
    }
}

/// Tear a cluster down: every machine and disk deleted.
pub async fn down(req: &Requests, cluster: &str) -> Result<(), BackendError> {
    let body = json!({"cluster_name": cluster});
    req.call_detached("/down", &body).await.map(drop).map_err(Failure::into_backend)
}

/// The clouds this server can use (names, as SkyPilot writes them).
pub async fn enabled_clouds(req: &Requests) -> Result<Vec<String>, BackendError> {
    let v = req.call("/enabled_clouds", None).await.map_err(Failure::into_backend)?;
    Ok(match v {
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(clean_message).collect(),
        _ => Vec::new(),
    })
}

/// The output of a job so far (`follow: false`). `POST /logs` and `POST /jobs/logs` are
/// streaming endpoints: the answer's body is the log itself (plain text, ANSI colours),
/// ended once what the job printed so far is sent (SkyPilot 0.14.1, seen against a job
/// running on the test bed's Slurm infra). Their request has no log of its own to read
/// through `/api/stream` afterwards ("Log … is no longer available on the API server").
/// At most `MAX_BODY_BYTES`.
pub async fn job_log(req: &Requests, target: &map::LogTarget) -> Result<String, BackendError> {
    let (path, body) = match target {
        map::LogTarget::ClusterJob { cluster, job_id } => {
            ("/logs", json!({"cluster_name": cluster, "job_id": job_id, "follow": false, "tail": 0}))
        }
        map::LogTarget::ManagedJob { job_id } => ("/jobs/logs", json!({"job_id": job_id, "follow": false})),
    };
    req.post_text(path, &body).await
}
