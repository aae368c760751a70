//! Plain data shared by every backend, the fleet and the front ends.
//!
//! Backends translate their native objects into these types; nothing here knows about
//! Slurm, Kubernetes or the terminal. This is also the vocabulary the fleet and the front
//! ends speak ([`Action`], [`ActionOutcome`], [`Capabilities`], [`FleetState`], [`LogChunk`],
//! [`Diagnosis`]): everything is `Serialize + Deserialize`, so the CLI's JSON output, the
//! audit log and the hub's wire format come from one definition.

pub mod action;
pub mod diagnosis;
pub mod estimate;
pub mod fleet_state;
pub mod gpu_names;
pub mod gpu_totals;
pub mod history;
pub mod log;
pub mod native;
pub mod placement;
pub mod slurm_reasons;
pub mod telemetry;
pub mod usage;
pub mod words;
pub mod workload;

pub use self::action::{Action, ActionOutcome, BatchOutcome, Capabilities, JobAction, NodeAction, Verb};
pub use self::diagnosis::{Diagnosis, Fact};
pub use self::estimate::StartEstimate;
pub use self::fleet_state::{ClusterState, FleetState};
pub use self::history::{History, HistoryQuery, JobRecord};
pub use self::log::{LogChunk, LogHandle, LogStream};
pub use self::native::{Dialect, FieldUse, Native, Need, ShapeFields, SpecFields};
pub use self::placement::{Caveat, Partitions, Placement};
pub use self::telemetry::{GpuOwner, GpuProcess, GpuReading, GpuSample, GpuUse, JobGpuUse, Relayed, Telemetry};
pub use self::workload::{ReplicaGroup, Workload, WorkloadPod};

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The name of a configured cluster, unique within one fleet (`hpc`, `k8s-prod`).
pub type ClusterId = String;

/// A job's identity across the fleet: the cluster it lives on plus the backend's own id.
///
/// Printed `cluster/id`; Slurm array tasks keep Slurm's `12_3` form in `id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobRef {
    pub cluster: ClusterId,
    pub id: String,
}

impl JobRef {
    pub fn new(cluster: impl Into<String>, id: impl Into<String>) -> Self {
        Self { cluster: cluster.into(), id: id.into() }
    }
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.cluster, self.id)
    }
}

/// Error for a `cluster/id` (or `cluster/node`) reference that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a reference of the form CLUSTER/ID")]
pub struct BadRef(pub String);

impl FromStr for JobRef {
    type Err = BadRef;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (cluster, id) = split_ref(s)?;
        Ok(Self::new(cluster, id))
    }
}

/// A node's identity across the fleet, printed `cluster/node`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeRef {
    pub cluster: ClusterId,
    pub name: String,
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.cluster, self.name)
    }
}

impl FromStr for NodeRef {
    type Err = BadRef;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (cluster, name) = split_ref(s)?;
        Ok(Self { cluster: cluster.to_string(), name: name.to_string() })
    }
}

fn split_ref(s: &str) -> Result<(&str, &str), BadRef> {
    match s.split_once('/') {
        Some((c, rest)) if !c.is_empty() && !rest.is_empty() && !rest.contains('/') => Ok((c, rest)),
        _ => Err(BadRef(s.to_string())),
    }
}

/// The unified job state. Each backend maps its native states onto these; the native
/// string is kept beside it on [`Job::native_state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Pending,
    Held,
    Running,
    Suspended,
    Completing,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    Preempted,
    NodeFail,
    OutOfMemory,
    Unknown,
}

