//! Following jobs from one snapshot to the next: each change of state is an [`Event`],
//! an ended job is remembered with the exit status a script wants. Pure; `flightdeck watch`
//! and the cockpit's `w` both feed it what each refresh shows.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::{Job, JobRef, JobState};

/// One change of one job, as `--exec` reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub job: String,
    pub name: String,
    /// `None` for the state the job was found in.
    pub from: Option<JobState>,
    /// `None` when the job left the queue before its end was seen.
    pub to: Option<JobState>,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub at: DateTime<Utc>,
}

/// What was last seen of each watched job.
#[derive(Debug, Default)]
pub struct Watcher {
    state: HashMap<JobRef, JobState>,
    /// Exit statuses of ended jobs (what `flightdeck watch` exits with).
    ended: HashMap<JobRef, u8>,
}

impl Watcher {
    /// The job has been seen in a snapshot.
    pub fn seen(&self, job: &JobRef) -> bool {
        self.state.contains_key(job)
    }

    /// The job has ended (or left the queue unseen): its exit status for scripts.
    pub fn ended(&self, job: &JobRef) -> Option<u8> {
        self.ended.get(job).copied()
    }

    /// Stop watching `job`, forgetting it.
    pub fn forget(&mut self, job: &JobRef) {
        self.state.remove(job);
        self.ended.remove(job);
    }

    /// The events one look at the jobs makes (see [`changes`]).
    pub fn observe(&mut self, jobs: &[(JobRef, Option<&Job>)], at: DateTime<Utc>) -> Vec<Event> {
        changes(self, jobs, at)
    }
}

/// The events one snapshot of the jobs makes, against what was seen before; `None` in
/// `jobs` is a job no longer listed.
fn changes(seen: &mut Watcher, jobs: &[(JobRef, Option<&Job>)], at: DateTime<Utc>) -> Vec<Event> {
    let mut events = Vec::new();
    for (r, job) in jobs {
        if seen.ended.contains_key(r) {
            continue;
        }
        let before = seen.state.get(r).copied();
        match job {
            Some(job) if before != Some(job.state) => {
                seen.state.insert(r.clone(), job.state);
                events.push(Event {
                    job: r.to_string(),
                    name: job.name.clone(),
                    from: before,
                    to: Some(job.state),
                    reason: job.reason.clone(),
                    exit_code: job.exit.map(|e| e.code),
                    at,
                });
                if job.state.is_finished() {
                    seen.ended.insert(r.clone(), exit_status(job));
                }
            }
            Some(_) => {}
            None => {
                // Listed once, gone now: it ended and aged out of the controller between two
                // looks (Slurm keeps ended jobs for MinJobAge), its end unseen.
                events.push(Event {
                    job: r.to_string(),
                    name: String::new(),
                    from: before,
                    to: None,
                    reason: Some("left the queue before its end was seen".into()),
                    exit_code: None,
                    at,
                });
                seen.ended.insert(r.clone(), 1);
            }
        }
    }
    events
}

/// What the watch exits with for an ended job: its own exit code where the backend gives
/// one (0-255), else 0 for a completed job and 1 for any other end.
pub fn exit_status(job: &Job) -> u8 {
    match job.exit {
        Some(e) if e.code != 0 || job.state == JobState::Completed => u8::try_from(e.code.clamp(0, 255)).unwrap_or(1),
        _ if job.state == JobState::Completed => 0,
        _ => 1,
    }
}

impl Event {
    /// One line: `08:00:00 hpc/7  pending → failed  exit 3  (NonZeroExitCode)`.
    pub fn line(&self) -> String {
        self.summary_at(true)
    }

    /// The same without the time (a toast, a desktop notification).
    pub fn summary(&self) -> String {
        self.summary_at(false)
    }

