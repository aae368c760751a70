//! The GPU map's keys.

use crate::tui::action::UiAction;
use crate::tui::app::lists::GpuSort;
use crate::tui::app::row_cache::Cell as GpuCell;
use crate::tui::app::{App, Command};

impl App {
    pub(in crate::tui::app) fn gpus_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.gpus.cursor, action) {
            self.gpus.sync(&self.rows);
            return;
        }
        match action {
            UiAction::Left => self.gpus.cell = self.gpus.cell.saturating_sub(1),
            UiAction::Right => {
                self.gpus.cell += 1;
                self.gpus.sync(&self.rows);
            }
            UiAction::Open => {
                if let Some((_, _, GpuCell::Allocated(Some(_)), Some(job))) = self.gpu_selection() {
                    let job = job.job_ref.clone();
                    if let Some(row) = self.rows.job_row(&job) {
                        self.open_detail(row, out);
                    }
                }
            }
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    let at = GpuSort::ALL.iter().position(|c| *c == self.gpus.sort).unwrap_or(0);
                    self.gpus.sort = GpuSort::ALL[(at + 1) % GpuSort::ALL.len()];
                } else {
                    self.gpus.reverse = !self.gpus.reverse;
                }
                let keep = self.cluster_keep();
                self.gpus.refilter(&self.rows, keep);
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::ProblemNodes => {
                self.gpus.problems_only = !self.gpus.problems_only;
                let keep = self.cluster_keep();
                self.gpus.refilter(&self.rows, keep);
            }
            _ => {}
        }
    }
}