impl JobState {
    pub const ALL: [JobState; 13] = [
        JobState::Pending,
        JobState::Held,
        JobState::Running,
        JobState::Suspended,
        JobState::Completing,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::Preempted,
        JobState::NodeFail,
        JobState::OutOfMemory,
        JobState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Held => "held",
            JobState::Running => "running",
            JobState::Suspended => "suspended",
            JobState::Completing => "completing",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Timeout => "timeout",
            JobState::Preempted => "preempted",
            JobState::NodeFail => "node_fail",
            JobState::OutOfMemory => "out_of_memory",
            JobState::Unknown => "unknown",
        }
    }

    /// Waiting to start (pending or held).
    pub fn is_waiting(self) -> bool {
        matches!(self, JobState::Pending | JobState::Held)
    }

    /// Holds resources now.
    pub fn is_active(self) -> bool {
        matches!(self, JobState::Running | JobState::Suspended | JobState::Completing)
    }

    /// Ended, one way or another; nothing more will happen to it.
    pub fn is_finished(self) -> bool {
        !self.is_waiting() && !self.is_active() && self != JobState::Unknown
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        // Slurm's compact codes (`squeue -t R,PD`), for hands used to squeue.
        let code = match wanted.as_str() {
            "pd" => Some(JobState::Pending),
            "r" => Some(JobState::Running),
            "s" => Some(JobState::Suspended),
            "cg" => Some(JobState::Completing),
            "cd" => Some(JobState::Completed),
            "f" => Some(JobState::Failed),
            "ca" | "canceled" => Some(JobState::Cancelled),
            "to" => Some(JobState::Timeout),
            "pr" => Some(JobState::Preempted),
            "nf" => Some(JobState::NodeFail),
            "oom" => Some(JobState::OutOfMemory),
            _ => None,
        };
        code.or_else(|| JobState::ALL.into_iter().find(|st| st.as_str() == wanted)).ok_or_else(|| {
            let names: Vec<_> = JobState::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown job state `{s}` (one of: {}; or Slurm's R, PD, CG, CD, F, CA, TO, S …)", names.join(", "))
        })
    }
}

/// How a finished job ended: the exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    pub code: i32,
    pub signal: Option<i32>,
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.signal {
            Some(sig) => write!(f, "{}:{sig}", self.code),
            None => write!(f, "{}", self.code),
        }
    }
}

/// GPUs a job holds on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAllocation {
    pub node: String,
    /// GPU model (`a100`, `1g.10gb`); `None` when the site does not type its GPUs.
    pub model: Option<String>,
    pub count: u32,
    /// Device indices on the node, when the backend reports them.
    pub indices: Vec<u32>,
}

/// Array-job bookkeeping (Slurm job arrays; other backends leave it empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayInfo {
    /// The array's own id (the parent job id).
    pub array_id: String,
    /// This task's index; `None` for the pending parent that still holds unstarted tasks.
    pub task_id: Option<u32>,
    /// Unstarted tasks on the parent, like `2-5%2`.
    pub pending_tasks: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    #[serde(rename = "ref")]
    pub job_ref: JobRef,
    pub name: String,
    pub user: String,
    pub account: Option<String>,
    /// Slurm partition, Kubernetes queue or namespace, cloud pool.
    pub partition: String,
    pub state: JobState,
    /// The backend's own state, flags included (`PENDING,REQUEUED`).
    pub native_state: String,
    /// Why the job waits (or why it ended), when the backend says.
    pub reason: Option<String>,
    pub gpus_requested: u32,
    pub gpus_allocated: u32,
    /// GPU model requested or held, canonical ([`gpu_names`]); several are joined with `,`.
    pub gpu_model: Option<String>,
    /// The same GPUs as the backend names them (`NVIDIA-H100-80GB-HBM3`); joined with `,`.
    #[serde(default)]
    pub gpu_product: Option<String>,
    pub gpu_allocations: Vec<GpuAllocation>,
    /// Expanded node names the job runs on (empty while pending).
    pub nodes: Vec<String>,
    pub node_count: u32,
    pub cpus: u32,
    pub memory_mb: Option<u64>,
    pub submit_time: Option<DateTime<Utc>>,
    /// Start time, or the scheduler's estimate while pending.
    pub start_time: Option<DateTime<Utc>>,
    pub end_time: Option<DateTime<Utc>>,
    /// Time limit in seconds; `None` means unlimited or unknown.
    pub time_limit_secs: Option<u64>,
    pub priority: Option<u64>,
    pub exit: Option<ExitStatus>,
    /// Where its standard output can be read (see [`LogHandle`]).
    pub stdout: Option<LogHandle>,
    /// Where its standard error can be read; Slurm writes both to one file unless told not to.
    pub stderr: Option<LogHandle>,
    pub workdir: Option<String>,
    pub array: Option<ArrayInfo>,
    /// What the job costs per hour in US dollars, where the backend says (cloud runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// The backend's identity of this very object (a Kubernetes UID), where names are
    /// reused: an action confirmed on this job carries it, so it never reaches a newer
    /// object that took the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The job this one was migrated from (`hpc/123`), read back from the tag `flightdeck
    /// migrate` leaves in the backend's own place for it (see `JobSpec::migrated_from`), with
    /// the migration's id when it has one ([`Job::origin`], [`Job::migration_id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrated_from: Option<String>,
    /// The Kubernetes object this job stands for, with its replica groups and pods (a
    /// PyTorchJob, a JobSet …); `None` for every other kind of job. Shared, since a
    /// workload's pod list is the largest part of its job and the adapter keeps jobs from one
    /// snapshot to the next (a clone is then a count, not a copy of every pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Arc<Workload>>,
}

