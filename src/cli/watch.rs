//! `flightdeck watch REF... [--exec CMD]`: say each change of state of these jobs as the
//! fleet's polling sees it, run CMD on each (the event as JSON on its standard input, never
//! through a shell), and exit when every job has ended, with the job's exit code (the first
//! non-zero one of several), so a script can wait on a job anywhere.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Failure, start_fleet};
use crate::config::Config;
use crate::model::{Job, JobRef, JobState, Snapshot};
use crate::output;

/// How long `--exec` may run per event before it is killed: a hung notifier must not stop
/// the watch.
const EXEC_LIMIT: Duration = Duration::from_secs(30);

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

/// What was last seen of each job.
#[derive(Default)]
struct Seen {
    state: HashMap<JobRef, JobState>,
    /// Exit statuses of ended jobs (what the watch exits with), in the order given.
    ended: HashMap<JobRef, u8>,
}

/// The events one snapshot of the jobs makes, against what was seen before; `None` in
/// `jobs` is a job no longer listed.
fn changes(seen: &mut Seen, jobs: &[(JobRef, Option<&Job>)], at: DateTime<Utc>) -> Vec<Event> {
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
fn exit_status(job: &Job) -> u8 {
    match job.exit {
        Some(e) if e.code != 0 || job.state == JobState::Completed => u8::try_from(e.code.clamp(0, 255)).unwrap_or(1),
        _ if job.state == JobState::Completed => 0,
        _ => 1,
    }
}

fn line(e: &Event) -> String {
    let from = e.from.map_or_else(|| "found".to_string(), |s| s.to_string());
    let to = e.to.map_or_else(|| "gone".to_string(), |s| s.to_string());
    let mut line = format!("{} {}  {from} → {to}", e.at.format("%H:%M:%S"), e.job);
    if let Some(code) = e.exit_code.filter(|_| e.to.is_some_and(JobState::is_finished)) {
        line.push_str(&format!("  exit {code}"));
    }
    if let Some(reason) = e.reason.as_deref().filter(|r| !r.is_empty() && *r != "None") {
        line.push_str(&format!("  ({})", output::printable(reason)));
    }
    line
}

/// `--exec`'s words as an argv (split like a shell would, run without one).
pub fn exec_argv(command: &str) -> Result<Vec<String>, Failure> {
    match shlex::split(command) {
        Some(argv) if !argv.is_empty() => Ok(argv),
        _ => Err(Failure(format!("--exec {command:?}: not a command line (unbalanced quotes, or empty)"))),
    }
}

/// Run `argv` with `event` on standard input, bounded; a failure is said, not fatal.
async fn run_exec(argv: &[String], event: &Event) {
    let json = serde_json::to_vec(event).expect("an event serialises");
    let spawned =
        tokio::process::Command::new(&argv[0]).args(&argv[1..]).stdin(Stdio::piped()).kill_on_drop(true).spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("flightdeck: --exec {}: {e}", argv[0]);
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt as _;
        let _ = stdin.write_all(&json).await;
        let _ = stdin.write_all(b"\n").await;
    }
    match tokio::time::timeout(EXEC_LIMIT, child.wait()).await {
        Ok(Ok(status)) if status.success() => {}
        Ok(Ok(status)) => eprintln!("flightdeck: --exec {} for {}: {status}", argv[0], event.job),
        Ok(Err(e)) => eprintln!("flightdeck: --exec {}: {e}", argv[0]),
        Err(_) => eprintln!(
            "flightdeck: --exec {} for {} ran over {} s and was killed",
            argv[0],
            event.job,
            EXEC_LIMIT.as_secs()
        ),
    }
}

