//! The row cache: every job and node of every cluster flattened once per new `FleetState`,
//! with a precomputed fuzzy-match haystack per row, the GPU map and the overview totals.
//!
//! Rows point into the shared snapshots (cluster index + index), so a refresh of 100,000 jobs
//! costs one pass here and nothing per frame.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::haystack::Haystacks;
use super::row_index::RowIndex;
use chrono::{DateTime, Utc};

use crate::columns::{JobColumn, JobContext, NodeColumn};
use crate::fleet::FleetState;
use crate::model::gpu_totals::{GpuTotals, gpu_totals};
use crate::model::usage::{self, Usage, UsageBy};
use crate::model::{GpuReading, GpuUse, Health, Job, JobGpuUse, JobRef, JobState, Node, NodeRef, NodeState, Snapshot};
use crate::tui::widgets::text;

/// The GPU map's cells per node at most.
pub const MAX_CELLS_PER_NODE: usize = 1024;

/// A job holding GPUs on a node: job row, model, count, device indices.
type Holder<'a> = (u32, Option<&'a str>, u32, &'a [u32]);

/// One job of the flattened list. Its haystack (`cluster/id name user partition state
/// reason`, for the fuzzy filter) is the same row of [`RowCache::job_hays`].
pub struct JobRow {
    /// Index into [`RowCache::snaps`].
    pub snap: u16,
    /// Index into that snapshot's `jobs`.
    pub index: u32,
    /// The job's state and user (index into [`RowCache::users`], [`NO_USER`] for none),
    /// kept here so that the quick filters read no job.
    pub state: JobState,
    pub user: u32,
}

/// [`JobRow::user`] of a job without a user.
pub const NO_USER: u32 = u32::MAX;

/// A job list's visible row that is an array's own (parent) row: `ARRAY_ROW | index into
/// [`RowCache::arrays`]`; rows without this bit are job rows.
pub const ARRAY_ROW: u32 = 1 << 31;

/// [`RowCache::job_array`] of a job that belongs to no folded array.
pub const NO_ARRAY: u32 = u32::MAX;

/// The stable identity of an array's parent row: `cluster/ARRAY_[*]` (the shown id,
/// `12_[0-99]`, changes as tasks come and go; this does not).
pub fn array_key(cluster: &str, array_id: &str) -> JobRef {
    JobRef::new(cluster, format!("{array_id}_[*]"))
}

/// The rows of one Slurm array (same cluster and array id) that has two rows or more: they
/// fold into one parent row in the jobs table.
pub struct ArrayGroup {
    pub snap: u16,
    pub array_id: String,
    /// The parent row's identity (see [`array_key`]).
    pub key: JobRef,
    /// Its task rows, by task index (a pending range by its first index).
    pub rows: Vec<u32>,
    /// The parent row as a job: id `12_[0-99]` (lowest to highest task index known, the
    /// pending range counted), the first task's name and fields, the most live state of its
    /// tasks, the count by state (`R 3 · PD 5 · CD 2`) as the reason, and as GPUs the sum of
    /// its live tasks' (a pending range counted per task; of every task once all ended).
    pub job: Job,
}

/// `4-99%2`, `1,3,5-9:2` → lowest, highest index and how many tasks; `None` if unreadable.
pub fn task_range(spec: &str) -> Option<(u32, u32, u64)> {
    let spec = spec.split('%').next()?.trim().trim_start_matches('[').trim_end_matches(']');
    let (mut lo, mut hi, mut count) = (u32::MAX, 0u32, 0u64);
    for part in spec.split(',') {
        let (range, step) = part.split_once(':').unwrap_or((part, "1"));
        let step = step.trim().parse::<u32>().ok().filter(|s| *s > 0)?;
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
        if b < a {
            return None;
        }
        let last = a + (b - a) / step * step;
        lo = lo.min(a);
        hi = hi.max(last);
        count += u64::from((b - a) / step) + 1;
    }
    (count > 0).then_some((lo, hi, count))
}

/// The short code of a state in an array's count (Slurm's compact codes).
fn state_code(state: JobState) -> &'static str {
    match state {
        JobState::Pending => "PD",
        JobState::Held => "H",
        JobState::Running => "R",
        JobState::Suspended => "S",
        JobState::Completing => "CG",
        JobState::Completed => "CD",
        JobState::Failed => "F",
        JobState::Cancelled => "CA",
        JobState::Timeout => "TO",
        JobState::Preempted => "PR",
        JobState::NodeFail => "NF",
        JobState::OutOfMemory => "OOM",
        JobState::Unknown => "?",
    }
}

/// The order of an array's count: live states first, the most live first.
const COUNT_ORDER: [JobState; 13] = [
    JobState::Running,
    JobState::Completing,
    JobState::Suspended,
    JobState::Pending,
    JobState::Held,
    JobState::Completed,
    JobState::Failed,
    JobState::Cancelled,
    JobState::Timeout,
    JobState::Preempted,
    JobState::NodeFail,
    JobState::OutOfMemory,
    JobState::Unknown,
];

/// One node of the flattened list. Its haystack (`cluster/name state flags reason
/// gpu-models partitions`) is the same row of [`RowCache::node_hays`].
pub struct NodeRow {
    pub snap: u16,
    pub index: u32,
}

/// One GPU slot on the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Held by the job at this row of [`RowCache::jobs`], or by a job the map cannot name.
    Allocated(Option<u32>),
    Free,
    /// Unhealthy, or on a node that cannot take work.
    Unavailable,
}

/// The GPUs of one node, in device order.
pub struct GpuNode {
    /// Row in [`RowCache::nodes`].
    pub node: u32,
    /// Model of each cell, as an index into the node's `gpus`.
    pub models: Vec<u16>,
    pub cells: Vec<Cell>,
}

impl GpuNode {
    pub fn count(&self, want: Cell) -> usize {
        self.cells.iter().filter(|c| std::mem::discriminant(*c) == std::mem::discriminant(&want)).count()
    }
}

