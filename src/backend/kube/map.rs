//! Kubernetes objects → the fleet's model: nodes (conditions, taints, cordon, GPUs per
//! resource), batch Jobs and bare GPU pods as jobs, Kueue ClusterQueues as queues.
//!
//! Job ids are `namespace:name` for a batch Job, `namespace:pod:name` for a pod shown on
//! its own and `namespace:word:name` for a workload (`ml:pytorchjob:train`, see
//! [`super::workloads`]); neither a namespace nor an object name can hold `:`, and a job ref
//! may not hold `/`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::{Node as KNode, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::gpu::{self, Amounts, NodeTally};
use super::kueue::{ClusterQueueInfo, QUEUE_LABEL, WorkloadInfo};
use super::workloads::volcano::QueueInfo as VolcanoQueue;
use crate::model::gpu_names;
use crate::model::{
    ExitStatus, GpuAllocation, GpuSlot, Job, JobRef, JobState, Node, NodeState, Queue, QueueQuota, Snapshot,
};

/// Annotations flightdeck writes on objects it touches.
pub const DRAIN_REASON: &str = "flightdeck.io/drain-reason";
pub const DRAIN_BY: &str = "flightdeck.io/drain-by";
pub const DRAIN_AT: &str = "flightdeck.io/drain-at";
pub const SUBMITTED_BY: &str = "flightdeck.io/submitted-by";
/// The spec's name as written (a Job's name is a DNS label made from it).
pub const NAME: &str = "flightdeck.io/name";
/// The random suffix submit appended to the Job's name.
pub const NAME_SUFFIX: &str = "flightdeck.io/name-suffix";
/// The job this one was migrated from (`JobSpec::migrated_from`, `Job::migrated_from`).
pub const MIGRATED_FROM: &str = "flightdeck.io/migrated-from";

/// GPU Feature Discovery and vendor labels.
pub const NVIDIA_PRODUCT: &str = "nvidia.com/gpu.product";
pub const AMD_PRODUCT: &str = "amd.com/gpu.product-name";

/// Node-pool labels of the common managed offerings, first match wins.
const POOL_LABELS: [&str; 6] = [
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/pool",
    "nodepool",
];

pub fn time(t: &Time) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
}

/// `namespace:name` for a Job.
pub fn job_id(namespace: &str, name: &str) -> String {
    format!("{namespace}:{name}")
}

/// `namespace:pod:name` for a pod shown as a job of its own.
pub fn pod_id(namespace: &str, name: &str) -> String {
    format!("{namespace}:pod:{name}")
}

/// What a job id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Job {
        namespace: String,
        name: String,
    },
    Pod {
        namespace: String,
        name: String,
    },
    /// A workload object or an owner of pods: `namespace:word:name` (`ml:pytorchjob:train`).
    Workload {
        namespace: String,
        word: String,
        name: String,
    },
}

pub fn parse_job_id(id: &str) -> Option<Target> {
    let mut parts = id.split(':');
    let (ns, second, third, rest) = (parts.next()?, parts.next()?, parts.next(), parts.next());
    let ok = |s: &str| !s.is_empty() && !s.contains('/');
    match (third, rest) {
        (None, None) if ok(ns) && ok(second) => Some(Target::Job { namespace: ns.into(), name: second.into() }),
        (Some(name), None) if second == "pod" && ok(ns) && ok(name) => {
            Some(Target::Pod { namespace: ns.into(), name: name.into() })
        }
        (Some(name), None) if ok(ns) && ok(name) && second.bytes().all(|b| b.is_ascii_lowercase() || b == b'.') => {
            Some(Target::Workload { namespace: ns.into(), word: second.into(), name: name.into() })
        }
        _ => None,
    }
}

/// The GPUs behind one resource on a node, named the fleet's way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuKind {
    /// Canonical model ([`gpu_names`]): `h100`, `1g.10gb`, `mi300x`; `gpu` without a label.
    pub model: String,
    /// The label that named it (`NVIDIA-H100-80GB-HBM3`, the MIG profile's own product label).
    pub product: Option<String>,
    /// Time-sliced: the `nvidia.com/gpu.shared` resource, or a product labelled `…-SHARED`.
    pub shared: bool,
}

impl GpuKind {
    fn from_label(product: Option<String>, shared: bool) -> GpuKind {
        let name = product.as_deref().map(gpu_names::canonical);
        let shared = shared || name.as_ref().is_some_and(|n| n.shared);
        // The canonical name's model moved, not copied: this runs for every GPU pod mapped.
        let model = name.map(|n| n.model).filter(|m| !m.is_empty()).unwrap_or_else(|| "gpu".into());
        GpuKind { model, shared, product }
    }
}

/// What the GPUs behind `resource` are on a node with these labels: GFD's product label
/// (AMD's product name) through the alias table, a MIG resource's profile, time-slicing from
/// the resource name or the `-SHARED` suffix.
pub fn gpu_kind(resource: &str, labels: Option<&BTreeMap<String, String>>) -> GpuKind {
    gpu_kind_of(resource, product_label(resource, labels))
}

/// The label that names the GPUs behind `resource` on a node with these labels (GFD's
/// product, a MIG profile's product, AMD's product name), when one does and is not empty.
fn product_label<'l>(resource: &str, labels: Option<&'l BTreeMap<String, String>>) -> Option<&'l str> {
    let labels = labels?;
    let value = match resource.strip_prefix(gpu::NVIDIA_MIG_PREFIX) {
        Some(profile) => labels.get(&format!("{}{profile}.product", gpu::NVIDIA_MIG_PREFIX)),
        None => match resource {
            gpu::NVIDIA_GPU | gpu::NVIDIA_SHARED => labels.get(NVIDIA_PRODUCT),
            gpu::AMD_GPU => labels.get(AMD_PRODUCT),
            _ => None,
        },
    };
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// [`gpu_kind`] with the resource's product label already read ([`product_label`]): the
/// kind depends on nothing else, so a count over many pods names each kind once.
fn gpu_kind_of(resource: &str, product: Option<&str>) -> GpuKind {
    let product = product.map(str::to_string);
    if let Some(profile) = resource.strip_prefix(gpu::NVIDIA_MIG_PREFIX) {
        let shared = product.as_deref().is_some_and(|p| gpu_names::canonical(p).shared);
        return GpuKind { model: profile.to_ascii_lowercase(), product, shared };
    }
    match resource {
        gpu::NVIDIA_GPU => GpuKind::from_label(product, false),
        gpu::NVIDIA_SHARED => GpuKind::from_label(product, true),
        gpu::AMD_GPU => GpuKind::from_label(product, false),
        other => GpuKind {
            model: other
                .strip_prefix(gpu::INTEL_GPU_PREFIX)
                .map(|s| format!("intel-{s}"))
                .unwrap_or_else(|| "gpu".into()),
            product: None,
            shared: false,
        },
    }
}

