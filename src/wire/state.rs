//! A cluster's state on the wire: jobs, nodes, queues, the snapshot's own facts, health and
//! what the cluster is and can do. The cluster's name travels once, on the update that holds
//! them, so the readers here are given it.
//!
//! Every conversion names every field of the message it builds (no `..Default::default()`
//! but in `health_to_pb`, whose other fields mean nothing for that status): a field added to
//! the proto is a compile error here, not data silently left behind.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::pb;
use crate::model::{
    ArrayInfo, Capabilities, ClusterKind, ClusterState, ExitStatus, GpuAllocation, GpuSlot, Health, Job, JobRef,
    JobState, LogHandle, Node, NodeState, Queue, QueueQuota, ReplicaGroup, Snapshot, SpecFields, Verb, Workload,
    WorkloadPod,
};

/// Nanoseconds since the Unix epoch. Times outside what an `i64` of nanoseconds holds (years
/// before 1677 or after 2262, which no scheduler reports truthfully) saturate at its ends.
pub fn time_to_ns(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt().unwrap_or(if t < DateTime::UNIX_EPOCH { i64::MIN } else { i64::MAX })
}

/// The time `ns` nanoseconds after the Unix epoch; every `i64` is one.
pub fn time_from_ns(ns: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(ns)
}

fn job_state_to_pb(s: JobState) -> pb::JobState {
    match s {
        JobState::Pending => pb::JobState::Pending,
        JobState::Held => pb::JobState::Held,
        JobState::Running => pb::JobState::Running,
        JobState::Suspended => pb::JobState::Suspended,
        JobState::Completing => pb::JobState::Completing,
        JobState::Completed => pb::JobState::Completed,
        JobState::Failed => pb::JobState::Failed,
        JobState::Cancelled => pb::JobState::Cancelled,
        JobState::Timeout => pb::JobState::Timeout,
        JobState::Preempted => pb::JobState::Preempted,
        JobState::NodeFail => pb::JobState::NodeFail,
        JobState::OutOfMemory => pb::JobState::OutOfMemory,
        JobState::Unknown => pb::JobState::Unknown,
    }
}

/// A state number from a newer (or broken) peer reads as `Unknown`, never as an error.
fn job_state_from_pb(n: i32) -> JobState {
    match pb::JobState::try_from(n) {
        Ok(pb::JobState::Pending) => JobState::Pending,
        Ok(pb::JobState::Held) => JobState::Held,
        Ok(pb::JobState::Running) => JobState::Running,
        Ok(pb::JobState::Suspended) => JobState::Suspended,
        Ok(pb::JobState::Completing) => JobState::Completing,
        Ok(pb::JobState::Completed) => JobState::Completed,
        Ok(pb::JobState::Failed) => JobState::Failed,
        Ok(pb::JobState::Cancelled) => JobState::Cancelled,
        Ok(pb::JobState::Timeout) => JobState::Timeout,
        Ok(pb::JobState::Preempted) => JobState::Preempted,
        Ok(pb::JobState::NodeFail) => JobState::NodeFail,
        Ok(pb::JobState::OutOfMemory) => JobState::OutOfMemory,
        Ok(pb::JobState::Unknown | pb::JobState::Unspecified) | Err(_) => JobState::Unknown,
    }
}

fn node_state_to_pb(s: NodeState) -> pb::NodeState {
    match s {
        NodeState::Idle => pb::NodeState::Idle,
        NodeState::Mixed => pb::NodeState::Mixed,
        NodeState::Allocated => pb::NodeState::Allocated,
        NodeState::Draining => pb::NodeState::Draining,
        NodeState::Drained => pb::NodeState::Drained,
        NodeState::Down => pb::NodeState::Down,
        NodeState::Completing => pb::NodeState::Completing,
        NodeState::Reserved => pb::NodeState::Reserved,
        NodeState::Maintenance => pb::NodeState::Maintenance,
        NodeState::Future => pb::NodeState::Future,
        NodeState::PoweredDown => pb::NodeState::PoweredDown,
        NodeState::Unknown => pb::NodeState::Unknown,
    }
}