    fn summary_at(&self, clock: bool) -> String {
        let e = self;
        let from = e.from.map_or_else(|| "found".to_string(), |s| s.to_string());
        let to = e.to.map_or_else(|| "gone".to_string(), |s| s.to_string());
        let mut line = if clock {
            format!("{} {}  {from} → {to}", e.at.format("%H:%M:%S"), e.job)
        } else {
            format!("{}  {from} → {to}", e.job)
        };
        if let Some(code) = e.exit_code.filter(|_| e.to.is_some_and(JobState::is_finished)) {
            line.push_str(&format!("  exit {code}"));
        }
        if let Some(reason) = e.reason.as_deref().filter(|r| !r.is_empty() && *r != "None") {
            line.push_str(&format!("  ({})", crate::safe_text::printable(reason)));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ExitStatus;

    fn job(id: &str, state: JobState, exit: Option<i32>) -> Job {
        let mut j = Job::new(JobRef::new("hpc", id), state);
        j.name = "train".into();
        j.exit = exit.map(|code| ExitStatus { code, signal: None });
        j
    }

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    #[test]
    fn each_change_is_one_event_and_an_end_is_remembered() {
        let r = JobRef::new("hpc", "7");
        let mut seen = Watcher::default();
        let pending = job("7", JobState::Pending, None);
        let first = changes(&mut seen, &[(r.clone(), Some(&pending))], at());
        assert_eq!((first[0].from, first[0].to), (None, Some(JobState::Pending)));
        assert!(changes(&mut seen, &[(r.clone(), Some(&pending))], at()).is_empty(), "no change, no event");
        let failed = job("7", JobState::Failed, Some(3));
        let end = changes(&mut seen, &[(r.clone(), Some(&failed))], at());
        assert_eq!(
            (end[0].from, end[0].to, end[0].exit_code),
            (Some(JobState::Pending), Some(JobState::Failed), Some(3))
        );
        assert_eq!(seen.ended[&r], 3);
        assert!(changes(&mut seen, &[(r.clone(), None)], at()).is_empty(), "an ended job is not watched further");
        assert_eq!(end[0].line(), "08:00:00 hpc/7  pending → failed  exit 3");
        assert_eq!(end[0].summary(), "hpc/7  pending → failed  exit 3");
    }

    #[test]
    fn a_job_gone_before_its_end_was_seen_ends_the_watch_with_1() {
        let r = JobRef::new("hpc", "8");
        let mut seen = Watcher::default();
        changes(&mut seen, &[(r.clone(), Some(&job("8", JobState::Running, None)))], at());
        let gone = changes(&mut seen, &[(r.clone(), None)], at());
        assert_eq!(gone[0].to, None);
        assert_eq!(seen.ended[&r], 1);
        assert!(gone[0].line().contains("running → gone  (left the queue before its end was seen)"));
    }

    #[test]
    fn exit_statuses_for_scripts() {
        assert_eq!(exit_status(&job("1", JobState::Completed, Some(0))), 0);
        assert_eq!(exit_status(&job("1", JobState::Completed, None)), 0);
        assert_eq!(exit_status(&job("1", JobState::Failed, Some(42))), 42);
        assert_eq!(exit_status(&job("1", JobState::Failed, Some(0))), 1, "failed is never 0");
        assert_eq!(exit_status(&job("1", JobState::Cancelled, None)), 1);
        assert_eq!(exit_status(&job("1", JobState::Failed, Some(300))), 255);
    }

    #[test]
    fn events_serialise_for_the_exec_command() {
        let r = JobRef::new("hpc", "7");
        let mut seen = Watcher::default();
        let e = &changes(&mut seen, &[(r, Some(&job("7", JobState::Completed, Some(0))))], at())[0];
        let json: serde_json::Value = serde_json::to_value(e).unwrap();
        assert_eq!(json["job"], "hpc/7");
        assert_eq!(json["to"], "completed");
        assert_eq!(json["from"], serde_json::Value::Null);
        assert_eq!(json["exit_code"], 0);
    }
}
