//! The job listing by field format: `squeue --Format` with only the fields a [`Job`] is
//! made of, about 200–300 bytes per job where `squeue --json` carries 3–8 KB.
//!
//! Every field is printed whole (`NAME:0`, width 0) and followed by a separator. The fields
//! Slurm fills (ids, states, counts, TRES, times) never hold `|`, so `|` ends each of them;
//! the fields a user writes (name, comment, working directory, output paths) come last and
//! each ends with a per-query mark ([`listing_mark`]): 8 letters or digits (47 bits) that
//! whoever names a job cannot know in advance. A record ends with the mark and a line break,
//! so a name holding line breaks stays in its record. A record that does not split into
//! exactly the expected pieces (garbage, or a value that happened to hold the mark) is
//! dropped and counted, never read out of line.
//!
//! Run under `SLURM_TIME_FORMAT=%s` (times as epoch seconds: shorter, and free of the
//! cluster's time zone); times in Slurm's ISO form are read too (as UTC).
//!
//! What the text lacks beside `--json`: `gres_detail` (the device indices a running job holds
//! on each node). [`allocations_from_nodes`] fills them from the node listing where a node's
//! GPUs in use belong to one job; elsewhere a job's GPUs per node are counted, not indexed.

use chrono::{DateTime, Utc};

use super::ParseError;
use super::exit::decode_wait_status;
use super::gres::{clamp_u32, gpu_request, model_and_product, parse_gres};
use super::hostlist::expand_hostlist;
use super::states::{drop_unsure_end, job_state_with_reason};
use super::stdout_pattern::{PatternFields, expand_stdout_pattern};
use super::text::{parse_duration_secs, parse_memory_mb, parse_text_time, text_value};
use crate::backend::slurm::script::migrated_from_of;
use crate::model::gpu_names::canonical_model;
use crate::model::{ArrayInfo, ExitStatus, GpuAllocation, Job, JobRef, LogHandle};

/// The fields Slurm fills, in order, each ended by `|`.
pub const SLURM_FIELDS: [&str; 25] = [
    "JobID",
    "ArrayJobID",
    "ArrayTaskID",
    "State",
    "Reason",
    "UserName",
    "Account",
    "Partition",
    "NodeList",
    "NumNodes",
    "NumCPUs",
    "MinMemory",
    "NumTasks",
    "tres-per-node",
    "tres-per-job",
    "tres-per-task",
    "tres-per-socket",
    "tres-alloc",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "TimeLimit",
    "PriorityLong",
    "exit_code",
    "BatchFlag",
];

/// The fields users write, last, each ended by the mark.
pub const USER_FIELDS: [&str; 5] = ["Name", "Comment", "WorkDir", "StdOut", "StdErr"];

const WHAT: &str = "squeue field output";

/// A per-query mark: `~` and 8 letters or digits. The `~` keeps squeue from reading the
/// mark's first characters as a field width (`Name:0~…`), and it holds no `,` (squeue's
/// field separator).
pub fn listing_mark() -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    let mut bits = h.finish();
    let mut mark = String::from("~");
    for _ in 0..8 {
        mark.push(ALPHABET[(bits % 62) as usize] as char);
        bits /= 62;
    }
    mark
}

/// What ends a record: the mark's secret behind `^` instead of `~`. It differs from the
/// mark that ends the other user fields, so a value that starts with a line break (a
/// comment `\n…` right after the name's mark) cannot end its record early.
pub fn record_end(mark: &str) -> String {
    format!("^{}", mark.strip_prefix('~').unwrap_or(mark))
}

/// `squeue --Format=` for [`parse_squeue_fields`] with `mark`.
pub fn squeue_fields_format(mark: &str) -> String {
    let mut f = String::new();
    for name in SLURM_FIELDS {
        f.push_str(name);
        f.push_str(":0|,");
    }
    let last = USER_FIELDS.len() - 1;
    for (i, name) in USER_FIELDS.iter().enumerate() {
        f.push_str(name);
        f.push_str(":0");
        if i < last {
            f.push_str(mark);
            f.push(',');
        } else {
            f.push_str(&record_end(mark));
        }
    }
    f
}

/// Records longer than this are dropped (a name or comment of megabytes is no job to show).
const MAX_RECORD: usize = 1 << 20;

