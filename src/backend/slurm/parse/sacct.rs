//! `sacct` records: the finished jobs slurmdbd keeps after slurmctld has forgotten them.
//!
//! Read as text on every release (`-n -P` with [`SACCT_FIELDS`]), not `--json`: the text is a
//! fifth of the bytes over a slow link and reads the same on 22.05 and 24.11. Fields are
//! separated by a per-query mark ([`super::text::record_mark`]) instead of `|`, and the job
//! name comes last: a name holding the separator or a line break stays inside its own
//! record (a line without the mark continues the name before it) and cannot pose as another.
//!
//! Without `-X` sacct prints each job's steps after it (`12.batch`, `12.0`, `12.extern`);
//! only steps measure memory, so each job's `MaxRSS` is the largest of its steps'.

use std::collections::HashMap;

use super::ParseError;
use super::gres::{gpu_request, model_and_product};
use super::hostlist::expand_hostlist;
use super::states::job_state_from_slurm;
use super::text::{array_info, parse_memory_mb, parse_text_time, text_value};
use std::io::BufRead as _;

use crate::model::{ExitStatus, History, Job, JobRecord, JobRef};

/// The fields asked for, in order; the name last (see the module's note).
pub const SACCT_FIELDS: &str =
    "JobID,State,ExitCode,User,Account,Partition,Submit,Start,End,ElapsedRaw,NNodes,NodeList,AllocTRES,MaxRSS,JobName";
const FIELDS: usize = 15;
const WHAT: &str = "sacct output";

/// The records of `sacct -n -P --delimiter=MARK -o SACCT_FIELDS` output, each job with its
/// steps folded in, in the order sacct gave them; and how many lines did not read.
pub fn parse_sacct(cluster: &str, input: &str, mark: &str) -> Result<(Vec<JobRecord>, usize), ParseError> {
    let mut reader = SacctReader::new(cluster, mark, usize::MAX, |_| true);
    for line in input.lines() {
        reader.line(line);
    }
    let read = reader.finish()?;
    Ok((read.records, read.dropped))
}

/// The longest record line kept (a job name is at most a few KiB): a longer one is dropped,
/// not held, so one endless line cannot grow without bound.
const MAX_LINE: usize = 1 << 20;

/// What [`read_sacct`] kept of a streamed answer.
#[derive(Debug)]
pub struct SacctRead {
    /// The newest `limit` records that were wanted, newest end first.
    pub records: Vec<JobRecord>,
    /// Wanted records past the limit, older than every kept one: counted, not kept.
    pub left_out: usize,
    /// Lines that did not read as records.
    pub dropped: usize,
}

/// sacct's answer read line by line as it streams in: never held whole, and at most about
/// twice `limit` records held at once (each job with its steps folded in; the newest `limit`
/// of those `wanted` kept). A window of 14,000 jobs is ~20 MiB of text; any size reads.
pub fn read_sacct(
    cluster: &str,
    input: impl std::io::BufRead,
    mark: &str,
    limit: usize,
    wanted: impl Fn(&JobRecord) -> bool,
) -> Result<SacctRead, ParseError> {
    let mut input = input;
    let mut reader = SacctReader::new(cluster, mark, limit, wanted);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = std::io::Read::take(&mut input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ParseError::new(WHAT, format!("reading: {e}")))?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            // Too long: drop the rest of the line too.
            input.skip_until(b'\n').map_err(|e| ParseError::new(WHAT, format!("reading: {e}")))?;
            reader.dropped += 1;
            continue;
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        reader.line(line.strip_suffix('\r').unwrap_or(line));
    }
    reader.finish()
}

/// The state of one read: the line being continued, the records kept so far.
struct SacctReader<'a, F> {
    cluster: &'a str,
    mark: &'a str,
    limit: usize,
    wanted: F,
    /// The record line being read (a line without the mark continues its name).
    pending: Option<String>,
    records: Vec<JobRecord>,
    by_id: HashMap<String, usize>,
    /// Steps whose job came later (sacct prints the job first; a cut-off answer may not).
    orphan_rss: HashMap<String, u64>,
    /// The last job line's id: its steps follow it, even when the job itself was cut.
    last_job: Option<String>,
    left_out: usize,
    dropped: usize,
    seen_records: bool,
}

impl<'a, F: Fn(&JobRecord) -> bool> SacctReader<'a, F> {
    fn new(cluster: &'a str, mark: &'a str, limit: usize, wanted: F) -> Self {
        Self {
            cluster,
            mark,
            limit,
            wanted,
            pending: None,
            records: Vec::new(),
            by_id: HashMap::new(),
            orphan_rss: HashMap::new(),
            last_job: None,
            left_out: 0,
            dropped: 0,
            seen_records: false,
        }
    }

