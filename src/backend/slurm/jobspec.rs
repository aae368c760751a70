//! The portable spec of a live Slurm job ([`crate::backend::Backend::job_spec`]).
//!
//! Two reads: the job record (`scontrol show job --json ID` from 23.02, whose JSON shapes
//! `{set, infinite, number}` are read leniently; the `Key=Value` text of `scontrol show job
//! ID` on 21.08/22.05, which have no `--json` there, and wherever the JSON fails), then the
//! batch script (`scontrol write batch_script ID -`). The script is imported as any sbatch
//! script is ([`super::dialect`]); the record is laid over it, field by field, because what
//! was given on sbatch's command line beats the script's directives and only the record
//! knows it. A field whose directive stayed in the script (a node range, `--export=NONE`)
//! is left to the script. An array job is read whole: its tasks' records and the pending
//! remainder say which indices exist.

use std::collections::BTreeMap;

use serde_json::Value;

use super::dialect::read_script;
use super::parse::gpu_request;
use super::script::migrated_from_of;
use crate::backend::BackendError;
use crate::model::JobRef;
use crate::spec::{Imported, duration_text, memory_text, parse_array, parse_memory_mb, parse_time_limit_secs};

/// What one record of `scontrol show job` says about a job's request; `None` where it
/// says nothing (or Slurm's "unset").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRecord {
    pub job_id: Option<u64>,
    pub array_job_id: Option<u64>,
    /// This task's index (a started or finished array task).
    pub array_task_id: Option<u32>,
    /// The pending remainder of an array (`2-5`, maybe with `%N`), on its parent record.
    pub array_pending: Option<String>,
    /// At most this many tasks at once (`%N`); `None` for no limit.
    pub array_throttle: Option<u32>,
    /// Whether sbatch made the job (`false` for srun and salloc allocations).
    pub batch: Option<bool>,
    pub name: Option<String>,
    pub partition: Option<String>,
    /// The partition (account) is the cluster's default, not one the job asked for.
    pub default_partition: bool,
    pub default_account: bool,
    pub account: Option<String>,
    /// Minutes; `None` for none (unlimited) or unknown.
    pub time_limit_mins: Option<u64>,
    /// Nodes asked for (the least, for a range).
    pub nodes: Option<u32>,
    pub tres_per_node: Option<String>,
    pub tres_per_job: Option<String>,
    pub cpus_per_task: Option<u32>,
    pub tasks_per_node: Option<u32>,
    pub mem_per_node_mb: Option<u64>,
    pub mem_per_cpu_mb: Option<u64>,
    /// Whether the job asked for its memory (`Some(false)`: the cluster's `DefMemPerCPU`
    /// gave it); `None` where the record does not say (the text form).
    pub memory_requested: Option<bool>,
    pub workdir: Option<String>,
    pub comment: Option<String>,
}

/// A number in any JSON family's shape: plain, `null`, or `{set, infinite, number}`.
fn number(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::Object(o) => {
            let set = o.get("set").and_then(Value::as_bool).unwrap_or(true);
            let infinite = o.get("infinite").and_then(Value::as_bool).unwrap_or(false);
            if set && !infinite { number(o.get("number")) } else { None }
        }
        _ => None,
    }
    // Slurm's NO_VAL sentinels mean "unset".
    .filter(|n| *n < super::parse::flex::NO_VAL)
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

fn small(n: Option<u64>) -> Option<u32> {
    n.and_then(|n| u32::try_from(n).ok())
}

