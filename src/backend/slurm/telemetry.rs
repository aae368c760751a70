//! GPU telemetry over the cluster's own link: `nvidia-smi` on the nodes that hold running
//! GPU jobs, started from the login node either inside each job (`srun --overlap`) or on
//! the node itself (`ssh NODE`).
//!
//! A reading runs on at most `telemetry_max_nodes` nodes, the rest left for the next ones
//! (a rotating start, so every node is read in turn), and at most
//! [`TELEMETRY_CONCURRENCY`] commands at once within the transport's own slots, so a
//! refresh or an action in the meantime still finds one free. A node that fails is a note
//! naming it; the reading fails only when every node did.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;

use super::commands;
use super::config::TelemetryVia;
use crate::backend::exec::{CmdOutput, Transport};
// The shared reader (`crate::backend::telemetry::nvidia_smi`) replaces the stand-in at the
// merge: the same names, so this line is the whole swap.
use crate::backend::BackendError;
use crate::backend::telemetry::nvidia_smi;
use crate::model::{GpuOwner, GpuSample, JobState, Snapshot, Telemetry};

/// Node commands one reading keeps running at once: half the transport's slots (8), so
/// telemetry never holds every one of them.
pub const TELEMETRY_CONCURRENCY: usize = 4;

/// The longest a note quotes a node's error.
const NOTE_CHARS: usize = 300;

/// Nodes named in the note about skipped nodes before `…`.
const NAMED_SKIPPED: usize = 8;

/// Device indices by (job, node).
type DeviceIndices = Mutex<HashMap<(String, String), Vec<u32>>>;

/// How the backend measures its GPUs: configuration plus what it remembers between readings.
pub struct GpuReader {
    via: TelemetryVia,
    max_nodes: usize,
    nvidia_smi: String,
    /// Where the next reading starts in the sorted list of busy nodes.
    cursor: AtomicUsize,
    /// Array tasks' numeric job ids (`123_4` → `130`), learnt once per task.
    task_ids: Mutex<HashMap<String, String>>,
    /// Device indices looked up for running jobs the listing left unindexed, by (job, node):
    /// a running job's devices never change, so each is asked for once.
    device_indices: DeviceIndices,
    /// Job queries (`squeue`) the lookups above sent the controller: telemetry's own cost,
    /// apart from the refreshes', shown by `doctor`.
    job_queries: AtomicU64,
    last: Mutex<Option<LastReading>>,
    /// Time between the last two readings: the schedule telemetry runs on.
    cadence: Mutex<Option<chrono::Duration>>,
}

/// What the last reading came to, for `doctor`.
#[derive(Debug, Clone, PartialEq)]
pub struct LastReading {
    pub at: DateTime<Utc>,
    /// What it read, or why it failed.
    pub outcome: Result<ReadingSummary, String>,
    /// Its notes (nodes that failed, nodes skipped).
    pub notes: Vec<String>,
}

/// How much of the busy nodes one reading read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadingSummary {
    pub nodes_read: usize,
    /// Nodes it ran commands for (at most `telemetry_max_nodes`); 0: nothing to measure.
    pub nodes_asked: usize,
    pub gpus: usize,
}

/// One job on one node, as the snapshot has it.
#[derive(Debug, Clone, PartialEq)]
struct JobOnNode<'s> {
    /// The job's id as flightdeck shows it (`123`, `123_4`), borrowed from the snapshot: a
    /// reading of a large queue copies no id it does not send.
    id: &'s str,
    /// Its device indices there, sorted; empty when Slurm did not list them.
    indices: Vec<u32>,
}

/// One command of a reading and what it was for. It owns what it names: the commands run
/// concurrently, and a future holding a borrow of the snapshot is not `Send` to rustc there.
struct NodeCommand {
    node: String,
    /// The job it steps into (srun), for the note and the owner.
    job: Option<StepJob>,
    argv: Vec<String>,
}

/// A [`JobOnNode`] that a command steps into, owned (one per command, not per busy job).
struct StepJob {
    id: String,
    indices: Vec<u32>,
}

