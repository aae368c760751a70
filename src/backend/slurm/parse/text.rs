//! The pipe-separated text fallbacks, for a Slurm without working `--json`.
//!
//! Both formats work on every release. Times are printed in the cluster's local time
//! without a zone; they are read as UTC, so run the commands with `TZ=UTC` for exact times.
//! A pending job with priority 0 is held (Slurm keeps 0 for held jobs). A job name (squeue) or node reason (sinfo) may itself contain `|`: the fields around it
//! are counted from both ends. A line with too few fields is skipped; input with lines but
//! not one readable line (an error message instead of a table) is an error.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::ParseError;
use super::gres::{gpu_request, model_and_product};
use super::hostlist::expand_hostlist;
use super::nodes_json::{NodeMerger, gpu_slots};
use super::states::{job_state_with_reason, node_state_from_slurm};
use crate::backend::slurm::script::migrated_from_of;
use crate::model::{ArrayInfo, Job, JobRef, Node};

/// `squeue -r -h -o SQUEUE_TEXT_FORMAT`: id, array id, array task, name, user, account,
/// partition, state, reason, node list, node count, CPUs, memory, GRES per node, submit,
/// start, end, time limit, time used, priority.
pub const SQUEUE_TEXT_FORMAT: &str = "%i|%F|%K|%j|%u|%a|%P|%T|%r|%N|%D|%C|%m|%b|%V|%S|%e|%l|%M|%Q";

/// `sinfo -N -h -o SINFO_TEXT_FORMAT`: node, partition (`*` marks the default), long state
/// with sinfo's suffixes, CPUs `A/I/O/T`, memory MB, free memory MB (the OS's, not
/// allocations: not used), GRES, reason, features. A node repeats once per partition.
///
/// `sinfo %G` gives GPU totals only: nodes read from text have no GPU allocations, and no
/// allocated memory.
pub const SINFO_TEXT_FORMAT: &str = "%N|%P|%T|%C|%m|%e|%G|%E|%f";

/// [`SINFO_TEXT_FORMAT`] plus who set the reason and when (`%u|%H`), which fills
/// `reason_user` and `reason_time`. [`parse_sinfo_text`] recognises it on lines with at
/// least 11 fields whose last field is a time (or `Unknown`/`None`/`N/A`).
pub const SINFO_TEXT_FORMAT_WITH_REASON_META: &str = "%N|%P|%T|%C|%m|%e|%G|%E|%f|%u|%H";

/// The `-o` format for [`parse_squeue_records`]: [`SQUEUE_TEXT_FORMAT`], then the comment
/// (`%k`) between marks, then the end mark.
pub fn squeue_text_format(mark: &str) -> String {
    format!("{SQUEUE_TEXT_FORMAT}|{mark}=%k|{mark}")
}

const SQUEUE_WHAT: &str = "squeue text output";
const SINFO_WHAT: &str = "sinfo text output";
const SQUEUE_FIELDS: usize = 20;
const SINFO_FIELDS: usize = 9;

/// A per-query end mark for text records: `|` + 16 hex digits, unguessable by whoever names
/// a job. Records end with it, so a job name holding a line break (and a made-up row after
/// it) stays inside its own record instead of posing as another.
pub fn record_mark() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    format!("fd{:016x}", h.finish())
}

/// The records of text output whose format ends with `|MARK`: each one's text (line breaks
/// inside kept) and how many pieces did not end with the mark (dropped: they do not check).
fn marked_records<'a>(input: &'a str, mark: &str) -> (Vec<&'a str>, usize) {
    let end = format!("|{mark}\n");
    let mut records = Vec::new();
    let mut rest = input;
    while let Some(at) = rest.find(&end) {
        records.push(&rest[..at]);
        rest = &rest[at + end.len()..];
    }
    let tail = rest.strip_suffix(&end[..end.len() - 1]).unwrap_or(rest);
    let mut dropped = 0;
    if tail.len() < rest.len() {
        records.push(tail);
    } else if !rest.trim().is_empty() {
        dropped += 1;
    }
    (records, dropped)
}