/// The records of `scontrol show job --json` (23.02+).
pub fn parse_show_job_json(input: &[u8]) -> Result<Vec<JobRecord>, String> {
    let doc: Value = serde_json::from_slice(input).map_err(|e| e.to_string())?;
    let jobs = doc.get("jobs").and_then(Value::as_array).ok_or("no `jobs` array")?;
    Ok(jobs
        .iter()
        .map(|j| {
            let flags: Vec<&str> = j
                .get("flags")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let memory_per_cpu = number(j.get("memory_per_cpu")).filter(|m| *m > 0);
            JobRecord {
                job_id: number(j.get("job_id")),
                array_job_id: number(j.get("array_job_id")).filter(|a| *a > 0),
                array_task_id: small(number(j.get("array_task_id"))),
                array_pending: text(j.get("array_task_string")),
                array_throttle: small(number(j.get("array_max_tasks"))).filter(|n| *n > 0),
                batch: j.get("batch_flag").and_then(Value::as_bool),
                name: text(j.get("name")),
                partition: text(j.get("partition")),
                default_partition: flags.contains(&"USING_DEFAULT_PARTITION"),
                default_account: flags.contains(&"USING_DEFAULT_ACCOUNT"),
                account: text(j.get("account")),
                time_limit_mins: number(j.get("time_limit")).filter(|m| *m > 0),
                nodes: small(number(j.get("node_count"))).filter(|n| *n > 0),
                tres_per_node: text(j.get("tres_per_node")),
                tres_per_job: text(j.get("tres_per_job")),
                cpus_per_task: small(number(j.get("cpus_per_task"))).filter(|n| *n > 0),
                tasks_per_node: small(number(j.get("tasks_per_node"))).filter(|n| *n > 0),
                // Slurm sets memory_per_node only when memory_per_cpu is unset, and 23.x
                // reports the other as 0 or unset.
                mem_per_node_mb: number(j.get("memory_per_node")).filter(|m| *m > 0 && memory_per_cpu.is_none()),
                mem_per_cpu_mb: memory_per_cpu,
                // 23.11+ flag a job's own memory request; a default leaves it out.
                memory_requested: (!flags.is_empty()).then(|| flags.contains(&"EXACT_MEMORY_REQUESTED")),
                workdir: text(j.get("current_working_directory")),
                comment: text(j.get("comment")),
            }
        })
        .collect())
}

/// Keys whose value is the rest of their line in `scontrol show job`'s text (values that may
/// hold blanks); `Comment=` is printed with one blank after it.
const WHOLE_LINE: &[&str] =
    &["Comment=", "AdminComment=", "SystemComment=", "WorkDir=", "Command=", "StdErr=", "StdIn=", "StdOut="];

/// The records of `scontrol show job ID` (multi-line text, one record per job or array
/// task, each starting with `JobId=`). `JobName` is the rest of a record's first line.
pub fn parse_show_job_text(input: &str) -> Vec<JobRecord> {
    let mut records = Vec::new();
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    let mut flush = |fields: &mut BTreeMap<String, String>| {
        if !fields.is_empty() {
            records.push(text_record(fields));
            fields.clear();
        }
    };
    for line in input.lines() {
        let content = line.trim_start();
        if content.is_empty() {
            continue;
        }
        if content.starts_with("JobId=") {
            flush(&mut fields);
            let (head, name) = match content.split_once(" JobName=") {
                Some((head, name)) => (head, Some(name)),
                None => (content, None),
            };
            for (k, v) in head.split_whitespace().filter_map(|t| t.split_once('=')) {
                fields.insert(k.to_string(), v.to_string());
            }
            if let Some(name) = name {
                fields.insert("JobName".into(), name.to_string());
            }
            continue;
        }
        if let Some(key) = WHOLE_LINE.iter().find(|k| content.starts_with(*k)) {
            let value = &content[key.len()..];
            let value = if key.ends_with("Comment=") { value.strip_suffix(' ').unwrap_or(value) } else { value };
            fields.insert(key.trim_end_matches('=').to_string(), value.to_string());
            continue;
        }
        for (k, v) in content.split_whitespace().filter_map(|t| t.split_once('=')) {
            fields.insert(k.to_string(), v.to_string());
        }
    }
    flush(&mut fields);
    records
}