/// A node, with what its pods hold.
pub fn node(cluster: &str, n: &KNode, tally: Option<&NodeTally>) -> Node {
    let name = n.metadata.name.clone().unwrap_or_default();
    let labels = n.metadata.labels.as_ref();
    let annotations = n.metadata.annotations.as_ref();
    let status = n.status.as_ref();
    let capacity = status.and_then(|s| s.capacity.as_ref());
    let allocatable = status.and_then(|s| s.allocatable.as_ref());
    let cap = |r: &str| capacity.and_then(|c| c.get(r)).map(gpu::quantity_milli);
    let alloc = |r: &str| allocatable.and_then(|c| c.get(r)).map(gpu::quantity_milli);
    let empty = Amounts::default();
    let held = tally.map(|t| &t.amounts).unwrap_or(&empty);

    // GPUs: every GPU resource the node advertises, plus any its pods hold that it no longer does.
    let mut resources: BTreeSet<&str> = BTreeSet::new();
    for map in [capacity, allocatable].into_iter().flatten() {
        resources.extend(map.keys().map(String::as_str).filter(|r| gpu::is_gpu_resource(r)));
    }
    resources.extend(held.iter().map(|(r, _)| r).filter(|r| gpu::is_gpu_resource(r)));
    let mut gpus: Vec<GpuSlot> = Vec::new();
    for r in resources {
        let capacity = cap(r).or(alloc(r)).map(gpu::whole_units).unwrap_or(0);
        let allocatable = alloc(r).map(gpu::whole_units).unwrap_or(capacity);
        let allocated = gpu::whole_units(held.get(r));
        if capacity == 0 && allocated == 0 {
            continue; // MIG-mixed nodes advertise `nvidia.com/gpu: 0`
        }
        let kind = gpu_kind(r, labels);
        let slot = GpuSlot {
            model: kind.model,
            gpu_product: kind.product,
            shared: kind.shared,
            total: saturating_u32(capacity),
            allocated: saturating_u32(allocated),
            unhealthy: saturating_u32(capacity.saturating_sub(allocatable)),
            utilisation: None,
        };
        match gpus.iter_mut().find(|g| g.model == slot.model && g.shared == slot.shared) {
            Some(g) => {
                g.total = g.total.saturating_add(slot.total);
                g.allocated = g.allocated.saturating_add(slot.allocated);
                g.unhealthy = g.unhealthy.saturating_add(slot.unhealthy);
            }
            None => gpus.push(slot),
        }
    }

    let mut out = Node::new(cluster, name, NodeState::Unknown);
    out.cpus_total = (alloc(gpu::CPU).or(cap(gpu::CPU)).unwrap_or(0).max(0) / 1000) as u32;
    out.cpus_allocated = gpu::whole_units(held.get(gpu::CPU)) as u32;
    const MIB_MILLI: i64 = 1024 * 1024 * 1000;
    out.memory_total_mb = (alloc(gpu::MEMORY).or(cap(gpu::MEMORY)).unwrap_or(0).max(0) / MIB_MILLI) as u64;
    out.memory_allocated_mb = (held.get(gpu::MEMORY).max(0) as u64).div_ceil(MIB_MILLI as u64);
    out.gpus = gpus;

    // Conditions.
    let conditions = status.and_then(|s| s.conditions.as_ref());
    let cond = |t: &str| conditions.and_then(|cs| cs.iter().find(|c| c.type_ == t));
    let ready = cond("Ready");
    let ready_status = ready.map(|c| c.status.as_str()).unwrap_or("Unknown");
    let mut flags: Vec<String> = Vec::new();
    let mut reason: Option<String> = None;
    let mut reason_time: Option<DateTime<Utc>> = None;
    if ready_status != "True" {
        flags.push("NOT_READY".into());
        if ready_status == "Unknown" {
            flags.push("NOT_RESPONDING".into());
        }
        reason =
            ready.map(|c| describe(c.reason.as_deref(), c.message.as_deref()).unwrap_or_else(|| "NotReady".into()));
        reason_time = ready.and_then(|c| c.last_transition_time.as_ref()).and_then(time);
    }
    for (kind, flag) in [
        ("MemoryPressure", "MEMORY_PRESSURE"),
        ("DiskPressure", "DISK_PRESSURE"),
        ("PIDPressure", "PID_PRESSURE"),
        ("NetworkUnavailable", "NETWORK_UNAVAILABLE"),
    ] {
        if let Some(c) = cond(kind).filter(|c| c.status == "True") {
            flags.push(flag.into());
            if reason.is_none() {
                reason = Some(describe(c.reason.as_deref(), c.message.as_deref()).unwrap_or_else(|| kind.into()));
                reason_time = c.last_transition_time.as_ref().and_then(time);
            }
        }
    }

    // Cordon, drain, taints.
    let spec = n.spec.as_ref();
    let cordoned = spec.and_then(|s| s.unschedulable).unwrap_or(false);
    let drain_reason = annotations.and_then(|a| a.get(DRAIN_REASON)).filter(|_| cordoned);
    if cordoned {
        flags.push("CORDONED".into());
    }
    if let Some(why) = drain_reason {
        flags.push("DRAIN".into());
        reason = Some(why.clone());
        out.reason_user = annotations.and_then(|a| a.get(DRAIN_BY)).cloned();
        reason_time = annotations
            .and_then(|a| a.get(DRAIN_AT))
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
    }
    let mut taint_texts = Vec::new();
    for t in spec.and_then(|s| s.taints.as_ref()).into_iter().flatten() {
        let text = match t.value.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => format!("{}={v}:{}", t.key, t.effect),
            None => format!("{}:{}", t.key, t.effect),
        };
        // The node controller's taints repeat what a flag already says (CORDONED, NOT_READY,
        // MEMORY_PRESSURE …).
        let implied = [
            "node.kubernetes.io/unschedulable",
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/network-unavailable",
        ]
        .contains(&t.key.as_str());
        if !implied {
            let flag = match t.effect.as_str() {
                "NoSchedule" => Some("NO_SCHEDULE"),
                "NoExecute" => Some("NO_EXECUTE"),
                _ => None,
            };
            if let Some(flag) = flag {
                if !flags.iter().any(|f| f == flag) {
                    flags.push(flag.into());
                }
                if reason.is_none() {
                    reason = Some(format!("taint {text}"));
                    reason_time = t.time_added.as_ref().and_then(time);
                }
            }
        }
        taint_texts.push(format!("taint:{text}"));
    }

    // Base state.
    let workload_pods = tally.map(|t| t.workload_pods).unwrap_or(0);
    let gpus_usable: u32 = out.gpus.iter().map(|g| g.total.saturating_sub(g.unhealthy)).sum();
    let gpus_held = out.gpus_allocated();
    out.state = if ready_status != "True" {
        NodeState::Down
    } else if drain_reason.is_some() {
        if workload_pods > 0 { NodeState::Draining } else { NodeState::Drained }
    } else if out.gpus_total() > 0 {
        match gpus_held {
            0 => NodeState::Idle,
            n if n >= gpus_usable => NodeState::Allocated,
            _ => NodeState::Mixed,
        }
    } else if workload_pods == 0 {
        NodeState::Idle
    } else if out.cpus_total > 0 && out.cpus_allocated >= out.cpus_total {
        NodeState::Allocated
    } else {
        NodeState::Mixed
    };
    out.native_state = match (ready_status, cordoned) {
        ("True", false) => "Ready".into(),
        ("True", true) => "Ready,SchedulingDisabled".into(),
        ("Unknown", c) => format!("Unknown{}", if c { ",SchedulingDisabled" } else { "" }),
        (_, c) => format!("NotReady{}", if c { ",SchedulingDisabled" } else { "" }),
    };
    out.flags = flags;
    out.reason = reason;
    out.reason_time = reason_time;
    out.partitions = POOL_LABELS.iter().find_map(|k| labels.and_then(|l| l.get(*k))).cloned().into_iter().collect();
    let mut features = Vec::new();
    for (label, prefix) in [
        ("node.kubernetes.io/instance-type", "instance-type"),
        ("topology.kubernetes.io/zone", "zone"),
        ("nvidia.com/gpu.memory", "gpu-memory-mb"),
        ("nvidia.com/gpu.replicas", "gpu-replicas"),
    ] {
        if let Some(v) = labels.and_then(|l| l.get(label)) {
            features.push(format!("{prefix}={v}"));
        }
    }
    features.extend(taint_texts);
    out.features = features;
    out
}