/// Read `squeue … -o "SQUEUE_TEXT_FORMAT|MARK"` output: records end with the mark, so a job
/// name with a line break cannot pose as a row. Returns the jobs and how many records were
/// dropped because they did not check (too few fields, no job id, no mark).
///
/// A record may end with the job's comment after `|MARK=` ([`squeue_text_format`]): a second
/// free-text field beside the name, told apart from it by the mark rather than by counting
/// `|`. The comment sets [`Job::migrated_from`] when it is flightdeck's tag.
pub fn parse_squeue_records(cluster: &str, input: &str, mark: &str) -> Result<(Vec<Job>, usize), ParseError> {
    let (records, mut dropped) = marked_records(input, mark);
    let comment_mark = format!("|{mark}=");
    let mut jobs = Vec::with_capacity(records.len());
    for record in records {
        let record = record.trim_start_matches(['\r', '\n']);
        let (fields, comment) = match record.find(&comment_mark) {
            Some(at) => (&record[..at], Some(&record[at + comment_mark.len()..])),
            None => (record, None),
        };
        match squeue_line(cluster, fields) {
            Some(mut job) => {
                job.migrated_from = comment.and_then(migrated_from_of).map(str::to_string);
                jobs.push(job)
            }
            None => dropped += 1,
        }
    }
    if jobs.is_empty() && dropped > 0 {
        return Err(ParseError::new(SQUEUE_WHAT, format!("no record ended with the mark {mark} ({dropped} pieces)")));
    }
    Ok((jobs, dropped))
}

/// [`parse_sinfo_text`] for marked records (see [`parse_squeue_records`]).
pub fn parse_sinfo_records(cluster: &str, input: &str, mark: &str) -> Result<(Vec<Node>, usize), ParseError> {
    let (records, mut dropped) = marked_records(input, mark);
    let mut merger = NodeMerger::new(cluster);
    let mut parsed = 0usize;
    for record in records {
        match sinfo_line(cluster, record.trim_start_matches(['\r', '\n'])) {
            Some(node) => {
                parsed += 1;
                merger.push(node);
            }
            None => dropped += 1,
        }
    }
    if parsed == 0 && dropped > 0 {
        return Err(ParseError::new(SINFO_WHAT, format!("no record ended with the mark {mark} ({dropped} pieces)")));
    }
    Ok((merger.finish(), dropped))
}

/// Read `squeue -r -h -o SQUEUE_TEXT_FORMAT` output.
pub fn parse_squeue_text(cluster: &str, input: &str) -> Result<Vec<Job>, ParseError> {
    let mut jobs = Vec::new();
    let mut first_bad: Option<(usize, usize)> = None;
    for (n, line) in input.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        match squeue_line(cluster, line) {
            Some(job) => jobs.push(job),
            None => {
                first_bad.get_or_insert((n + 1, line.split('|').count()));
            }
        }
    }
    match first_bad {
        Some((line, found)) if jobs.is_empty() => Err(ParseError::new(
            SQUEUE_WHAT,
            format!("expected {SQUEUE_FIELDS} `|`-separated fields starting with a job id, found {found}"),
        )
        .at_line(line)),
        _ => Ok(jobs),
    }
}

