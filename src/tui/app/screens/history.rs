//! The history screen: reading finished jobs of every cluster, its keys.

use chrono::Duration;

use crate::tui::action::UiAction;
use crate::tui::app::{App, Command, Screen};

impl App {
    /// Open the history screen and read the jobs that ended in the last `age` (the last
    /// one asked, else 24 h): one read of every cluster, now.
    pub(in crate::tui::app) fn open_history(&mut self, age: Option<Duration>, out: &mut Vec<Command>) {
        if let Some(age) = age {
            self.history.age = Some(age);
        }
        self.switch(Screen::History);
        self.fetch_history(out);
    }

    /// Ask every cluster for its finished jobs since the history's age before now.
    pub(in crate::tui::app) fn fetch_history(&mut self, out: &mut Vec<Command>) {
        let since = self.now - self.history.age();
        let seq = self.history.read.issue(());
        self.history.since = Some(since);
        out.push(Command::FetchHistory { since, seq });
    }

    pub(in crate::tui::app) fn history_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.history.cursor, action) {
            return;
        }
        match action {
            UiAction::ReloadHistory => self.fetch_history(out),
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::Open => {
                let Some(record) = self.history.current() else { return };
                let job = record.job.clone();
                // Still in the queue (ended moments ago): the live row, kept up to date.
                match self.rows.job_row(&job.job_ref) {
                    Some(row) => self.open_detail(row, out),
                    None => self.open_detail_of(job, None, true, out),
                }
            }
            _ => {}
        }
    }
}
