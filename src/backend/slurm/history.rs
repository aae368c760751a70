//! Finished jobs from Slurm's accounting: one `sacct` call per history, asked on demand
//! (`flightdeck jobs --since`, the cockpit's history view), never per refresh. sacct asks
//! slurmdbd, not slurmctld: a history costs the controller nothing.
//!
//! `Backend::history`: one `env TZ=UTC sacct -n -P --delimiter=MARK --format=…
//! --starttime --endtime=now --state=… [--user=]` per history (end states as sacct's codes, the
//! user name checked), streamed (never captured whole: a 14,000-job window is past the 16 MiB
//! captured output holds) through `parse/sacct.rs`'s `read_sacct`, which keeps at most about twice
//! the limit in memory and cuts to the newest `--limit`, counting the older ones left out (a note
//! says how many); on demand only (sacct asks slurmdbd: no controller RPC).

use chrono::{DateTime, Utc};

use super::SlurmBackend;
use super::commands::checked_user;
use std::time::Duration;

use super::parse::sacct::{SACCT_FIELDS, read_sacct};
use super::parse::text::record_mark;
use crate::backend::BackendError;
use crate::backend::exec::{Transport, display_argv};
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
    read_with(&backend.transport, backend.timeout, &backend.name, query, &record_mark()).await
}

/// sacct's answer streamed into [`read_sacct`], cut to the query's limit as it arrives (a
/// window of 14,000 jobs is past the 16 MiB that captured output may hold).
async fn read_with(
    transport: &Transport,
    timeout: Duration,
    cluster: &str,
    query: &HistoryQuery,
    mark: &str,
) -> Result<History, BackendError> {
    let argv = sacct_argv(query, mark)?;
    read_argv(transport, timeout, cluster, query, mark, argv).await
}

async fn read_argv(
    transport: &Transport,
    timeout: Duration,
    cluster: &str,
    query: &HistoryQuery,
    mark: &str,
    argv: Vec<String>,
) -> Result<History, BackendError> {
    let (name, mark_owned, wanted, limit) = (cluster.to_string(), mark.to_string(), query.clone(), query.limit);
    let read = transport
        .stream(&argv, timeout, move |r| {
            read_sacct(&name, std::io::BufReader::new(r), &mark_owned, limit, |rec| wanted.wants(rec.job.state))
        })
        .await?
        .map_err(|e| BackendError::Parse { what: display_argv(&argv[..3]), message: e.to_string() })?;
    let mut history = History::newest("sacct", read.records, query.limit);
    history.left_out += read.left_out;
    if read.dropped > 0 {
        history.notes.push(format!("{} lines of sacct's output did not read as jobs and were left out", read.dropped));
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

    /// A window past 16 MiB of sacct text (what captured output holds, and what `jobs
    /// --since` used to fail on) streams through, cut to the limit: the newest kept, their
    /// steps folded in, the rest counted in a note.
    #[tokio::test]
    async fn an_answer_past_16_mib_streams_and_is_cut_to_the_newest_limit() {
        use std::io::Write as _;
        const MARK: &str = "fdMARK0123";
        let jobs = 48_000u32;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sacct.txt");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for id in 1..=jobs {
            let (h, m, sec) = (id / 3600 % 24, id / 60 % 60, id % 60);
            let end = format!("2026-12-0{}T{h:02}:{m:02}:{sec:02}", 1 + id / 86_400);
            let tres = "billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=1000M,node=1";
            let job = [
                &id.to_string(),
                "COMPLETED",
                "0:0",
                "alice",
                "ml",
                "gpu",
                "2026-12-01T00:00:00",
                "2026-12-01T00:00:00",
                &end,
                "60",
                "1",
                "a100-01",
                tres,
                "",
                "train-with-a-longish-name",
            ];
            let step = [
                &format!("{id}.batch"),
                "COMPLETED",
                "0:0",
                "",
                "ml",
                "",
                "2026-12-01T00:00:00",
                "2026-12-01T00:00:00",
                &end,
                "60",
                "1",
                "a100-01",
                tres,
                &format!("{id}K"),
                "batch",
            ];
            writeln!(out, "{}\n{}", job.join(MARK), step.join(MARK)).unwrap();
        }
        out.into_inner().unwrap().sync_all().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size > 16 << 20, "the fixture is {size} bytes");
        let argv: Vec<String> = vec!["cat".into(), path.to_string_lossy().into_owned()];
        let transport = Transport::local();
        let secs = Duration::from_secs(60);
        // Captured whole, the same answer is past the bound: what `jobs --since` used to do.
        let err = transport.output(&argv, None, secs).await.unwrap_err().to_string();
        assert!(err.contains("standard output passed 16 MiB"), "{err}");

        let since = DateTime::from_timestamp(1_796_400_000, 0).unwrap();
        let q = HistoryQuery { since, user: None, states: vec![], limit: 1_000 };
        let h = read_argv(&transport, secs, "fd24", &q, MARK, argv).await.unwrap();
        assert_eq!(h.records.len(), 1_000);
        assert_eq!(h.left_out, jobs as usize - 1_000);
        let ids: Vec<&str> = h.records.iter().take(3).map(|r| r.job.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["48000", "47999", "47998"], "the newest first");
        assert_eq!(h.records.last().unwrap().job.job_ref.id, "47001");
        // The step's MaxRSS (48000K) folded into its job.
        assert_eq!(h.records[0].max_rss_mb, Some(47));
        assert!(h.notes.iter().any(|n| n == "47000 older jobs past the limit of 1000 were left out"), "{:?}", h.notes);
    }
}
