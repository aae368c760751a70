//! One job record of `squeue --json` (any family) or `sacct --json`, and its conversion.
//!
//! The record names only the fields flightdeck uses; serde skips the rest (notably the
//! large `job_resources`) without building anything. Every field is a lenient type, so a
//! field of the wrong type reads as unset instead of failing the document.

use super::exit::ExitField;
use super::flex::{Flex, LBool, LStr, Lenient, LenientVec, StrList};
use super::gres::{GpuTally, clamp_u32, gpu_request, gpu_spec, model_and_product, parse_gres};
use super::hostlist::expand_hostlist;
use super::record::lenient_record;
use super::states::job_state_with_reason;
use super::stdout_pattern::{PatternFields, expand_stdout_pattern};
use crate::backend::slurm::script::migrated_from_of;
use crate::model::gpu_names::canonical_model;
use crate::model::{ArrayInfo, GpuAllocation, Job, JobRef, LogHandle};

lenient_record! {
    pub(crate) struct JobRecord<'a> {
        account: LStr<'a> = b"account",
        array_job_id: Flex = b"array_job_id",
        array_task_id: Flex = b"array_task_id",
        array_task_string: LStr<'a> = b"array_task_string",
        batch_flag: LBool = b"batch_flag",
        comment: LStr<'a> = b"comment",
        cpus: Flex = b"cpus",
        current_working_directory: LStr<'a> = b"current_working_directory",
        end_time: Flex = b"end_time",
        exit_code: ExitField = b"exit_code",
        gres_detail: StrList<'a> = b"gres_detail",
        hold: LBool = b"hold",
        job_id: Flex = b"job_id",
        job_state: StrList<'a> = b"job_state",
        memory_per_cpu: Flex = b"memory_per_cpu",
        memory_per_node: Flex = b"memory_per_node",
        name: LStr<'a> = b"name",
        node_count: Flex = b"node_count",
        nodes: LStr<'a> = b"nodes",
        partition: LStr<'a> = b"partition",
        priority: Flex = b"priority",
        standard_error: LStr<'a> = b"standard_error",
        standard_output: LStr<'a> = b"standard_output",
        start_time: Flex = b"start_time",
        state_reason: LStr<'a> = b"state_reason",
        stderr_expanded: LStr<'a> = b"stderr_expanded",
        stdout_expanded: LStr<'a> = b"stdout_expanded",
        submit_time: Flex = b"submit_time",
        tasks: Flex = b"tasks",
        time_limit: Flex = b"time_limit",
        tres_alloc_str: LStr<'a> = b"tres_alloc_str",
        tres_per_job: LStr<'a> = b"tres_per_job",
        tres_per_node: LStr<'a> = b"tres_per_node",
        tres_per_socket: LStr<'a> = b"tres_per_socket",
        tres_per_task: LStr<'a> = b"tres_per_task",
        tres_req_str: LStr<'a> = b"tres_req_str",
        user_name: LStr<'a> = b"user_name",

        // The `sacct --json` shape (slurmdbd records).
        array: Lenient<SacctArray<'a>> = b"array",
        state: Lenient<SacctState<'a>> = b"state",
        time: Lenient<SacctTime> = b"time",
        required: Lenient<SacctRequired> = b"required",
        tres: Lenient<SacctTres<'a>> = b"tres",
        user: LStr<'a> = b"user",
        working_directory: LStr<'a> = b"working_directory",
        stdout: LStr<'a> = b"stdout",
        stderr: LStr<'a> = b"stderr",
        allocation_nodes: Flex = b"allocation_nodes",
    }
}

lenient_record! {
    struct SacctArray<'a> {
        job_id: Flex = b"job_id",
        task_id: Flex = b"task_id",
        task: LStr<'a> = b"task",
    }
}

lenient_record! {
    struct SacctState<'a> {
        current: StrList<'a> = b"current",
        reason: LStr<'a> = b"reason",
    }
}

lenient_record! {
    struct SacctTime {
        submission: Flex = b"submission",
        start: Flex = b"start",
        end: Flex = b"end",
        limit: Flex = b"limit",
    }
}

lenient_record! {
    struct SacctRequired {
        cpus: Flex = b"CPUs",
        memory_per_cpu: Flex = b"memory_per_cpu",
        memory_per_node: Flex = b"memory_per_node",
    }
}

lenient_record! {
    struct SacctTres<'a> {
        allocated: LenientVec<TresEntry<'a>> = b"allocated",
        requested: LenientVec<TresEntry<'a>> = b"requested",
    }
}

