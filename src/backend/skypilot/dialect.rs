//! The SkyPilot task YAML, offline: recognise it, import it into a `JobSpec`, export one
//! (`flightdeck spec convert`, `submit` of a native file, migration plans, and the managed
//! job's stored `user_yaml` for `spec export`).
//!
//! * **Recognised** by content: YAML whose documents are mappings, one of them with a task's
//!   own top-level keys (`run`, `setup`, `resources`, `num_nodes`, `envs`, `workdir`,
//!   `file_mounts`), none with `type` (dstack), `apiVersion` or `kind` (Kubernetes), and no
//!   `#!` first line (a batch script). A pipeline's header document (`name` alone) is
//!   allowed; a pipeline of several tasks is recognised and then refused by `import`.
//! * **Imported**: `name` (made a SkyPilot task name if it is not one), `run` (one line → `command`, several → `script`), `setup` (put
//!   before `run` in the script, with a warning: SkyPilot runs it once per cluster launch),
//!   `envs` (the [`MIGRATED_FROM_ENV`] variable → `migrated_from`), `workdir` (a local path),
//!   `num_nodes`, and from `resources` the accelerators (`H100:8`, `{H100: 8}`, a list of
//!   choices: the first), `cpus` and `memory` (`4+` → 4, with a warning), `image_id:
//!   docker:IMAGE`. A leading `# POST /launch on cluster C` / `# POST /jobs/launch as managed
//!   job N` comment, which [`export`] writes, gives back the cluster (`partition`) or
//!   `managed`. Everything else is a warning that names it.
//! * **Exported**: [`task::task_with`] (the same code the live submit and preview use) with
//!   the placeholder suffix `xxxxx`, keeping a `workdir` that is not on this machine.

use crate::backend::loose_value::{brief, is_empty, number, scalar_text, whole};
use serde_json::{Map, Value};

use super::map::MANAGED_QUEUE;
use super::task::{self, MIGRATED_FROM_ENV, Workdir};
use crate::backend::naming::PLACEHOLDER_SUFFIX;
use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native, gpu_names};
use crate::spec::{ImportError, Imported, JobSpec, is_identifier, memory_text};

/// A SkyPilot task (YAML), with where it is launched as a leading comment.
pub const SKYPILOT_TASK: Dialect = Dialect::new("sky_pilot_task", "skypilot", "a SkyPilot task", "SkyPilot task");

/// The name a task without one is given.
const UNNAMED: &str = "skypilot-task";

/// Top-level keys only a SkyPilot task has.
const TASK_KEYS: [&str; 7] = ["run", "setup", "resources", "num_nodes", "envs", "workdir", "file_mounts"];
/// Top-level keys of the other YAML dialects: dstack's `type`, a Kubernetes object's
/// `apiVersion` and `kind`.
const FOREIGN_KEYS: [&str; 3] = ["type", "apiVersion", "kind"];
/// Keys a pipeline's header document may have.
const HEADER_KEYS: [&str; 2] = ["name", "execution"];

const MANAGED_HEAD: &str = "# POST /jobs/launch as managed job ";
const CLUSTER_HEAD: &str = "# POST /launch on cluster ";

pub fn entry() -> DialectEntry {
    DialectEntry { dialect: SKYPILOT_TASK, detect, import, export }
}

/// Every YAML document of `text` (empty ones skipped), within serde-saphyr's default budget
/// (events, aliases, nesting), so an alias bomb is an error, not a hang.
pub(crate) fn documents(text: &str) -> Result<Vec<Value>, ImportError> {
    serde_saphyr::from_multiple::<Value>(text).map_err(|e| {
        let message = format!("not readable as YAML: {e}");
        match e.location().map(|l| l.line()) {
            Some(line) if line > 0 => ImportError::at(usize::try_from(line).unwrap_or(usize::MAX), message),
            _ => ImportError::new(message),
        }
    })
}

pub fn detect(text: &str) -> bool {
    if text.trim_start().starts_with("#!") {
        return false;
    }
    let Ok(docs) = documents(text) else { return false };
    let maps: Vec<&Map<String, Value>> = docs.iter().filter_map(Value::as_object).collect();
    !maps.is_empty()
        && maps.len() == docs.len()
        && maps.iter().all(|m| FOREIGN_KEYS.iter().all(|k| !m.contains_key(*k)))
        && maps.iter().any(|m| TASK_KEYS.iter().any(|k| m.contains_key(*k)))
}

