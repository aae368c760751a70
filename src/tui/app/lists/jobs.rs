//! The jobs table's state: sort order, filters, cursor and marks. A Slurm array's tasks fold
//! under one parent row in one linear pass; `z` unfolds it, kept by parent id across refreshes,
//! and actions and marks on a parent reach every task.

use std::collections::{BTreeSet, HashMap};

use nucleo::Matcher;

use super::filter::{Fuzzy, filter_rows};
use super::{ClusterKeep, Cursor};
use crate::columns::{JobColumn, JobContext};
use crate::model::{JobRef, JobState};
use crate::tui::app::row_cache::{ARRAY_ROW, NO_ARRAY, RowCache};

/// What decides the jobs table's rows besides the data: its sort and its filters (the
/// cluster filter is the App's). Rows prepared for one view serve only that view.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    pub sort: JobColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub state: Option<JobState>,
    pub user: Option<String>,
    pub hide_finished: bool,
    pub idle_only: bool,
}

/// Every job row in the table's order: live jobs (waiting or running) first, finished ones
/// after them, each group by `key` (reversed or not), then cluster and natural id. Finished
/// jobs are history; mixed in, they bury the live queue.
pub fn sorted_jobs(data: &RowCache, key: JobColumn, reverse: bool) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..data.jobs.len() as u32).collect();
    // Only the elapsed time and GPU use need more than the job; the others skip the look-up.
    let context = |row: u32| match key {
        JobColumn::Elapsed | JobColumn::GpuUse => data.job_context(row),
        _ => JobContext::default(),
    };
    rows.sort_by(|a, b| {
        let (ja, jb) = (data.job(*a), data.job(*b));
        let by = || {
            let (ta, tb) = (context(*a), context(*b));
            if reverse { key.compare(jb, tb, ja, ta) } else { key.compare(ja, ta, jb, tb) }
        };
        ja.state.is_finished().cmp(&jb.state.is_finished()).then_with(by)
    });
    rows
}

/// The rows of `source` (in its order) that `view`'s filters and `cluster` keep.
pub fn matching_jobs(
    data: &RowCache,
    source: &[u32],
    view: &JobView,
    cluster: ClusterKeep,
    matchers: &mut Vec<Matcher>,
) -> Vec<u32> {
    let fuzzy = Fuzzy::new(&view.fuzzy);
    // The user as the rows hold it; a user no job has keeps no row.
    let user = match view.user.as_deref().map(|u| data.user_key(u)) {
        Some(None) => return Vec::new(),
        Some(Some(key)) => Some(key),
        None => None,
    };
    let state = view.state;
    let hide_finished = view.hide_finished && state.is_none();
    let idle_only = view.idle_only;
    if fuzzy.is_none()
        && user.is_none()
        && state.is_none()
        && !hide_finished
        && !idle_only
        && cluster == ClusterKeep::All
    {
        // Nothing to leave out: no row need be read.
        return source.to_vec();
    }
    let reads_text = fuzzy.as_ref().is_some_and(Fuzzy::reads_text);
    filter_rows(source, matchers, reads_text, |row, matcher| {
        let r = &data.jobs[row as usize];
        cluster.keeps(r.snap)
            && state.is_none_or(|s| r.state == s)
            && !(hide_finished && r.state.is_finished())
            && user.is_none_or(|u| r.user == u)
            && (!idle_only || data.gpu_use(row).is_some_and(|u| u.idle))
            && fuzzy.as_ref().is_none_or(|f| f.matches_row(&data.job_hays, row, matcher))
    })
}

/// The jobs table's state.
pub struct JobList {
    /// Every row, in sort order.
    pub sorted: Vec<u32>,
    pub cursor: Cursor,
    pub sort: JobColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub state: Option<JobState>,
    pub user: Option<String>,
    /// Leave finished jobs out (a state filter, when set, decides instead).
    pub hide_finished: bool,
    /// Only jobs flagged idle by their cluster's telemetry (`:idle`).
    pub idle_only: bool,
    /// Multi-selection, by identity; survives refreshes (vanished jobs are dropped). Only
    /// jobs: marking an array's parent row marks its tasks.
    pub marked: BTreeSet<JobRef>,
    /// The row under the cursor, followed across refreshes: a job, or an array's parent
    /// row by its [`crate::tui::app::row_cache::array_key`].
    pub anchor: Option<JobRef>,
    /// The jobs the filters keep, in sort order, before arrays fold (what a narrowing
    /// filter starts from).
    pub matched: Vec<u32>,
    /// Arrays shown unfolded, by their parent row's key (cluster and array id); kept across
    /// refreshes.
    pub expanded: BTreeSet<JobRef>,
}

