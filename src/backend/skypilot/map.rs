//! SkyPilot's records → `model`.
//!
//! * A cluster (`/status`) is one node per cluster node: the head is named after the cluster,
//!   the others `CLUSTER:1`, `CLUSTER:2` … (`:` is never part of a SkyPilot cluster name, so
//!   a node name always leads back to its cluster). INIT, UP, STOPPED; cloud, region and
//!   instance type as features; `accelerators` (`{'H100': 8}`, per node) → GPU slots.
//! * Jobs on a cluster (`/queue`) are `CLUSTER:JOB_ID` in the cluster's own queue (SkyPilot
//!   gives every cluster its job queue); managed jobs (`/jobs/queue/v2`) are their managed
//!   job id, in the queue of the managed-jobs controller ([`MANAGED_QUEUE`]); an ended one
//!   that ran keeps its GPUs and price, which usage windows count.
//!
//! Every field is read leniently: a wrong type is an unknown value, numbers saturate, and a
//! record that is not an object is skipped and counted, so no server answer panics or loses
//! the rest of a listing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{GpuAllocation, GpuSlot, Job, JobRef, JobState, LogHandle, Node, NodeState, gpu_names};

/// The queue managed jobs are in: SkyPilot's managed-jobs controller.
pub const MANAGED_QUEUE: &str = "managed-jobs";
/// Names SkyPilot gives its managed-jobs controller cluster (`sky-jobs-controller-<user hash>`).
pub const CONTROLLER_PREFIX: &str = "sky-jobs-controller-";
/// The log handle of a job on a cluster: `skypilot/CLUSTER/JOB_ID`.
pub const CLUSTER_LOG_PREFIX: &str = "skypilot/";
/// The log handle of a managed job: `skypilot-managed/JOB_ID`.
pub const MANAGED_LOG_PREFIX: &str = "skypilot-managed/";

/// Lenient field readers: any JSON value in, a typed value or `None` out, never an error.
mod lenient {
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
    }

    pub fn float<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(super::as_float(&Value::deserialize(d)?))
    }

    pub fn uint<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(super::as_float(&Value::deserialize(d)?).map(super::saturating_u64))
    }

    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        Ok(matches!(Value::deserialize(d)?, Value::Bool(true)))
    }

    /// `{'H100': 4}` as managed jobs send it: model → count.
    pub fn counts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Object(map) => map.iter().filter_map(|(k, v)| Some((k.clone(), super::as_float(v)?))).collect(),
            Value::String(s) => super::parse_accelerators(&s),
            _ => Vec::new(),
        })
    }
}

/// A number, or a string that starts with one (`"8"`, `"32+"`); finite values only.
fn as_float(v: &Value) -> Option<f64> {
    let f = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => leading_number(s),
        _ => None,
    }?;
    f.is_finite().then_some(f)
}

/// The number a text starts with (`8`, `32+`, `1e30`), the longest prefix that parses.
fn leading_number(s: &str) -> Option<f64> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))).unwrap_or(s.len());
    let mut prefix = &s[..end];
    while !prefix.is_empty() {
        if let Ok(f) = prefix.parse::<f64>() {
            return f.is_finite().then_some(f);
        }
        prefix = &prefix[..prefix.len() - 1];
    }
    None
}

/// A non-negative count; negative is 0, too large saturates (`as` saturates floats).
fn saturating_u64(f: f64) -> u64 {
    if f.is_nan() || f <= 0.0 { 0 } else { f as u64 }
}

fn saturating_u32(f: f64) -> u32 {
    u32::try_from(saturating_u64(f)).unwrap_or(u32::MAX)
}

/// Seconds since the epoch (SkyPilot's float timestamps) → a time, where it is one.
fn timestamp(secs: Option<f64>) -> Option<DateTime<Utc>> {
    let secs = secs.filter(|s| s.is_finite() && *s > 0.0)?;
    let whole = secs.trunc();
    let nanos = ((secs - whole) * 1e9) as u32;
    DateTime::from_timestamp(whole as i64, nanos.min(999_999_999))
}

/// `{'H100': 8}` or `{'L4': 0.5, 'A100': 1}` (Python's repr of `Resources.accelerators`, as
/// `/status` writes it), `H100:8`, or JSON: model → count per node.
pub fn parse_accelerators(text: &str) -> Vec<(String, f64)> {
    let body = text.trim().trim_start_matches('{').trim_end_matches('}');
    body.split(',')
        .filter_map(|pair| {
            let (name, count) = pair.rsplit_once(':').unwrap_or((pair, "1"));
            let name = name.trim().trim_matches(|c| c == '\'' || c == '"').trim();
            if name.is_empty() {
                return None;
            }
            Some((name.to_string(), leading_number(count).unwrap_or(1.0)))
        })
        .collect()
}

