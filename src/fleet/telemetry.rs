//! Telemetry joined to jobs: which job each measured GPU serves, each job's mean
//! utilisation, how long it has been under the idle threshold, and every GPU's recent past.
//!
//! Pure over its inputs (a snapshot, a reading, what earlier readings left in
//! [`TelemetryMemory`]); time is the readings' own `taken_at`, so idle detection is
//! deterministic in tests. The telemetry loop (`telemetry_poller`) calls [`join`] once per
//! reading, off the UI thread: the cockpit only reads the resulting [`GpuUse`].

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt};

use chrono::{DateTime, Utc};

use crate::config::IdleRule;
use crate::model::telemetry::{HISTORY, HISTORY_POINTS};
use crate::model::{GpuOwner, GpuReading, GpuUse, Job, JobGpuUse, Snapshot, Telemetry};

/// What one cluster's earlier readings leave for the next: GPU histories and since when each
/// job has been under the threshold.
/// One GPU's utilisation readings, oldest first.
type Past = VecDeque<(DateTime<Utc>, f32)>;

#[derive(Debug, Default)]
pub struct TelemetryMemory {
    /// By node, then device index (a node's few GPUs in a list): looked up by the sample's
    /// `&str` node, so no key is built per GPU per reading.
    history: HashMap<String, Vec<(u32, Past)>>,
    below_since: HashMap<String, DateTime<Utc>>,
}

impl TelemetryMemory {
    /// GPUs with a history kept (bounded by what was read in the last [`HISTORY`]).
    pub fn gpus_remembered(&self) -> usize {
        self.history.values().map(Vec::len).sum()
    }
}

/// Who uses which GPU, from the scheduler's side: device indices it reports (Slurm), pods
/// on nodes (Kubernetes), processes (this machine), or a node one job has to itself.
struct Owners<'a> {
    by_index: HashMap<(&'a str, u32), &'a Job>,
    by_id: HashMap<&'a str, &'a Job>,
    /// Active GPU jobs per node, for pods (by name prefix) and the one-job fallback.
    on_node: HashMap<&'a str, Vec<&'a Job>>,
}

impl<'a> Owners<'a> {
    fn new(snapshot: &'a Snapshot) -> Self {
        let jobs = snapshot.jobs.len();
        let mut owners = Owners {
            by_index: HashMap::with_capacity(jobs * 4),
            by_id: HashMap::with_capacity(jobs),
            on_node: HashMap::with_capacity(snapshot.nodes.len()),
        };
        for job in snapshot.jobs.iter().filter(|j| holds_gpus(j)) {
            owners.by_id.insert(job.job_ref.id.as_str(), job);
            for allocation in &job.gpu_allocations {
                for index in &allocation.indices {
                    owners.by_index.insert((allocation.node.as_str(), *index), job);
                }
            }
            for node in &job.nodes {
                owners.on_node.entry(node.as_str()).or_default().push(job);
            }
        }
        owners
    }

    fn of(&self, sample: &crate::model::GpuSample) -> Option<&'a Job> {
        let node = sample.node.as_str();
        match &sample.owner {
            Some(GpuOwner::Job(id)) => {
                if let Some(job) = self.by_id.get(id.as_str()) {
                    return Some(job);
                }
            }
            Some(GpuOwner::Pod { namespace, name }) => {
                if let Some(job) = self.pod(node, namespace, name) {
                    return Some(job);
                }
            }
            None => {}
        }
        if let Some(job) = self.by_index.get(&(node, sample.index)) {
            return Some(job);
        }
        if let Some(job) = sample.processes.iter().find_map(|p| self.by_id.get(p.pid.to_string().as_str())) {
            return Some(job);
        }
        // One GPU job on the node and no device indices from the scheduler: its GPUs.
        match self.on_node.get(node).map(Vec::as_slice) {
            Some([job]) if job.gpu_allocations.iter().all(|a| a.indices.is_empty()) => Some(job),
            _ => None,
        }
    }

    /// The job a pod belongs to: the pod shown as a job of its own (`ns:pod:NAME`), else the
    /// job on that node in that namespace whose name the pod's starts with (controllers name
    /// pods `JOB-…`), the longest such name winning.
    fn pod(&self, node: &str, namespace: &str, pod: &str) -> Option<&'a Job> {
        if let Some(job) = self.by_id.get(format!("{namespace}:pod:{pod}").as_str()) {
            return Some(job);
        }
        self.on_node
            .get(node)?
            .iter()
            .filter(|job| {
                job.job_ref.id.split_once(':').is_some_and(|(ns, name)| {
                    ns == namespace
                        && pod.len() > name.len()
                        && pod.starts_with(name)
                        && pod[name.len()..].starts_with('-')
                })
            })
            .max_by_key(|job| job.job_ref.id.len())
            .copied()
    }
}