lenient_record! {
    struct TresEntry<'a> {
        kind: LStr<'a> = b"type",
        name: LStr<'a> = b"name",
        count: Flex = b"count",
    }
}

impl SacctTres<'_> {
    /// GPUs and CPUs in one TRES list (`{type: "gres", name: "gpu:a100", count: 2}`).
    fn tally(list: &[TresEntry<'_>]) -> (GpuTally, Option<u64>) {
        let mut gpus = GpuTally::default();
        let mut cpus = None;
        for e in list {
            let count = e.count.as_u64().unwrap_or(0);
            match e.kind.as_str() {
                "gres" => {
                    if let Some((model, _)) = gpu_spec(e.name.as_str()) {
                        gpus.add(model, count);
                    }
                }
                "cpu" => cpus = Some(count),
                _ => {}
            }
        }
        (gpus, cpus)
    }
}

/// Slurm's sentinel for "no array task" in 32-bit fields.
fn task_id(f: Flex) -> Option<u32> {
    f.as_u32()
}

fn non_zero(f: Flex) -> Option<u64> {
    f.as_u64().filter(|v| *v != 0 && *v < super::flex::NO_VAL)
}

impl<'a> JobRecord<'a> {
    /// The job this record describes; `None` for a record without a job id.
    pub(crate) fn into_job(self, cluster: &str) -> Option<Job> {
        let job_id = non_zero(self.job_id)?;
        let sacct = &self.array.0;

        // Array identity.
        let array_job_id = non_zero(self.array_job_id).or_else(|| non_zero(sacct.job_id));
        let array_task = task_id(self.array_task_id).or_else(|| task_id(sacct.task_id));
        let task_string = self.array_task_string.non_empty().or(sacct.task.non_empty()).map(str::trim);
        let (id, array) = match (array_job_id, array_task, task_string) {
            (Some(a), Some(t), pending) => (
                format!("{a}_{t}"),
                Some(ArrayInfo {
                    array_id: a.to_string(),
                    task_id: Some(t),
                    pending_tasks: pending.map(str::to_string),
                }),
            ),
            (Some(a), None, Some(pending)) => (
                format!("{a}_[{pending}]"),
                Some(ArrayInfo { array_id: a.to_string(), task_id: None, pending_tasks: Some(pending.to_string()) }),
            ),
            _ => (job_id.to_string(), None),
        };

        // State.
        let sacct_state = &self.state.0;
        let states_list = if self.job_state.is_empty() { &sacct_state.current } else { &self.job_state };
        // A base state and a few flags: kept on the stack.
        let mut buf = [""; 8];
        let mut n = 0;
        for st in states_list.iter().take(buf.len()) {
            buf[n] = st;
            n += 1;
        }
        let states = &buf[..n];
        let native_state = states_list.joined();
        let reason = self
            .state_reason
            .non_empty()
            .or(sacct_state.reason.non_empty())
            .map(str::trim)
            .filter(|r| !r.eq_ignore_ascii_case("None"))
            .map(str::to_string);
        let state = job_state_with_reason(states, reason.as_deref(), self.hold.0);

        let mut job = Job::new(JobRef::new(cluster, id), state);
        job.native_state = native_state;
        job.reason = reason;
        job.array = array;

        // Nodes.
        job.nodes = expand_hostlist(self.nodes.as_str());
        job.node_count =
            self.node_count.as_u32().or_else(|| self.allocation_nodes.as_u32()).unwrap_or(job.nodes.len() as u32);

        // Resources.
        let sacct_tres = &self.tres.0;
        let (alloc_tally, alloc_cpus) = SacctTres::tally(&sacct_tres.allocated.0);
        let (req_tally, req_cpus) = SacctTres::tally(&sacct_tres.requested.0);
        let required = &self.required.0;
        job.cpus = self
            .cpus
            .as_u32()
            .or_else(|| alloc_cpus.filter(|c| *c > 0).map(clamp_u32))
            .or_else(|| required.cpus.as_u32())
            .or_else(|| req_cpus.map(clamp_u32))
            .unwrap_or(0);
        let per_node = non_zero(self.memory_per_node).or_else(|| non_zero(required.memory_per_node));
        let per_cpu = non_zero(self.memory_per_cpu).or_else(|| non_zero(required.memory_per_cpu));
        job.memory_mb = per_node.or_else(|| per_cpu.map(|m| m.saturating_mul(u64::from(job.cpus.max(1)))));

        // GPUs requested: per job, per node × nodes, per task × tasks, per socket × nodes,
        // then the TRES request string (any family's spelling).
        let nodes_for_request = u64::from(job.node_count.max(1));
        let tasks = self.tasks.as_u64().filter(|t| *t > 0).unwrap_or(1);
        let mut models: Vec<String> = Vec::new();
        let mut requested = 0u64;
        for (s, mult) in [
            (self.tres_per_job.as_str(), 1),
            (self.tres_per_node.as_str(), nodes_for_request),
            (self.tres_per_task.as_str(), tasks),
            (self.tres_per_socket.as_str(), nodes_for_request),
        ] {
            let r = gpu_request(s);
            if r.count > 0 && requested == 0 {
                requested = u64::from(r.count).saturating_mul(mult);
            }
            merge_models(&mut models, r.models);
        }
        let from_req = gpu_request(self.tres_req_str.as_str());
        if requested == 0 {
            requested = u64::from(from_req.count);
        }
        merge_models(&mut models, from_req.models);
        let sacct_req = req_tally.finish();
        if requested == 0 {
            requested = u64::from(sacct_req.count);
        }
        merge_models(&mut models, sacct_req.models);
        job.gpus_requested = clamp_u32(requested);

        // GPUs held: `gres_detail` zipped with the expanded node list.
        let mut held_models: Vec<String> = Vec::new();
        for (i, detail) in self.gres_detail.iter().enumerate() {
            let node = job.nodes.get(i).cloned().unwrap_or_default();
            for item in parse_gres(detail) {
                if item.count == 0 {
                    continue;
                }
                if let Some(m) = &item.model {
                    merge_models(&mut held_models, [m.clone()]);
                }
                job.gpus_allocated = job.gpus_allocated.saturating_add(item.count);
                job.gpu_allocations.push(GpuAllocation {
                    node: node.clone(),
                    model: item.model.as_deref().map(canonical_model),
                    count: item.count,
                    indices: item.indices,
                });
            }
        }
        if job.gpus_allocated == 0 && job.state.is_active() {
            let alloc = gpu_request(self.tres_alloc_str.as_str());
            let alloc = if alloc.count > 0 { alloc } else { alloc_tally.finish() };
            job.gpus_allocated = alloc.count;
            merge_models(&mut held_models, alloc.models);
        }
        let shown = if held_models.is_empty() { models } else { held_models };
        (job.gpu_model, job.gpu_product) = model_and_product(&shown);

        // Times.
        let time = &self.time.0;
        job.submit_time = self.submit_time.timestamp().or_else(|| time.submission.timestamp());
        job.start_time = self.start_time.timestamp().or_else(|| time.start.timestamp());
        job.end_time = self.end_time.timestamp().or_else(|| time.end.timestamp());
        super::states::drop_unsure_end(&mut job);
        let limit = if matches!(self.time_limit, Flex::Unset) { time.limit } else { self.time_limit };
        job.time_limit_secs = limit.as_u32().map(|m| u64::from(m) * 60);
        job.priority = self.priority.as_u64().filter(|p| *p < super::flex::NO_VAL);
        if job.state.is_finished() {
            job.exit = self.exit_code.to_exit();
        }

        // Who and where.
        job.name = self.name.into_string();
        job.user = self.user_name.non_empty().or(self.user.non_empty()).unwrap_or("").to_string();
        job.account = self.account.into_non_empty();
        job.partition = self.partition.into_string();
        job.workdir =
            self.current_working_directory.into_non_empty().or_else(|| self.working_directory.into_non_empty());
        // `sacct --json` has an object here (job, admin and system comments): read as unset.
        job.migrated_from = self.comment.non_empty().and_then(migrated_from_of).map(str::to_string);

        // Output files: 25.05+ expanded paths first, else the (possibly raw) pattern.
        let fields = PatternFields {
            job_id,
            array_job_id,
            array_task_id: array_task,
            name: &job.name,
            user: &job.user,
            first_node: job.nodes.first().map(String::as_str),
        };
        let workdir = job.workdir.as_deref();
        // A batch job without --output writes to sbatch's default, which 22.05 reports as
        // an empty string rather than the pattern.
        let default_pattern = match (self.batch_flag.0, array_task.is_some()) {
            (false, _) => None,
            (true, false) => Some("slurm-%j.out"),
            (true, true) => Some("slurm-%A_%a.out"),
        };
        let out_pattern = self.standard_output.non_empty().or(self.stdout.non_empty()).or(default_pattern);
        let err_pattern = self.standard_error.non_empty().or(self.stderr.non_empty());
        let stdout = self
            .stdout_expanded
            .non_empty()
            .map(str::to_string)
            .or_else(|| out_pattern.map(|p| output_path(p, &fields, workdir)));
        let stderr = self
            .stderr_expanded
            .non_empty()
            .map(str::to_string)
            .or_else(|| err_pattern.map(|p| output_path(p, &fields, workdir)))
            .or_else(|| stdout.clone());
        // Read only if the file is the job user's own (see `LogHandle::owner`).
        job.stdout = stdout.map(|p| LogHandle::owned_by(p, job.user.clone()));
        job.stderr = stderr.map(|p| LogHandle::owned_by(p, job.user.clone()));
        Some(job)
    }
}