/// A job's resources as `/queue` and managed jobs write them: `2x[H100:8]` (nodes × model:count
/// per node), `1x[CPU:4]`, `2x[cpus=8, H100:8]` … → (nodes, [(model, per node)]).
pub fn parse_job_resources(text: &str) -> (u32, Vec<(String, f64)>) {
    let text = text.trim();
    let (nodes, rest) = match text.split_once('x') {
        Some((n, rest)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
            (n.parse::<u64>().map(|n| u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(1), rest)
        }
        _ => (1, text),
    };
    let inner = rest.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let gpus = inner
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let (name, count) = part.split_once(':')?;
            let name = name.trim().trim_matches(|c| c == '\'' || c == '"' || c == '{').trim();
            // `cpus=8`, `mem=32`, a bare instance type: not accelerators.
            if name.is_empty() || name.contains('=') || name.eq_ignore_ascii_case("cpu") {
                return None;
            }
            Some((name.to_string(), leading_number(count.trim_end_matches('}')).unwrap_or(1.0)))
        })
        .collect();
    (nodes.max(1), gpus)
}

/// One cluster of `/status`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ClusterRecord {
    #[serde(deserialize_with = "lenient::string")]
    pub name: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub status: Option<String>,
    #[serde(deserialize_with = "lenient::uint")]
    pub nodes: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    pub cloud: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub region: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub cpus: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub memory: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub accelerators: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub resources_str: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub user_name: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub init_status_reason: Option<String>,
    #[serde(deserialize_with = "lenient::float")]
    pub status_updated_at: Option<f64>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub is_managed: bool,
    /// Dollars per hour, where a server reports it (0.14.1's `/status` does not).
    #[serde(deserialize_with = "lenient::float")]
    pub cost_per_hour: Option<f64>,
    /// The task (as its user wrote it) of the launch that last started the cluster.
    #[serde(deserialize_with = "lenient::string")]
    pub last_creation_yaml: Option<String>,
}

impl ClusterRecord {
    pub fn is_up(&self) -> bool {
        self.status.as_deref() == Some("UP")
    }

    /// SkyPilot's own managed-jobs controller (its jobs are the managed jobs' controllers).
    pub fn is_controller(&self) -> bool {
        self.name.as_deref().is_some_and(|n| n.starts_with(CONTROLLER_PREFIX))
    }
}

/// One job of `/queue CLUSTER`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ClusterJobRecord {
    #[serde(deserialize_with = "lenient::uint")]
    pub job_id: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    pub job_name: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub username: Option<String>,
    #[serde(deserialize_with = "lenient::float")]
    pub submitted_at: Option<f64>,
    #[serde(deserialize_with = "lenient::float")]
    pub start_at: Option<f64>,
    #[serde(deserialize_with = "lenient::float")]
    pub end_at: Option<f64>,
    #[serde(deserialize_with = "lenient::string")]
    pub resources: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub status: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub log_path: Option<String>,
}

/// One managed job of `/jobs/queue/v2` (one record per task).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ManagedJobRecord {
    #[serde(deserialize_with = "lenient::uint")]
    pub job_id: Option<u64>,
    #[serde(deserialize_with = "lenient::uint")]
    pub task_id: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    pub job_name: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub task_name: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub status: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub resources: Option<String>,
    #[serde(deserialize_with = "lenient::counts")]
    pub accelerators: Vec<(String, f64)>,
    #[serde(deserialize_with = "lenient::string")]
    pub infra: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub user_name: Option<String>,
    #[serde(deserialize_with = "lenient::float")]
    pub submitted_at: Option<f64>,
    #[serde(deserialize_with = "lenient::float")]
    pub start_at: Option<f64>,
    #[serde(deserialize_with = "lenient::float")]
    pub end_at: Option<f64>,
    #[serde(deserialize_with = "lenient::string")]
    pub details: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub failure_reason: Option<String>,
    #[serde(deserialize_with = "lenient::uint")]
    pub recovery_count: Option<u64>,
    #[serde(deserialize_with = "lenient::string")]
    pub current_cluster_name: Option<String>,
    #[serde(deserialize_with = "lenient::float")]
    pub cost_per_hour: Option<f64>,
    /// The job's task as its user sent it (a pipeline header document, then the task).
    #[serde(deserialize_with = "lenient::string")]
    pub user_yaml: Option<String>,
}

