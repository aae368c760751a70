//! Pod logs for the job detail screen: a bounded tail, then follow.
//!
//! The log API has no byte offsets, so offsets here are the bytes this reader has handed
//! out. With a real API server the reader asks for `timestamps=true`: a tail is the last
//! lines (`tailLines`), and following asks for what came since the last line's time
//! (`sinceTime`, whole seconds) and skips the lines already handed out (by timestamp, and by
//! count among lines of the same timestamp). A cursor per `(path, offset)` remembers where a
//! reader stands. Servers that do not prefix timestamps get byte offsets over the whole log
//! instead ([`crate::backend::log_window`] semantics).

use std::collections::VecDeque;

use ::kube::api::{Api, LogParams};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use crate::backend::{BackendError, LogChunk, log_window};

/// Cursors kept (readers rarely number more than a few).
const CURSORS: usize = 64;

/// `pod/<namespace>/<name>/<container>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPath {
    pub namespace: String,
    pub pod: String,
    pub container: Option<String>,
}

pub fn parse_log_path(path: &str) -> Result<LogPath, BackendError> {
    let bad = || {
        BackendError::NotFound(format!(
            "`{path}` is not a Kubernetes log path (expected pod/NAMESPACE/POD[/CONTAINER])"
        ))
    };
    let mut parts = path.split('/');
    if parts.next() != Some("pod") {
        return Err(bad());
    }
    let namespace = parts.next().filter(|s| !s.is_empty()).ok_or_else(bad)?;
    let pod = parts.next().filter(|s| !s.is_empty()).ok_or_else(bad)?;
    let container = parts.next().filter(|s| !s.is_empty()).map(str::to_string);
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(LogPath { namespace: namespace.into(), pod: pod.into(), container })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// The last line handed out had this time; `same` lines of that time were handed out.
    Since { last: Option<Timestamp>, same: usize },
    /// The server gives no timestamps: byte offsets over the whole log.
    Bytes,
}

/// Where each reader stands.
#[derive(Debug, Default)]
pub struct Cursors {
    entries: VecDeque<(String, u64, Mode)>,
}

impl Cursors {
    fn take(&mut self, path: &str, offset: u64) -> Option<Mode> {
        let i = self.entries.iter().position(|(p, o, _)| p == path && *o == offset)?;
        self.entries.remove(i).map(|(_, _, m)| m)
    }

    fn put(&mut self, path: &str, offset: u64, mode: Mode) {
        self.entries.retain(|(p, o, _)| !(p == path && *o == offset));
        self.entries.push_back((path.to_string(), offset, mode));
        while self.entries.len() > CURSORS {
            self.entries.pop_front();
        }
    }
}

/// One log line split into its timestamp and text (the text keeps its `\n`).
fn split_line(line: &str) -> Option<(Timestamp, &str)> {
    let (ts, rest) = line.split_once(' ')?;
    Some((ts.parse().ok()?, rest))
}

/// Every line carries a timestamp (an empty answer counts as yes).
fn timestamped(body: &str) -> bool {
    body.split_inclusive('\n').all(|l| split_line(l).is_some())
}

/// Keep the newest whole lines of `text` that fit in `max` bytes; returns (kept, dropped bytes).
fn newest_lines(text: String, max: u64) -> (String, u64) {
    let len = text.len() as u64;
    if len <= max {
        return (text, 0);
    }
    let cut = (len - max) as usize;
    // Start at the first line beginning at or after `cut`.
    let start = match text.char_indices().find(|(i, c)| *c == '\n' && *i + 1 >= cut) {
        Some((i, _)) => i + 1,
        None => text.len(),
    };
    (text[start..].to_string(), start as u64)
}

fn lines_after(body: &str, last: Option<Timestamp>, same: usize) -> (String, Option<Timestamp>, usize) {
    let mut out = String::new();
    let mut skipped_same = 0;
    let (mut new_last, mut new_same) = (last, same);
    for line in body.split_inclusive('\n') {
        let Some((ts, text)) = split_line(line) else { continue };
        if let Some(l) = last {
            if ts < l {
                continue;
            }
            if ts == l && skipped_same < same {
                skipped_same += 1;
                continue;
            }
        }
        out.push_str(text);
        if Some(ts) == new_last {
            new_same += 1;
        } else {
            new_last = Some(ts);
            new_same = 1;
        }
    }
    (out, new_last, new_same)
}