impl GpuReader {
    pub fn new(via: TelemetryVia, max_nodes: u32, nvidia_smi: &str) -> Self {
        Self {
            via,
            max_nodes: (max_nodes as usize).max(1),
            nvidia_smi: nvidia_smi.to_string(),
            cursor: AtomicUsize::new(0),
            task_ids: Mutex::new(HashMap::new()),
            device_indices: Mutex::new(HashMap::new()),
            job_queries: AtomicU64::new(0),
            last: Mutex::new(None),
            cadence: Mutex::new(None),
        }
    }

    /// The `Telemetry::source` of this reader's readings.
    pub fn source(&self) -> String {
        format!("nvidia-smi via {}", self.via.as_str())
    }

    /// How readings run, in words, for `doctor`.
    pub fn describe(&self) -> String {
        let how = match self.via {
            TelemetryVia::Srun => "srun --overlap --jobid=JOB --nodelist=NODE",
            TelemetryVia::Ssh => "ssh NODE",
        };
        format!("{} ({how} {} …), at most {} nodes per reading", self.source(), self.nvidia_smi, self.max_nodes)
    }

    /// What readings cost the controller, in words, for `doctor`: srun makes one step in
    /// each job it reads (an allocation lookup, a step create, a step complete: measured
    /// with sdiag on 22.05 and 24.11), never a job query; ssh makes none. An array task's
    /// numeric id is looked up once per task (`squeue --jobs`).
    pub fn cost(&self) -> String {
        let nodes = self.last().and_then(|l| l.outcome.ok()).map(|r| r.nodes_asked);
        let cadence = self
            .cadence
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|d| format!(", on its own schedule: every {} s", d.num_seconds()))
            .unwrap_or_default();
        let last = nodes
            .map(|n| format!("; {} at the last reading", crate::model::words::counted(n as u64, "node", "nodes")))
            .unwrap_or_default();
        let lookups = match self.job_queries.load(Ordering::Relaxed) {
            0 => String::new(),
            n => format!(
                "; {n} job {} so far, each looking up new jobs' array task ids or device indices once",
                if n == 1 { "query" } else { "queries" }
            ),
        };
        match self.via {
            TelemetryVia::Srun => format!(
                "3 RPCs per job and node read (allocation lookup, step create, step complete), no job query per reading{lookups}{last}{cadence}"
            ),
            TelemetryVia::Ssh => format!("no controller RPC per reading (ssh to the nodes){lookups}{last}{cadence}"),
        }
    }

    pub fn last(&self) -> Option<LastReading> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn program(&self) -> Vec<String> {
        let mut v = vec![self.nvidia_smi.clone()];
        v.extend(nvidia_smi::QUERY_GPU.iter().map(|s| s.to_string()));
        v
    }

    /// One reading of the GPUs that `snapshot`'s running jobs hold.
    pub async fn read(
        &self,
        transport: &Transport,
        timeout: Duration,
        snapshot: &Snapshot,
    ) -> Result<Telemetry, BackendError> {
        let taken_at = Utc::now();
        let mut notes = Vec::new();
        let result = self.read_inner(transport, timeout, snapshot, taken_at, &mut notes).await;
        let outcome = match &result {
            Ok((t, nodes_read, nodes_asked)) => {
                Ok(ReadingSummary { nodes_read: *nodes_read, nodes_asked: *nodes_asked, gpus: t.gpus.len() })
            }
            Err(e) => Err(e.to_string()),
        };
        let previous =
            self.last.lock().unwrap_or_else(|e| e.into_inner()).replace(LastReading { at: taken_at, outcome, notes });
        if let Some(previous) = previous {
            *self.cadence.lock().unwrap_or_else(|e| e.into_inner()) = Some(taken_at - previous.at);
        }
        result.map(|(t, _, _)| t)
    }

    async fn read_inner(
        &self,
        transport: &Transport,
        timeout: Duration,
        snapshot: &Snapshot,
        taken_at: DateTime<Utc>,
        last_notes: &mut Vec<String>,
    ) -> Result<(Telemetry, usize, usize), BackendError> {
        let mut telemetry = Telemetry { taken_at, source: self.source(), gpus: Vec::new(), notes: Vec::new() };
        let mut busy = busy_nodes(snapshot);
        if busy.is_empty() {
            telemetry.notes.push("no running job holds GPUs: nothing to measure".into());
            last_notes.clone_from(&telemetry.notes);
            return Ok((telemetry, 0, 0));
        }
        let names: Vec<&str> = busy.keys().copied().collect();
        let start = self.cursor.fetch_add(self.max_nodes, Ordering::Relaxed);
        let (chosen, skipped) = rotate(&names, start, self.max_nodes);
        if !skipped.is_empty() {
            telemetry.notes.push(skipped_note(&skipped, names.len(), self.max_nodes));
        }
        let (cache, cluster) = ((&self.device_indices, &self.job_queries), snapshot.cluster.as_str());
        fill_device_indices(cache, transport, timeout, cluster, &chosen, &mut busy, &mut telemetry.notes).await;
        let limit = commands::node_command_limit(timeout);
        let program = self.program();
        let mut planned = Vec::new();
        let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        match self.via {
            TelemetryVia::Srun => {
                let ids = self.numeric_ids(transport, timeout, &chosen, &busy, &mut telemetry.notes).await;
                for node in &chosen {
                    for job in &busy[node] {
                        let Some(raw) = ids.get(job.id) else {
                            failed.entry(node.to_string()).or_default().push(format!(
                                "job {}: its numeric job id is not known, so srun cannot step into it",
                                job.id
                            ));
                            continue;
                        };
                        match commands::srun_on_node(raw, node, &program, limit) {
                            Ok(argv) => {
                                let job = StepJob { id: job.id.to_string(), indices: job.indices.clone() };
                                planned.push(NodeCommand { node: node.to_string(), job: Some(job), argv })
                            }
                            Err(e) => failed.entry(node.to_string()).or_default().push(format!("job {}: {e}", job.id)),
                        }
                    }
                }
            }
            TelemetryVia::Ssh => {
                for node in &chosen {
                    match commands::ssh_to_node(node, &program, limit) {
                        Ok(argv) => planned.push(NodeCommand { node: node.to_string(), job: None, argv }),
                        Err(e) => failed.entry(node.to_string()).or_default().push(e.to_string()),
                    }
                }
            }
        }

        let runs = futures_util::stream::iter(planned.into_iter().map(|cmd| async move {
            let out = transport.output(&cmd.argv, None, timeout).await;
            (cmd, out)
        }))
        .buffer_unordered(TELEMETRY_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;

        let mut read: BTreeSet<String> = BTreeSet::new();
        for (cmd, out) in runs {
            let job_words = cmd.job.as_ref().map(|j| format!("job {}: ", j.id)).unwrap_or_default();
            let samples = match out {
                Ok(out) if out.success() => nvidia_smi::parse_gpus(&cmd.node, &String::from_utf8_lossy(&out.stdout))
                    .map_err(|e| format!("{job_words}cannot read nvidia-smi's output: {e}")),
                Ok(out) => Err(format!("{job_words}{}", failure_text(&out, limit))),
                Err(e) => Err(format!("{job_words}{}", one_line(&e.to_string()))),
            };
            let samples = samples.and_then(|samples| match &cmd.job {
                Some(job) => job_view_to_node(samples, &job.indices)
                    .map(|s| owned_by(s, &job.id))
                    .map_err(|why| format!("{job_words}{why}")),
                None => Ok(owners_from_allocations(samples, &busy[cmd.node.as_str()])),
            });
            match samples {
                Ok(samples) => {
                    read.insert(cmd.node.clone());
                    telemetry.gpus.extend(samples);
                }
                Err(why) => failed.entry(cmd.node).or_default().push(why),
            }
        }
        for (node, whys) in &failed {
            for why in whys {
                telemetry.notes.push(format!("{node}: {why}"));
            }
        }
        let asked = chosen.len();
        last_notes.clone_from(&telemetry.notes);
        if read.is_empty() {
            return Err(BackendError::Command {
                command: self.source(),
                status: None,
                stderr: format!("no node could be read: {}", telemetry.notes.join("; ")),
            });
        }
        telemetry.gpus.sort_by(|a, b| (a.node.as_str(), a.index).cmp(&(b.node.as_str(), b.index)));
        Ok((telemetry, read.len(), asked))
    }

    /// The numeric job ids srun needs for the jobs on `chosen`: a plain job's is its id; an
    /// array task's is looked up once (one `squeue` for every new task of the reading) and
    /// remembered while the task runs.
    async fn numeric_ids(
        &self,
        transport: &Transport,
        timeout: Duration,
        chosen: &[&str],
        busy: &BTreeMap<&str, Vec<JobOnNode<'_>>>,
        notes: &mut Vec<String>,
    ) -> HashMap<String, String> {
        let jobs: Vec<&str> = chosen.iter().flat_map(|n| busy[n].iter().map(|j| j.id)).collect();
        let mut ids = HashMap::new();
        // In the order met (the command's order), each once however many nodes it runs on.
        let mut unknown = Vec::new();
        let mut asked: HashSet<&str> = HashSet::new();
        {
            let mut cache = self.task_ids.lock().unwrap_or_else(|e| e.into_inner());
            // Only tasks still running are kept: the cache never outgrows the queue.
            let running: HashSet<&str> = busy.values().flatten().map(|j| j.id).collect();
            cache.retain(|task, _| running.contains(task.as_str()));
            for id in &jobs {
                if id.bytes().all(|b| b.is_ascii_digit()) {
                    ids.insert(id.to_string(), id.to_string());
                } else if let Some(raw) = cache.get(*id) {
                    ids.insert(id.to_string(), raw.clone());
                } else if asked.insert(*id) {
                    unknown.push(*id);
                }
            }
        }
        if unknown.is_empty() {
            return ids;
        }
        let looked_up = match commands::array_task_ids(&unknown) {
            Ok(argv) => match counted(&self.job_queries, transport, &argv, timeout).await {
                Ok(out) if out.success() => Ok(parse_task_ids(&String::from_utf8_lossy(&out.stdout))),
                Ok(out) => Err(failure_text(&out, timeout.as_secs())),
                Err(e) => Err(one_line(&e.to_string())),
            },
            Err(e) => Err(e.to_string()),
        };
        match looked_up {
            Ok(found) => {
                let mut cache = self.task_ids.lock().unwrap_or_else(|e| e.into_inner());
                cache.extend(found.iter().map(|(task, raw)| (task.clone(), raw.clone())));
                ids.extend(found);
            }
            Err(why) => notes.push(format!("array tasks' job ids could not be looked up: {why}")),
        }
        ids
    }
}

