//! `JobSpec`, the portable job: one description that every backend can submit.
//!
//! ```toml
//! name = "train-llm"
//! command = "python train.py --epochs 3"   # or: script = """#!/bin/bash …"""
//! gpus = 4
//! gpu_type = "a100"
//! cpus = 16
//! memory = "64G"          # "500M", "1T", or a plain number of MiB
//! time_limit = "2h"       # "90m", "30s", "1h30m", "1-00:00:00", "HH:MM:SS", "MM:SS", minutes
//! partition = "gpu"
//! account = "ml"
//! workdir = "/scratch/alice/run1"
//! image = "nvcr.io#nvidia/pytorch:24.01-py3"
//! nodes = 1
//! multi_node = "pytorchjob"   # Kubernetes only: the kind several nodes become there
//!
//! [env]
//! WANDB_MODE = "offline"
//! ```
//!
//! Reading a file validates it; every problem names the file, the 1-based line and the key,
//! like the config file does.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use crate::tomlfile::pos as tomlpos;

mod units;
pub use units::{duration_text, memory_text, parse_memory_mb, parse_time_limit_secs};

/// A job as the user describes it, independent of where it runs.
///
/// Read from TOML (`flightdeck submit job.toml`); `command` and `script` are exclusive.
/// [`JobSpec::validate`] says whether a value is usable; [`JobSpec::from_toml_str`] and
/// [`JobSpec::load`] validate before returning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Non-empty, one line, no control characters.
    pub name: String,
    /// One command line, run by the job's shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A whole script (with or without a `#!` line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// GPUs per node; 0 for none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gpus: u32,
    /// GPU model (`a100`, `h100`, MIG `1g.10gb`); needs `gpus` > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// CPUs for the job's task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory per node, written `"32G"`, `"500M"`, `"1T"` or a plain number of MiB;
    /// see [`JobSpec::memory_mb`].
    #[serde(default, deserialize_with = "text_or_integer", skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Wall-clock limit, written `"2h"`, `"90m"`, `"1-00:00:00"` or a plain number of minutes;
    /// see [`JobSpec::time_limit_secs`].
    #[serde(default, deserialize_with = "text_or_integer", skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Container image; only some backends (Kubernetes, Slurm with pyxis) can run one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Nodes for the job; unset means the backend's default (one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Environment of the job. Keys are identifiers (`[A-Za-z_][A-Za-z0-9_]*`); values may be
    /// written as strings, numbers or booleans in the file and are kept as text.
    #[serde(default, deserialize_with = "env_table", skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Run as a managed job where the backend has them (SkyPilot's jobs controller picks a
    /// cluster and recovers the job after preemption). Refused, by name, by kinds without.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub managed: bool,
    /// A job array in Slurm's words: indices `0-99`, `1,3,5-7`, a step `0-20:2`, at most N
    /// at once `0-99%10`. Kinds without arrays refuse it by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<String>,
    /// Tasks started on each node (Slurm `--ntasks-per-node`); kinds that start one
    /// process per node say so in a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_per_node: Option<u32>,
    /// The workload kind a job of several nodes becomes on Kubernetes (`jobset`,
    /// `pytorchjob`, `mpijob`, `volcano`), over the cluster's own `multi_node` setting for
    /// this job (`submit --multi-node KIND`). Only Kubernetes has a choice: other kinds refuse
    /// it by name, and the Kubernetes backend refuses a word it does not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_node: Option<String>,
    /// The job this one was migrated from (`hpc/123`): written by `flightdeck migrate`, carried
    /// in each dialect's own place (Slurm `--comment`, a Kubernetes annotation, a cloud label)
    /// so the cockpit can say where a job came from and a second migration is refused. A
    /// migration adds its id (`hpc/123 migration=ID`, see `model::migration_tag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrated_from: Option<String>,
}

/// A job read from a backend's own form (an sbatch script, a Job manifest …): the portable
/// spec, and what of the native form it could not carry, one sentence each, by name
/// (`#SBATCH --mail-type=END (line 7): no portable form; kept in the script`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    pub spec: JobSpec,
    pub warnings: Vec<String>,
}

/// Why a native job could not be read as a [`JobSpec`]. `Display` names the line where
/// there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct ImportError {
    /// 1-based line of the native text at fault, where known.
    pub line: Option<usize>,
    pub message: String,
}