fn node_state_from_pb(n: i32) -> NodeState {
    match pb::NodeState::try_from(n) {
        Ok(pb::NodeState::Idle) => NodeState::Idle,
        Ok(pb::NodeState::Mixed) => NodeState::Mixed,
        Ok(pb::NodeState::Allocated) => NodeState::Allocated,
        Ok(pb::NodeState::Draining) => NodeState::Draining,
        Ok(pb::NodeState::Drained) => NodeState::Drained,
        Ok(pb::NodeState::Down) => NodeState::Down,
        Ok(pb::NodeState::Completing) => NodeState::Completing,
        Ok(pb::NodeState::Reserved) => NodeState::Reserved,
        Ok(pb::NodeState::Maintenance) => NodeState::Maintenance,
        Ok(pb::NodeState::Future) => NodeState::Future,
        Ok(pb::NodeState::PoweredDown) => NodeState::PoweredDown,
        Ok(pb::NodeState::Unknown | pb::NodeState::Unspecified) | Err(_) => NodeState::Unknown,
    }
}

/// The job as the wire carries it. `job_ref.cluster` stays behind (the update names the
/// cluster), and so does a log handle's owner: the hub reads logs itself, with the handle
/// it still holds, so a client never needs (nor is told) whose file it must be.
pub fn job_to_pb(job: &Job) -> pb::Job {
    pb::Job {
        id: job.job_ref.id.clone(),
        name: job.name.clone(),
        user: job.user.clone(),
        account: job.account.clone(),
        partition: job.partition.clone(),
        state: job_state_to_pb(job.state).into(),
        native_state: job.native_state.clone(),
        reason: job.reason.clone(),
        gpus_requested: job.gpus_requested,
        gpus_allocated: job.gpus_allocated,
        gpu_model: job.gpu_model.clone(),
        gpu_product: job.gpu_product.clone(),
        gpu_allocations: job
            .gpu_allocations
            .iter()
            .map(|a| pb::GpuAllocation {
                node: a.node.clone(),
                model: a.model.clone(),
                count: a.count,
                indices: a.indices.clone(),
            })
            .collect(),
        nodes: job.nodes.clone(),
        node_count: job.node_count,
        cpus: job.cpus,
        memory_mb: job.memory_mb,
        submit_time_ns: job.submit_time.map(time_to_ns),
        start_time_ns: job.start_time.map(time_to_ns),
        end_time_ns: job.end_time.map(time_to_ns),
        time_limit_secs: job.time_limit_secs,
        priority: job.priority,
        exit: job.exit.map(|e| pb::ExitStatus { code: e.code, signal: e.signal }),
        stdout: job.stdout.as_ref().map(|h| h.as_str().to_string()),
        stderr: job.stderr.as_ref().map(|h| h.as_str().to_string()),
        workdir: job.workdir.clone(),
        array: job.array.as_ref().map(|a| pb::ArrayInfo {
            array_id: a.array_id.clone(),
            task_id: a.task_id,
            pending_tasks: a.pending_tasks.clone(),
        }),
        cost_per_hour: job.cost_per_hour,
        uid: job.uid.clone(),
        migrated_from: job.migrated_from.clone(),
        workload: job.workload.as_deref().map(workload_to_pb),
    }
}

fn workload_to_pb(w: &Workload) -> pb::Workload {
    pb::Workload {
        kind: w.kind.clone(),
        api_version: w.api_version.clone(),
        replicas_ready: w.replicas_ready,
        replicas_total: w.replicas_total,
        groups: w
            .groups
            .iter()
            .map(|g| pb::ReplicaGroup {
                name: g.name.clone(),
                replicas: g.replicas,
                ready: g.ready,
                gpus_per_replica: g.gpus_per_replica,
            })
            .collect(),
        pods: w
            .pods
            .iter()
            .map(|p| pb::WorkloadPod {
                name: p.name.clone(),
                role: p.role.clone(),
                state: job_state_to_pb(p.state).into(),
                native_state: p.native_state.clone(),
                node: p.node.clone(),
                gpus: p.gpus,
                reason: p.reason.clone(),
                log: p.log.as_ref().map(|h| h.as_str().to_string()),
            })
            .collect(),
        suspend: w.suspend.clone(),
        cancel: w.cancel,
    }
}

fn workload_from_pb(w: pb::Workload) -> Workload {
    Workload {
        kind: w.kind,
        api_version: w.api_version,
        replicas_ready: w.replicas_ready,
        replicas_total: w.replicas_total,
        groups: w
            .groups
            .into_iter()
            .map(|g| ReplicaGroup {
                name: g.name,
                replicas: g.replicas,
                ready: g.ready,
                gpus_per_replica: g.gpus_per_replica,
            })
            .collect(),
        pods: w
            .pods
            .into_iter()
            .map(|p| WorkloadPod {
                name: p.name,
                role: p.role,
                state: job_state_from_pb(p.state),
                native_state: p.native_state,
                node: p.node,
                gpus: p.gpus,
                reason: p.reason,
                log: p.log.map(LogHandle::new),
            })
            .collect(),
        suspend: w.suspend,
        cancel: w.cancel,
    }
}

