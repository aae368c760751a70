//! `flightdeck logs REF`: a job's output on the terminal, over the cockpit's own read path
//! ([`Fleet::read_log`] with the handle the cluster's first refresh put on the job), so the
//! same refusals apply (another user's file, a symbolic link) and the same bounds.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use super::{Failure, first_refresh, start_fleet};
use crate::config::Config;
use crate::fleet::Fleet;
use crate::model::{JobRef, LogStream};

/// Bytes shown by default: the tail, like `tail` but by size.
pub const DEFAULT_BYTES: u64 = 64 * 1024;
/// How often `--follow` asks for more, when all is well.
const FOLLOW_EVERY: Duration = Duration::from_secs(1);
/// The longest wait between tries after errors (doubling from [`FOLLOW_EVERY`]).
const FOLLOW_BACKOFF_MAX: Duration = Duration::from_secs(30);

pub struct LogsRequest {
    pub job: JobRef,
    pub stream: LogStream,
    pub follow: bool,
    pub bytes: u64,
}

pub async fn logs(config: &Config, read_only: bool, req: LogsRequest) -> Result<ExitCode, Failure> {
    let cluster = req.job.cluster.to_string();
    let fleet = start_fleet(config, read_only, std::slice::from_ref(&cluster), true).await?;
    let (state, _) = first_refresh(config, &fleet).await;
    let snapshot = state
        .cluster(&cluster)
        .and_then(|c| c.snapshot.as_ref())
        .ok_or_else(|| Failure(format!("{cluster}: no picture of its jobs, so no log to read")))?;
    let job = snapshot
        .jobs
        .iter()
        .find(|j| j.job_ref == req.job)
        .ok_or_else(|| Failure(format!("no job {} on {cluster}", req.job)))?;
    let handle = job
        .log(req.stream)
        .cloned()
        .ok_or_else(|| Failure(format!("{} has no {} to read", req.job, req.stream.as_str())))?;
    let bytes = req.bytes.max(1);

    if !req.follow {
        let chunk = fleet.read_log(&cluster, &handle, None, bytes).await.map_err(|e| Failure(e.to_string()))?;
        print_log(&chunk.data);
        return Ok(ExitCode::SUCCESS);
    }
    // Following: the first read is the tail, then what was added; a job that has not
    // started yet (no file) is waited for like any other error, with back-off.
    let mut offset: Option<u64> = None;
    let mut delay = FOLLOW_EVERY;
    let mut last_error: Option<String> = None;
    loop {
        // Read what the cluster says of the job before the log, so a job that ended just
        // after this read still has its last lines read once more.
        let finished = job_finished(&fleet, &req.job);
        match fleet.read_log(&cluster, &handle, offset, bytes).await {
            Ok(chunk) => {
                delay = FOLLOW_EVERY;
                last_error = None;
                if chunk.dropped > 0 && offset.is_some() {
                    eprintln!("flightdeck: … {} bytes skipped …", chunk.dropped);
                }
                print_log(&chunk.data);
                offset = Some(chunk.offset);
                if chunk.data.is_empty() && finished {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            // A refusal (a symbolic link, another user's file) will not change by waiting.
            Err(e @ crate::backend::BackendError::Unsupported(_)) => return Err(Failure(e.to_string())),
            Err(e) => {
                let e = e.to_string();
                if finished {
                    return Err(Failure(e));
                }
                // Said once per new error, then quietly retried less and less often.
                if last_error.as_deref() != Some(e.as_str()) {
                    eprintln!("flightdeck: {}", crate::safe_text::printable(&e));
                }
                last_error = Some(e);
                delay = (delay * 2).min(FOLLOW_BACKOFF_MAX);
            }
        }
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Whether the fleet's newest picture shows the job ended (or gone from the controller).
fn job_finished(fleet: &Fleet, job: &JobRef) -> bool {
    let state = fleet.state();
    let Some(snapshot) = state.cluster(&job.cluster).and_then(|c| c.snapshot.as_ref()) else {
        return false;
    };
    snapshot.jobs.iter().find(|j| &j.job_ref == job).is_none_or(|j| j.state.is_finished())
}

fn print_log(data: &str) {
    if data.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(log_text(data).as_bytes());
    let _ = out.flush();
}

/// Log text made safe for a terminal: newlines kept, every other control (escapes, `\r`,
/// bidi overrides) neutralised as everywhere else flightdeck prints backend text.
pub fn log_text(data: &str) -> String {
    data.split('\n').map(|line| crate::safe_text::printable(line)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_text_keeps_newlines_and_nothing_else() {
        assert_eq!(log_text("a\nb\n"), "a\nb\n");
        let out = log_text("red \u{1b}[31mX\r\n\u{202e}evil\n");
        assert!(!out.contains(['\u{1b}', '\r', '\u{202e}']), "{out:?}");
        assert_eq!(out.matches('\n').count(), 2);
    }
}