/// The word that joins a migration's id to its origin in the tag a migrated job carries
/// (`hpc/12 migration=18c2f…-3a-0`): the id names one migration, so a copy is told from a
/// job someone else tagged with the same origin.
pub const MIGRATION_ID_WORD: &str = " migration=";

/// The origin tag for a job migrated from `origin` by the migration `id`.
pub fn migration_tag(origin: &str, id: &str) -> String {
    format!("{origin}{MIGRATION_ID_WORD}{id}")
}

/// A tag's origin and, when it has one, its migration id (only ASCII letters, digits and
/// `-`: anything else is part of the origin). Tags written before migration ids have none.
pub fn split_migration_tag(tag: &str) -> (&str, Option<&str>) {
    match tag.rsplit_once(MIGRATION_ID_WORD) {
        Some((origin, id)) if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            (origin, Some(id))
        }
        _ => (tag, None),
    }
}

impl Job {
    /// A job with every optional field empty; backends fill in what they know.
    pub fn new(job_ref: JobRef, state: JobState) -> Self {
        Self {
            job_ref,
            name: String::new(),
            user: String::new(),
            account: None,
            partition: String::new(),
            state,
            native_state: String::new(),
            reason: None,
            gpus_requested: 0,
            gpus_allocated: 0,
            gpu_model: None,
            gpu_product: None,
            gpu_allocations: Vec::new(),
            nodes: Vec::new(),
            node_count: 0,
            cpus: 0,
            memory_mb: None,
            submit_time: None,
            start_time: None,
            end_time: None,
            time_limit_secs: None,
            priority: None,
            exit: None,
            stdout: None,
            stderr: None,
            workdir: None,
            array: None,
            cost_per_hour: None,
            uid: None,
            migrated_from: None,
            workload: None,
        }
    }

    /// The job this one was migrated from (`hpc/123`), its migration id left out.
    pub fn origin(&self) -> Option<&str> {
        self.migrated_from.as_deref().map(|t| split_migration_tag(t).0)
    }

    /// The id of the migration that made this job, when its tag carries one.
    pub fn migration_id(&self) -> Option<&str> {
        self.migrated_from.as_deref().and_then(|t| split_migration_tag(t).1)
    }

    /// Where `stream` can be read.
    pub fn log(&self, stream: LogStream) -> Option<&LogHandle> {
        match stream {
            LogStream::Stdout => self.stdout.as_ref(),
            LogStream::Stderr => self.stderr.as_ref(),
        }
    }

    /// GPUs that matter for display: held ones while active, requested ones otherwise.
    pub fn gpus(&self) -> u32 {
        if self.state.is_active() && self.gpus_allocated > 0 { self.gpus_allocated } else { self.gpus_requested }
    }
}

/// The unified base state of a node. Flags (drain, not responding …) live beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Idle,
    Mixed,
    Allocated,
    /// Drain requested while jobs still run.
    Draining,
    /// Drained and empty: out of service.
    Drained,
    Down,
    Completing,
    Reserved,
    Maintenance,
    Future,
    /// Powered down or otherwise off on purpose.
    PoweredDown,
    Unknown,
}