    fn line(&mut self, line: &str) {
        match self.pending.as_mut() {
            // A line break inside the last field, the name: it continues that record.
            Some(last) if !line.contains(self.mark) => {
                if last.len() + line.len() < MAX_LINE {
                    last.push('\n');
                    last.push_str(line);
                }
            }
            _ => {
                if let Some(done) = self.pending.replace(line.to_string()) {
                    self.record_line(&done);
                }
            }
        }
    }

    fn record_line(&mut self, line: &str) {
        let fields: Vec<&str> = line.splitn(FIELDS, self.mark).collect();
        if fields.len() < FIELDS {
            self.dropped += usize::from(!line.trim().is_empty());
            return;
        }
        let id = fields[0].trim();
        if let Some((job, _step)) = id.split_once('.') {
            let Some(rss) = parse_memory_mb(fields[13]) else { return };
            match self.by_id.get(job) {
                Some(&i) => {
                    let r = &mut self.records[i];
                    r.max_rss_mb = Some(r.max_rss_mb.map_or(rss, |m| m.max(rss)));
                }
                // The steps of a job cut for the limit (or not wanted): nothing to fold into.
                None if self.last_job.as_deref() == Some(job) => {}
                None => {
                    let seen = self.orphan_rss.entry(job.to_string()).or_insert(rss);
                    *seen = (*seen).max(rss);
                }
            }
            return;
        }
        let Some(mut r) = record(self.cluster, &fields) else {
            self.dropped += 1;
            return;
        };
        self.seen_records = true;
        self.last_job = Some(id.to_string());
        if let Some(rss) = self.orphan_rss.remove(id) {
            r.max_rss_mb = Some(r.max_rss_mb.map_or(rss, |m| m.max(rss)));
        }
        if !(self.wanted)(&r) {
            return;
        }
        self.by_id.insert(id.to_string(), self.records.len());
        self.records.push(r);
        if self.records.len() >= self.limit.max(1).saturating_mul(2) {
            self.cut();
        }
    }

    /// Keep the newest `limit` records (the order [`History::newest`] gives), count the rest.
    fn cut(&mut self) {
        if self.records.len() > self.limit {
            History::sort_newest(&mut self.records);
            self.left_out += self.records.len() - self.limit;
            self.records.truncate(self.limit);
            self.by_id = self.records.iter().enumerate().map(|(i, r)| (r.job.job_ref.id.clone(), i)).collect();
        }
    }

    fn finish(mut self) -> Result<SacctRead, ParseError> {
        if let Some(done) = self.pending.take() {
            self.record_line(&done);
        }
        if !self.seen_records && self.dropped > 0 {
            let dropped = self.dropped;
            return Err(ParseError::new(WHAT, format!("no line held a job record ({dropped} lines)")));
        }
        if self.limit != usize::MAX {
            self.cut();
        }
        Ok(SacctRead { records: self.records, left_out: self.left_out, dropped: self.dropped })
    }
}

fn record(cluster: &str, f: &[&str]) -> Option<JobRecord> {
    let [id, state, exit, user, account, partition, submit, start, end, elapsed, nnodes, nodelist, tres, rss, name] = f
    else {
        return None;
    };
    let id = id.trim();
    if !id.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    // `CANCELLED by 1000`: the state, then who.
    let (state_word, by) = state.trim().split_once(' ').unwrap_or((state.trim(), ""));
    let mut job = Job::new(JobRef::new(cluster, id), job_state_from_slurm(&[state_word]));
    job.native_state = state.trim().to_string();
    if let Some(uid) = by.trim().strip_prefix("by ") {
        job.reason = Some(format!("cancelled by uid {uid}"));
    }
    job.exit = exit_code(exit);
    job.name = name.to_string();
    job.user = text_value(user).unwrap_or("").to_string();
    job.account = text_value(account).map(str::to_string);
    job.partition = text_value(partition).unwrap_or("").to_string();
    job.submit_time = parse_text_time(submit);
    job.start_time = parse_text_time(start);
    job.end_time = parse_text_time(end);
    job.node_count = nnodes.trim().parse().unwrap_or(0);
    if !nodelist.trim().eq_ignore_ascii_case("None assigned") {
        job.nodes = expand_hostlist(nodelist.trim());
    }
    let tres = text_value(tres).unwrap_or("");
    let gpus = gpu_request(tres);
    job.gpus_allocated = gpus.count;
    job.gpus_requested = gpus.count;
    (job.gpu_model, job.gpu_product) = model_and_product(&gpus.models);
    for entry in tres.split(',') {
        match entry.split_once('=') {
            Some(("cpu", n)) => job.cpus = n.parse().unwrap_or(0),
            Some(("mem", m)) => job.memory_mb = parse_memory_mb(m),
            _ => {}
        }
    }
    job.array = array_info(id, "", "");
    let elapsed_secs = elapsed.trim().parse::<u64>().ok();
    let gpu_hours =
        elapsed_secs.filter(|_| job.gpus_allocated > 0).map(|s| f64::from(job.gpus_allocated) * s as f64 / 3600.0);
    Some(JobRecord { job, elapsed_secs, max_rss_mb: parse_memory_mb(rss), gpu_hours })
}