fn api_error(what: &str, err: ::kube::Error) -> BackendError {
    match &err {
        ::kube::Error::Api(s) if s.code == 404 => BackendError::NotFound(format!("{what}: {}", s.message)),
        _ => BackendError::Command { command: what.into(), status: None, stderr: super::describe_client_error(&err) },
    }
}

/// The most one log request asks the API server for, whatever the caller wanted: a pod
/// that printed gigabytes is never read whole into memory.
pub const MAX_LOG_REQUEST: u64 = 16 << 20;

/// Every request carries `limitBytes` (the caller's if smaller than [`MAX_LOG_REQUEST`]).
fn bounded(params: LogParams, container: Option<String>) -> LogParams {
    let cap = i64::try_from(MAX_LOG_REQUEST).unwrap_or(i64::MAX);
    let limit_bytes = Some(params.limit_bytes.map_or(cap, |l| l.clamp(1, cap)));
    LogParams { container, limit_bytes, ..params }
}

async fn fetch(api: &Api<Pod>, lp: &LogPath, params: LogParams) -> Result<String, BackendError> {
    let params = bounded(params, lp.container.clone());
    api.logs(&lp.pod, &params).await.map_err(|e| api_error(&format!("logs of pod {}/{}", lp.namespace, lp.pod), e))
}

async fn read_bytes(api: &Api<Pod>, lp: &LogPath, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
    let body = fetch(api, lp, LogParams::default()).await?;
    let bytes = body.as_bytes();
    let (start, len, dropped) = log_window(bytes.len() as u64, from, max_bytes);
    let data = String::from_utf8_lossy(&bytes[start as usize..(start + len) as usize]).into_owned();
    Ok(LogChunk { data, offset: start + len, dropped })
}

