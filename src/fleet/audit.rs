//! The append-only audit log: an `intent` line before an action reaches its cluster, and an
//! outcome line after, both carrying the action's `id`.
//!
//! The intent is written and fsynced before the backend is called; if it cannot be written
//! the action is refused, so nothing happens that the log does not know of. An intent with
//! no outcome (the process was killed mid-action) reads as `unknown`. Each record is one
//! `write` on a file opened with `O_APPEND`, so lines from several flightdeck processes never
//! interleave; writers also take turns by a lock on the file, so a rotation (at
//! [`ROTATE_BYTES`], [`GENERATIONS`] kept) happens under one writer. A record always starts on
//! a fresh line, and readers go one line at a time, skipping (and naming) an unreadable one.
//! The file is created `0600` in a `0700` directory: it names users and targets.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Pairs an action's intent with its outcome (unique per process and time).
    #[serde(default)]
    pub id: String,
    pub time: DateTime<Utc>,
    /// `user@host` of the person at the keyboard.
    pub who: String,
    /// `submit`, `cancel`, `hold`, `release`, `requeue`, `drain`, `resume`.
    pub action: String,
    /// `cluster/id`, `cluster/node` or, for a submission, the cluster.
    pub target: String,
    /// Extra input that shaped the action: the drain reason, the submitted job's name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
    /// `intent` (about to act), then `ok` or `error`; `refused` when nothing was tried.
    pub outcome: String,
    /// The result (a new job ref) or the backend's error text.
    pub message: String,
    /// A migration's intent carries the spec it submits, so `migrate --resume` can finish
    /// it from the log alone.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub spec: Option<Box<crate::spec::JobSpec>>,
}

/// The live file is rotated before a write would take it past this size.
pub const ROTATE_BYTES: u64 = 64 << 20;

/// Rotated generations kept beside the live file: `audit.jsonl.1` (the newest) to
/// `audit.jsonl.4`; a rotation drops the oldest, carrying its unfinished migrations' records
/// to the head of the next oldest first.
pub const GENERATIONS: u32 = 4;