fn squeue_line(cluster: &str, line: &str) -> Option<Job> {
    let fields: Vec<&str> = line.split('|').collect();
    if fields.len() < SQUEUE_FIELDS {
        return None;
    }
    let tail = &fields[fields.len() - 16..];
    let name = fields[3..fields.len() - 16].join("|");
    let id = fields[0].trim();
    if id.is_empty() || !id.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let [
        user,
        account,
        partition,
        state,
        reason,
        nodelist,
        node_count,
        cpus,
        memory,
        gres,
        submit,
        start,
        end,
        limit,
        _used,
        priority,
    ] = tail
    else {
        return None;
    };
    let reason = text_value(reason).filter(|r| !r.eq_ignore_ascii_case("None"));
    let state_tok = state.trim();
    let priority: Option<u64> = priority.trim().parse().ok();
    // Slurm keeps priority 0 for held jobs (what `hold` says in the JSON).
    let job_state = job_state_with_reason(&[state_tok], reason, priority == Some(0));
    let mut job = Job::new(JobRef::new(cluster, id), job_state);
    job.native_state = state_tok.to_string();
    job.reason = reason.map(str::to_string);
    job.name = name;
    job.user = text_value(user).unwrap_or("").to_string();
    job.account = text_value(account).map(str::to_string);
    job.partition = text_value(partition).unwrap_or("").to_string();
    job.nodes = expand_hostlist(nodelist);
    job.node_count = node_count.trim().parse().unwrap_or(job.nodes.len() as u32);
    job.cpus = cpus.trim().parse().unwrap_or(0);
    job.memory_mb = parse_memory_mb(memory);
    let req = gpu_request(text_value(gres).unwrap_or(""));
    job.gpus_requested = req.count.saturating_mul(job.node_count.max(1));
    (job.gpu_model, job.gpu_product) = model_and_product(&req.models);
    job.submit_time = parse_text_time(submit);
    job.start_time = parse_text_time(start);
    job.end_time = parse_text_time(end);
    if job.state.is_waiting() && job.start_time.is_none() {
        job.end_time = None;
    }
    job.time_limit_secs = parse_duration_secs(limit);
    job.priority = priority;
    job.array = array_info(id, fields[1], fields[2]);
    Some(job)
}

/// Array bookkeeping from `%i` (`12_3`, `12_[2-5%2]`), `%F` and `%K`.
pub(super) fn array_info(id: &str, array_id: &str, task: &str) -> Option<ArrayInfo> {
    let (base, rest) = id.split_once('_')?;
    let array_id = text_value(array_id).unwrap_or(base).to_string();
    if let Some(pending) = rest.strip_prefix('[') {
        let pending = pending.strip_suffix(']').unwrap_or(pending);
        return Some(ArrayInfo { array_id, task_id: None, pending_tasks: Some(pending.to_string()) });
    }
    let task_id = rest.parse::<u32>().ok().or_else(|| task.trim().parse().ok());
    Some(ArrayInfo { array_id, task_id, pending_tasks: None })
}

/// Read `sinfo -N -h -o SINFO_TEXT_FORMAT` (or [`SINFO_TEXT_FORMAT_WITH_REASON_META`])
/// output; a node listed once per partition becomes one [`Node`] with all partitions.
pub fn parse_sinfo_text(cluster: &str, input: &str) -> Result<Vec<Node>, ParseError> {
    let mut merger = NodeMerger::new(cluster);
    let mut parsed = 0usize;
    let mut first_bad: Option<(usize, usize)> = None;
    for (n, line) in input.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        match sinfo_line(cluster, line) {
            Some(node) => {
                parsed += 1;
                merger.push(node);
            }
            None => {
                first_bad.get_or_insert((n + 1, line.split('|').count()));
            }
        }
    }
    match first_bad {
        Some((line, found)) if parsed == 0 => Err(ParseError::new(
            SINFO_WHAT,
            format!("expected {SINFO_FIELDS} `|`-separated fields starting with a node name, found {found}"),
        )
        .at_line(line)),
        _ => Ok(merger.finish()),
    }
}

