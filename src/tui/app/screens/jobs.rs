//! The jobs table's keys, and asking for a job action (confirmed or not) wherever one is pressed.

use crate::fleet::Action;
use crate::model::{JobAction, JobRef};
use crate::tui::action::UiAction;
use crate::tui::app::dialog::Dialog;
use crate::tui::app::lists::{JobColumn, STATE_CYCLE};
use crate::tui::app::{App, Command};

impl App {
    pub(in crate::tui::app) fn jobs_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.jobs.cursor, action) {
            self.jobs.sync_anchor(&self.rows);
            return;
        }
        match action {
            UiAction::Open => {
                // An array's parent row opens its first task.
                if let Some(row) = self.jobs.cursor.current() {
                    let row = self.rows.array_at(row).map_or(row, |a| a.rows[0]);
                    self.open_detail(row, out);
                }
            }
            UiAction::ToggleFold => {
                self.jobs.toggle_fold(&self.rows);
            }
            UiAction::ToggleSelect => {
                // An array's parent row marks (or, when all are marked, unmarks) every task.
                if let Some(row) = self.jobs.cursor.current() {
                    let jobs = self.rows.row_targets(row);
                    if jobs.iter().all(|j| self.jobs.marked.contains(j)) {
                        for j in &jobs {
                            self.jobs.marked.remove(j);
                        }
                    } else {
                        self.jobs.marked.extend(jobs);
                    }
                    self.jobs.cursor.move_by(1);
                    self.jobs.sync_anchor(&self.rows);
                }
            }
            UiAction::SelectAll => {
                for &row in &self.jobs.cursor.visible {
                    if let Some(a) = self.rows.array_at(row) {
                        self.jobs.marked.extend(a.rows.iter().map(|r| self.rows.job(*r).job_ref.clone()));
                    } else {
                        self.jobs.marked.insert(self.rows.job(row).job_ref.clone());
                    }
                }
            }
            UiAction::ClearSelection => self.jobs.marked.clear(),
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    // The next column that is shown: an optional one (KIND, $/H, GPU%) with
                    // no value in any row is not on screen, so sorting by it would look like
                    // nothing happened.
                    let columns = JobColumn::COCKPIT;
                    let at = columns.iter().position(|c| *c == self.jobs.sort).unwrap_or(0);
                    let shown =
                        |i: usize| !columns[i].shape().optional || self.rows.job_widths.get(i).is_some_and(|w| *w > 0);
                    let next = (1..=columns.len()).map(|k| (at + k) % columns.len()).find(|i| shown(*i));
                    self.jobs.sort = columns[next.unwrap_or(0)];
                } else {
                    self.jobs.reverse = !self.jobs.reverse;
                }
                self.jobs.resort(&self.rows);
                self.refilter_jobs();
            }
            UiAction::FilterMine => {
                self.jobs.user =
                    if self.jobs.user.as_deref() == Some(self.user.as_str()) { None } else { Some(self.user.clone()) };
                self.refilter_jobs();
            }
            UiAction::FilterState => {
                self.jobs.state = match self.jobs.state.and_then(|s| STATE_CYCLE.iter().position(|c| *c == s)) {
                    None => Some(STATE_CYCLE[0]),
                    Some(i) => STATE_CYCLE.get(i + 1).copied(),
                };
                self.refilter_jobs();
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::HideFinished => {
                self.jobs.hide_finished = !self.jobs.hide_finished;
                self.refilter_jobs();
            }
            UiAction::Watch => {
                let targets = self.job_targets();
                self.toggle_watch(targets);
            }
            UiAction::Migrate => {
                let targets = self.job_targets();
                self.open_migration(targets, out);
            }
            _ => {
                if let Some(job_action) = action.job_action() {
                    let targets = self.job_targets();
                    self.ask_job_action(job_action, targets, out);
                }
            }
        }
    }

    /// What a job action applies to: the marked jobs if any, else the row under the cursor
    /// (an array's parent row: every task of the array).
    pub(in crate::tui::app) fn job_targets(&self) -> Vec<JobRef> {
        if self.jobs.marked.is_empty() {
            self.jobs.cursor.current().map(|r| self.rows.row_targets(r)).unwrap_or_default()
        } else {
            self.marked_jobs()
        }
    }

    /// The identity `job` has in the data on screen (see [`crate::model::Job::uid`]).
    pub(in crate::tui::app) fn job_uid(&self, job: &JobRef) -> Option<String> {
        let row = self.rows.job_row(job)?;
        self.rows.job(row).uid.clone()
    }

    /// Ask for `action` on `targets`: left out (and said why) where the job's cluster cannot
    /// do it; confirmed first when the verb is destructive, sent at once otherwise.
    pub(in crate::tui::app) fn ask_job_action(
        &mut self,
        action: JobAction,
        targets: Vec<JobRef>,
        out: &mut Vec<Command>,
    ) {
        let targets = self.permitted(action.verb(), targets, |j| &j.cluster);
        if targets.is_empty() {
            return;
        }
        if action.is_destructive() {
            let uids = targets.iter().filter_map(|job| Some((job.clone(), self.job_uid(job)?))).collect();
            self.dialog = Some(Dialog::Jobs { action, targets, uids });
        } else {
            let uids: Vec<Option<String>> = targets.iter().map(|job| self.job_uid(job)).collect();
            out.extend(
                targets.into_iter().zip(uids).map(|(job, uid)| Command::Fleet(Action::Job { job, action, uid })),
            );
        }
    }
}