#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    /// Why nothing can be written, when there is no place for the log at all.
    unavailable: Option<String>,
    rotate_bytes: u64,
    generations: u32,
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), unavailable: None, rotate_bytes: ROTATE_BYTES, generations: GENERATIONS }
    }

    /// A log with no place to be: every write fails with `why` (so every action is refused).
    pub fn unavailable(why: impl Into<String>) -> Self {
        Self { unavailable: Some(why.into()), ..Self::new("audit.jsonl") }
    }

    /// This log rotated at `bytes` with `generations` rotated files kept (at least one).
    pub fn with_rotation(self, bytes: u64, generations: u32) -> Self {
        Self { rotate_bytes: bytes, generations: generations.max(1), ..self }
    }

    /// The `n`th rotated file: `audit.jsonl.n`.
    fn generation(&self, n: u32) -> PathBuf {
        let mut name = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(format!(".{n}"));
        self.path.with_file_name(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record and wait until it is on disk.
    pub fn append(&self, record: &AuditRecord) -> std::io::Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Append `records` with one write and one fsync: a batch of a thousand intents is on
    /// disk as a whole before its first action, at the cost of one sync, not a thousand.
    pub fn append_all(&self, records: &[AuditRecord]) -> std::io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        if let Some(why) = &self.unavailable {
            return Err(std::io::Error::other(why.clone()));
        }
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            check_private(dir)?;
        }
        let mut lines = Vec::new();
        for record in records {
            serde_json::to_writer(&mut lines, &capped(record)).map_err(std::io::Error::other)?;
            lines.push(b'\n');
        }
        // Writers take turns by a lock on the live file; one that finds the file it locked
        // renamed away (another rotated it) opens the new one.
        let mut rotated = false;
        for _ in 0..16 {
            let mut f = OpenOptions::new().create(true).read(true).append(true).mode(0o600).open(&self.path)?;
            lock(&f)?;
            if !is_file_at(&f, &self.path)? {
                continue;
            }
            let len = f.metadata()?.len();
            if !rotated && len > 0 && len.saturating_add(lines.len() as u64) > self.rotate_bytes {
                let carried = self.rotate()?;
                lines.splice(0..0, carried);
                rotated = true;
                continue;
            }
            // A torn last line (a full disk, a crash mid-record) stays one unreadable line: the
            // new records start on a line of their own, in the same write.
            if !ends_with_newline(&f)? {
                lines.insert(0, b'\n');
            }
            f.write_all(&lines)?;
            return f.sync_data();
        }
        Err(std::io::Error::other("the audit log was rotated away under every try to write it"))
    }

    /// Shift the generations (dropping the oldest) and rename the live file to `.1`, under the
    /// live file's lock. The dropped file's unfinished migrations' records are carried, so
    /// `migrate --resume` never loses an intent to rotation: to the head of the generation
    /// that becomes the oldest (they stay before every later record of theirs), else (one
    /// generation kept) back for the head of the new live file.
    fn rotate(&self) -> std::io::Result<Vec<u8>> {
        let oldest = self.generation(self.generations);
        let mut carried = if oldest.exists() { self.unfinished_lines(&oldest)? } else { Vec::new() };
        if !carried.is_empty() && self.generations >= 2 {
            let next = self.generation(self.generations - 1);
            let mut name = next.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            name.push(".carry");
            let tmp = next.with_file_name(name);
            let mut out = OpenOptions::new().create(true).write(true).truncate(true).mode(0o600).open(&tmp)?;
            out.write_all(&carried)?;
            match std::fs::File::open(&next) {
                Ok(mut f) => {
                    std::io::copy(&mut f, &mut out)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            out.sync_all()?;
            std::fs::rename(&tmp, &next)?;
            carried.clear();
        }
        for n in (1..self.generations).rev() {
            match std::fs::rename(self.generation(n), self.generation(n + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&self.path, self.generation(1))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        tracing::info!(path = %self.path.display(), "audit log rotated");
        Ok(carried)
    }

    /// The lines of `file` that belong to a migration the whole log shows as unfinished.
    fn unfinished_lines(&self, file: &Path) -> std::io::Result<Vec<u8>> {
        let migrate = crate::model::Verb::Migrate.as_str();
        let mut records = Vec::new();
        self.read_each(|r| {
            if r.action == migrate {
                records.push(r)
            }
        })?;
        let open: std::collections::HashSet<String> =
            crate::fleet::migrate::unfinished(&records).into_iter().map(|u| u.id).collect();
        let mut lines = Vec::new();
        if open.is_empty() {
            return Ok(lines);
        }
        for line in Records::new(std::io::BufReader::new(std::fs::File::open(file)?)) {
            if let Line::Record(r) = line?
                && r.action == migrate
                && open.contains(&r.id)
            {
                serde_json::to_writer(&mut lines, &r).map_err(std::io::Error::other)?;
                lines.push(b'\n');
            }
        }
        Ok(lines)
    }

    /// Every file of the log, oldest first: the rotated generations, then the live file.
    pub fn files(&self) -> Vec<PathBuf> {
        (1..=self.generations).rev().map(|n| self.generation(n)).chain([self.path.clone()]).collect()
    }

    /// Every file of the log that exists, oldest first, opened together: a rotation between
    /// two opens (the names shifted) opens them again, so no generation is missed or read twice.
    fn open_all(&self) -> std::io::Result<Vec<(PathBuf, std::fs::File)>> {
        for _ in 0..16 {
            let mut open = Vec::new();
            for file in self.files() {
                match std::fs::File::open(&file) {
                    Ok(f) => open.push((file, f)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            let mut same = true;
            for file in self.files() {
                let now = match std::fs::metadata(&file) {
                    Ok(m) => Some(m),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(e),
                };
                let opened = open.iter().find(|(p, _)| p == &file).map(|(_, f)| f);
                same &= match (now, opened) {
                    (None, None) => true,
                    (Some(now), Some(f)) => same_inode(&now, &f.metadata()?),
                    _ => false,
                };
            }
            if same {
                return Ok(open);
            }
        }
        Err(std::io::Error::other("the audit log kept rotating while it was read"))
    }

    /// Hand each record to `each`, oldest first, one line at a time: the log is never held
    /// whole. An unreadable line is skipped, logged and named in the answer (the first
    /// [`UNREADABLE_KEPT`] of them); it never fails the read.
    pub fn read_each(&self, mut each: impl FnMut(AuditRecord)) -> std::io::Result<Vec<Unreadable>> {
        let mut unreadable = Vec::new();
        for (file, f) in self.open_all()? {
            for line in Records::new(std::io::BufReader::new(f)) {
                match line? {
                    Line::Record(r) => each(r),
                    Line::Unreadable { line, why } => {
                        tracing::warn!(file = %file.display(), line, why, "unreadable audit line skipped");
                        if unreadable.len() < UNREADABLE_KEPT {
                            unreadable.push(Unreadable { file: file.clone(), line, why });
                        }
                    }
                }
            }
        }
        Ok(unreadable)
    }

    /// Every record, oldest first; unreadable lines are skipped (and logged).
    pub fn read_all(&self) -> std::io::Result<Vec<AuditRecord>> {
        let mut all = Vec::new();
        self.read_each(|r| all.push(r))?;
        Ok(all)
    }
}

/// The longest line a reader takes: a longer one is unreadable, skipped without being held.
pub const LINE_MAX: usize = 16 << 20;

/// How many unreadable lines one read names (all of them are logged).
pub const UNREADABLE_KEPT: usize = 100;

/// A line a reader skipped: which file, which line (from 1), and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub file: PathBuf,
    pub line: u64,
    pub why: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} line {}: unreadable, skipped ({})", self.file.display(), self.line, self.why)
    }
}

/// One line of a log file as [`Records`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Record(AuditRecord),
    Unreadable { line: u64, why: String },
}

/// The records of one log file, one line at a time (blank lines passed over); only the line
/// being read is held, and at most [`LINE_MAX`] bytes of it.
pub struct Records<R> {
    reader: R,
    line: u64,
    buf: Vec<u8>,
    failed: bool,
}

impl<R: std::io::BufRead> Records<R> {
    pub fn new(reader: R) -> Self {
        Self { reader, line: 0, buf: Vec::new(), failed: false }
    }
}

impl<R: std::io::BufRead> Iterator for Records<R> {
    type Item = std::io::Result<Line>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let (read, too_long) = match read_line(&mut self.reader, &mut self.buf) {
                Ok(r) => r,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            if read == 0 {
                return None;
            }
            self.line += 1;
            let line = self.line;
            if too_long {
                return Some(Ok(Line::Unreadable { line, why: format!("longer than {LINE_MAX} bytes") }));
            }
            let text = self.buf.trim_ascii();
            if text.is_empty() {
                continue;
            }
            return Some(Ok(match serde_json::from_slice(text) {
                Ok(r) => Line::Record(r),
                Err(e) => Line::Unreadable { line, why: e.to_string() },
            }));
        }
    }
}

/// Read one line (its newline included) into `buf`: how many bytes it had (0 at the end),
/// and whether it was longer than [`LINE_MAX`] (then `buf` is left empty).
fn read_line(reader: &mut impl std::io::BufRead, buf: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    buf.clear();
    let (mut read, mut too_long) = (0, false);
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((read, too_long));
        }
        let (used, ended) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if !too_long {
            if buf.len() + used > LINE_MAX {
                too_long = true;
                *buf = Vec::new();
            } else {
                buf.extend_from_slice(&available[..used]);
            }
        }
        reader.consume(used);
        read += used;
        if ended {
            return Ok((read, too_long));
        }
    }
}

