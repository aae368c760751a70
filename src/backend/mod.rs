//! The one interface every orchestrator adapter implements.
//!
//! A backend turns a remote system into [`crate::model`] data and carries out commands.
//! It knows nothing about terminals; the fleet owns backends and calls them from its own
//! tasks, so a slow or dead backend never blocks a front end.

pub mod dstack;
pub mod exec;
pub mod http;
pub mod hub;
pub mod hub_link;
pub mod kube;
pub mod local;
pub mod loose_value;
pub mod naming;
pub mod registry;
pub mod skypilot;
pub mod slurm;
pub mod telemetry;
pub mod unreached;

use async_trait::async_trait;

pub use crate::model::{Capabilities, Diagnosis, JobAction, LogChunk, NodeAction, StartEstimate};
use crate::model::{Health, JobRef, LogHandle, Native, Snapshot, SpecFields, Telemetry};
use crate::spec::{Imported, JobSpec};

pub use self::registry::{DialectEntry, KindEntry, Registry};

/// Typed failures of a backend. The `Display` text is what the user reads, so it carries
/// the backend's own words (Slurm's stderr, the API's message) rather than a generic label.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    #[error("cannot reach {target}: {message}")]
    Connect { target: String, message: String },
    #[error("`{command}` failed{}: {stderr}", status.map(|s| format!(" (exit {s})")).unwrap_or_default())]
    Command { command: String, status: Option<i32>, stderr: String },
    #[error("cannot read the output of `{what}`: {message}")]
    Parse { what: String, message: String },
    #[error("`{what}` timed out after {secs} s")]
    Timeout { what: String, secs: u64 },
    #[error("{0}")]
    Unsupported(String),
    #[error("invalid job spec: {0}")]
    InvalidSpec(String),
    #[error("refused: flightdeck runs read-only")]
    ReadOnly,
    #[error("{0}")]
    NotFound(String),
    /// The server refused the credentials (HTTP 401/403), or none could be read: `detail`
    /// is the status or what is wrong with the token's source, never the token.
    #[error("cluster {cluster}: authentication failed ({detail})")]
    Auth { cluster: String, detail: String },
    /// An API server answered a request with a failure status.
    #[error("`{request}` failed (HTTP {status}): {message}")]
    Http { request: String, status: u16, message: String },
    /// The controller refuses this user's RPCs for now (Slurm's `rl_enable` rate limiting):
    /// not a fault to retry soon, a reason to ask less often (the poller backs off further).
    #[error("the controller is rate-limiting this user's RPCs; polling backs off (`{command}`: {detail})")]
    RateLimited { command: String, detail: String },
    /// A bug in flightdeck (a panic caught at a task's edge), not the cluster's fault.
    #[error("internal error: {0}")]
    Internal(String),
    /// What a hub answered for a cluster it serves: its own words, already in the form
    /// the user reads (`hub: authentication failed`, the cluster's error as the hub saw it).
    #[error("{0}")]
    Remote(String),
}

/// How many single-job requests [`Backend::job_actions`] keeps in flight by default: enough
/// to hide a round trip, few enough that one user's batch is not a storm on an API server.
pub const BATCH_CONCURRENCY: usize = 4;