/// The task name and `migrated_from` tag of a stored task YAML, when it carries the tag
/// ([`super::task::MIGRATED_FROM_ENV`] in its `envs`). The text is searched first, so the
/// tasks without one (nearly all) cost no YAML parse on a refresh.
pub fn migration_tag(yaml: &str) -> Option<(Option<String>, String)> {
    if !yaml.contains(super::task::MIGRATED_FROM_ENV) {
        return None;
    }
    let docs = super::dialect::documents(yaml).ok()?;
    docs.iter().rev().find_map(|doc| {
        let origin = doc.get("envs")?.get(super::task::MIGRATED_FROM_ENV)?.as_str()?;
        let name = doc.get("name").and_then(Value::as_str).map(str::to_string);
        Some((name, origin.to_string()))
    })
}

/// Records of one listing, and how many entries were not records.
#[derive(Debug)]
pub struct Records<T> {
    pub records: Vec<T>,
    pub skipped: usize,
}

/// The records of a listing's return value: a list, or (`/jobs/queue/v2`) an object whose
/// `jobs` is the list. Anything else is no records.
pub fn records<T: for<'de> Deserialize<'de> + Default>(value: Value) -> Records<T> {
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut map) => match map.remove("jobs") {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let mut out = Records { records: Vec::with_capacity(list.len()), skipped: 0 };
    for item in list {
        match item {
            Value::Object(_) => match T::deserialize(item) {
                Ok(r) => out.records.push(r),
                Err(_) => out.skipped += 1,
            },
            _ => out.skipped += 1,
        }
    }
    out
}

/// The node names of a cluster of `nodes` nodes: `CLUSTER`, `CLUSTER:1`, …
pub fn node_names(cluster: &str, nodes: u32) -> impl Iterator<Item = String> + '_ {
    (0..nodes.max(1)).map(move |i| if i == 0 { cluster.to_string() } else { format!("{cluster}:{i}") })
}

/// The SkyPilot cluster a node belongs to (`train:1` → `train`).
pub fn cluster_of_node(node: &str) -> &str {
    node.split_once(':').map_or(node, |(c, _)| c)
}

/// Nodes are capped here: a record claiming millions of nodes is not a reason to allocate
/// millions of rows.
const MAX_NODES_PER_CLUSTER: u32 = 4096;

/// The GPU slots of one node from per-node accelerator counts; a fractional count (`L4: 0.5`)
/// is a share of one GPU.
fn gpu_slots(accelerators: &[(String, f64)]) -> Vec<GpuSlot> {
    accelerators
        .iter()
        .map(|(native, count)| {
            let name = gpu_names::canonical(native);
            let fractional = count.fract() != 0.0;
            GpuSlot {
                model: name.model,
                gpu_product: Some(native.clone()),
                shared: name.shared || fractional,
                total: saturating_u32(count.ceil()),
                allocated: 0,
                unhealthy: 0,
                utilisation: None,
            }
        })
        .collect()
}

/// The instance type in `2x AWS(p5.48xlarge, {'H100': 8})`.
fn instance_type(resources: &str) -> Option<String> {
    let (_, rest) = resources.split_once('(')?;
    let it = rest.split([',', ')']).next()?.trim();
    (!it.is_empty() && !it.contains('=')).then(|| it.to_string())
}

