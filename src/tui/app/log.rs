//! The job detail's log tail: a bounded buffer of lines filled from byte offsets.

use std::collections::VecDeque;

/// Lines kept per log; older ones are dropped (and counted).
pub const LOG_LINES: usize = 2000;
/// Bytes asked for per fetch.
pub const LOG_FETCH_BYTES: u64 = 64 * 1024;

pub use crate::model::{LogChunk, LogStream};

/// The most of an unfinished last line kept (a `\r` progress bar never ends its line):
/// beyond it the newest part is kept, behind [`PARTIAL_CUT_MARK`].
pub const PARTIAL_MAX: usize = 64 * 1024;
/// Leads a capped unfinished line, in place of what was cut.
pub const PARTIAL_CUT_MARK: &str = "… ";

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
        self.partial = capped_partial(rest);
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

/// The newest [`PARTIAL_MAX`] bytes of an unfinished line (cut on a character boundary),
/// marked as cut; a line already cut keeps one mark.
fn capped_partial(rest: &str) -> String {
    if rest.len() <= PARTIAL_MAX {
        return rest.to_string();
    }
    let keep = PARTIAL_MAX - PARTIAL_CUT_MARK.len();
    let mut cut = rest.len() - keep;
    while !rest.is_char_boundary(cut) {
        cut += 1;
    }
    format!("{PARTIAL_CUT_MARK}{}", &rest[cut..])
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

    #[test]
    fn a_line_that_never_ends_is_capped_at_its_newest_part() {
        let mut b = LogBuffer::default();
        b.push(chunk("done\n", 5, 0), true);
        let mut offset = 5;
        // A progress bar redrawn with `\r` a million times, never a newline.
        for i in 0..200 {
            let bar: String = (0..5000).map(|j| format!("\r{}%", (i * 5000 + j) % 100)).collect();
            offset += bar.len() as u64;
            b.push(chunk(&bar, offset, 0), false);
            assert!(b.partial.len() <= PARTIAL_MAX, "partial grew to {}", b.partial.len());
        }
        assert!(b.partial.starts_with(PARTIAL_CUT_MARK), "the cut is marked");
        assert_eq!(b.partial.matches(PARTIAL_CUT_MARK).count(), 1);
        assert!(b.partial.ends_with("\r99%"), "the newest part is kept");
        // When the line ends it becomes a normal (capped) line.
        b.push(chunk("\rfinished\n", offset + 10, 0), false);
        assert_eq!(b.partial, "");
        assert!(b.lines.back().unwrap().ends_with("finished"));
        assert_eq!(b.lines[0], "done");
        // A multi-byte character at the cut is not split.
        let wide = "é".repeat(PARTIAL_MAX);
        let mut w = LogBuffer::default();
        w.push(chunk(&wide, wide.len() as u64, 0), false);
        assert!(w.partial.len() <= PARTIAL_MAX && w.partial.ends_with('é'));
    }
}
