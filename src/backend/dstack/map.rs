//! dstack's runs, fleets and instances → `model`.
//!
//! The wire types keep only the fields flightdeck reads, every one optional: the server
//! adds fields between releases and a record missing one is still shown. Fields whose shape
//! varies (`resources.gpu` is `"H100:2"` as written and `{name: [...], count: {min, max}}`
//! as the server echoes it; counts can be ranges) stay JSON values and are read by hand.
//! Numbers saturate; nothing here panics on any JSON (a property test holds it to that).
//!
//! * run → `Job`: id and name are the run name (unique in a project while not deleted),
//!   the fleet is the partition, `cost_per_hour` is the price of the machine its latest
//!   submission got (an ended run that started keeps it and that machine's GPUs, which
//!   usage windows count), the reason is the latest submission's termination reason and message
//!   (`no capacity: No matching fleet found…`), prefixed `retrying` while the run waits.
//! * instance → `Node`: busy/idle GPU slots (a busy instance shared in blocks holds
//!   `busy_blocks / total_blocks` of its GPUs), price, its fleet as partition.
//! * fleet → `Queue`, also when it has no instance yet.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{
    ExitStatus, GpuAllocation, GpuSlot, Job, JobRef, JobState, LogHandle, Node, NodeState, Queue, Snapshot, gpu_names,
};

/// One run of `runs/list` or `runs/get` (schema `Run-Output`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Run {
    pub id: Option<String>,
    pub project_name: Option<String>,
    pub user: Option<String>,
    pub fleet: Option<RunFleet>,
    pub submitted_at: Option<String>,
    pub status: Option<String>,
    pub status_message: Option<String>,
    pub termination_reason: Option<String>,
    pub run_spec: Option<RunSpec>,
    pub jobs: Option<Vec<RunJob>>,
    pub latest_job_submission: Option<JobSubmission>,
    pub cost: Option<f64>,
    pub error: Option<String>,
    pub deleted: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunFleet {
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunSpec {
    pub run_name: Option<String>,
    pub working_dir: Option<String>,
    /// The configuration as the server normalised it (`type: task`, `resources`, `retry` …).
    pub configuration: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunJob {
    pub job_spec: Option<JobSpecOut>,
    pub job_submissions: Option<Vec<JobSubmission>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct JobSpecOut {
    pub job_name: Option<String>,
}

/// One attempt at a job (schema `JobSubmission-Output`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct JobSubmission {
    pub id: Option<String>,
    pub submitted_at: Option<String>,
    pub finished_at: Option<String>,
    pub status: Option<String>,
    pub status_message: Option<String>,
    pub termination_reason: Option<String>,
    pub termination_reason_message: Option<String>,
    pub exit_status: Option<Value>,
    pub job_provisioning_data: Option<ProvisioningData>,
    pub error: Option<String>,
}

/// The machine a submission got (schema `JobProvisioningData`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProvisioningData {
    pub backend: Option<String>,
    pub instance_type: Option<InstanceType>,
    pub instance_id: Option<String>,
    pub hostname: Option<String>,
    pub region: Option<String>,
    pub price: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct InstanceType {
    pub name: Option<String>,
    pub resources: Option<Resources>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Resources {
    pub cpus: Option<Value>,
    pub memory_mib: Option<Value>,
    pub gpus: Option<Vec<Gpu>>,
    pub spot: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Gpu {
    pub name: Option<String>,
    pub memory_mib: Option<Value>,
}

/// One fleet of `fleets/list` (schema `Fleet-Output`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Fleet {
    pub id: Option<String>,
    pub name: Option<String>,
    pub project_name: Option<String>,
    pub status: Option<String>,
    pub instances: Option<Vec<Instance>>,
}

/// One instance of `instances/list` (schema `Instance`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Instance {
    pub id: Option<String>,
    pub project_name: Option<String>,
    pub backend: Option<String>,
    pub instance_type: Option<InstanceType>,
    pub name: Option<String>,
    pub fleet_name: Option<String>,
    pub job_name: Option<String>,
    pub hostname: Option<String>,
    pub status: Option<String>,
    pub unreachable: Option<bool>,
    pub health_status: Option<String>,
    pub termination_reason: Option<String>,
    pub termination_reason_message: Option<String>,
    pub region: Option<String>,
    pub price: Option<f64>,
    pub total_blocks: Option<Value>,
    pub busy_blocks: Option<Value>,
}

/// Records of a listing: each element read on its own, so one the server shaped oddly is
/// left out (and counted) instead of failing the whole listing.
pub fn records<T: serde::de::DeserializeOwned>(list: Vec<Value>) -> (Vec<T>, usize) {
    let mut out = Vec::with_capacity(list.len());
    let mut bad = 0;
    for item in list {
        match T::deserialize(item) {
            Ok(t) => out.push(t),
            Err(_) => bad += 1,
        }
    }
    (out, bad)
}

/// A JSON number as a `u64`, saturating (negative → 0, fractions cut, huge → `u64::MAX`);
/// numbers written as text are read too.
pub fn count(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(saturating_u64)),
        Value::String(s) => s.trim().parse::<f64>().ok().map(saturating_u64),
        _ => None,
    }
}