impl ImportError {
    pub fn new(message: impl Into<String>) -> Self {
        Self { line: None, message: message.into() }
    }

    pub fn at(line: usize, message: impl Into<String>) -> Self {
        Self { line: Some(line), message: message.into() }
    }
}

/// Why a job spec was refused. `Display` is the text the user reads.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A problem in a file, at `line` (1-based).
    #[error("{}:{line}: {message}", path.display())]
    File {
        path: PathBuf,
        line: usize,
        /// The key at fault (`memory`, `env.MY VAR`), where there is one.
        key: Option<String>,
        message: String,
    },
    /// A value that [`JobSpec::validate`] refuses; `field` is the key as written in the file.
    #[error("`{field}`: {message}")]
    Invalid { field: String, message: String },
    #[error("cannot write the job spec as TOML: {0}")]
    Serialize(String),
}

impl SpecError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError::Invalid { field: field.into(), message: message.into() }
    }
}

impl JobSpec {
    /// Read and validate a spec file.
    pub fn load(path: &Path) -> Result<JobSpec, SpecError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| SpecError::Io { path: path.to_path_buf(), source })?;
        Self::from_toml_str(&text, path)
    }

    /// Parse and validate a spec; `origin` names the file in messages.
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<JobSpec, SpecError> {
        let spec: JobSpec = toml::from_str(text).map_err(|err| {
            let problem = tomlpos::describe(text, &err, &describe_section);
            SpecError::File {
                path: origin.to_path_buf(),
                line: problem.line,
                key: problem.key,
                message: problem.message,
            }
        })?;
        spec.validate().map_err(|err| match err {
            SpecError::Invalid { field, message } => {
                let doc = tomlpos::Doc::parse(text);
                let path: Vec<tomlpos::Seg> = match field.split_once('.') {
                    Some((table, key)) => vec![tomlpos::Seg::Key(table.into()), tomlpos::Seg::Key(key.into())],
                    None => vec![tomlpos::Seg::Key(field.clone())],
                };
                // A key that is missing (neither command nor script) is reported on line 1.
                let line = doc.key_offset(&path).map(|offset| tomlpos::line_of(text, offset)).unwrap_or(1);
                SpecError::File {
                    path: origin.to_path_buf(),
                    line,
                    message: format!("`{field}`: {message}"),
                    key: Some(field),
                }
            }
            other => other,
        })?;
        Ok(spec)
    }

    /// The spec as a TOML document that [`JobSpec::from_toml_str`] reads back unchanged, with
    /// no control or bidi character raw in it: `spec export` prints what a cluster says a
    /// job's owner wrote ([`crate::tomlfile::printable`]).
    pub fn to_toml(&self) -> Result<String, SpecError> {
        let text = toml::to_string(self).map_err(|err| SpecError::Serialize(err.to_string()))?;
        Ok(crate::tomlfile::printable::document(&text))
    }

    /// Refuse `managed = true` on a kind (`kind`: `Slurm`) that has no managed jobs.
    pub fn refuse_managed(&self, kind: &str) -> Result<(), String> {
        if self.managed {
            return Err(format!("`managed`: {kind} has no managed jobs (only SkyPilot does); remove `managed = true`"));
        }
        Ok(())
    }

    /// Refuse `multi_node` on a kind (`kind`: `Slurm`) that runs a job of several nodes
    /// itself, with no kind of workload to choose.
    pub fn refuse_multi_node(&self, kind: &str) -> Result<(), String> {
        match &self.multi_node {
            Some(how) => Err(format!(
                "`multi_node`: {kind} runs a job of several nodes itself; only a Kubernetes cluster takes a workload kind ({how:?} here); remove `multi_node` (or --multi-node)"
            )),
            None => Ok(()),
        }
    }

    /// Check every field; the error names the first field at fault as written in the file
    /// (`memory`, `env.MY-VAR`).
    pub fn validate(&self) -> Result<(), SpecError> {
        check_line("name", &self.name)?;
        if self.name.trim().is_empty() {
            return Err(SpecError::invalid("name", "the job needs a name"));
        }
        match (&self.command, &self.script) {
            (None, None) => return Err(SpecError::invalid("command", "set `command` or `script`")),
            (Some(_), Some(_)) => {
                return Err(SpecError::invalid("script", "set either `command` or `script`, not both"));
            }
            (Some(command), None) => check_body("command", command)?,
            (None, Some(script)) => check_body("script", script)?,
        }
        if let Some(gpu_type) = &self.gpu_type {
            if self.gpus == 0 {
                return Err(SpecError::invalid("gpu_type", "a GPU type needs `gpus` of 1 or more"));
            }
            if gpu_type.is_empty()
                || !gpu_type.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                return Err(SpecError::invalid(
                    "gpu_type",
                    format!("{gpu_type:?} is not a GPU type: use letters, digits, '_', '.' and '-' (a100, 1g.10gb)"),
                ));
            }
        }
        if self.cpus == Some(0) {
            return Err(SpecError::invalid("cpus", "must be 1 or more"));
        }
        if self.nodes == Some(0) {
            return Err(SpecError::invalid("nodes", "must be 1 or more"));
        }
        if self.tasks_per_node == Some(0) {
            return Err(SpecError::invalid("tasks_per_node", "must be 1 or more"));
        }
        if let Some(array) = &self.array {
            parse_array(array).map_err(|why| SpecError::invalid("array", why))?;
        }
        if let Some(origin) = &self.migrated_from {
            check_line("migrated_from", origin)?;
        }
        if let Some(how) = &self.multi_node
            && (how.is_empty() || !how.chars().all(|c| c.is_ascii_alphanumeric()))
        {
            return Err(SpecError::invalid(
                "multi_node",
                format!("{how:?} is not a workload kind: one word of letters and digits"),
            ));
        }
        if let Some(memory) = &self.memory {
            parse_memory_mb(memory).map_err(|why| SpecError::invalid("memory", why))?;
        }
        if let Some(limit) = &self.time_limit {
            parse_time_limit_secs(limit).map_err(|why| SpecError::invalid("time_limit", why))?;
        }
        for (field, value) in [
            ("partition", &self.partition),
            ("account", &self.account),
            ("workdir", &self.workdir),
            ("image", &self.image),
        ] {
            if let Some(value) = value {
                check_line(field, value)?;
                if value.trim().is_empty() {
                    return Err(SpecError::invalid(field, "is empty (leave it out instead)"));
                }
            }
        }
        for (key, value) in &self.env {
            let field = format!("env.{key}");
            if !is_identifier(key) {
                return Err(SpecError::invalid(
                    field,
                    format!("{key:?} is not a variable name: use letters, digits and '_', not starting with a digit"),
                ));
            }
            if value.contains('\0') {
                return Err(SpecError::invalid(field, "contains a NUL character"));
            }
        }
        Ok(())
    }

    /// Memory in MiB: `None` when unset **or unreadable** — [`JobSpec::validate`] reports the
    /// latter, so on a validated spec `None` means unset.
    pub fn memory_mb(&self) -> Option<u64> {
        self.memory.as_deref().and_then(|m| parse_memory_mb(m).ok())
    }

    /// Time limit in seconds: `None` when unset **or unreadable** — [`JobSpec::validate`]
    /// reports the latter, so on a validated spec `None` means unset.
    pub fn time_limit_secs(&self) -> Option<u64> {
        self.time_limit.as_deref().and_then(|t| parse_time_limit_secs(t).ok())
    }
}