fn text_record(f: &BTreeMap<String, String>) -> JobRecord {
    let get = |k: &str| {
        f.get(k).map(String::as_str).map(str::trim).filter(|v| !v.is_empty() && *v != "(null)" && *v != "N/A")
    };
    let int = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
    let (array_task_id, array_pending) = match get("ArrayTaskId") {
        Some(t) if t.bytes().all(|b| b.is_ascii_digit()) => (t.parse().ok(), None),
        Some(t) => (None, Some(t.to_string())),
        None => (None, None),
    };
    JobRecord {
        job_id: int("JobId"),
        array_job_id: int("ArrayJobId").filter(|a| *a > 0),
        array_task_id,
        array_pending,
        array_throttle: small(int("ArrayTaskThrottle")).filter(|n| *n > 0),
        batch: get("BatchFlag").map(|b| b != "0"),
        // The name is kept as printed, blanks and all.
        name: f.get("JobName").filter(|n| !n.is_empty()).cloned(),
        partition: get("Partition").map(str::to_string),
        default_partition: false,
        default_account: false,
        account: get("Account").map(str::to_string),
        time_limit_mins: get("TimeLimit").and_then(|t| parse_time_limit_secs(t).ok()).map(|secs| secs.div_ceil(60)),
        nodes: get("NumNodes").and_then(|n| n.split('-').next()).and_then(|n| n.parse().ok()).filter(|n| *n > 0),
        tres_per_node: get("TresPerNode").map(str::to_string),
        tres_per_job: get("TresPerJob").map(str::to_string),
        cpus_per_task: get("CPUs/Task").and_then(|c| c.parse().ok()).filter(|n| *n > 0),
        tasks_per_node: get("NtasksPerN:B:S:C")
            .and_then(|v| v.split(':').next())
            .and_then(|n| n.parse().ok())
            .filter(|n| *n > 0),
        mem_per_node_mb: get("MinMemoryNode").and_then(|m| parse_memory_mb(m).ok()),
        mem_per_cpu_mb: get("MinMemoryCPU").and_then(|m| parse_memory_mb(m).ok()),
        memory_requested: None,
        workdir: get("WorkDir").map(str::to_string),
        comment: f.get("Comment").filter(|c| !c.is_empty() && *c != "(null)").cloned(),
    }
}

/// Refuse a job sbatch did not make: it has no batch script to read.
pub fn check_batch(job: &JobRef, records: &[JobRecord]) -> Result<(), BackendError> {
    if records.is_empty() {
        return Err(BackendError::NotFound(format!("{job}: Slurm does not know this job (any more)")));
    }
    if records.iter().all(|r| r.batch == Some(false)) {
        return Err(BackendError::Unsupported(format!(
            "{job} was started by srun or salloc, not sbatch: it has no batch script to read a spec from"
        )));
    }
    Ok(())
}

/// The spec of `job` from its batch script and its records.
pub fn job_spec(job: &JobRef, script: &str, records: &[JobRecord]) -> Result<Imported, BackendError> {
    check_batch(job, records)?;
    let (mut imported, kept) = read_script(script)
        .map_err(|e| BackendError::Parse { what: format!("the batch script of {job}"), message: e.to_string() })?;
    // The parent of an array (the pending remainder) speaks for it; else any task does.
    let main = records.iter().find(|r| r.array_pending.is_some()).unwrap_or(&records[0]);
    overlay(&mut imported, main, &kept);
    overlay_array(&mut imported, records, kept.contains(&"array"));
    if job.id.contains('_') {
        imported.warnings.push(format!("{job} is a task of an array job: this is the whole array's spec"));
    }
    imported
        .spec
        .validate()
        .map_err(|e| BackendError::Parse { what: format!("the job record of {job}"), message: e.to_string() })?;
    Ok(imported)
}

/// A changed value is said when the script had its own: the command line won.
fn changed(warnings: &mut Vec<String>, field: &str, script: Option<String>, record: &str) {
    if let Some(script) = script {
        warnings.push(format!(
            "`{field}`: the job record says {record}, the script {script}; the record's is kept (given on sbatch's command line)"
        ));
    }
}

