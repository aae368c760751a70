//! The jobs table's state: sort order, filters, cursor and marks.

use std::collections::BTreeSet;

use nucleo::Matcher;

use super::filter::{Fuzzy, filter_rows};
use super::{ClusterKeep, Cursor};
use crate::columns::{JobColumn, JobContext};
use crate::model::{JobRef, JobState};
use crate::tui::app::data::Data;

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
    /// Multi-selection, by identity; survives refreshes (vanished jobs are dropped).
    pub marked: BTreeSet<JobRef>,
    /// The job under the cursor, followed across refreshes.
    pub anchor: Option<JobRef>,
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
        }
    }
}

impl JobList {
    /// Sort every row: live jobs (waiting or running) first, finished ones after them, each
    /// group by the sort column (reversed or not), then cluster and natural id. Finished jobs
    /// are history; mixed in, they bury the live queue.
    pub fn resort(&mut self, data: &Data) {
        let mut rows: Vec<u32> = (0..data.jobs.len() as u32).collect();
        let key = self.sort;
        let reverse = self.reverse;
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
        self.sorted = rows;
    }

    /// Recompute the visible rows. `narrow`: only the rows visible now can still match.
    pub fn refilter(&mut self, data: &Data, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let anchor_row = self.anchor.as_ref().and_then(|r| data.job_index.get(r).copied());
        let fuzzy = Fuzzy::new(&self.fuzzy);
        let source = if narrow { std::mem::take(&mut self.cursor.visible) } else { std::mem::take(&mut self.sorted) };
        let user = self.user.as_deref();
        let state = self.state;
        let hide_finished = self.hide_finished && state.is_none();
        let idle_only = self.idle_only;
        self.cursor.visible = filter_rows(&source, matchers, fuzzy.is_some(), |row, matcher| {
            let r = &data.jobs[row as usize];
            if !cluster.keeps(r.snap) {
                return false;
            }
            let job = data.job(row);
            state.is_none_or(|s| job.state == s)
                && !(hide_finished && job.state.is_finished())
                && user.is_none_or(|u| job.user == u)
                && (!idle_only || data.gpu_use(row).is_some_and(|u| u.idle))
                && fuzzy.as_ref().is_none_or(|f| f.matches(&r.hay, matcher))
        });
        if !narrow {
            self.sorted = source;
        }
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    pub fn sync_anchor(&mut self, data: &Data) {
        self.anchor = self.cursor.current().map(|r| data.job(r).job_ref.clone());
    }

    /// Drop marks of jobs that are gone.
    pub fn prune(&mut self, data: &Data) {
        self.marked.retain(|r| data.job_index.contains_key(r));
    }
}