pub(crate) fn describe(reason: Option<&str>, message: Option<&str>) -> Option<String> {
    let reason = reason.filter(|r| !r.is_empty());
    let message = message.map(str::trim).filter(|m| !m.is_empty());
    match (reason, message) {
        (Some(r), Some(m)) => Some(format!("{r}: {m}")),
        (Some(r), None) => Some(r.to_string()),
        (None, Some(m)) => Some(m.to_string()),
        (None, None) => None,
    }
}

/// A scheduler message without its `preemption: …` tail.
fn trim_scheduler_message(message: &str) -> &str {
    let m = message.trim();
    let m = m.split(" preemption: ").next().unwrap_or(m);
    m.trim_end_matches('.').trim()
}

/// Why a pod is not running yet: scheduling gates, the scheduler's verdict (its latest
/// `FailedScheduling` event, else the `PodScheduled` condition), or a waiting container.
pub fn pod_pending_reason(pod: &Pod, failed_scheduling: Option<&str>) -> Option<String> {
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    if let Some(gates) = spec.and_then(|s| s.scheduling_gates.as_ref()).filter(|g| !g.is_empty()) {
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        return Some(format!("SchedulingGated: {}", names.join(", ")));
    }
    let bound = spec.and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
    if !bound {
        let scheduled =
            status.and_then(|s| s.conditions.as_ref()).and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
        if let Some(c) = scheduled.filter(|c| c.status == "False") {
            let reason = c.reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("Unschedulable");
            let message =
                failed_scheduling.or(c.message.as_deref()).map(trim_scheduler_message).filter(|m| !m.is_empty());
            return Some(match message {
                Some(m) => format!("{reason}: {m}"),
                None => reason.to_string(),
            });
        }
        if let Some(m) = failed_scheduling {
            return Some(format!("Unschedulable: {}", trim_scheduler_message(m)));
        }
        return Some("waiting for the scheduler".into());
    }
    waiting_reason(pod).or_else(|| Some("starting".into()))
}

/// The first waiting container's reason (`ImagePullBackOff: …`, `CrashLoopBackOff`).
fn waiting_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find(|w| w.reason.as_deref().is_some_and(|r| r != "PodInitializing"))
        .and_then(|w| {
            let reason = w.reason.as_deref();
            // ContainerCreating's message is empty; image pulls say which image.
            describe(reason, w.message.as_deref().map(|m| m.lines().next().unwrap_or("")))
        })
}

/// A pod's state, native phase and reason.
pub fn pod_state(pod: &Pod, failed_scheduling: Option<&str>) -> (JobState, String, Option<String>) {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let deleting = pod.metadata.deletion_timestamp.is_some();
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .collect::<Vec<_>>();
    let oom = terminated.iter().any(|t| t.reason.as_deref() == Some("OOMKilled"));
    let pod_reason = status.and_then(|s| describe(s.reason.as_deref(), s.message.as_deref()));
    match phase {
        "Pending" if deleting => (JobState::Cancelled, "Pending,Terminating".into(), Some("deleting".into())),
        "Pending" => (JobState::Pending, phase.into(), pod_pending_reason(pod, failed_scheduling)),
        "Running" if deleting => (JobState::Completing, "Running,Terminating".into(), Some("terminating".into())),
        "Running" => (JobState::Running, phase.into(), waiting_reason(pod)),
        "Succeeded" => (JobState::Completed, phase.into(), None),
        "Failed" => {
            let reason_word = status.and_then(|s| s.reason.as_deref());
            let state = if oom {
                JobState::OutOfMemory
            } else if reason_word == Some("DeadlineExceeded") {
                JobState::Timeout
            } else if matches!(reason_word, Some("Evicted" | "Preempting" | "Terminated")) {
                JobState::Preempted
            } else {
                JobState::Failed
            };
            let reason = pod_reason.or_else(|| {
                terminated
                    .iter()
                    .find(|t| t.exit_code != 0)
                    .and_then(|t| describe(t.reason.as_deref(), t.message.as_deref()))
            });
            (state, phase.into(), reason)
        }
        other => (JobState::Unknown, other.into(), pod_reason),
    }
}

pub(crate) fn pod_exit(pod: &Pod) -> Option<ExitStatus> {
    let status = pod.status.as_ref()?;
    let terminated: Vec<_> =
        status.container_statuses.iter().flatten().filter_map(|c| c.state.as_ref()?.terminated.as_ref()).collect();
    let t = terminated.iter().find(|t| t.exit_code != 0).or(terminated.first())?;
    Some(ExitStatus { code: t.exit_code, signal: t.signal })
}

/// Where a pod's output is read from: `pod/<namespace>/<name>/<container>`.
pub fn log_path(pod: &Pod) -> Option<String> {
    let container = pod.spec.as_ref()?.containers.first()?.name.as_str();
    let (ns, name) = (pod.metadata.namespace.as_deref()?, pod.metadata.name.as_deref()?);
    // Pushed into one allocation, not `format!`ted: this runs for every pod of every workload
    // mapped, where the formatting machinery was a visible share of the cost.
    let mut path = String::with_capacity("pod///".len() + ns.len() + name.len() + container.len());
    for part in ["pod/", ns, "/", name, "/", container] {
        path.push_str(part);
    }
    Some(path)
}

/// Looks up facts the mapping needs beyond the object itself.
pub trait Lookup {
    /// The latest `FailedScheduling` message for a pod.
    fn failed_scheduling(&self, namespace: &str, pod: &str) -> Option<&str>;
    /// A node's labels, which name its GPUs (see [`gpu_kind`]); `None` for a node not known.
    fn node_labels(&self, node: &str) -> Option<&BTreeMap<String, String>>;
    /// The ClusterQueue behind a namespace's LocalQueue.
    fn cluster_queue_of(&self, namespace: &str, local_queue: &str) -> Option<&str>;
}