/// Device indices for the jobs on `chosen` nodes that the snapshot left without them (the
/// field listing indexes a node's GPUs only where one job holds them all): one
/// `squeue --json --jobs=…` for just those jobs, whose `gres_detail` lists them. A job it
/// cannot index stays without, and its reading says so.
async fn fill_device_indices<'s>(
    (cache, job_queries): (&DeviceIndices, &AtomicU64),
    transport: &Transport,
    timeout: Duration,
    cluster: &str,
    chosen: &[&'s str],
    busy: &mut BTreeMap<&'s str, Vec<JobOnNode<'s>>>,
    notes: &mut Vec<String>,
) {
    // In the order met, each once however many chosen nodes it runs on.
    let mut missing: Vec<&'s str> = Vec::new();
    let mut seen: HashSet<&'s str> = HashSet::new();
    {
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        // Only jobs still running are kept: the cache never outgrows the queue.
        cache.retain(|(job, node), _| busy.get(node.as_str()).is_some_and(|jobs| jobs.iter().any(|j| j.id == job)));
        for node in chosen {
            for job in busy.get_mut(node).into_iter().flatten().filter(|j| j.indices.is_empty()) {
                match cache.get(&(job.id.to_string(), node.to_string())) {
                    Some(known) => job.indices.clone_from(known),
                    None if seen.insert(job.id) => missing.push(job.id),
                    None => {}
                }
            }
        }
    }
    if missing.is_empty() {
        return;
    }
    let read = match commands::jobs_json_of(&missing) {
        Ok(argv) => match counted(job_queries, transport, &argv, timeout).await {
            Ok(out) if out.success() => {
                super::parse::parse_jobs_json(cluster, &out.stdout).map_err(|e| format!("cannot read it: {e}"))
            }
            Ok(out) => Err(failure_text(&out, timeout.as_secs())),
            Err(e) => Err(one_line(&e.to_string())),
        },
        Err(e) => Err(e.to_string()),
    };
    let doc = match read {
        Ok(doc) => doc,
        Err(why) => {
            notes.push(format!("the jobs' device indices could not be looked up (squeue --json): {why}"));
            return;
        }
    };
    let chosen: HashSet<&str> = chosen.iter().copied().collect();
    for job in &doc.jobs {
        for alloc in job.gpu_allocations.iter().filter(|a| !a.indices.is_empty() && chosen.contains(a.node.as_str())) {
            let Some(on_node) = busy.get_mut(alloc.node.as_str()) else { continue };
            if let Some(j) = on_node.iter_mut().find(|j| j.id == job.job_ref.id && j.indices.is_empty()) {
                j.indices = alloc.indices.clone();
                j.indices.sort_unstable();
                j.indices.dedup();
                let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
                cache.insert((j.id.to_string(), alloc.node.clone()), j.indices.clone());
            }
        }
    }
}

