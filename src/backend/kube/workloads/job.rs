//! A workload (a watched object, or an owner known only from its pods' references) as one
//! job of the fleet's model: state from the object's own status, corrected by what its pods
//! do; GPUs asked for over every replica group and held over every pod; the pending reason
//! of Kueue, then of the Volcano gang, then of the first pod the scheduler has not placed.

use k8s_openapi::api::core::v1::Pod;
use kube::core::DynamicObject;

use super::super::gpu::{self, Amounts};
use super::super::kueue::{QUEUE_LABEL, WorkloadInfo};
use super::super::map::{self, Lookup};
use super::kinds::WorkloadKind;
use super::owners::OwnerKey;
use super::status::{Status, pod_role};
use super::volcano::PodGroupInfo;
use crate::model::{ExitStatus, Job, JobRef, JobState, ReplicaGroup, Workload, WorkloadPod};

/// `namespace:word:name`: `ml:pytorchjob:train-64`, `ml:vcjob:dist`, `infer:deployment:vllm`.
pub fn workload_id(namespace: &str, word: &str, name: &str) -> String {
    format!("{namespace}:{word}:{name}")
}

/// The word a kind gets in a job id: a watched kind's own, else the kind in lower case.
pub fn kind_word(api_version: &str, kind: &str) -> String {
    match WorkloadKind::of_reference(api_version, kind) {
        Some(k) => k.word().to_string(),
        None => kind.to_ascii_lowercase(),
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

fn members(pods: &[&Pod], demands: &[&Amounts], lookup: &dyn Lookup) -> Vec<WorkloadPod> {
    pods.iter()
        .zip(demands)
        .map(|(p, demand)| {
            let ns = p.metadata.namespace.as_deref().unwrap_or("");
            let name = p.metadata.name.clone().unwrap_or_default();
            let (state, native_state, reason) = map::pod_state(p, lookup.failed_scheduling(ns, &name));
            WorkloadPod {
                role: pod_role(p).map(str::to_string),
                state,
                native_state,
                node: p.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
                gpus: map::saturating_u32(demand.gpus()),
                reason,
                log: map::log_path(p).map(Into::into),
                name,
            }
        })
        .collect()
}

/// The pending reason of the first pod (by creation) the scheduler has not placed yet.
fn first_pending_reason(pods: &[&Pod], lookup: &dyn Lookup) -> Option<String> {
    let p = pods.iter().find(|p| phase(p) == "Pending")?;
    let ns = p.metadata.namespace.as_deref().unwrap_or("");
    let name = p.metadata.name.as_deref().unwrap_or("");
    let reason = map::pod_pending_reason(p, lookup.failed_scheduling(ns, name))?;
    Some(format!("{reason} (pod {name})"))
}

/// The fields every workload job shares: pods, GPUs held, nodes, log, times.
fn fill_from_pods(out: &mut Job, pods: &[&Pod], demands: &[&Amounts], lookup: &dyn Lookup) {
    let (allocs, nodes, held_products) = map::gpu_allocations_of(pods, demands, lookup);
    out.gpus_allocated = allocs.iter().map(|a| a.count).sum();
    if out.gpu_model.is_none() {
        (out.gpu_model, out.gpu_product) = map::job_gpu_names(None, &allocs, &held_products);
    }
    out.gpu_allocations = allocs;
    out.node_count = if nodes.is_empty() { out.node_count } else { nodes.len() as u32 };
    out.nodes = nodes;
    out.start_time = out
        .start_time
        .or_else(|| pods.iter().filter_map(|p| p.status.as_ref()?.start_time.as_ref()).filter_map(map::time).min());
    if out.state.is_finished() && out.exit.is_none() {
        out.exit = match out.state {
            JobState::Completed => Some(ExitStatus { code: 0, signal: None }),
            _ => pods.iter().rev().find_map(|p| map::pod_exit(p)),
        };
    }
}

/// Each pod's demand (`gpu::pod_demand`, same order), read into `read`. A workload's pods
/// come from a few templates, so a pod that asks what the one before it asks
/// (`gpu::same_demand`) shares that pod's demand instead of reading its quantities again, or
/// copying them.
fn demands<'a>(pods: &[&Pod], read: &'a mut Vec<Amounts>) -> Vec<&'a Amounts> {
    let mut at: Vec<usize> = Vec::with_capacity(pods.len());
    for (i, p) in pods.iter().enumerate() {
        match at.last() {
            Some(&last) if gpu::same_demand(pods[i - 1], p) => at.push(last),
            _ => {
                at.push(read.len());
                read.push(gpu::pod_demand(p));
            }
        }
    }
    let read: &'a [Amounts] = read;
    at.into_iter().map(|i| &read[i]).collect()
}