fn sinfo_line(cluster: &str, line: &str) -> Option<Node> {
    let fields: Vec<&str> = line.split('|').collect();
    if fields.len() < SINFO_FIELDS {
        return None;
    }
    let name = fields[0].trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let with_meta = fields.len() >= 11 && looks_like_time(fields[fields.len() - 1]);
    let after_reason = if with_meta { 3 } else { 1 };
    let reason = fields[7..fields.len() - after_reason].join("|");
    let features = fields[fields.len() - after_reason];
    let (state, flags) = node_state_from_slurm(&[fields[2].trim()]);
    let mut node = Node::new(cluster, name, state);
    node.flags = flags;
    node.native_state = fields[2].trim().to_string();
    node.partitions = text_value(fields[1])
        .map(|p| p.trim_end_matches('*'))
        .filter(|p| !p.is_empty())
        .map(|p| vec![p.to_string()])
        .unwrap_or_default();
    let mut cpus = fields[3].trim().split('/').map(|c| c.trim().parse::<u32>().ok());
    let (alloc, _idle, _other, total) = (cpus.next().flatten(), cpus.next(), cpus.next(), cpus.next().flatten());
    node.cpus_total = total.unwrap_or(0);
    node.cpus_allocated = alloc.unwrap_or(0);
    node.memory_total_mb = fields[4].trim().trim_end_matches('+').parse().unwrap_or(0);
    node.gpus = gpu_slots(text_value(fields[6]).unwrap_or(""), "");
    node.reason = text_value(&reason).filter(|r| !r.eq_ignore_ascii_case("none")).map(str::to_string);
    node.features = text_value(features)
        .map(|f| f.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    if with_meta {
        node.reason_user =
            text_value(fields[fields.len() - 2]).filter(|u| !u.eq_ignore_ascii_case("Unknown")).map(str::to_string);
        node.reason_time = parse_text_time(fields[fields.len() - 1]);
    }
    Some(node)
}

/// A field's text, `None` for Slurm's empty markers.
pub(super) fn text_value(s: &str) -> Option<&str> {
    let s = s.trim();
    match s {
        "" | "(null)" | "N/A" | "n/a" => None,
        _ => Some(s),
    }
}

fn looks_like_time(s: &str) -> bool {
    let s = s.trim();
    matches!(s, "Unknown" | "None" | "N/A") || parse_text_time(s).is_some()
}

/// `2024-01-02T03:04:05` (read as UTC); `N/A`, `Unknown`, `None` and anything else → `None`.
pub(crate) fn parse_text_time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").ok().map(|t| t.and_utc()).filter(|t| t.timestamp() > 0)
}

/// Slurm durations: `D-HH:MM:SS`, `HH:MM:SS`, `MM:SS`, or plain minutes; `UNLIMITED`,
/// `INVALID`, `NOT_SET`, `N/A` → `None`.
pub(crate) fn parse_duration_secs(s: &str) -> Option<u64> {
    let s = s.trim();
    let (days, clock) = match s.split_once('-') {
        Some((d, rest)) => (d.parse::<u64>().ok()?, rest),
        None => (0, s),
    };
    let parts: Vec<u64> = clock.split(':').map(|p| p.parse::<u64>().ok()).collect::<Option<_>>()?;
    let secs = match parts.as_slice() {
        [m] if days == 0 => m.checked_mul(60)?,
        [h] => h.checked_mul(3600)?,
        [m, s] => m.checked_mul(60)?.checked_add(*s)?,
        [h, m, s] => h.checked_mul(3600)?.checked_add(m.checked_mul(60)?)?.checked_add(*s)?,
        _ => return None,
    };
    days.checked_mul(86_400)?.checked_add(secs)
}