/// A job array as written in a spec (Slurm's `--array` syntax), read into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// `(first, last, step)` ranges in the order written; a single index is `(i, i, 1)`.
    pub ranges: Vec<(u32, u32, u32)>,
    /// At most this many tasks at once (`%N`).
    pub max_running: Option<u32>,
}

impl ArraySpec {
    /// Every index, in the order written (duplicates kept as written).
    pub fn indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(|&(first, last, step)| (first..=last).step_by(step.max(1) as usize))
    }

    /// How many tasks the array has (saturating).
    pub fn count(&self) -> u64 {
        self.ranges.iter().map(|&(first, last, step)| u64::from((last - first) / step.max(1)) + 1).sum()
    }

    /// `Some(n)` when the indices are exactly `0..n` once each, the shape a Kubernetes
    /// Indexed Job can express.
    pub fn dense_from_zero(&self) -> Option<u32> {
        match self.ranges.as_slice() {
            [(0, last, 1)] => last.checked_add(1),
            _ => None,
        }
    }
}

/// Read `0-99`, `1,3,5-7`, `0-20:2`, `0-99%10`. Indices above 4,000,000 (Slurm's own cap on
/// `MaxArraySize`) are refused, as are empty, reversed or zero-step ranges.
pub fn parse_array(text: &str) -> Result<ArraySpec, String> {
    const MAX_INDEX: u32 = 4_000_000;
    let bad = |why: &str| {
        format!("cannot read {text:?} as a job array ({why}): write \"0-99\", \"1,3,5-7\", \"0-20:2\" or \"0-99%10\"")
    };
    let (list, max_running) = match text.trim().split_once('%') {
        Some((list, limit)) => {
            let limit: u32 = limit.trim().parse().map_err(|_| bad("the %limit is not a number"))?;
            if limit == 0 {
                return Err(bad("the %limit is zero"));
            }
            (list, Some(limit))
        }
        None => (text.trim(), None),
    };
    let number = |s: &str| -> Result<u32, String> {
        let n: u32 = s.trim().parse().map_err(|_| bad(&format!("{s:?} is not an index")))?;
        if n > MAX_INDEX {
            return Err(bad(&format!("{n} is above {MAX_INDEX}")));
        }
        Ok(n)
    };
    let mut ranges = Vec::new();
    for part in list.split(',') {
        if part.trim().is_empty() {
            return Err(bad("an empty item"));
        }
        let (range, step) = match part.split_once(':') {
            Some((range, step)) => (range, number(step)?),
            None => (part, 1),
        };
        if step == 0 {
            return Err(bad("a step of zero"));
        }
        let (first, last) = match range.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => {
                let i = number(range)?;
                (i, i)
            }
        };
        if last < first {
            return Err(bad(&format!("{first}-{last} runs backwards")));
        }
        ranges.push((first, last, step));
    }
    Ok(ArraySpec { ranges, max_running })
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One-line values: no control characters at all (a newline would end an `#SBATCH` line;
/// escape sequences would reach the terminal when the value is shown).
fn check_line(field: &str, value: &str) -> Result<(), SpecError> {
    match value.chars().find(|c| crate::safe_text::is_unsafe(*c)) {
        Some('\n') | Some('\r') => Err(SpecError::invalid(field, "contains a line break; it must be one line")),
        Some('\0') => Err(SpecError::invalid(field, "contains a NUL character")),
        Some(c) if crate::safe_text::is_bidi_control(c) => Err(SpecError::invalid(
            field,
            format!("contains the bidirectional control U+{:04X}; type plain text", c as u32),
        )),
        Some(c) => Err(SpecError::invalid(field, format!("contains the control character {c:?}"))),
        None => Ok(()),
    }
}

/// Command and script text: any lines, but not blank and without NUL.
fn check_body(field: &str, value: &str) -> Result<(), SpecError> {
    if value.trim().is_empty() {
        return Err(SpecError::invalid(field, "is empty"));
    }
    if value.contains('\0') {
        return Err(SpecError::invalid(field, "contains a NUL character"));
    }
    Ok(())
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn describe_section(_doc: &tomlpos::Doc<'_>, path: &[tomlpos::Seg]) -> Option<String> {
    match path {
        [tomlpos::Seg::Key(table), ..] if table == "env" => Some("[env]".into()),
        _ => None,
    }
}

/// A string, or an integer kept as its decimal text (`memory = 4096`, `time_limit = 90`).
fn text_or_integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or a whole number")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
    }
    deserializer.deserialize_any(Visitor)
}