fn sorted<'a>(pods: &[&'a Pod]) -> Vec<&'a Pod> {
    let mut v = pods.to_vec();
    v.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.creation_timestamp.as_ref(), b.metadata.name.as_deref()))
    });
    v
}

/// What the mapping knows beside the object: its Kueue Workload and its Volcano PodGroup.
#[derive(Default, Clone, Copy)]
pub struct Beside<'a> {
    pub kueue: Option<&'a WorkloadInfo>,
    pub pod_group: Option<&'a PodGroupInfo>,
}

/// A watched workload object as a job.
pub fn workload_job(
    cluster: &str,
    kind: WorkloadKind,
    obj: &DynamicObject,
    status: &Status,
    pods: &[&Pod],
    beside: Beside<'_>,
    lookup: &dyn Lookup,
) -> Job {
    let ns = obj.metadata.namespace.clone().unwrap_or_default();
    let name = obj.metadata.name.clone().unwrap_or_default();
    let pods = sorted(pods);
    let labels = obj.metadata.labels.as_ref();
    let annotations = obj.metadata.annotations.as_ref();
    let queue_label =
        labels.and_then(|l| l.get(QUEUE_LABEL)).cloned().or_else(|| beside.kueue.and_then(|w| w.queue.clone()));
    let kueue_waiting = beside.kueue.is_some_and(|w| !w.admitted && !w.finished)
        || (queue_label.is_some() && beside.kueue.is_none() && status.suspended);

    let any_running = pods.iter().any(|p| phase(p) == "Running" && p.metadata.deletion_timestamp.is_none());
    let (mut state, mut reason) = (status.state, status.reason.clone());
    if status.suspended && kueue_waiting {
        state = JobState::Pending;
        reason = beside.kueue.and_then(|w| w.reason.clone()).or_else(|| Some("Kueue: waiting for admission".into()));
    } else if state == JobState::Pending {
        if any_running && beside.pod_group.is_none_or(|g| g.unschedulable.is_none()) {
            state = JobState::Running;
        } else {
            let gang = beside.pod_group.filter(|g| g.phase != "Running").and_then(PodGroupInfo::pending_reason);
            reason = gang
                .or_else(|| first_pending_reason(&pods, lookup))
                .or(reason)
                .or_else(|| Some("waiting for pods".into()));
        }
    }
    if state == JobState::Running && status.state == JobState::Pending && kind == WorkloadKind::LeaderWorkerSet {
        reason = status.replicas.map(|(ready, total)| format!("{ready}/{total} groups ready"));
    }

    let mut out = Job::new(JobRef::new(cluster, workload_id(&ns, kind.word(), &name)), state);
    out.uid = obj.metadata.uid.clone();
    out.name = name;
    out.user = annotations.and_then(|a| a.get(map::SUBMITTED_BY)).cloned().unwrap_or_default();
    out.migrated_from = annotations.and_then(|a| a.get(map::MIGRATED_FROM)).cloned();
    out.account = Some(ns.clone());
    out.partition = match (&queue_label, status.queue.as_ref().or(beside.pod_group.and_then(|g| g.queue.as_ref()))) {
        (Some(lq), _) => beside
            .kueue
            .and_then(|w| w.cluster_queue.as_deref())
            .or_else(|| lookup.cluster_queue_of(&ns, lq))
            .unwrap_or(lq)
            .to_string(),
        (None, Some(vq)) => vq.clone(),
        (None, None) => ns.clone(),
    };
    out.native_state = status.native.clone();
    out.reason = reason;
    let pods_asked: u32 = status.groups.iter().map(|g| g.pods).sum();
    out.gpus_requested = status
        .groups
        .iter()
        .map(|g| map::saturating_u32(g.demand.gpus()).saturating_mul(g.pods))
        .fold(0, u32::saturating_add);
    out.cpus = status
        .groups
        .iter()
        .map(|g| (gpu::whole_units(g.demand.get(gpu::CPU)) as u32).saturating_mul(g.pods))
        .fold(0, u32::saturating_add);
    let mem: u64 = status
        .groups
        .iter()
        .map(|g| (g.demand.get(gpu::MEMORY).max(0) as u64).div_ceil(1024 * 1024 * 1000) * u64::from(g.pods))
        .sum();
    out.memory_mb = (mem > 0).then_some(mem);
    if let Some(g) = status.groups.iter().find(|g| g.demand.gpus() > 0) {
        (out.gpu_model, out.gpu_product) = match map::requested_model(&g.demand, g.product.as_deref()) {
            Some((model, product)) => (Some(model), product),
            None => (None, None),
        };
    }
    out.node_count = pods_asked.max(1);
    out.submit_time = obj.metadata.creation_timestamp.as_ref().and_then(map::time);
    out.start_time = status.start;
    out.end_time = status.end.filter(|_| state.is_finished());
    out.priority = beside.kueue.and_then(|w| w.priority).map(|p| p.max(0) as u64);
    // The log shown first: the first pod of the first group (Master, Launcher, head, leader).
    let first_role = status.groups.first().map(|g| g.name.as_str());
    let main = first_role
        .and_then(|first| pods.iter().find(|p| pod_role(p).is_some_and(|r| r.eq_ignore_ascii_case(first))))
        .or(pods.first());
    out.stdout = main.and_then(|p| map::log_path(p)).map(Into::into);
    let mut read = Vec::new();
    let demands = demands(&pods, &mut read);
    fill_from_pods(&mut out, &pods, &demands, lookup);

    let ready = pods.iter().filter(|p| is_ready(p)).count() as u32;
    let (replicas_ready, replicas_total) = status.replicas.unwrap_or((ready, pods_asked.max(pods.len() as u32)));
    out.workload = Some(std::sync::Arc::new(Workload {
        kind: kind.def().kind.to_string(),
        api_version: obj.types.as_ref().map(|t| t.api_version.clone()).unwrap_or_default(),
        replicas_ready,
        replicas_total,
        groups: status
            .groups
            .iter()
            .map(|g| ReplicaGroup {
                name: g.name.clone(),
                replicas: g.pods,
                ready: g.ready,
                gpus_per_replica: map::saturating_u32(g.demand.gpus()),
            })
            .collect(),
        pods: members(&pods, &demands, lookup),
        suspend: kind.suspend_via().map(str::to_string),
        cancel: true,
    }));
    out
}