fn saturating_u64(f: f64) -> u64 {
    // `as` saturates for floats and maps NaN to 0.
    if f.is_nan() || f <= 0.0 { 0 } else { f as u64 }
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A count or a range (`2`, `"2"`, `"1..4"`, `{min, max}`): the least it asks for.
fn least(value: &Value) -> Option<u64> {
    match value {
        Value::Object(map) => map.get("min").and_then(count).or_else(|| map.get("max").and_then(count)),
        Value::String(s) => match s.split_once("..") {
            Some((lo, hi)) => lo.trim().parse().ok().or_else(|| hi.trim().parse().ok()),
            None => count(value),
        },
        other => count(other),
    }
}

/// A price in dollars per hour, if it is one (finite, not negative).
fn price(p: Option<f64>) -> Option<f64> {
    p.filter(|p| p.is_finite() && *p >= 0.0)
}

fn time(text: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text?).ok().map(|t| t.with_timezone(&Utc))
}

/// GPUs a configuration asks for, per node: names (as dstack writes them) and a count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuAsk {
    pub names: Vec<String>,
    pub count: u64,
}

/// `resources.gpu` in any of its forms: `"H100:2"`, `"A100,H100:1..2"`, `"24GB:2"`, `2`,
/// `{name: [...], count: {min, max}}`.
pub fn gpu_ask(gpu: &Value) -> GpuAsk {
    match gpu {
        Value::Object(map) => {
            let names = match map.get("name") {
                Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            };
            let count = map.get("count").map_or(Some(1), least).unwrap_or(1);
            GpuAsk { names, count }
        }
        Value::String(text) => {
            let mut names = Vec::new();
            let mut count = 1;
            for part in text.split(':') {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                if let Some(n) = least(&Value::String(part.to_string())) {
                    count = n;
                } else if !is_memory(part) {
                    names.extend(part.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
                }
            }
            GpuAsk { names, count }
        }
        other => GpuAsk { names: Vec::new(), count: count(other).unwrap_or(0) },
    }
}

/// `24GB`, `40GB..80GB`: a memory bound, not a GPU name.
fn is_memory(part: &str) -> bool {
    let lower = part.to_ascii_lowercase();
    lower.split("..").all(|p| p.is_empty() || p.strip_suffix("gb").is_some_and(|n| n.parse::<f64>().is_ok()))
}

/// dstack's run status → the unified state, given how it ended.
pub fn run_state(status: &str, termination_reason: Option<&str>, job_reason: Option<&str>) -> JobState {
    match status {
        "pending" | "submitted" | "provisioning" => JobState::Pending,
        "running" => JobState::Running,
        "terminating" => JobState::Completing,
        "done" => JobState::Completed,
        "failed" | "terminated" => match (termination_reason, job_reason) {
            (_, Some("max_duration_exceeded")) => JobState::Timeout,
            (_, Some("interrupted_by_no_capacity" | "instance_unreachable")) if status == "failed" => {
                JobState::Preempted
            }
            (Some("stopped_by_user" | "aborted_by_user"), _) => JobState::Cancelled,
            (Some("all_jobs_done"), _) => JobState::Completed,
            _ if status == "terminated" => JobState::Cancelled,
            _ => JobState::Failed,
        },
        _ => JobState::Unknown,
    }
}

/// A termination reason in words: `failed_to_start_due_to_no_capacity` → `no capacity`.
pub fn reason_words(reason: &str) -> String {
    let words = reason.replace('_', " ");
    words.strip_prefix("failed to start due to ").map(str::to_string).unwrap_or(words)
}

/// Why a run waits or how it ended: the latest submission's termination reason and message,
/// else the run's own; `retrying` in front while it waits to try again.
pub fn run_reason(run: &Run, state: JobState) -> Option<String> {
    let sub = run.latest_job_submission.as_ref();
    let job_reason = sub.and_then(|s| s.termination_reason.as_deref()).filter(|r| !r.is_empty());
    let job_message = sub.and_then(|s| s.termination_reason_message.as_deref().or(s.error.as_deref()));
    let mut parts: Vec<String> = Vec::new();
    if let Some(r) = job_reason {
        parts.push(reason_words(r));
    } else if let Some(r) = run.termination_reason.as_deref().filter(|r| !r.is_empty()) {
        parts.push(reason_words(r));
    }
    if let Some(m) = job_message.or(run.error.as_deref()).map(str::trim).filter(|m| !m.is_empty()) {
        parts.push(m.to_string());
    }
    let message = run.status_message.as_deref().unwrap_or("");
    if state.is_waiting() && message == "retrying" {
        parts.insert(0, "retrying".into());
    }
    let text = parts.join(": ");
    (!text.is_empty()).then(|| crate::backend::http::clean_message(&text))
}

/// A log handle for one job submission: `run/<run name>/<submission id>`.
pub fn log_handle(run_name: &str, submission_id: &str) -> LogHandle {
    LogHandle::new(format!("run/{run_name}/{submission_id}"))
}

/// `(run name, submission id)` from a handle [`log_handle`] made.
pub fn parse_log_handle(handle: &str) -> Option<(&str, &str)> {
    let rest = handle.strip_prefix("run/")?;
    let (run, sub) = rest.split_once('/')?;
    (!run.is_empty() && !sub.is_empty() && !sub.contains('/')).then_some((run, sub))
}

/// Instance names by the job they run (`instances[].job_name`), for a run's nodes.
pub type NodesByJob<'a> = HashMap<&'a str, Vec<&'a Instance>>;

pub fn nodes_by_job(instances: &[Instance]) -> NodesByJob<'_> {
    let mut out: NodesByJob<'_> = HashMap::new();
    for i in instances {
        if let Some(job) = i.job_name.as_deref() {
            out.entry(job).or_default().push(i);
        }
    }
    out
}

