//! One reading of this machine's GPUs → the cluster's snapshot and telemetry.
//!
//! The machine is one node; each GPU process is a running job (id = pid, name = its
//! command, its user, the GPUs it holds, the node), so the jobs table, the GPU map and idle
//! detection read it like any scheduler's job. A process on several GPUs is one job holding
//! them all; several processes on one GPU each hold it (the GPU counts as allocated once).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::procs::ProcInfo;
use crate::model::gpu_names;
use crate::model::{GpuAllocation, GpuOwner, GpuSample, GpuSlot, Job, JobRef, JobState, Node, NodeState, Snapshot};

/// The longest job name kept, in characters (the whole command line stays on the GPU's
/// process list).
const MAX_NAME_CHARS: usize = 200;

/// What the snapshot says of the machine beside its GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cluster: String,
    pub node: String,
    pub cpus: u32,
    pub memory_mb: u64,
}

/// The snapshot of one reading: the machine's node with its GPUs, a job per GPU process.
pub fn snapshot(
    machine: &Machine,
    samples: &[GpuSample],
    procs: &HashMap<u32, ProcInfo>,
    driver: Option<String>,
    notes: Vec<String>,
    now: DateTime<Utc>,
) -> Snapshot {
    let mut node = Node::new(&machine.cluster, &machine.node, NodeState::Idle);
    node.cpus_total = machine.cpus;
    node.memory_total_mb = machine.memory_mb;
    node.gpus = slots(samples);
    let busy = samples.iter().filter(|s| !s.processes.is_empty()).count();
    node.state = match busy {
        0 => NodeState::Idle,
        n if n == samples.len() => NodeState::Allocated,
        _ => NodeState::Mixed,
    };
    node.native_state = node.state.as_str().to_string();
    let mut snapshot = Snapshot {
        cluster: machine.cluster.clone(),
        taken_at: Some(now),
        release: driver.map(|v| format!("driver {v}")),
        jobs: jobs(machine, samples, procs),
        nodes: vec![node],
        queues: Vec::new(),
        notes,
    };
    snapshot.derive_queues();
    snapshot
}

/// The GPUs per canonical model: allocated are those running a process, unhealthy those
/// with a problem, utilisation the mean of those that report one.
fn slots(samples: &[GpuSample]) -> Vec<GpuSlot> {
    let mut by_model: BTreeMap<(String, bool), (GpuSlot, f32, u32)> = BTreeMap::new();
    for s in samples {
        let product = s.product.clone().unwrap_or_else(|| "gpu".to_string());
        let name = gpu_names::canonical(&product);
        let (slot, sum, measured) = by_model.entry((name.model.clone(), name.shared)).or_insert_with(|| {
            let slot = GpuSlot {
                model: name.model.clone(),
                gpu_product: s.product.clone(),
                shared: name.shared,
                total: 0,
                allocated: 0,
                unhealthy: 0,
                utilisation: None,
            };
            (slot, 0.0, 0)
        });
        slot.total = slot.total.saturating_add(1);
        if !s.processes.is_empty() {
            slot.allocated = slot.allocated.saturating_add(1);
        }
        if !s.problems.is_empty() {
            slot.unhealthy = slot.unhealthy.saturating_add(1);
        }
        if let Some(u) = s.utilisation.filter(|u| u.is_finite()) {
            *sum += u.clamp(0.0, 100.0);
            *measured += 1;
        }
    }
    by_model
        .into_values()
        .map(|(mut slot, sum, measured)| {
            slot.utilisation = (measured > 0).then(|| sum / measured as f32);
            slot
        })
        .collect()
}