/// Pods of an owner the adapter does not watch, as one job with a state read from its pods.
pub fn owner_job(cluster: &str, key: &OwnerKey, pods: &[&Pod], lookup: &dyn Lookup) -> Job {
    let pods = sorted(pods);
    let count = |p: &str| pods.iter().filter(|x| phase(x) == p).count();
    let (running, pending, succeeded, failed) =
        (count("Running"), count("Pending"), count("Succeeded"), count("Failed"));
    let state = if running > 0 {
        JobState::Running
    } else if pending > 0 {
        JobState::Pending
    } else if failed > 0 {
        JobState::Failed
    } else if succeeded > 0 {
        JobState::Completed
    } else {
        JobState::Unknown
    };
    let summary: Vec<String> =
        [("Running", running), ("Pending", pending), ("Succeeded", succeeded), ("Failed", failed)]
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(p, n)| format!("{n} {p}"))
            .collect();
    let word = kind_word(&key.api_version, &key.kind);
    let mut out = Job::new(JobRef::new(cluster, workload_id(&key.namespace, &word, &key.name)), state);
    out.name = key.name.clone();
    out.account = Some(key.namespace.clone());
    out.partition = pods
        .iter()
        .find_map(|p| p.metadata.labels.as_ref()?.get(QUEUE_LABEL))
        .map(|lq| lookup.cluster_queue_of(&key.namespace, lq).unwrap_or(lq).to_string())
        .unwrap_or_else(|| key.namespace.clone());
    out.native_state = summary.join(", ");
    out.reason = if state == JobState::Pending { first_pending_reason(&pods, lookup) } else { None };
    let mut read = Vec::new();
    let demands = demands(&pods, &mut read);
    out.gpus_requested = demands.iter().map(|d| map::saturating_u32(d.gpus())).fold(0, u32::saturating_add);
    out.cpus = demands.iter().map(|d| gpu::whole_units(d.get(gpu::CPU)) as u32).sum();
    out.node_count = pods.len() as u32;
    out.submit_time = pods.first().and_then(|p| p.metadata.creation_timestamp.as_ref()).and_then(map::time);
    out.user =
        pods.iter().find_map(|p| p.metadata.annotations.as_ref()?.get(map::SUBMITTED_BY)).cloned().unwrap_or_default();
    out.stdout = pods.first().and_then(|p| map::log_path(p)).map(Into::into);
    fill_from_pods(&mut out, &pods, &demands, lookup);
    let known = WorkloadKind::of_reference(&key.api_version, &key.kind);
    out.workload = Some(std::sync::Arc::new(Workload {
        kind: key.kind.clone(),
        api_version: key.api_version.clone(),
        replicas_ready: pods.iter().filter(|p| is_ready(p)).count() as u32,
        replicas_total: pods.len() as u32,
        groups: Vec::new(),
        pods: members(&pods, &demands, lookup),
        suspend: known.and_then(WorkloadKind::suspend_via).map(str::to_string),
        cancel: known.is_some(),
    }));
    out
}