/// One orchestrator (a Slurm cluster, a Kubernetes context, a cloud API server).
#[async_trait]
pub trait Backend: Send + Sync {
    /// The configured cluster name.
    fn name(&self) -> &str;
    /// The cluster's kind where it is not its config entry's (a hub's clusters are Slurm,
    /// Kubernetes … clusters served through one `hub` entry); `None`: the entry's kind.
    fn kind(&self) -> Option<crate::model::ClusterKind> {
        None
    }
    fn capabilities(&self) -> Capabilities;
    /// What the spec fields that differ between kinds are called here, and which it needs.
    fn spec_fields(&self) -> SpecFields {
        SpecFields::default()
    }
    /// Which of nodes, tasks per node and array this kind takes (default: all, optional).
    fn shape_fields(&self) -> crate::model::ShapeFields {
        crate::model::ShapeFields::default()
    }
    /// A full picture of jobs and nodes, as cheaply for the remote side as possible.
    async fn snapshot(&self) -> Result<Snapshot, BackendError>;
    /// Submit a portable job; returns the new job's reference.
    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError>;
    /// The job `submit` would send for `spec`, in this backend's own form, with the same
    /// choices `submit` makes (pyxis or not, namespace, queue, GPU resource).
    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        let _ = spec;
        Err(BackendError::Unsupported(format!("cluster {} cannot show a native preview", self.name())))
    }
    /// The portable spec of a live job, read from this backend's own record of it (Slurm's
    /// job record and batch script, the Kubernetes Job object, the stored task or run spec),
    /// with what the portable form cannot carry as warnings.
    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        Err(BackendError::Unsupported(format!("cluster {} cannot read back the spec of {job}", self.name())))
    }
    /// When `spec` would start if submitted now, where the scheduler can say without
    /// submitting anything (Slurm: `sbatch --test-only`). Asked on demand only (`flightdeck
    /// advise`), never per refresh: it costs the scheduler a planning pass. `None`: no estimate.
    async fn estimate_start(&self, spec: &JobSpec) -> Result<Option<StartEstimate>, BackendError> {
        let _ = spec;
        Ok(None)
    }
    /// When the pending job `job` is expected to start (Slurm: `squeue --start`); `None`
    /// when the backend has no estimate for it.
    async fn estimate_job_start(&self, job: &JobRef) -> Result<Option<StartEstimate>, BackendError> {
        let _ = job;
        Ok(None)
    }
    /// What the backend can add, asked on demand for one job that waits on priority, never
    /// per refresh (Slurm: its priority's parts from `sprio -j` and its user's fair share
    /// from `sshare -u`, two RPCs); a line each. Empty: nothing to add.
    async fn priority_details(&self, job: &crate::model::Job) -> Result<Vec<String>, BackendError> {
        let _ = job;
        Ok(Vec::new())
    }
    /// Jobs that ended since `query.since`, from the backend's own long memory (Slurm's
    /// accounting through `sacct`), asked on demand, never per refresh. `None`: the backend
    /// keeps no more than its snapshot shows (a Kubernetes cluster's finished Jobs, a cloud's
    /// ended runs), which the fleet then reads instead.
    async fn history(&self, query: &crate::model::HistoryQuery) -> Result<Option<crate::model::History>, BackendError> {
        let _ = query;
        Ok(None)
    }
    /// Each account's and user's fair share as the scheduler weighs it (Slurm: one `sshare`),
    /// asked by `usage` only, never per refresh. `None`: the scheduler has no fair share.
    async fn fair_share(&self) -> Result<Option<Vec<crate::model::usage::FairShare>>, BackendError> {
        Ok(None)
    }
    /// Who holds this cluster's GPUs, where the backend computes it itself (a hub: from its
    /// picture and its own accounting read, a viewer's rows their own). `None`: the fleet
    /// computes it from the snapshot, `history` and `fair_share`.
    async fn usage(
        &self,
        query: &crate::model::usage::UsageQuery,
    ) -> Result<Option<crate::model::usage::Usage>, BackendError> {
        let _ = query;
        Ok(None)
    }
    /// Its GPUs measured through the backend's own reach (`nvidia-smi` on the nodes that hold
    /// the running jobs of `snapshot`, over the cluster's link; NVML on this machine), at the
    /// telemetry cadence, not per refresh. `None`: the backend cannot measure its GPUs (a
    /// cluster's `prometheus_url` is then the only source).
    async fn telemetry(&self, snapshot: &Snapshot) -> Result<Option<Telemetry>, BackendError> {
        let _ = snapshot;
        Ok(None)
    }
    /// The user this cluster acts as for flightdeck (whose jobs our submissions become),
    /// asked on demand: a migration adopts only a copy this user owns. `None`: the kind has
    /// no owner per job to tell apart (a Kubernetes namespace, a cloud project).
    async fn acting_user(&self) -> Result<Option<String>, BackendError> {
        Ok(None)
    }
    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError>;
    /// [`Backend::job_action`] on the object whose identity is `uid` (as the snapshot the
    /// user acted on had it), and only on that one. Backends without object identities
    /// (Slurm ids are never reused while a job is known) ignore it.
    async fn job_action_if(&self, job: &JobRef, action: JobAction, uid: Option<&str>) -> Result<(), BackendError> {
        let _ = uid;
        self.job_action(job, action).await
    }
    /// `action` on many jobs of this cluster (a confirmed batch); one result per job, in
    /// order. Backends whose commands take many jobs at once (Slurm) override this; the
    /// default asks [`Backend::job_action`] for each, a few at a time.
    async fn job_actions(&self, jobs: &[JobRef], action: JobAction) -> Vec<Result<(), BackendError>> {
        let mut results = Vec::with_capacity(jobs.len());
        for chunk in jobs.chunks(BATCH_CONCURRENCY) {
            let mut asked = Vec::with_capacity(chunk.len());
            for job in chunk {
                asked.push(self.job_action(job, action));
            }
            results.extend(futures_util::future::join_all(asked).await);
        }
        results
    }
    /// Returns what was done, when there is more to say than "done" (a drain's report).
    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError>;
    /// Connection, release and cost facts for `flightdeck doctor`.
    async fn diagnose(&self) -> Result<Diagnosis, BackendError>;
    /// Backends that watch their system instead of polling it return a channel whose value
    /// changes whenever their picture did; the fleet then refreshes as soon as it moves
    /// (`snapshot` is expected to be cheap for them: a copy of what the watches hold).
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
    /// A backend relaying a cluster that another fleet polls (a hub's client) reports that
    /// cluster's health as the other fleet sees it (stale since when, with which error); the
    /// poller shows it instead of its own bookkeeping while the relay itself answers. `None`:
    /// the poller's own bookkeeping (every backend that reaches its cluster itself).
    fn relayed_health(&self) -> Option<Health> {
        None
    }
    /// The same for placement: how the other fleet's kind places jobs, as it said it.
    /// `None`: the kind's own registry line says it (an older hub says none).
    fn relayed_placement(&self) -> Option<crate::model::Placement> {
        None
    }
    /// The same for GPU telemetry: the other fleet's reading, joined there (its idle clocks
    /// and histories are the ones that count), shown as it is. `None`: the fleet's own
    /// telemetry loop reads the cluster.
    fn relayed_telemetry(&self) -> Option<crate::model::Relayed> {
        None
    }
    /// Requests sent to the cluster so far (commands run, HTTP calls), where the backend
    /// counts them: the hub's `/metrics` divides them by refreshes.
    fn requests_sent(&self) -> Option<u64> {
        None
    }
    /// Read one of a job's output streams by the handle this backend put on the job: the
    /// last `max_bytes` when `from` is `None`, else what was appended since `from` (at most
    /// `max_bytes`, newest kept).
    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError>;
}