/// A job query of telemetry's own, counted for `doctor`.
async fn counted(
    job_queries: &AtomicU64,
    transport: &Transport,
    argv: &[String],
    timeout: Duration,
) -> Result<CmdOutput, BackendError> {
    job_queries.fetch_add(1, Ordering::Relaxed);
    transport.output(argv, None, timeout).await
}

/// `squeue --format=%i|%A` lines → array task id → numeric job id.
fn parse_task_ids(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.trim().split_once('|'))
        .filter(|(_, raw)| !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()))
        .map(|(task, raw)| (task.to_string(), raw.to_string()))
        .collect()
}

/// The nodes that hold running jobs with GPUs, each with those jobs (in snapshot order),
/// borrowed from the snapshot: nothing of it is copied but the device indices.
fn busy_nodes(snapshot: &Snapshot) -> BTreeMap<&str, Vec<JobOnNode<'_>>> {
    let mut busy: BTreeMap<&str, Vec<JobOnNode<'_>>> = BTreeMap::new();
    for job in snapshot.jobs.iter().filter(|j| j.state == JobState::Running) {
        for alloc in job.gpu_allocations.iter().filter(|a| a.count > 0 || !a.indices.is_empty()) {
            let mut indices = alloc.indices.clone();
            indices.sort_unstable();
            indices.dedup();
            let jobs = busy.entry(alloc.node.as_str()).or_default();
            match jobs.iter_mut().find(|j| j.id == job.job_ref.id) {
                // One job, two allocation entries on a node (two GPU types): one step sees both.
                Some(j) => {
                    j.indices.extend(indices);
                    j.indices.sort_unstable();
                    j.indices.dedup();
                }
                None => jobs.push(JobOnNode { id: &job.job_ref.id, indices }),
            }
        }
    }
    busy
}

