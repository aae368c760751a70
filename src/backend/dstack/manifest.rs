//! `JobSpec` → a dstack task run spec, the body `runs/apply` takes.
//!
//! * `commands`: the command, or the script as one bash command (dstack runs commands in
//!   bash; a script's `#!` line is dropped with a warning when it names another shell);
//! * `resources.gpu: MODEL:N` (dstack's upper-case names: `h100` → `H100`), `cpu: N..`,
//!   `memory: NGB..` or `NMB..` (at least, as a batch scheduler reads them);
//! * `env`, `image` (only when given: the server looks images up online), `nodes`,
//!   `working_dir`, `fleets: [partition]`;
//! * `migrated_from` as the tag [`MIGRATED_FROM_TAG`] (dstack keeps `tags` in the run spec it
//!   lists); no job arrays (`array` is refused by name); `tasks_per_node` above one is a
//!   warning (dstack runs the commands once per node);
//! * `max_duration` from `time_limit` (seconds);
//! * `retry: {on_events: [no-capacity, interruption], duration}` when the cluster sets
//!   `retry`: the run then waits for capacity instead of failing at once.
//!
//! The run name is the job name made fit for dstack (`^[a-z][a-z0-9-]{1,40}$`) plus a short
//! suffix, so the same spec can be submitted twice (applying an existing name would replace
//! that run); the configuration's `name` is the job name alone, what the jobs table shows.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::backend::BackendError;
use crate::spec::JobSpec;

/// dstack's limit on resource names (`^[a-z][a-z0-9-]{1,40}$`).
const MAX_NAME: usize = 41;

/// Events a configured retry waits through.
pub const RETRY_EVENTS: [&str; 2] = ["no-capacity", "interruption"];

/// What a submission takes from the cluster rather than the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Appended to the run name (`-x7k2p`).
    pub suffix: String,
    /// How long to retry on no capacity, when the cluster says so.
    pub retry_secs: Option<u64>,
}

/// A dstack run name from a job name and a suffix: lower case, `[a-z0-9-]`, starting with a
/// letter, at most 41 characters with the suffix.
pub fn run_name(name: &str, suffix: &str) -> String {
    let mut base = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            base.push(c);
        } else if !base.ends_with('-') {
            base.push('-');
        }
    }
    let mut base = base.trim_matches('-').to_string();
    if !base.starts_with(|c: char| c.is_ascii_lowercase()) {
        base.insert_str(0, "fd-");
    }
    let suffix: String = suffix.chars().filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit()).take(8).collect();
    let room = MAX_NAME.saturating_sub(if suffix.is_empty() { 0 } else { suffix.len() + 1 });
    let mut base: String = base.chars().take(room.max(2)).collect();
    while base.ends_with('-') {
        base.pop();
    }
    if base.len() < 2 {
        base = "fd-job".into();
    }
    if suffix.is_empty() { base } else { format!("{base}-{suffix}") }
}

/// The tag that carries `migrated_from` (`hpc/123`): dstack keeps a configuration's `tags`
/// in the run spec that `runs/list` and `runs/get` give back.
pub const MIGRATED_FROM_TAG: &str = "flightdeck-migrated-from";

/// Whether dstack takes `value` as a tag value (its `TAG_VALUE_PATTERN`).
pub fn is_tag_value(value: &str) -> bool {
    value.len() <= 256 && value.chars().all(|c| c.is_ascii_alphanumeric() || " .:/=_-+@".contains(c))
}

/// A task configuration (what a `.dstack.yml` holds), its keys in the order people write
/// them; `runs/apply` takes it as the run spec's `configuration`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Configuration {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    pub commands: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Resources::is_empty")]
    pub resources: Resources,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fleets: Vec<String>,
    /// Seconds (how the server echoes it back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Resources {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