/// Expand a pattern and make it absolute against the working directory.
fn output_path(pattern: &str, fields: &PatternFields<'_>, workdir: Option<&str>) -> String {
    let path = expand_stdout_pattern(pattern.trim(), fields);
    match workdir {
        Some(dir) if !path.starts_with('/') && !dir.is_empty() => {
            format!("{}/{}", dir.trim_end_matches('/'), path)
        }
        _ => path,
    }
}

fn merge_models(into: &mut Vec<String>, from: impl IntoIterator<Item = String>) {
    for m in from {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ExitStatus, JobState};

    fn job(json: &str) -> Option<Job> {
        serde_json::from_str::<JobRecord>(json).unwrap().into_job("hpc")
    }

    #[test]
    fn family_a_shape() {
        let j = job(r#"{
            "job_id": 42, "array_job_id": 0, "array_task_id": null, "job_state": "RUNNING",
            "state_reason": "None", "name": "train", "user_name": "alice", "account": "ml",
            "partition": "gpu", "nodes": "gpu[01-02]", "node_count": 2, "cpus": 8,
            "memory_per_node": 4096, "memory_per_cpu": null, "tres_per_node": "gres:gpu:a100:2",
            "gres_detail": ["gpu:a100:2(IDX:0-1)", "gpu:a100:2(IDX:2-3)"],
            "submit_time": 1700000000, "start_time": 1700000100, "end_time": 1700003700,
            "time_limit": 60, "priority": 4294, "exit_code": 0,
            "standard_output": "%x-%j.out", "current_working_directory": "/home/alice"
        }"#)
        .unwrap();
        assert_eq!(j.job_ref.id, "42");
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.reason, None);
        assert_eq!(j.nodes, vec!["gpu01", "gpu02"]);
        assert_eq!(j.gpus_requested, 4);
        assert_eq!(j.gpus_allocated, 4);
        assert_eq!(j.gpu_allocations[1].node, "gpu02");
        assert_eq!(j.gpu_allocations[1].indices, vec![2, 3]);
        assert_eq!(j.gpu_model.as_deref(), Some("a100"));
        assert_eq!(j.memory_mb, Some(4096));
        assert_eq!(j.time_limit_secs, Some(3600));
        assert_eq!(j.exit, None, "a running job has no exit status yet");
        assert_eq!(j.stdout.as_deref(), Some("/home/alice/train-42.out"));
        assert_eq!(j.stderr, j.stdout);
    }

    #[test]
    fn batch_jobs_without_output_use_sbatchs_default() {
        let j =
            job(r#"{"job_id": 42, "batch_flag": true, "standard_output": "", "current_working_directory": "/tmp"}"#)
                .unwrap();
        assert_eq!(j.stdout.as_deref(), Some("/tmp/slurm-42.out"));
        let t = job(r#"{"job_id": 15, "array_job_id": 12, "array_task_id": 3, "batch_flag": true,
                        "current_working_directory": "/w"}"#)
        .unwrap();
        assert_eq!(t.stdout.as_deref(), Some("/w/slurm-12_3.out"));
        let interactive = job(r#"{"job_id": 7, "batch_flag": false, "standard_output": ""}"#).unwrap();
        assert_eq!(interactive.stdout, None);
    }

    #[test]
    fn array_ids() {
        let task = job(r#"{"job_id": 15, "array_job_id": 12, "array_task_id": 3, "job_state": "RUNNING"}"#).unwrap();
        assert_eq!(task.job_ref.id, "12_3");
        assert_eq!(task.array.as_ref().unwrap().task_id, Some(3));
        let parent = job(r#"{"job_id": 12, "array_job_id": 12, "array_task_id": 4294967294,
                             "array_task_string": "2-5%2", "job_state": "PENDING"}"#)
        .unwrap();
        assert_eq!(parent.job_ref.id, "12_[2-5%2]");
        assert_eq!(parent.array.as_ref().unwrap().pending_tasks.as_deref(), Some("2-5%2"));
        assert_eq!(parent.array.as_ref().unwrap().task_id, None);
        let plain = job(r#"{"job_id": 9, "array_job_id": {"set": true, "infinite": false, "number": 0},
                            "array_task_id": {"set": false, "infinite": false, "number": 0}}"#)
        .unwrap();
        assert_eq!(plain.job_ref.id, "9");
        assert!(plain.array.is_none());
    }

    #[test]
    fn exit_only_for_finished_jobs_and_held_pending() {
        let j = job(r#"{"job_id": 1, "job_state": "FAILED", "exit_code": 768}"#).unwrap();
        assert_eq!(j.exit, Some(ExitStatus { code: 3, signal: None }));
        let j = job(r#"{"job_id": 1, "job_state": "PENDING", "state_reason": "JobHeldUser"}"#).unwrap();
        assert_eq!(j.state, JobState::Held);
        assert_eq!(j.reason.as_deref(), Some("JobHeldUser"));
    }

    #[test]
    fn gpu_requests_per_task_and_per_job() {
        let j = job(r#"{"job_id": 1, "job_state": ["PENDING"], "tasks": 2, "tres_per_task": "gres/gpu=2"}"#).unwrap();
        assert_eq!(j.gpus_requested, 4);
        let j = job(r#"{"job_id": 1, "tres_per_job": "gres/gpu:h100:1"}"#).unwrap();
        assert_eq!((j.gpus_requested, j.gpu_model.as_deref()), (1, Some("h100")));
        let j = job(r#"{"job_id": 1, "tres_req_str": "cpu=1,gres/gpu=3,gres/gpu:a100=3"}"#).unwrap();
        assert_eq!((j.gpus_requested, j.gpu_model.as_deref()), (3, Some("a100")));
    }

    #[test]
    fn gpu_types_become_canonical_models_and_stay_as_the_product() {
        let j = job(r#"{"job_id": 1, "job_state": ["RUNNING"], "nodes": "g1", "tres_per_node": "gres/gpu:nvidia_a100-sxm4-80gb:2",
            "gres_detail": ["gpu:nvidia_a100-sxm4-80gb:2(IDX:0-1)"]}"#)
        .unwrap();
        assert_eq!(j.gpu_model.as_deref(), Some("a100-80gb"));
        assert_eq!(j.gpu_product.as_deref(), Some("nvidia_a100-sxm4-80gb"));
        assert_eq!(j.gpu_allocations[0].model.as_deref(), Some("a100-80gb"));
        let j = job(r#"{"job_id": 1, "tres_per_job": "gres/gpu:h100:1"}"#).unwrap();
        assert_eq!((j.gpu_model.as_deref(), j.gpu_product.as_deref()), (Some("h100"), Some("h100")));
        let j = job(r#"{"job_id": 1, "tres_per_job": "gres/gpu=1"}"#).unwrap();
        assert_eq!((j.gpu_model, j.gpu_product), (None, None));
    }

    #[test]
    fn migrated_from_is_read_from_flightdecks_comment_tag() {
        let j = job(r#"{"job_id": 1, "comment": "flightdeck-migrated-from=hpc/12"}"#).unwrap();
        assert_eq!(j.migrated_from.as_deref(), Some("hpc/12"));
        for other in [r#""comment": "nightly run""#, r#""comment": """#, r#""comment": {"job": "x"}"#] {
            let j = job(&format!(r#"{{"job_id": 1, {other}}}"#)).unwrap();
            assert_eq!(j.migrated_from, None, "{other}");
        }
    }

    #[test]
    fn records_without_an_id_are_dropped() {
        assert!(job(r#"{"name": "x"}"#).is_none());
        assert!(job(r#"{"job_id": "abc"}"#).is_none());
    }

    #[test]
    fn wrong_types_degrade_field_by_field() {
        let j = job(r#"{"job_id": 7, "name": {"a": 1}, "partition": 5, "nodes": [1, 2], "cpus": "many",
                        "job_state": 3, "gres_detail": "x", "time_limit": true, "exit_code": [1]}"#)
        .unwrap();
        assert_eq!(j.job_ref.id, "7");
        assert_eq!(j.name, "");
        assert_eq!(j.partition, "5");
        assert!(j.nodes.is_empty());
        assert_eq!(j.cpus, 0);
        assert_eq!(j.state, JobState::Unknown);
        assert_eq!(j.time_limit_secs, None);
    }
}
