//! `JobSpec` → a `batch/v1` Job.
//!
//! * one container `main` running the image (required) with `sh -c COMMAND`, or a script
//!   under the interpreter its `#!` line names (`/bin/sh` without one);
//! * GPUs as limits (`nvidia.com/gpu`, a MIG profile's `nvidia.com/mig-…`, or whatever
//!   resource the GPU type resolved to), CPUs as a request, memory as request and limit;
//! * the time limit as `activeDeadlineSeconds`; `restartPolicy: Never`, `backoffLimit: 0`
//!   (a failed run fails the job, as on a batch scheduler);
//! * a job array whose indices are `0..N` (`0-99%10`): an Indexed Job of N completions, the
//!   `%` limit as `parallelism`; any other array is refused by name;
//! * several nodes are refused by name: a plain Job gives no gang scheduling (all pods or
//!   none), which a multi-node job needs;
//! * with a Kueue LocalQueue: the `kueue.x-k8s.io/queue-name` label and `suspend: true`,
//!   which Kueue lifts on admission;
//! * annotations that let the Job be read back as the same spec ([`super::dialect`]): the
//!   spec's name as written, the random suffix added to it, the job it was migrated from.

use k8s_openapi::api::batch::v1::Job as KJob;
use serde_json::{Map, Value, json};

use super::kueue::QUEUE_LABEL;
use super::map::{MIGRATED_FROM, NAME, NAME_SUFFIX, SUBMITTED_BY};
use crate::backend::BackendError;
use crate::spec::{JobSpec, parse_array};

/// Where a job's GPUs come from, as resolved against the cluster's nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPlacement {
    /// The resource the limits name (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, `amd.com/gpu`).
    pub resource: String,
    /// A node label and the values it may take (`nvidia.com/gpu.product` ∈ {…}).
    pub node_label: Option<(String, Vec<String>)>,
}

impl GpuPlacement {
    pub fn any_nvidia() -> Self {
        Self { resource: super::gpu::NVIDIA_GPU.into(), node_label: None }
    }
}

/// Everything about a submission that does not come from the spec itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Empty: the manifest names no namespace (kubectl then uses its context's).
    pub namespace: String,
    /// Kueue LocalQueue, when the job goes through Kueue.
    pub queue: Option<String>,
    pub gpus: GpuPlacement,
    /// Who submits (recorded as an annotation).
    pub user: String,
    /// Appended to the name so that the same spec can be submitted twice (recorded as an
    /// annotation, so that reading the Job back can take it off again).
    pub suffix: String,
}

/// A built Job and what of the spec it could not carry as asked, one sentence per field.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub job: KJob,
    pub warnings: Vec<String>,
}

/// A MIG profile as written in a GPU type (`1g.10gb`, `3g.40gb`, `1c.2g.20gb`).
pub fn is_mig_profile(gpu_type: &str) -> bool {
    let t = gpu_type.to_ascii_lowercase();
    let parts: Vec<&str> = t.split('.').collect();
    parts.len() >= 2
        && parts.last().is_some_and(|m| m.ends_with("gb") && m[..m.len() - 2].chars().all(|c| c.is_ascii_digit()))
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| p.len() >= 2 && p[..p.len() - 1].chars().all(|c| c.is_ascii_digit()) && p.ends_with(['g', 'c']))
}

/// A DNS-1123 label made from a job name: lower case, `[a-z0-9-]`, at most `max` characters,
/// starting and ending with a letter or digit; `job` when nothing usable is left.
pub fn dns_label(name: &str, max: usize) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.trim_matches('-').chars().take(max).collect();
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() { "job".into() } else { out }
}

/// The command line of the container: `sh -c COMMAND`, or the script under its interpreter.
pub fn container_command(spec: &JobSpec) -> Vec<String> {
    if let Some(command) = &spec.command {
        return vec!["/bin/sh".into(), "-c".into(), command.clone()];
    }
    let script = spec.script.clone().unwrap_or_default();
    let mut argv = shebang_words(&script).unwrap_or_else(|| vec!["/bin/sh".into()]);
    argv.push("-c".into());
    argv.push(script);
    argv
}

/// `text` written so that Kubernetes passes it on as it is. The kubelet expands `$(NAME)` in
/// a container's command, args and env values (to the value of the variable NAME) and turns
/// `$$` into `$`, so a shell's own `$(date)` or `$$` would change on the way; doubling each
/// `$` that precedes `$` or `(` undoes exactly that ([`super::dialect`] reads it back).
pub fn escape_expansion(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("$$") && !text.contains("$(") {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '$' && matches!(chars.peek(), Some('$' | '(')) {
            out.push('$');
        }
    }
    out.into()
}