/// What [`read_squeue_fields`] read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldsRead {
    pub jobs: Vec<Job>,
    /// Records that did not check and were left out.
    pub dropped: usize,
    /// Bytes of output read.
    pub bytes: u64,
}

/// Read the output of `squeue --Format=`[`squeue_fields_format`]`(mark)`. `old_output_paths`:
/// the release prints the wrong default output path for array tasks (22.05 and before: see
/// [`output_paths`]). Returns the jobs and how many records were dropped.
pub fn parse_squeue_fields(
    cluster: &str,
    input: &str,
    mark: &str,
    old_output_paths: bool,
) -> Result<(Vec<Job>, usize), ParseError> {
    read_squeue_fields(cluster, input.as_bytes(), mark, old_output_paths).map(|r| (r.jobs, r.dropped))
}

/// [`parse_squeue_fields`] record by record as the output arrives: memory holds the jobs
/// and one record, never the whole output.
pub fn read_squeue_fields<R: std::io::BufRead>(
    cluster: &str,
    mut input: R,
    mark: &str,
    old_output_paths: bool,
) -> Result<FieldsRead, ParseError> {
    let end = format!("{}\n", record_end(mark));
    let mut read = FieldsRead::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut skipping = false;
    loop {
        let n = input.read_until(b'\n', &mut buf).map_err(|e| ParseError::new(WHAT, e.to_string()))?;
        read.bytes += n as u64;
        if n == 0 {
            break;
        }
        if buf.ends_with(end.as_bytes()) {
            if !skipping {
                let record = String::from_utf8_lossy(&buf[..buf.len() - end.len()]);
                match record_job(cluster, &record, mark, old_output_paths) {
                    Some(job) => read.jobs.push(job),
                    None => read.dropped += 1,
                }
            }
            skipping = false;
            buf.clear();
        } else if buf.len() > MAX_RECORD {
            if !skipping {
                read.dropped += 1;
            }
            skipping = true;
            buf.clear();
        }
    }
    if !skipping && !buf.is_empty() {
        let rest = String::from_utf8_lossy(&buf);
        match rest.strip_suffix(record_end(mark).as_str()) {
            Some(record) => match record_job(cluster, record, mark, old_output_paths) {
                Some(job) => read.jobs.push(job),
                None => read.dropped += 1,
            },
            None if rest.trim().is_empty() => {}
            None => read.dropped += 1,
        }
    }
    if read.jobs.is_empty() && read.dropped > 0 {
        let first = String::from_utf8_lossy(&buf[..buf.len().min(200)]).trim().to_string();
        let mut message = format!("no record ended with the mark {} ({} pieces)", record_end(mark), read.dropped);
        if !first.is_empty() {
            message.push_str(&format!(": {first}"));
        }
        return Err(ParseError::new(WHAT, message));
    }
    Ok(read)
}