impl Resources {
    fn is_empty(&self) -> bool {
        self.gpu.is_none() && self.cpu.is_none() && self.memory.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retry {
    pub on_events: [&'static str; 2],
    pub duration: u64,
}

/// A run spec as `runs/apply` takes it, keys in reading order (for the preview).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSpec {
    pub run_name: String,
    pub configuration: Configuration,
}

/// dstack's name for a GPU model: upper case, and a memory variant as dstack writes it
/// (`a100-80gb` → `A100:80GB`, since dstack names the board and asks the memory apart).
pub fn gpu_name(model: &str) -> String {
    let upper = model.trim().to_ascii_uppercase();
    if let Some((board, memory)) = upper.rsplit_once('-')
        && let Some(gb) = memory.strip_suffix("GB")
        && !gb.is_empty()
        && gb.chars().all(|c| c.is_ascii_digit())
        && !board.is_empty()
    {
        return format!("{board}:{gb}GB");
    }
    upper
}

/// The task configuration for `spec` (without a name: the run spec names the run, a
/// `.dstack.yml` its `name`), and what dstack does not carry.
pub fn configuration(spec: &JobSpec) -> Result<(Configuration, Vec<String>), BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    spec.refuse_managed("dstack").map_err(BackendError::InvalidSpec)?;
    spec.refuse_multi_node("dstack").map_err(BackendError::InvalidSpec)?;
    if let Some(array) = &spec.array {
        return Err(BackendError::InvalidSpec(format!(
            "`array`: dstack has no job arrays; submit {array:?} as separate runs, or loop over the indices in one task"
        )));
    }
    let mut warnings = Vec::new();
    let command = match (&spec.command, &spec.script) {
        (Some(command), _) => command.clone(),
        (None, Some(script)) => {
            let mut lines = script.lines();
            match script.lines().next().and_then(|l| l.strip_prefix("#!")) {
                Some(interpreter) => {
                    lines.next();
                    let shell = interpreter.split_whitespace().last().unwrap_or("");
                    if !(shell.ends_with("sh") || shell.ends_with("bash")) {
                        warnings.push(format!(
                            "`script`: dstack runs commands in bash; the `#!{}` line is dropped",
                            interpreter.trim()
                        ));
                    }
                    lines.collect::<Vec<_>>().join("\n")
                }
                None => script.clone(),
            }
        }
        (None, None) => return Err(BackendError::InvalidSpec("set `command` or `script`".into())),
    };

    let mut resources = Resources::default();
    if spec.gpus > 0 {
        resources.gpu = Some(match &spec.gpu_type {
            Some(model) => format!("{}:{}", gpu_name(model), spec.gpus),
            None => spec.gpus.to_string(),
        });
    }
    resources.cpu = spec.cpus.map(|cpus| format!("{cpus}.."));
    // dstack reads MB, GB and TB; whole GB where it is that, else the MB asked, exactly.
    resources.memory = spec
        .memory_mb()
        .map(|mb| if mb.is_multiple_of(1024) { format!("{}GB..", mb / 1024) } else { format!("{mb}MB..") });
    let mut tags = BTreeMap::new();
    if let Some(origin) = &spec.migrated_from {
        if !is_tag_value(origin) {
            return Err(BackendError::InvalidSpec(format!(
                "`migrated_from`: {origin:?} cannot be a dstack tag (letters, digits, spaces and . : / = _ - + @, at most 256)"
            )));
        }
        tags.insert(MIGRATED_FROM_TAG.to_string(), origin.clone());
    }
    if let Some(n) = spec.tasks_per_node.filter(|n| *n > 1) {
        warnings.push(format!(
            "`tasks_per_node`: dstack runs `commands` once per node; start the {n} tasks per node from the commands"
        ));
    }
    if let Some(account) = &spec.account {
        warnings
            .push(format!("`account`: dstack has no accounts; {account:?} is ignored (the project is the cluster's)"));
    }
    let conf = Configuration {
        kind: "task",
        name: None,
        nodes: spec.nodes,
        image: spec.image.clone(),
        working_dir: spec.workdir.clone(),
        commands: vec![command],
        env: spec.env.clone(),
        resources,
        fleets: spec.partition.iter().cloned().collect(),
        max_duration: spec.time_limit_secs(),
        retry: None,
        tags,
    };
    Ok((conf, warnings))
}

/// The run spec for `spec` (as sent, and as the preview shows it) and what the preview
/// should say about fields dstack ignores.
pub fn run_spec_of(spec: &JobSpec, target: &Target) -> Result<(RunSpec, Vec<String>), BackendError> {
    let (mut configuration, warnings) = configuration(spec)?;
    configuration.retry = target.retry_secs.map(|duration| Retry { on_events: RETRY_EVENTS, duration });
    // The run is `NAME-SUFFIX` (a new name per submission); the configuration keeps the
    // name the user gave, which the server stores as sent, so listings show that one.
    configuration.name = Some(run_name(&spec.name, ""));
    Ok((RunSpec { run_name: run_name(&spec.name, &target.suffix), configuration }, warnings))
}

/// [`run_spec_of`] as the JSON `runs/apply` takes.
pub fn run_spec(spec: &JobSpec, target: &Target) -> Result<(Value, Vec<String>), BackendError> {
    let (run, warnings) = run_spec_of(spec, target)?;
    let value = serde_json::to_value(&run)
        .map_err(|e| BackendError::Parse { what: "the run spec".into(), message: e.to_string() })?;
    Ok((value, warnings))
}

/// The body of `runs/apply` for a run spec.
pub fn apply_body(run_spec: &Value) -> Value {
    json!({"plan": {"run_spec": run_spec}, "force": false})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            name: "Train LLM".into(),
            command: Some("python train.py".into()),
            gpus: 2,
            gpu_type: Some("h100".into()),
            cpus: Some(16),
            memory: Some("64G".into()),
            time_limit: Some("2h".into()),
            env: BTreeMap::from([("WANDB_MODE".into(), "offline".into())]),
            ..JobSpec::default()
        }
    }

    #[test]
    fn managed_is_refused_by_name() {
        let target = Target { suffix: "x7k2p".into(), retry_secs: None };
        let managed = JobSpec { managed: true, ..spec() };
        let err = run_spec(&managed, &target).unwrap_err().to_string();
        assert!(err.contains("`managed`: dstack has no managed jobs"), "{err}");
        let kind = JobSpec { multi_node: Some("jobset".into()), ..spec() };
        let err = run_spec(&kind, &target).unwrap_err().to_string();
        assert!(err.contains("`multi_node`: dstack runs a job of several nodes itself"), "{err}");
    }

    #[test]
    fn a_spec_becomes_a_task() {
        let target = Target { suffix: "x7k2p".into(), retry_secs: None };
        let (run, warnings) = run_spec(&spec(), &target).unwrap();
        assert_eq!(
            run,
            json!({"run_name": "train-llm-x7k2p", "configuration": {
                "type": "task", "name": "train-llm", "commands": ["python train.py"],
                "resources": {"gpu": "H100:2", "cpu": "16..", "memory": "64GB.."},
                "env": {"WANDB_MODE": "offline"}, "max_duration": 7200}})
        );
        assert!(warnings.is_empty());
        assert_eq!(apply_body(&run)["plan"]["run_spec"]["run_name"], "train-llm-x7k2p");
        assert_eq!(apply_body(&run)["force"], false);
    }

    #[test]
    fn retry_image_fleet_nodes_and_scripts() {
        let mut s = spec();
        s.command = None;
        s.script = Some("#!/usr/bin/env python3\nprint(1)\nprint(2)".into());
        s.image = Some("nvcr.io/nvidia/pytorch:24.01-py3".into());
        s.partition = Some("h100-fleet".into());
        s.nodes = Some(2);
        s.account = Some("ml".into());
        s.workdir = Some("/workflow".into());
        let target = Target { suffix: "abcde".into(), retry_secs: Some(3600) };
        let (run, warnings) = run_spec(&s, &target).unwrap();
        let c = &run["configuration"];
        assert_eq!(c["commands"], json!(["print(1)\nprint(2)"]));
        assert_eq!(c["retry"], json!({"on_events": ["no-capacity", "interruption"], "duration": 3600}));
        assert_eq!(c["image"], "nvcr.io/nvidia/pytorch:24.01-py3");
        assert_eq!(
            (&c["fleets"], &c["nodes"], &c["working_dir"]),
            (&json!(["h100-fleet"]), &json!(2), &json!("/workflow"))
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("#!/usr/bin/env python3"));
        assert!(warnings[1].contains("`account`"));
        let mut plain = spec();
        plain.gpu_type = None;
        plain.memory = Some("500M".into());
        let (run, _) = run_spec(&plain, &target).unwrap();
        assert_eq!(run["configuration"]["resources"]["gpu"], "2");
        assert_eq!(run["configuration"]["resources"]["memory"], "500MB..");
        let mut bash = spec();
        bash.command = None;
        bash.script = Some("#!/bin/bash\nset -e\necho hi".into());
        let (run, warnings) = run_spec(&bash, &target).unwrap();
        assert_eq!((run["configuration"]["commands"].clone(), warnings.len()), (json!(["set -e\necho hi"]), 0));
    }

    #[test]
    fn migration_tag_arrays_and_tasks_per_node() {
        let target = Target { suffix: "x7k2p".into(), retry_secs: None };
        let s = JobSpec { migrated_from: Some("hpc/123_4".into()), tasks_per_node: Some(4), ..spec() };
        let (run, warnings) = run_spec(&s, &target).unwrap();
        assert_eq!(run["configuration"]["tags"], json!({"flightdeck-migrated-from": "hpc/123_4"}));
        assert!(warnings.iter().any(|w| w.starts_with("`tasks_per_node`")), "{warnings:?}");
        let bad = JobSpec { migrated_from: Some("hpc/1;rm".into()), ..spec() };
        assert!(run_spec(&bad, &target).unwrap_err().to_string().contains("`migrated_from`"));
        let array = JobSpec { array: Some("1-3".into()), ..spec() };
        assert!(run_spec(&array, &target).unwrap_err().to_string().contains("`array`: dstack has no job arrays"));
        assert!(is_tag_value("k8s-prod/ml/train-7") && !is_tag_value("a\nb") && !is_tag_value(&"a".repeat(257)));
        // The tag a migration writes, its id included, is a dstack tag value.
        let tag = crate::model::migration_tag("hpc/123_4", "187f3c2a9b1d0e44-3a1f-0");
        assert!(is_tag_value(&tag), "{tag}");
    }

    #[test]
    fn run_names_fit_dstack() {
        let ok = |n: &str| {
            n.len() <= 41
                && n.len() >= 2
                && n.starts_with(|c: char| c.is_ascii_lowercase())
                && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        for (name, want) in [
            ("Train LLM", "train-llm-x7k2p"),
            ("9lives", "fd-9lives-x7k2p"),
            ("--", "fd-x7k2p"),
            ("ünï côdé", "n-c-d-x7k2p"),
        ] {
            assert_eq!(run_name(name, "x7k2p"), want);
            assert!(ok(want), "{want}");
        }
        let long = run_name(&"a".repeat(100), "x7k2p");
        assert!(ok(&long) && long.ends_with("-x7k2p") && long.len() == 41, "{long}");
        assert!(ok(&run_name("x", "")), "{}", run_name("x", ""));
    }
}