pub fn import(text: &str) -> Result<Imported, ImportError> {
    let docs = documents(text)?;
    let task = pick_task(&docs)?;
    let mut imported = import_task(task)?;
    match placement(text) {
        Some(Placed::Managed) => imported.spec.managed = true,
        Some(Placed::Cluster(c)) => imported.spec.partition = Some(c),
        None => {}
    }
    imported.spec.validate().map_err(|e| ImportError::new(e.to_string()))?;
    Ok(imported)
}

pub fn export(spec: &JobSpec) -> Result<Native, BackendError> {
    let t = task::task_with(spec, PLACEHOLDER_SUFFIX, Workdir::Keep)?;
    let mut warnings = t.warnings.clone();
    warnings.extend(task::placement_note(spec));
    Ok(Native { dialect: SKYPILOT_TASK, text: task::render(&t), warnings })
}

/// The one task of the documents: a single task, or a pipeline header and one task.
fn pick_task(docs: &[Value]) -> Result<&Map<String, Value>, ImportError> {
    let mut maps = Vec::with_capacity(docs.len());
    for doc in docs {
        match doc {
            Value::Object(m) => maps.push(m),
            _ => return Err(ImportError::new("a SkyPilot task is a YAML mapping (`name:`, `run:`, `resources:` …)")),
        }
    }
    let header = |m: &Map<String, Value>| m.keys().all(|k| HEADER_KEYS.contains(&k.as_str()));
    let tasks: Vec<&Map<String, Value>> = match maps.as_slice() {
        [] => return Err(ImportError::new("the file is empty: no SkyPilot task in it")),
        [only] => vec![*only],
        [first, rest @ ..] if header(first) => rest.to_vec(),
        all => all.to_vec(),
    };
    match tasks.as_slice() {
        [one] => Ok(one),
        many => Err(ImportError::new(format!(
            "a pipeline of {} tasks: flightdeck reads one task; split it into one file per task",
            many.len()
        ))),
    }
}

enum Placed {
    Managed,
    Cluster(String),
}

/// Where [`export`]'s leading comment says the task goes; a generated cluster name
/// (`fd-…-xxxxx`) is no choice of the user's.
fn placement(text: &str) -> Option<Placed> {
    let first = text.lines().next()?;
    if first.starts_with(MANAGED_HEAD) {
        return Some(Placed::Managed);
    }
    let cluster = first.strip_prefix(CLUSTER_HEAD)?.trim();
    let generated = cluster.starts_with("fd-") && cluster.ends_with(&format!("-{PLACEHOLDER_SUFFIX}"));
    if generated || cluster == format!("fd-{PLACEHOLDER_SUFFIX}") || task::check_cluster_name(cluster).is_err() {
        return None;
    }
    Some(if cluster == MANAGED_QUEUE { Placed::Managed } else { Placed::Cluster(cluster.to_string()) })
}

/// One task mapping → the spec (not yet validated) and what it could not carry.
fn import_task(task: &Map<String, Value>) -> Result<Imported, ImportError> {
    let mut w = Vec::new();
    let name = match task.get("name") {
        None | Some(Value::Null) => {
            w.push(format!("`name`: the task has none; it is called {UNNAMED}"));
            UNNAMED.to_string()
        }
        Some(v) => scalar_text(v).ok_or_else(|| ImportError::new("`name` is not text"))?,
    };
    let taken = task::task_name(&name);
    if taken != name {
        w.push(format!("`name`: {name:?} is no SkyPilot task name; it is read as {taken}"));
    }
    let mut spec = JobSpec { name: taken, ..JobSpec::default() };

    let run = match task.get("run") {
        None | Some(Value::Null) => {
            return Err(ImportError::new("`run`: the task runs nothing (no `run`); a job needs a command"));
        }
        Some(v) => scalar_text(v).ok_or_else(|| ImportError::new("`run` is not text"))?,
    };
    let setup = match task.get("setup") {
        None | Some(Value::Null) => None,
        Some(v) => Some(scalar_text(v).ok_or_else(|| ImportError::new("`setup` is not text"))?),
    };
    match setup.filter(|s| !s.trim().is_empty()) {
        Some(setup) => {
            w.push(
                "`setup`: put before `run` in the job's script (SkyPilot runs it once, when the cluster is set up; here it runs with every job)"
                    .into(),
            );
            let sep = if setup.ends_with('\n') { "" } else { "\n" };
            spec.script = Some(format!("{setup}{sep}{run}"));
        }
        None => {
            let body = run.strip_suffix('\n').unwrap_or(&run);
            if body.contains('\n') {
                spec.script = Some(run.clone());
            } else {
                spec.command = Some(body.to_string());
            }
        }
    }

    if let Some(envs) = task.get("envs") {
        read_envs(envs, &mut spec, &mut w);
    }
    match task.get("workdir") {
        None | Some(Value::Null) => {}
        Some(Value::String(dir)) => spec.workdir = Some(dir.clone()),
        Some(Value::Object(_)) => {
            w.push("`workdir`: a git repository (`url`, `ref`) has no portable form; left out".into())
        }
        Some(_) => w.push("`workdir`: not a path; left out".into()),
    }
    match task.get("num_nodes") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let n = whole(v).filter(|n| *n >= 1).and_then(|n| u32::try_from(n).ok());
            spec.nodes = Some(n.ok_or_else(|| {
                ImportError::new(format!("`num_nodes`: {} is not a whole number of nodes (1 or more)", brief(v)))
            })?);
        }
    }
    match task.get("resources") {
        None | Some(Value::Null) => {}
        Some(Value::Object(r)) => read_resources(r, &mut spec, &mut w)?,
        Some(_) => w.push("`resources`: not a mapping; left out".into()),
    }
    if let Some(secrets) = task.get("secrets").and_then(Value::as_object).filter(|s| !s.is_empty()) {
        let names: Vec<&str> = secrets.keys().map(String::as_str).collect();
        w.push(format!("`secrets`: their values are not carried; set {} on the target", names.join(", ")));
    }
    for (key, value) in task {
        let handled = ["name", "run", "setup", "envs", "workdir", "num_nodes", "resources", "secrets"];
        if !handled.contains(&key.as_str()) && !is_empty(value) {
            w.push(format!("`{key}`: no portable form; left out"));
        }
    }
    Ok(Imported { spec, warnings: w })
}