/// A job per GPU process, by pid.
fn jobs(machine: &Machine, samples: &[GpuSample], procs: &HashMap<u32, ProcInfo>) -> Vec<Job> {
    let mut by_pid: BTreeMap<u32, Job> = BTreeMap::new();
    for s in samples {
        let product = s.product.clone().unwrap_or_else(|| "gpu".to_string());
        let model = gpu_names::canonical_model(&product);
        for p in &s.processes {
            let job = by_pid.entry(p.pid).or_insert_with(|| {
                let mut job = Job::new(JobRef::new(&machine.cluster, p.pid.to_string()), JobState::Running);
                job.native_state = "running".into();
                job.name = short_name(&p.command, p.pid);
                job.user = p.user.clone().unwrap_or_default();
                job.nodes = vec![machine.node.clone()];
                job.node_count = 1;
                job.start_time = procs.get(&p.pid).and_then(|i| i.started);
                job
            });
            job.gpus_requested = job.gpus_requested.saturating_add(1);
            job.gpus_allocated = job.gpus_allocated.saturating_add(1);
            // Its memory is the GPU memory it holds (what nvitop lists per process).
            if let Some(mb) = p.memory_mb {
                job.memory_mb = Some(job.memory_mb.unwrap_or(0).saturating_add(mb));
            }
            match job.gpu_allocations.iter_mut().find(|a| a.model.as_deref() == Some(model.as_str())) {
                Some(a) => {
                    a.count = a.count.saturating_add(1);
                    a.indices.push(s.index);
                }
                None => job.gpu_allocations.push(GpuAllocation {
                    node: machine.node.clone(),
                    model: Some(model.clone()),
                    count: 1,
                    indices: vec![s.index],
                }),
            }
            join_name(&mut job.gpu_model, &model);
            join_name(&mut job.gpu_product, &product);
        }
    }
    by_pid.into_values().collect()
}

/// `a` then `a,b`: the models (or products) of a job's GPUs, each once.
fn join_name(field: &mut Option<String>, name: &str) {
    match field {
        Some(names) if names.split(',').any(|n| n == name) => {}
        Some(names) => {
            names.push(',');
            names.push_str(name);
        }
        None => *field = Some(name.to_string()),
    }
}

/// A job's name from its command line: the program without its directory, then its
/// arguments (`/usr/bin/python3 train.py` → `python3 train.py`); `pid N` without one.
fn short_name(command: &str, pid: u32) -> String {
    let command = command.trim();
    if command.is_empty() {
        return format!("pid {pid}");
    }
    let (program, args) = command.split_once(' ').unwrap_or((command, ""));
    let program = program.rsplit('/').find(|p| !p.is_empty()).unwrap_or(program);
    let name = if args.is_empty() { program.to_string() } else { format!("{program} {args}") };
    match name.char_indices().nth(MAX_NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name,
    }
}

