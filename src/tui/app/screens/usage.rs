//! The usage screen: reading the window's GPU-hours, its keys.

use chrono::Duration;

use crate::tui::action::UiAction;
use crate::tui::app::usage::UsageSort;
use crate::tui::app::{App, Command, Screen};

impl App {
    /// Open the usage screen. The GPU-hours are read when it first opens, when the span
    /// changes (`:usage 1d`), and on `r`; what is held now comes with every refresh.
    pub(in crate::tui::app) fn open_usage(&mut self, age: Option<Duration>, out: &mut Vec<Command>) {
        let new_span = age.is_some_and(|a| Some(a) != self.usage.age);
        if let Some(age) = age {
            self.usage.age = Some(age);
        }
        self.switch(Screen::Usage);
        self.usage.rebuild(&self.rows.usage);
        if new_span || (self.usage.window.is_none() && !self.usage.read.is_open()) {
            self.fetch_usage(out);
        }
    }

    /// Ask every cluster for the window's finished jobs, to be summed off the UI thread.
    fn fetch_usage(&mut self, out: &mut Vec<Command>) {
        let since = self.now - self.usage.age();
        let seq = self.usage.read.issue(());
        self.usage.since = Some(since);
        out.push(Command::FetchUsage { since, seq });
    }

    pub(in crate::tui::app) fn usage_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.usage.cursor, action) {
            return;
        }
        match action {
            UiAction::ReloadHistory => self.fetch_usage(out),
            UiAction::SortNext => {
                let at = UsageSort::ALL.iter().position(|s| *s == self.usage.sort).unwrap_or(0);
                self.usage.sort = UsageSort::ALL[(at + 1) % UsageSort::ALL.len()];
                self.usage.rebuild(&self.rows.usage);
            }
            UiAction::SortReverse => {
                self.usage.reverse = !self.usage.reverse;
                self.usage.rebuild(&self.rows.usage);
            }
            // The user's jobs: the jobs screen narrowed to them, as `:user NAME` does.
            UiAction::Open => {
                let Some(user) = self.usage.current().map(|r| r.key.clone()) else { return };
                self.jobs.user = Some(user);
                self.refilter_jobs();
                self.switch(Screen::Jobs);
            }
            _ => {}
        }
    }
}