/// Wait for `f`'s exclusive lock (released when `f` is closed).
fn lock(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this `File` owns for the call's duration.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            // A file system without locks: the appends stay whole (`O_APPEND`); only two
            // rotations at once could then shift one generation too far.
            Some(libc::ENOLCK | libc::EOPNOTSUPP) => return Ok(()),
            _ => return Err(e),
        }
    }
}

/// Whether `path` still names the open file `f`.
fn is_file_at(f: &std::fs::File, path: &Path) -> std::io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(at) => Ok(same_inode(&at, &f.metadata()?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn same_inode(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Whether `f` is empty or its last byte ends a line.
fn ends_with_newline(f: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8; 1];
    f.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// The most bytes one field of a record keeps: a record says who did what to what, and a
/// caller's text (a hub's viewer sending a megabyte of job id) must not make the log grow
/// by more than that.
pub const FIELD_MAX: usize = 1024;

/// `record` with every text field cut to [`FIELD_MAX`] bytes, marked where it was cut (a
/// migration's spec stays whole: `migrate --resume` submits it, and it came through the
/// spec's own checks).
fn capped(record: &AuditRecord) -> std::borrow::Cow<'_, AuditRecord> {
    let fields = [&record.who, &record.action, &record.target, &record.outcome, &record.message];
    let long =
        fields.iter().any(|f| f.len() > FIELD_MAX) || record.detail.as_ref().is_some_and(|d| d.len() > FIELD_MAX);
    if !long {
        return std::borrow::Cow::Borrowed(record);
    }
    let mut cut = record.clone();
    for field in [&mut cut.who, &mut cut.action, &mut cut.target, &mut cut.outcome, &mut cut.message] {
        cap(field);
    }
    if let Some(detail) = &mut cut.detail {
        cap(detail);
    }
    std::borrow::Cow::Owned(cut)
}

/// Cut `text` to [`FIELD_MAX`] bytes (on a character boundary) and say how much went.
fn cap(text: &mut String) {
    if text.len() <= FIELD_MAX {
        return;
    }
    let mut end = FIELD_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let dropped = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… [cut: {dropped} more bytes]"));
}

/// The log's directory must be this user's alone: in a directory others may write, the log
/// could be swapped or read.
fn check_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(std::io::Error::other(format!("the directory belongs to uid {}, not to this user", meta.uid())));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "the directory is writable by others (mode {:o}; chmod 700 it)",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// A new record id: time, process and a counter, so two processes acting in the same
/// nanosecond still differ.
pub fn new_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
    format!("{nanos:x}-{:x}-{:x}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// One action as the log tells it: the intent joined with its outcome (`unknown` while an
/// intent has none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    pub id: String,
    pub time: DateTime<Utc>,
    pub who: String,
    pub action: String,
    pub target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `ok`, `error`, `refused`, or `unknown` (an intent without an outcome).
    pub outcome: String,
    pub message: String,
}

/// Join intents with their outcomes, oldest first.
pub fn entries(records: Vec<AuditRecord>) -> Vec<AuditEntry> {
    let mut joined = Joiner::default();
    for r in records {
        joined.push(r);
    }
    joined.finish()
}

/// [`entries`] one record at a time, as a log is read: holds the joined entries (one per
/// action in the window), never the records.
#[derive(Debug, Default)]
pub struct Joiner {
    out: Vec<AuditEntry>,
    open: std::collections::HashMap<String, usize>,
    /// Only actions begun at or after this time.
    since: Option<DateTime<Utc>>,
    /// Intents before `since` whose story may go on inside the window (left out with them).
    before: std::collections::HashSet<String>,
}

impl Joiner {
    /// A joiner keeping only the actions begun at or after `since`.
    pub fn since(since: Option<DateTime<Utc>>) -> Self {
        Self { since, ..Self::default() }
    }

    pub fn push(&mut self, r: AuditRecord) {
        let known = if r.id.is_empty() { None } else { self.open.get(&r.id).copied() };
        if let Some(at) = known {
            // Later records of the same id tell how it went on: a migration's `submitted` step
            // (still `unknown` until it ends), its outcome, and a resumed migration's outcome.
            if r.outcome == "submitted" {
                self.out[at].message = format!("submitted {}; the source is not cancelled yet", r.message);
            } else if r.outcome != "intent" {
                self.out[at].outcome = r.outcome;
                self.out[at].message = r.message;
            }
            return;
        }
        if let Some(since) = self.since {
            if !r.id.is_empty() && self.before.contains(&r.id) {
                // The rest of an action begun before the window.
                if r.outcome == "ok" || r.outcome == "refused" {
                    self.before.remove(&r.id);
                }
                return;
            }
            if r.time < since {
                if r.outcome == "intent" && !r.id.is_empty() {
                    self.before.insert(r.id);
                }
                return;
            }
        }
        let intent = r.outcome == "intent";
        if intent {
            self.open.insert(r.id.clone(), self.out.len());
        }
        self.out.push(AuditEntry {
            id: r.id,
            time: r.time,
            who: r.who,
            action: r.action,
            target: r.target,
            detail: r.detail,
            outcome: if intent { "unknown".into() } else { r.outcome },
            message: r.message,
        });
    }

    pub fn finish(self) -> Vec<AuditEntry> {
        self.out
    }
}

/// The login name of whoever runs flightdeck: the account of the process's user id (what
/// Slurm sees), else `$USER`, since a stripped environment (cron, tmux, sudo) may lack it.
pub fn current_user() -> String {
    whoami::username()
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// `user@host` for audit records.
pub fn current_actor() -> String {
    let user = current_user();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string());
    format!("{user}@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_known_without_an_environment() {
        // The tests run as some real account; its name comes from the user id, not $USER.
        let user = current_user();
        assert!(!user.is_empty() && user != "unknown", "{user}");
    }

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("sub/audit.jsonl"));
        for i in 0..3 {
            log.append(&AuditRecord {
                id: new_id(),
                time: Utc::now(),
                who: "a@b".into(),
                action: "cancel".into(),
                target: format!("hpc/{i}"),
                detail: None,
                outcome: "ok".into(),
                message: String::new(),
                spec: None,
            })
            .unwrap();
        }
        let recs = log.read_all().unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2].target, "hpc/2");
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 3);
    }

    fn record(id: &str, target: &str, outcome: &str) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            time: Utc::now(),
            who: "a@b".into(),
            action: "cancel".into(),
            target: target.into(),
            detail: None,
            outcome: outcome.into(),
            message: format!("{outcome} message"),
            spec: None,
        }
    }

    #[test]
    fn intents_join_their_outcomes_and_an_orphan_is_unknown() {
        let e = entries(vec![
            record("1", "hpc/1", "intent"),
            record("2", "hpc/2", "intent"),
            record("3", "hpc/3", "refused"),
            record("1", "hpc/1", "ok"),
        ]);
        let shown: Vec<(&str, &str)> = e.iter().map(|e| (e.target.as_str(), e.outcome.as_str())).collect();
        assert_eq!(shown, [("hpc/1", "ok"), ("hpc/2", "unknown"), ("hpc/3", "refused")]);
        assert_eq!(e[0].message, "ok message");
        assert_ne!(new_id(), new_id());
    }

    #[test]
    fn a_torn_last_line_does_not_swallow_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        log.append(&record("1", "hpc/1", "ok")).unwrap();
        // The disk filled (or the process died) mid-record: half a line, no newline.
        let mut torn = serde_json::to_vec(&record("2", "hpc/2", "intent")).unwrap();
        torn.truncate(torn.len() / 2);
        OpenOptions::new().append(true).open(log.path()).unwrap().write_all(&torn).unwrap();
        log.append(&record("3", "hpc/3", "intent")).unwrap();
        log.append_all(&[record("3", "hpc/3", "ok"), record("4", "hpc/4", "refused")]).unwrap();
        let ids: Vec<String> = log.read_all().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["1", "3", "3", "4"]);
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 5, "the torn line stays a line of its own: {text}");
    }

    /// An endless log: records made as they are read, counting the bytes handed out.
    struct Endless {
        line: Vec<u8>,
        at: usize,
        given: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let mut n = 0;
            while n < out.len() {
                out[n] = self.line[self.at];
                self.at = (self.at + 1) % self.line.len();
                n += 1;
            }
            self.given.set(self.given.get() + n as u64);
            Ok(n)
        }
    }

    #[test]
    fn a_log_is_read_one_line_at_a_time() {
        // A reader that held the file whole would never come back from an endless one.
        let mut line = serde_json::to_vec(&record("1", "hpc/1", "ok")).unwrap();
        line.push(b'\n');
        let given = std::rc::Rc::new(std::cell::Cell::new(0));
        let source = Endless { line: line.clone(), at: 0, given: given.clone() };
        let read: Vec<Line> = Records::new(std::io::BufReader::new(source)).take(1000).map(|l| l.unwrap()).collect();
        assert_eq!(read.len(), 1000);
        assert!(read.iter().all(|l| matches!(l, Line::Record(r) if r.target == "hpc/1")));
        let bound = 1000 * line.len() as u64 + 8192;
        assert!(given.get() <= bound, "read {} bytes for 1000 lines (at most {bound})", given.get());
    }

    #[test]
    fn an_unreadable_line_is_skipped_and_named_by_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        log.append(&record("1", "hpc/1", "ok")).unwrap();
        OpenOptions::new().append(true).open(log.path()).unwrap().write_all(b"{not json\n\n").unwrap();
        log.append(&record("2", "hpc/2", "ok")).unwrap();
        let mut ids = Vec::new();
        let unreadable = log.read_each(|r| ids.push(r.id)).unwrap();
        assert_eq!(ids, ["1", "2"]);
        assert_eq!(unreadable.len(), 1, "{unreadable:?}");
        assert_eq!(unreadable[0].line, 2);
        assert!(unreadable[0].to_string().contains("audit.jsonl line 2: unreadable, skipped ("), "{}", unreadable[0]);
    }

    #[test]
    fn a_window_leaves_out_the_rest_of_an_action_begun_before_it() {
        let old = |id: &str, target: &str, outcome: &str| AuditRecord {
            time: Utc::now() - chrono::Duration::hours(2),
            ..record(id, target, outcome)
        };
        let mut joined = Joiner::since(Some(Utc::now() - chrono::Duration::hours(1)));
        for r in [
            old("1", "hpc/1", "intent"),
            old("2", "hpc/2", "ok"),
            record("3", "hpc/3", "intent"),
            record("1", "hpc/1", "ok"),
            record("4", "hpc/4", "refused"),
            record("3", "hpc/3", "error"),
        ] {
            joined.push(r);
        }
        let shown: Vec<(String, String)> = joined.finish().into_iter().map(|e| (e.target, e.outcome)).collect();
        assert_eq!(shown, [("hpc/3".to_string(), "error".to_string()), ("hpc/4".into(), "refused".into())]);
    }

    #[test]
    fn records_across_rotated_generations_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let one = serde_json::to_vec(&record("00", "hpc/00", "ok")).unwrap().len() as u64 + 1;
        // Two records a file, three rotated files kept.
        let log = AuditLog::new(dir.path().join("audit.jsonl")).with_rotation(2 * one, 3);
        let id = |i: usize| format!("{i:02}");
        for i in 0..7 {
            log.append(&record(&id(i), &format!("hpc/{i:02}"), "ok")).unwrap();
        }
        assert!(dir.path().join("audit.jsonl.3").exists() && !dir.path().join("audit.jsonl.4").exists());
        let ids: Vec<String> = log.read_all().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, (0..7).map(id).collect::<Vec<_>>());
        for i in 7..20 {
            log.append(&record(&id(i), &format!("hpc/{i:02}"), "ok")).unwrap();
        }
        let ids: Vec<String> = log.read_all().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, (12..20).map(id).collect::<Vec<_>>(), "the oldest generations went");
        assert!(std::fs::metadata(log.path()).unwrap().len() <= 2 * one);
    }

    #[test]
    fn resume_finds_an_intent_in_a_rotated_generation_and_rotation_never_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let one = serde_json::to_vec(&record("00", "hpc/00", "ok")).unwrap().len() as u64 + 1;
        let log = AuditLog::new(dir.path().join("audit.jsonl")).with_rotation(2 * one, 2);
        let intent = |id: &str, target: &str| AuditRecord {
            action: "migrate".into(),
            detail: Some("to=cloud".into()),
            spec: Some(Box::default()),
            ..record(id, target, "intent")
        };
        log.append(&intent("m1", "hpc/1")).unwrap();
        log.append(&intent("m2", "hpc/2")).unwrap();
        log.append(&AuditRecord { action: "migrate".into(), ..record("m2", "hpc/2", "ok") }).unwrap();
        let open = |log: &AuditLog| -> Vec<String> {
            crate::fleet::migrate::unfinished(&log.read_all().unwrap()).into_iter().map(|u| u.id).collect()
        };
        log.append(&record("x0", "hpc/x0", "ok")).unwrap();
        assert!(dir.path().join("audit.jsonl.1").exists());
        assert_eq!(open(&log), ["m1"], "found in a rotated generation");
        for i in 0..12 {
            log.append(&record(&format!("x{i:02}"), "hpc/x", "ok")).unwrap();
        }
        let records = log.read_all().unwrap();
        assert!(!records.iter().any(|r| r.id == "m2"), "finished migrations rotate away");
        assert_eq!(records[0].id, "m1", "carried to the head of the oldest generation");
        let shown = entries(records.clone());
        assert_eq!(shown.iter().filter(|e| e.id == "m1").count(), 1);
        let found = crate::fleet::migrate::unfinished(&records);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].id.as_str(), found[0].source.to_string(), found[0].to.as_str()),
            ("m1", "hpc/1".into(), "cloud")
        );
    }

    #[test]
    fn the_log_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("state/audit.jsonl"));
        log.append(&record("1", "hpc/1", "intent")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(log.path()), 0o600);
        assert_eq!(mode(log.path().parent().unwrap()), 0o700);
    }

    #[test]
    fn a_log_in_a_directory_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = AuditLog::new(shared.join("audit.jsonl")).append(&record("1", "hpc/1", "intent")).unwrap_err();
        assert!(err.to_string().contains("writable by others (mode 777"), "{err}");
        let err = AuditLog::unavailable("no private state directory").append(&record("1", "hpc/1", "intent"));
        assert_eq!(err.unwrap_err().to_string(), "no private state directory");
    }
}