/// Read the log at `path`: the newest `max_bytes` when `from` is `None`, else what was
/// written since the read that ended at `from`.
pub async fn read(
    client: &::kube::Client,
    cursors: &std::sync::Mutex<Cursors>,
    path: &str,
    from: Option<u64>,
    max_bytes: u64,
) -> Result<LogChunk, BackendError> {
    let lp = parse_log_path(path)?;
    let api: Api<Pod> = Api::namespaced(client.clone(), &lp.namespace);
    let known = from.and_then(|off| cursors.lock().unwrap_or_else(|e| e.into_inner()).take(path, off));
    let max_bytes = max_bytes.max(1);
    let (chunk, mode) = match (from, known) {
        (Some(off), Some(Mode::Since { last, same })) => {
            let limit = max_bytes.saturating_mul(4).clamp(1 << 20, MAX_LOG_REQUEST);
            let params = LogParams {
                timestamps: true,
                since_time: last.map(|t| Timestamp::from_second(t.as_second()).unwrap_or(t)),
                limit_bytes: Some(i64::try_from(limit).unwrap_or(i64::MAX)),
                ..LogParams::default()
            };
            let mut body = fetch(&api, &lp, params).await?;
            if body.len() as u64 >= limit {
                // Cut at the limit: the last line may be partial; it comes again next time.
                if let Some(i) = body.rfind('\n') {
                    body.truncate(i + 1);
                }
            }
            let (text, new_last, new_same) = lines_after(&body, last, same);
            let (data, dropped) = newest_lines(text, max_bytes);
            let offset = off + dropped + data.len() as u64;
            (LogChunk { data, offset, dropped }, Mode::Since { last: new_last, same: new_same })
        }
        (_, Some(Mode::Bytes)) => (read_bytes(&api, &lp, from, max_bytes).await?, Mode::Bytes),
        (_, None | Some(Mode::Since { .. })) => {
            let tail = (max_bytes / 32).clamp(100, 50_000) as i64;
            let params = LogParams { timestamps: true, tail_lines: Some(tail), ..LogParams::default() };
            let body = fetch(&api, &lp, params).await?;
            if timestamped(&body) {
                let (text, last, same) = lines_after(&body, None, 0);
                match from {
                    // A reader this backend does not know (it restarted): carry on from now.
                    Some(off) => {
                        (LogChunk { data: String::new(), offset: off, dropped: 0 }, Mode::Since { last, same })
                    }
                    None => {
                        let (data, _) = newest_lines(text, max_bytes);
                        let offset = data.len() as u64;
                        (LogChunk { data, offset, dropped: 0 }, Mode::Since { last, same })
                    }
                }
            } else {
                (read_bytes(&api, &lp, from, max_bytes).await?, Mode::Bytes)
            }
        }
    };
    cursors.lock().unwrap_or_else(|e| e.into_inner()).put(path, chunk.offset, mode);
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            parse_log_path("pod/ml/train-0/main").unwrap(),
            LogPath { namespace: "ml".into(), pod: "train-0".into(), container: Some("main".into()) }
        );
        assert_eq!(parse_log_path("pod/ml/p").unwrap().container, None);
        for bad in ["", "pod", "pod/ml", "pods/ml/p", "/tmp/slurm-1.out", "pod/ml/p/c/extra", "pod//p"] {
            assert!(parse_log_path(bad).is_err(), "{bad}");
        }
    }

    const BODY: &str = "2025-01-01T00:00:01.5Z one\n2025-01-01T00:00:02Z two\n2025-01-01T00:00:02Z two again\n";

    #[test]
    fn follow_skips_what_was_handed_out() {
        assert!(timestamped(BODY));
        assert!(timestamped(""));
        assert!(!timestamped("plain line\n"));
        let (text, last, same) = lines_after(BODY, None, 0);
        assert_eq!(text, "one\ntwo\ntwo again\n");
        assert_eq!(same, 2);
        // The server answers from the whole second again: nothing is repeated.
        let more = "2025-01-01T00:00:02Z two\n2025-01-01T00:00:02Z two again\n2025-01-01T00:00:02.25Z three\n";
        let (text, last2, same2) = lines_after(more, last, same);
        assert_eq!(text, "three\n");
        assert_eq!(same2, 1);
        assert!(last2 > last);
        // A third line with the same time as the last two.
        let (text, _, same3) = lines_after(
            "2025-01-01T00:00:02Z two\n2025-01-01T00:00:02Z two again\n2025-01-01T00:00:02Z two, third\n",
            last,
            same,
        );
        assert_eq!((text.as_str(), same3), ("two, third\n", 3));
    }

    #[test]
    fn newest_whole_lines() {
        assert_eq!(newest_lines("a\nbb\nccc\n".into(), 100), ("a\nbb\nccc\n".into(), 0));
        assert_eq!(newest_lines("a\nbb\nccc\n".into(), 5), ("ccc\n".into(), 5));
        assert_eq!(newest_lines("a\nbb\nccc\n".into(), 7), ("bb\nccc\n".into(), 2));
        assert_eq!(newest_lines("xxxxxxxx".into(), 3), (String::new(), 8));
    }

    #[test]
    fn cursors_are_bounded() {
        let mut c = Cursors::default();
        for i in 0..100 {
            c.put("p", i, Mode::Bytes);
        }
        assert_eq!(c.entries.len(), CURSORS);
        assert_eq!(c.take("p", 99), Some(Mode::Bytes));
        assert_eq!(c.take("p", 99), None);
        assert_eq!(c.take("p", 0), None);
    }

    #[test]
    fn every_log_request_carries_limit_bytes() {
        let cap = MAX_LOG_REQUEST as i64;
        let p = bounded(LogParams::default(), Some("main".into()));
        assert_eq!((p.limit_bytes, p.container.as_deref()), (Some(cap), Some("main")));
        let p = bounded(LogParams { limit_bytes: Some(1000), tail_lines: Some(5), ..LogParams::default() }, None);
        assert_eq!((p.limit_bytes, p.tail_lines), (Some(1000), Some(5)));
        assert_eq!(
            bounded(LogParams { limit_bytes: Some(i64::MAX), ..LogParams::default() }, None).limit_bytes,
            Some(cap)
        );
    }
}