/// The words of a script's `#!` line (`["/usr/bin/env", "python3"]`); `None` without one.
pub fn shebang_words(script: &str) -> Option<Vec<String>> {
    let words: Vec<String> =
        script.lines().next()?.strip_prefix("#!")?.split_whitespace().map(str::to_string).collect();
    (!words.is_empty()).then_some(words)
}

/// `completions` and `parallelism` of the Indexed Job for a job array, or why there is none.
fn indexed(array: &str) -> Result<(u32, u32), String> {
    let parsed = parse_array(array).map_err(|why| format!("`array`: {why}"))?;
    let Some(count) = parsed.dense_from_zero() else {
        return Err(format!(
            "`array`: {array:?} is not the indices 0 to N-1 in order, the only kind a Kubernetes Indexed Job runs (for {} tasks: \"0-{}\")",
            parsed.count(),
            parsed.count().saturating_sub(1)
        ));
    };
    Ok((count, parsed.max_running.map_or(count, |limit| limit.min(count))))
}

/// The most pods an Indexed Job may run at once: the API server refuses more than 100,000,
/// and more than 10,000 when it has over 100,000 indices.
pub fn max_indexed_parallelism(count: u32) -> u32 {
    if count > 100_000 { 10_000 } else { 100_000 }
}

/// Build the Job. The spec must be valid ([`JobSpec::validate`]); the image is required.
pub fn job_manifest(spec: &JobSpec, target: &Target) -> Result<Manifest, BackendError> {
    spec.refuse_managed("Kubernetes").map_err(BackendError::InvalidSpec)?;
    let mut warnings = Vec::new();
    let nodes = spec.nodes.unwrap_or(1).max(1);
    if nodes > 1 {
        return Err(BackendError::InvalidSpec(format!(
            "`nodes`: {nodes} nodes need gang scheduling (every pod placed or none), which a plain Kubernetes Job does not give; set `nodes = 1`"
        )));
    }
    let mut array = spec.array.as_deref().map(indexed).transpose().map_err(BackendError::InvalidSpec)?;
    if let Some((count, parallel)) = &mut array
        && *parallel > max_indexed_parallelism(*count)
    {
        *parallel = max_indexed_parallelism(*count);
        warnings.push(format!(
            "`array`: an Indexed Job of {} runs at most {parallel} at once (the API server's limit)",
            crate::model::words::counted(*count, "pod", "pods")
        ));
    }
    if let Some((count, parallel)) = array {
        warnings.push(format!(
            "`array`: an Indexed Job of {}, {parallel} at a time; each reads its index from JOB_COMPLETION_INDEX (not SLURM_ARRAY_TASK_ID)",
            crate::model::words::counted(count, "pod", "pods")
        ));
    }
    warnings.extend(super::slurm_lines::warnings(spec));
    if let Some(tasks) = spec.tasks_per_node.filter(|t| *t > 1) {
        warnings.push(format!(
            "`tasks_per_node`: a pod runs one process, the command; it must start the {tasks} tasks itself (torchrun --nproc-per-node {tasks}, mpirun -n {tasks})"
        ));
    }
    let Some(image) = spec.image.as_deref().filter(|i| !i.trim().is_empty()) else {
        return Err(BackendError::InvalidSpec(
            "`image`: a Kubernetes job runs in a container; set `image` (for example \"nvcr.io/nvidia/pytorch:24.01-py3\")"
                .into(),
        ));
    };
    // Enroot/pyxis write `registry#image`; a container runtime wants `registry/image`.
    let image = image.replacen('#', "/", 1);
    let base = dns_label(&spec.name, 63 - 1 - target.suffix.len());
    let name = if target.suffix.is_empty() { base } else { format!("{base}-{}", target.suffix) };

    let mut limits = Map::new();
    let mut requests = Map::new();
    if spec.gpus > 0 {
        limits.insert(target.gpus.resource.clone(), json!(spec.gpus.to_string()));
    }
    if let Some(cpus) = spec.cpus {
        requests.insert("cpu".into(), json!(cpus.to_string()));
    }
    if let Some(mb) = spec.memory_mb() {
        requests.insert("memory".into(), json!(format!("{mb}Mi")));
        limits.insert("memory".into(), json!(format!("{mb}Mi")));
    }
    let mut container = json!({
        "name": "main",
        "image": image,
        "command": container_command(spec).iter().map(|arg| escape_expansion(arg)).collect::<Vec<_>>(),
        "resources": {},
    });
    if !limits.is_empty() {
        container["resources"]["limits"] = Value::Object(limits);
    }
    if !requests.is_empty() {
        container["resources"]["requests"] = Value::Object(requests);
    }
    if !spec.env.is_empty() {
        container["env"] = spec.env.iter().map(|(k, v)| json!({"name": k, "value": escape_expansion(v)})).collect();
    }
    if let Some(dir) = &spec.workdir {
        container["workingDir"] = json!(dir);
    }

    let mut pod_spec = json!({"restartPolicy": "Never", "containers": [container]});
    if let Some((label, values)) = &target.gpus.node_label {
        if let [only] = values.as_slice() {
            pod_spec["nodeSelector"] = json!({ label: only });
        } else {
            pod_spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": label, "operator": "In", "values": values}]}]}}});
        }
    }

    let mut labels = Map::new();
    labels.insert("app.kubernetes.io/managed-by".into(), json!("flightdeck"));
    if let Some(q) = &target.queue {
        labels.insert(QUEUE_LABEL.into(), json!(q));
    }
    let mut annotations = Map::new();
    if !target.user.is_empty() {
        annotations.insert(SUBMITTED_BY.into(), json!(target.user));
    }
    annotations.insert(NAME.into(), json!(spec.name));
    if !target.suffix.is_empty() {
        annotations.insert(NAME_SUFFIX.into(), json!(target.suffix));
    }
    if let Some(origin) = &spec.migrated_from {
        annotations.insert(MIGRATED_FROM.into(), json!(origin));
    }

    let mut job_spec = json!({
        "backoffLimit": 0,
        "template": {"metadata": {"labels": Value::Object(labels.clone())}, "spec": pod_spec},
    });
    if let Some((count, parallel)) = array {
        job_spec["completionMode"] = json!("Indexed");
        job_spec["completions"] = json!(count);
        job_spec["parallelism"] = json!(parallel);
    }
    if let Some(secs) = spec.time_limit_secs() {
        job_spec["activeDeadlineSeconds"] = json!(secs);
    }
    if target.queue.is_some() {
        job_spec["suspend"] = json!(true);
    }
    let mut metadata = json!({"name": name, "labels": labels, "annotations": annotations});
    if !target.namespace.is_empty() {
        metadata["namespace"] = json!(target.namespace);
    }
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": job_spec});
    let job = serde_json::from_value(job)
        .map_err(|e| BackendError::InvalidSpec(format!("cannot build the Job manifest: {e}")))?;
    Ok(Manifest { job, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(queue: Option<&str>) -> Target {
        Target {
            namespace: "ml".into(),
            queue: queue.map(str::to_string),
            gpus: GpuPlacement::any_nvidia(),
            user: "alice".into(),
            suffix: "abc12".into(),
        }
    }

    fn spec() -> JobSpec {
        JobSpec {
            name: "Train LLM!".into(),
            command: Some("python train.py --epochs 3 && echo 'done'".into()),
            gpus: 4,
            cpus: Some(16),
            memory: Some("64G".into()),
            time_limit: Some("2h".into()),
            image: Some("nvcr.io#nvidia/pytorch:24.01-py3".into()),
            workdir: Some("/work".into()),
            env: [("WANDB_MODE".to_string(), "offline".to_string())].into(),
            ..JobSpec::default()
        }
    }

    #[test]
    fn managed_is_refused_by_name() {
        let err = job_manifest(&JobSpec { managed: true, ..spec() }, &target(None)).unwrap_err().to_string();
        assert!(err.contains("`managed`: Kubernetes has no managed jobs"), "{err}");
    }

    #[test]
    fn the_manifest_matches_the_spec() {
        let job = job_manifest(&spec(), &target(None)).unwrap().job;
        let v = serde_json::to_value(&job).unwrap();
        assert_eq!(v["metadata"]["name"], "train-llm-abc12");
        assert_eq!(v["metadata"]["namespace"], "ml");
        assert_eq!(v["metadata"]["annotations"][SUBMITTED_BY], "alice");
        assert_eq!(v["metadata"]["annotations"]["flightdeck.io/name"], "Train LLM!");
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 7200);
        assert_eq!(v["spec"]["backoffLimit"], 0);
        assert!(v["spec"].get("suspend").is_none());
        assert!(v["metadata"]["labels"].get(QUEUE_LABEL).is_none());
        let pod = &v["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "nvcr.io/nvidia/pytorch:24.01-py3");
        assert_eq!(c["command"], json!(["/bin/sh", "-c", "python train.py --epochs 3 && echo 'done'"]));
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "4");
        assert_eq!(c["resources"]["limits"]["memory"], "65536Mi");
        assert_eq!(c["resources"]["requests"]["cpu"], "16");
        assert_eq!(c["resources"]["requests"]["memory"], "65536Mi");
        assert_eq!(c["env"], json!([{"name": "WANDB_MODE", "value": "offline"}]));
        assert_eq!(c["workingDir"], "/work");
        // The GPU arithmetic reads the manifest back as 4 GPUs per pod.
        let pod: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(json!({"spec": v["spec"]["template"]["spec"].clone()})).unwrap();
        assert_eq!(super::super::gpu::pod_demand(&pod).gpus(), 4);
    }

    #[test]
    fn kueue_queue_label_and_suspend() {
        let v = serde_json::to_value(job_manifest(&spec(), &target(Some("team-a"))).unwrap().job).unwrap();
        assert_eq!(v["metadata"]["labels"][QUEUE_LABEL], "team-a");
        assert_eq!(v["spec"]["template"]["metadata"]["labels"][QUEUE_LABEL], "team-a");
        assert_eq!(v["spec"]["suspend"], true);
    }

    #[test]
    fn image_is_required() {
        let mut s = spec();
        s.image = None;
        let err = job_manifest(&s, &target(None)).unwrap_err();
        assert!(matches!(err, BackendError::InvalidSpec(_)));
        assert!(err.to_string().contains("`image`"), "{err}");
    }

    #[test]
    fn gpu_placement_mig_and_models() {
        let mut t = target(None);
        t.gpus = GpuPlacement { resource: "nvidia.com/mig-1g.10gb".into(), node_label: None };
        let v = serde_json::to_value(job_manifest(&spec(), &t).unwrap().job).unwrap();
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"],
            "4"
        );
        t.gpus = GpuPlacement {
            resource: "nvidia.com/gpu".into(),
            node_label: Some(("nvidia.com/gpu.product".into(), vec!["NVIDIA-H100-80GB-HBM3".into()])),
        };
        let v = serde_json::to_value(job_manifest(&spec(), &t).unwrap().job).unwrap();
        assert_eq!(v["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
        t.gpus.node_label = Some(("nvidia.com/gpu.product".into(), vec!["A".into(), "B".into()]));
        let v = serde_json::to_value(job_manifest(&spec(), &t).unwrap().job).unwrap();
        let expr = &v["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0];
        assert_eq!(expr["values"], json!(["A", "B"]));
        assert!(is_mig_profile("1g.10gb") && is_mig_profile("3g.40gb") && is_mig_profile("1c.2g.20gb"));
        assert!(!is_mig_profile("a100") && !is_mig_profile("h100.80gb") && !is_mig_profile("1g"));
    }

    #[test]
    fn scripts_and_names() {
        let mut s = spec();
        s.command = None;
        s.script = Some("#!/usr/bin/env python3\nprint('hi')\n".into());
        s.time_limit = None;
        let v = serde_json::to_value(job_manifest(&s, &target(None)).unwrap().job).unwrap();
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0]["command"],
            json!(["/usr/bin/env", "python3", "-c", "#!/usr/bin/env python3\nprint('hi')\n"])
        );
        assert!(v["spec"].get("completionMode").is_none() && v["spec"].get("parallelism").is_none());
        assert!(v["spec"].get("activeDeadlineSeconds").is_none());
        s.script = Some("echo plain".into());
        assert_eq!(container_command(&s), vec!["/bin/sh", "-c", "echo plain"]);
        s.script = Some("#!\necho".into());
        assert_eq!(container_command(&s), vec!["/bin/sh", "-c", "#!\necho"]);
        assert_eq!(shebang_words("#! /bin/bash -e\nx"), Some(vec!["/bin/bash".to_string(), "-e".to_string()]));
        assert_eq!(shebang_words("echo"), None);

        assert_eq!(dns_label("My_Job.v2", 63), "my-job-v2");
        assert_eq!(dns_label("---", 63), "job");
        assert_eq!(dns_label("ünïcode", 63), "n-code");
        assert_eq!(dns_label(&"a".repeat(100), 57).len(), 57);
        assert_eq!(dns_label("abc-def", 4), "abc");
    }

    #[test]
    fn shell_dollars_survive_the_kubelet() {
        assert_eq!(escape_expansion("echo $HOME"), "echo $HOME");
        assert_eq!(escape_expansion("echo $$ $(date) $"), "echo $$$ $$(date) $");
        let s = JobSpec {
            command: Some("kill -0 $$ && echo $(hostname)".into()),
            env: [("A".to_string(), "$(B)".to_string())].into(),
            ..spec()
        };
        let v = serde_json::to_value(job_manifest(&s, &target(None)).unwrap().job).unwrap();
        let c = &v["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"][2], "kill -0 $$$ && echo $$(hostname)");
        assert_eq!(c["env"][0]["value"], "$$(B)");
    }

    #[test]
    fn several_nodes_are_refused_by_name() {
        let err = job_manifest(&JobSpec { nodes: Some(2), ..spec() }, &target(None)).unwrap_err();
        assert!(matches!(err, BackendError::InvalidSpec(_)));
        assert!(err.to_string().contains("`nodes`: 2 nodes need gang scheduling"), "{err}");
        job_manifest(&JobSpec { nodes: Some(1), ..spec() }, &target(None)).unwrap();
    }

    #[test]
    fn arrays_from_zero_are_indexed_jobs() {
        let built = job_manifest(&JobSpec { array: Some("0-99%10".into()), ..spec() }, &target(None)).unwrap();
        let v = serde_json::to_value(&built.job).unwrap();
        assert_eq!(
            (&v["spec"]["completionMode"], &v["spec"]["completions"], &v["spec"]["parallelism"]),
            (&json!("Indexed"), &json!(100), &json!(10))
        );
        assert!(built.warnings.iter().any(|w| w.starts_with("`array`: an Indexed Job of 100 pods, 10 at a time")));
        let v = serde_json::to_value(
            job_manifest(&JobSpec { array: Some("0-3".into()), ..spec() }, &target(None)).unwrap().job,
        )
        .unwrap();
        assert_eq!((&v["spec"]["completions"], &v["spec"]["parallelism"]), (&json!(4), &json!(4)));
        // A limit above the count runs them all at once.
        let v = serde_json::to_value(
            job_manifest(&JobSpec { array: Some("0-3%9".into()), ..spec() }, &target(None)).unwrap().job,
        )
        .unwrap();
        assert_eq!(v["spec"]["parallelism"], json!(4));
        for other in ["1-10", "0,2,4", "0-20:2", "0-4,5-9"] {
            let err = job_manifest(&JobSpec { array: Some(other.into()), ..spec() }, &target(None)).unwrap_err();
            assert!(
                matches!(err, BackendError::InvalidSpec(_)) && err.to_string().contains("`array`"),
                "{other}: {err}"
            );
        }
        let big = job_manifest(&JobSpec { array: Some("0-199999".into()), ..spec() }, &target(None)).unwrap();
        assert_eq!(serde_json::to_value(&big.job).unwrap()["spec"]["parallelism"], json!(10_000));
        assert!(big.warnings.iter().any(|w| w.contains("runs at most 10000 at once")), "{:?}", big.warnings);
        let err = job_manifest(&JobSpec { array: Some("1,3".into()), ..spec() }, &target(None)).unwrap_err();
        assert!(err.to_string().contains("(for 2 tasks: \"0-1\")"), "{err}");
    }

    #[test]
    fn tasks_per_node_migration_and_suffix() {
        let s = JobSpec { tasks_per_node: Some(8), migrated_from: Some("hpc/123".into()), ..spec() };
        let built = job_manifest(&s, &target(None)).unwrap();
        assert!(
            built.warnings.iter().any(|w| w.starts_with("`tasks_per_node`: ") && w.contains("8 tasks")),
            "{:?}",
            built.warnings
        );
        let v = serde_json::to_value(&built.job).unwrap();
        assert_eq!(v["metadata"]["annotations"][MIGRATED_FROM], "hpc/123");
        assert_eq!(v["metadata"]["annotations"][NAME_SUFFIX], "abc12");
        let one = job_manifest(&JobSpec { tasks_per_node: Some(1), ..spec() }, &target(None)).unwrap();
        assert!(one.warnings.is_empty(), "{:?}", one.warnings);
        // No suffix, no namespace: neither is written.
        let mut t = target(None);
        t.suffix.clear();
        t.namespace.clear();
        let v = serde_json::to_value(job_manifest(&spec(), &t).unwrap().job).unwrap();
        assert_eq!(v["metadata"]["name"], "train-llm");
        assert!(v["metadata"].get("namespace").is_none());
        assert!(v["metadata"]["annotations"].get(NAME_SUFFIX).is_none());
        assert!(v["metadata"]["annotations"].get(MIGRATED_FROM).is_none());
    }
}