/// A table of strings, numbers or booleans, all kept as text.
fn env_table<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct EnvValue(String);
    impl<'de> Deserialize<'de> for EnvValue {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl serde::de::Visitor<'_> for Visitor {
                type Value = EnvValue;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string, number or boolean")
                }
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EnvValue, E> {
                    Ok(EnvValue(v.to_string()))
                }
                fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<EnvValue, E> {
                    Ok(EnvValue(v.to_string()))
                }
                fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<EnvValue, E> {
                    Ok(EnvValue(v.to_string()))
                }
                fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<EnvValue, E> {
                    Ok(EnvValue(v.to_string()))
                }
                fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<EnvValue, E> {
                    Ok(EnvValue(v.to_string()))
                }
            }
            deserializer.deserialize_any(Visitor)
        }
    }
    let raw: BTreeMap<String, EnvValue> = BTreeMap::deserialize(deserializer)?;
    Ok(raw.into_iter().map(|(k, v)| (k, v.0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/work/jobs/train.toml";

    fn parse(text: &str) -> Result<JobSpec, SpecError> {
        JobSpec::from_toml_str(text, Path::new(FILE))
    }

    #[test]
    fn multi_node_is_one_word_at_its_line() {
        let spec = parse("name = \"t\"\ncommand = \"true\"\nnodes = 2\nmulti_node = \"pytorchjob\"\n").unwrap();
        assert_eq!(spec.multi_node.as_deref(), Some("pytorchjob"));
        assert!(spec.to_toml().unwrap().contains("multi_node = \"pytorchjob\""));
        let shown = refused("name = \"t\"\ncommand = \"true\"\nmulti_node = \"job set\"\n", 3, "multi_node");
        assert!(shown.contains("\"job set\" is not a workload kind"), "{shown}");
    }

    /// The error's text, after checking it names the file, the line and the key.
    fn refused(text: &str, line: usize, key: &str) -> String {
        let err = parse(text).expect_err("spec should be refused");
        let shown = err.to_string();
        match &err {
            SpecError::File { line: got_line, key: got_key, .. } => {
                assert_eq!(*got_line, line, "line in {shown}");
                assert_eq!(got_key.as_deref(), Some(key), "key in {shown}");
            }
            other => panic!("unexpected error kind {other:?}"),
        }
        assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
        assert!(shown.contains(&format!("`{key}`")), "{shown}");
        shown
    }

    fn minimal() -> JobSpec {
        JobSpec { name: "j".into(), command: Some("true".into()), ..JobSpec::default() }
    }

    const FULL: &str = r#"name = "train"
command = "python train.py"
gpus = 4
gpu_type = "a100"
cpus = 16
memory = "64G"
time_limit = "2h"
partition = "gpu"
account = "ml"
workdir = "/scratch/run"
image = "nvcr.io#nvidia/pytorch:24.01-py3"
nodes = 2

[env]
WANDB_MODE = "offline"
SEED = 7
"#;

    #[test]
    fn full_spec_is_read() {
        let spec = parse(FULL).unwrap();
        assert_eq!(spec.name, "train");
        assert_eq!(spec.command.as_deref(), Some("python train.py"));
        assert_eq!(spec.gpus, 4);
        assert_eq!(spec.gpu_type.as_deref(), Some("a100"));
        assert_eq!(spec.cpus, Some(16));
        assert_eq!(spec.memory_mb(), Some(65536));
        assert_eq!(spec.time_limit_secs(), Some(7200));
        assert_eq!(spec.nodes, Some(2));
        assert_eq!(spec.env.get("SEED").map(String::as_str), Some("7"));
        assert_eq!(spec.env.get("WANDB_MODE").map(String::as_str), Some("offline"));
    }

    #[test]
    fn toml_round_trip() {
        let mut spec = parse(FULL).unwrap();
        assert_eq!(parse(&spec.to_toml().unwrap()).unwrap(), spec);
        spec.command = None;
        spec.script = Some("#!/bin/bash\necho \"it's\" '\\n' \"\"\"\nexit 0\n".into());
        spec.name = "x'; touch /tmp/pwned; echo '$(id)".into();
        let text = spec.to_toml().unwrap();
        assert_eq!(parse(&text).unwrap(), spec, "{text}");
        let text = minimal().to_toml().unwrap();
        assert_eq!(text, "name = \"j\"\ncommand = \"true\"\n");
    }

    #[test]
    fn exported_toml_holds_no_raw_c1_or_bidi_control_and_reads_back() {
        let mut spec = parse(FULL).unwrap();
        spec.command = None;
        spec.script =
            Some("#!/bin/sh\necho '\u{9b}2J' \u{1b}]0;t\u{7}\n# \u{202E}evil \u{2066}\u{200F}\u{061C}\n".into());
        spec.env.insert("NOTE".into(), "a\u{85}b \u{9d}0;x\u{9c} \u{202D}".into());
        let text = spec.to_toml().unwrap();
        let bad: Vec<char> = text.chars().filter(|&c| c != '\n' && crate::safe_text::is_unsafe(c)).collect();
        assert!(bad.is_empty(), "{bad:?} in {text}");
        assert!(text.contains("\\u009B2J") && text.contains("\\u202E"), "escaped, readable: {text}");
        assert_eq!(parse(&text).unwrap(), spec, "{text}");
    }

    #[test]
    fn integers_for_memory_and_time() {
        let spec = parse("name = \"a\"\ncommand = \"b\"\nmemory = 4096\ntime_limit = 90\n").unwrap();
        assert_eq!(spec.memory.as_deref(), Some("4096"));
        assert_eq!(spec.memory_mb(), Some(4096));
        assert_eq!(spec.time_limit_secs(), Some(90 * 60));
    }

    #[test]
    fn validate_command_or_script() {
        let mut spec = minimal();
        spec.validate().unwrap();
        spec.script = Some("echo".into());
        assert_eq!(spec.validate().unwrap_err().to_string(), "`script`: set either `command` or `script`, not both");
        spec.command = None;
        spec.validate().unwrap();
        spec.script = None;
        assert_eq!(spec.validate().unwrap_err().to_string(), "`command`: set `command` or `script`");
        spec.command = Some("   ".into());
        assert_eq!(spec.validate().unwrap_err().to_string(), "`command`: is empty");
        spec.command = Some("a\0b".into());
        assert!(spec.validate().unwrap_err().to_string().contains("NUL"));
        spec.command = Some("line one\nline two".into());
        spec.validate().unwrap();
    }

    #[test]
    fn validate_name() {
        for (name, why) in [
            ("", "needs a name"),
            ("  ", "needs a name"),
            ("a\nb", "line break"),
            ("a\rb", "line break"),
            ("a\0b", "NUL"),
            ("a\u{1b}[2Jb", "control"),
        ] {
            let spec = JobSpec { name: name.into(), ..minimal() };
            let shown = spec.validate().unwrap_err().to_string();
            assert!(shown.starts_with("`name`: "), "{shown}");
            assert!(shown.contains(why), "{name:?}: {shown}");
        }
        let hostile = JobSpec { name: "x'; touch /tmp/pwned; echo '$(id)".into(), ..minimal() };
        hostile.validate().unwrap();
    }

    #[test]
    fn validate_gpus() {
        let spec = JobSpec { gpus: 2, ..minimal() };
        spec.validate().unwrap();
        let spec = JobSpec { gpu_type: Some("a100".into()), ..minimal() };
        assert!(spec.validate().unwrap_err().to_string().starts_with("`gpu_type`: a GPU type needs `gpus`"));
        for bad in ["a 100", "a100:2", "", "a,b"] {
            let spec = JobSpec { gpus: 1, gpu_type: Some(bad.into()), ..minimal() };
            assert!(spec.validate().unwrap_err().to_string().starts_with("`gpu_type`: "), "{bad}");
        }
        let spec = JobSpec { gpus: 1, gpu_type: Some("1g.10gb".into()), ..minimal() };
        spec.validate().unwrap();
    }

    #[test]
    fn validate_counts_and_text_fields() {
        assert!(JobSpec { cpus: Some(0), ..minimal() }.validate().unwrap_err().to_string().starts_with("`cpus`"));
        assert!(JobSpec { nodes: Some(0), ..minimal() }.validate().unwrap_err().to_string().starts_with("`nodes`"));
        assert!(
            JobSpec { memory: Some("lots".into()), ..minimal() }
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("`memory`")
        );
        assert!(
            JobSpec { time_limit: Some("soon".into()), ..minimal() }
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("`time_limit`")
        );
        for field in ["partition", "account", "workdir", "image"] {
            for bad in ["", "a\nb"] {
                let mut spec = minimal();
                let slot = match field {
                    "partition" => &mut spec.partition,
                    "account" => &mut spec.account,
                    "workdir" => &mut spec.workdir,
                    _ => &mut spec.image,
                };
                *slot = Some(bad.into());
                let shown = spec.validate().unwrap_err().to_string();
                assert!(shown.starts_with(&format!("`{field}`: ")), "{shown}");
            }
        }
        let spec = JobSpec { workdir: Some("/scratch/my dir".into()), ..minimal() };
        spec.validate().unwrap();
    }

    #[test]
    fn validate_env() {
        let mut spec = minimal();
        spec.env.insert("_OK_1".into(), "multi\nline 'quoted' $(x)".into());
        spec.validate().unwrap();
        for bad in ["1X", "MY-VAR", "A B", "", "É"] {
            let mut spec = minimal();
            spec.env.insert(bad.into(), "v".into());
            let shown = spec.validate().unwrap_err().to_string();
            assert!(shown.starts_with(&format!("`env.{bad}`: ")), "{shown}");
        }
        let mut spec = minimal();
        spec.env.insert("A".into(), "a\0".into());
        assert!(spec.validate().unwrap_err().to_string().contains("NUL"));
    }

    #[test]
    fn file_errors_name_line_and_key() {
        let shown = refused("name = \"a\"\ncommand = \"b\"\nmemroy = \"4G\"\n", 3, "memroy");
        assert!(shown.contains("unknown key `memroy` (expected one of: name, command, script, gpus"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\n\nmemory = \"4X\"\n", 4, "memory");
        assert!(shown.contains("cannot read \"4X\" as memory"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\ngpus = \"two\"\n", 3, "gpus");
        assert!(shown.contains("bad value for `gpus`: expected a whole number"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\ngpus = -1\n", 3, "gpus");
        assert!(shown.contains("-1"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\nmemory = true\n", 3, "memory");
        assert!(shown.contains("a string or a whole number"), "{shown}");
        refused("name = \"a\"\ncommand = \"b\"\ntime_limit = \"1-25\"\n", 3, "time_limit");
        let shown = refused("command = \"b\"\n", 1, "name");
        assert_eq!(shown, format!("{FILE}:1: missing key `name`"));
        refused("name = \"a\"\n", 1, "command");
        refused("name = \"a\"\ncommand = \"b\"\nscript = \"c\"\n", 3, "script");
        refused("name = \"a\"\ncommand = \"b\"\ngpu_type = \"h100\"\n", 3, "gpu_type");
        refused("name = \"a\\nb\"\ncommand = \"b\"\n", 1, "name");
        refused("name = \"a\"\ncommand = \"b\"\nname = \"c\"\n", 3, "name");
    }

    #[test]
    fn env_errors_name_the_variable() {
        let shown = refused("name = \"a\"\ncommand = \"b\"\n[env]\nOK = \"1\"\n\"MY-VAR\" = \"x\"\n", 5, "env.MY-VAR");
        assert!(shown.contains("not a variable name"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\n[env]\nA = [1]\n", 4, "A");
        assert!(shown.contains("in [env]"), "{shown}");
        let shown = refused("name = \"a\"\ncommand = \"b\"\nenv = { X = { y = 1 } }\n", 3, "X");
        assert!(shown.contains("in [env]"), "{shown}");
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        let err = JobSpec::load(&path).unwrap_err();
        assert!(matches!(err, SpecError::Io { .. }));
        assert!(err.to_string().contains("job.toml"));
        std::fs::write(&path, "name = \"a\"\ncommand = \"b\"\ncpus = 0\n").unwrap();
        let shown = JobSpec::load(&path).unwrap_err().to_string();
        assert_eq!(shown, format!("{}:3: `cpus`: must be 1 or more", path.display()));
    }

    #[test]
    fn arrays() {
        let a = parse_array("0-99%10").unwrap();
        assert_eq!((a.count(), a.max_running, a.dense_from_zero()), (100, Some(10), Some(100)));
        let a = parse_array("1,3,5-7").unwrap();
        assert_eq!(a.indices().collect::<Vec<_>>(), vec![1, 3, 5, 6, 7]);
        assert_eq!(a.dense_from_zero(), None);
        assert_eq!(parse_array("0-20:5").unwrap().indices().collect::<Vec<_>>(), vec![0, 5, 10, 15, 20]);
        for bad in ["", "5-1", "0-9:0", "0-9%0", "a-b", "1,,2", "0-4000001"] {
            assert!(parse_array(bad).is_err(), "{bad:?} accepted");
        }
        let spec = JobSpec { array: Some("0-3%x".into()), ..minimal() };
        assert!(spec.validate().unwrap_err().to_string().starts_with("`array`: "));
        let spec = JobSpec { tasks_per_node: Some(0), ..minimal() };
        assert!(spec.validate().unwrap_err().to_string().starts_with("`tasks_per_node`: "));
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("A"));
        assert!(is_identifier("_a9"));
        assert!(!is_identifier("9a"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("a-b"));
    }
}