/// Every watched workload object that no other workload owns, as a job: built, or taken from
/// `round` while its fingerprint holds (see [`super::cache`]). `beside` gives an object's
/// Kueue Workload and Volcano PodGroup; `context` stands for what the lookups read beside.
#[allow(clippy::too_many_arguments)]
pub fn workload_jobs<'b>(
    cluster: &str,
    objects: &[(WorkloadKind, std::sync::Arc<DynamicObject>)],
    grouped: &super::owners::Grouped<'_>,
    beside: impl Fn(WorkloadKind, &DynamicObject) -> Beside<'b>,
    lookup: &dyn Lookup,
    context: u64,
    round: &mut super::cache::Round<'_>,
    out: &mut Vec<Job>,
) {
    round.reserve(objects.len());
    for (i, (kind, obj)) in objects.iter().enumerate() {
        if grouped.workloads_owned[i] {
            continue;
        }
        let pods = &grouped.workloads[i];
        let next_to = beside(*kind, obj);
        let key = match obj.metadata.uid.as_deref() {
            Some(uid) => format!("{}:{uid}", kind.word()),
            None => format!(
                "{}:{}/{}",
                kind.word(),
                obj.metadata.namespace.as_deref().unwrap_or(""),
                obj.metadata.name.as_deref().unwrap_or("")
            ),
        };
        let print = super::cache::fingerprint(obj, pods, next_to, lookup, context);
        out.push(round.job(key, print, || {
            let status = super::status::read(*kind, obj);
            workload_job(cluster, *kind, obj, &status, pods, next_to, lookup)
        }));
    }
}