fn read_envs(envs: &Value, spec: &mut JobSpec, w: &mut Vec<String>) {
    let Value::Object(map) = envs else {
        if !is_empty(envs) {
            w.push("`envs`: not a mapping; left out".into());
        }
        return;
    };
    for (key, value) in map {
        // SkyPilot makes every value text the way Python's `str` does (`True`, not `true`).
        let text = match value {
            Value::Bool(true) => Some("True".to_string()),
            Value::Bool(false) => Some("False".to_string()),
            other => scalar_text(other),
        };
        let Some(text) = text else {
            match value {
                Value::Null => {
                    w.push(format!("`envs.{key}`: no value (SkyPilot asks for it at launch); left out"));
                }
                _ => w.push(format!("`envs.{key}`: not text; left out")),
            }
            continue;
        };
        if key == MIGRATED_FROM_ENV {
            spec.migrated_from = Some(text);
        } else if is_identifier(key) {
            spec.env.insert(key.clone(), text);
        } else {
            w.push(format!("`envs.{key}`: not a variable name; left out"));
        }
    }
}

fn read_resources(r: &Map<String, Value>, spec: &mut JobSpec, w: &mut Vec<String>) -> Result<(), ImportError> {
    // `any_of` / `ordered`: candidates that override the shared keys; the first is taken.
    let mut merged = r.clone();
    for choice in ["ordered", "any_of"] {
        if let Some(Value::Array(candidates)) = merged.remove(choice)
            && let Some(first) = candidates.first()
        {
            if candidates.len() > 1 {
                w.push(format!("`resources.{choice}`: {} choices; the first is taken", candidates.len()));
            }
            match first {
                Value::Object(c) => merged.extend(c.clone()),
                _ => w.push(format!("`resources.{choice}`: its first choice is not a mapping; left out")),
            }
        }
    }
    for (key, value) in &merged {
        if is_empty(value) {
            continue;
        }
        match key.as_str() {
            "accelerators" => read_accelerators(value, spec, w),
            "cpus" => match at_least(value) {
                Some((n, plus)) => {
                    let cpus = n.ceil();
                    if cpus < 1.0 || cpus > f64::from(u32::MAX) {
                        return Err(ImportError::new(format!("`resources.cpus`: {} is no CPU count", brief(value))));
                    }
                    if plus {
                        w.push(format!("`resources.cpus`: {} asks for at least {cpus}; {cpus} is asked", brief(value)));
                    } else if cpus != n {
                        w.push(format!("`resources.cpus`: {n} is rounded up to {cpus}"));
                    }
                    spec.cpus = Some(cpus as u32);
                }
                None => return Err(ImportError::new(format!("`resources.cpus`: {} is no CPU count", brief(value)))),
            },
            "memory" => {
                let mib = memory_mib(value).ok_or_else(|| {
                    ImportError::new(format!("`resources.memory`: {} is no memory size (GB)", brief(value)))
                })?;
                let memory = memory_text(mib);
                if at_least(value).is_some_and(|(_, plus)| plus) {
                    w.push(format!(
                        "`resources.memory`: {} asks for at least {memory}; {memory} is asked",
                        brief(value)
                    ));
                }
                spec.memory = Some(memory);
            }
            "image_id" => match value.as_str().and_then(|i| i.strip_prefix("docker:")) {
                Some(image) if !image.trim().is_empty() => spec.image = Some(image.to_string()),
                _ => w.push(format!(
                    "`resources.image_id`: {} is a machine image, not a container image (docker:IMAGE); left out",
                    brief(value)
                )),
            },
            other => w.push(format!("`resources.{other}`: no portable form; left out")),
        }
    }
    Ok(())
}