/// GPUs held by `pods`, per node and canonical model; the nodes; the native products held.
pub(crate) fn gpu_allocations(pods: &[&Pod], lookup: &dyn Lookup) -> (Vec<GpuAllocation>, Vec<String>, Vec<String>) {
    let demands: Vec<Amounts> = pods.iter().map(|p| gpu::pod_demand(p)).collect();
    gpu_allocations_of(pods, &demands, lookup)
}

/// [`gpu_allocations`] with each pod's demand (`gpu::pod_demand`, same order) already read:
/// a workload reads its pods' demands once for this, its pod list and its totals.
pub(crate) fn gpu_allocations_of<D: std::borrow::Borrow<Amounts>>(
    pods: &[&Pod],
    demands: &[D],
    lookup: &dyn Lookup,
) -> (Vec<GpuAllocation>, Vec<String>, Vec<String>) {
    // Each kind of GPU named once per call, by resource and product label: a workload's pods
    // sit on nodes of one or two kinds, and naming a kind (the alias table, its strings) per
    // pod was the larger part of this count. Node names and models are borrowed while
    // counting, copied once each at the end: this runs for every pod of every workload mapped.
    let mut kinds: Vec<(&str, Option<&str>, GpuKind)> = Vec::new();
    let mut held: Vec<(&str, usize, u64)> = Vec::with_capacity(pods.len());
    let mut nodes: BTreeSet<&str> = BTreeSet::new();
    for (pod, demand) in pods.iter().zip(demands) {
        let Some(node) = gpu::holding_node(pod) else { continue };
        nodes.insert(node);
        let labels = lookup.node_labels(node);
        for (resource, count) in demand.borrow().gpu_resources() {
            let product = product_label(resource, labels);
            let at = match kinds.iter().position(|(r, p, _)| *r == resource && *p == product) {
                Some(at) => at,
                None => {
                    kinds.push((resource, product, gpu_kind_of(resource, product)));
                    kinds.len() - 1
                }
            };
            held.push((node, at, count));
        }
    }
    let mut by_node: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for (node, at, count) in held {
        let sum = by_node.entry((node, kinds[at].2.model.as_str())).or_default();
        *sum = sum.saturating_add(u32::try_from(count).unwrap_or(u32::MAX));
    }
    let allocs = by_node
        .into_iter()
        .map(|((node, model), count)| GpuAllocation {
            node: node.to_string(),
            model: Some(model.to_string()),
            count,
            indices: Vec::new(),
        })
        .collect();
    let products: BTreeSet<&str> = kinds.iter().filter_map(|(_, _, k)| k.product.as_deref()).collect();
    (allocs, nodes.into_iter().map(str::to_string).collect(), products.into_iter().map(str::to_string).collect())
}

/// The GPU a pod template asks for, `(model, product)`: a MIG profile, or the product its
/// node selector names ([`selected_product`]; the value is the product, its canonical name
/// the model).
pub(crate) fn requested_model(demand: &Amounts, product: Option<&str>) -> Option<(String, Option<String>)> {
    let mig: Vec<&str> = demand.gpu_resources().filter_map(|(r, _)| r.strip_prefix(gpu::NVIDIA_MIG_PREFIX)).collect();
    if !mig.is_empty() {
        let native = mig.join(",");
        return Some((native.to_ascii_lowercase(), Some(native)));
    }
    let product = product?;
    Some((gpu_names::canonical_model(product), Some(product.to_string())))
}

/// The GPU product a node selector asks for (GFD's label, else AMD's).
pub(crate) fn selected_product(node_selector: Option<&BTreeMap<String, String>>) -> Option<&str> {
    node_selector.and_then(|s| s.get(NVIDIA_PRODUCT).or(s.get(AMD_PRODUCT))).map(String::as_str)
}

/// A job's `(gpu_model, gpu_product)`: what it asks for, else what it holds.
pub(crate) fn job_gpu_names(
    requested: Option<(String, Option<String>)>,
    allocs: &[GpuAllocation],
    held_products: &[String],
) -> (Option<String>, Option<String>) {
    if let Some((model, product)) = requested {
        return (Some(model), product);
    }
    let models: BTreeSet<&str> = allocs.iter().filter_map(|a| a.model.as_deref()).collect();
    let model = (!models.is_empty()).then(|| models.into_iter().collect::<Vec<_>>().join(","));
    (model, (!held_products.is_empty()).then(|| held_products.join(",")))
}