pub async fn watch(config: &Config, read_only: bool, jobs: &[JobRef], exec: Option<&str>) -> Result<ExitCode, Failure> {
    let argv = exec.map(exec_argv).transpose()?;
    let clusters: Vec<String> = jobs.iter().map(|j| j.cluster.clone()).collect();
    for cluster in &clusters {
        if !config.clusters.iter().any(|c| &c.name == cluster) {
            return Err(Failure(format!("no cluster {cluster:?} in the configuration")));
        }
    }
    let fleet = start_fleet(config, read_only, &clusters, true).await?;
    let mut updates = fleet.subscribe();
    let mut seen = Seen::default();
    // Each cluster's snapshot last looked at, compared by identity (held, so its address is
    // never reused): a refresh that failed keeps the old one, and is no news.
    let mut looked_at: HashMap<String, Arc<Snapshot>> = HashMap::new();
    loop {
        let state = updates.borrow_and_update().clone();
        // Only clusters with a new snapshot are looked at: a job is "gone" only when its
        // cluster answered without it, never because its cluster is slow.
        let mut looked = Vec::new();
        for r in jobs {
            let Some(cluster) = state.cluster(&r.cluster) else { continue };
            let Some(snapshot) = cluster.snapshot.as_ref() else { continue };
            if looked_at.get(&r.cluster).is_some_and(|s| Arc::ptr_eq(s, snapshot)) && seen.state.contains_key(r) {
                continue;
            }
            let job = snapshot.jobs.iter().find(|j| j.job_ref.id == r.id);
            if job.is_none() && !seen.state.contains_key(r) {
                return Err(Failure(format!("{r}: no such job in the cluster's last snapshot (it may have ended)")));
            }
            looked.push((r.clone(), job));
        }
        for r in jobs {
            if let Some(snapshot) = state.cluster(&r.cluster).and_then(|c| c.snapshot.clone()) {
                looked_at.insert(r.cluster.clone(), snapshot);
            }
        }
        for event in changes(&mut seen, &looked, Utc::now()) {
            println!("{}", line(&event));
            let _ = std::io::stdout().flush();
            if let Some(argv) = &argv {
                run_exec(argv, &event).await;
            }
        }
        if jobs.iter().all(|r| seen.ended.contains_key(r)) {
            let code = jobs.iter().map(|r| seen.ended[r]).find(|c| *c != 0).unwrap_or(0);
            return Ok(ExitCode::from(code));
        }
        if updates.changed().await.is_err() {
            return Err(Failure("the fleet stopped".into()));
        }
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
        let mut seen = Seen::default();
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
        assert_eq!(line(&end[0]), "08:00:00 hpc/7  pending → failed  exit 3");
    }

    #[test]
    fn a_job_gone_before_its_end_was_seen_ends_the_watch_with_1() {
        let r = JobRef::new("hpc", "8");
        let mut seen = Seen::default();
        changes(&mut seen, &[(r.clone(), Some(&job("8", JobState::Running, None)))], at());
        let gone = changes(&mut seen, &[(r.clone(), None)], at());
        assert_eq!(gone[0].to, None);
        assert_eq!(seen.ended[&r], 1);
        assert!(line(&gone[0]).contains("running → gone  (left the queue before its end was seen)"));
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
    fn exec_words_are_split_not_given_to_a_shell() {
        assert_eq!(
            exec_argv("notify-send 'job done' --urgency=low").unwrap(),
            ["notify-send", "job done", "--urgency=low"]
        );
        assert_eq!(exec_argv("tee /tmp/x; rm -rf /").unwrap(), ["tee", "/tmp/x;", "rm", "-rf", "/"], "`;` is a word");
        assert!(exec_argv("echo 'unbalanced").is_err());
        assert!(exec_argv("  ").is_err());
    }

    #[test]
    fn events_serialise_for_the_exec_command() {
        let r = JobRef::new("hpc", "7");
        let mut seen = Seen::default();
        let e = &changes(&mut seen, &[(r, Some(&job("7", JobState::Completed, Some(0))))], at())[0];
        let json: serde_json::Value = serde_json::to_value(e).unwrap();
        assert_eq!(json["job"], "hpc/7");
        assert_eq!(json["to"], "completed");
        assert_eq!(json["from"], serde_json::Value::Null);
        assert_eq!(json["exit_code"], 0);
    }
}