/// `3:0` (exit 3), `0:15` (killed by signal 15), `0:0`.
fn exit_code(text: &str) -> Option<ExitStatus> {
    let (code, signal) = text.trim().split_once(':')?;
    let code = code.parse().ok()?;
    let signal: i32 = signal.parse().ok()?;
    Some(ExitStatus { code, signal: (signal != 0).then_some(signal) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobState;

    const M: &str = "fd0123456789abcdef";

    fn line(fields: &[&str]) -> String {
        fields.join(M)
    }

    #[test]
    fn jobs_with_their_steps_folded_and_hostile_names_kept_whole() {
        let input = [
            // Before any record: read as nothing.
            "sacct: warning: something".to_string(),
            line(&[
                "41",
                "COMPLETED",
                "0:0",
                "root",
                "root",
                "gpu",
                "2026-12-04T20:00:00",
                "2026-12-04T20:00:01",
                "2026-12-04T20:30:01",
                "1800",
                "1",
                "a100-01",
                "billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=1000M,node=1",
                "",
                "train",
            ]),
            line(&[
                "41.batch",
                "COMPLETED",
                "0:0",
                "",
                "root",
                "",
                "2026-12-04T20:00:01",
                "2026-12-04T20:00:01",
                "2026-12-04T20:30:01",
                "1800",
                "1",
                "a100-01",
                "cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=1000M,node=1",
                "2048K",
                "batch",
            ]),
            line(&[
                "41.0",
                "COMPLETED",
                "0:0",
                "",
                "root",
                "",
                "2026-12-04T20:00:02",
                "2026-12-04T20:00:02",
                "2026-12-04T20:30:00",
                "1798",
                "1",
                "a100-01",
                "cpu=2,gres/gpu:a100=2,mem=1000M,node=1",
                "1.50G",
                "python",
            ]),
            line(&[
                "42",
                "FAILED",
                "3:0",
                "alice",
                "ml",
                "gpu",
                "2026-12-04T21:00:00",
                "2026-12-04T21:00:00",
                "2026-12-04T21:00:05",
                "5",
                "2",
                "h100-[01-02]",
                "cpu=4,gres/gpu:h100=4,gres/gpu=4,node=2",
                "",
                "a|b\nfake|line",
            ]),
            line(&[
                "43_7",
                "CANCELLED by 0",
                "0:15",
                "root",
                "root",
                "gpu",
                "2026-12-04T21:00:00",
                "None",
                "2026-12-04T21:01:00",
                "0",
                "0",
                "None assigned",
                "",
                "",
                "arr",
            ]),
            "trailing words".to_string(),
        ]
        .join("\n");
        let (records, dropped) = parse_sacct("fd22", &input, M).unwrap();
        assert_eq!(dropped, 1);
        let ids: Vec<&str> = records.iter().map(|r| r.job.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["41", "42", "43_7"]);
        let done = &records[0];
        assert_eq!(done.job.state, JobState::Completed);
        assert_eq!((done.elapsed_secs, done.max_rss_mb, done.gpu_hours), (Some(1800), Some(1536), Some(1.0)));
        assert_eq!((done.job.gpus_allocated, done.job.gpu_model.as_deref(), done.job.cpus), (2, Some("a100"), 2));
        assert_eq!(done.job.memory_mb, Some(1000));
        assert_eq!(done.job.end_time, parse_text_time("2026-12-04T20:30:01"));
        let failed = &records[1];
        assert_eq!((failed.job.state, failed.job.exit), (JobState::Failed, Some(ExitStatus { code: 3, signal: None })));
        assert_eq!(failed.job.name, "a|b\nfake|line", "the name's separator and line break stay in it");
        assert_eq!(failed.job.nodes, ["h100-01", "h100-02"]);
        assert_eq!(failed.max_rss_mb, None);
        let cancelled = &records[2];
        assert_eq!(cancelled.job.state, JobState::Cancelled);
        assert_eq!(cancelled.job.reason.as_deref(), Some("cancelled by uid 0"));
        assert_eq!(cancelled.job.exit, Some(ExitStatus { code: 0, signal: Some(15) }));
        assert_eq!((cancelled.job.start_time, cancelled.job.nodes.len()), (None, 0));
        assert_eq!(cancelled.job.array.as_ref().map(|a| (a.array_id.as_str(), a.task_id)), Some(("43", Some(7))));
        assert_eq!(cancelled.gpu_hours, None);
        assert_eq!(cancelled.job.name, "arr\ntrailing words", "a line without the mark continues the name");
    }

    #[test]
    fn an_error_instead_of_records_is_an_error_and_nothing_is_no_records() {
        let err =
            parse_sacct("c", "sacct: error: Problem talking to the database: Connection refused\n", M).unwrap_err();
        assert!(err.to_string().contains("no line held a job record"), "{err}");
        assert_eq!(parse_sacct("c", "", M).unwrap().0.len(), 0);
    }
}