/// The record's word on each field the script did not keep for itself.
fn overlay(imported: &mut Imported, r: &JobRecord, kept: &[&str]) {
    let spec = &mut imported.spec;
    let warnings = &mut imported.warnings;
    let free = |long: &str| !kept.contains(&long);
    if let Some(name) = &r.name
        && *name != spec.name
    {
        changed(warnings, "name", Some(spec.name.clone()), name);
        spec.name = name.clone();
    }
    if let Some(p) = r.partition.as_ref().filter(|_| !r.default_partition && free("partition"))
        && spec.partition.as_ref() != Some(p)
    {
        changed(warnings, "partition", spec.partition.clone(), p);
        spec.partition = Some(p.clone());
    }
    // No account from the record: it is its user's default unless `sbatch -A` named another,
    // and neither 24.11's JSON (no `USING_DEFAULT_ACCOUNT`) nor the text record says which. A
    // spec carries the script's own `--account` only, not a default account to a cluster
    // that may not know it.
    if let Some(mins) = r.time_limit_mins.filter(|_| free("time"))
        && spec.time_limit_secs().map(|s| s.div_ceil(60)) != Some(mins)
    {
        let t = duration_text(mins * 60);
        changed(warnings, "time_limit", spec.time_limit.clone(), &t);
        spec.time_limit = Some(t);
    }
    if let Some(n) = r.nodes.filter(|_| free("nodes"))
        && spec.nodes.unwrap_or(1) != n
    {
        changed(warnings, "nodes", spec.nodes.map(|n| n.to_string()), &n.to_string());
        spec.nodes = Some(n);
    }
    if free("gres") && free("gpus") && free("gpus-per-node") {
        let nodes = spec.nodes.unwrap_or(1).max(1);
        let per_node = r.tres_per_node.as_deref().map(gpu_request).filter(|g| g.count > 0);
        let per_job = r.tres_per_job.as_deref().map(gpu_request).filter(|g| g.count > 0);
        let asked = match (per_node, per_job) {
            (Some(g), _) => Some((g.count, g.models)),
            (None, Some(g)) => Some((g.count.div_ceil(nodes), g.models)),
            _ => None,
        };
        if let Some((count, models)) = asked {
            let gpu_type = match models.as_slice() {
                [one] => Some(one.clone()),
                _ => spec.gpu_type.clone(),
            };
            if (count, &gpu_type) != (spec.gpus, &spec.gpu_type) {
                let shown = |n: u32, t: &Option<String>| match t {
                    Some(t) => format!("{t}:{n} per node"),
                    None => format!("{n} per node"),
                };
                changed(
                    warnings,
                    "gpus",
                    (spec.gpus > 0).then(|| shown(spec.gpus, &spec.gpu_type)),
                    &shown(count, &gpu_type),
                );
                spec.gpus = count;
                spec.gpu_type = gpu_type;
            }
        }
    }
    if let Some(c) = r.cpus_per_task.filter(|_| free("cpus-per-task"))
        && spec.cpus.unwrap_or(1) != c
    {
        changed(warnings, "cpus", spec.cpus.map(|c| c.to_string()), &c.to_string());
        spec.cpus = Some(c);
    }
    if let Some(t) = r.tasks_per_node.filter(|_| free("ntasks-per-node"))
        && spec.tasks_per_node.unwrap_or(1) != t
    {
        changed(warnings, "tasks_per_node", spec.tasks_per_node.map(|t| t.to_string()), &t.to_string());
        spec.tasks_per_node = Some(t);
    }
    // Memory the cluster gave by default (DefMemPerCPU) is no part of the job's request.
    if free("mem") && free("mem-per-cpu") && free("mem-per-gpu") && r.memory_requested != Some(false) {
        if let Some(mb) = r.mem_per_node_mb {
            if spec.memory_mb() != Some(mb) {
                changed(warnings, "memory", spec.memory.clone(), &memory_text(mb));
                spec.memory = Some(memory_text(mb));
            }
        } else if let Some(per_cpu) = r.mem_per_cpu_mb {
            let cpus = u64::from(spec.cpus.unwrap_or(1)) * u64::from(spec.tasks_per_node.unwrap_or(1));
            let total = per_cpu.saturating_mul(cpus);
            if r.memory_requested == Some(true) && spec.memory_mb() != Some(total) {
                warnings.push(format!(
                    "`memory`: the job asks {} per CPU; as memory per node that is {} (× {cpus} CPUs)",
                    memory_text(per_cpu),
                    memory_text(total)
                ));
                spec.memory = Some(memory_text(total));
            } else if r.memory_requested.is_none() && spec.memory.is_none() {
                // The text form cannot tell a request from the cluster's default.
                warnings.push(format!(
                    "`memory`: the job has {} per CPU (the cluster's default, or given on sbatch's command line); left out",
                    memory_text(per_cpu)
                ));
            }
        }
    }
    if let Some(dir) = &r.workdir
        && spec.workdir.as_ref() != Some(dir)
    {
        changed(warnings, "workdir", spec.workdir.clone(), dir);
        spec.workdir = Some(dir.clone());
    }
    if let Some(comment) = r.comment.as_deref().filter(|_| free("comment")) {
        match migrated_from_of(comment) {
            Some(origin) if spec.migrated_from.as_deref() != Some(origin) => {
                spec.migrated_from = Some(origin.to_string());
            }
            Some(_) => {}
            None => warnings.push(format!("the job's comment {comment:?} has no portable form")),
        }
    }
}