/// The nodes of the clusters, GPUs held by the cluster jobs that run on them.
pub fn nodes(fleet_cluster: &str, clusters: &[ClusterRecord], jobs: &[Job]) -> Vec<Node> {
    // GPUs held per node name, from the running jobs' allocations.
    let mut held: BTreeMap<&str, u32> = BTreeMap::new();
    for job in jobs.iter().filter(|j| j.state.is_active()) {
        for a in &job.gpu_allocations {
            let n = held.entry(a.node.as_str()).or_default();
            *n = n.saturating_add(a.count);
        }
    }
    let mut out = Vec::new();
    for c in clusters {
        let Some(name) = c.name.as_deref().filter(|n| !n.is_empty()) else { continue };
        let native = c.status.clone().unwrap_or_default();
        let count = c.nodes.map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX)).clamp(1, MAX_NODES_PER_CLUSTER);
        let accelerators = c.accelerators.as_deref().map(parse_accelerators).unwrap_or_default();
        let queue = if c.is_controller() { MANAGED_QUEUE.to_string() } else { name.to_string() };
        let mut features: Vec<String> = [c.cloud.clone(), c.region.clone()].into_iter().flatten().collect();
        features.extend(c.resources_str.as_deref().and_then(instance_type));
        let cpus = c.cpus.as_deref().and_then(leading_number).map(saturating_u32).unwrap_or(0);
        let memory_mb = c.memory.as_deref().and_then(leading_number).map(|gb| saturating_u64(gb * 1024.0)).unwrap_or(0);
        for node_name in node_names(name, count) {
            let mut node = Node::new(fleet_cluster, node_name, NodeState::Unknown);
            node.native_state = native.clone();
            node.gpus = gpu_slots(&accelerators);
            node.cpus_total = cpus;
            node.memory_total_mb = memory_mb;
            node.partitions = vec![queue.clone()];
            node.features = features.clone();
            node.reason_time = timestamp(c.status_updated_at);
            let mut busy = held.get(node.name.as_str()).copied().unwrap_or(0);
            for slot in &mut node.gpus {
                let take = busy.min(slot.total);
                slot.allocated = take;
                busy -= take;
            }
            node.state = match native.as_str() {
                "UP" if node.gpus_total() > 0 && node.gpus_allocated() >= node.gpus_total() => NodeState::Allocated,
                "UP" if node.gpus_allocated() > 0 => NodeState::Mixed,
                "UP" => NodeState::Idle,
                // Being provisioned, or found unhealthy: no new work either way.
                "INIT" => {
                    node.reason = c.init_status_reason.clone();
                    NodeState::Future
                }
                "STOPPED" => NodeState::PoweredDown,
                _ => NodeState::Unknown,
            };
            node.cost_per_hour = c.cost_per_hour.filter(|c| *c >= 0.0);
            out.push(node);
        }
    }
    out
}

/// SkyPilot's state of a job on a cluster → the model's.
pub fn cluster_job_state(native: &str) -> JobState {
    match native {
        "INIT" | "PENDING" => JobState::Pending,
        "SETTING_UP" | "RUNNING" => JobState::Running,
        "SUCCEEDED" => JobState::Completed,
        "FAILED" | "FAILED_SETUP" | "FAILED_DRIVER" => JobState::Failed,
        "CANCELLED" => JobState::Cancelled,
        _ => JobState::Unknown,
    }
}

/// SkyPilot's state of a managed job → the model's. Recovering (preempted, being relaunched)
/// waits again; cancelling and winding down are the job ending.
pub fn managed_job_state(native: &str) -> JobState {
    match native {
        "PENDING" | "SUBMITTED" | "STARTING" | "RECOVERING" => JobState::Pending,
        "RUNNING" => JobState::Running,
        "WINDING_DOWN" | "CANCELLING" => JobState::Completing,
        "SUCCEEDED" => JobState::Completed,
        "CANCELLED" => JobState::Cancelled,
        s if s.starts_with("FAILED") => JobState::Failed,
        _ => JobState::Unknown,
    }
}

fn set_gpus(job: &mut Job, nodes: u32, per_node: &[(String, f64)]) {
    let per: u32 = per_node.iter().fold(0u32, |n, (_, c)| n.saturating_add(saturating_u32(c.ceil())));
    job.gpus_requested = per.saturating_mul(nodes);
    job.node_count = nodes;
    if !per_node.is_empty() {
        let canon: Vec<String> = per_node.iter().map(|(n, _)| gpu_names::canonical_model(n)).collect();
        job.gpu_model = Some(canon.join(","));
        job.gpu_product = Some(per_node.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(","));
    }
}