/// Each GPU's owner for the fleet's join: its only process, or, when several share it,
/// the one holding the most memory (the join gives a GPU to one job; the others' GPU% stays
/// blank rather than showing a share that NVML does not measure).
pub fn set_owners(samples: &mut [GpuSample]) {
    for s in samples {
        let main = s.processes.iter().max_by(|a, b| a.memory_mb.cmp(&b.memory_mb).then(b.pid.cmp(&a.pid)));
        s.owner = main.map(|p| GpuOwner::Job(p.pid.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GpuProcess;

    fn machine() -> Machine {
        Machine { cluster: "box".into(), node: "box".into(), cpus: 32, memory_mb: 256_000 }
    }

    fn gpu(index: u32, product: &str, util: f32, processes: &[(u32, Option<u64>)]) -> GpuSample {
        let mut s = GpuSample::new("box", index);
        s.product = Some(product.into());
        s.utilisation = Some(util);
        s.processes = processes
            .iter()
            .map(|(pid, memory_mb)| GpuProcess {
                pid: *pid,
                user: Some("alice".into()),
                command: format!("/usr/bin/python3 train.py --rank {pid}"),
                memory_mb: *memory_mb,
            })
            .collect();
        s
    }

    #[test]
    fn processes_become_jobs_and_gpus_slots() {
        let samples = vec![
            gpu(0, "NVIDIA H100 80GB HBM3", 90.0, &[(300, Some(1000)), (200, Some(5000))]),
            gpu(1, "NVIDIA H100 80GB HBM3", 50.0, &[(300, Some(2000))]),
            gpu(2, "NVIDIA H100 80GB HBM3", 0.0, &[]),
            gpu(3, "NVIDIA A100-SXM4-80GB", 10.0, &[]),
        ];
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let started = DateTime::from_timestamp(1_799_999_000, 0);
        let procs = HashMap::from([(300, ProcInfo { started, ..ProcInfo::default() })]);
        let snap = snapshot(&machine(), &samples, &procs, Some("550.54.15".into()), vec!["n".into()], now);
        assert_eq!(snap.release.as_deref(), Some("driver 550.54.15"));
        assert_eq!(snap.notes, ["n"]);
        let node = &snap.nodes[0];
        assert_eq!((node.name.as_str(), node.state, node.cpus_total), ("box", NodeState::Mixed, 32));
        let slots: Vec<(&str, u32, u32, Option<f32>)> =
            node.gpus.iter().map(|g| (g.model.as_str(), g.total, g.allocated, g.utilisation)).collect();
        assert_eq!(slots, [("a100-80gb", 1, 0, Some(10.0)), ("h100", 3, 2, Some(140.0 / 3.0))]);
        assert_eq!(node.gpus[1].gpu_product.as_deref(), Some("NVIDIA H100 80GB HBM3"));

        let ids: Vec<&str> = snap.jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["200", "300"]);
        let big = &snap.jobs[1];
        assert_eq!(big.name, "python3 train.py --rank 300");
        assert_eq!((big.user.as_str(), big.state, big.gpus_allocated), ("alice", JobState::Running, 2));
        assert_eq!(big.gpu_allocations[0].indices, [0, 1]);
        assert_eq!(big.gpu_model.as_deref(), Some("h100"));
        assert_eq!(big.memory_mb, Some(3000));
        assert_eq!(big.start_time, started);
        assert_eq!(big.nodes, ["box"]);
        assert_eq!(snap.jobs[0].start_time, None);
        assert!(snap.queues.is_empty(), "no partitions here");
    }

    #[test]
    fn a_machine_without_gpus_is_one_idle_node() {
        let snap = snapshot(&machine(), &[], &HashMap::new(), None, vec!["no GPU found".into()], Utc::now());
        assert_eq!(snap.nodes.len(), 1);
        assert_eq!(snap.nodes[0].state, NodeState::Idle);
        assert!(snap.nodes[0].gpus.is_empty() && snap.jobs.is_empty());
    }

    #[test]
    fn every_busy_gpu_is_allocated_and_its_main_process_owns_it() {
        let mut samples = vec![
            gpu(0, "NVIDIA H100 80GB HBM3", 1.0, &[(10, Some(1)), (11, Some(9)), (12, None)]),
            gpu(1, "NVIDIA H100 80GB HBM3", 1.0, &[(12, None)]),
            gpu(2, "NVIDIA H100 80GB HBM3", 1.0, &[(5, None), (4, None)]),
            gpu(3, "NVIDIA H100 80GB HBM3", 1.0, &[]),
        ];
        set_owners(&mut samples);
        let owners: Vec<Option<GpuOwner>> = samples.iter().map(|s| s.owner.clone()).collect();
        let job = |id: &str| Some(GpuOwner::Job(id.into()));
        assert_eq!(owners, [job("11"), job("12"), job("4"), None], "most memory, then the lowest pid");
        samples.pop();
        let snap = snapshot(&machine(), &samples, &HashMap::new(), None, Vec::new(), Utc::now());
        assert_eq!(snap.nodes[0].state, NodeState::Allocated);
    }

    #[test]
    fn names_are_the_program_and_its_arguments() {
        assert_eq!(short_name("/usr/bin/python3 train.py", 1), "python3 train.py");
        assert_eq!(short_name("ollama", 1), "ollama");
        assert_eq!(short_name("/", 1), "/");
        assert_eq!(short_name("  ", 42), "pid 42");
        let long = format!("x {}", "a".repeat(1000));
        assert_eq!(short_name(&long, 1).chars().count(), MAX_NAME_CHARS + 1);
    }
}