/// Which bytes of a file of `size` bytes to read, for [`Backend::read_log`]: returns
/// `(start, len, dropped)`. Shared by every backend that reads files by offset.
pub fn log_window(size: u64, from: Option<u64>, max_bytes: u64) -> (u64, u64, u64) {
    let wanted_from = match from {
        // A file shorter than where we stopped was truncated or replaced: start over.
        Some(off) if off <= size => off,
        Some(_) => 0,
        None => size.saturating_sub(max_bytes),
    };
    let start = wanted_from.max(size.saturating_sub(max_bytes));
    (start, size - start, start - wanted_from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_window_tails_follows_and_bounds() {
        // First read: the last 100 bytes of 1000, the first 900 never asked for.
        assert_eq!(log_window(1000, None, 100), (900, 100, 0));
        assert_eq!(log_window(50, None, 100), (0, 50, 0));
        // Follow: what was appended since offset 900.
        assert_eq!(log_window(1000, Some(900), 100), (900, 100, 0));
        assert_eq!(log_window(1000, Some(1000), 100), (1000, 0, 0));
        // More appended than the bound: keep the newest, count what was dropped.
        assert_eq!(log_window(2000, Some(1000), 100), (1900, 100, 900));
        // Truncated file: start again from the beginning.
        assert_eq!(log_window(10, Some(500), 100), (0, 10, 0));
    }
}
