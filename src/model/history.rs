//! Finished jobs, which outlive the scheduler's memory: what `flightdeck jobs --since` and
//! the history view show. Read on demand (or at a slow cadence), never per refresh.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Job, JobState};

/// How far back a history looks when not told (`--since`).
pub const DEFAULT_HOURS: i64 = 24;
/// Most records one history keeps (the newest by end time): 10,000 finished jobs are a
/// screenful of scrolling and one `sacct` call; more is a report, not a view.
pub const DEFAULT_LIMIT: usize = 10_000;

/// An age as `--since` and `:history` take it: a whole positive number and a unit, `45s`,
/// `90m`, `6h`, `2d`, `2w`, at most ten years.
pub fn parse_age(text: &str) -> Result<chrono::TimeDelta, String> {
    let text = text.trim();
    let bad = || format!("`{text}` is no age: write it as 30m, 6h, 2d or 1w");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    if number <= 0 {
        return Err(bad());
    }
    let age = match unit {
        "s" => chrono::TimeDelta::try_seconds(number),
        "m" | "min" => chrono::TimeDelta::try_minutes(number),
        "h" => chrono::TimeDelta::try_hours(number),
        "d" => chrono::TimeDelta::try_days(number),
        "w" => chrono::TimeDelta::try_weeks(number),
        _ => None,
    };
    age.filter(|a| *a <= chrono::TimeDelta::days(10 * 366)).ok_or_else(bad)
}

/// Which finished jobs to read.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryQuery {
    /// Jobs that ended at or after this.
    pub since: DateTime<Utc>,
    /// One user's jobs; `None`: the backend's default (Slurm: the caller's own).
    pub user: Option<String>,
    /// Only these end states; empty: every one.
    pub states: Vec<JobState>,
    pub limit: usize,
}

impl HistoryQuery {
    /// The last [`DEFAULT_HOURS`], every end state, at most [`DEFAULT_LIMIT`] records.
    pub fn recent(now: DateTime<Utc>) -> Self {
        HistoryQuery {
            since: now - chrono::TimeDelta::hours(DEFAULT_HOURS),
            user: None,
            states: Vec::new(),
            limit: DEFAULT_LIMIT,
        }
    }

    /// Whether `state` is one this query asks for (a finished one, among those named).
    pub fn wants(&self, state: JobState) -> bool {
        state.is_finished() && (self.states.is_empty() || self.states.contains(&state))
    }
}

/// One finished job and what it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job: Job,
    /// Wall time from start to end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_secs: Option<u64>,
    /// The largest resident set of any of its steps (Slurm's `MaxRSS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_mb: Option<u64>,
    /// GPUs held × wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hours: Option<f64>,
}

impl JobRecord {
    /// A record from what a job carries itself (a Kubernetes Job, a cloud run): elapsed
    /// from its start and end, GPU hours from the GPUs it held.
    pub fn from_job(job: Job) -> Self {
        let elapsed_secs = match (job.start_time, job.end_time) {
            (Some(start), Some(end)) if end >= start => u64::try_from((end - start).num_seconds()).ok(),
            _ => None,
        };
        let gpus = job.gpus_allocated.max(job.gpus_requested);
        let gpu_hours = elapsed_secs.filter(|_| gpus > 0).map(|s| f64::from(gpus) * s as f64 / 3600.0);
        JobRecord { job, elapsed_secs, max_rss_mb: None, gpu_hours }
    }
}

/// One cluster's finished jobs, newest end first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub records: Vec<JobRecord>,
    /// Where they were read (`sacct`, `the current snapshot`).
    pub source: String,
    /// Records past the query's limit, left out (the oldest).
    pub left_out: usize,
    /// What the history lacks and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl History {
    /// Newest end first (no end time last), ties by id: the order histories are shown in.
    pub fn sort_newest(records: &mut [JobRecord]) {
        records
            .sort_by(|a, b| b.job.end_time.cmp(&a.job.end_time).then_with(|| a.job.job_ref.id.cmp(&b.job.job_ref.id)));
    }

    /// `records` sorted newest end first (no end time last) and cut to `limit`.
    pub fn newest(source: impl Into<String>, mut records: Vec<JobRecord>, limit: usize) -> Self {
        Self::sort_newest(&mut records);
        let left_out = records.len().saturating_sub(limit);
        records.truncate(limit);
        History { records, source: source.into(), left_out, notes: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobRef;

    fn job(id: &str, end: Option<i64>) -> Job {
        let mut j = Job::new(JobRef::new("c", id), JobState::Completed);
        j.start_time = DateTime::from_timestamp(1_000, 0);
        j.end_time = end.and_then(|e| DateTime::from_timestamp(e, 0));
        j.gpus_allocated = 4;
        j
    }

    #[test]
    fn records_from_jobs_count_gpu_hours_and_newest_come_first_up_to_the_limit() {
        let r = JobRecord::from_job(job("1", Some(1_000 + 1_800)));
        assert_eq!((r.elapsed_secs, r.gpu_hours), (Some(1_800), Some(2.0)));
        assert_eq!(JobRecord::from_job(job("2", None)).elapsed_secs, None);
        let h = History::newest(
            "t",
            vec![
                JobRecord::from_job(job("a", Some(2_000))),
                JobRecord::from_job(job("b", None)),
                JobRecord::from_job(job("c", Some(3_000))),
            ],
            2,
        );
        let ids: Vec<&str> = h.records.iter().map(|r| r.job.job_ref.id.as_str()).collect();
        assert_eq!((ids, h.left_out), (vec!["c", "a"], 1));
    }

    #[test]
    fn a_query_wants_finished_states_only() {
        let mut q = HistoryQuery::recent(Utc::now());
        assert!(q.wants(JobState::Failed) && q.wants(JobState::OutOfMemory));
        assert!(!q.wants(JobState::Running) && !q.wants(JobState::Pending));
        q.states = vec![JobState::Failed];
        assert!(!q.wants(JobState::Completed) && q.wants(JobState::Failed));
    }
}