/// The job of `cluster` a message describes; log handles come back without owners.
pub fn job_from_pb(cluster: &str, job: pb::Job) -> Job {
    Job {
        job_ref: JobRef::new(cluster, job.id),
        name: job.name,
        user: job.user,
        account: job.account,
        partition: job.partition,
        state: job_state_from_pb(job.state),
        native_state: job.native_state,
        reason: job.reason,
        gpus_requested: job.gpus_requested,
        gpus_allocated: job.gpus_allocated,
        gpu_model: job.gpu_model,
        gpu_product: job.gpu_product,
        gpu_allocations: job
            .gpu_allocations
            .into_iter()
            .map(|a| GpuAllocation { node: a.node, model: a.model, count: a.count, indices: a.indices })
            .collect(),
        nodes: job.nodes,
        node_count: job.node_count,
        cpus: job.cpus,
        memory_mb: job.memory_mb,
        submit_time: job.submit_time_ns.map(time_from_ns),
        start_time: job.start_time_ns.map(time_from_ns),
        end_time: job.end_time_ns.map(time_from_ns),
        time_limit_secs: job.time_limit_secs,
        priority: job.priority,
        exit: job.exit.map(|e| ExitStatus { code: e.code, signal: e.signal }),
        stdout: job.stdout.map(LogHandle::new),
        stderr: job.stderr.map(LogHandle::new),
        workdir: job.workdir,
        array: job.array.map(|a| ArrayInfo {
            array_id: a.array_id,
            task_id: a.task_id,
            pending_tasks: a.pending_tasks,
        }),
        cost_per_hour: job.cost_per_hour,
        uid: job.uid,
        migrated_from: job.migrated_from,
        workload: job.workload.map(|w| Arc::new(workload_from_pb(w))),
    }
}

/// The node as the wire carries it (its cluster stays behind).
pub fn node_to_pb(node: &Node) -> pb::Node {
    pb::Node {
        name: node.name.clone(),
        state: node_state_to_pb(node.state).into(),
        flags: node.flags.clone(),
        native_state: node.native_state.clone(),
        reason: node.reason.clone(),
        reason_user: node.reason_user.clone(),
        reason_time_ns: node.reason_time.map(time_to_ns),
        gpus: node
            .gpus
            .iter()
            .map(|g| pb::GpuSlot {
                model: g.model.clone(),
                gpu_product: g.gpu_product.clone(),
                shared: g.shared,
                total: g.total,
                allocated: g.allocated,
                unhealthy: g.unhealthy,
                utilisation: g.utilisation,
            })
            .collect(),
        cpus_total: node.cpus_total,
        cpus_allocated: node.cpus_allocated,
        memory_total_mb: node.memory_total_mb,
        memory_allocated_mb: node.memory_allocated_mb,
        partitions: node.partitions.clone(),
        features: node.features.clone(),
        cost_per_hour: node.cost_per_hour,
    }
}

pub fn node_from_pb(cluster: &str, node: pb::Node) -> Node {
    Node {
        cluster: cluster.to_string(),
        name: node.name,
        state: node_state_from_pb(node.state),
        flags: node.flags,
        native_state: node.native_state,
        reason: node.reason,
        reason_user: node.reason_user,
        reason_time: node.reason_time_ns.map(time_from_ns),
        gpus: node
            .gpus
            .into_iter()
            .map(|g| GpuSlot {
                model: g.model,
                gpu_product: g.gpu_product,
                shared: g.shared,
                total: g.total,
                allocated: g.allocated,
                unhealthy: g.unhealthy,
                utilisation: g.utilisation,
            })
            .collect(),
        cpus_total: node.cpus_total,
        cpus_allocated: node.cpus_allocated,
        memory_total_mb: node.memory_total_mb,
        memory_allocated_mb: node.memory_allocated_mb,
        partitions: node.partitions,
        features: node.features,
        cost_per_hour: node.cost_per_hour,
    }
}