/// GPU totals of one model on one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelTotals {
    pub model: String,
    pub total: u64,
    pub allocated: u64,
    pub unavailable: u64,
}

impl ModelTotals {
    pub fn idle(&self) -> u64 {
        self.total.saturating_sub(self.allocated + self.unavailable)
    }
}

/// What the overview shows for one cluster.
#[derive(Debug, Clone)]
pub struct ClusterSummary {
    pub name: String,
    pub kind: String,
    pub health: Health,
    pub release: Option<String>,
    /// What the cluster's data lacks and why (see `Snapshot::notes`).
    pub notes: Vec<String>,
    pub taken_at: Option<DateTime<Utc>>,
    pub has_snapshot: bool,
    pub models: Vec<ModelTotals>,
    pub jobs_by_state: BTreeMap<JobState, u32>,
    /// Waiting jobs by reason, most common first.
    pub pending_by_reason: Vec<(String, u32)>,
    pub nodes_by_state: BTreeMap<NodeState, u32>,
    pub nodes_total: u32,
    pub problem_nodes: u32,
    pub unhealthy_gpus: u64,
    /// One line per queue with a GPU quota (Kueue ClusterQueues), ready to show.
    pub quota_lines: Vec<String>,
    /// Dollars per hour, where the backend reports prices ([`Snapshot::cost_per_hour`]).
    pub cost_per_hour: Option<f64>,
    /// The GPU telemetry line (`telemetry (nvidia-smi via srun): 16 GPUs read, mean 41% ·
    /// 12 GPUs idle-allocated: 3 jobs`), or why it failed; `None` without telemetry.
    pub telemetry: Option<TelemetryLine>,
}

/// What the overview says of a cluster's GPU telemetry.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryLine {
    pub source: String,
    pub gpus_read: usize,
    pub mean_utilisation: Option<f32>,
    pub idle_jobs: usize,
    pub idle_gpus: u32,
    pub error: Option<String>,
}

impl TelemetryLine {
    fn of(cluster: &crate::model::ClusterState) -> Option<TelemetryLine> {
        let used = cluster.gpu_use.as_deref();
        if used.is_none() && cluster.telemetry_error.is_none() {
            return None;
        }
        let figures: Vec<f32> = used.iter().flat_map(|u| u.gpus.iter().filter_map(|g| g.sample.utilisation)).collect();
        let (idle_jobs, idle_gpus) = used.map_or((0, 0), |u| u.idle());
        Some(TelemetryLine {
            source: used.map_or_else(String::new, |u| u.source.clone()),
            gpus_read: used.map_or(0, |u| u.gpus.len()),
            mean_utilisation: (!figures.is_empty()).then(|| figures.iter().sum::<f32>() / figures.len() as f32),
            idle_jobs,
            idle_gpus,
            error: cluster.telemetry_error.clone(),
        })
    }
}

/// Everything derived from one `FleetState`.
pub struct RowCache {
    pub fleet: Arc<FleetState>,
    /// Clusters that have a snapshot, with their index in `fleet.clusters`.
    pub snaps: Vec<(usize, Arc<Snapshot>)>,
    pub jobs: Vec<JobRow>,
    pub nodes: Vec<NodeRow>,
    /// Each job row's and node row's text for the fuzzy filter.
    pub job_hays: Haystacks,
    pub node_hays: Haystacks,
    /// Job rows by `JobRef`, node rows by `NodeRef` ([`RowCache::job_row`], [`RowCache::node_row`]).
    job_index: RowIndex,
    node_index: RowIndex,
    /// One entry per node that has GPUs, in node-row order.
    pub gpu_nodes: Vec<GpuNode>,
    pub summaries: Vec<ClusterSummary>,
    /// GPUs per canonical model over every cluster: the overview's fleet lines.
    pub fleet_gpus: Vec<GpuTotals>,
    /// Every user that owns a job, sorted (for `:user` completion).
    pub users: Vec<String>,
    /// The widest cell of each cockpit jobs-table column over every job
    /// (see [`JobColumn::COCKPIT`]).
    pub job_widths: Vec<usize>,
    /// The same for the nodes table.
    pub node_widths: Vec<usize>,
    /// Every Slurm array with two rows or more (see [`ArrayGroup`]), in row order.
    pub arrays: Vec<ArrayGroup>,
    /// Per job row, its index in [`RowCache::arrays`], or [`NO_ARRAY`].
    pub job_array: Vec<u32>,
    /// Parent row identity ([`array_key`]) → index in [`RowCache::arrays`].
    pub array_index: HashMap<JobRef, u32>,
    /// What each user holds now (by user, no window; counted by a [`usage::Tally`] in the
    /// pass over the jobs, as [`usage::compute`] counts): the usage screen's rows, taken here
    /// so a refresh costs the UI thread nothing for them.
    pub usage: Usage,
}

impl std::fmt::Debug for RowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCache")
            .field("version", &self.fleet.version)
            .field("jobs", &self.jobs.len())
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

/// `queue gpu-cq (cohort c): h100 12/16 GPUs · 3 pending, 2 admitted` for each queue with a
/// GPU quota, in whole GPUs.
fn quota_lines(queues: &[crate::model::Queue]) -> Vec<String> {
    queues
        .iter()
        .filter_map(|q| {
            let gpus: Vec<String> = q
                .quota
                .iter()
                .filter(|r| r.is_gpu())
                .map(|r| {
                    let borrowed = if r.borrowed_milli > 0 {
                        format!(" (+{} borrowed)", r.borrowed_milli / 1000)
                    } else {
                        String::new()
                    };
                    format!("{} {}/{}{borrowed}", r.flavor, r.used_milli / 1000, r.nominal_milli / 1000)
                })
                .collect();
            if gpus.is_empty() {
                return None;
            }
            let cohort = q.cohort.as_deref().map(|c| format!(" (cohort {c})")).unwrap_or_default();
            Some(format!(
                "queue {}{cohort}: {} GPUs · {} pending, {} admitted",
                q.name,
                gpus.join(", "),
                q.workloads_pending,
                q.workloads_admitted
            ))
        })
        .collect()
}