/// `4G`, `500M`, `1.5T`, `2048` (MB) → MB; `0` and unreadable → `None`.
pub(crate) fn parse_memory_mb(s: &str) -> Option<u64> {
    let s = text_value(s)?;
    let (num, mult) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], 1.0 / 1024.0),
        (i, 'M' | 'm') => (&s[..i], 1.0),
        (i, 'G' | 'g') => (&s[..i], 1024.0),
        (i, 'T' | 't') => (&s[..i], 1024.0 * 1024.0),
        (i, 'P' | 'p') => (&s[..i], 1024.0 * 1024.0 * 1024.0),
        _ => (s, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    let mb = v * mult;
    (1.0..1.0e15).contains(&mb).then(|| mb.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobState, NodeState};

    #[test]
    fn squeue_lines() {
        let text = "\
42|42|N/A|train|alice|ml|gpu|RUNNING|None|gpu[01-02]|2|16|4G|gres/gpu:a100:2|2024-01-02T03:04:05|2024-01-02T03:05:00|2024-01-02T04:05:00|1:00:00|5:00|4294\n\
15|12|3|sweep|bob|(null)|gpu|PENDING|JobHeldUser||1|1|500M|N/A|2024-01-02T03:04:05|N/A|N/A|30:00|0:00|0\n\
12_[4-5%2]|12|4-5%2|sweep|bob|(null)|gpu|PENDING|Priority||1|1|0|gres:gpu:1|2024-01-02T03:04:05|N/A|N/A|2-00:00:00|0:00|10\n";
        let jobs = parse_squeue_text("hpc", text).unwrap();
        assert_eq!(jobs.len(), 3);
        let j = &jobs[0];
        assert_eq!(j.job_ref.id, "42");
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.nodes, vec!["gpu01", "gpu02"]);
        assert_eq!(j.gpus_requested, 4);
        assert_eq!(j.gpu_model.as_deref(), Some("a100"));
        assert_eq!(j.gpu_product.as_deref(), Some("a100"));
        assert_eq!(j.memory_mb, Some(4096));
        assert_eq!(j.time_limit_secs, Some(3600));
        assert_eq!(j.priority, Some(4294));
        assert_eq!(j.start_time.unwrap().to_rfc3339(), "2024-01-02T03:05:00+00:00");
        assert_eq!(jobs[1].state, JobState::Held);
        assert_eq!(jobs[1].account, None);
        assert_eq!(jobs[1].time_limit_secs, Some(1800));
        assert_eq!(jobs[2].job_ref.id, "12_[4-5%2]");
        let a = jobs[2].array.as_ref().unwrap();
        assert_eq!((a.array_id.as_str(), a.task_id, a.pending_tasks.as_deref()), ("12", None, Some("4-5%2")));
        assert_eq!(jobs[2].time_limit_secs, Some(2 * 86400));
    }

    #[test]
    fn squeue_name_with_pipes() {
        let text = "7|7|N/A|a|b|c|u|acct|p|RUNNING|None|n1|1|1|1G|N/A|N/A|N/A|N/A|UNLIMITED|0:01|1\n";
        let jobs = parse_squeue_text("hpc", text).unwrap();
        assert_eq!(jobs[0].name, "a|b|c");
        assert_eq!(jobs[0].user, "u");
        assert_eq!(jobs[0].time_limit_secs, None);
    }

    #[test]
    fn squeue_garbage_is_an_error_but_empty_is_not() {
        assert!(parse_squeue_text("hpc", "").unwrap().is_empty());
        let e = parse_squeue_text("hpc", "slurm_load_jobs error: Unable to contact slurm controller\n").unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert!(e.to_string().contains("squeue text output"), "{e}");
    }

    #[test]
    fn sinfo_lines_merge_partitions() {
        let text = "\
gpu01|gpu*|mixed|8/24/0/32|515000|400000|gpu:a100:4(S:0-1)|none|a100,ib\n\
gpu01|debug|mixed|8/24/0/32|515000|400000|gpu:a100:4(S:0-1)|none|a100,ib\n\
gpu02|gpu*|drained*|0/32/0/32|515000|N/A|gpu:a100:4|ECC | bad|(null)\n";
        let nodes = parse_sinfo_text("hpc", text).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].partitions, vec!["gpu", "debug"]);
        assert_eq!(nodes[0].state, NodeState::Mixed);
        assert_eq!((nodes[0].cpus_allocated, nodes[0].cpus_total), (8, 32));
        assert_eq!(nodes[0].gpus_total(), 4);
        assert_eq!(nodes[0].features, vec!["a100", "ib"]);
        assert_eq!(nodes[0].reason, None);
        assert_eq!(nodes[1].state, NodeState::Drained);
        assert_eq!(nodes[1].flags, vec!["NOT_RESPONDING", "DRAIN"]);
        assert_eq!(nodes[1].reason.as_deref(), Some("ECC | bad"));
        assert!(nodes[1].features.is_empty());
    }

    #[test]
    fn sinfo_with_reason_meta() {
        let text = "n1|p|drained|0/4/0/4|1000|900|(null)|disk full|(null)|root|2024-05-06T07:08:09\n";
        let nodes = parse_sinfo_text("hpc", text).unwrap();
        assert_eq!(nodes[0].reason.as_deref(), Some("disk full"));
        assert_eq!(nodes[0].reason_user.as_deref(), Some("root"));
        assert_eq!(nodes[0].reason_time.unwrap().to_rfc3339(), "2024-05-06T07:08:09+00:00");
    }

    #[test]
    fn durations_and_memory() {
        assert_eq!(parse_duration_secs("1-02:03:04"), Some(86400 + 7384));
        assert_eq!(parse_duration_secs("02:03:04"), Some(7384));
        assert_eq!(parse_duration_secs("30:00"), Some(1800));
        assert_eq!(parse_duration_secs("5"), Some(300));
        assert_eq!(parse_duration_secs("UNLIMITED"), None);
        assert_eq!(parse_duration_secs("INVALID"), None);
        assert_eq!(parse_memory_mb("4G"), Some(4096));
        assert_eq!(parse_memory_mb("1.5G"), Some(1536));
        assert_eq!(parse_memory_mb("500M"), Some(500));
        assert_eq!(parse_memory_mb("2048"), Some(2048));
        assert_eq!(parse_memory_mb("0"), None);
        assert_eq!(parse_memory_mb("lots"), None);
    }
}