/// An array's indices from its records: the tasks Slurm still holds and the pending rest.
/// The script's `--array` stands when it covers them (tasks that finished long ago have left
/// the controller, so the records alone may say less); else the records' are written.
fn overlay_array(imported: &mut Imported, records: &[JobRecord], kept: bool) {
    let is_array =
        records.iter().any(|r| r.array_job_id.is_some() && (r.array_task_id.is_some() || r.array_pending.is_some()));
    if !is_array || kept {
        return;
    }
    let mut tasks: Vec<u32> = records.iter().filter_map(|r| r.array_task_id).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let pending: Vec<String> = records
        .iter()
        .filter_map(|r| r.array_pending.as_deref())
        .map(|p| p.split('%').next().unwrap_or(p).trim().to_string())
        .filter(|p| parse_array(p).is_ok())
        .collect();
    let throttle = records.iter().find_map(|r| r.array_throttle);
    let spec = &mut imported.spec;
    if let Some(script) = spec.array.as_deref().and_then(|a| parse_array(a).ok()) {
        let covers =
            |i: u32| script.ranges.iter().any(|&(f, l, s)| f <= i && i <= l && (i - f).is_multiple_of(s.max(1)));
        let pending_covered = pending.iter().filter_map(|p| parse_array(p).ok()).all(|p| p.indices().all(covers));
        if tasks.iter().all(|&t| covers(t)) && pending_covered && script.max_running == throttle {
            return;
        }
    }
    // Runs of consecutive task indices, then the pending ranges as Slurm wrote them.
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    for &t in &tasks {
        run = match run {
            Some((first, last)) if last.checked_add(1) == Some(t) => Some((first, t)),
            Some(done) => {
                parts.push(range_text(done));
                Some((t, t))
            }
            None => Some((t, t)),
        };
    }
    if let Some(done) = run {
        parts.push(range_text(done));
    }
    parts.extend(pending);
    if parts.is_empty() {
        return;
    }
    let mut array = parts.join(",");
    if let Some(n) = throttle {
        array.push_str(&format!("%{n}"));
    }
    if parse_array(&array).is_err() {
        return;
    }
    imported.warnings.push(format!(
        "`array`: {array} (from the tasks Slurm still holds{})",
        spec.array.as_deref().map(|a| format!("; the script says {a}")).unwrap_or_default()
    ));
    spec.array = Some(array);
}