/// A node that needs a human: down, drained, draining, not responding, invalid or failed.
pub fn is_problem_node(node: &Node) -> bool {
    matches!(node.state, NodeState::Down | NodeState::Drained | NodeState::Draining | NodeState::Unknown)
        || ["DRAIN", "DOWN", "NOT_RESPONDING", "INVALID", "INVALID_REG", "FAIL", "FAILING"]
            .iter()
            .any(|f| node.has_flag(f))
}

/// Whether `new` lists what `old` listed, cluster by cluster (same jobs, nodes, queues,
/// telemetry and capabilities; snapshots shared or equal record by record), so that rows
/// built from `old` serve `new` unchanged. Health, refresh counts and timings and the
/// snapshots' `taken_at` may differ: [`RowCache::restamp`] takes those over. A pass over
/// every record when the snapshots are new: run off the UI thread.
pub fn same_listing(old: &FleetState, new: &FleetState) -> bool {
    old.read_only == new.read_only
        && old.clusters.len() == new.clusters.len()
        && old.clusters.iter().zip(&new.clusters).all(|(a, b)| {
            a.name == b.name
                && a.kind == b.kind
                && a.capabilities == b.capabilities
                && a.spec_fields == b.spec_fields
                && a.shape_fields == b.shape_fields
                && a.telemetry_error == b.telemetry_error
                && match (&a.gpu_use, &b.gpu_use) {
                    (None, None) => true,
                    (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
                    _ => false,
                }
                && match (&a.snapshot, &b.snapshot) {
                    (None, None) => true,
                    (Some(x), Some(y)) => Arc::ptr_eq(x, y) || same_records(x, y),
                    _ => false,
                }
        })
}

/// Two snapshots of one cluster list the same records (their `taken_at` aside).
fn same_records(a: &Snapshot, b: &Snapshot) -> bool {
    a.cluster == b.cluster
        && a.release == b.release
        && a.notes == b.notes
        && a.queues == b.queues
        && a.jobs == b.jobs
        && a.nodes == b.nodes
}

impl RowCache {
    pub fn empty() -> RowCache {
        RowCache::new(Arc::new(FleetState::default()))
    }

    pub fn new(fleet: Arc<FleetState>) -> RowCache {
        let snaps: Vec<(usize, Arc<Snapshot>)> =
            fleet.clusters.iter().enumerate().filter_map(|(i, c)| c.snapshot.clone().map(|s| (i, s))).collect();
        let job_total: usize = snaps.iter().map(|(_, s)| s.jobs.len()).sum();
        let node_total: usize = snaps.iter().map(|(_, s)| s.nodes.len()).sum();
        let mut jobs = Vec::with_capacity(job_total);
        let mut nodes = Vec::with_capacity(node_total);
        // Borrowed while the rows are built, copied once each at the end; numbered as first
        // seen, renumbered in name order once all are known.
        let mut users: HashMap<&str, u32, foldhash::fast::RandomState> = Default::default();
        let mut job_hays = Haystacks::with_capacity(job_total, job_total * 64);
        let mut node_hays = Haystacks::with_capacity(node_total, node_total * 64);
        let mut hay = String::new();
        let mut cell = String::new();
        let mut job_widths: Vec<usize> = JobColumn::COCKPIT.iter().map(|c| c.initial_width()).collect();
        let mut node_widths = vec![0; NodeColumn::COCKPIT.len()];
        let mut job_index = RowIndex::with_capacity(job_total);
        let mut node_index = RowIndex::with_capacity(node_total);
        // What the GPU map, the overview and the usage screen read of each job is taken in
        // this one pass too: a second pass would fetch every job from memory again.
        let mut holders = Holders::default();
        let mut job_counts: Vec<JobCounts> = Vec::with_capacity(snaps.len());
        let now = snaps.iter().filter_map(|(_, s)| s.taken_at).max().unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        let mut tally = usage::Tally::held_now(UsageBy::User, now, None);
        for (snap, (cluster, s)) in snaps.iter().enumerate() {
            let cluster = &fleet.clusters[*cluster];
            let gpu_use = cluster.gpu_use.as_deref();
            let mut counts = JobCounts::default();
            for (index, job) in s.jobs.iter().enumerate() {
                let cx = JobContext { taken_at: None, gpu_use: gpu_use.and_then(|u| u.job(&job.job_ref.id)) };
                widen_job_columns(&mut job_widths, job, cx, &mut cell);
                tally.job(&cluster.name, job, cx.gpu_use);
                counts.add(job);
                add_holders(&mut holders, snap as u16, jobs.len() as u32, job);
                hay.clear();
                job_haystack(&mut hay, job);
                job_hays.push(&hay);
                let user = if job.user.is_empty() {
                    NO_USER
                } else {
                    let next = users.len() as u32;
                    *users.entry(job.user.as_str()).or_insert(next)
                };
                jobs.push(JobRow { snap: snap as u16, index: index as u32, state: job.state, user });
                // Indexed while the job's strings are still in the cache: a second pass
                // would fetch two strings per job from memory again.
                job_index.insert(jobs.len() as u32 - 1, |r| job_key(&snaps, &jobs, r));
            }
            job_counts.push(counts);
            for (index, node) in s.nodes.iter().enumerate() {
                widen_node_columns(&mut node_widths, node, &mut cell);
                hay.clear();
                node_haystack(&mut hay, node);
                // GPU trouble telemetry found is shown in the reason cell and found by `/xid`.
                let readings = gpu_use.map_or(&[][..], |u| u.node(&node.name));
                let mut evidence = 0;
                for r in readings {
                    for p in &r.sample.problems {
                        hay.push(' ');
                        hay.push_str(p);
                        evidence += text::width(p) + 10;
                    }
                }
                let reason = &mut node_widths[NodeColumn::Reason as usize];
                let own = NodeColumn::Reason.cell_into(node, &mut cell);
                *reason = (*reason).max(text::width(own.unwrap_or(&cell)) + evidence);
                node_hays.push(&hay);
                nodes.push(NodeRow { snap: snap as u16, index: index as u32 });
                node_index.insert(nodes.len() as u32 - 1, |r| node_key(&snaps, &nodes, r));
            }
        }
        let mut by_name: Vec<(&str, u32)> = users.into_iter().collect();
        by_name.sort_unstable();
        let mut rank = vec![0; by_name.len()];
        for (at, (_, first_seen)) in by_name.iter().enumerate() {
            rank[*first_seen as usize] = at as u32;
        }
        for r in &mut jobs {
            if r.user != NO_USER {
                r.user = rank[r.user as usize];
            }
        }
        let users: Vec<String> = by_name.into_iter().map(|(u, _)| u.to_string()).collect();
        let usage = tally.finish(&fleet);
        let gpu_nodes = build_gpu_map(&snaps, &nodes, &holders);
        drop(holders);
        let job_counts: Vec<ClusterJobCounts> = job_counts.into_iter().map(JobCounts::finish).collect();
        let mut data = RowCache {
            fleet,
            snaps,
            jobs,
            nodes,
            job_hays,
            node_hays,
            job_index,
            node_index,
            gpu_nodes,
            summaries: Vec::new(),
            fleet_gpus: Vec::new(),
            users,
            job_widths,
            node_widths,
            arrays: Vec::new(),
            job_array: Vec::new(),
            array_index: HashMap::new(),
            usage,
        };
        data.build_arrays();
        data.summaries = data.build_summaries(job_counts);
        data.fleet_gpus = gpu_totals(data.snaps.iter().map(|(_, s)| &**s));
        data
    }

    /// Serve `fleet`, which lists what this cache was built from ([`same_listing`]): its
    /// snapshots (so elapsed times count to their `taken_at`), health and refresh facts are
    /// taken over; every row, index, order and width stays. Returns the state it replaces,
    /// which may hold the last reference to the old snapshots (free it off the UI thread).
    pub fn restamp(&mut self, fleet: Arc<FleetState>) -> Arc<FleetState> {
        for (cluster, snap) in &mut self.snaps {
            if let Some(new) = fleet.clusters.get(*cluster).and_then(|c| c.snapshot.as_ref()) {
                *snap = new.clone();
            }
        }
        for (sum, c) in self.summaries.iter_mut().zip(&fleet.clusters) {
            sum.health = c.health.clone();
            sum.taken_at = c.snapshot.as_ref().and_then(|s| s.taken_at);
        }
        std::mem::replace(&mut self.fleet, fleet)
    }

    /// The row of the job `key`.
    pub fn job_row(&self, key: &JobRef) -> Option<u32> {
        self.job_index.get(&key.cluster, &key.id, |r| job_key(&self.snaps, &self.jobs, r))
    }

    /// The row of the node `key`.
    pub fn node_row(&self, key: &NodeRef) -> Option<u32> {
        self.node_index.get(&key.cluster, &key.name, |r| node_key(&self.snaps, &self.nodes, r))
    }

    /// The key [`JobRow::user`] holds for the user `name`: `None` when no job has it.
    pub fn user_key(&self, name: &str) -> Option<u32> {
        if name.is_empty() {
            return Some(NO_USER);
        }
        self.users.binary_search_by(|u| u.as_str().cmp(name)).ok().map(|i| i as u32)
    }

    pub fn job(&self, row: u32) -> &Job {
        let r = &self.jobs[row as usize];
        &self.snaps[r.snap as usize].1.jobs[r.index as usize]
    }

    pub fn node(&self, row: u32) -> &Node {
        let r = &self.nodes[row as usize];
        &self.snaps[r.snap as usize].1.nodes[r.index as usize]
    }

    /// The array whose parent row `row` (a visible row of a job list) is, if it is one.
    pub fn array_at(&self, row: u32) -> Option<&ArrayGroup> {
        if row & ARRAY_ROW == 0 {
            return None;
        }
        self.arrays.get((row & !ARRAY_ROW) as usize)
    }

    /// The job a visible row shows: the job, or an array's parent row.
    pub fn row_job(&self, row: u32) -> &Job {
        match self.array_at(row) {
            Some(a) => &a.job,
            None => self.job(row),
        }
    }

    /// The identity of a visible row, which the cursor follows: the job's ref, or the
    /// array's [`array_key`].
    pub fn row_ref(&self, row: u32) -> &JobRef {
        match self.array_at(row) {
            Some(a) => &a.key,
            None => &self.job(row).job_ref,
        }
    }

    /// The jobs a visible row stands for: itself, or every task of the array.
    pub fn row_targets(&self, row: u32) -> Vec<JobRef> {
        match self.array_at(row) {
            Some(a) => a.rows.iter().map(|r| self.job(*r).job_ref.clone()).collect(),
            None => vec![self.job(row).job_ref.clone()],
        }
    }

    /// The visible row of `key`: a job's row, or an array's parent row.
    pub fn row_of(&self, key: &JobRef) -> Option<u32> {
        self.job_row(key).or_else(|| self.array_index.get(key).map(|g| ARRAY_ROW | g))
    }

    /// Group the rows of each Slurm array (same snapshot, same array id) with two rows or
    /// more, and build their parent rows; widen the id column for them and their indented
    /// tasks. One pass over the jobs, then a sort within each array.
    fn build_arrays(&mut self) {
        let mut widths = std::mem::take(&mut self.job_widths);
        let mut job_array = vec![NO_ARRAY; self.jobs.len()];
        let mut groups: Vec<(u16, &str, Vec<u32>)> = Vec::new();
        let mut by_id: HashMap<(u16, &str), usize> = HashMap::new();
        for (row, r) in self.jobs.iter().enumerate() {
            let Some(a) = &self.job(row as u32).array else { continue };
            let g = *by_id.entry((r.snap, a.array_id.as_str())).or_insert_with(|| {
                groups.push((r.snap, a.array_id.as_str(), Vec::new()));
                groups.len() - 1
            });
            groups[g].2.push(row as u32);
        }
        let mut arrays = Vec::new();
        let mut array_index = HashMap::new();
        let id_col = JobColumn::Id as usize;
        for (snap, array_id, mut rows) in groups {
            if rows.len() < 2 {
                continue;
            }
            // (first index, is a pending range) per row; a range without index goes last.
            let first_index = |row: u32| -> (u32, bool) {
                let a = self.job(row).array.as_ref();
                match (a.and_then(|a| a.task_id), a.and_then(|a| a.pending_tasks.as_deref())) {
                    (Some(t), _) => (t, false),
                    (None, Some(p)) => (task_range(p).map_or(u32::MAX, |r| r.0), true),
                    (None, None) => (u32::MAX, true),
                }
            };
            rows.sort_by_key(|r| first_index(*r));
            let (mut lo, mut hi) = (u32::MAX, 0u32);
            let mut counts = [0u64; 13];
            let (mut live_gpus, mut all_gpus) = (0u64, 0u64);
            let mut nodes: Vec<String> = Vec::new();
            let mut seen_nodes = std::collections::HashSet::new();
            for &row in &rows {
                let job = self.job(row);
                let a = job.array.as_ref();
                let tasks = match (a.and_then(|a| a.task_id), a.and_then(|a| a.pending_tasks.as_deref())) {
                    (Some(t), _) => {
                        (lo, hi) = (lo.min(t), hi.max(t));
                        1
                    }
                    (None, Some(p)) => match task_range(p) {
                        Some((a, b, n)) => {
                            (lo, hi) = (lo.min(a), hi.max(b));
                            n
                        }
                        None => 1,
                    },
                    (None, None) => 1,
                };
                let at = COUNT_ORDER.iter().position(|s| *s == job.state).unwrap_or(12);
                counts[at] += tasks;
                let gpus = u64::from(job.gpus()) * tasks;
                all_gpus += gpus;
                if !job.state.is_finished() {
                    live_gpus += gpus;
                    for n in &job.nodes {
                        if seen_nodes.insert(n.as_str()) {
                            nodes.push(n.clone());
                        }
                    }
                }
            }
            let first = self.job(rows[0]);
            let mut job = first.clone();
            job.job_ref = JobRef::new(
                first.job_ref.cluster.clone(),
                match (lo, hi) {
                    (u32::MAX, _) => format!("{array_id}_[…]"),
                    (lo, hi) if lo == hi => format!("{array_id}_[{lo}]"),
                    (lo, hi) => format!("{array_id}_[{lo}-{hi}]"),
                },
            );
            job.state = COUNT_ORDER
                .iter()
                .zip(counts)
                .find(|(s, n)| *n > 0 && (s.is_active() || s.is_waiting()))
                .map_or(first.state, |(s, _)| *s);
            let count: Vec<String> = COUNT_ORDER
                .iter()
                .zip(counts)
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| format!("{} {n}", state_code(*s)))
                .collect();
            job.reason = Some(count.join(" · "));
            let gpus = u32::try_from(if live_gpus > 0 { live_gpus } else { all_gpus }).unwrap_or(u32::MAX);
            (job.gpus_requested, job.gpus_allocated) = (gpus, gpus);
            job.gpu_allocations.clear();
            job.nodes = nodes;
            job.array =
                Some(crate::model::ArrayInfo { array_id: array_id.to_string(), task_id: None, pending_tasks: None });
            let cx = JobContext { taken_at: self.taken_at(snap), gpu_use: None };
            widen_job_columns(&mut widths, &job, cx, &mut String::new());
            // `▸ 12_[0-99]` and `  └ 12_3`.
            widths[id_col] = widths[id_col].max(text::width(&job.job_ref.id) + 2);
            for &row in &rows {
                widths[id_col] = widths[id_col].max(text::width(&self.job(row).job_ref.id) + 4);
            }
            let g = arrays.len() as u32;
            for &row in &rows {
                job_array[row as usize] = g;
            }
            let key = array_key(&job.job_ref.cluster, array_id);
            array_index.insert(key.clone(), g);
            arrays.push(ArrayGroup { snap, array_id: array_id.to_string(), key, rows, job });
        }
        self.job_widths = widths;
        self.arrays = arrays;
        self.job_array = job_array;
        self.array_index = array_index;
    }

    /// When the snapshot holding job row `row` was taken.
    /// How the job at `row` uses its GPUs, where its cluster's telemetry measured them.
    pub fn gpu_use(&self, row: u32) -> Option<&JobGpuUse> {
        let r = &self.jobs[row as usize];
        let cluster = self.snaps.get(r.snap as usize)?.0;
        self.fleet.clusters.get(cluster)?.gpu_use.as_ref()?.job(&self.job(row).job_ref.id)
    }

    /// The telemetry of the cluster holding snapshot `snap`, when it has one.
    pub fn cluster_gpu_use(&self, snap: u16) -> Option<&GpuUse> {
        let cluster = self.snaps.get(snap as usize)?.0;
        self.fleet.clusters.get(cluster)?.gpu_use.as_deref()
    }

    /// The measured GPUs of the node at `row`, in device order (empty without telemetry).
    pub fn node_readings(&self, row: u32) -> &[GpuReading] {
        let snap = self.nodes[row as usize].snap;
        self.cluster_gpu_use(snap).map_or(&[], |u| u.node(&self.node(row).name))
    }

    /// The last reading of device `index` of the node at `row`, with the use of the job it
    /// serves.
    pub fn gpu_reading(&self, row: u32, index: usize) -> Option<(&GpuReading, Option<&JobGpuUse>)> {
        let reading = self.node_readings(row).iter().find(|r| r.sample.index as usize == index)?;
        let used = self.cluster_gpu_use(self.nodes[row as usize].snap);
        Some((reading, reading.job.as_deref().and_then(|id| used?.job(id))))
    }

    /// What telemetry says is wrong with the node's GPUs (`GPU 3: XID 79: fell off the
    /// bus`): the evidence the problem filter shows.
    pub fn gpu_problems(&self, row: u32) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.node_readings(row) {
            for p in &r.sample.problems {
                out.push(format!("GPU {}: {p}", r.sample.index));
            }
        }
        out
    }

    /// A node the problem filters keep: out of service, or with a GPU telemetry calls unhealthy.
    pub fn is_problem(&self, row: u32) -> bool {
        is_problem_node(self.node(row)) || self.node_readings(row).iter().any(|r| !r.sample.problems.is_empty())
    }

    /// The job at `row` with what its cells need.
    pub fn job_context(&self, row: u32) -> JobContext<'_> {
        JobContext { taken_at: self.taken_at(self.jobs[row as usize].snap), gpu_use: self.gpu_use(row) }
    }

    pub fn taken_at(&self, snap: u16) -> Option<DateTime<Utc>> {
        self.snaps.get(snap as usize).and_then(|(_, s)| s.taken_at)
    }

    pub fn cluster_names(&self) -> Vec<String> {
        self.fleet.clusters.iter().map(|c| c.name.clone()).collect()
    }

    /// The overview of each cluster; `job_counts` per snapshot, from the pass over the jobs.
    fn build_summaries(&self, job_counts: Vec<ClusterJobCounts>) -> Vec<ClusterSummary> {
        let mut out: Vec<ClusterSummary> = self
            .fleet
            .clusters
            .iter()
            .map(|c| ClusterSummary {
                name: c.name.clone(),
                kind: c.kind.to_string(),
                health: c.health.clone(),
                release: c.snapshot.as_ref().and_then(|s| s.release.clone()),
                notes: c.snapshot.as_ref().map(|s| s.notes.clone()).unwrap_or_default(),
                taken_at: c.snapshot.as_ref().and_then(|s| s.taken_at),
                has_snapshot: c.snapshot.is_some(),
                models: Vec::new(),
                jobs_by_state: BTreeMap::new(),
                pending_by_reason: Vec::new(),
                nodes_by_state: BTreeMap::new(),
                nodes_total: 0,
                problem_nodes: 0,
                unhealthy_gpus: 0,
                quota_lines: c.snapshot.as_ref().map(|s| quota_lines(&s.queues)).unwrap_or_default(),
                cost_per_hour: c.snapshot.as_ref().and_then(|s| s.cost_per_hour()),
                telemetry: TelemetryLine::of(c),
            })
            .collect();
        for ((cluster, snap), (by_state, reasons)) in self.snaps.iter().zip(job_counts) {
            let sum = &mut out[*cluster];
            let used = self.fleet.clusters[*cluster].gpu_use.as_deref();
            let gpu_trouble =
                |node: &Node| used.is_some_and(|u| u.node(&node.name).iter().any(|r| !r.sample.problems.is_empty()));
            for node in &snap.nodes {
                sum.nodes_total += 1;
                *sum.nodes_by_state.entry(node.state).or_default() += 1;
                sum.problem_nodes += u32::from(is_problem_node(node) || gpu_trouble(node));
                for g in &node.gpus {
                    sum.unhealthy_gpus += u64::from(g.unhealthy);
                }
            }
            sum.models = gpu_totals([&**snap])
                .into_iter()
                .map(|t| ModelTotals {
                    model: t.label().into_owned(),
                    total: t.total,
                    allocated: t.allocated,
                    unavailable: t.unavailable,
                })
                .collect();
            sum.jobs_by_state = by_state;
            sum.pending_by_reason = reasons;
        }
        out
    }
}

