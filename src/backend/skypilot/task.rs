//! `JobSpec` → a SkyPilot task YAML, and where it goes.
//!
//! * `resources.accelerators: MODEL:N` (SkyPilot's upper-case names: `h100` → `H100`,
//!   `a100-80gb` → `A100-80GB`), `cpus`, `memory` (GB), `image_id: docker:IMAGE`;
//! * `num_nodes`, `envs`, `run` (the command or the whole script);
//! * `workdir` only when it is a directory here: SkyPilot syncs a local workdir up, and a
//!   path that exists only on the cluster would make the launch fail (an offline export,
//!   launched later from elsewhere, keeps it and says so: [`Workdir::Keep`]);
//! * `migrated_from` as the environment variable [`MIGRATED_FROM_ENV`]: SkyPilot 0.14.1 gives
//!   a task's `envs` back, verbatim, in the managed job's `user_yaml` and in the cluster's
//!   `last_creation_yaml`, and puts no limit on its characters (a cloud label would be
//!   refused by GCP and Kubernetes for the `/` of `hpc/123`);
//! * no job arrays (`array` is refused by name); `run` starts once per node, so
//!   `tasks_per_node` above one is a warning;
//! * where: the spec's `partition` is the queue, as everywhere in flightdeck. SkyPilot's
//!   queues are its clusters and the managed-jobs controller, so `partition =
//!   "managed-jobs"` launches a managed job, another name launches on (or creates) that
//!   cluster, and none creates a cluster named after the job (`fd-NAME-xxxxx`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::map::MANAGED_QUEUE;
use crate::backend::BackendError;
use crate::spec::JobSpec;

/// The environment variable that carries `migrated_from` (`hpc/123`) in a task.
pub const MIGRATED_FROM_ENV: &str = "FLIGHTDECK_MIGRATED_FROM";

/// What to do with a `workdir` that is no directory on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workdir {
    /// Leave it out with a warning: this machine launches now, and SkyPilot would fail to
    /// upload a directory that is not here.
    LocalOnly,
    /// Keep it with a warning: the task is written to a file and launched later, perhaps
    /// from where the directory is.
    Keep,
}

/// Where a task is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// `POST /launch` on this cluster (made if it does not exist).
    Cluster(String),
    /// `POST /jobs/launch` under this name.
    Managed(String),
}

/// A task ready to send, and what of the spec it could not carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub yaml: String,
    pub placement: Placement,
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
struct Yaml<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    workdir: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_nodes: Option<u32>,
    #[serde(skip_serializing_if = "Resources::is_empty")]
    resources: Resources,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    envs: BTreeMap<&'a str, &'a str>,
    run: &'a str,
}

#[derive(Serialize, Default)]
struct Resources {
    #[serde(skip_serializing_if = "Option::is_none")]
    accelerators: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_id: Option<String>,
}

impl Resources {
    fn is_empty(&self) -> bool {
        self.accelerators.is_none() && self.cpus.is_none() && self.memory.is_none() && self.image_id.is_none()
    }
}

/// MiB as SkyPilot's GB, exactly: `64` for 65536, `0.48828125` for 500 (a MiB count over
/// 1024 always has a finite decimal form, so reading it back gives the same MiB).
pub fn gb_text(mb: u64) -> String {
    let (whole, rest) = (mb / 1024, mb % 1024);
    if rest == 0 {
        return whole.to_string();
    }
    // rest / 1024 = rest × 5¹⁰ / 10¹⁰.
    let fraction = format!("{:010}", rest * 9_765_625);
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// SkyPilot's name for a GPU model: the canonical model upper-cased (`a100-80gb` → `A100-80GB`).
pub fn accelerator_name(gpu_type: &str) -> String {
    gpu_type.trim().to_ascii_uppercase()
}

/// Whether SkyPilot takes `name` as a task name (`[a-zA-Z0-9]+(?:[._-]{1,2}[a-zA-Z0-9]+)*`:
/// ASCII letters and digits, runs of at most two of `.`, `_`, `-` between them).
pub fn is_task_name(name: &str) -> bool {
    let mut separators = 0;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            separators = 0;
        } else if matches!(c, '.' | '_' | '-') {
            separators += 1;
            if separators > 2 {
                return false;
            }
        } else {
            return false;
        }
    }
    name.starts_with(|c: char| c.is_ascii_alphanumeric()) && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// `name` as a SkyPilot task name: unchanged when it is one, else every run of other
