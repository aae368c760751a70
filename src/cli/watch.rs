//! `flightdeck watch REF... [--exec CMD]`: say each change of state of these jobs as the
//! fleet's polling sees it, run CMD on each (the event as JSON on its standard input, never
//! through a shell), and exit when every job has ended, with the job's exit code (the first
//! non-zero one of several), so a script can wait on a job anywhere.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::Utc;

use super::{Failure, start_fleet};
use crate::config::Config;
use crate::fleet::follow::{Event, Watcher};
use crate::model::{JobRef, Snapshot};
use crate::notify;

/// `--exec`'s words as an argv (split like a shell would, run without one).
pub fn exec_argv(command: &str) -> Result<Vec<String>, Failure> {
    match shlex::split(command) {
        Some(argv) if !argv.is_empty() => Ok(argv),
        _ => Err(Failure(format!("--exec {command:?}: not a command line (unbalanced quotes, or empty)"))),
    }
}

/// Run `argv` with `event` on standard input (see [`notify::run_command`]); a failure is
/// said, not fatal.
async fn run_exec(argv: &[String], event: &Event) {
    let json = serde_json::to_vec(event).expect("an event serialises");
    if let Err(why) = notify::run_command(argv, &json).await {
        eprintln!("{}", crate::output::printable(&format!("flightdeck: --exec for {}: {why}", event.job)));
    }
}

pub async fn watch(config: &Config, read_only: bool, jobs: &[JobRef], exec: Option<&str>) -> Result<ExitCode, Failure> {
    let argv = exec.map(exec_argv).transpose()?;
    let clusters: Vec<String> = jobs.iter().map(|j| j.cluster.clone()).collect();
    // An unknown cluster is refused by the fleet builder, by name.
    let fleet = start_fleet(config, read_only, &clusters, true).await?;
    let mut updates = fleet.subscribe();
    let mut seen = Watcher::default();
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
            if looked_at.get(&r.cluster).is_some_and(|s| Arc::ptr_eq(s, snapshot)) && seen.seen(r) {
                continue;
            }
            let job = snapshot.job(&r.id);
            if job.is_none() && !seen.seen(r) {
                return Err(Failure(format!("{r}: no such job in the cluster's last snapshot (it may have ended)")));
            }
            looked.push((r.clone(), job));
        }
        for r in jobs {
            if let Some(snapshot) = state.cluster(&r.cluster).and_then(|c| c.snapshot.clone()) {
                looked_at.insert(r.cluster.clone(), snapshot);
            }
        }
        for event in seen.observe(&looked, Utc::now()) {
            // The line is made printable whole: its ref may name a hub's cluster.
            println!("{}", crate::output::printable(&event.line()));
            let _ = std::io::stdout().flush();
            if let Some(argv) = &argv {
                run_exec(argv, &event).await;
            }
        }
        if jobs.iter().all(|r| seen.ended(r).is_some()) {
            let code = jobs.iter().filter_map(|r| seen.ended(r)).find(|c| *c != 0).unwrap_or(0);
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
}