impl NodeState {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Idle => "idle",
            NodeState::Mixed => "mixed",
            NodeState::Allocated => "allocated",
            NodeState::Draining => "draining",
            NodeState::Drained => "drained",
            NodeState::Down => "down",
            NodeState::Completing => "completing",
            NodeState::Reserved => "reserved",
            NodeState::Maintenance => "maintenance",
            NodeState::Future => "future",
            NodeState::PoweredDown => "powered_down",
            NodeState::Unknown => "unknown",
        }
    }

    /// GPUs on such a node cannot take new work.
    pub fn is_unavailable(self) -> bool {
        matches!(
            self,
            NodeState::Draining
                | NodeState::Drained
                | NodeState::Down
                | NodeState::Maintenance
                | NodeState::Future
                | NodeState::PoweredDown
                | NodeState::Unknown
        )
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The GPUs of one model on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSlot {
    /// Canonical model ([`gpu_names`]: `a100`, `h100`, `1g.10gb`); `gpu` when untyped.
    pub model: String,
    /// The name the backend gives these GPUs (`NVIDIA-H100-80GB-HBM3`, a Slurm GRES type).
    #[serde(default)]
    pub gpu_product: Option<String>,
    /// Time-sliced shares of a GPU (each counted in `total`), not whole GPUs.
    #[serde(default)]
    pub shared: bool,
    pub total: u32,
    pub allocated: u32,
    pub unhealthy: u32,
    /// Mean utilisation 0–100, where the backend measures it.
    pub utilisation: Option<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub cluster: ClusterId,
    pub name: String,
    pub state: NodeState,
    /// Upper-case flags as the backend reports them: `DRAIN`, `NOT_RESPONDING`, `INVALID_REG`, `CORDONED` …
    pub flags: Vec<String>,
    pub native_state: String,
    pub reason: Option<String>,
    pub reason_user: Option<String>,
    pub reason_time: Option<DateTime<Utc>>,
    pub gpus: Vec<GpuSlot>,
    pub cpus_total: u32,
    pub cpus_allocated: u32,
    pub memory_total_mb: u64,
    pub memory_allocated_mb: u64,
    pub partitions: Vec<String>,
    pub features: Vec<String>,
    /// What the machine costs per hour in US dollars, where the backend says (cloud instances).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
}

/// A GPU slot's model is the one asked for: any, when `None`; one of several, where the job
/// names several (`h100,a100`).
pub fn gpu_model_matches(slot: &str, model: Option<&str>) -> bool {
    model.is_none_or(|m| m.split(',').any(|m| m.trim().eq_ignore_ascii_case(slot)))
}

impl Node {
    pub fn new(cluster: impl Into<String>, name: impl Into<String>, state: NodeState) -> Self {
        Self {
            cluster: cluster.into(),
            name: name.into(),
            state,
            flags: Vec::new(),
            native_state: String::new(),
            reason: None,
            reason_user: None,
            reason_time: None,
            gpus: Vec::new(),
            cpus_total: 0,
            cpus_allocated: 0,
            memory_total_mb: 0,
            memory_allocated_mb: 0,
            partitions: Vec::new(),
            features: Vec::new(),
            cost_per_hour: None,
        }
    }

    pub fn gpus_total(&self) -> u32 {
        self.gpus.iter().fold(0u32, |n, g| n.saturating_add(g.total))
    }

    pub fn gpus_allocated(&self) -> u32 {
        self.gpus.iter().fold(0u32, |n, g| n.saturating_add(g.allocated))
    }

    pub fn gpus_unhealthy(&self) -> u32 {
        self.gpus.iter().fold(0u32, |n, g| n.saturating_add(g.unhealthy))
    }

    /// The node has GPUs of `model` (any GPUs, when `None`; one of several, where a job names
    /// several: `h100,a100`).
    pub fn has_gpu_model(&self, model: Option<&str>) -> bool {
        self.gpus.iter().any(|g| g.total > 0 && gpu_model_matches(&g.model, model))
    }

    /// Free, healthy GPUs of `model` (any, when `None`) on the node.
    pub fn free_gpus_of(&self, model: Option<&str>) -> u32 {
        self.gpus
            .iter()
            .filter(|g| gpu_model_matches(&g.model, model))
            .map(|g| g.total.saturating_sub(g.allocated).saturating_sub(g.unhealthy))
            .sum()
    }

    /// The node's GPU models joined with `,`, or `None` without GPUs.
    pub fn gpu_model(&self) -> Option<String> {
        (!self.gpus.is_empty()).then(|| self.gpus.iter().map(|g| g.model.as_str()).collect::<Vec<_>>().join(","))
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f.eq_ignore_ascii_case(flag))
    }

    /// Cannot take new work: a bad base state, or a flag that takes it out of service.
    pub fn is_unavailable(&self) -> bool {
        self.state.is_unavailable()
            || ["DRAIN", "NOT_RESPONDING", "INVALID_REG", "INVALID", "FAIL", "CORDONED", "MAINTENANCE"]
                .iter()
                .any(|f| self.has_flag(f))
    }
}

