//! A new fleet state applied to the App.
//!
//! A state that lists what is shown (`Msg::Restamped`,
//! [`crate::tui::app::row_cache::same_listing`]) is a restamp: the rows take over its
//! snapshots' times and health, with no re-sort and no re-filter, and a redraw only when an
//! elapsed time on screen turns a minute or a health changes. Any other state brings a new row
//! cache, with the lists' rows taken as the event loop prepared them off the UI thread while
//! the App's [`ListView`] is unchanged, else sorted and filtered here. What a refresh replaced
//! is retired, for the event loop to free off the UI thread.

use std::sync::Arc;

use crate::fleet::FleetState;
use crate::model::Health;
use crate::tui::app::lists::{JobColumn, ListView};
use crate::tui::app::row_cache::RowCache;
use crate::tui::app::{App, Screen, prepared};

/// Two healths the screen shows alike: a fresh cluster's refresh time is drawn nowhere.
fn health_looks_the_same(a: &Health, b: &Health) -> bool {
    matches!((a, b), (Health::Fresh { .. }, Health::Fresh { .. })) || a == b
}

impl App {
    /// The row cache replaced by the last refresh, if any; dropping it frees every row and,
    /// often, the last reference to the old snapshots, so the event loop drops it elsewhere.
    pub fn take_retired(&mut self) -> Option<Box<dyn std::any::Any + Send>> {
        self.retired.take()
    }

    /// A new state listing what is shown ([`row_cache::same_listing`]): the rows take over
    /// its snapshots, health and times, and keep their order and filters. True only when a
    /// cell on screen changed: a cluster's health, or an elapsed time turning a minute.
    pub(in crate::tui::app) fn on_restamp(&mut self, state: Arc<FleetState>) -> bool {
        if Arc::ptr_eq(&self.rows.fleet, &state) {
            return false;
        }
        let before = self.elapsed_on_screen();
        let old = self.rows.restamp(state);
        let health_moved = old
            .clusters
            .iter()
            .zip(&self.rows.fleet.clusters)
            .any(|(a, b)| !health_looks_the_same(&a.health, &b.health));
        self.retired = Some(Box::new(old));
        if let Some(d) = &mut self.detail
            && let Some(row) = self.rows.job_row(&d.job)
        {
            d.taken_at = self.rows.taken_at(self.rows.jobs[row as usize].snap);
        }
        health_moved || self.elapsed_on_screen() != before
    }

    /// The elapsed times on screen (those counted to a snapshot's `taken_at`): the jobs
    /// table's rows in view, or the detail's job.
    fn elapsed_on_screen(&self) -> Vec<String> {
        let column = JobColumn::Elapsed;
        match self.screen {
            Screen::Jobs => {
                let c = &self.jobs.cursor;
                let from = c.offset.get().min(c.visible.len());
                // Before the first frame the view's height is not known: a page's worth.
                let to = (from + c.page()).min(c.visible.len());
                c.visible[from..to]
                    .iter()
                    .map(|&row| {
                        let cx = match self.rows.array_at(row) {
                            Some(a) => crate::columns::JobContext::at(self.rows.taken_at(a.snap)),
                            None => self.rows.job_context(row),
                        };
                        column.cell(self.rows.row_job(row), cx).into_owned()
                    })
                    .collect()
            }
            Screen::Detail => self
                .detail
                .iter()
                .map(|d| column.cell(&d.last, crate::columns::JobContext::at(d.taken_at)).into_owned())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What decides the lists' rows besides the data: the event loop has them prepared off
    /// the UI thread with each new row cache ([`prepared::Lists`]).
    pub fn list_view(&self) -> ListView {
        ListView {
            cluster: self.cluster.clone(),
            jobs: self.jobs.view(),
            nodes: self.nodes.view(),
            gpus: self.gpus.view(),
        }
    }

    /// A new row cache, with the lists' rows prepared for a view; false when it holds the
    /// state already shown. Prepared rows are taken as they are when the view is still the
    /// App's (the common case: nothing left to sort or filter here); else sorted and
    /// filtered here.
    pub(in crate::tui::app) fn on_rows(&mut self, rows: RowCache, lists: Option<prepared::Lists>) -> bool {
        if Arc::ptr_eq(&self.rows.fleet, &rows.fleet) {
            // Freeing 100,000 rows is no work for the UI thread either.
            self.retired = Some(Box::new(rows));
            return false;
        }
        self.retired = Some(Box::new(std::mem::replace(&mut self.rows, rows)));
        self.list_passes += 1;
        match lists.filter(|l| l.view == self.list_view()) {
            Some(l) => {
                self.jobs.adopt(&self.rows, l.jobs.0, l.jobs.1);
                self.nodes.adopt(&self.rows, l.nodes.0, l.nodes.1);
                self.gpus.adopt(&self.rows, l.gpus);
            }
            None => {
                let keep = self.cluster_keep();
                self.jobs.resort(&self.rows);
                self.jobs.refilter(&self.rows, keep, &mut self.matchers, false);
                self.nodes.resort(&self.rows);
                self.nodes.refilter(&self.rows, keep, &mut self.matchers, false);
                self.gpus.refilter(&self.rows, keep);
            }
        }
        self.jobs.prune(&self.rows);
        self.nodes.prune(&self.rows);
        self.usage.rebuild(&self.rows.usage);
        if let Some(d) = &mut self.detail {
            match self.rows.job_row(&d.job) {
                Some(row) => {
                    d.last = self.rows.job(row).clone();
                    d.taken_at = self.rows.taken_at(self.rows.jobs[row as usize].snap);
                    d.gone = false;
                }
                None => d.gone = true,
            }
        }
        self.form.recheck(&self.rows.fleet);
        true
    }
}