/// The configuration's `name`: what a run was called before flightdeck's submit added a
/// suffix to make its run name new (`dstack apply` gives both the same).
fn given_name(config: Option<&Value>) -> Option<String> {
    let name = config?.get("name")?.as_str()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// One run → one job. `None` for a soft-deleted run or one without a name.
pub fn job(cluster: &str, run: &Run, nodes_of: &NodesByJob<'_>) -> Option<Job> {
    if run.deleted == Some(true) {
        return None;
    }
    let spec = run.run_spec.as_ref();
    let name = spec.and_then(|s| s.run_name.clone()).filter(|n| !n.is_empty())?;
    let config = spec.and_then(|s| s.configuration.as_ref());
    let sub = run.latest_job_submission.as_ref();
    let status = run.status.as_deref().unwrap_or("");
    let state = run_state(status, run.termination_reason.as_deref(), sub.and_then(|s| s.termination_reason.as_deref()));
    let mut job = Job::new(JobRef::new(cluster, name.clone()), state);
    // The ref keeps the run's name (`train-llm-d3e3p`, what the server acts on); the name
    // shown is the configuration's (`train-llm`), as its submitter gave it, where it has one.
    job.name = given_name(config).unwrap_or_else(|| name.clone());
    job.user = run.user.clone().unwrap_or_default();
    job.account = run.project_name.clone();
    job.native_state = status.to_string();
    job.reason = run_reason(run, state);
    job.partition = match run.fleet.as_ref().and_then(|f| f.name.clone()) {
        Some(fleet) => fleet,
        // Not placed yet: the fleets it may go to, as the configuration names them (the
        // server stores them as `{project, name}`).
        None => config
            .and_then(|c| c.get("fleets"))
            .and_then(Value::as_array)
            .map(|fs| {
                fs.iter()
                    .filter_map(|f| f.as_str().or_else(|| f.get("name").and_then(Value::as_str)))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    };
    job.migrated_from = config
        .and_then(|c| c.get("tags"))
        .and_then(|t| t.get(super::manifest::MIGRATED_FROM_TAG))
        .and_then(Value::as_str)
        .map(str::to_string);

    let resources = config.and_then(|c| c.get("resources"));
    let nodes_asked = config.and_then(|c| c.get("nodes")).and_then(least).unwrap_or(1).max(1);
    let ask = resources.and_then(|r| r.get("gpu")).map(gpu_ask).unwrap_or_default();
    job.gpus_requested = to_u32(ask.count.saturating_mul(nodes_asked));
    if !ask.names.is_empty() {
        let models: Vec<String> = dedup(ask.names.iter().map(|n| gpu_names::canonical_model(n)));
        job.gpu_model = Some(models.join(","));
        job.gpu_product = Some(ask.names.join(","));
    }
    job.cpus = to_u32(resources.and_then(|r| r.get("cpu")).and_then(cpu_count).unwrap_or(0));
    job.memory_mb = resources.and_then(|r| r.get("memory")).and_then(least_gb).map(|gb| gb.saturating_mul(1024));
    job.node_count = to_u32(nodes_asked);
    job.time_limit_secs = config.and_then(|c| c.get("max_duration")).and_then(duration_secs);
    job.workdir = spec
        .and_then(|s| s.working_dir.clone())
        .or_else(|| config.and_then(|c| c.get("working_dir")).and_then(Value::as_str).map(str::to_string));
    job.submit_time = time(run.submitted_at.as_deref());

    if let Some(sub) = sub {
        if let Some(id) = sub.id.as_deref().filter(|id| !id.is_empty()) {
            job.stdout = Some(log_handle(&name, id));
        }
        if state.is_active() || state.is_finished() {
            job.start_time = time(sub.submitted_at.as_deref());
        }
        if state.is_finished() {
            job.end_time = time(sub.finished_at.as_deref());
        }
        job.exit = sub
            .exit_status
            .as_ref()
            .and_then(Value::as_i64)
            .map(|c| ExitStatus { code: c.clamp(i32::MIN as i64, i32::MAX as i64) as i32, signal: None });
        // An ended run keeps the price it ran at: its dollars over a usage window are counted
        // from it (`model::usage`).
        if let Some(p) = &sub.job_provisioning_data {
            job.cost_per_hour = price(p.price);
        }
    }

    // Machines: the instances that say they run one of this run's jobs, else the machine
    // the latest submission was given. An ended run that started held that machine's GPUs:
    // its GPU-hours over a usage window are counted from them (instances are now others').
    let job_names: Vec<&str> =
        run.jobs.iter().flatten().filter_map(|j| j.job_spec.as_ref().and_then(|s| s.job_name.as_deref())).collect();
    let ran = state.is_finished() && job.start_time.is_some() && job.end_time.is_some();
    if state.is_active() || ran {
        let mut allocations = Vec::new();
        for jn in job_names.iter().filter(|_| state.is_active()) {
            for inst in nodes_of.get(jn).into_iter().flatten() {
                let Some(node) = inst.name.clone() else { continue };
                let gpus = instance_gpus(inst.instance_type.as_ref());
                let held = held_gpus(inst, gpus.iter().map(|(_, n)| *n).sum());
                for (model, _) in gpus.iter().take(1) {
                    allocations.push(GpuAllocation {
                        node: node.clone(),
                        model: Some(gpu_names::canonical_model(model)),
                        count: held,
                        indices: Vec::new(),
                    });
                }
                if !job.nodes.contains(&node) {
                    job.nodes.push(node);
                }
            }
        }
        if job.nodes.is_empty()
            && let Some(p) = sub.and_then(|s| s.job_provisioning_data.as_ref())
        {
            let node = p.hostname.clone().or_else(|| p.instance_id.clone()).unwrap_or_default();
            let gpus = instance_gpus(p.instance_type.as_ref());
            let total: u32 = gpus.iter().fold(0, |n, (_, c)| n.saturating_add(*c));
            if let Some((model, _)) = gpus.first() {
                allocations.push(GpuAllocation {
                    node: node.clone(),
                    model: Some(gpu_names::canonical_model(model)),
                    count: total,
                    indices: Vec::new(),
                });
            }
            if !node.is_empty() {
                job.nodes.push(node);
            }
        }
        job.gpus_allocated = allocations.iter().fold(0u32, |n, a| n.saturating_add(a.count));
        job.gpu_allocations = allocations;
        if !job.nodes.is_empty() {
            job.node_count = to_u32(job.nodes.len() as u64);
        }
    }
    Some(job)
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// `cpu: {count: {min: 2}}`, `cpu: "2.."`, `cpu: 4`.
fn cpu_count(cpu: &Value) -> Option<u64> {
    match cpu {
        Value::Object(map) => map.get("count").and_then(least).or_else(|| least(cpu)),
        other => least(other),
    }
}

/// `memory: {min: 8.0}` (GB), `"8GB.."`, `16`.
fn least_gb(memory: &Value) -> Option<u64> {
    match memory {
        Value::String(s) => {
            let lower = s.to_ascii_lowercase();
            let lo = lower.split("..").next().unwrap_or("").trim().trim_end_matches("gb").to_string();
            lo.parse::<f64>().ok().map(saturating_u64)
        }
        other => least(other),
    }
}

/// `max_duration`: seconds as a number (how the server echoes it), `"2h"`, or `off`.
fn duration_secs(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) if s == "off" => None,
        Value::String(s) => crate::spec::parse_time_limit_secs(s).ok().or_else(|| dstack_duration(s)),
        other => count(other).filter(|n| *n > 0),
    }
}

/// dstack's own duration words: `30s`, `15m`, `2h`, `1d`, `1w`.
fn dstack_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    Some(n.saturating_mul(mult))
}

/// An instance type's GPUs by name (dstack lists one entry per GPU).
fn instance_gpus(it: Option<&InstanceType>) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for g in it.and_then(|t| t.resources.as_ref()).and_then(|r| r.gpus.as_ref()).into_iter().flatten() {
        let name = g.name.clone().unwrap_or_else(|| "gpu".into());
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c = c.saturating_add(1),
            None => out.push((name, 1)),
        }
    }
    out
}