/// The queue as the wire carries it: job counts keyed by the state's name (`node_fail`).
pub fn queue_to_pb(q: &Queue) -> pb::Queue {
    pb::Queue {
        name: q.name.clone(),
        nodes: q.nodes,
        gpus_total: q.gpus_total,
        gpus_allocated: q.gpus_allocated,
        gpus_unavailable: q.gpus_unavailable,
        jobs_by_state: q.jobs_by_state.iter().map(|(s, n)| (s.as_str().to_string(), *n)).collect(),
        pending_by_reason: q.pending_by_reason.iter().map(|(r, n)| (r.clone(), *n)).collect(),
        quota: q
            .quota
            .iter()
            .map(|u| pb::QueueQuota {
                flavor: u.flavor.clone(),
                resource: u.resource.clone(),
                nominal_milli: u.nominal_milli,
                borrowing_limit_milli: u.borrowing_limit_milli,
                used_milli: u.used_milli,
                borrowed_milli: u.borrowed_milli,
            })
            .collect(),
        cohort: q.cohort.clone(),
        workloads_pending: q.workloads_pending,
        workloads_admitted: q.workloads_admitted,
    }
}

/// The queue of `cluster` a message describes. A count under a state name this build does
/// not know (a newer peer's) is dropped rather than guessed into another state.
pub fn queue_from_pb(cluster: &str, q: pb::Queue) -> Queue {
    Queue {
        cluster: cluster.to_string(),
        name: q.name,
        nodes: q.nodes,
        gpus_total: q.gpus_total,
        gpus_allocated: q.gpus_allocated,
        gpus_unavailable: q.gpus_unavailable,
        jobs_by_state: q
            .jobs_by_state
            .into_iter()
            .filter_map(|(name, n)| job_state_by_name(&name).map(|s| (s, n)))
            .collect(),
        pending_by_reason: q.pending_by_reason.into_iter().collect::<BTreeMap<_, _>>(),
        quota: q
            .quota
            .into_iter()
            .map(|u| QueueQuota {
                flavor: u.flavor,
                resource: u.resource,
                nominal_milli: u.nominal_milli,
                borrowing_limit_milli: u.borrowing_limit_milli,
                used_milli: u.used_milli,
                borrowed_milli: u.borrowed_milli,
            })
            .collect(),
        cohort: q.cohort,
        workloads_pending: q.workloads_pending,
        workloads_admitted: q.workloads_admitted,
    }
}

/// Exactly a state's serde name: `JobState::from_str` also reads Slurm's codes (`r`, `pd`),
/// which a map key on the wire never is.
fn job_state_by_name(name: &str) -> Option<JobState> {
    JobState::ALL.into_iter().find(|s| s.as_str() == name)
}

/// The snapshot's own facts; its jobs and nodes travel beside it, so that an update can
/// carry only those that changed.
pub fn meta_to_pb(s: &Snapshot) -> pb::SnapshotMeta {
    pb::SnapshotMeta {
        taken_at_ns: s.taken_at.map(time_to_ns),
        release: s.release.clone(),
        queues: s.queues.iter().map(queue_to_pb).collect(),
        notes: s.notes.clone(),
    }
}

pub fn snapshot_from_pb(cluster: &str, meta: pb::SnapshotMeta, jobs: Vec<Job>, nodes: Vec<Node>) -> Snapshot {
    Snapshot {
        cluster: cluster.to_string(),
        taken_at: meta.taken_at_ns.map(time_from_ns),
        release: meta.release,
        jobs,
        nodes,
        queues: meta.queues.into_iter().map(|q| queue_from_pb(cluster, q)).collect(),
        notes: meta.notes,
    }
}

pub fn health_to_pb(h: &Health) -> pb::Health {
    use pb::health::Status;
    match h {
        Health::Connecting => pb::Health { status: Status::Connecting.into(), ..pb::Health::default() },
        Health::Fresh { at } => {
            pb::Health { status: Status::Fresh.into(), at_ns: time_to_ns(*at), ..pb::Health::default() }
        }
        Health::Stale { since, error, last_ok } => pb::Health {
            status: Status::Stale.into(),
            at_ns: time_to_ns(*since),
            error: error.clone(),
            last_ok_ns: last_ok.map(time_to_ns),
        },
    }
}

/// An unset or unknown status reads as `Connecting`: nothing is claimed about the data.
pub fn health_from_pb(h: pb::Health) -> Health {
    use pb::health::Status;
    match Status::try_from(h.status) {
        Ok(Status::Fresh) => Health::Fresh { at: time_from_ns(h.at_ns) },
        Ok(Status::Stale) => {
            Health::Stale { since: time_from_ns(h.at_ns), error: h.error, last_ok: h.last_ok_ns.map(time_from_ns) }
        }
        Ok(Status::Connecting | Status::Unspecified) | Err(_) => Health::Connecting,
    }
}