/// characters made one `-` (`train llm!` → `train-llm`); `task` when nothing is left.
pub fn task_name(name: &str) -> String {
    if is_task_name(name) {
        return name.to_string();
    }
    let mut out = String::new();
    let mut run = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if !out.is_empty() && !run.is_empty() {
                let kept = run.chars().all(|r| matches!(r, '.' | '_' | '-')) && run.len() <= 2;
                out.push_str(if kept { &run } else { "-" });
            }
            run.clear();
            out.push(c);
        } else {
            run.push(c);
        }
    }
    if out.is_empty() { "task".to_string() } else { out }
}

/// A SkyPilot cluster name: a letter first, then letters, digits, `-`, `_`, `.`, ending in a
/// letter or digit.
pub fn check_cluster_name(name: &str) -> Result<(), String> {
    let ok_inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > 63 {
        return Err(format!("{name:?} is no SkyPilot cluster name (1 to 63 characters)"));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic())
        || !name.ends_with(|c: char| c.is_ascii_alphanumeric())
        || !name.chars().all(ok_inner)
    {
        return Err(format!(
            "{name:?} is no SkyPilot cluster name (a letter first, then letters, digits, `-`, `_`, `.`, ending in a letter or digit)"
        ));
    }
    Ok(())
}

/// The cluster a job without a named one is launched on: `fd-` + the job name made a
/// cluster name + `-` + `suffix`.
pub fn generated_cluster(job_name: &str, suffix: &str) -> String {
    let mut base: String = job_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    base.truncate(40);
    let base = base.trim_end_matches('-');
    if base.is_empty() { format!("fd-{suffix}") } else { format!("fd-{base}-{suffix}") }
}

/// The task for `spec`; `suffix` names a generated cluster (random at submit, `xxxxx` in a
/// preview).
pub fn task(spec: &JobSpec, suffix: &str) -> Result<Task, BackendError> {
    task_with(spec, suffix, Workdir::LocalOnly)
}

/// [`task`], choosing what happens to a `workdir` that is not here.
pub fn task_with(spec: &JobSpec, suffix: &str, workdir: Workdir) -> Result<Task, BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    spec.refuse_multi_node("SkyPilot").map_err(BackendError::InvalidSpec)?;
    if let Some(array) = &spec.array {
        return Err(BackendError::InvalidSpec(format!(
            "`array`: SkyPilot has no job arrays; submit {array:?} as separate jobs, or loop over the indices in one task"
        )));
    }
    if spec.env.contains_key(MIGRATED_FROM_ENV) {
        return Err(BackendError::InvalidSpec(format!(
            "`env.{MIGRATED_FROM_ENV}`: flightdeck keeps `migrated_from` in this variable; set `migrated_from` instead"
        )));
    }
    let mut warnings = Vec::new();
    let name = task_name(&spec.name);
    if name != spec.name {
        warnings.push(format!(
            "`name`: SkyPilot task names are ASCII letters and digits with `.`, `_` or `-` between them; {:?} is written {name}",
            spec.name
        ));
    }
    let run = spec
        .command
        .as_deref()
        .or(spec.script.as_deref())
        .ok_or_else(|| BackendError::InvalidSpec("a SkyPilot task needs `command` or `script`".into()))?;

    let mut resources = Resources::default();
    if spec.gpus > 0 {
        let Some(model) = spec.gpu_type.as_deref() else {
            return Err(BackendError::InvalidSpec(
                "`gpu_type`: SkyPilot asks a cloud for a GPU model by name (h100, a100-80gb, l4 …); set one".into(),
            ));
        };
        resources.accelerators = Some(format!("{}:{}", accelerator_name(model), spec.gpus));
    }
    resources.cpus = spec.cpus.map(|c| c.to_string());
    resources.memory = spec.memory_mb().map(gb_text);
    resources.image_id = spec.image.as_deref().map(|i| format!("docker:{i}"));

    let workdir = match (spec.workdir.as_deref(), workdir) {
        (Some(dir), _) if Path::new(dir).is_dir() => Some(dir),
        (Some(dir), Workdir::Keep) => {
            warnings.push(format!(
                "`workdir`: SkyPilot uploads {dir:?} from the machine that launches the task; it is no directory here, so launch from where it is"
            ));
            Some(dir)
        }
        (Some(dir), Workdir::LocalOnly) => {
            warnings.push(format!(
                "`workdir`: {dir:?} is no directory here; left out (SkyPilot uploads a local workdir, it cannot use a path on the cluster)"
            ));
            None
        }
        (None, _) => None,
    };
    if let Some(n) = spec.tasks_per_node.filter(|n| *n > 1) {
        warnings.push(format!(
            "`tasks_per_node`: SkyPilot runs `run` once per node; start the {n} tasks per node from the script"
        ));
    }
    if spec.time_limit.is_some() {
        warnings.push("`time_limit`: a SkyPilot task has no time limit; ignored".into());
    }
    if spec.account.is_some() {
        warnings.push("`account`: SkyPilot has no accounts; ignored".into());
    }

    let placement = match spec.partition.as_deref() {
        Some(MANAGED_QUEUE) => Placement::Managed(name.clone()),
        None if spec.managed => Placement::Managed(name.clone()),
        Some(cluster) if spec.managed => {
            return Err(BackendError::InvalidSpec(format!(
                "`managed`: a managed job picks its own cluster; leave `partition` ({cluster}) empty or set it to {MANAGED_QUEUE}"
            )));
        }
        Some(cluster) => {
            check_cluster_name(cluster).map_err(|why| BackendError::InvalidSpec(format!("`partition`: {why}")))?;
            Placement::Cluster(cluster.to_string())
        }
        None => Placement::Cluster(generated_cluster(&spec.name, suffix)),
    };
    let mut envs: BTreeMap<&str, &str> = spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    if let Some(origin) = spec.migrated_from.as_deref() {
        envs.insert(MIGRATED_FROM_ENV, origin);
    }
    let doc = Yaml { name: &name, workdir, num_nodes: spec.nodes, resources, envs, run };
    let yaml = serde_saphyr::to_string(&doc)
        .map_err(|e| BackendError::Parse { what: "the task YAML".into(), message: e.to_string() })?;
    Ok(Task { yaml, placement, warnings })
}