/// A batch Job, with its pods and (when Kueue manages it) its Workload.
pub fn batch_job(
    cluster: &str,
    job: &KJob,
    pods: &[&Pod],
    workload: Option<&WorkloadInfo>,
    lookup: &dyn Lookup,
) -> Job {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let spec = job.spec.as_ref();
    let status = job.status.as_ref();
    let template = spec.and_then(|s| s.template.spec.as_ref());
    let labels = job.metadata.labels.as_ref();
    let queue_label =
        labels.and_then(|l| l.get(QUEUE_LABEL)).cloned().or_else(|| workload.and_then(|w| w.queue.clone()));
    let kueue_managed = queue_label.is_some() || workload.is_some();

    let conditions = status.and_then(|s| s.conditions.as_ref());
    let cond = |t: &str| conditions.and_then(|cs| cs.iter().find(|c| c.type_ == t && c.status == "True"));
    let active = status.and_then(|s| s.active).unwrap_or(0);
    let suspended = spec.and_then(|s| s.suspend).unwrap_or(false) || cond("Suspended").is_some();
    let mut pods_sorted: Vec<&Pod> = pods.to_vec();
    // By creation, then name: pods made in the same second come out of the watch cache in
    // any order, and the first one gives the job its log.
    pods_sorted.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.creation_timestamp.as_ref(), b.metadata.name.as_deref()))
    });
    let pending_pod =
        pods_sorted.iter().find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending"));
    let running = pods_sorted.iter().any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
    let pod_reason = |p: &Pod| {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let pname = p.metadata.name.as_deref().unwrap_or("");
        pod_pending_reason(p, lookup.failed_scheduling(ns, pname))
    };

    let (state, native, reason): (JobState, String, Option<String>) = if let Some(c) = cond("Complete") {
        (JobState::Completed, "Complete".into(), c.reason.clone())
    } else if let Some(c) = cond("Failed") {
        let state = match c.reason.as_deref() {
            Some("DeadlineExceeded") => JobState::Timeout,
            _ => JobState::Failed,
        };
        (state, "Failed".into(), describe(c.reason.as_deref(), c.message.as_deref()))
    } else if job.metadata.deletion_timestamp.is_some() {
        (JobState::Completing, "Terminating".into(), Some("deleting".into()))
    } else if let Some(c) = cond("FailureTarget").or(cond("SuccessCriteriaMet")) {
        (JobState::Completing, c.type_.clone(), describe(c.reason.as_deref(), c.message.as_deref()))
    } else if suspended && kueue_managed {
        let reason = workload.and_then(|w| w.reason.clone()).or_else(|| Some("Kueue: waiting for admission".into()));
        (JobState::Pending, "Suspended".into(), reason)
    } else if suspended {
        (JobState::Held, "Suspended".into(), Some("suspended (spec.suspend = true)".into()))
    } else if running {
        (JobState::Running, "Active".into(), None)
    } else if let Some(p) = pending_pod {
        (JobState::Pending, if active > 0 { "Active".into() } else { "Pending".into() }, pod_reason(p))
    } else {
        let reason = workload.and_then(|w| w.reason.clone()).or_else(|| Some("waiting for pods".into()));
        (JobState::Pending, "Pending".into(), reason)
    };

    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1).max(0) as u32;
    let completions = spec.and_then(|s| s.completions);
    let width = match completions {
        Some(c) => parallelism.min(c.max(0) as u32),
        None => parallelism,
    }
    .max(1);
    let per_pod = template.map(|t| {
        let pod = Pod { spec: Some(t.clone()), ..Pod::default() };
        gpu::pod_demand(&pod)
    });
    let per_pod = per_pod.unwrap_or_default();
    let (allocs, nodes, held_products) = gpu_allocations(&pods_sorted, lookup);

    let mut out = Job::new(JobRef::new(cluster, job_id(&ns, &name)), state);
    out.uid = job.metadata.uid.clone();
    out.name = name;
    out.user = job.metadata.annotations.as_ref().and_then(|a| a.get(SUBMITTED_BY)).cloned().unwrap_or_default();
    out.migrated_from = job.metadata.annotations.as_ref().and_then(|a| a.get(MIGRATED_FROM)).cloned();
    out.account = Some(ns.clone());
    out.partition = queue_label
        .as_deref()
        .map(|lq| {
            workload
                .and_then(|w| w.cluster_queue.as_deref())
                .or_else(|| lookup.cluster_queue_of(&ns, lq))
                .unwrap_or(lq)
                .to_string()
        })
        .unwrap_or_else(|| ns.clone());
    out.native_state = native;
    out.reason = reason;
    out.gpus_requested = saturating_u32(per_pod.gpus()).saturating_mul(width);
    out.gpus_allocated = allocs.iter().map(|a| a.count).sum();
    (out.gpu_model, out.gpu_product) = job_gpu_names(
        requested_model(&per_pod, selected_product(template.and_then(|s| s.node_selector.as_ref()))),
        &allocs,
        &held_products,
    );
    out.gpu_allocations = allocs;
    out.node_count = if nodes.is_empty() { width } else { nodes.len() as u32 };
    out.nodes = nodes;
    out.cpus = (gpu::whole_units(per_pod.get(gpu::CPU)) as u32).saturating_mul(width);
    let mem = per_pod.get(gpu::MEMORY);
    out.memory_mb = (mem > 0).then(|| (mem as u64).div_ceil(1024 * 1024 * 1000).saturating_mul(u64::from(width)));
    out.submit_time = job.metadata.creation_timestamp.as_ref().and_then(time);
    out.start_time = status.and_then(|s| s.start_time.as_ref()).and_then(time);
    out.end_time = status
        .and_then(|s| s.completion_time.as_ref())
        .and_then(time)
        .or_else(|| cond("Failed").and_then(|c| c.last_transition_time.as_ref()).and_then(time));
    out.time_limit_secs = spec.and_then(|s| s.active_deadline_seconds).map(|s| s.max(0) as u64);
    out.priority = workload
        .and_then(|w| w.priority)
        .or_else(|| template.and_then(|t| t.priority).map(i64::from))
        .map(|p| p.max(0) as u64);
    out.exit = match out.state {
        JobState::Completed => Some(ExitStatus { code: 0, signal: None }),
        s if s.is_finished() => pods_sorted.iter().rev().find_map(|p| pod_exit(p)),
        _ => None,
    };
    let newest = pods_sorted.last();
    out.stdout = newest.and_then(|p| log_path(p)).map(Into::into);
    out.workdir = template.and_then(|t| t.containers.first()).and_then(|c| c.working_dir.clone());
    out
}

/// A pod that no Job owns (or whose Job is not visible), shown as a job of its own.
pub fn bare_pod(cluster: &str, pod: &Pod, lookup: &dyn Lookup) -> Job {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let (state, native, reason) = pod_state(pod, lookup.failed_scheduling(&ns, &name));
    let demand = gpu::pod_demand(pod);
    let (allocs, nodes, held_products) = gpu_allocations(&[pod], lookup);
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let queue = pod.metadata.labels.as_ref().and_then(|l| l.get(QUEUE_LABEL));

    let mut out = Job::new(JobRef::new(cluster, pod_id(&ns, &name)), state);
    out.uid = pod.metadata.uid.clone();
    out.name = name;
    out.user = pod.metadata.annotations.as_ref().and_then(|a| a.get(SUBMITTED_BY)).cloned().unwrap_or_default();
    out.migrated_from = pod.metadata.annotations.as_ref().and_then(|a| a.get(MIGRATED_FROM)).cloned();
    out.account = Some(ns.clone());
    out.partition =
        queue.map(|lq| lookup.cluster_queue_of(&ns, lq).unwrap_or(lq).to_string()).unwrap_or_else(|| ns.clone());
    out.native_state = native;
    out.reason = reason;
    out.gpus_requested = demand.gpus() as u32;
    out.gpus_allocated = allocs.iter().map(|a| a.count).sum();
    (out.gpu_model, out.gpu_product) = job_gpu_names(
        requested_model(&demand, selected_product(spec.and_then(|s| s.node_selector.as_ref()))),
        &allocs,
        &held_products,
    );
    out.gpu_allocations = allocs;
    out.node_count = 1;
    out.nodes = nodes;
    out.cpus = gpu::whole_units(demand.get(gpu::CPU)) as u32;
    let mem = demand.get(gpu::MEMORY);
    out.memory_mb = (mem > 0).then(|| (mem as u64).div_ceil(1024 * 1024 * 1000));
    out.submit_time = pod.metadata.creation_timestamp.as_ref().and_then(time);
    out.start_time = status.and_then(|s| s.start_time.as_ref()).and_then(time);
    if state.is_finished() {
        out.end_time = status
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
            .filter_map(time)
            .max();
        out.exit = pod_exit(pod);
    }
    out.time_limit_secs = spec.and_then(|s| s.active_deadline_seconds).map(|s| s.max(0) as u64);
    out.priority = spec.and_then(|s| s.priority).map(|p| p.max(0) as u64);
    out.stdout = log_path(pod).map(Into::into);
    out.workdir = spec.and_then(|s| s.containers.first()).and_then(|c| c.working_dir.clone());
    out
}

/// The Job that controls a pod, `(namespace, name)`.
pub fn owning_job(pod: &Pod) -> Option<(&str, &str)> {
    let owner =
        pod.metadata.owner_references.as_ref()?.iter().find(|o| o.kind == "Job" && o.controller == Some(true))?;
    Some((pod.metadata.namespace.as_deref().unwrap_or(""), owner.name.as_str()))
}