/// The verbs `c` allows, by their `Verb::as_str` names, in `Verb::ALL` order.
pub fn capabilities_to_verbs(c: Capabilities) -> Vec<String> {
    c.verbs().map(|v| v.as_str().to_string()).collect()
}

/// The capabilities a verb list grants. Names this build does not know are ignored; `hold`
/// or `release` alone grants both (as do `drain`/`resume`, `cordon`/`uncordon`), since one
/// capability covers the pair. `migrate` grants nothing of its own: it is `submit`.
pub fn capabilities_from_verbs(verbs: &[String]) -> Capabilities {
    let mut c = Capabilities::default();
    for verb in verbs.iter().filter_map(|name| super::verb_from_name(name)) {
        match verb {
            Verb::Submit => c.submit = true,
            Verb::Cancel => c.cancel = true,
            Verb::Hold | Verb::Release => c.hold_release = true,
            Verb::Requeue => c.requeue = true,
            Verb::Drain | Verb::Resume => c.drain_resume = true,
            Verb::Cordon | Verb::Uncordon => c.cordon_uncordon = true,
            Verb::Delete => c.delete = true,
            Verb::Teardown => c.teardown = true,
            Verb::Migrate => {}
        }
    }
    c
}

/// What a cluster is and can do, as a `ClusterInfo` message says it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterInfo {
    pub kind: ClusterKind,
    pub capabilities: Capabilities,
    pub spec_fields: SpecFields,
    pub shape_fields: crate::model::ShapeFields,
    /// How the kind places jobs, as the peer said it; `None` from an older peer (or one
    /// whose text does not read), so the reader falls back to its own registry's.
    pub placement: Option<crate::model::Placement>,
}

/// The key the shape fields ride under inside `spec_fields_json`: a peer that knows no
/// shape reads the spec fields and ignores it; one that finds none uses the defaults.
const SHAPE_KEY: &str = "shape";

pub fn info_to_pb(c: &ClusterState) -> pb::ClusterInfo {
    pb::ClusterInfo {
        kind: c.kind.as_str().to_string(),
        verbs: capabilities_to_verbs(c.capabilities),
        // Plain strings and enums: serialising cannot fail; an empty text would read back
        // as the defaults, which is the best there is.
        spec_fields_json: {
            let mut fields = serde_json::to_value(&c.spec_fields).unwrap_or_default();
            if let (Some(map), Ok(shape)) = (fields.as_object_mut(), serde_json::to_value(&c.shape_fields)) {
                map.insert(SHAPE_KEY.into(), shape);
            }
            fields.to_string()
        },
        placement_json: serde_json::to_string(&c.placement).unwrap_or_default(),
    }
}

