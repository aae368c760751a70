//! Finished jobs from Slurm's accounting: one `sacct` call per history, asked on demand
//! (`flightdeck jobs --since`, the cockpit's history view), never per refresh. sacct asks
//! slurmdbd, not slurmctld: a history costs the controller nothing.

use chrono::{DateTime, Utc};

use super::SlurmBackend;
use super::commands::checked_user;
use super::parse::sacct::{SACCT_FIELDS, parse_sacct};
use super::parse::text::record_mark;
use super::transport::display_argv;
use crate::backend::BackendError;
use crate::model::{History, HistoryQuery, JobState};

/// sacct's codes for the end states a query names (every end state when it names none).
fn state_codes(states: &[JobState]) -> String {
    let all = [
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::OutOfMemory,
        JobState::NodeFail,
        JobState::Preempted,
    ];
    let wanted = if states.is_empty() { &all[..] } else { states };
    let mut codes: Vec<&str> = Vec::new();
    for state in wanted {
        let these: &[&str] = match state {
            JobState::Completed => &["CD"],
            // BOOT_FAIL and DEADLINE read as failures (see `parse::states`).
            JobState::Failed => &["F", "BF", "DL"],
            JobState::Cancelled => &["CA"],
            JobState::Timeout => &["TO"],
            JobState::OutOfMemory => &["OOM"],
            JobState::NodeFail => &["NF"],
            JobState::Preempted => &["PR"],
            _ => &[],
        };
        for code in these {
            if !codes.contains(code) {
                codes.push(code);
            }
        }
    }
    codes.join(",")
}

/// `env TZ=UTC sacct -n -P --delimiter=MARK -o FIELDS -S SINCE -E now --state=…
/// [--user=NAME]`: the jobs that ended in the window, with their steps.
pub fn sacct_argv(query: &HistoryQuery, mark: &str) -> Result<Vec<String>, BackendError> {
    let codes = state_codes(&query.states);
    if codes.is_empty() {
        return Err(BackendError::Unsupported(
            "a history lists ended jobs: name completed, failed, cancelled, timeout, out_of_memory, node_fail or preempted"
                .into(),
        ));
    }
    let mut argv: Vec<String> = ["env", "TZ=UTC", "sacct", "-n", "-P"].iter().map(|s| s.to_string()).collect();
    argv.push(format!("--delimiter={mark}"));
    argv.push(format!("--format={SACCT_FIELDS}"));
    argv.push(format!("--starttime={}", sacct_time(query.since)));
    argv.push("--endtime=now".into());
    argv.push(format!("--state={codes}"));
    if let Some(user) = &query.user {
        argv.push(format!("--user={}", checked_user(user)?));
    }
    Ok(argv)
}

fn sacct_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

pub(super) async fn read(backend: &SlurmBackend, query: &HistoryQuery) -> Result<History, BackendError> {
    let mark = record_mark();
    let argv = sacct_argv(query, &mark)?;
    let out = backend.transport.output(&argv, None, backend.timeout).await?.into_result(&argv)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (records, dropped) = parse_sacct(&backend.name, &text, &mark)
        .map_err(|e| BackendError::Parse { what: display_argv(&argv[..3]), message: e.to_string() })?;
    let records: Vec<_> = records.into_iter().filter(|r| query.wants(r.job.state)).collect();
    let mut history = History::newest("sacct", records, query.limit);
    if dropped > 0 {
        history.notes.push(format!("{dropped} lines of sacct's output did not read as jobs and were left out"));
    }
    if history.left_out > 0 {
        history.notes.push(format!("{} older jobs past the limit of {} were left out", history.left_out, query.limit));
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_states_and_user_go_into_the_arguments_quoted_by_construction() {
        let since = DateTime::from_timestamp(1_796_400_000, 0).unwrap();
        let mut q = HistoryQuery { since, user: None, states: vec![], limit: 10 };
        let argv = sacct_argv(&q, "fdMARK").unwrap();
        assert_eq!(argv[..5], ["env", "TZ=UTC", "sacct", "-n", "-P"]);
        assert!(argv.contains(&"--delimiter=fdMARK".to_string()));
        assert!(argv.contains(&format!("--starttime={}", sacct_time(since))));
        assert!(argv.contains(&"--state=CD,F,BF,DL,CA,TO,OOM,NF,PR".to_string()), "{argv:?}");
        assert!(argv.iter().any(|a| a.starts_with("--format=JobID,State,") && a.ends_with(",JobName")));
        q.states = vec![JobState::Failed, JobState::Timeout];
        q.user = Some("alice".into());
        let argv = sacct_argv(&q, "m").unwrap();
        assert!(argv.contains(&"--state=F,BF,DL,TO".to_string()) && argv.contains(&"--user=alice".to_string()));
        q.user = Some("--all; rm -rf /".into());
        assert!(sacct_argv(&q, "m").unwrap_err().to_string().contains("is not a user name"));
        q.user = None;
        q.states = vec![JobState::Running];
        assert!(sacct_argv(&q, "m").unwrap_err().to_string().contains("a history lists ended jobs"));
    }
}