/// (snap, node name) → the jobs holding GPUs there (foldhash, not SipHash: one lookup per
/// running job).
type Holders<'a> = HashMap<(u16, &'a str), Vec<Holder<'a>>, foldhash::fast::RandomState>;

/// Note where the job at `row` of snapshot `snap` holds GPUs, if it is active: per node
/// with model, count and indices where the backend says, else its GPUs shared out over its nodes.
fn add_holders<'a>(holders: &mut Holders<'a>, snap: u16, row: u32, job: &'a Job) {
    if !job.state.is_active() {
        return;
    }
    if !job.gpu_allocations.is_empty() {
        for a in &job.gpu_allocations {
            holders.entry((snap, a.node.as_str())).or_default().push((row, a.model.as_deref(), a.count, &a.indices));
        }
    } else if job.gpus_allocated > 0 && !job.nodes.is_empty() {
        let per_node = (job.gpus_allocated / job.nodes.len() as u32).max(1);
        for n in &job.nodes {
            holders.entry((snap, n.as_str())).or_default().push((row, None, per_node, &[]));
        }
    }
}

/// Every GPU slot of every node, with the job holding it: by device index where the
/// backend reports indices, else by count in job order.
fn build_gpu_map(snaps: &[(usize, Arc<Snapshot>)], nodes: &[NodeRow], holders: &Holders) -> Vec<GpuNode> {
    let mut out = Vec::new();
    for (row, r) in nodes.iter().enumerate() {
        let node = &snaps[r.snap as usize].1.nodes[r.index as usize];
        if node.gpus_total() == 0 {
            continue;
        }
        // A node claiming billions of GPUs (a broken gres line) must not take the memory
        // with it: the map draws at most MAX_CELLS_PER_NODE, the counts stay exact.
        let mut models = Vec::new();
        for (m, slot) in node.gpus.iter().enumerate() {
            let room = MAX_CELLS_PER_NODE.saturating_sub(models.len());
            models.extend(std::iter::repeat_n(m as u16, (slot.total as usize).min(room)));
        }
        let mut cells = vec![Cell::Free; models.len()];
        let model_of = |i: usize| node.gpus[models[i] as usize].model.as_str();
        let fits = |i: usize, want: Option<&str>| want.is_none_or(|w| w == model_of(i));
        if let Some(list) = holders.get(&(r.snap, node.name.as_str())) {
            // Exact indices first, so that count-only holders fill what is left.
            for (job, model, _, indices) in list {
                for &i in indices.iter() {
                    let i = i as usize;
                    if i < cells.len() && cells[i] == Cell::Free && fits(i, *model) {
                        cells[i] = Cell::Allocated(Some(*job));
                    }
                }
            }
            for (job, model, count, indices) in list {
                if !indices.is_empty() {
                    continue;
                }
                let mut left = *count;
                for (i, cell) in cells.iter_mut().enumerate() {
                    if left == 0 {
                        break;
                    }
                    if *cell == Cell::Free && fits(i, *model) {
                        *cell = Cell::Allocated(Some(*job));
                        left -= 1;
                    }
                }
            }
        }
        // The node's own counts are the authority on how many are held and broken.
        for (m, slot) in node.gpus.iter().enumerate() {
            // The cells of this model, walked in place (no list per slot and node).
            let of_model = |i: &usize| models[*i] as usize == m;
            let held =
                (0..cells.len()).filter(of_model).filter(|&i| matches!(cells[i], Cell::Allocated(_))).count() as u32;
            let mut extra = slot.allocated.saturating_sub(held);
            for i in (0..cells.len()).filter(of_model) {
                if extra == 0 {
                    break;
                }
                if cells[i] == Cell::Free {
                    cells[i] = Cell::Allocated(None);
                    extra -= 1;
                }
            }
            let mut broken = if node.is_unavailable() { u32::MAX } else { slot.unhealthy };
            for i in (0..cells.len()).rev().filter(of_model) {
                if broken == 0 {
                    break;
                }
                if cells[i] == Cell::Free {
                    cells[i] = Cell::Unavailable;
                    broken -= 1;
                }
            }
        }
        out.push(GpuNode { node: row as u32, models, cells });
    }
    out
}