/// Holding GPUs now: started, not ended, some GPUs allocated.
fn holds_gpus(job: &Job) -> bool {
    !job.state.is_finished() && !job.state.is_waiting() && job.gpus_allocated > 0
}

/// One reading joined to `snapshot`'s jobs, `memory` brought forward. The reading is taken,
/// not borrowed: its samples move into the result (at 10,000 GPUs, copying them cost more
/// than the join).
pub fn join(snapshot: &Snapshot, reading: Telemetry, memory: &mut TelemetryMemory, rule: IdleRule) -> GpuUse {
    let now = reading.taken_at;
    let owners = Owners::new(snapshot);
    let mut per_job: HashMap<&str, (u32, f32, u32)> = HashMap::with_capacity(snapshot.jobs.len());
    let mut gpus = Vec::with_capacity(reading.gpus.len());
    for sample in reading.gpus {
        let job = owners.of(&sample);
        if let Some(job) = job {
            let entry = per_job.entry(job.job_ref.id.as_str()).or_default();
            entry.0 += 1;
            if let Some(u) = sample.utilisation.filter(|u| u.is_finite()) {
                entry.1 += u.clamp(0.0, 100.0);
                entry.2 += 1;
            }
        }
        let node = match memory.history.get_mut(sample.node.as_str()) {
            Some(node) => node,
            None => memory.history.entry(sample.node.clone()).or_default(),
        };
        let at = match node.iter().position(|(index, _)| *index == sample.index) {
            Some(at) => at,
            None => {
                node.push((sample.index, Past::new()));
                node.len() - 1
            }
        };
        let past = &mut node[at].1;
        if let Some(u) = sample.utilisation.filter(|u| u.is_finite())
            && past.back().is_none_or(|(at, _)| *at < now)
        {
            past.push_back((now, u.clamp(0.0, 100.0)));
        }
        while past.len() > HISTORY_POINTS || past.front().is_some_and(|(at, _)| now - *at > HISTORY) {
            past.pop_front();
        }
        let history = past.iter().map(|(_, u)| *u).collect();
        gpus.push(GpuReading { sample, job: job.map(|j| j.job_ref.id.clone()), history });
    }
    // GPUs not read for a whole history window are forgotten (nodes gone, jobs moved).
    memory.history.retain(|_, node| {
        node.retain(|(_, past)| past.back().is_some_and(|(at, _)| now - *at <= HISTORY));
        !node.is_empty()
    });

    let window = chrono::TimeDelta::from_std(rule.window).unwrap_or(chrono::TimeDelta::MAX);
    let mut jobs: Vec<JobGpuUse> = per_job
        .into_iter()
        .map(|(id, (measured, sum, with_figures))| {
            let mean = (with_figures > 0).then(|| sum / with_figures as f32);
            let below_since = match mean {
                Some(mean) if mean < rule.below_percent => {
                    Some(*memory.below_since.entry(id.to_string()).or_insert(now))
                }
                // No figure this time: the job keeps what it had, neither cleared nor started.
                None => memory.below_since.get(id).copied(),
                Some(_) => {
                    memory.below_since.remove(id);
                    None
                }
            };
            let idle = below_since.is_some_and(|since| now - since >= window);
            JobGpuUse { job: id.to_string(), gpus: measured, mean_utilisation: mean, below_since, idle }
        })
        .collect();
    jobs.sort_by(|a, b| a.job.cmp(&b.job));
    memory.below_since.retain(|id, _| jobs.binary_search_by(|j| j.job.as_str().cmp(id)).is_ok());
    let order =
        |a: &GpuReading, b: &GpuReading| a.sample.node.cmp(&b.sample.node).then(a.sample.index.cmp(&b.sample.index));
    // Sources mostly answer in this order already; checking is a tenth of sorting.
    if !gpus.is_sorted_by(|a, b| order(a, b).is_le()) {
        gpus.sort_by(order);
    }

    let mut notes = reading.notes;
    let unowned = gpus.iter().filter(|g| g.job.is_none() && !g.sample.processes.is_empty()).count();
    if unowned > 0 {
        let gpus = crate::model::words::counted(unowned as u64, "GPU runs", "GPUs run");
        notes.push(format!("{gpus} processes no job here accounts for"));
    }
    GpuUse { taken_at: now, source: reading.source, gpus, jobs, notes }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::{GpuAllocation, GpuProcess, GpuSample, JobRef, JobState};

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + minute * 60, 0).unwrap()
    }

    /// A running job on `node` holding the GPUs `indices` (one GPU, index unknown, when empty).
    fn slurm_job(id: &str, node: &str, indices: &[u32]) -> Job {
        let mut job = Job::new(JobRef::new("hpc", id), JobState::Running);
        job.gpus_allocated = indices.len().max(1) as u32;
        job.nodes = vec![node.into()];
        job.gpu_allocations = vec![GpuAllocation {
            node: node.into(),
            model: Some("h100".into()),
            count: indices.len().max(1) as u32,
            indices: indices.to_vec(),
        }];
        job
    }

    fn sample(node: &str, index: u32, utilisation: f32) -> GpuSample {
        GpuSample { utilisation: Some(utilisation), ..GpuSample::new(node, index) }
    }

    fn reading(minute: i64, gpus: Vec<GpuSample>) -> Telemetry {
        Telemetry { taken_at: at(minute), source: "test".into(), gpus, notes: Vec::new() }
    }

    fn snapshot(jobs: Vec<Job>) -> Snapshot {
        Snapshot { cluster: "hpc".into(), jobs, ..Snapshot::default() }
    }

    const RULE: IdleRule = IdleRule { below_percent: 5.0, window: Duration::from_secs(20 * 60) };

    #[test]
    fn slurm_device_indices_place_each_gpu_with_its_job() {
        let snap = snapshot(vec![slurm_job("1", "g1", &[0, 1]), slurm_job("2", "g1", &[2, 3])]);
        let gpus = (0..4).map(|i| sample("g1", i, [90.0, 70.0, 1.0, 3.0][i as usize])).collect();
        let used = join(&snap, reading(0, gpus), &mut TelemetryMemory::default(), RULE);
        let owners: Vec<_> = used.gpus.iter().map(|g| g.job.as_deref()).collect();
        assert_eq!(owners, [Some("1"), Some("1"), Some("2"), Some("2")]);
        assert_eq!(used.job("1").unwrap().mean_utilisation, Some(80.0));
        assert_eq!(used.job("2").unwrap().mean_utilisation, Some(2.0));
        assert_eq!(used.job("2").unwrap().gpus, 2);
        assert!(used.job("3").is_none());
        assert_eq!(used.node("g1").len(), 4);
        assert!(used.node("g2").is_empty());
    }

    #[test]
    fn a_job_is_idle_only_after_the_whole_window_under_the_threshold() {
        let snap = snapshot(vec![slurm_job("7", "g1", &[0])]);
        let mut memory = TelemetryMemory::default();
        let mut at_minute = |m: i64, u: f32| join(&snap, reading(m, vec![sample("g1", 0, u)]), &mut memory, RULE);
        assert!(!at_minute(0, 50.0).job("7").unwrap().idle);
        let first_low = at_minute(1, 2.0);
        assert_eq!(first_low.job("7").unwrap().below_since, Some(at(1)));
        assert!(!at_minute(20, 3.0).job("7").unwrap().idle, "19 minutes is not 20");
        let idle = at_minute(21, 4.9);
        assert!(idle.job("7").unwrap().idle);
        assert_eq!(idle.idle(), (1, 1));
        // One busy reading clears it; the window starts again.
        assert!(!at_minute(22, 60.0).job("7").unwrap().idle);
        assert_eq!(at_minute(23, 1.0).job("7").unwrap().below_since, Some(at(23)));
    }

    #[test]
    fn a_reading_without_figures_neither_clears_nor_starts_the_idle_clock() {
        let snap = snapshot(vec![slurm_job("7", "g1", &[0])]);
        let mut memory = TelemetryMemory::default();
        join(&snap, reading(0, vec![sample("g1", 0, 1.0)]), &mut memory, RULE);
        let blank = join(&snap, reading(25, vec![GpuSample::new("g1", 0)]), &mut memory, RULE);
        let job = blank.job("7").unwrap();
        assert_eq!((job.mean_utilisation, job.below_since, job.idle), (None, Some(at(0)), true));
    }

    #[test]
    fn a_finished_job_is_forgotten() {
        let mut memory = TelemetryMemory::default();
        join(&snapshot(vec![slurm_job("7", "g1", &[0])]), reading(0, vec![sample("g1", 0, 1.0)]), &mut memory, RULE);
        let mut done = slurm_job("7", "g1", &[0]);
        done.state = JobState::Completed;
        let used = join(&snapshot(vec![done]), reading(30, vec![sample("g1", 0, 1.0)]), &mut memory, RULE);
        assert!(used.jobs.is_empty());
        assert!(used.gpus[0].job.is_none());
        assert!(memory.below_since.is_empty());
    }

    #[test]
    fn history_is_bounded_in_time_and_points() {
        let snap = snapshot(Vec::new());
        let mut memory = TelemetryMemory::default();
        let mut last = None;
        for m in 0..40 {
            last = Some(join(&snap, reading(m, vec![sample("g1", 0, m as f32)]), &mut memory, RULE));
        }
        let history = &last.take().unwrap().gpus[0].history;
        assert_eq!(history.first(), Some(&24.0), "15 minutes back from minute 39");
        assert_eq!(history.len(), 16);
        // A GPU unread for longer than the window is dropped.
        join(&snap, reading(60, vec![sample("g2", 0, 1.0)]), &mut memory, RULE);
        assert_eq!(memory.gpus_remembered(), 1);
        // At a fast cadence the point bound holds.
        let mut memory = TelemetryMemory::default();
        for s in 0..500 {
            let mut r = reading(0, vec![sample("g1", 0, 1.0)]);
            r.taken_at += chrono::TimeDelta::seconds(s);
            last = Some(join(&snap, r.clone(), &mut memory, RULE));
        }
        assert_eq!(last.unwrap().gpus[0].history.len(), HISTORY_POINTS);
    }

    #[test]
    fn exporter_owners_pods_and_processes_find_their_jobs() {
        let mut pod_job = Job::new(JobRef::new("k", "ml:train"), JobState::Running);
        pod_job.gpus_allocated = 1;
        pod_job.nodes = vec!["n1".into()];
        let mut shorter = Job::new(JobRef::new("k", "ml:tr"), JobState::Running);
        shorter.gpus_allocated = 1;
        shorter.nodes = vec!["n1".into()];
        let mut bare_pod = Job::new(JobRef::new("k", "ml:pod:notebook"), JobState::Running);
        bare_pod.gpus_allocated = 1;
        bare_pod.nodes = vec!["n2".into()];
        let mut process = Job::new(JobRef::new("local", "4242"), JobState::Running);
        process.gpus_allocated = 1;
        process.nodes = vec!["box".into()];
        let labelled = slurm_job("99", "g9", &[]);
        let snap = snapshot(vec![pod_job, shorter, bare_pod, process, labelled]);
        let pod = |node: &str, name: &str| GpuSample {
            owner: Some(GpuOwner::Pod { namespace: "ml".into(), name: name.into() }),
            ..sample(node, 0, 10.0)
        };
        let gpus = vec![
            pod("n1", "train-worker-0-abcde"),
            pod("n2", "notebook"),
            GpuSample {
                processes: vec![GpuProcess { pid: 4242, user: None, command: "python".into(), memory_mb: None }],
                ..sample("box", 0, 10.0)
            },
            GpuSample { owner: Some(GpuOwner::Job("99".into())), ..sample("g9", 3, 10.0) },
            // A pod of another namespace matches nothing.
            GpuSample {
                owner: Some(GpuOwner::Pod { namespace: "other".into(), name: "train-x".into() }),
                ..sample("n1", 1, 10.0)
            },
        ];
        let used = join(&snap, reading(0, gpus), &mut TelemetryMemory::default(), RULE);
        let owner = |node: &str, index: u32| {
            used.node(node).iter().find(|g| g.sample.index == index).and_then(|g| g.job.clone())
        };
        assert_eq!(owner("n1", 0).as_deref(), Some("ml:train"), "the longest name prefix");
        assert_eq!(owner("n2", 0).as_deref(), Some("ml:pod:notebook"));
        assert_eq!(owner("box", 0).as_deref(), Some("4242"));
        assert_eq!(owner("g9", 3).as_deref(), Some("99"));
        assert_eq!(owner("n1", 1), None);
    }

    #[test]
    fn one_gpu_job_on_a_node_without_indices_owns_its_gpus_but_two_do_not() {
        let one = snapshot(vec![slurm_job("1", "g1", &[])]);
        let used = join(&one, reading(0, vec![sample("g1", 0, 1.0)]), &mut TelemetryMemory::default(), RULE);
        assert_eq!(used.gpus[0].job.as_deref(), Some("1"));
        let two = snapshot(vec![slurm_job("1", "g1", &[]), slurm_job("2", "g1", &[])]);
        let used = join(&two, reading(0, vec![sample("g1", 0, 1.0)]), &mut TelemetryMemory::default(), RULE);
        assert_eq!(used.gpus[0].job, None);
    }
}