/// GPUs a busy instance holds: all of them, or its busy share when it is split in blocks.
fn held_gpus(inst: &Instance, total: u32) -> u32 {
    let total_blocks = inst.total_blocks.as_ref().and_then(count).unwrap_or(1).max(1);
    let busy_blocks = inst.busy_blocks.as_ref().and_then(count).unwrap_or(0);
    match inst.status.as_deref() {
        Some("busy") if total_blocks <= 1 => total,
        Some("busy") | Some("idle") => {
            let held = (total as u128).saturating_mul(busy_blocks.min(total_blocks) as u128) / total_blocks as u128;
            u32::try_from(held).unwrap_or(u32::MAX)
        }
        _ => 0,
    }
}

/// One instance → one node. `None` for one without a name, or terminated.
pub fn node(cluster: &str, inst: &Instance) -> Option<Node> {
    let name = inst.name.clone().filter(|n| !n.is_empty())?;
    let status = inst.status.as_deref().unwrap_or("");
    let gpus = instance_gpus(inst.instance_type.as_ref());
    let total: u32 = gpus.iter().fold(0, |n, (_, c)| n.saturating_add(*c));
    let held = held_gpus(inst, total);
    let state = match status {
        "idle" if held > 0 => NodeState::Mixed,
        "idle" => NodeState::Idle,
        "busy" if held < total => NodeState::Mixed,
        "busy" => NodeState::Allocated,
        "pending" | "provisioning" => NodeState::Future,
        "terminating" => NodeState::PoweredDown,
        "terminated" => return None,
        _ => NodeState::Unknown,
    };
    let mut node = Node::new(cluster, name, state);
    node.native_state = status.to_string();
    if inst.unreachable == Some(true) {
        node.flags.push("NOT_RESPONDING".into());
    }
    if let Some(h) = inst.health_status.as_deref().filter(|h| !h.is_empty() && *h != "healthy") {
        node.flags.push(h.to_ascii_uppercase());
    }
    node.reason = inst
        .termination_reason_message
        .as_deref()
        .or(inst.termination_reason.as_deref())
        .map(crate::backend::http::clean_message)
        .filter(|r| !r.is_empty());
    // Held GPUs are given to the first model: dstack instances carry one GPU model.
    let mut left = held;
    for (gpu, n) in &gpus {
        let allocated = left.min(*n);
        left -= allocated;
        node.gpus.push(GpuSlot {
            model: gpu_names::canonical_model(gpu),
            gpu_product: Some(gpu.clone()),
            shared: false,
            total: *n,
            allocated,
            unhealthy: 0,
            utilisation: None,
        });
    }
    let resources = inst.instance_type.as_ref().and_then(|t| t.resources.as_ref());
    node.cpus_total = to_u32(resources.and_then(|r| r.cpus.as_ref()).and_then(count).unwrap_or(0));
    node.memory_total_mb = resources.and_then(|r| r.memory_mib.as_ref()).and_then(count).unwrap_or(0);
    if matches!(state, NodeState::Allocated) {
        node.cpus_allocated = node.cpus_total;
        node.memory_allocated_mb = node.memory_total_mb;
    }
    if let Some(fleet) = inst.fleet_name.clone().filter(|f| !f.is_empty()) {
        node.partitions.push(fleet);
    }
    for feature in [
        inst.backend.clone(),
        inst.region.clone(),
        inst.instance_type.as_ref().and_then(|t| t.name.clone()),
        resources.and_then(|r| r.spot).filter(|s| *s).map(|_| "spot".to_string()),
    ]
    .into_iter()
    .flatten()
    {
        node.features.push(feature);
    }
    node.cost_per_hour = price(inst.price);
    Some(node)
}