/// The jobs of one cluster's queue.
///
/// A cluster records only the task that last started it (`last_creation_yaml`), not each
/// job's, so a `migrated_from` tag in that task is put on the first job (lowest id) of the
/// task's name: the job that launch started.
pub fn cluster_jobs(fleet_cluster: &str, cluster: &ClusterRecord, records: &[ClusterJobRecord]) -> Vec<Job> {
    let Some(name) = cluster.name.as_deref() else { return Vec::new() };
    let tagged = cluster.last_creation_yaml.as_deref().and_then(migration_tag).and_then(|(task, origin)| {
        let first = records.iter().filter(|r| r.job_name == task).filter_map(|r| r.job_id).min()?;
        Some((first, origin))
    });
    let cluster_nodes =
        cluster.nodes.map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX)).clamp(1, MAX_NODES_PER_CLUSTER);
    records
        .iter()
        .filter_map(|r| {
            let id = r.job_id?;
            let native = r.status.clone().unwrap_or_default();
            let mut job = Job::new(JobRef::new(fleet_cluster, format!("{name}:{id}")), cluster_job_state(&native));
            job.native_state = native;
            job.name = r.job_name.clone().unwrap_or_default();
            job.user = r.username.clone().unwrap_or_default();
            job.partition = name.to_string();
            job.submit_time = timestamp(r.submitted_at);
            job.start_time = timestamp(r.start_at);
            job.end_time = timestamp(r.end_at);
            let (nodes, gpus) = r.resources.as_deref().map(parse_job_resources).unwrap_or((1, Vec::new()));
            let nodes = nodes.min(cluster_nodes);
            set_gpus(&mut job, nodes, &gpus);
            if job.state.is_active() {
                let per: u32 = gpus.iter().fold(0u32, |n, (_, c)| n.saturating_add(saturating_u32(c.ceil())));
                job.nodes = node_names(name, nodes).collect();
                job.gpus_allocated = job.gpus_requested;
                if per > 0 {
                    job.gpu_allocations = job
                        .nodes
                        .iter()
                        .map(|n| GpuAllocation {
                            node: n.clone(),
                            model: job.gpu_model.clone(),
                            count: per,
                            indices: Vec::new(),
                        })
                        .collect();
                }
            }
            job.workdir = r.log_path.clone();
            job.migrated_from = tagged.as_ref().filter(|(first, _)| *first == id).map(|(_, origin)| origin.clone());
            job.stdout = Some(LogHandle::new(format!("{CLUSTER_LOG_PREFIX}{name}/{id}")));
            Some(job)
        })
        .collect()
}

/// Managed jobs (one per job id: a pipeline's tasks are shown as its current task).
pub fn managed_jobs(fleet_cluster: &str, records: &[ManagedJobRecord]) -> Vec<Job> {
    let mut by_id: BTreeMap<u64, &ManagedJobRecord> = BTreeMap::new();
    for r in records {
        let Some(id) = r.job_id else { continue };
        // The task that is not finished, else the last one.
        let keep = match by_id.get(&id) {
            None => true,
            Some(old) => {
                let old_done = managed_job_state(old.status.as_deref().unwrap_or("")).is_finished();
                old_done && r.task_id >= old.task_id
            }
        };
        if keep {
            by_id.insert(id, r);
        }
    }
    by_id
        .into_iter()
        .map(|(id, r)| {
            let native = r.status.clone().unwrap_or_default();
            let mut job = Job::new(JobRef::new(fleet_cluster, id.to_string()), managed_job_state(&native));
            job.native_state = native;
            job.name = r.job_name.clone().or_else(|| r.task_name.clone()).unwrap_or_default();
            job.user = r.user_name.clone().unwrap_or_default();
            job.partition = MANAGED_QUEUE.to_string();
            job.submit_time = timestamp(r.submitted_at);
            job.start_time = timestamp(r.start_at);
            job.end_time = timestamp(r.end_at);
            let (nodes, from_resources) = r.resources.as_deref().map(parse_job_resources).unwrap_or((1, Vec::new()));
            let per_node = if r.accelerators.is_empty() { from_resources } else { r.accelerators.clone() };
            set_gpus(&mut job, nodes, &per_node);
            if job.state.is_active() {
                job.gpus_allocated = job.gpus_requested;
                job.nodes = r.current_cluster_name.iter().cloned().collect();
            } else if job.state.is_finished() && job.start_time.is_some() && job.end_time.is_some() {
                // It ran, on what it asked for, at its price: what a usage window counts of it.
                job.gpus_allocated = job.gpus_requested;
            }
            job.reason = match job.state {
                JobState::Failed => r.failure_reason.clone().or_else(|| r.details.clone()),
                _ if r.status.as_deref() == Some("RECOVERING") => Some(match r.recovery_count {
                    Some(n) => format!("recovering after preemption (recovery {n})"),
                    None => "recovering after preemption".into(),
                }),
                _ => r.details.clone(),
            };
            job.account = r.infra.clone();
            job.cost_per_hour = r.cost_per_hour.filter(|c| *c >= 0.0);
            job.stdout = Some(LogHandle::new(format!("{MANAGED_LOG_PREFIX}{id}")));
            job.migrated_from = r.user_yaml.as_deref().and_then(migration_tag).map(|(_, origin)| origin);
            job
        })
        .collect()
}

