//! A run's log for the job detail screen and `flightdeck logs`, through `logs/poll`.
//!
//! The server pages a submission's log by line (`next_token` is the next line's number) and
//! sends each line's text base64-encoded. Offsets here are bytes of the decoded log from its
//! start, as for a file; a cursor per `(handle, offset)` remembers which line that offset
//! ends on, so following reads only what is new. Without a cursor (another process, a
//! restart) the log is read from its first line and the bytes before `from` skipped. A read
//! takes at most [`MAX_PAGES`] pages and keeps the newest `max_bytes`
//! ([`crate::backend::log_window`] semantics).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::api::{DstackApi, LOG_PAGE, decode_base64};
use super::map::parse_log_handle;
use crate::backend::{BackendError, LogChunk, log_window};

/// Pages one read asks for at most (64 × 1000 lines); the rest comes with the next read.
pub const MAX_PAGES: usize = 64;
/// Cursors kept (readers rarely number more than a few).
const CURSORS: usize = 64;

/// Where each reader stands: `(handle, byte offset, next line)`.
#[derive(Debug, Default)]
pub struct Cursors {
    entries: Mutex<VecDeque<(String, u64, u64)>>,
}

impl Cursors {
    fn get(&self, handle: &str, offset: u64) -> Option<u64> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().find(|(h, o, _)| h == handle && *o == offset).map(|(_, _, line)| *line)
    }

    fn put(&self, handle: &str, offset: u64, line: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(h, o, _)| !(h == handle && *o == offset));
        entries.push_back((handle.to_string(), offset, line));
        while entries.len() > CURSORS {
            entries.pop_front();
        }
    }
}

/// Read the log behind `handle` (see the module comment for offsets).
pub async fn read(
    api: &DstackApi,
    cursors: &Cursors,
    handle: &str,
    from: Option<u64>,
    max_bytes: u64,
) -> Result<LogChunk, BackendError> {
    let (run, submission) = parse_log_handle(handle).ok_or_else(|| {
        BackendError::NotFound(format!("`{handle}` is not a dstack log handle (expected run/RUN/SUBMISSION)"))
    })?;
    // Continue where a reader stopped, else read from the start and skip to `from`.
    let (start_line, start_offset) = match from.and_then(|off| cursors.get(handle, off).map(|line| (line, off))) {
        Some((line, off)) => (line, off),
        None => (0, 0),
    };
    let mut line = start_line;
    let mut offset = start_offset;
    // Only the newest `keep` bytes are held while reading.
    let keep = max_bytes.max(1);
    let mut text: Vec<u8> = Vec::new();
    let mut held_from = offset;
    let mut token = (line > 0).then(|| line.to_string());
    for _ in 0..MAX_PAGES {
        let page = api.poll_logs(run, submission, token.as_deref()).await?;
        let n = page.logs.len();
        for event in page.logs {
            let bytes = decode_base64(&event.message).unwrap_or_else(|| event.message.into_bytes());
            offset = offset.saturating_add(bytes.len() as u64);
            text.extend_from_slice(&bytes);
            if !bytes.ends_with(b"\n") {
                text.push(b'\n');
                offset = offset.saturating_add(1);
            }
            line += 1;
            if text.len() as u64 > keep.saturating_mul(2) {
                let cut = text.len() - keep as usize;
                text.drain(..cut);
                held_from += cut as u64;
            }
        }
        match page.next_token {
            Some(next) if n > 0 => {
                line = next.parse().unwrap_or(line);
                token = Some(next);
            }
            _ => break,
        }
        if n < LOG_PAGE {
            break;
        }
    }
    cursors.put(handle, offset, line);
    // What the caller asked for, of what was read: `log_window` over the whole log.
    let (start, len, dropped) = log_window(offset, from.filter(|f| *f >= start_offset), max_bytes);
    let start = start.max(held_from);
    let skip = (start - held_from) as usize;
    let take = (len.min(offset - start)) as usize;
    let data = String::from_utf8_lossy(&text[skip.min(text.len())..(skip + take).min(text.len())]).into_owned();
    Ok(LogChunk { data, offset, dropped })
}