/// `H100:8`, `H100`, `{H100: 8}`, `[H100:8, A100:8]` (choices: the first).
fn read_accelerators(value: &Value, spec: &mut JobSpec, w: &mut Vec<String>) {
    let (name, count) = match value {
        Value::String(s) => {
            let choices: Vec<&str> = s.split(',').map(str::trim).filter(|c| !c.is_empty()).collect();
            let Some(first) = choices.first() else { return };
            if choices.len() > 1 {
                w.push(format!("`resources.accelerators`: {} choices ({s}); the first is taken", choices.len()));
            }
            let first = first.trim_matches(|c| matches!(c, '{' | '}' | '[' | ']' | '\'' | '"'));
            match first.rsplit_once(':') {
                Some((name, count)) => (name.trim().to_string(), count.trim().parse::<f64>().ok()),
                None => (first.to_string(), Some(1.0)),
            }
        }
        Value::Object(map) => {
            let Some((name, count)) = map.iter().next() else { return };
            if map.len() > 1 {
                let names: Vec<&str> = map.keys().map(String::as_str).collect();
                w.push(format!(
                    "`resources.accelerators`: {} choices ({}); {name} is taken",
                    names.len(),
                    names.join(", ")
                ));
            }
            let count = if count.is_null() { Some(1.0) } else { number(count) };
            (name.clone(), count)
        }
        Value::Array(choices) => {
            let Some(first) = choices.first() else { return };
            if choices.len() > 1 {
                w.push(format!("`resources.accelerators`: {} choices; the first is taken", choices.len()));
            }
            return read_accelerators(first, spec, w);
        }
        other => {
            w.push(format!("`resources.accelerators`: {} is no accelerator; left out", brief(other)));
            return;
        }
    };
    let count = match count.filter(|c| c.is_finite() && *c >= 0.0) {
        Some(c) => c,
        None => {
            w.push(format!("`resources.accelerators`: the count of {name} is not a number; left out"));
            return;
        }
    };
    let gpus = count.ceil();
    if gpus > f64::from(u32::MAX) {
        w.push(format!("`resources.accelerators`: {count} GPUs is more than a job can ask; left out"));
        return;
    }
    if gpus != count {
        w.push(format!("`resources.accelerators`: {name}:{count} is a share of a GPU; {gpus} whole is asked"));
    }
    spec.gpus = gpus as u32;
    if spec.gpus == 0 {
        return;
    }
    match gpu_type(&name) {
        Some(model) => spec.gpu_type = Some(model),
        None => w.push(format!(
            "`resources.accelerators`: {name:?} is no GPU model flightdeck can name; the model is left out"
        )),
    }
}

/// The canonical model for a native GPU name, when it is one a spec can carry.
pub(crate) fn gpu_type(native: &str) -> Option<String> {
    let model = gpu_names::canonical_model(native);
    let ok = !model.is_empty() && model.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    ok.then_some(model)
}

/// A number or a numeric string, with an optional trailing `+` (at least): (value, plus).
fn at_least(value: &Value) -> Option<(f64, bool)> {
    match value {
        Value::String(s) => {
            let s = s.trim();
            let (n, plus) = match s.strip_suffix('+') {
                Some(n) => (n.trim(), true),
                None => (s, false),
            };
            n.parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0).map(|f| (f, plus))
        }
        other => number(other).filter(|f| *f >= 0.0).map(|f| (f, false)),
    }
}

