//! `JobSpec` → a dstack task run spec, the body `runs/apply` takes.
//!
//! * `commands`: the command, or the script as one bash command (dstack runs commands in
//!   bash; a script's `#!` line is dropped with a warning when it names another shell);
//! * `resources.gpu: MODEL:N` (dstack's upper-case names: `h100` → `H100`), `cpu: N..`,
//!   `memory: NGB..` (at least, as a batch scheduler reads them);
//! * `env`, `image` (only when given: the server looks images up online), `nodes`,
//!   `working_dir`, `fleets: [partition]`;
//! * `max_duration` from `time_limit` (seconds);
//! * `retry: {on_events: [no-capacity, interruption], duration}` when the cluster sets
//!   `retry`: the run then waits for capacity instead of failing at once.
//!
//! The run name is the job name made fit for dstack (`^[a-z][a-z0-9-]{1,40}$`) plus a short
//! suffix, so the same spec can be submitted twice (applying an existing name would replace
//! that run).

use serde_json::{Map, Value, json};

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

/// The run spec for `spec` and what the preview should say about fields dstack ignores.
pub fn run_spec(spec: &JobSpec, target: &Target) -> Result<(Value, Vec<String>), BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    spec.refuse_managed("dstack").map_err(BackendError::InvalidSpec)?;
    let mut warnings = Vec::new();
    let mut conf = Map::new();
    conf.insert("type".into(), json!("task"));
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
    conf.insert("commands".into(), json!([command]));

    let mut resources = Map::new();
    if spec.gpus > 0 {
        let gpu = match &spec.gpu_type {
            Some(model) => format!("{}:{}", model.to_ascii_uppercase(), spec.gpus),
            None => spec.gpus.to_string(),
        };
        resources.insert("gpu".into(), json!(gpu));
    }
    if let Some(cpus) = spec.cpus {
        resources.insert("cpu".into(), json!(format!("{cpus}..")));
    }
    if let Some(mb) = spec.memory_mb() {
        resources.insert("memory".into(), json!(format!("{}GB..", mb.div_ceil(1024).max(1))));
    }
    if !resources.is_empty() {
        conf.insert("resources".into(), Value::Object(resources));
    }
    if !spec.env.is_empty() {
        conf.insert("env".into(), json!(spec.env));
    }
    if let Some(image) = &spec.image {
        conf.insert("image".into(), json!(image));
    }
    if let Some(nodes) = spec.nodes.filter(|n| *n > 1) {
        conf.insert("nodes".into(), json!(nodes));
    }
    if let Some(dir) = &spec.workdir {
        conf.insert("working_dir".into(), json!(dir));
    }
    if let Some(fleet) = &spec.partition {
        conf.insert("fleets".into(), json!([fleet]));
    }
    if let Some(secs) = spec.time_limit_secs() {
        conf.insert("max_duration".into(), json!(secs));
    }
    if let Some(secs) = target.retry_secs {
        conf.insert("retry".into(), json!({"on_events": RETRY_EVENTS, "duration": secs}));
    }
    if let Some(account) = &spec.account {
        warnings
            .push(format!("`account`: dstack has no accounts; {account:?} is ignored (the project is the cluster's)"));
    }
    let name = run_name(&spec.name, &target.suffix);
    Ok((json!({"run_name": name, "configuration": Value::Object(conf)}), warnings))
}

/// The body of `runs/apply` for a run spec.
pub fn apply_body(run_spec: &Value) -> Value {
    json!({"plan": {"run_spec": run_spec}, "force": false})
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
    }

    #[test]
    fn a_spec_becomes_a_task() {
        let target = Target { suffix: "x7k2p".into(), retry_secs: None };
        let (run, warnings) = run_spec(&spec(), &target).unwrap();
        assert_eq!(
            run,
            json!({"run_name": "train-llm-x7k2p", "configuration": {
                "type": "task", "commands": ["python train.py"],
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
        assert_eq!(run["configuration"]["resources"]["memory"], "1GB..");
        let mut bash = spec();
        bash.command = None;
        bash.script = Some("#!/bin/bash\nset -e\necho hi".into());
        let (run, warnings) = run_spec(&bash, &target).unwrap();
        assert_eq!((run["configuration"]["commands"].clone(), warnings.len()), (json!(["set -e\necho hi"]), 0));
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
