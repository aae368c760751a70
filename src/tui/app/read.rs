//! What the views, the event loop and the tests read of the [`App`]: its screen, rows,
//! cursors, filters and overlays. Nothing here changes the App.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::fleet::FleetState;
use crate::model::{Job, JobRef, NodeRef};
use crate::tui::app::dialog::Dialog;
use crate::tui::app::form::SubmitForm;
use crate::tui::app::history::HistoryView;
use crate::tui::app::lists::{self, JobColumn, NodeColumn};
use crate::tui::app::row_cache::Cell as GpuCell;
use crate::tui::app::usage::UsageView;
use crate::tui::app::{App, Detail, Input, Screen, Toast};
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;

impl App {
    /// Bumped whenever what is on screen may have changed; the event loop draws only when it
    /// differs from the generation it drew last.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How many times the lists were re-sorted and re-filtered for a new fleet state: a
    /// refresh that lists what the last one did adds none (tests and benches read it).
    pub fn list_passes(&self) -> u64 {
        self.list_passes
    }

    pub fn screen(&self) -> Screen {
        self.screen
    }

    pub fn keymap(&self) -> &Keymap {
        &self.keymap
    }

    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    pub fn fleet(&self) -> &FleetState {
        &self.rows.fleet
    }

    /// The fleet state shown, shared (what a `Msg::Restamped` names as its base).
    pub fn fleet_state(&self) -> Arc<FleetState> {
        self.rows.fleet.clone()
    }

    /// Read-only, by the options or by the fleet.
    pub fn read_only(&self) -> bool {
        self.read_only || self.rows.fleet.read_only
    }

    pub fn cluster_filter(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    pub fn user_filter(&self) -> Option<&str> {
        self.jobs.user.as_deref()
    }

    pub fn state_filter(&self) -> Option<crate::model::JobState> {
        self.jobs.state
    }

    /// Finished jobs are left out of the jobs table (`hide_finished`).
    pub fn finished_hidden(&self) -> bool {
        self.jobs.hide_finished
    }

    pub fn job_filter_text(&self) -> &str {
        &self.jobs.fuzzy
    }

    /// The jobs table's rows, in order (builds a list: for tests and small tables). An
    /// array's parent row is its [`crate::tui::app::row_cache::array_key`] (`cluster/12_[*]`).
    pub fn visible_jobs(&self) -> Vec<JobRef> {
        self.jobs.cursor.visible.iter().map(|r| self.rows.row_ref(*r).clone()).collect()
    }

    /// The jobs the filters keep (an array's tasks counted one by one, folded or not).
    pub fn visible_job_count(&self) -> usize {
        self.jobs.matched.len()
    }

    /// The row under the jobs table's cursor: a job, or an array's [`crate::tui::app::row_cache::array_key`].
    pub fn cursor_job(&self) -> Option<&JobRef> {
        self.jobs.cursor.current().map(|r| self.rows.row_ref(r))
    }

    /// An array's parent row, by its [`crate::tui::app::row_cache::array_key`], as the jobs table shows it.
    pub fn array_parent(&self, key: &JobRef) -> Option<&Job> {
        self.rows.array_index.get(key).map(|g| &self.rows.arrays[*g as usize].job)
    }

    /// The arrays shown unfolded, by key.
    pub fn expanded_arrays(&self) -> Vec<JobRef> {
        self.jobs.expanded.iter().cloned().collect()
    }

    pub fn marked_jobs(&self) -> Vec<JobRef> {
        self.jobs.marked.iter().cloned().collect()
    }

    pub fn visible_nodes(&self) -> Vec<NodeRef> {
        self.nodes.cursor.visible.iter().map(|r| lists::node_ref(&self.rows, *r)).collect()
    }

    pub fn cursor_node(&self) -> Option<NodeRef> {
        self.nodes.cursor.current().map(|r| lists::node_ref(&self.rows, r))
    }

    /// The GPU map's selected node, cell index, and what the cell holds (with the job).
    pub fn gpu_selection(&self) -> Option<(NodeRef, usize, GpuCell, Option<&Job>)> {
        let g = &self.rows.gpu_nodes[self.gpus.cursor.current()? as usize];
        let cell = *g.cells.get(self.gpus.cell)?;
        let job = match cell {
            GpuCell::Allocated(Some(row)) => Some(self.rows.job(row)),
            _ => None,
        };
        Some((lists::node_ref(&self.rows, g.node), self.gpus.cell, cell, job))
    }

    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }

    pub fn input(&self) -> Option<&Input> {
        self.input.as_ref()
    }

    pub fn toasts(&self) -> &[Toast] {
        &self.toasts
    }

    pub fn detail(&self) -> Option<&Detail> {
        self.detail.as_ref()
    }

    /// The history screen's state: records, error and note lines, the read in flight.
    pub fn history(&self) -> &HistoryView {
        &self.history
    }

    pub fn usage(&self) -> &UsageView {
        &self.usage
    }

    /// The history table's rows, in order (the cluster filter applied).
    pub fn visible_history(&self) -> Vec<JobRef> {
        self.history.cursor.visible.iter().map(|i| self.history.records[*i as usize].job.job_ref.clone()).collect()
    }

    /// The job under the history screen's cursor.
    pub fn cursor_history(&self) -> Option<&JobRef> {
        self.history.current().map(|r| &r.job.job_ref)
    }

    pub fn form(&self) -> &SubmitForm {
        &self.form
    }

    pub fn help_open(&self) -> bool {
        self.help.is_some()
    }

    pub fn job_sort(&self) -> (JobColumn, bool) {
        (self.jobs.sort, self.jobs.reverse)
    }

    pub fn node_sort(&self) -> (NodeColumn, bool) {
        (self.nodes.sort, self.nodes.reverse)
    }

    pub fn problem_nodes_only(&self) -> bool {
        self.nodes.problems_only
    }
}