/// One cluster's jobs counted for its overview, in the pass that builds their rows.
#[derive(Default)]
struct JobCounts<'a> {
    /// By `JobState as usize`.
    by_state: [u32; JobState::ALL.len()],
    /// Waiting jobs by reason in words.
    reasons: HashMap<Cow<'a, str>, u32, foldhash::fast::RandomState>,
}

/// [`JobCounts`] as the overview keeps them: jobs by state, waiting reasons most common first.
type ClusterJobCounts = (BTreeMap<JobState, u32>, Vec<(String, u32)>);

impl<'a> JobCounts<'a> {
    fn add(&mut self, job: &'a Job) {
        self.by_state[job.state as usize] += 1;
        if job.state.is_waiting() {
            // Pods waiting on the scheduler group by its reasons in words, not by each
            // message's own node counts.
            let reason = crate::fleet::why::waiting_words(job.reason.as_deref().unwrap_or("None"));
            *self.reasons.entry(reason).or_default() += 1;
        }
    }

    fn finish(self) -> ClusterJobCounts {
        let by_state = JobState::ALL
            .into_iter()
            .filter_map(|s| Some((s, self.by_state[s as usize])).filter(|(_, n)| *n > 0))
            .collect();
        let mut reasons: Vec<(String, u32)> = self.reasons.into_iter().map(|(r, n)| (r.into_owned(), n)).collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        (by_state, reasons)
    }
}