/// A partition (Slurm), queue (Kueue) or pool: derived from nodes and jobs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub cluster: ClusterId,
    pub name: String,
    pub nodes: u32,
    pub gpus_total: u32,
    pub gpus_allocated: u32,
    pub gpus_unavailable: u32,
    pub jobs_by_state: BTreeMap<JobState, u32>,
    /// Waiting jobs counted by their reason (`Resources`, `Priority` …).
    pub pending_by_reason: BTreeMap<String, u32>,
    /// Quota and use per flavor and resource, for queues that have quotas (Kueue).
    #[serde(default)]
    pub quota: Vec<QueueQuota>,
    /// The cohort a Kueue ClusterQueue borrows within.
    #[serde(default)]
    pub cohort: Option<String>,
    /// Workloads waiting for and holding quota (Kueue), as the queue itself counts them.
    #[serde(default)]
    pub workloads_pending: u32,
    #[serde(default)]
    pub workloads_admitted: u32,
}

/// One resource of one flavor in a queue's quota. Quantities are in milli-units (GPUs ×
/// 1000, CPUs in millicores, memory in milli-bytes) as Kubernetes quantities parse.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueQuota {
    pub flavor: String,
    pub resource: String,
    pub nominal_milli: i64,
    pub borrowing_limit_milli: Option<i64>,
    pub used_milli: i64,
    pub borrowed_milli: i64,
}

impl QueueQuota {
    /// Whether the resource is GPUs (whole, MIG slices, time-sliced shares), by the names
    /// the device plugins register, not CPU or memory.
    pub fn is_gpu(&self) -> bool {
        let r = self.resource.as_str();
        r == "nvidia.com/gpu"
            || r == "nvidia.com/gpu.shared"
            || r.starts_with("nvidia.com/mig-")
            || r == "amd.com/gpu"
            || (r.starts_with("gpu.intel.com/") && !r.ends_with("millicores") && !r.ends_with("memory.max"))
    }
}