fn record_job(cluster: &str, record: &str, mark: &str, old_output_paths: bool) -> Option<Job> {
    // The record without its end: `FIXED|…|NAME~M COMMENT~M WORKDIR~M STDOUT~M STDERR`.
    let mut users = record.split(mark);
    let head = users.next()?;
    let (comment, workdir, stdout, stderr) = (users.next()?, users.next()?, users.next()?, users.next()?);
    if users.next().is_some() {
        return None;
    }
    let mut fixed = head.splitn(SLURM_FIELDS.len() + 1, '|');
    let mut f: [&str; SLURM_FIELDS.len()] = [""; SLURM_FIELDS.len()];
    for slot in &mut f {
        *slot = fixed.next()?;
    }
    let name = fixed.next()?;
    let [
        job_id,
        array_job_id,
        array_task,
        state,
        reason,
        user,
        account,
        partition,
        nodelist,
        node_count,
        cpus,
        min_memory,
        tasks,
        per_node,
        per_job,
        per_task,
        per_socket,
        tres,
        submit,
        start,
        end,
        limit,
        priority,
        exit_code,
        batch_flag,
    ] = f;
    let job_id: u64 = job_id.trim().parse().ok().filter(|id| *id > 0)?;

    let (id, array) = array_identity(job_id, array_job_id, array_task);
    let state_tok = state.trim();
    let reason = text_value(reason).filter(|r| !r.eq_ignore_ascii_case("None"));
    let priority: Option<u64> = priority.trim().parse().ok().filter(|p| *p < super::flex::NO_VAL);
    // Slurm keeps priority 0 for held jobs (`hold` in the JSON).
    let job_state = job_state_with_reason(&[state_tok], reason, priority == Some(0));
    let mut job = Job::new(JobRef::new(cluster, id), job_state);
    job.native_state = state_tok.to_string();
    job.reason = reason.map(str::to_string);
    job.array = array;

    job.nodes = expand_hostlist(text_value(nodelist).unwrap_or(""));
    job.node_count = node_count.trim().parse().unwrap_or(job.nodes.len() as u32);
    job.cpus = cpus.trim().parse().unwrap_or(0);
    let tres = text_value(tres).unwrap_or("");
    job.memory_mb = memory_mb(min_memory, tres, job.cpus, job.node_count);

    // GPUs requested: the same order as the JSON (per job, per node × nodes, per task × tasks,
    // per socket × nodes), then the TRES string (squeue prints the request while pending).
    let nodes_for_request = u64::from(job.node_count.max(1));
    // A pending job may print NO_VAL tasks (24.11).
    let tasks = tasks.trim().parse::<u64>().ok().filter(|t| *t > 0 && *t < super::flex::NO_VAL).unwrap_or(1);
    let mut models: Vec<String> = Vec::new();
    let mut requested = 0u64;
    for (s, mult) in [(per_job, 1), (per_node, nodes_for_request), (per_task, tasks), (per_socket, nodes_for_request)] {
        let r = gpu_request(text_value(s).unwrap_or(""));
        if r.count > 0 && requested == 0 {
            requested = u64::from(r.count).saturating_mul(mult);
        }
        merge_models(&mut models, r.models);
    }
    let from_tres = gpu_request(tres);
    if requested == 0 {
        requested = u64::from(from_tres.count);
    }
    merge_models(&mut models, from_tres.models.iter().cloned());
    job.gpus_requested = clamp_u32(requested);

    // GPUs held: the allocation's TRES, spread over the nodes (indices come from the nodes,
    // see `allocations_from_nodes`).
    let mut held_models: Vec<String> = Vec::new();
    if job.state.is_active() {
        job.gpus_allocated = from_tres.count;
        merge_models(&mut held_models, from_tres.models);
        spread_over_nodes(&mut job, held_models.first().or(models.first()).map(String::as_str));
    }
    let shown = if held_models.is_empty() { models } else { held_models };
    (job.gpu_model, job.gpu_product) = model_and_product(&shown);

    job.submit_time = time(submit);
    job.start_time = time(start);
    job.end_time = time(end);
    drop_unsure_end(&mut job);
    job.time_limit_secs = parse_duration_secs(limit);
    job.priority = priority;
    if job.state.is_finished() {
        job.exit = exit_status(exit_code);
    }

    job.name = name.to_string();
    job.user = text_value(user).unwrap_or("").to_string();
    job.account = text_value(account).map(str::to_string);
    job.partition = text_value(partition).unwrap_or("").to_string();
    job.workdir = user_text(workdir).map(str::to_string);
    job.migrated_from = user_text(comment).and_then(migrated_from_of).map(str::to_string);
    let batch = batch_flag.trim() == "1";
    output_paths(&mut job, job_id, batch, stdout, stderr, old_output_paths);
    Some(job)
}

/// The id flightdeck shows and the array bookkeeping, the JSON's way: a task `A_T`, a
/// pending parent `A_[2-5%2]` (`ArrayTaskID` prints the pending tasks), else the job id.
fn array_identity(job_id: u64, array_job_id: &str, array_task: &str) -> (String, Option<ArrayInfo>) {
    let array_job_id = array_job_id.trim().parse::<u64>().ok().filter(|a| *a > 0);
    let task = text_value(array_task);
    match (array_job_id, task) {
        (Some(a), Some(t)) => match t.parse::<u32>() {
            Ok(t) => {
                (format!("{a}_{t}"), Some(ArrayInfo { array_id: a.to_string(), task_id: Some(t), pending_tasks: None }))
            }
            Err(_) => (
                format!("{a}_[{t}]"),
                Some(ArrayInfo { array_id: a.to_string(), task_id: None, pending_tasks: Some(t.to_string()) }),
            ),
        },
        _ => (job_id.to_string(), None),
    }
}