fn range_text((first, last): (u32, u32)) -> String {
    if first == last { first.to_string() } else { format!("{first}-{last}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT_22: &str = "JobId=2005 ArrayJobId=2005 ArrayTaskId=0-3%2 ArrayTaskThrottle=2 JobName=probe two 
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=0 Nice=0 Account=(null) QOS=(null)
   JobState=PENDING Reason=JobHeldUser Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=01:30:00 TimeMin=N/A
   Partition=gpu AllocNode:Sid=localhost:15419
   NumNodes=2-3 NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=1G,node=1,billing=2
   Socks/Node=* NtasksPerN:B:S:C=1:0:*:* CoreSpec=*
   MinCPUsNode=2 MinMemoryNode=1G MinTmpDiskNode=0
   Command=(null)
   WorkDir=/tmp/a b
   Comment=flightdeck-migrated-from=hpc/12 
   StdOut=/tmp/slurm-2005_4294967294.out
   TresPerNode=gres:gpu:a100:1
   
";

    #[test]
    fn text_records_of_22_05() {
        let r = parse_show_job_text(TEXT_22);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!(r.name.as_deref(), Some("probe two "));
        assert_eq!((r.job_id, r.array_job_id, r.array_pending.as_deref()), (Some(2005), Some(2005), Some("0-3%2")));
        assert_eq!(r.array_throttle, Some(2));
        assert_eq!((r.account.as_deref(), r.partition.as_deref()), (None, Some("gpu")));
        assert_eq!(
            (r.time_limit_mins, r.nodes, r.cpus_per_task, r.tasks_per_node),
            (Some(90), Some(2), Some(2), Some(1))
        );
        assert_eq!((r.mem_per_node_mb, r.mem_per_cpu_mb), (Some(1024), None));
        assert_eq!(r.workdir.as_deref(), Some("/tmp/a b"));
        assert_eq!(r.comment.as_deref(), Some("flightdeck-migrated-from=hpc/12"));
        assert_eq!(r.tres_per_node.as_deref(), Some("gres:gpu:a100:1"));
        assert_eq!(r.batch, Some(true));
    }

    #[test]
    fn json_records_of_24_11() {
        let doc = br#"{"jobs": [{"job_id": 4, "array_job_id": {"set": true, "number": 4}, "array_task_id": {"set": false, "number": 0},
            "array_task_string": "0-3%2", "array_max_tasks": {"set": true, "number": 2}, "batch_flag": true, "name": "probe",
            "partition": "gpu", "account": "", "flags": ["USING_DEFAULT_ACCOUNT"], "time_limit": {"set": true, "infinite": false, "number": 90},
            "node_count": {"set": true, "number": 1}, "tres_per_node": "gres/gpu:1", "cpus_per_task": {"set": true, "number": 2},
            "tasks_per_node": {"set": true, "number": 0}, "memory_per_node": {"set": true, "number": 1024},
            "memory_per_cpu": {"set": false, "number": 0}, "current_working_directory": "/tmp", "comment": "x"}]}"#;
        let r = &parse_show_job_json(doc).unwrap()[0];
        assert_eq!((r.array_job_id, r.array_task_id, r.array_pending.as_deref()), (Some(4), None, Some("0-3%2")));
        assert_eq!((r.time_limit_mins, r.tasks_per_node, r.mem_per_node_mb), (Some(90), None, Some(1024)));
        assert!(r.default_account && !r.default_partition);
        let unlimited = br#"{"jobs": [{"job_id": 5, "time_limit": {"set": false, "infinite": true, "number": 0}}]}"#;
        assert_eq!(parse_show_job_json(unlimited).unwrap()[0].time_limit_mins, None);
        assert!(parse_show_job_json(b"{}").is_err());
        assert!(parse_show_job_json(b"not json").is_err());
    }

    fn job() -> JobRef {
        JobRef::new("hpc", "2005")
    }

    #[test]
    fn the_record_beats_the_script_and_kept_directives_stand() {
        let script = "#!/bin/bash\n#SBATCH --job-name=probe\n#SBATCH --partition=debug\n#SBATCH --time=10\n#SBATCH -N 2-3\necho\n";
        let mut r = parse_show_job_text(TEXT_22);
        r[0].name = Some("probe".into());
        let i = job_spec(&job(), script, &r).unwrap();
        assert_eq!(i.spec.partition.as_deref(), Some("gpu"));
        assert_eq!(i.spec.time_limit.as_deref(), Some("1h30m"));
        assert_eq!((i.spec.gpus, i.spec.gpu_type.as_deref()), (1, Some("a100")));
        assert_eq!((i.spec.cpus, i.spec.tasks_per_node, i.spec.memory.as_deref()), (Some(2), None, Some("1G")));
        assert_eq!(i.spec.workdir.as_deref(), Some("/tmp/a b"));
        assert_eq!(i.spec.migrated_from.as_deref(), Some("hpc/12"));
        assert_eq!(i.spec.array.as_deref(), Some("0-3%2"));
        assert_eq!(i.spec.nodes, Some(2), "the range stays in the script");
        assert!(
            i.warnings.iter().any(|w| w.starts_with("`partition`: the job record says gpu, the script debug")),
            "{:?}",
            i.warnings
        );
    }

    #[test]
    fn an_array_is_rebuilt_from_its_tasks_when_the_script_does_not_cover_them() {
        let task = |t: u32| JobRecord {
            job_id: Some(100 + u64::from(t)),
            array_job_id: Some(10),
            array_task_id: Some(t),
            batch: Some(true),
            ..JobRecord::default()
        };
        let parent = JobRecord {
            job_id: Some(10),
            array_job_id: Some(10),
            array_pending: Some("5-7%2".into()),
            array_throttle: Some(2),
            batch: Some(true),
            ..JobRecord::default()
        };
        let records = vec![task(0), task(1), task(3), parent];
        let i = job_spec(&JobRef::new("hpc", "10_3"), "#!/bin/bash\n#SBATCH -J a\nx\n", &records).unwrap();
        assert_eq!(i.spec.array.as_deref(), Some("0-1,3,5-7%2"));
        assert!(i.warnings.iter().any(|w| w.contains("a task of an array job")), "{:?}", i.warnings);
        let i = job_spec(&job(), "#!/bin/bash\n#SBATCH -J a --array=0-7%2\nx\n", &records).unwrap();
        assert_eq!(i.spec.array.as_deref(), Some("0-7%2"), "the script covers the records");
    }

    #[test]
    fn memory_the_cluster_gave_is_not_the_jobs_request() {
        let record = |requested| JobRecord {
            job_id: Some(7),
            batch: Some(true),
            cpus_per_task: Some(2),
            mem_per_cpu_mb: Some(500),
            memory_requested: requested,
            ..JobRecord::default()
        };
        let script = "#!/bin/bash\n#SBATCH -J m -c 2\nx\n";
        let i = job_spec(&job(), script, &[record(Some(false))]).unwrap();
        assert_eq!((i.spec.memory.as_deref(), i.warnings.len()), (None, 0), "{:?}", i.warnings);
        let i = job_spec(&job(), script, &[record(Some(true))]).unwrap();
        assert_eq!(i.spec.memory.as_deref(), Some("1000M"));
        let i = job_spec(&job(), script, &[record(None)]).unwrap();
        assert_eq!(i.spec.memory, None);
        assert!(i.warnings[0].contains("500M per CPU (the cluster's default"), "{:?}", i.warnings);
    }

    #[test]
    fn jobs_without_a_batch_script_are_refused_by_name() {
        let r = vec![JobRecord { job_id: Some(3), batch: Some(false), ..JobRecord::default() }];
        let err = job_spec(&job(), "", &r).unwrap_err();
        assert!(matches!(err, BackendError::Unsupported(_)));
        assert!(err.to_string().contains("srun or salloc"), "{err}");
        assert!(matches!(job_spec(&job(), "", &[]), Err(BackendError::NotFound(_))));
    }
}