impl Default for JobList {
    fn default() -> Self {
        Self {
            sorted: Vec::new(),
            cursor: Cursor::default(),
            sort: JobColumn::Cluster,
            reverse: false,
            fuzzy: String::new(),
            state: None,
            user: None,
            hide_finished: false,
            idle_only: false,
            marked: BTreeSet::new(),
            anchor: None,
            matched: Vec::new(),
            expanded: BTreeSet::new(),
        }
    }
}

impl JobList {
    /// What decides the rows besides the data.
    pub fn view(&self) -> JobView {
        JobView {
            sort: self.sort,
            reverse: self.reverse,
            fuzzy: self.fuzzy.clone(),
            state: self.state,
            user: self.user.clone(),
            hide_finished: self.hide_finished,
            idle_only: self.idle_only,
        }
    }

    /// Sort every row (see [`sorted_jobs`]).
    pub fn resort(&mut self, data: &RowCache) {
        self.sorted = sorted_jobs(data, self.sort, self.reverse);
    }

    /// Recompute the visible rows. `narrow`: only the rows matching now can still match.
    pub fn refilter(&mut self, data: &RowCache, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let source = if narrow { &self.matched } else { &self.sorted };
        self.matched = matching_jobs(data, source, &self.view(), cluster, matchers);
        self.refold(data);
    }

    /// Take the rows prepared for this list's view (off the UI thread): every row sorted, and
    /// those the filters keep.
    pub fn adopt(&mut self, data: &RowCache, sorted: Vec<u32>, matched: Vec<u32>) {
        self.sorted = sorted;
        self.matched = matched;
        self.refold(data);
    }

    /// Fold the matching jobs into the visible rows: each array's parent row where its
    /// first matching task sorts, followed, when unfolded, by its matching tasks. One pass.
    pub fn refold(&mut self, data: &RowCache) {
        if data.arrays.is_empty() {
            self.cursor.visible.clone_from(&self.matched);
        } else {
            let mut open = vec![false; data.arrays.len()];
            for key in &self.expanded {
                if let Some(g) = data.array_index.get(key) {
                    open[*g as usize] = true;
                }
            }
            let mut seen = vec![false; data.arrays.len()];
            let mut rows = Vec::with_capacity(self.matched.len());
            let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
            for &row in &self.matched {
                let g = data.job_array[row as usize];
                if g == NO_ARRAY {
                    rows.push(row);
                    continue;
                }
                if !seen[g as usize] {
                    seen[g as usize] = true;
                    rows.push(ARRAY_ROW | g);
                }
                if open[g as usize] {
                    children.entry(g).or_default().push(row);
                }
            }
            if !children.is_empty() {
                let mut full = Vec::with_capacity(rows.len() + children.values().map(Vec::len).sum::<usize>());
                for row in rows {
                    full.push(row);
                    if row & ARRAY_ROW != 0
                        && let Some(tasks) = children.get(&(row & !ARRAY_ROW))
                    {
                        full.extend_from_slice(tasks);
                    }
                }
                rows = full;
            }
            self.cursor.visible = rows;
        }
        // The anchor's row; a task whose array is folded is found on its parent row.
        let anchor_row = self.anchor.as_ref().and_then(|r| data.row_of(r)).map(|row| {
            match data.job_array.get(row as usize).copied().filter(|g| *g != NO_ARRAY && row & ARRAY_ROW == 0) {
                Some(g) if !self.expanded.contains(&data.arrays[g as usize].key) => ARRAY_ROW | g,
                _ => row,
            }
        });
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    /// Fold or unfold the array of the row under the cursor (its parent row or one of its
    /// tasks); the cursor goes to the parent row. False when the row is no array's.
    pub fn toggle_fold(&mut self, data: &RowCache) -> bool {
        let Some(row) = self.cursor.current() else { return false };
        let g = if row & ARRAY_ROW != 0 { row & !ARRAY_ROW } else { data.job_array[row as usize] };
        let Some(array) = data.arrays.get(g as usize) else { return false };
        if !self.expanded.remove(&array.key) {
            self.expanded.insert(array.key.clone());
        }
        self.anchor = Some(array.key.clone());
        self.refold(data);
        true
    }

    pub fn sync_anchor(&mut self, data: &RowCache) {
        self.anchor = self.cursor.current().map(|r| data.row_ref(r).clone());
    }

    /// Drop marks of jobs that are gone.
    pub fn prune(&mut self, data: &RowCache) {
        self.marked.retain(|r| data.job_row(r).is_some());
    }
}