/// The JSON's memory: per node as asked, or per CPU times the CPUs. squeue's `MinMemory`
/// prints either without saying which; the TRES total (`mem=`, asked or allocated) tells:
/// per CPU when it is the value times the CPUs. One case it cannot tell: as many CPUs as
/// nodes (more than one), where both read the same total; it is taken as per CPU, the
/// default wherever `DefMemPerCPU` is set.
fn memory_mb(min_memory: &str, tres: &str, cpus: u32, _nodes: u32) -> Option<u64> {
    let min = parse_memory_mb(min_memory)?;
    let total = tres.split(',').find_map(|kv| kv.strip_prefix("mem=")).and_then(parse_memory_mb);
    let per_cpu = min.saturating_mul(u64::from(cpus.max(1)));
    match total {
        Some(total) if total == per_cpu => Some(per_cpu),
        _ => Some(min),
    }
}

/// One [`GpuAllocation`] per node, the job's GPUs spread evenly (the first nodes take the
/// remainder), without indices.
fn spread_over_nodes(job: &mut Job, model: Option<&str>) {
    let n = job.nodes.len() as u32;
    if job.gpus_allocated == 0 || n == 0 {
        return;
    }
    let (each, extra) = (job.gpus_allocated / n, job.gpus_allocated % n);
    for (i, node) in job.nodes.iter().enumerate() {
        let count = each + u32::from((i as u32) < extra);
        if count > 0 {
            job.gpu_allocations.push(GpuAllocation {
                node: node.clone(),
                model: model.map(canonical_model),
                count,
                indices: Vec::new(),
            });
        }
    }
}

/// Epoch seconds (`SLURM_TIME_FORMAT=%s`) or Slurm's ISO form; `N/A`, `Unknown`, `None`, 0 → unset.
fn time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    match s.parse::<i64>() {
        Ok(secs) if secs > 0 => DateTime::from_timestamp(secs, 0),
        Ok(_) => None,
        Err(_) => parse_text_time(s),
    }
}

/// `exit_code`: the raw wait status up to 22.05 (`15`, `256`), `CODE:SIGNAL` from 23.02.
fn exit_status(s: &str) -> Option<ExitStatus> {
    let s = text_value(s)?;
    match s.split_once(':') {
        Some((code, signal)) => {
            let code = code.trim().parse::<i32>().ok()?;
            let signal = signal.trim().parse::<i32>().ok().filter(|s| *s > 0 && *s < 256);
            Some(ExitStatus { code, signal })
        }
        None => s.parse::<i64>().ok().map(decode_wait_status),
    }
}

/// A user-written field, `None` where squeue prints nothing for it.
fn user_text(s: &str) -> Option<&str> {
    match s {
        "" | "(null)" | "N/A" => None,
        s => Some(s),
    }
}

/// Output paths as the JSON reads them: a pattern expanded (24.11 prints the pattern, 22.05
/// the expanded path: expanding again changes nothing), made absolute against the working
/// directory; standard error defaults to standard output.
///
/// `old_output_paths`: 22.05's squeue expands an array task's default output as
/// `slurm-JOBID.out`, while sbatch writes `slurm-ARRAYID_TASK.out`: that one path is read
/// as the default. (A task told `--output=slurm-%j.out` in its working directory would be
/// read the same way; only the JSON can tell the two apart.)
fn output_paths(job: &mut Job, job_id: u64, batch: bool, stdout: &str, stderr: &str, old_output_paths: bool) {
    let (array_job_id, array_task_id) = match &job.array {
        Some(a) => (a.array_id.parse::<u64>().ok(), a.task_id),
        None => (None, None),
    };
    let fields = PatternFields {
        job_id,
        array_job_id,
        array_task_id,
        name: &job.name,
        user: &job.user,
        first_node: job.nodes.first().map(String::as_str),
    };
    let workdir = job.workdir.as_deref();
    let default_pattern = match (batch, array_task_id.is_some()) {
        (false, _) => None,
        (true, false) => Some("slurm-%j.out"),
        (true, true) => Some("slurm-%A_%a.out"),
    };
    let mut out_pattern = user_text(stdout).filter(|s| !s.trim().is_empty());
    if old_output_paths && batch && array_task_id.is_some() {
        let squeue_default = format!("{}/slurm-{job_id}.out", workdir.unwrap_or("").trim_end_matches('/'));
        if out_pattern == Some(squeue_default.as_str()) {
            out_pattern = default_pattern;
        }
    }
    let out_pattern = out_pattern.or(default_pattern);
    let err_pattern = user_text(stderr).filter(|s| !s.trim().is_empty());
    let path = |p: &str| {
        let path = expand_stdout_pattern(p.trim(), &fields);
        match workdir {
            Some(dir) if !path.starts_with('/') && !dir.is_empty() => format!("{}/{}", dir.trim_end_matches('/'), path),
            _ => path,
        }
    };
    let out = out_pattern.map(path);
    // An unset standard error prints as standard output (22.05) or not at all (24.11): the
    // same file either way.
    let err = match err_pattern {
        Some(e) if Some(e) != user_text(stdout) => Some(path(e)),
        _ => out.clone(),
    };
    job.stdout = out.map(|p| LogHandle::owned_by(p, job.user.clone()));
    job.stderr = err.map(|p| LogHandle::owned_by(p, job.user.clone()));
}