/// Spec fields that do not read (a newer peer's shape, or none) are the portable defaults:
/// the submit form then shows every field under its portable name.
pub fn info_from_pb(info: pb::ClusterInfo) -> ClusterInfo {
    ClusterInfo {
        kind: ClusterKind::from(info.kind),
        capabilities: capabilities_from_verbs(&info.verbs),
        spec_fields: serde_json::from_str(&info.spec_fields_json).unwrap_or_default(),
        shape_fields: serde_json::from_str::<serde_json::Value>(&info.spec_fields_json)
            .ok()
            .and_then(|v| serde_json::from_value(v.get(SHAPE_KEY)?.clone()).ok())
            .unwrap_or_default(),
        placement: serde_json::from_str(&info.placement_json).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldUse, Need};
    use chrono::TimeZone;

    #[test]
    fn times_saturate_outside_i64_nanoseconds() {
        assert_eq!(time_to_ns(DateTime::UNIX_EPOCH), 0);
        assert_eq!(time_to_ns(DateTime::<Utc>::MAX_UTC), i64::MAX);
        assert_eq!(time_to_ns(DateTime::<Utc>::MIN_UTC), i64::MIN);
        let year_3000 = Utc.with_ymd_and_hms(3000, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(time_to_ns(year_3000), i64::MAX);
        for ns in [i64::MIN, -1, 0, 1, 1_780_000_000_123_456_789, i64::MAX] {
            assert_eq!(time_to_ns(time_from_ns(ns)), ns);
        }
    }

    #[test]
    fn unknown_state_numbers_are_unknown() {
        for n in [0, 14, 99, -1, i32::MAX, i32::MIN] {
            assert_eq!(job_state_from_pb(n), JobState::Unknown, "{n}");
        }
        for n in [0, 13, -7] {
            assert_eq!(node_state_from_pb(n), NodeState::Unknown, "{n}");
        }
        for s in JobState::ALL {
            assert_eq!(job_state_from_pb(job_state_to_pb(s).into()), s);
        }
    }

    #[test]
    fn queue_counts_cross_by_state_name() {
        let q = Queue {
            cluster: "hpc".into(),
            name: "gpu".into(),
            jobs_by_state: BTreeMap::from([(JobState::NodeFail, 2), (JobState::Pending, 5)]),
            ..Queue::default()
        };
        let mut wire = queue_to_pb(&q);
        assert_eq!(wire.jobs_by_state.get("node_fail"), Some(&2));
        assert_eq!(wire.jobs_by_state.get("pending"), Some(&5));
        // A newer peer's state, and Slurm's shorthand, are not states on the wire.
        wire.jobs_by_state.insert("hibernating".into(), 9);
        wire.jobs_by_state.insert("pd".into(), 9);
        assert_eq!(queue_from_pb("hpc", wire), q);
    }

    #[test]
    fn health_without_a_status_is_connecting() {
        assert_eq!(health_from_pb(pb::Health::default()), Health::Connecting);
        let odd = pb::Health { status: 42, at_ns: 5, error: "x".into(), last_ok_ns: Some(1) };
        assert_eq!(health_from_pb(odd), Health::Connecting);
        let at = Utc.with_ymd_and_hms(2026, 12, 3, 6, 0, 0).unwrap();
        let stale = Health::Stale { since: at, error: "refused".into(), last_ok: None };
        assert_eq!(health_from_pb(health_to_pb(&stale)), stale);
    }

    #[test]
    fn cluster_info_round_trips_and_tolerates_bad_spec_fields() {
        let state = ClusterState {
            capabilities: Capabilities { requeue: false, teardown: false, ..Capabilities::ALL },
            spec_fields: SpecFields {
                partition: FieldUse::new("queue", Need::Required, "a Kueue LocalQueue"),
                ..SpecFields::default()
            },
            shape_fields: crate::model::ShapeFields {
                array: FieldUse::new("array", Need::Ignored, "no job arrays"),
                ..crate::model::ShapeFields::default()
            },
            placement: crate::model::Placement {
                partition: crate::model::Partitions::QuotaQueue,
                shares_nodes: true,
                ..crate::model::Placement::default()
            },
            ..ClusterState::new("k8s", "kubernetes")
        };
        let wire = info_to_pb(&state);
        assert_eq!(wire.kind, "kubernetes");
        let back = info_from_pb(wire.clone());
        assert_eq!(
            back,
            ClusterInfo {
                kind: state.kind.clone(),
                capabilities: state.capabilities,
                spec_fields: state.spec_fields.clone(),
                shape_fields: state.shape_fields.clone(),
                placement: Some(state.placement.clone()),
            }
        );
        // An older peer says no placement: none, not a guess.
        let info = info_from_pb(pb::ClusterInfo { placement_json: String::new(), ..wire.clone() });
        assert_eq!(info.placement, None);
        for junk in ["", "{", "[1]", "{\"image\": 3}", "{\"shape\": 1}"] {
            let info = info_from_pb(pb::ClusterInfo { spec_fields_json: junk.into(), ..wire.clone() });
            assert_eq!(info.spec_fields, SpecFields::default(), "{junk:?}");
            assert_eq!(info.shape_fields, crate::model::ShapeFields::default(), "{junk:?}");
        }
        // An older peer's spec fields (no shape) still read, with the default shape.
        let old = serde_json::to_string(&state.spec_fields).unwrap();
        let info = info_from_pb(pb::ClusterInfo { spec_fields_json: old, ..wire.clone() });
        assert_eq!((info.spec_fields, info.shape_fields), (state.spec_fields, crate::model::ShapeFields::default()));
    }

    #[test]
    fn verbs_grant_their_pair_and_unknown_ones_nothing() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = capabilities_from_verbs(&names(&["release", "uncordon", "fly", "migrate", "teardown"]));
        assert_eq!(
            c,
            Capabilities { hold_release: true, cordon_uncordon: true, teardown: true, ..Capabilities::default() }
        );
        assert_eq!(capabilities_to_verbs(Capabilities::default()), Vec::<String>::new());
        assert_eq!(capabilities_to_verbs(Capabilities { cancel: true, ..Capabilities::default() }), ["cancel"]);
    }
}