#[cfg(test)]
mod marked_tests {
    use super::*;

    fn row(id: &str, name: &str, mark: &str) -> String {
        format!(
            "{id}|N/A|N/A|{name}|alice|ml|gpu|PENDING|Priority|(null)|1|4|16G|gres/gpu:a100:1|2026-12-03T06:00:00|N/A|N/A|1:00:00|0:00|100|{mark}\n"
        )
    }

    #[test]
    fn a_name_with_a_line_break_cannot_pose_as_a_row() {
        let mark = record_mark();
        assert_ne!(mark, record_mark(), "a new mark per query");
        // The job name carries a line break and a forged row; the forger cannot know the mark.
        let forged = "evil\n999|N/A|N/A|phantom|root|ml|gpu|RUNNING|None|h100-01|1|4|16G|gres/gpu:h100:8|2026-12-03T06:00:00|N/A|N/A|1:00:00|0:00|100|fd0000000000000000";
        let input = format!("{}{}{}", row("1", "plain", &mark), row("2", forged, &mark), row("3", "x|y", &mark));
        let (jobs, dropped) = parse_squeue_records("c", &input, &mark).unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3"], "no phantom job 999");
        assert_eq!(dropped, 0);
        assert_eq!(jobs[1].name, forged, "the name is kept whole, line break and all");
        assert_eq!(jobs[2].name, "x|y");
        // Line mode (no mark) is what the forger aims at: the phantom appears there.
        let plain = input.replace(&format!("|{mark}"), "");
        assert!(parse_squeue_text("c", &plain).unwrap().iter().any(|j| j.job_ref.id == "999"));
    }

    #[test]
    fn the_comment_between_marks_gives_migrated_from() {
        let mark = record_mark();
        let with = |id: &str, name: &str, comment: &str| {
            row(id, name, &mark).replace(&format!("|{mark}\n"), &format!("|{mark}={comment}|{mark}\n"))
        };
        let input = format!(
            "{}{}{}{}",
            with("1", "a|b", "flightdeck-migrated-from=hpc/12"),
            with("2", "plain", "(null)"),
            with("3", "c", "x|y|flightdeck-migrated-from=forged"),
            with("4", "d|flightdeck-migrated-from=hpc/9", "multi\nline|comment"),
        );
        let (jobs, dropped) = parse_squeue_records("c", &input, &mark).unwrap();
        assert_eq!(dropped, 0);
        let got: Vec<(&str, Option<&str>)> =
            jobs.iter().map(|j| (j.name.as_str(), j.migrated_from.as_deref())).collect();
        assert_eq!(
            got,
            [("a|b", Some("hpc/12")), ("plain", None), ("c", None), ("d|flightdeck-migrated-from=hpc/9", None)]
        );
        assert_eq!(jobs[0].user, "alice", "the fields after a name with `|` still line up");
        assert!(squeue_text_format(&mark).ends_with(&format!("|%Q|{mark}=%k|{mark}")));
    }

    #[test]
    fn pieces_that_do_not_check_are_counted_not_kept() {
        let mark = record_mark();
        let input = format!("{}garbage|{mark}\n{}half a record", row("1", "a", &mark), row("2", "b", &mark));
        let (jobs, dropped) = parse_squeue_records("c", &input, &mark).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(dropped, 2, "the garbage record and the unterminated tail");
        assert!(parse_squeue_records("c", "error: no such option\n", &mark).is_err());
        assert_eq!(parse_squeue_records("c", "", &mark).unwrap().0.len(), 0, "an empty queue is fine");
    }
}