/// The identity of job row `row` as the index keys it: cluster and id.
fn job_key<'a>(snaps: &'a [(usize, Arc<Snapshot>)], jobs: &[JobRow], row: u32) -> (&'a str, &'a str) {
    let r = &jobs[row as usize];
    let job = &snaps[r.snap as usize].1.jobs[r.index as usize];
    (&job.job_ref.cluster, &job.job_ref.id)
}

/// The identity of node row `row` as the index keys it: cluster and name.
fn node_key<'a>(snaps: &'a [(usize, Arc<Snapshot>)], nodes: &[NodeRow], row: u32) -> (&'a str, &'a str) {
    let r = &nodes[row as usize];
    let node = &snaps[r.snap as usize].1.nodes[r.index as usize];
    (&node.cluster, &node.name)
}

/// Widen `widths` (one per [`JobColumn::COCKPIT`] column) to fit `job`'s cells; `buf` holds
/// the formatted ones in turn (no allocation per cell).
fn widen_job_columns(widths: &mut [usize], job: &Job, cx: JobContext<'_>, buf: &mut String) {
    for (w, c) in widths.iter_mut().zip(JobColumn::COCKPIT) {
        let cell = match c.steady_width() {
            Some(steady) => steady,
            None => {
                let own = c.cell_into(job, cx, buf);
                text::width(own.unwrap_or(buf))
            }
        };
        *w = (*w).max(cell);
    }
}