/// The whole picture: jobs from runs, nodes from instances, a queue per fleet.
pub fn snapshot(cluster: &str, runs: &[Run], fleets: &[Fleet], instances: &[Instance]) -> Snapshot {
    let by_job = nodes_by_job(instances);
    let mut jobs: Vec<Job> = runs.iter().filter_map(|r| job(cluster, r, &by_job)).collect();
    jobs.sort_by(|a, b| b.submit_time.cmp(&a.submit_time).then_with(|| a.job_ref.id.cmp(&b.job_ref.id)));
    // A run re-submitted under the same name shows once: the newest record.
    let mut seen = std::collections::HashSet::new();
    jobs.retain(|j| seen.insert(j.job_ref.id.clone()));
    let mut nodes: Vec<Node> = instances.iter().filter_map(|i| node(cluster, i)).collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut snap = Snapshot { cluster: cluster.to_string(), jobs, nodes, ..Snapshot::default() };
    snap.derive_queues();
    let mut queues: BTreeMap<String, Queue> = snap.queues.drain(..).map(|q| (q.name.clone(), q)).collect();
    for fleet in fleets {
        if matches!(fleet.status.as_deref(), Some("terminated")) {
            continue;
        }
        if let Some(name) = fleet.name.clone().filter(|n| !n.is_empty()) {
            queues.entry(name.clone()).or_insert_with(|| Queue {
                cluster: cluster.to_string(),
                name,
                ..Queue::default()
            });
        }
    }
    snap.queues = queues.into_values().collect();
    snap
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(v: Value) -> Run {
        serde_json::from_value(v).unwrap()
    }

    /// The pending run the real server gave for a task with `retry: no-capacity` and no fleet
    /// (dstack 0.22.5, trimmed to the fields read).
    fn retrying() -> Value {
        json!({
            "id": "c9f4bd54-cb2e-4429-aa0d-032f20d6860c", "project_name": "main", "user": "admin", "fleet": null,
            "submitted_at": "2026-12-03T11:19:56.827989Z", "status": "pending", "status_message": "retrying",
            "termination_reason": null, "deleted": false, "cost": 0.0,
            "run_spec": {"run_name": "probe-retry", "configuration": {"type": "task", "nodes": 1,
                "commands": ["echo hi"], "max_duration": 7200, "retry": {"on_events": ["no-capacity"], "duration": 3600},
                "resources": {"cpu": {"arch": null, "count": {"min": 2, "max": null}}, "memory": {"min": 8.0, "max": null},
                    "gpu": {"vendor": "nvidia", "name": ["H100"], "count": {"min": 1, "max": 1}}}}},
            "jobs": [{"job_spec": {"job_name": "probe-retry-0-0"}, "job_submissions": []}],
            "latest_job_submission": {"id": "1b2a179e-80ec-4959-b4f1-e2aca7ec58b4", "submission_num": 0,
                "submitted_at": "2026-12-03T11:19:56.829225Z", "finished_at": "2026-12-03T11:20:02.404311Z",
                "status": "failed", "status_message": "no fleets",
                "termination_reason": "failed_to_start_due_to_no_capacity",
                "termination_reason_message": "No matching fleet found. Possible reasons: https://dstack.ai/docs/guides/troubleshooting/#no-fleets",
                "exit_status": null, "job_provisioning_data": null}
        })
    }

    #[test]
    fn a_retrying_run_is_pending_with_its_reason() {
        let j = job("d", &run(retrying()), &HashMap::new()).unwrap();
        assert_eq!(j.job_ref, JobRef::new("d", "probe-retry"));
        assert_eq!((j.state, j.native_state.as_str()), (JobState::Pending, "pending"));
        assert_eq!(
            j.reason.as_deref(),
            Some(
                "retrying: no capacity: No matching fleet found. Possible reasons: https://dstack.ai/docs/guides/troubleshooting/#no-fleets"
            )
        );
        assert_eq!(
            (j.gpus_requested, j.gpu_model.as_deref(), j.gpu_product.as_deref()),
            (1, Some("h100"), Some("H100"))
        );
        assert_eq!((j.cpus, j.memory_mb, j.time_limit_secs), (2, Some(8 * 1024), Some(7200)));
        assert_eq!(j.user, "admin");
        assert_eq!(j.stdout.as_deref(), Some("run/probe-retry/1b2a179e-80ec-4959-b4f1-e2aca7ec58b4"));
        assert!(j.end_time.is_none() && j.cost_per_hour.is_none() && j.nodes.is_empty());
    }

    #[test]
    fn ends_map_to_states() {
        let f = |status: &str, run_reason: Option<&str>, job_reason: Option<&str>| {
            run_state(status, run_reason, job_reason)
        };
        assert_eq!(f("failed", Some("job_failed"), Some("failed_to_start_due_to_no_capacity")), JobState::Failed);
        assert_eq!(f("terminated", Some("stopped_by_user"), None), JobState::Cancelled);
        assert_eq!(f("done", Some("all_jobs_done"), Some("done_by_runner")), JobState::Completed);
        assert_eq!(f("terminated", Some("all_jobs_done"), None), JobState::Completed);
        assert_eq!(f("failed", Some("job_failed"), Some("max_duration_exceeded")), JobState::Timeout);
        assert_eq!(f("failed", Some("job_failed"), Some("interrupted_by_no_capacity")), JobState::Preempted);
        assert_eq!(f("terminating", Some("job_failed"), None), JobState::Completing);
        assert_eq!(f("provisioning", None, None), JobState::Pending);
        assert_eq!(f("submitted", None, None), JobState::Pending);
        assert_eq!(f("running", None, None), JobState::Running);
        assert_eq!(f("exploded", None, None), JobState::Unknown);
        assert_eq!(reason_words("failed_to_start_due_to_no_capacity"), "no capacity");
        assert_eq!(reason_words("stopped_by_user"), "stopped by user");
    }

    #[test]
    fn a_failed_run_keeps_the_no_capacity_reason_and_its_end() {
        let mut v = retrying();
        v["status"] = json!("failed");
        v["status_message"] = json!("failed");
        v["termination_reason"] = json!("job_failed");
        let j = job("d", &run(v), &HashMap::new()).unwrap();
        assert_eq!(j.state, JobState::Failed);
        assert!(j.reason.as_deref().unwrap().starts_with("no capacity: No matching fleet found"), "{:?}", j.reason);
        assert!(j.end_time.is_some());
    }

    #[test]
    fn deleted_and_nameless_runs_are_left_out() {
        let mut v = retrying();
        v["deleted"] = json!(true);
        assert!(job("d", &run(v), &HashMap::new()).is_none());
        assert!(job("d", &run(json!({"status": "running"})), &HashMap::new()).is_none());
    }

    #[test]
    fn gpu_asks_in_every_form() {
        let f = |v: Value| gpu_ask(&v);
        assert_eq!(f(json!("H100:2")), GpuAsk { names: vec!["H100".into()], count: 2 });
        assert_eq!(f(json!("A100,H100:80GB:1..4")), GpuAsk { names: vec!["A100".into(), "H100".into()], count: 1 });
        assert_eq!(f(json!("24GB:2")), GpuAsk { names: vec![], count: 2 });
        assert_eq!(f(json!(4)), GpuAsk { names: vec![], count: 4 });
        assert_eq!(f(json!({"name": ["L4"], "count": {"min": 8, "max": 8}})).count, 8);
        assert_eq!(f(json!({"name": "L4"})), GpuAsk { names: vec!["L4".into()], count: 1 });
        assert_eq!(f(json!({"count": 1e30})).count, u64::MAX);
        assert_eq!(f(json!({"count": -3})).count, 0);
        assert_eq!(dstack_duration("2h"), Some(7200));
        assert_eq!(duration_secs(&json!("off")), None);
        assert_eq!(duration_secs(&json!("1d")), Some(86_400));
    }

    #[test]
    fn numbers_saturate() {
        assert_eq!(count(&json!(1e300)), Some(u64::MAX));
        assert_eq!(count(&json!(-1)), Some(0));
        assert_eq!(count(&json!("12")), Some(12));
        assert_eq!(count(&json!(null)), None);
        let v = json!({"run_spec": {"run_name": "big", "configuration": {"nodes": 1e20,
            "resources": {"gpu": {"count": {"min": 18446744073709551615u64}}, "cpu": 1e40, "memory": 1e30}}},
            "status": "pending"});
        let j = job("d", &run(v), &HashMap::new()).unwrap();
        assert_eq!((j.gpus_requested, j.cpus, j.node_count), (u32::MAX, u32::MAX, u32::MAX));
        assert_eq!(j.memory_mb, Some(u64::MAX));
    }

    #[test]
    fn odd_records_are_counted_not_fatal() {
        let (runs, bad): (Vec<Run>, usize) =
            records(vec![retrying(), json!("not a run"), json!({"status": 5}), json!({})]);
        assert_eq!((runs.len(), bad), (2, 2));
    }

    #[test]
    fn log_handles_round_trip() {
        let h = log_handle("train", "1b2a");
        assert_eq!(parse_log_handle(&h), Some(("train", "1b2a")));
        assert_eq!(parse_log_handle("pod/ns/x"), None);
        assert_eq!(parse_log_handle("run/a/b/c"), None);
        assert_eq!(parse_log_handle("run//b"), None);
    }

    /// Any JSON at all, with the field names the mapper reads so that it goes deep.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let keys = prop::sample::select(vec![
            "id",
            "status",
            "status_message",
            "termination_reason",
            "run_spec",
            "run_name",
            "configuration",
            "resources",
            "gpu",
            "count",
            "min",
            "max",
            "name",
            "nodes",
            "cpu",
            "memory",
            "max_duration",
            "fleets",
            "jobs",
            "job_spec",
            "job_name",
            "latest_job_submission",
            "job_provisioning_data",
            "instance_type",
            "gpus",
            "cpus",
            "memory_mib",
            "price",
            "total_blocks",
            "busy_blocks",
            "deleted",
            "fleet",
            "exit_status",
            "submitted_at",
            "finished_at",
            "fleet_name",
            "unreachable",
            "health_status",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            prop::sample::select(vec![
                "running",
                "busy",
                "idle",
                "pending",
                "failed",
                "terminated",
                "H100:2",
                "1..",
                "2026-12-03T10:00:00Z",
                "off",
                "retrying",
                "16GB.."
            ])
            .prop_map(|s| json!(s)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn no_json_panics_the_mapper(runs in proptest::collection::vec(any_json(), 0..4),
                                     instances in proptest::collection::vec(any_json(), 0..4),
                                     fleets in proptest::collection::vec(any_json(), 0..3)) {
            let (runs, _): (Vec<Run>, usize) = records(runs);
            let (instances, _): (Vec<Instance>, usize) = records(instances);
            let (fleets, _): (Vec<Fleet>, usize) = records(fleets);
            let snap = snapshot("d", &runs, &fleets, &instances);
            let _ = snap.cost_per_hour();
            for r in &runs {
                if let Some(c) = r.run_spec.as_ref().and_then(|s| s.configuration.as_ref()) {
                    let _ = c.get("resources").and_then(|r| r.get("gpu")).map(gpu_ask);
                }
            }
        }
    }
}