fn merge_models(into: &mut Vec<String>, from: impl IntoIterator<Item = String>) {
    for m in from {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

/// The device indices in use on a node, by GPU type (`gres_used`, `gpu:a100:3(IDX:0,3-4)`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeGpuUse {
    pub node: String,
    pub indices: Vec<u32>,
    /// The node's one GPU type, when it has one.
    pub model: Option<String>,
}

/// Read `gres_used` into [`NodeGpuUse`] (GPU items only).
pub fn node_gpu_use(node: &str, gres_used: &str) -> Option<NodeGpuUse> {
    let mut indices = Vec::new();
    let mut models: Vec<String> = Vec::new();
    for item in parse_gres(gres_used) {
        if let Some(m) = &item.model {
            merge_models(&mut models, [m.clone()]);
        }
        indices.extend(item.indices);
    }
    if indices.is_empty() {
        return None;
    }
    indices.sort_unstable();
    indices.dedup();
    let model = if models.len() == 1 { models.pop() } else { None };
    Some(NodeGpuUse { node: node.to_string(), indices, model })
}

/// Fill the device indices of jobs read from the field listing out of the node listing: on
/// a node whose GPUs in use are all one running job's (the job holds as many as the node
/// lists), that job holds exactly those. Nodes shared by several GPU jobs stay counted only.
/// A node with one GPU type names the model of every job's GPUs there.
pub fn allocations_from_nodes(jobs: &mut [Job], nodes: &[NodeGpuUse]) {
    use std::collections::HashMap;
    let mut holders: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (j, job) in jobs.iter().enumerate() {
        if !job.state.is_active() {
            continue;
        }
        for (a, alloc) in job.gpu_allocations.iter().enumerate() {
            holders.entry(alloc.node.as_str()).or_default().push((j, a));
        }
    }
    let mut fills = Vec::new();
    for used in nodes {
        let Some(on_node) = holders.get(used.node.as_str()) else { continue };
        let alone =
            matches!(on_node.as_slice(), [(j, a)] if jobs[*j].gpu_allocations[*a].count as usize == used.indices.len());
        for (j, a) in on_node {
            fills.push((*j, *a, used, alone));
        }
    }
    // The GPU types each job holds, as the nodes name them, in node order (what the JSON's
    // `gres_detail` gives it).
    let mut held: HashMap<usize, Vec<String>> = HashMap::new();
    for (j, a, used, alone) in fills {
        let alloc = &mut jobs[j].gpu_allocations[a];
        if alone {
            alloc.indices.clone_from(&used.indices);
        }
        if let Some(m) = &used.model {
            if alloc.model.is_none() {
                alloc.model = Some(canonical_model(m));
            }
            merge_models(held.entry(j).or_default(), [m.clone()]);
        }
    }
    for (j, models) in held {
        (jobs[j].gpu_model, jobs[j].gpu_product) = model_and_product(&models);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobState;

    fn record(fixed: &[&str], name: &str, user: [&str; 4], mark: &str) -> String {
        let mut s = fixed.join("|");
        s.push('|');
        s.push_str(name);
        for u in user {
            s.push_str(mark);
            s.push_str(u);
        }
        s.push_str(&record_end(mark));
        s.push('\n');
        s
    }

    fn running(id: &str) -> Vec<String> {
        [
            id,
            id,
            "N/A",
            "RUNNING",
            "None",
            "alice",
            "ml",
            "gpu",
            "a100-[01-02]",
            "2",
            "8",
            "4000M",
            "2",
            "gres:gpu:a100:2",
            "N/A",
            "N/A",
            "N/A",
            "cpu=8,mem=8000M,node=2,billing=8,gres/gpu=4",
            "1796621005",
            "1796621010",
            "1796624610",
            "1:00:00",
            "4294901744",
            "0",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn fixed(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    #[test]
    fn the_format_asks_every_field_whole_and_marked() {
        let mark = listing_mark();
        assert_eq!(mark.len(), 9);
        assert!(mark.starts_with('~') && mark[1..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(mark, listing_mark(), "a new mark per query");
        let f = squeue_fields_format(&mark);
        assert!(f.starts_with("JobID:0|,ArrayJobID:0|,"));
        let end = record_end(&mark);
        assert_eq!(end.len(), 9);
        assert!(end.starts_with('^') && end[1..] == mark[1..]);
        assert!(f.ends_with(&format!(
            "BatchFlag:0|,Name:0{mark},Comment:0{mark},WorkDir:0{mark},StdOut:0{mark},StdErr:0{end}"
        )));
    }

    #[test]
    fn a_running_job_reads_as_the_json_would() {
        let mark = "~Ab3dE5gH";
        let input = record(
            &fixed(&running("42")),
            "train|v2",
            ["(null)", "/home/alice", "/home/alice/%x-%j.out", "(null)"],
            mark,
        );
        let (jobs, dropped) = parse_squeue_fields("hpc", &input, mark, false).unwrap();
        assert_eq!(dropped, 0);
        let j = &jobs[0];
        assert_eq!(j.job_ref.id, "42");
        assert_eq!(j.name, "train|v2");
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.reason, None);
        assert_eq!(j.nodes, ["a100-01", "a100-02"]);
        assert_eq!((j.gpus_requested, j.gpus_allocated), (4, 4));
        assert_eq!(j.gpu_allocations.len(), 2);
        assert_eq!(j.gpu_allocations[1].count, 2);
        assert_eq!(j.gpu_model.as_deref(), Some("a100"));
        assert_eq!(j.memory_mb, Some(4000), "per node: the TRES total is the value times the nodes");
        assert_eq!(j.time_limit_secs, Some(3600));
        assert_eq!(j.start_time.unwrap().timestamp(), 1796621010);
        assert_eq!(j.stdout.as_deref(), Some("/home/alice/train|v2-42.out"));
        assert_eq!(j.stderr, j.stdout);
        assert_eq!(j.workdir.as_deref(), Some("/home/alice"));
    }

    #[test]
    fn memory_per_cpu_is_told_by_the_tres_total() {
        assert_eq!(memory_mb("700M", "cpu=2,mem=1400M,node=1", 2, 1), Some(1400));
        assert_eq!(memory_mb("3000M", "cpu=2,mem=3000M,node=1", 2, 1), Some(3000));
        assert_eq!(memory_mb("4G", "", 2, 1), Some(4096));
        assert_eq!(memory_mb("1000M", "cpu=2,mem=2000M,node=2", 2, 2), Some(2000), "cannot tell: per CPU");
        assert_eq!(memory_mb("0", "cpu=1", 1, 1), None);
    }

    #[test]
    fn arrays_exits_and_held_jobs() {
        assert_eq!(array_identity(15, "12", "3").0, "12_3");
        let (id, a) = array_identity(12, "12", "2-5%2");
        assert_eq!(id, "12_[2-5%2]");
        assert_eq!(a.unwrap().pending_tasks.as_deref(), Some("2-5%2"));
        assert_eq!(array_identity(9, "9", "N/A"), ("9".to_string(), None));
        assert_eq!(exit_status("768"), Some(ExitStatus { code: 3, signal: None }));
        assert_eq!(exit_status("15"), Some(ExitStatus { code: 0, signal: Some(15) }));
        assert_eq!(exit_status("0:15"), Some(ExitStatus { code: 0, signal: Some(15) }));
        assert_eq!(exit_status("2:0"), Some(ExitStatus { code: 2, signal: None }));
        assert_eq!(exit_status("N/A"), None);
        let mut held = running("7");
        (held[3], held[4], held[8], held[22]) = ("PENDING".into(), "JobHeldUser".into(), "".into(), "0".into());
        let mark = "~zzzzzzzz";
        let input = record(&fixed(&held), "h", ["(null)", "/w", "(null)", "(null)"], mark);
        let j = &parse_squeue_fields("c", &input, mark, false).unwrap().0[0];
        assert_eq!(j.state, JobState::Held);
        assert_eq!((j.gpus_requested, j.gpus_allocated), (4, 0), "asked, not held");
        assert_eq!(j.stdout.as_deref(), Some("/w/slurm-7.out"), "a batch job's default output");
    }

    #[test]
    fn old_releases_default_array_output_is_the_one_sbatch_writes() {
        let mut task = running("8284");
        (task[1], task[2]) = ("8280".into(), "4".into());
        let mark = "~mmmmmmmm";
        let input = record(&fixed(&task), "t", ["(null)", "/tmp", "/tmp/slurm-8284.out", "/tmp/slurm-8284.out"], mark);
        let j = &parse_squeue_fields("c", &input, mark, true).unwrap().0[0];
        assert_eq!(j.job_ref.id, "8280_4");
        assert_eq!(j.stdout.as_deref(), Some("/tmp/slurm-8280_4.out"));
        assert_eq!(j.stderr.as_deref(), Some("/tmp/slurm-8280_4.out"));
        let j = &parse_squeue_fields("c", &input, mark, false).unwrap().0[0];
        assert_eq!(j.stdout.as_deref(), Some("/tmp/slurm-8284.out"), "newer releases print what sbatch writes");
    }

    /// A name, comment or path holding line breaks, `|`, or a made-up record cannot pose as
    /// a job: the forger does not know the mark; a value that holds it drops its own record.
    #[test]
    fn hostile_user_text_stays_in_its_record() {
        let mark = listing_mark();
        let forged_row = fixed(&running("999")).join("|");
        let name = format!("evil\n{forged_row}|phantom~AAAAAAAA^AAAAAAAA\n");
        let input = format!(
            "{}{}{}",
            record(&fixed(&running("1")), &name, ["\nc|d\ne", "/w\n1|2", "(null)", "(null)"], &mark),
            record(&fixed(&running("2")), "x", [&format!("holds {mark} the mark"), "/w", "(null)", "(null)"], &mark),
            record(&fixed(&running("3")), "plain", ["(null)", "/w", "(null)", "(null)"], &mark),
        );
        let (jobs, dropped) = parse_squeue_fields("c", &input, &mark, false).unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
        assert_eq!(ids, ["1", "3"], "no phantom 999; the record holding the mark is dropped");
        assert_eq!(dropped, 1);
        assert_eq!(jobs[0].name, name);
        assert_eq!(jobs[0].workdir.as_deref(), Some("/w\n1|2"));
        assert!(parse_squeue_fields("c", "squeue: error: Invalid job format specification\n", &mark, false).is_err());
        assert_eq!(parse_squeue_fields("c", "", &mark, false).unwrap().0.len(), 0);
    }

    #[test]
    fn indices_come_from_nodes_held_by_one_job() {
        let mark = "~nnnnnnnn";
        let input = record(&fixed(&running("42")), "x", ["(null)", "/w", "(null)", "(null)"], mark);
        let (mut jobs, _) = parse_squeue_fields("c", &input, mark, false).unwrap();
        let used = [
            node_gpu_use("a100-01", "gpu:a100:2(IDX:1-2)").unwrap(),
            node_gpu_use("a100-02", "gpu:a100:3(IDX:0-2)").unwrap(),
        ];
        allocations_from_nodes(&mut jobs, &used);
        assert_eq!(jobs[0].gpu_allocations[0].indices, [1, 2]);
        assert!(jobs[0].gpu_allocations[1].indices.is_empty(), "a third GPU in use there is another job's");
        assert_eq!(node_gpu_use("n", "gpu:a100:0(IDX:N/A)"), None);
    }
}
