//! GPU telemetry: what each GPU is doing, measured apart from what the scheduler says.
//!
//! A source (Prometheus with dcgm-exporter, `nvidia-smi` over a cluster's link, NVML on this
//! machine) produces one [`Telemetry`] per cadence: a [`GpuSample`] per GPU it could see. The
//! fleet joins samples to jobs (`fleet::telemetry`) into a [`GpuUse`], which is what the
//! front ends read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How far back each GPU's utilisation is kept (the job detail's sparklines).
pub const HISTORY: chrono::TimeDelta = chrono::TimeDelta::minutes(15);
/// Most points kept per GPU, whatever the cadence: bounds memory at 10k GPUs.
pub const HISTORY_POINTS: usize = 90;

/// What the source says uses a GPU, when it says (dcgm-exporter's pod mapping, its HPC job
/// mapping); the join falls back to the scheduler's own allocation otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuOwner {
    /// A Kubernetes pod.
    Pod { namespace: String, name: String },
    /// A job id in the cluster's own namespace (a Slurm job id).
    Job(String),
}

/// A process running on a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// Its user, where the source can tell (NVML on this machine; not `nvidia-smi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
}

/// One GPU, measured once. Every figure is optional: sources and devices differ in what
/// they report (`[N/A]`, a metric the exporter was not configured for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// The node as the cluster's backend names it.
    pub node: String,
    /// Device index on the node (`nvidia-smi`'s index, dcgm-exporter's `gpu` label).
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The device's own name (`NVIDIA H100 80GB HBM3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Busy percentage, 0–100: the graphics engine's active ratio where the source has it
    /// (the better idle signal), else "a kernel was running" time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilisation: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_watts: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f32>,
    /// The last XID error the driver reported, when one has been (0 is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_xid: Option<u32>,
    /// What is wrong with the device, in words, when the source can tell (an XID, ECC
    /// errors, fell off the bus): the nodes screen's problem filter shows it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<GpuOwner>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<GpuProcess>,
}

impl GpuSample {
    /// A GPU with nothing measured yet; sources fill in what they read.
    pub fn new(node: impl Into<String>, index: u32) -> Self {
        Self {
            node: node.into(),
            index,
            uuid: None,
            product: None,
            utilisation: None,
            memory_used_mb: None,
            memory_total_mb: None,
            power_watts: None,
            temperature_c: None,
            last_xid: None,
            problems: Vec::new(),
            owner: None,
            processes: Vec::new(),
        }
    }
}

/// One reading of a cluster's GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    pub taken_at: DateTime<Utc>,
    /// Where it came from, in words (`prometheus https://prom:9090`, `nvidia-smi via srun`,
    /// `nvml`): `doctor` and the job detail say it.
    pub source: String,
    pub gpus: Vec<GpuSample>,
    /// What the reading lacks and why (a metric absent, nodes skipped past the bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One GPU as the front ends show it: its last sample, the job it serves, its recent past.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    pub sample: GpuSample,
    /// The id (within the cluster) of the job using it, when the join found one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Utilisation over the last minutes, oldest first (bounded; gaps left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<f32>,
}

/// How one job uses the GPUs it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobGpuUse {
    /// The job's id within the cluster.
    pub job: String,
    /// GPUs of the job that were measured.
    pub gpus: u32,
    /// Mean utilisation of those GPUs in the last reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_utilisation: Option<f32>,
    /// Since when every reading has been under the idle threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_since: Option<DateTime<Utc>>,
    /// Under the threshold for longer than the idle window: allocated but idle.
    pub idle: bool,
}

/// A cluster's telemetry joined to its jobs: what the cockpit, the CLI and the hub read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuUse {
    pub taken_at: DateTime<Utc>,
    pub source: String,
    /// Sorted by node (byte order, so a node's GPUs are found by binary search), then index.
    pub gpus: Vec<GpuReading>,
    /// Sorted by job id; only jobs with at least one measured GPU.
    pub jobs: Vec<JobGpuUse>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl GpuUse {
    /// A job's use, by its id within the cluster.
    pub fn job(&self, id: &str) -> Option<&JobGpuUse> {
        self.jobs.binary_search_by(|j| j.job.as_str().cmp(id)).ok().map(|i| &self.jobs[i])
    }

    /// The readings of one node's GPUs, by index.
    pub fn node(&self, node: &str) -> &[GpuReading] {
        let start = self.gpus.partition_point(|g| g.sample.node.as_str() < node);
        let len = self.gpus[start..].partition_point(|g| g.sample.node == node);
        &self.gpus[start..start + len]
    }

    /// Jobs flagged idle, and the GPUs they hold.
    pub fn idle(&self) -> (usize, u32) {
        self.jobs.iter().filter(|j| j.idle).fold((0, 0), |(jobs, gpus), j| (jobs + 1, gpus + j.gpus))
    }
}

/// What a client mirrors of a cluster's telemetry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Relayed {
    pub gpu_use: Option<std::sync::Arc<GpuUse>>,
    pub error: Option<String>,
    pub tried: bool,
}
