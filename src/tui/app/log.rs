//! The job detail's log tail: a bounded buffer of lines filled from byte offsets.

use std::collections::VecDeque;

/// Lines kept per log; older ones are dropped (and counted).
pub const LOG_LINES: usize = 2000;
/// Bytes asked for per fetch.
pub const LOG_FETCH_BYTES: u64 = 64 * 1024;

pub use crate::model::{LogChunk, LogStream};

/// A marker line in the buffer (drawn dimmed).
pub const SKIP_MARK: char = '\u{0}';

#[derive(Debug, Default)]
pub struct LogBuffer {
    /// Complete lines, oldest first. A line starting with [`SKIP_MARK`] is a marker.
    pub lines: VecDeque<String>,
    /// The unfinished last line.
    pub partial: String,
    /// Lines pushed out of the buffer so far.
    pub dropped_lines: u64,
    /// Bytes before the first read's tail, never loaded.
    pub skipped_before: u64,
    /// Where the next read starts; `None` before the first answer.
    pub offset: Option<u64>,
    /// The sequence number of the read in flight.
    pub waiting: Option<u64>,
    pub error: Option<String>,
}

impl LogBuffer {
    /// Fold one answer in; `first`: it answers a read from the tail (`from: None`).
    pub fn push(&mut self, chunk: LogChunk, first: bool) {
        self.error = None;
        // Where the data starts in the file: a first read (the tail) that does not start at
        // the beginning begins mid-line, so its first fragment is left out.
        let start = chunk.offset.saturating_sub(chunk.data.len() as u64);
        if first {
            self.lines.clear();
            self.partial.clear();
            self.dropped_lines = 0;
            self.skipped_before = start;
        } else if chunk.dropped > 0 {
            self.flush_partial();
            self.push_line(format!("{SKIP_MARK}… {} bytes skipped …", chunk.dropped));
        }
        let mut text = std::mem::take(&mut self.partial);
        let data = if first && start > 0 {
            chunk.data.split_once('\n').map_or("", |(_, rest)| rest)
        } else {
            chunk.data.as_str()
        };
        text.push_str(data);
        let mut rest = text.as_str();
        while let Some((line, tail)) = rest.split_once('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.push_line(line.to_string());
            rest = tail;
        }
        self.partial = rest.to_string();
        self.offset = Some(chunk.offset);
    }

    fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.push_line(line);
        }
    }

    fn push_line(&mut self, line: String) {
        self.lines.push_back(line);
        while self.lines.len() > LOG_LINES {
            self.lines.pop_front();
            self.dropped_lines += 1;
        }
    }

    /// Lines to show, the unfinished one included.
    pub fn len(&self) -> usize {
        self.lines.len() + usize::from(!self.partial.is_empty())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn line(&self, i: usize) -> Option<&str> {
        self.lines.get(i).map(String::as_str).or_else(|| (i == self.lines.len()).then_some(self.partial.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(data: &str, offset: u64, dropped: u64) -> LogChunk {
        LogChunk { data: data.into(), offset, dropped }
    }

    #[test]
    fn lines_join_across_reads_and_the_buffer_is_bounded() {
        let mut b = LogBuffer::default();
        b.push(chunk("one\ntw", 6, 0), true);
        assert_eq!(b.len(), 2);
        b.push(chunk("o\nthree\n", 14, 0), false);
        assert_eq!(b.lines, ["one", "two", "three"]);
        assert_eq!(b.offset, Some(14));
        b.push(chunk("x\n", 100, 50), false);
        assert_eq!(b.lines.len(), 5);
        assert!(b.lines[3].contains("50 bytes skipped"));
        let many: String = (0..LOG_LINES + 10).map(|i| format!("l{i}\n")).collect();
        b.push(chunk(&many, 200, 0), false);
        assert_eq!(b.lines.len(), LOG_LINES);
        assert_eq!(b.dropped_lines, 15);
        assert_eq!(b.lines.back().map(String::as_str), Some(format!("l{}", LOG_LINES + 9).as_str()));
    }

    #[test]
    fn a_tail_drops_its_first_fragment() {
        let mut b = LogBuffer::default();
        b.push(chunk("ment\nfull line\n", 1000, 0), true);
        assert_eq!(b.lines, ["full line"]);
        assert_eq!(b.skipped_before, 985);
        let mut whole = LogBuffer::default();
        whole.push(chunk("first\n", 6, 0), true);
        assert_eq!(whole.lines, ["first"]);
        assert_eq!(whole.skipped_before, 0);
    }
}