/// What a preview or an export says about where a spec without a cluster goes.
pub fn placement_note(spec: &JobSpec) -> Option<String> {
    (spec.partition.is_none() && !spec.managed).then(|| {
        format!(
            "`partition`: none given, so a new cluster is made (xxxxx is drawn at submit); `{MANAGED_QUEUE}` makes it a managed job"
        )
    })
}

/// The preview's text: where the task goes, as a YAML comment, then the task.
pub fn render(task: &Task) -> String {
    let head = match &task.placement {
        Placement::Cluster(c) => format!("# POST /launch on cluster {c}\n"),
        Placement::Managed(n) => format!("# POST /jobs/launch as managed job {n}\n"),
    };
    format!("{head}{}", task.yaml)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            name: "train llm".into(),
            command: Some("python train.py --epochs 3".into()),
            gpus: 4,
            gpu_type: Some("a100-80gb".into()),
            cpus: Some(16),
            memory: Some("64G".into()),
            image: Some("nvcr.io/nvidia/pytorch:24.01-py3".into()),
            env: [("WANDB_MODE".to_string(), "offline".to_string())].into(),
            ..JobSpec::default()
        }
    }

    fn yaml(task: &Task) -> serde_json::Value {
        serde_saphyr::from_str(&task.yaml).unwrap()
    }

    #[test]
    fn spec_becomes_a_task() {
        let t = task(&spec(), "ab12c").unwrap();
        let v = yaml(&t);
        assert_eq!(v["name"], "train-llm", "a SkyPilot task name");
        assert_eq!(v["resources"]["accelerators"], "A100-80GB:4");
        assert_eq!(v["resources"]["cpus"], "16");
        assert_eq!(v["resources"]["memory"], "64");
        assert_eq!(v["resources"]["image_id"], "docker:nvcr.io/nvidia/pytorch:24.01-py3");
        assert_eq!(v["envs"]["WANDB_MODE"], "offline");
        assert_eq!(v["run"], "python train.py --epochs 3");
        assert!(v.get("workdir").is_none() && v.get("num_nodes").is_none());
        assert_eq!(t.placement, Placement::Cluster("fd-train-llm-ab12c".into()));
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert!(t.warnings[0].starts_with("`name`"), "{:?}", t.warnings);
        assert!(render(&t).starts_with("# POST /launch on cluster fd-train-llm-ab12c\nname: "));
    }

    #[test]
    fn managed_in_the_spec_makes_a_managed_job() {
        let mut s = spec();
        s.managed = true;
        assert_eq!(task(&s, "x").unwrap().placement, Placement::Managed("train-llm".into()));
        s.partition = Some("managed-jobs".into());
        assert_eq!(task(&s, "x").unwrap().placement, Placement::Managed("train-llm".into()));
        s.partition = Some("my-h100s".into());
        let err = task(&s, "x").unwrap_err().to_string();
        assert!(err.contains("`managed`") && err.contains("my-h100s"), "{err}");
    }

    #[test]
    fn a_multi_node_kind_is_refused_by_name() {
        let s = JobSpec { multi_node: Some("mpijob".into()), nodes: Some(2), ..spec() };
        let err = task(&s, "x").unwrap_err().to_string();
        assert!(err.contains("`multi_node`: SkyPilot runs a job of several nodes itself"), "{err}");
    }

    #[test]
    fn partition_picks_the_cluster_or_the_managed_queue() {
        let mut s = spec();
        s.partition = Some("managed-jobs".into());
        assert_eq!(task(&s, "x").unwrap().placement, Placement::Managed("train-llm".into()));
        s.partition = Some("my-h100s".into());
        assert_eq!(task(&s, "x").unwrap().placement, Placement::Cluster("my-h100s".into()));
        s.partition = Some("9bad name".into());
        let err = task(&s, "x").unwrap_err().to_string();
        assert!(err.contains("`partition`") && err.contains("no SkyPilot cluster name"), "{err}");
    }

    #[test]
    fn workdir_only_when_local_and_what_is_ignored_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec();
        s.workdir = Some(dir.path().display().to_string());
        s.nodes = Some(2);
        s.script = Some("#!/bin/bash\necho one\necho two\n".into());
        s.command = None;
        let t = task(&s, "x").unwrap();
        let v = yaml(&t);
        assert_eq!(v["workdir"], dir.path().display().to_string());
        assert_eq!(v["num_nodes"], 2);
        assert_eq!(v["run"], "#!/bin/bash\necho one\necho two\n");
        s.workdir = Some("/no/such/dir/anywhere".into());
        s.time_limit = Some("2h".into());
        s.account = Some("ml".into());
        let t = task(&s, "x").unwrap();
        assert!(yaml(&t).get("workdir").is_none());
        assert_eq!(t.warnings.len(), 4, "{:?}", t.warnings);
        assert!(t.warnings[1].starts_with("`workdir`"));
    }

    #[test]
    fn gpus_need_a_model_and_cpu_jobs_have_no_accelerators() {
        let mut s = spec();
        s.gpu_type = None;
        assert!(task(&s, "x").unwrap_err().to_string().contains("`gpu_type`"));
        s.gpus = 0;
        s.image = None;
        s.cpus = None;
        s.memory = None;
        let v = yaml(&task(&s, "x").unwrap());
        assert!(v.get("resources").is_none(), "{v}");
    }

    #[test]
    fn migration_tag_arrays_and_tasks_per_node() {
        let mut s = spec();
        s.migrated_from = Some("hpc/123".into());
        s.nodes = Some(1);
        s.tasks_per_node = Some(8);
        let t = task(&s, "x").unwrap();
        let v = yaml(&t);
        assert_eq!((&v["envs"][MIGRATED_FROM_ENV], &v["envs"]["WANDB_MODE"]), (&"hpc/123".into(), &"offline".into()));
        assert_eq!(v["num_nodes"], 1);
        assert!(t.warnings.iter().any(|w| w.starts_with("`tasks_per_node`")), "{:?}", t.warnings);
        s.array = Some("0-9%2".into());
        let err = task(&s, "x").unwrap_err().to_string();
        assert!(err.contains("`array`: SkyPilot has no job arrays"), "{err}");
    }

    #[test]
    fn generated_names_are_cluster_names() {
        assert_eq!(generated_cluster("Train LLM!!", "ab12c"), "fd-train-llm-ab12c");
        assert_eq!(generated_cluster("___", "ab12c"), "fd-ab12c");
        let long = generated_cluster(&"x".repeat(200), "ab12c");
        check_cluster_name(&long).unwrap();
        check_cluster_name("fd-ab12c").unwrap();
        assert!(
            check_cluster_name("-a").is_err() && check_cluster_name("a:b").is_err() && check_cluster_name("").is_err()
        );
        assert_eq!(accelerator_name("h100"), "H100");
        for (name, want) in [
            ("train-llm", "train-llm"),
            ("a__b--c.d", "a__b--c.d"),
            ("train llm!", "train-llm"),
            ("a---b", "a-b"),
            ("_x_", "x"),
            ("x'; rm -rf / #$(id)", "x-rm-rf-id"),
            ("ünï", "n"),
            ("!!", "task"),
        ] {
            assert_eq!(task_name(name), want, "{name}");
            assert!(is_task_name(want), "{want}");
        }
        assert!(!is_task_name("a---b") && !is_task_name("-a") && !is_task_name("a b") && !is_task_name(""));
        assert_eq!(
            (gb_text(65536), gb_text(512), gb_text(500), gb_text(1025)),
            ("64".into(), "0.5".into(), "0.48828125".into(), "1.0009765625".into())
        );
    }
}