/// Memory in MiB (rounded up) from SkyPilot's GB (`32`, `32+`, `0.5`, `32GB`, `512MB`, `1TB`).
fn memory_mib(value: &Value) -> Option<u64> {
    let (amount, unit_gib) = match value {
        Value::String(s) => {
            let s = s.trim().trim_end_matches('+').trim().to_ascii_lowercase();
            let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
            let (n, unit) = s.split_at(end);
            let scale = match unit.trim().trim_end_matches('b').trim_end_matches('i') {
                "" | "g" => 1.0,
                "m" => 1.0 / 1024.0,
                "k" => 1.0 / (1024.0 * 1024.0),
                "t" => 1024.0,
                _ => return None,
            };
            (n.parse::<f64>().ok()?, scale)
        }
        other => (number(other)?, 1.0),
    };
    let mib = (amount * unit_gib * 1024.0).ceil();
    (1.0..1e18).contains(&mib).then_some(mib as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_with_setup_choices_and_extras() {
        let text = "name: train\nsetup: pip install -r requirements.txt\nrun: python train.py\nnum_nodes: 2\n\
                    envs:\n  SEED: 7\n  TOKEN: null\n  FLIGHTDECK_MIGRATED_FROM: hpc/123\n\
                    resources:\n  accelerators: [H100:8, A100-80GB:8]\n  cpus: 16+\n  memory: 64+\n  use_spot: true\n  image_id: docker:nvcr.io/nvidia/pytorch:24.01-py3\n\
                    file_mounts:\n  /data: s3://bucket\nservice:\n  replicas: 2\n";
        assert!(detect(text));
        let imported = import(text).unwrap();
        let s = &imported.spec;
        assert_eq!(s.script.as_deref(), Some("pip install -r requirements.txt\npython train.py"));
        assert_eq!(
            (s.gpus, s.gpu_type.as_deref(), s.cpus, s.memory.as_deref()),
            (8, Some("h100"), Some(16), Some("64G"))
        );
        assert_eq!((s.nodes, s.image.as_deref()), (Some(2), Some("nvcr.io/nvidia/pytorch:24.01-py3")));
        assert_eq!(s.migrated_from.as_deref(), Some("hpc/123"));
        assert_eq!(s.env.get("SEED").map(String::as_str), Some("7"));
        let all = imported.warnings.join("\n");
        for name in [
            "`setup`",
            "`envs.TOKEN`",
            "`resources.accelerators`",
            "`resources.cpus`",
            "`resources.memory`",
            "`resources.use_spot`",
            "`file_mounts`",
            "`service`",
        ] {
            assert!(all.contains(name), "{name} in {all}");
        }
    }

    #[test]
    fn accelerators_in_every_form() {
        for (text, gpus, model) in [
            ("H100:8", 8, Some("h100")),
            ("H100", 1, Some("h100")),
            ("{H100: 8}", 8, Some("h100")),
            ("{A100-80GB: 4}", 4, Some("a100-80gb")),
            ("'L4:0.5'", 1, Some("l4")),
            ("[A10G:2, L4:2]", 2, Some("a10g")),
            ("'H100:0'", 0, None),
        ] {
            let t = format!("run: x\nresources:\n  accelerators: {text}\n");
            let s = import(&t).unwrap().spec;
            assert_eq!((s.gpus, s.gpu_type.as_deref()), (gpus, model), "{text}");
        }
    }

    #[test]
    fn managed_and_cluster_comments_come_back() {
        let s = import("# POST /jobs/launch as managed job x\nname: x\nrun: y\n").unwrap().spec;
        assert!(s.managed && s.partition.is_none());
        let s = import("# POST /launch on cluster my-h100s\nname: x\nrun: y\n").unwrap().spec;
        assert_eq!(s.partition.as_deref(), Some("my-h100s"));
        let s = import("# POST /launch on cluster fd-x-xxxxx\nname: x\nrun: y\n").unwrap().spec;
        assert!(s.partition.is_none(), "a generated name is no choice");
    }

    #[test]
    fn refusals_name_the_problem() {
        let err = |t: &str| import(t).unwrap_err().to_string();
        assert!(err("name: x\n").contains("`run`"));
        assert!(err("run: x\nnum_nodes: 0\n").contains("`num_nodes`"));
        assert!(err("run: x\nresources:\n  cpus: lots\n").contains("`resources.cpus`"));
        assert!(err("- a\n- b\n").contains("mapping"));
        assert!(err("name: p\n---\nrun: a\n---\nrun: b\n").contains("pipeline of 2 tasks"));
        assert!(err("run: [1\n").starts_with("line "), "{}", err("run: [1\n"));
        assert!(err("name: [a]\nrun: x\n").contains("`name`"));
        let renamed = import("name: \"a\\nb\"\nrun: x\n").unwrap();
        assert_eq!(renamed.spec.name, "a-b");
        assert!(renamed.warnings[0].starts_with("`name`"), "{:?}", renamed.warnings);
    }

    #[test]
    fn a_pipeline_header_and_one_task_is_a_task() {
        let s = import("name: train\n---\nname: train\nrun: python x.py\n").unwrap().spec;
        assert_eq!(s.command.as_deref(), Some("python x.py"));
    }
}