/// Queues: node pools and namespaces from [`Snapshot::derive_queues`], then each Kueue
/// ClusterQueue with its GPU quota as the total and its admitted usage as allocated.
pub fn queues(snap: &mut Snapshot, cluster_queues: &[ClusterQueueInfo], volcano: &[VolcanoQueue]) {
    snap.derive_queues();
    let mut by_name: HashMap<String, usize> =
        snap.queues.iter().enumerate().map(|(i, q)| (q.name.clone(), i)).collect();
    for cq in cluster_queues {
        let i = *by_name.entry(cq.name.clone()).or_insert_with(|| {
            snap.queues.push(Queue { cluster: snap.cluster.clone(), name: cq.name.clone(), ..Queue::default() });
            snap.queues.len() - 1
        });
        let q = &mut snap.queues[i];
        q.cohort = cq.cohort.clone();
        q.workloads_pending = cq.pending_workloads;
        q.workloads_admitted = cq.admitted_workloads;
        q.quota = cq
            .quotas
            .iter()
            .map(|f| QueueQuota {
                flavor: f.flavor.clone(),
                resource: f.resource.clone(),
                nominal_milli: f.nominal,
                borrowing_limit_milli: f.borrowing_limit,
                used_milli: f.used,
                borrowed_milli: f.borrowed,
            })
            .collect();
        q.gpus_total = cq.gpu_quota() as u32;
        q.gpus_allocated = cq.gpu_used() as u32;
        if cq.inactive_reason.is_some() {
            q.gpus_unavailable = q.gpus_total.saturating_sub(q.gpus_allocated);
        }
    }
    // Volcano's Queues: capability is the most the queue may hold, deserved its share; read
    // as Kueue's nominal quota and borrowing limit so one queue screen shows both.
    for vq in volcano {
        let i = *by_name.entry(vq.name.clone()).or_insert_with(|| {
            snap.queues.push(Queue { cluster: snap.cluster.clone(), name: vq.name.clone(), ..Queue::default() });
            snap.queues.len() - 1
        });
        let q = &mut snap.queues[i];
        let share = vq.gpu_deserved.or(vq.gpu_capability).unwrap_or(0);
        q.quota = vq
            .gpu_resources
            .iter()
            .take(1)
            .map(|r| QueueQuota {
                flavor: "volcano".into(),
                resource: r.clone(),
                nominal_milli: share,
                borrowing_limit_milli: vq.gpu_capability.map(|c| c.saturating_sub(share).max(0)),
                used_milli: vq.gpu_allocated,
                borrowed_milli: vq.gpu_allocated.saturating_sub(share).max(0),
            })
            .collect();
        q.gpus_total = saturating_u32(vq.gpu_total());
        q.gpus_allocated = saturating_u32(gpu::whole_units(vq.gpu_allocated));
        q.workloads_pending = vq.pending.saturating_add(vq.inqueue);
        q.workloads_admitted = vq.running;
        if !vq.is_open() {
            q.gpus_unavailable = q.gpus_total.saturating_sub(q.gpus_allocated);
        }
    }
    snap.queues.sort_by(|a, b| a.name.cmp(&b.name));
}

