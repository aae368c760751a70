//! GPU telemetry on the wire: a cluster's `GpuUse` (with its error and whether a reading
//! was tried), whole on a full state, else with only the newest history point per GPU.

use std::collections::HashMap;

use super::pb;
use super::state::{time_from_ns, time_to_ns};
use crate::model::telemetry::HISTORY_POINTS;
use crate::model::{ClusterState, GpuOwner, GpuProcess, GpuReading, GpuSample, GpuUse, JobGpuUse, Relayed};

/// The cluster's telemetry; `full_history` sends every reading's whole history, else its
/// newest point only.
pub fn telemetry_to_pb(c: &ClusterState, full_history: bool) -> pb::Telemetry {
    let used = c.gpu_use.as_deref();
    pb::Telemetry {
        present: used.is_some(),
        taken_at_ns: used.map_or(0, |u| time_to_ns(u.taken_at)),
        source: used.map(|u| u.source.clone()).unwrap_or_default(),
        gpus: used.map_or_else(Vec::new, |u| u.gpus.iter().map(|r| reading_to_pb(r, full_history)).collect()),
        jobs: used.map_or_else(Vec::new, |u| u.jobs.iter().map(job_use_to_pb).collect()),
        notes: used.map(|u| u.notes.clone()).unwrap_or_default(),
        error: c.telemetry_error.clone(),
        tried: c.telemetry_tried,
        full_history,
    }
}

/// `t` applied on what the client held: histories replaced when the message has them whole,
/// else each GPU's held history with the new point appended (bounded as the hub bounds it).
pub fn telemetry_from_pb(held: Option<&GpuUse>, t: pb::Telemetry) -> Relayed {
    let gpu_use = t.present.then(|| {
        let before: HashMap<(&str, u32), &[f32]> = held
            .map(|u| u.gpus.iter().map(|r| ((r.sample.node.as_str(), r.sample.index), r.history.as_slice())).collect())
            .unwrap_or_default();
        let mut gpus: Vec<GpuReading> = t
            .gpus
            .into_iter()
            .map(|r| {
                let mut reading = reading_from_pb(r);
                if !t.full_history {
                    let mut past = before
                        .get(&(reading.sample.node.as_str(), reading.sample.index))
                        .map(|h| h.to_vec())
                        .unwrap_or_default();
                    past.append(&mut reading.history);
                    let excess = past.len().saturating_sub(HISTORY_POINTS);
                    past.drain(..excess);
                    reading.history = past;
                }
                reading
            })
            .collect();
        // The order the front ends search by, whatever the sender did.
        gpus.sort_by(|a, b| {
            (a.sample.node.as_bytes(), a.sample.index).cmp(&(b.sample.node.as_bytes(), b.sample.index))
        });
        let mut jobs: Vec<JobGpuUse> = t.jobs.into_iter().map(job_use_from_pb).collect();
        jobs.sort_by(|a, b| a.job.cmp(&b.job));
        std::sync::Arc::new(GpuUse {
            taken_at: time_from_ns(t.taken_at_ns),
            source: t.source,
            gpus,
            jobs,
            notes: t.notes,
        })
    });
    Relayed { gpu_use, error: t.error, tried: t.tried }
}

fn reading_to_pb(r: &GpuReading, full_history: bool) -> pb::GpuReading {
    let s = &r.sample;
    let (owner_job, owner_pod_namespace, owner_pod_name) = match &s.owner {
        Some(GpuOwner::Job(id)) => (Some(id.clone()), None, None),
        Some(GpuOwner::Pod { namespace, name }) => (None, Some(namespace.clone()), Some(name.clone())),
        None => (None, None, None),
    };
    let history = if full_history { r.history.clone() } else { r.history.last().copied().into_iter().collect() };
    pb::GpuReading {
        node: s.node.clone(),
        index: s.index,
        uuid: s.uuid.clone(),
        product: s.product.clone(),
        utilisation: s.utilisation,
        memory_used_mb: s.memory_used_mb,
        memory_total_mb: s.memory_total_mb,
        power_watts: s.power_watts,
        temperature_c: s.temperature_c,
        last_xid: s.last_xid,
        problems: s.problems.clone(),
        owner_job,
        owner_pod_namespace,
        owner_pod_name,
        processes: s
            .processes
            .iter()
            .map(|p| pb::GpuProcess {
                pid: p.pid,
                user: p.user.clone(),
                command: p.command.clone(),
                memory_mb: p.memory_mb,
            })
            .collect(),
        job: r.job.clone(),
        history,
    }
}

fn reading_from_pb(r: pb::GpuReading) -> GpuReading {
    let owner = match (r.owner_job, r.owner_pod_namespace, r.owner_pod_name) {
        (Some(id), _, _) => Some(GpuOwner::Job(id)),
        (None, Some(namespace), Some(name)) => Some(GpuOwner::Pod { namespace, name }),
        _ => None,
    };
    let sample = GpuSample {
        node: r.node,
        index: r.index,
        uuid: r.uuid,
        product: r.product,
        utilisation: r.utilisation,
        memory_used_mb: r.memory_used_mb,
        memory_total_mb: r.memory_total_mb,
        power_watts: r.power_watts,
        temperature_c: r.temperature_c,
        last_xid: r.last_xid,
        problems: r.problems,
        owner,
        processes: r
            .processes
            .into_iter()
            .map(|p| GpuProcess { pid: p.pid, user: p.user, command: p.command, memory_mb: p.memory_mb })
            .collect(),
    };
    GpuReading { sample, job: r.job, history: r.history }
}

fn job_use_to_pb(j: &JobGpuUse) -> pb::JobGpuUse {
    pb::JobGpuUse {
        job: j.job.clone(),
        gpus: j.gpus,
        mean_utilisation: j.mean_utilisation,
        below_since_ns: j.below_since.map(time_to_ns),
        idle: j.idle,
    }
}

fn job_use_from_pb(j: pb::JobGpuUse) -> JobGpuUse {
    JobGpuUse {
        job: j.job,
        gpus: j.gpus,
        mean_utilisation: j.mean_utilisation,
        below_since: j.below_since_ns.map(time_from_ns),
        idle: j.idle,
    }
}