/// Where a log handle of this backend points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    ClusterJob { cluster: String, job_id: u64 },
    ManagedJob { job_id: u64 },
}

pub fn parse_log_handle(locator: &str) -> Option<LogTarget> {
    if let Some(rest) = locator.strip_prefix(MANAGED_LOG_PREFIX) {
        return Some(LogTarget::ManagedJob { job_id: rest.parse().ok()? });
    }
    let rest = locator.strip_prefix(CLUSTER_LOG_PREFIX)?;
    let (cluster, id) = rest.rsplit_once('/')?;
    if cluster.is_empty() {
        return None;
    }
    Some(LogTarget::ClusterJob { cluster: cluster.to_string(), job_id: id.parse().ok()? })
}

/// What a job id names: a job on a cluster (`CLUSTER:ID`) or a managed job (`ID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobTarget {
    OnCluster { cluster: String, job_id: u64 },
    Managed { job_id: u64 },
}

pub fn parse_job_id(id: &str) -> Option<JobTarget> {
    match id.rsplit_once(':') {
        Some((cluster, n)) if !cluster.is_empty() => {
            Some(JobTarget::OnCluster { cluster: cluster.to_string(), job_id: n.parse().ok()? })
        }
        Some(_) => None,
        None => Some(JobTarget::Managed { job_id: id.parse().ok()? }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(v: Value) -> ClusterRecord {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn accelerators_as_the_server_writes_them() {
        assert_eq!(parse_accelerators("{'H100': 8}"), vec![("H100".to_string(), 8.0)]);
        assert_eq!(parse_accelerators("{'L4': 0.5, 'A100': 1}"), vec![("L4".into(), 0.5), ("A100".into(), 1.0)]);
        assert_eq!(parse_accelerators("H100:2"), vec![("H100".to_string(), 2.0)]);
        assert!(parse_accelerators("{}").is_empty());
        assert_eq!(parse_job_resources("2x[H100:8]"), (2, vec![("H100".to_string(), 8.0)]));
        assert_eq!(parse_job_resources("1x[CPU:4]"), (1, vec![]));
        assert_eq!(parse_job_resources("3x[cpus=8, A100-80GB:4]"), (3, vec![("A100-80GB".to_string(), 4.0)]));
        assert_eq!(parse_job_resources("99999999999x[H100:1]").0, u32::MAX);
        assert_eq!(parse_job_resources("weird"), (1, vec![]));
    }

    #[test]
    fn clusters_become_nodes_with_gpu_slots() {
        let up = cluster(json!({"name": "train", "status": "UP", "nodes": 2, "cloud": "AWS", "region": "us-east-1",
            "accelerators": "{'H100': 8}", "cpus": "192", "memory": "2048",
            "resources_str": "2x AWS(p5.48xlarge, {'H100': 8})"}));
        let init = cluster(json!({"name": "dev", "status": "INIT", "nodes": 1, "accelerators": "{'A100': 1}",
            "init_status_reason": "Launching"}));
        let stopped = cluster(json!({"name": "old", "status": "STOPPED", "accelerators": "{'L4': 0.5}"}));
        let ctl = cluster(json!({"name": "sky-jobs-controller-ab12", "status": "UP", "nodes": 1}));
        let nodes = nodes("sky", &[up, init, stopped, ctl], &[]);
        let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["train", "train:1", "dev", "old", "sky-jobs-controller-ab12"]);
        assert_eq!(nodes[1].gpus[0].model, "h100");
        assert_eq!(nodes[1].gpus[0].gpu_product.as_deref(), Some("H100"));
        assert_eq!((nodes[1].gpus_total(), nodes[1].state), (8, NodeState::Idle));
        assert_eq!(nodes[0].features, ["AWS", "us-east-1", "p5.48xlarge"]);
        assert_eq!((nodes[0].cpus_total, nodes[0].memory_total_mb), (192, 2048 * 1024));
        assert_eq!(nodes[0].partitions, ["train"]);
        assert_eq!((nodes[2].state, nodes[2].reason.as_deref()), (NodeState::Future, Some("Launching")));
        assert!(nodes[2].is_unavailable());
        assert_eq!(nodes[3].state, NodeState::PoweredDown);
        assert!(nodes[3].gpus[0].shared && nodes[3].gpus[0].total == 1, "a half L4 is a share of one");
        assert_eq!(nodes[4].partitions, [MANAGED_QUEUE]);
        assert!(nodes[4].gpus.is_empty());
    }

    #[test]
    fn running_jobs_hold_gpus_on_their_nodes() {
        let c = cluster(json!({"name": "train", "status": "UP", "nodes": 2, "accelerators": "{'H100': 8}"}));
        let records = records::<ClusterJobRecord>(json!([
            {"job_id": 2, "job_name": "big", "username": "alice", "status": "RUNNING", "resources": "2x[H100:8]",
             "submitted_at": 1796290100.5, "start_at": 1796290130.0, "log_path": "~/sky_logs/x"},
            {"job_id": 3, "job_name": "next", "status": "PENDING", "resources": "1x[H100:4]"},
            {"job_id": 1, "status": "FAILED_SETUP", "resources": "1x[H100:1]", "end_at": 1796290080},
            "not a record",
            {"status": "RUNNING"},
        ]));
        assert_eq!(records.skipped, 1);
        let jobs = cluster_jobs("sky", &c, &records.records);
        assert_eq!(jobs.len(), 3, "a record without a job id is no job");
        let big = &jobs[0];
        assert_eq!(big.job_ref.id, "train:2");
        assert_eq!((big.state, big.gpus_requested, big.gpus_allocated), (JobState::Running, 16, 16));
        assert_eq!(big.nodes, ["train", "train:1"]);
        assert_eq!(big.gpu_model.as_deref(), Some("h100"));
        assert_eq!(big.partition, "train");
        assert_eq!(big.submit_time.unwrap().timestamp_millis(), 1_796_290_100_500);
        assert_eq!(big.stdout.as_ref().unwrap().as_str(), "skypilot/train/2");
        assert_eq!((jobs[1].state, jobs[1].gpus_requested, jobs[1].nodes.len()), (JobState::Pending, 4, 0));
        assert_eq!(jobs[2].state, JobState::Failed);
        let nodes = nodes("sky", &[c], &jobs);
        assert_eq!((nodes[0].state, nodes[0].gpus_allocated()), (NodeState::Allocated, 8));
        assert_eq!((nodes[1].state, nodes[1].gpus_allocated()), (NodeState::Allocated, 8));
    }

    #[test]
    fn managed_jobs_in_the_controller_queue() {
        let records = records::<ManagedJobRecord>(json!({"jobs": [
            {"job_id": 7, "task_id": 0, "job_name": "ft", "status": "RUNNING", "accelerators": {"A100-80GB": 4},
             "resources": "1x[A100-80GB:4]", "current_cluster_name": "ft-7", "infra": "GCP/us-central1"},
            {"job_id": 8, "task_id": 0, "job_name": "sw", "status": "RECOVERING", "recovery_count": 2,
             "resources": "1x[H100:1]"},
            {"job_id": 9, "task_id": 0, "status": "SUCCEEDED"},
            {"job_id": 9, "task_id": 1, "status": "RUNNING", "job_name": "pipe"},
            {"job_id": 6, "status": "FAILED_NO_RESOURCE", "failure_reason": "no resources", "cost_per_hour": 3.5},
        ], "total": 5}));
        let jobs = managed_jobs("sky", &records.records);
        let ids: Vec<_> = jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["6", "7", "8", "9"]);
        assert_eq!((jobs[0].state, jobs[0].reason.as_deref()), (JobState::Failed, Some("no resources")));
        assert_eq!(jobs[0].cost_per_hour, Some(3.5));
        assert_eq!(
            (jobs[1].state, jobs[1].gpus_allocated, jobs[1].gpu_model.as_deref()),
            (JobState::Running, 4, Some("a100-80gb"))
        );
        assert_eq!((jobs[1].partition.as_str(), jobs[1].nodes.as_slice()), (MANAGED_QUEUE, &["ft-7".to_string()][..]));
        assert_eq!(jobs[2].state, JobState::Pending);
        assert!(jobs[2].reason.as_deref().unwrap().contains("recovery 2"));
        assert_eq!((jobs[3].state, jobs[3].name.as_str()), (JobState::Running, "pipe"), "the task that runs");
        assert_eq!(jobs[1].stdout.as_ref().unwrap().as_str(), "skypilot-managed/7");
        assert_eq!(jobs[0].gpus_allocated, 0, "never started: held nothing");
    }

    #[test]
    fn an_ended_managed_job_that_ran_held_its_gpus_at_its_price() {
        let records = records::<ManagedJobRecord>(json!({"jobs": [
            {"job_id": 3, "task_id": 0, "job_name": "ft", "status": "SUCCEEDED", "accelerators": {"H100": 8},
             "resources": "1x[H100:8]", "start_at": 1796280000.0, "end_at": 1796287200.0, "cost_per_hour": 23.92},
        ], "total": 1}));
        let job = &managed_jobs("sky", &records.records)[0];
        assert_eq!((job.state, job.gpus_allocated, job.cost_per_hour), (JobState::Completed, 8, Some(23.92)));
        assert!(job.nodes.is_empty(), "its cluster is gone");
        let r = crate::model::JobRecord::from_job(job.clone());
        assert_eq!(r.gpu_hours, Some(16.0), "8 GPUs × 2 h");
    }

    #[test]
    fn wrong_types_and_huge_numbers_are_unknowns_not_failures() {
        let c = cluster(json!({"name": 5, "status": ["UP"], "nodes": 1e300, "cpus": -4, "memory": {"a": 1},
            "accelerators": "{'H100': 1e30}", "status_updated_at": 1e300}));
        assert_eq!(c.name.as_deref(), Some("5"));
        let nodes = nodes("sky", &[c], &[]);
        assert_eq!(nodes.len(), MAX_NODES_PER_CLUSTER as usize);
        assert_eq!((nodes[0].state, nodes[0].gpus_total(), nodes[0].cpus_total), (NodeState::Unknown, u32::MAX, 0));
        assert!(nodes[0].reason_time.is_none());
        assert!(records::<ClusterRecord>(json!("nope")).records.is_empty());
        assert!(records::<ClusterRecord>(json!({"jobs": 3})).records.is_empty());
    }

    #[test]
    fn ids_and_handles_lead_back() {
        assert_eq!(parse_job_id("train:2"), Some(JobTarget::OnCluster { cluster: "train".into(), job_id: 2 }));
        assert_eq!(parse_job_id("7"), Some(JobTarget::Managed { job_id: 7 }));
        assert_eq!(parse_job_id(":7"), None);
        assert_eq!(parse_job_id("train:x"), None);
        assert_eq!(parse_job_id("x"), None);
        assert_eq!(
            parse_log_handle("skypilot/train/2"),
            Some(LogTarget::ClusterJob { cluster: "train".into(), job_id: 2 })
        );
        assert_eq!(parse_log_handle("skypilot-managed/7"), Some(LogTarget::ManagedJob { job_id: 7 }));
        assert_eq!(parse_log_handle("pod/ns/p/c"), None);
        assert_eq!(cluster_of_node("train:1"), "train");
        assert_eq!(cluster_of_node("train"), "train");
    }

    mod no_input_panics {
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use super::super::*;

        /// Any JSON, biased towards the keys and shapes the mapper reads.
        fn json() -> impl Strategy<Value = Value> {
            let key = prop_oneof![
                Just("name".to_string()),
                Just("status".to_string()),
                Just("nodes".to_string()),
                Just("accelerators".to_string()),
                Just("resources".to_string()),
                Just("job_id".to_string()),
                Just("task_id".to_string()),
                Just("cpus".to_string()),
                Just("memory".to_string()),
                Just("submitted_at".to_string()),
                Just("jobs".to_string()),
                "[a-z_]{1,8}",
            ];
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>().prop_map(Value::from),
                prop_oneof![
                    Just("UP".to_string()),
                    Just("RUNNING".to_string()),
                    Just("{'H100': 1e308}".to_string()),
                    Just("4294967296x[H100:99999999999]".to_string()),
                    ".{0,24}",
                ]
                .prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 64, 8, move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                    prop::collection::vec((key.clone(), inner), 0..8)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn no_json_panics_the_mapper(clusters in json(), queue in json(), managed in json()) {
                let clusters = records::<ClusterRecord>(clusters);
                let queue = records::<ClusterJobRecord>(queue);
                let mut jobs = Vec::new();
                for c in &clusters.records {
                    jobs.extend(cluster_jobs("sky", c, &queue.records));
                }
                jobs.extend(managed_jobs("sky", &records::<ManagedJobRecord>(managed).records));
                let nodes = nodes("sky", &clusters.records, &jobs);
                for n in &nodes {
                    prop_assert!(n.gpus_allocated() <= n.gpus_total());
                }
            }

            #[test]
            fn no_text_panics_the_resource_parsers(text in ".{0,64}") {
                let _ = parse_accelerators(&text);
                let (nodes, _) = parse_job_resources(&text);
                prop_assert!(nodes >= 1);
                let _ = parse_job_id(&text);
                let _ = parse_log_handle(&text);
            }
        }
    }
}