/// Widen `widths` (one per [`NodeColumn::COCKPIT`] column) to fit `node`'s cells; `buf`
/// holds the formatted ones in turn, as in [`widen_job_columns`].
fn widen_node_columns(widths: &mut [usize], node: &Node, buf: &mut String) {
    for (w, c) in widths.iter_mut().zip(NodeColumn::COCKPIT) {
        let own = c.cell_into(node, buf);
        *w = (*w).max(text::width(own.unwrap_or(buf)));
    }
}

/// `cluster/id name user partition state reason`, pushed piece by piece: `write!` through
/// the formatter cost more than the rest of the row at 100,000 jobs.
fn job_haystack(out: &mut String, job: &Job) {
    out.push_str(&job.job_ref.cluster);
    out.push('/');
    for part in [&job.job_ref.id, &job.name, &job.user, &job.partition] {
        out.push_str(part);
        out.push(' ');
    }
    out.push_str(job.state.as_str());
    out.push(' ');
    out.push_str(job.reason.as_deref().unwrap_or(""));
    // The canonical model and the backend's own name, so `/NVIDIA-H100` finds what `/h100` does.
    for name in [&job.gpu_model, &job.gpu_product].into_iter().flatten() {
        out.push(' ');
        out.push_str(name);
    }
}

fn node_haystack(out: &mut String, node: &Node) {
    use std::fmt::Write;
    let _ = write!(out, "{}/{} {}", node.cluster, node.name, node.state.as_str());
    for f in &node.flags {
        out.push(' ');
        out.push_str(f);
    }
    if let Some(reason) = &node.reason {
        out.push(' ');
        out.push_str(reason);
    }
    for g in &node.gpus {
        out.push(' ');
        out.push_str(&g.model);
        if let Some(p) = g.gpu_product.as_deref().filter(|p| *p != g.model) {
            out.push(' ');
            out.push_str(p);
        }
    }
    for p in &node.partitions {
        out.push(' ');
        out.push_str(p);
    }
}