/// A count from the API as a `u32`: a quantity too large for one is the largest, not a
/// wrapped-around small number (`as u32` would turn 2^32 GPUs into 0).
pub(crate) fn saturating_u32<T: TryInto<u32>>(n: T) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct NoLookup;
    impl Lookup for NoLookup {
        fn failed_scheduling(&self, _: &str, pod: &str) -> Option<&str> {
            (pod == "stuck").then_some(
                "0/7 nodes are available: 3 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {gpu: bad}. preemption: 0/7 nodes are available: 7 No preemption victims found.",
            )
        }
        fn node_labels(&self, _: &str) -> Option<&BTreeMap<String, String>> {
            static LABELS: std::sync::LazyLock<BTreeMap<String, String>> =
                std::sync::LazyLock::new(|| [(NVIDIA_PRODUCT.to_string(), "NVIDIA-H100-80GB-HBM3".to_string())].into());
            Some(&LABELS)
        }
        fn cluster_queue_of(&self, _: &str, lq: &str) -> Option<&str> {
            (lq == "team-a").then_some("cq-a")
        }
    }

    fn kube<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn gpu_node(extra: serde_json::Value) -> KNode {
        let mut v = json!({
            "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "karpenter.sh/nodepool": "a100"}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": "8"},
                "allocatable": {"cpu": "95500m", "memory": "990Gi", "nvidia.com/gpu": "7"},
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]
            }
        });
        json_merge(&mut v, extra);
        kube(v)
    }

    fn json_merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    json_merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn tally(gpus: i64, workload_pods: u32) -> NodeTally {
        let mut amounts = Amounts::default();
        amounts.add("nvidia.com/gpu", gpus * 1000);
        amounts.add("cpu", 10_500);
        amounts.add("memory", 3 * 1024 * 1024 * 1000);
        NodeTally { amounts, pods: workload_pods, workload_pods }
    }

    #[test]
    fn gpu_node_with_an_unhealthy_device() {
        let n = node("k", &gpu_node(json!({})), Some(&tally(3, 2)));
        assert_eq!(n.gpus.len(), 1);
        let g = &n.gpus[0];
        assert_eq!((g.model.as_str(), g.total, g.allocated, g.unhealthy), ("a100-80gb", 8, 3, 1));
        assert_eq!((g.gpu_product.as_deref(), g.shared), (Some("NVIDIA-A100-SXM4-80GB"), false));
        assert_eq!(n.state, NodeState::Mixed);
        assert_eq!(n.native_state, "Ready");
        assert!(n.flags.is_empty(), "{:?}", n.flags);
        assert_eq!((n.cpus_total, n.cpus_allocated), (95, 11));
        assert_eq!((n.memory_total_mb, n.memory_allocated_mb), (990 * 1024, 3));
        assert_eq!(n.partitions, vec!["a100".to_string()]);
        // All usable GPUs held → allocated.
        assert_eq!(node("k", &gpu_node(json!({})), Some(&tally(7, 2))).state, NodeState::Allocated);
        assert_eq!(node("k", &gpu_node(json!({})), None).state, NodeState::Idle);
    }

    #[test]
    fn cordoned_drained_not_ready_and_tainted() {
        let n = node(
            "k",
            &gpu_node(json!({"spec": {"unschedulable": true, "taints": [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}})),
            Some(&tally(1, 1)),
        );
        assert_eq!(n.flags, vec!["CORDONED"]);
        assert_eq!(n.native_state, "Ready,SchedulingDisabled");
        assert!(n.is_unavailable());
        assert_eq!(n.state, NodeState::Mixed);

        let drained = gpu_node(json!({"metadata": {"annotations": {DRAIN_REASON: "bad HBM", DRAIN_BY: "alice"}},
            "spec": {"unschedulable": true}}));
        let n = node("k", &drained, Some(&tally(1, 1)));
        assert_eq!(n.state, NodeState::Draining);
        assert_eq!(n.flags, vec!["CORDONED", "DRAIN"]);
        assert_eq!(n.reason.as_deref(), Some("bad HBM"));
        assert_eq!(n.reason_user.as_deref(), Some("alice"));
        assert_eq!(node("k", &drained, Some(&tally(0, 0))).state, NodeState::Drained);

        let sick = gpu_node(json!({
            "spec": {"taints": [{"key": "nvidia.com/gpu.health", "value": "xid-79", "effect": "NoExecute"}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "PLEG is not healthy"},
                {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory"},
                {"type": "DiskPressure", "status": "True"}]}}));
        let n = node("k", &sick, None);
        assert_eq!(n.state, NodeState::Down);
        assert_eq!(n.flags, vec!["NOT_READY", "MEMORY_PRESSURE", "DISK_PRESSURE", "NO_EXECUTE"]);
        assert_eq!(n.reason.as_deref(), Some("KubeletNotReady: PLEG is not healthy"));
        assert!(n.features.contains(&"taint:nvidia.com/gpu.health=xid-79:NoExecute".to_string()));

        let gone = gpu_node(json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}));
        let n = node("k", &gone, None);
        assert_eq!(n.flags, vec!["NOT_READY", "NOT_RESPONDING"]);
        assert_eq!(n.native_state, "Unknown");
    }

    #[test]
    fn mig_shared_and_amd_models() {
        let mig: KNode = kube(
            json!({"metadata": {"name": "mig", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}},
            "status": {"capacity": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "14", "nvidia.com/mig-3g.20gb": "2"},
                       "allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "14", "nvidia.com/mig-3g.20gb": "2"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        let mut t = NodeTally::default();
        t.amounts.add("nvidia.com/mig-1g.5gb", 3000);
        let n = node("k", &mig, Some(&t));
        let models: Vec<(&str, u32, u32)> = n.gpus.iter().map(|g| (g.model.as_str(), g.total, g.allocated)).collect();
        assert_eq!(models, vec![("1g.5gb", 14, 3), ("3g.20gb", 2, 0)]);

        let kind = |model: &str, product: Option<&str>, shared: bool| GpuKind {
            model: model.into(),
            product: product.map(Into::into),
            shared,
        };
        assert_eq!(gpu_kind("nvidia.com/gpu.shared", None), kind("gpu", None, true));
        // Time-sliced two ways: the renamed resource, or GFD's `-SHARED` product suffix.
        let t4: BTreeMap<String, String> = [(NVIDIA_PRODUCT.to_string(), "Tesla-T4".to_string())].into();
        assert_eq!(gpu_kind("nvidia.com/gpu.shared", Some(&t4)), kind("t4", Some("Tesla-T4"), true));
        let labels: BTreeMap<String, String> = [(NVIDIA_PRODUCT.to_string(), "Tesla-T4-SHARED".to_string())].into();
        assert_eq!(gpu_kind("nvidia.com/gpu", Some(&labels)), kind("t4", Some("Tesla-T4-SHARED"), true));
        assert_eq!(gpu_kind("nvidia.com/gpu.shared", Some(&labels)), kind("t4", Some("Tesla-T4-SHARED"), true));
        let amd: BTreeMap<String, String> = [(AMD_PRODUCT.to_string(), "AMD_Instinct_MI300X_OAM".to_string())].into();
        assert_eq!(gpu_kind("amd.com/gpu", Some(&amd)), kind("mi300x", Some("AMD_Instinct_MI300X_OAM"), false));
        assert_eq!(gpu_kind("gpu.intel.com/xe", None), kind("intel-xe", None, false));
        let h200: BTreeMap<String, String> = [(NVIDIA_PRODUCT.to_string(), "NVIDIA-H200".to_string())].into();
        assert_eq!(gpu_kind("nvidia.com/gpu", Some(&h200)), kind("h200", Some("NVIDIA-H200"), false));
        let mig: BTreeMap<String, String> =
            [("nvidia.com/mig-1g.10gb.product".to_string(), "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb".to_string())].into();
        assert_eq!(
            gpu_kind("nvidia.com/mig-1g.10gb", Some(&mig)),
            kind("1g.10gb", Some("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"), false)
        );
    }

    #[test]
    fn shares_and_whole_gpus_are_separate_slots() {
        let n: KNode = kube(json!({"metadata": {"name": "t4", "labels": {"nvidia.com/gpu.product": "Tesla-T4"}},
            "status": {"capacity": {"nvidia.com/gpu": "1", "nvidia.com/gpu.shared": "4"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}));
        let n = node("k", &n, None);
        let slots: Vec<(&str, bool, u32)> = n.gpus.iter().map(|g| (g.model.as_str(), g.shared, g.total)).collect();
        assert_eq!(slots, vec![("t4", false, 1), ("t4", true, 4)]);
    }

    #[test]
    fn job_ids_round_trip() {
        assert_eq!(
            parse_job_id(&job_id("ml", "train.v2")),
            Some(Target::Job { namespace: "ml".into(), name: "train.v2".into() })
        );
        assert_eq!(parse_job_id(&pod_id("ml", "p")), Some(Target::Pod { namespace: "ml".into(), name: "p".into() }));
        assert_eq!(
            parse_job_id("ml:pytorchjob:llama"),
            Some(Target::Workload { namespace: "ml".into(), word: "pytorchjob".into(), name: "llama".into() })
        );
        for bad in ["", "ml", "ml:", ":x", "ml:X:y", "ml:1:y", "ml:pod:", "ml:jobset:", "a:b:c:d", "ml:a/b"] {
            assert_eq!(parse_job_id(bad), None, "{bad}");
        }
    }

    fn pending_pod(name: &str) -> Pod {
        kube(json!({
            "metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/7 nodes are available: 7 Insufficient nvidia.com/gpu."}]}
        }))
    }

    #[test]
    fn bare_pending_pod_says_why() {
        let j = bare_pod("k", &pending_pod("stuck"), &NoLookup);
        assert_eq!(j.job_ref.id, "ml:pod:stuck");
        assert_eq!(j.state, JobState::Pending);
        assert_eq!(
            j.reason.as_deref(),
            Some(
                "Unschedulable: 0/7 nodes are available: 3 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {gpu: bad}"
            )
        );
        assert_eq!(j.gpus_requested, 8);
        assert_eq!(j.gpus_allocated, 0);
        assert_eq!(j.partition, "ml");
        assert_eq!(j.stdout.as_deref(), Some("pod/ml/stuck/main"));
        // Without an event, the condition's message.
        let j = bare_pod("k", &pending_pod("other"), &NoLookup);
        assert_eq!(j.reason.as_deref(), Some("Unschedulable: 0/7 nodes are available: 7 Insufficient nvidia.com/gpu"));
    }

    #[test]
    fn pod_states() {
        let mut p: Pod = kube(json!({"metadata": {"name": "p", "namespace": "ml"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope\""}}}]}}));
        let (s, _, r) = pod_state(&p, None);
        assert_eq!((s, r.as_deref()), (JobState::Pending, Some("ImagePullBackOff: Back-off pulling image \"nope\"")));
        p.status = Some(kube(
            json!({"phase": "Failed", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}),
        ));
        let (s, _, _) = pod_state(&p, None);
        assert_eq!(s, JobState::OutOfMemory);
        assert_eq!(pod_exit(&p), Some(ExitStatus { code: 137, signal: None }));
        p.status =
            Some(kube(json!({"phase": "Failed", "reason": "DeadlineExceeded", "message": "Pod was active too long"})));
        assert_eq!(pod_state(&p, None).0, JobState::Timeout);
        p.status = Some(kube(json!({"phase": "Succeeded"})));
        assert_eq!(pod_state(&p, None).0, JobState::Completed);
        p.status = Some(kube(json!({"phase": "Running"})));
        p.metadata.deletion_timestamp = Some(kube(json!("2025-01-01T00:00:00Z")));
        assert_eq!(pod_state(&p, None).0, JobState::Completing);
        let gated: Pod = kube(
            json!({"metadata": {"name": "g"}, "spec": {"containers": [], "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
            "status": {"phase": "Pending"}}),
        );
        assert_eq!(pod_state(&gated, None).2.as_deref(), Some("SchedulingGated: kueue.x-k8s.io/admission"));
    }

    fn job(extra: serde_json::Value) -> KJob {
        let mut v = json!({
            "metadata": {"name": "train", "namespace": "ml", "creationTimestamp": "2025-01-01T00:00:00Z",
                "annotations": {SUBMITTED_BY: "alice"}},
            "spec": {"parallelism": 2, "activeDeadlineSeconds": 3600, "template": {"spec": {"containers": [
                {"name": "main", "workingDir": "/w", "resources": {"limits": {"nvidia.com/gpu": "4"}, "requests": {"cpu": "8", "memory": "64Gi"}}}]}}},
            "status": {}
        });
        json_merge(&mut v, extra);
        kube(v)
    }

    fn job_pod(name: &str, node: Option<&str>, phase: &str) -> Pod {
        kube(json!({
            "metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2025-01-01T00:01:00Z",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": true}]},
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
            "status": {"phase": phase}
        }))
    }

    #[test]
    fn running_job_with_pods_on_two_nodes() {
        let pods = [job_pod("train-a", Some("n1"), "Running"), job_pod("train-b", Some("n2"), "Running")];
        let refs: Vec<&Pod> = pods.iter().collect();
        let j = batch_job(
            "k",
            &job(json!({"status": {"active": 2, "startTime": "2025-01-01T00:02:00Z"}})),
            &refs,
            None,
            &NoLookup,
        );
        assert_eq!(j.job_ref.id, "ml:train");
        assert_eq!(j.state, JobState::Running);
        assert_eq!((j.gpus_requested, j.gpus_allocated), (8, 8));
        assert_eq!(j.nodes, vec!["n1".to_string(), "n2".to_string()]);
        assert_eq!(j.gpu_model.as_deref(), Some("h100"));
        assert_eq!(j.gpu_product.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
        assert_eq!(j.gpu_allocations.len(), 2);
        assert_eq!((j.cpus, j.memory_mb), (16, Some(128 * 1024)));
        assert_eq!(j.time_limit_secs, Some(3600));
        assert_eq!(j.user, "alice");
        assert_eq!(j.account.as_deref(), Some("ml"));
        assert_eq!(j.partition, "ml");
        assert_eq!(owning_job(&pods[0]), Some(("ml", "train")));
        assert!(j.stdout.as_deref().is_some_and(|p| p.starts_with("pod/ml/train-")));
        assert_eq!(j.migrated_from, None);
    }

    #[test]
    fn the_migration_annotation_is_where_a_job_came_from() {
        let none: [&Pod; 0] = [];
        let j = batch_job(
            "k",
            &job(json!({"metadata": {"annotations": {MIGRATED_FROM: "hpc/4242"}}})),
            &none,
            None,
            &NoLookup,
        );
        assert_eq!(j.migrated_from.as_deref(), Some("hpc/4242"));
        let mut pod = pending_pod("solo");
        pod.metadata.annotations = Some([(MIGRATED_FROM.to_string(), "sky/7".to_string())].into());
        assert_eq!(bare_pod("k", &pod, &NoLookup).migrated_from.as_deref(), Some("sky/7"));
    }

    #[test]
    fn job_states() {
        let none: [&Pod; 0] = [];
        let finished = job(
            json!({"status": {"conditions": [{"type": "Complete", "status": "True"}], "completionTime": "2025-01-01T01:00:00Z"}}),
        );
        let j = batch_job("k", &finished, &none, None, &NoLookup);
        assert_eq!(j.state, JobState::Completed);
        assert_eq!(j.exit, Some(ExitStatus { code: 0, signal: None }));
        assert!(j.end_time.is_some());
        let timeout =
            job(json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
            "message": "Job was active longer than specified deadline"}]}}));
        assert_eq!(batch_job("k", &timeout, &none, None, &NoLookup).state, JobState::Timeout);
        let held = job(json!({"spec": {"suspend": true}}));
        let j = batch_job("k", &held, &none, None, &NoLookup);
        assert_eq!((j.state, j.native_state.as_str()), (JobState::Held, "Suspended"));

        // Suspended under Kueue: pending, with the Workload's reason, in the ClusterQueue.
        let queued = job(json!({"metadata": {"labels": {QUEUE_LABEL: "team-a"}}, "spec": {"suspend": true}}));
        let wl = WorkloadInfo {
            reason: Some("Kueue Pending: insufficient unused quota for nvidia.com/gpu in flavor h100".into()),
            ..WorkloadInfo::default()
        };
        let j = batch_job("k", &queued, &none, Some(&wl), &NoLookup);
        assert_eq!(j.state, JobState::Pending);
        assert_eq!(j.reason, wl.reason);
        assert_eq!(j.partition, "cq-a");
        let j = batch_job("k", &queued, &none, None, &NoLookup);
        assert_eq!(j.reason.as_deref(), Some("Kueue: waiting for admission"));

        // Active but its pod cannot be scheduled.
        let pods = [job_pod("stuck", None, "Pending")];
        let refs: Vec<&Pod> = pods.iter().collect();
        let j = batch_job("k", &job(json!({"status": {"active": 1}})), &refs, None, &NoLookup);
        assert_eq!(j.state, JobState::Pending);
        assert!(j.reason.as_deref().unwrap().starts_with("Unschedulable: 0/7 nodes are available"), "{:?}", j.reason);
    }

    #[test]
    fn cluster_queues_become_queues() {
        let mut snap = Snapshot { cluster: "k".into(), ..Snapshot::default() };
        let mut j = Job::new(JobRef::new("k", "ml:a"), JobState::Pending);
        j.partition = "cq-a".into();
        j.reason = Some("Kueue Pending".into());
        snap.jobs.push(j);
        let cq = ClusterQueueInfo {
            name: "cq-a".into(),
            quotas: vec![super::super::kueue::FlavorQuota {
                flavor: "h100".into(),
                resource: "nvidia.com/gpu".into(),
                nominal: 16_000,
                used: 12_000,
                ..Default::default()
            }],
            ..ClusterQueueInfo::default()
        };
        let idle = ClusterQueueInfo { name: "cq-b".into(), ..ClusterQueueInfo::default() };
        queues(&mut snap, &[cq, idle], &[]);
        let names: Vec<&str> = snap.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, vec!["cq-a", "cq-b"]);
        let q = &snap.queues[0];
        assert_eq!((q.gpus_total, q.gpus_allocated), (16, 12));
        assert_eq!(q.jobs_by_state.get(&JobState::Pending), Some(&1));
        assert_eq!(q.pending_by_reason.get("Kueue Pending"), Some(&1));
    }
}
