//! Watched jobs (`w`): each change told as a toast and a notification; an ended job stops being watched.

use crate::model::{Job, JobRef, JobState};
use crate::tui::app::{App, Command};

/// `hpc/1, hpc/2` or `hpc/1 and 4 more`.
fn names(jobs: &[JobRef]) -> String {
    let shown: Vec<String> = jobs.iter().take(3).map(ToString::to_string).collect();
    match jobs.len().saturating_sub(3) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

impl App {
    /// How a watched job's change is told; the cockpit sets it from the config.
    pub fn set_notify(&mut self, notify: crate::notify::NotifySettings) {
        self.notify = notify;
    }

    pub fn notify_settings(&self) -> &crate::notify::NotifySettings {
        &self.notify
    }

    /// What each watched job is now, against what was seen: a toast and a
    /// [`Command::Notify`] per change; an ended job stops being watched. True when any
    /// changed.
    pub(in crate::tui::app) fn follow_watched(&mut self, out: &mut Vec<Command>) -> bool {
        if self.watched.is_empty() {
            return false;
        }
        let fleet = self.rows.fleet.clone();
        let looked: Vec<(JobRef, Option<&Job>)> = self
            .watched
            .iter()
            .filter_map(|r| {
                // A cluster with no snapshot yet says nothing about its jobs.
                let snapshot = fleet.cluster(&r.cluster)?.snapshot.as_deref()?;
                Some((r.clone(), snapshot.job(&r.id)))
            })
            .collect();
        let events = self.follow.observe(&looked, self.now);
        if events.is_empty() {
            return false;
        }
        for event in events {
            let failed = matches!(event.to, Some(JobState::Failed | JobState::Timeout | JobState::NodeFail) | None);
            self.toast(event.summary(), failed);
            out.push(Command::Notify(event));
        }
        let follow = &mut self.follow;
        self.watched.retain(|r| {
            let ended = follow.ended(r).is_some();
            if ended {
                follow.forget(r);
            }
            !ended
        });
        true
    }

    /// `w`: watch these jobs, or stop watching them if all already are.
    pub(in crate::tui::app) fn toggle_watch(&mut self, jobs: Vec<JobRef>) {
        if jobs.is_empty() {
            return;
        }
        if jobs.iter().all(|r| self.watched.contains(r)) {
            for r in &jobs {
                self.follow.forget(r);
            }
            self.watched.retain(|r| !jobs.contains(r));
            self.toast(format!("stopped watching {}", names(&jobs)), false);
            return;
        }
        let fleet = self.rows.fleet.clone();
        let mut looked = Vec::new();
        let new: Vec<JobRef> = jobs.iter().filter(|r| !self.watched.contains(r)).cloned().collect();
        for r in &new {
            self.watched.push(r.clone());
            let job = fleet.cluster(&r.cluster).and_then(|c| c.snapshot.as_deref()).and_then(|s| s.job(&r.id));
            looked.push((r.clone(), job));
        }
        // The state they are in now is the start, not news.
        let found: Vec<(JobRef, Option<&Job>)> = looked.into_iter().filter(|(_, j)| j.is_some()).collect();
        self.follow.observe(&found, self.now);
        self.toast(format!("watching {} (w again stops)", names(&jobs)), false);
    }
}