/// `max` of `names` from `start` on (wrapping), and the ones left for later readings.
fn rotate<'a>(names: &[&'a str], start: usize, max: usize) -> (Vec<&'a str>, Vec<&'a str>) {
    let n = names.len();
    if n <= max {
        return (names.to_vec(), Vec::new());
    }
    let first = start % n;
    let mut chosen: Vec<&str> = (0..max).map(|i| names[(first + i) % n]).collect();
    let mut skipped: Vec<&str> = (max..n).map(|i| names[(first + i) % n]).collect();
    chosen.sort();
    skipped.sort();
    (chosen, skipped)
}

fn skipped_note(skipped: &[&str], total: usize, max: usize) -> String {
    let mut named: Vec<&str> = skipped.iter().take(NAMED_SKIPPED).copied().collect();
    if skipped.len() > NAMED_SKIPPED {
        named.push("…");
    }
    format!(
        "{} of {total} nodes with running GPU jobs not read this time (telemetry_max_nodes = {max}; they are read in turn): {}",
        skipped.len(),
        named.join(", ")
    )
}

/// What nvidia-smi printed inside a job's step, with the node's own device indices.
///
/// A device-constrained step (cgroup) sees only the job's GPUs, numbered from 0: the `i`-th
/// is the job's `i`-th index on the node (`job_indices`, sorted). An unconstrained one sees
/// every GPU of the node under its own index: the job's are kept, the rest are other jobs'.
pub(crate) fn job_view_to_node(mut samples: Vec<GpuSample>, job_indices: &[u32]) -> Result<Vec<GpuSample>, String> {
    if job_indices.is_empty() {
        return Err("Slurm did not list the job's device indices, so its GPUs cannot be told apart".into());
    }
    let mut job: Vec<u32> = job_indices.to_vec();
    job.sort_unstable();
    job.dedup();
    samples.sort_by_key(|s| s.index);
    let printed: Vec<u32> = samples.iter().map(|s| s.index).collect();
    if let Some(w) = printed.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("nvidia-smi printed device index {} twice", w[0]));
    }
    let renumbered: Vec<u32> = (0..job.len() as u32).collect();
    if printed == job {
        return Ok(samples);
    }
    if printed == renumbered {
        for (sample, index) in samples.iter_mut().zip(&job) {
            sample.index = *index;
        }
        return Ok(samples);
    }
    if printed.len() > job.len() && job.iter().all(|i| printed.contains(i)) {
        samples.retain(|s| job.contains(&s.index));
        return Ok(samples);
    }
    Err(format!("nvidia-smi inside the job showed GPUs {printed:?}; the job holds {job:?} on this node"))
}