#[cfg(test)]
mod tests {
    use super::{same_listing, task_range};
    use crate::fleet::{ClusterState, FleetState};
    use crate::model::{Health, Job, JobRef, JobState, Snapshot};
    use chrono::{TimeZone, Utc};
    use std::sync::Arc;

    fn state(secs: i64, user: &str) -> FleetState {
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap() + chrono::Duration::seconds(secs);
        let mut job = Job::new(JobRef::new("c", "1"), JobState::Running);
        job.user = user.into();
        let snap = Snapshot { cluster: "c".into(), taken_at: Some(at), jobs: vec![job], ..Snapshot::default() };
        let cluster = ClusterState {
            health: Health::Fresh { at },
            snapshot: Some(Arc::new(snap)),
            ..ClusterState::new("c", "slurm")
        };
        FleetState { clusters: vec![cluster], read_only: false, version: secs as u64 }
    }

    #[test]
    fn a_listing_is_the_same_whatever_its_time_and_not_when_a_record_moved() {
        assert!(same_listing(&state(0, "alice"), &state(10, "alice")), "times and health aside");
        assert!(!same_listing(&state(0, "alice"), &state(10, "bob")), "a record changed");
        let mut gone = state(10, "alice");
        gone.clusters[0].snapshot = None;
        assert!(!same_listing(&state(0, "alice"), &gone));
        let mut stale = state(0, "alice");
        stale.clusters[0].health = Health::Stale { since: Utc::now(), error: "x".into(), last_ok: None };
        assert!(same_listing(&state(0, "alice"), &stale), "health is taken over, not compared");
        let mut read_only = state(0, "alice");
        read_only.read_only = true;
        assert!(!same_listing(&state(0, "alice"), &read_only));
    }

    #[test]
    fn the_usage_rows_and_job_counts_come_from_the_one_pass_as_flightdeck_usage_counts() {
        use crate::model::usage::{self, UsageAsk, UsageBy};
        use crate::model::{GpuUse, JobGpuUse};
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap();
        let held = [
            ("alice", JobState::Running, 4, None),
            ("bob", JobState::Running, 8, None),
            ("alice", JobState::Pending, 2, Some("Priority")),
            ("carol", JobState::Completed, 1, None),
            ("bob", JobState::Pending, 0, Some("Priority")),
            ("dave", JobState::Held, 0, Some("JobHeldUser")),
        ];
        let jobs = held
            .iter()
            .enumerate()
            .map(|(i, (user, state, gpus, reason))| {
                let mut j = Job::new(JobRef::new("c", i.to_string()), *state);
                j.user = (*user).into();
                j.gpus_allocated = *gpus;
                j.gpu_model = Some("h100".into());
                j.reason = reason.map(Into::into);
                j
            })
            .collect();
        let idle =
            JobGpuUse { job: "0".into(), gpus: 4, mean_utilisation: Some(1.0), below_since: Some(at), idle: true };
        let used = GpuUse { taken_at: at, source: "t".into(), gpus: vec![], jobs: vec![idle], notes: vec![] };
        let snap = Snapshot { cluster: "c".into(), taken_at: Some(at), jobs, ..Snapshot::default() };
        let cluster = ClusterState {
            snapshot: Some(Arc::new(snap)),
            gpu_use: Some(Arc::new(used)),
            ..ClusterState::new("c", "slurm")
        };
        let fleet = Arc::new(FleetState { clusters: vec![cluster], read_only: false, version: 1 });
        let rows = super::RowCache::new(fleet.clone());
        let ask = UsageAsk { by: UsageBy::User, now: at, window: None, idle_below_percent: None };
        assert_eq!(rows.usage, usage::compute(&fleet, &ask));
        let keys: Vec<&str> = rows.usage.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["bob", "alice"], "running jobs with GPUs only, most held first");
        assert_eq!((rows.usage.total.gpus_now, rows.usage.total.idle_gpus_now), (12, 4));
        let sum = &rows.summaries[0];
        let by_state: Vec<(JobState, u32)> = sum.jobs_by_state.iter().map(|(s, n)| (*s, *n)).collect();
        assert_eq!(
            by_state,
            [(JobState::Pending, 2), (JobState::Held, 1), (JobState::Running, 2), (JobState::Completed, 1)]
        );
        assert_eq!(sum.pending_by_reason.len(), 2);
        assert_eq!(sum.pending_by_reason[0].1, 2, "the most common reason first");
    }

    #[test]
    fn task_ranges_as_slurm_writes_them() {
        assert_eq!(task_range("5-9"), Some((5, 9, 5)));
        assert_eq!(task_range("4-99%2"), Some((4, 99, 96)));
        assert_eq!(task_range("1,3,5-9:2"), Some((1, 9, 5)));
        assert_eq!(task_range("[0-3]"), Some((0, 3, 4)));
        assert_eq!(task_range("0-10:4"), Some((0, 8, 3)));
        assert_eq!(task_range("x"), None);
        assert_eq!(task_range("9-5"), None);
    }
}