/// One cluster's state as of one refresh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub cluster: ClusterId,
    pub taken_at: Option<DateTime<Utc>>,
    /// The backend's release (`22.05.8`), when it says.
    pub release: Option<String>,
    pub jobs: Vec<Job>,
    pub nodes: Vec<Node>,
    pub queues: Vec<Queue>,
    /// What this snapshot lacks and why (a missing CRD, no RBAC for a kind, a text fallback):
    /// shown beside the cluster, never an error.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Snapshot {
    /// What the cluster costs per hour, where its backend reports prices: the machines'
    /// prices when it reports those (they are what is billed), else the active jobs'.
    /// `None` when nothing has a price.
    pub fn cost_per_hour(&self) -> Option<f64> {
        let sum = |costs: &mut dyn Iterator<Item = f64>| {
            let mut total: Option<f64> = None;
            for c in costs.filter(|c| c.is_finite() && *c >= 0.0) {
                *total.get_or_insert(0.0) += c;
            }
            total
        };
        sum(&mut self.nodes.iter().filter_map(|n| n.cost_per_hour)).or_else(|| {
            sum(&mut self
                .jobs
                .iter()
                .filter(|j| !j.state.is_finished() && !j.state.is_waiting())
                .filter_map(|j| j.cost_per_hour))
        })
    }

    /// The job with this id (within the cluster), if the snapshot lists it.
    pub fn job(&self, id: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.job_ref.id == id)
    }

    /// Fill `queues` from the nodes' partition lists and the jobs' partitions.
    ///
    /// Backends with a richer notion of queue (Kueue) may set `queues` themselves instead.
    pub fn derive_queues(&mut self) {
        let mut by_name: BTreeMap<String, Queue> = BTreeMap::new();
        for node in &self.nodes {
            for part in &node.partitions {
                let q = by_name.entry(part.clone()).or_insert_with(|| Queue {
                    cluster: self.cluster.clone(),
                    name: part.clone(),
                    ..Queue::default()
                });
                // Backend data can claim anything (`gpu:4294967295`): sums saturate.
                q.nodes = q.nodes.saturating_add(1);
                q.gpus_total = q.gpus_total.saturating_add(node.gpus_total());
                q.gpus_allocated = q.gpus_allocated.saturating_add(node.gpus_allocated());
                let unavailable = if node.is_unavailable() {
                    node.gpus_total().saturating_sub(node.gpus_allocated())
                } else {
                    node.gpus_unhealthy()
                };
                q.gpus_unavailable = q.gpus_unavailable.saturating_add(unavailable);
            }
        }
        for job in &self.jobs {
            // A job may name several partitions while pending (`gpu,debug`).
            for part in job.partition.split(',').filter(|p| !p.is_empty()) {
                let q = by_name.entry(part.to_string()).or_insert_with(|| Queue {
                    cluster: self.cluster.clone(),
                    name: part.to_string(),
                    ..Queue::default()
                });
                let n = q.jobs_by_state.entry(job.state).or_default();
                *n = n.saturating_add(1);
                if job.state.is_waiting() {
                    let reason = job.reason.clone().unwrap_or_else(|| "None".to_string());
                    let n = q.pending_by_reason.entry(reason).or_default();
                    *n = n.saturating_add(1);
                }
            }
        }
        self.queues = by_name.into_values().collect();
    }
}

/// Whether a cluster's data is current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Health {
    /// No refresh has finished yet.
    Connecting,
    /// The last refresh succeeded at `at`.
    Fresh { at: DateTime<Utc> },
    /// Refreshes have failed since `since`; the last good snapshot (if any) is still shown.
    Stale { since: DateTime<Utc>, error: String, last_ok: Option<DateTime<Utc>> },
}

impl Health {
    pub fn is_fresh(&self) -> bool {
        matches!(self, Health::Fresh { .. })
    }
}

/// What a cluster is (`slurm`, `kubernetes`, …), as the config file writes it. Open rather
/// than an enum: a backend kind registered at run time (see `backend::Registry`) brings its
/// own name, and the name crosses a wire as a plain string. The shipped kinds' constants
/// (`ClusterKind::SLURM`) are declared in their own folders under `backend`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClusterKind(std::borrow::Cow<'static, str>);

impl ClusterKind {
    /// A kind named by a constant (what a backend's own module declares).
    pub const fn from_static(name: &'static str) -> ClusterKind {
        ClusterKind(std::borrow::Cow::Borrowed(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClusterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ClusterKind {
    fn from(name: &str) -> Self {
        ClusterKind(std::borrow::Cow::Owned(name.to_string()))
    }
}

impl From<String> for ClusterKind {
    fn from(name: String) -> Self {
        ClusterKind(std::borrow::Cow::Owned(name))
    }
}

impl PartialEq<str> for ClusterKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ClusterKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod cluster_kind_tests {
    use super::ClusterKind;

    #[test]
    fn kind_is_its_name_everywhere() {
        const STUB: ClusterKind = ClusterKind::from_static("stub");
        assert_eq!(STUB.as_str(), "stub");
        assert_eq!(STUB.to_string(), "stub");
        // A kind read back from text equals the constant it names.
        assert_eq!(ClusterKind::from("stub"), STUB);
        assert_eq!(serde_json::to_string(&STUB).unwrap(), "\"stub\"");
        let back: ClusterKind = serde_json::from_str("\"stub\"").unwrap();
        assert_eq!(back, STUB);
        assert!(STUB == "stub");
    }
}