fn owned_by(mut samples: Vec<GpuSample>, job: &str) -> Vec<GpuSample> {
    for s in &mut samples {
        s.owner = Some(GpuOwner::Job(job.to_string()));
    }
    samples
}

/// Every GPU of a node (ssh), each owned by the running job whose allocation lists its index.
fn owners_from_allocations(mut samples: Vec<GpuSample>, jobs: &[JobOnNode<'_>]) -> Vec<GpuSample> {
    for s in &mut samples {
        s.owner = jobs.iter().find(|j| j.indices.contains(&s.index)).map(|j| GpuOwner::Job(j.id.to_string()));
    }
    samples
}

/// A failed node command in a line: its own error lines (`srun: error: …`), else what it
/// printed, else its exit status; a command ended at its limit says so.
fn failure_text(out: &CmdOutput, limit_secs: u64) -> String {
    if out.status.is_some_and(|s| commands::NODE_COMMAND_TIMED_OUT.contains(&s)) {
        return format!("no answer within {limit_secs} s");
    }
    let mut errors: Vec<&str> =
        out.stderr.lines().map(str::trim).filter(|l| l.to_ascii_lowercase().contains("error")).collect();
    // srun and the node's slurmstepd write to the same stream in no fixed order: the node's
    // words (why it failed: `execve(): …`) first, srun's summary after, the same every time.
    errors.sort_by_key(|l| !l.starts_with("slurmstepd"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut text = if !errors.is_empty() {
        errors.join("; ")
    } else if !out.stderr.trim().is_empty() {
        one_line(&out.stderr)
    } else {
        one_line(&stdout)
    };
    let status = out.status.map(|s| format!("exit {s}")).unwrap_or_else(|| "killed by a signal".into());
    if text.is_empty() {
        text = format!("{status}, no output");
    } else if errors.is_empty() {
        text = format!("{text} ({status})");
    }
    one_line(&text)
}

/// Text for a note: one line, bounded.
fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
    if joined.chars().count() <= NOTE_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(NOTE_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuAllocation, Job, JobRef};

    fn sample(index: u32) -> GpuSample {
        GpuSample::new("gpu-03", index)
    }

    #[test]
    fn a_constrained_step_is_renumbered_to_the_jobs_indices() {
        // The job holds GPUs 2 and 5 of the node; inside its cgroup they are 0 and 1.
        let got = job_view_to_node(vec![sample(1), sample(0)], &[5, 2]).unwrap();
        assert_eq!(got.iter().map(|s| s.index).collect::<Vec<_>>(), [2, 5]);
        // Lines keep their figures: the first printed line is the job's lowest index.
        let mut a = sample(0);
        a.utilisation = Some(10.0);
        let mut b = sample(1);
        b.utilisation = Some(90.0);
        let got = job_view_to_node(vec![b, a], &[3, 7]).unwrap();
        assert_eq!(
            (got[0].index, got[0].utilisation, got[1].index, got[1].utilisation),
            (3, Some(10.0), 7, Some(90.0))
        );
    }

    #[test]
    fn an_unconstrained_step_keeps_the_jobs_own_gpus() {
        let all: Vec<GpuSample> = (0..4).map(sample).collect();
        let got = job_view_to_node(all.clone(), &[1, 3]).unwrap();
        assert_eq!(got.iter().map(|s| s.index).collect::<Vec<_>>(), [1, 3]);
        // Real indices that are the job's already (a job holding the whole node) stay.
        let got = job_view_to_node(all, &[0, 1, 2, 3]).unwrap();
        assert_eq!(got.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
        let got = job_view_to_node(vec![sample(2), sample(3)], &[2, 3]).unwrap();
        assert_eq!(got.iter().map(|s| s.index).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn views_that_do_not_fit_the_allocation_are_refused() {
        let err = job_view_to_node(vec![sample(0)], &[]).unwrap_err();
        assert!(err.contains("device indices"), "{err}");
        let err = job_view_to_node(vec![sample(0)], &[2, 3]).unwrap_err();
        assert!(err.contains("[0]") && err.contains("[2, 3]"), "{err}");
        assert!(job_view_to_node(vec![sample(0), sample(0)], &[2, 3]).is_err());
        assert!(job_view_to_node(vec![sample(0), sample(1), sample(2)], &[3, 4]).is_err());
        assert!(job_view_to_node(vec![], &[1]).is_err());
    }

    fn running(id: &str, allocs: &[(&str, &[u32])]) -> Job {
        let mut j = Job::new(JobRef::new("hpc", id), JobState::Running);
        j.gpu_allocations = allocs
            .iter()
            .map(|(node, idx)| GpuAllocation {
                node: node.to_string(),
                model: Some("h100".into()),
                count: idx.len() as u32,
                indices: idx.to_vec(),
            })
            .collect();
        j
    }

    fn snapshot(jobs: Vec<Job>) -> Snapshot {
        Snapshot { cluster: "hpc".into(), jobs, ..Snapshot::default() }
    }

    #[test]
    fn busy_nodes_are_the_running_jobs_allocations() {
        let mut pending = running("9", &[("gpu-09", &[0])]);
        pending.state = JobState::Pending;
        let cpu_only = running("8", &[]);
        let snap = snapshot(vec![
            running("12", &[("gpu-02", &[3, 1]), ("gpu-01", &[0])]),
            running("13_4", &[("gpu-02", &[0])]),
            pending,
            cpu_only,
        ]);
        let busy = busy_nodes(&snap);
        assert_eq!(busy.keys().copied().collect::<Vec<_>>(), ["gpu-01", "gpu-02"]);
        assert_eq!(
            busy["gpu-02"],
            vec![JobOnNode { id: "12", indices: vec![1, 3] }, JobOnNode { id: "13_4", indices: vec![0] }]
        );
    }

    #[test]
    fn nodes_past_the_bound_rotate_into_later_readings() {
        let refs = ["a", "b", "c", "d", "e"];
        let mut seen = std::collections::BTreeSet::new();
        for reading in 0..3 {
            let (chosen, skipped) = rotate(&refs, reading * 2, 2);
            assert_eq!((chosen.len(), skipped.len()), (2, 3));
            seen.extend(chosen);
        }
        assert_eq!(seen.len(), 5, "every node read within three readings");
        let (chosen, skipped) = rotate(&refs, 7, 10);
        assert_eq!((chosen.len(), skipped.len()), (5, 0));
        let note = skipped_note(&refs, 5, 1);
        assert!(
            note.starts_with("5 of 5 nodes")
                && note.contains("telemetry_max_nodes = 1")
                && note.ends_with("a, b, c, d, e")
        );
    }

    #[test]
    fn owners_over_ssh_come_from_the_allocations() {
        let jobs = vec![JobOnNode { id: "12", indices: vec![0, 1] }, JobOnNode { id: "14", indices: vec![3] }];
        let got = owners_from_allocations((0..4).map(sample).collect(), &jobs);
        let owners: Vec<Option<GpuOwner>> = got.into_iter().map(|s| s.owner).collect();
        let job = |id: &str| Some(GpuOwner::Job(id.into()));
        assert_eq!(owners, [job("12"), job("12"), None, job("14")]);
    }

    #[test]
    fn failures_read_as_the_nodes_own_words() {
        let out = |status: Option<i32>, stdout: &str, stderr: &str| CmdOutput {
            status,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.into(),
        };
        let srun = "srun: error: gpu-03: task 0: Exited with exit code 2\n\
                    slurmstepd-gpu-03: error: execve(): /x/nvidia-smi: No such file or directory\n";
        assert_eq!(
            failure_text(&out(Some(2), "", srun), 21),
            "slurmstepd-gpu-03: error: execve(): /x/nvidia-smi: No such file or directory; srun: error: gpu-03: task 0: Exited with exit code 2"
        );
        assert_eq!(failure_text(&out(Some(6), "No devices were found\n", ""), 21), "No devices were found (exit 6)");
        assert_eq!(failure_text(&out(Some(124), "", ""), 21), "no answer within 21 s");
        assert_eq!(failure_text(&out(None, "", ""), 21), "killed by a signal, no output");
        assert_eq!(
            failure_text(
                &out(Some(255), "", "ssh: Could not resolve hostname gpu-03: Name or service not known\n"),
                21
            ),
            "ssh: Could not resolve hostname gpu-03: Name or service not known (exit 255)"
        );
        assert!(failure_text(&out(Some(1), "", &"error ".repeat(200)), 21).chars().count() <= NOTE_CHARS + 1);
    }

    #[test]
    fn array_task_ids_are_read_from_squeue() {
        let got = parse_task_ids("10156_1|10156\n10156_0|10157\njunk\n12_3|\n");
        assert_eq!(got.len(), 2);
        assert_eq!((got["10156_0"].as_str(), got["10156_1"].as_str()), ("10157", "10156"));
    }

    /// No busy node: a reading with a note, not an error, and no command run. (Whole readings
    /// with srun and ssh run against the test bed: tests/bed/slurm_telemetry_live.rs.)
    #[tokio::test]
    async fn nothing_to_measure_is_a_note() {
        let reader = GpuReader::new(TelemetryVia::Srun, 64, "nvidia-smi");
        let t = Transport::local();
        let got = reader.read(&t, Duration::from_secs(5), &snapshot(vec![])).await.unwrap();
        assert!(got.gpus.is_empty());
        assert_eq!(got.source, "nvidia-smi via srun");
        assert_eq!(got.notes, ["no running job holds GPUs: nothing to measure"]);
        assert_eq!(t.commands_run(), 0);
        let last = reader.last().unwrap();
        assert_eq!(last.outcome, Ok(ReadingSummary { nodes_read: 0, nodes_asked: 0, gpus: 0 }));
        assert_eq!(last.notes, got.notes);
    }
}
