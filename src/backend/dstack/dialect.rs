//! dstack's job form, offline: recognise it, import it into a `JobSpec`, export one
//! (`flightdeck spec convert`, `submit` of a native file, migration plans, and the stored run
//! spec of a live run for `spec export`).
//!
//! * **Recognised** by content: one YAML (or JSON) mapping without `apiVersion`/`kind` that
//!   is a dstack run configuration (`type: task`, also `service` or `dev-environment`, which
//!   `import` then refuses by name) or a whole run spec whose `configuration` is one.
//! * **Imported**: `name` (the configuration's, else in a run spec its `run_name`; made a dstack name if
//!   it is not one), `commands` (one line → `command`, more → `script`), `setup` (put before the
//!   commands, with a warning), `env` (a list of `K=V` or a mapping), `resources.gpu` (`H100:8`,
//!   `A100:80GB:4`, `24GB..:2`, `{name, count}`), `cpu`, `memory`, `image`, `max_duration`,
//!   `nodes`, `fleets` (the first is the partition), `working_dir`, and the tag
//!   [`MIGRATED_FROM_TAG`]. Values equal to the defaults the server writes into a stored run
//!   spec (2 CPUs, 8 GB, a 100 GB disk, home `/root` …) are read as unset, so a live run's spec
//!   says what its submitter asked. Everything else is a warning that names it; `groups`
//!   (heterogeneous nodes) is refused.
//! * **Exported**: the task configuration, what a user keeps in `.dstack.yml` and `dstack
//!   apply -f` runs, built by [`manifest::configuration`] (the code the live submit and
//!   preview use) with its `name`. Not the run spec: that one's `run_name` carries the
//!   random suffix a submission draws, and its other keys (repo, SSH key) are the server's,
//!   so a file of it would neither read back the same nor be what a user writes.

use crate::backend::loose_value::{brief, is_empty, number, scalar_text, whole};
use serde_json::{Map, Value};

use super::manifest::{self, MIGRATED_FROM_TAG};
use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native, gpu_names};
use crate::spec::{ImportError, Imported, JobSpec, duration_text, is_identifier, memory_text};

/// A dstack run spec (YAML of the JSON sent to `runs/apply`).
pub const DSTACK_RUN_SPEC: Dialect = Dialect::new("dstack_run_spec", "dstack", "a dstack task", "dstack run spec");

/// The name a configuration without one (and without a run spec around it) is given.
const UNNAMED: &str = "dstack-task";
/// Run configuration types dstack has; only tasks are jobs.
const CONFIGURATION_TYPES: [&str; 3] = ["task", "service", "dev-environment"];
/// Run spec keys the server fills in, which say nothing about the job.
const SERVER_KEYS: [&str; 8] = [
    "repo_id",
    "repo_data",
    "repo_code_hash",
    "repo_dir",
    "file_archives",
    "configuration_path",
    "ssh_key_pub",
    "run_name",
];
/// Words in a `gpu` string that name the vendor, not the model.
const VENDORS: [&str; 5] = ["nvidia", "amd", "google", "intel", "tenstorrent"];

pub fn entry() -> DialectEntry {
    DialectEntry { dialect: DSTACK_RUN_SPEC, detect, import, export }
}

fn document(text: &str) -> Result<Map<String, Value>, ImportError> {
    let docs = serde_saphyr::from_multiple::<Value>(text).map_err(|e| {
        let message = format!("not readable as YAML: {e}");
        match e.location().map(|l| l.line()) {
            Some(line) if line > 0 => ImportError::at(usize::try_from(line).unwrap_or(usize::MAX), message),
            _ => ImportError::new(message),
        }
    })?;
    match <[Value; 1]>::try_from(docs) {
        Ok([Value::Object(map)]) => Ok(map),
        Ok(_) => Err(ImportError::new("a dstack configuration is a YAML mapping (`type: task`, `commands:` …)")),
        Err(docs) => Err(ImportError::new(format!(
            "{} YAML documents: a dstack configuration is one (put one run in each file)",
            docs.len()
        ))),
    }
}

fn is_configuration(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str).is_some_and(|t| CONFIGURATION_TYPES.contains(&t))
}

pub fn detect(text: &str) -> bool {
    if text.trim_start().starts_with("#!") {
        return false;
    }
    let Ok(map) = document(text) else { return false };
    if map.contains_key("apiVersion") || map.contains_key("kind") {
        return false;
    }
    let doc = Value::Object(map);
    is_configuration(&doc) || (doc.get("type").is_none() && doc.get("configuration").is_some_and(is_configuration))
}

pub fn import(text: &str) -> Result<Imported, ImportError> {
    import_value(&Value::Object(document(text)?))
}

/// A task configuration or a run spec (as `runs/get` gives it back) → the spec.
pub fn import_value(doc: &Value) -> Result<Imported, ImportError> {
    let Value::Object(map) = doc else {
        return Err(ImportError::new("a dstack configuration is a mapping"));
    };
    let mut w = Vec::new();
    let imported = match map.get("configuration") {
        Some(Value::Object(conf)) if !map.contains_key("type") => {
            let run_name = map.get("run_name").and_then(Value::as_str);
            let outer_dir = map.get("working_dir").and_then(Value::as_str);
            for (key, value) in map {
                if key != "configuration"
                    && key != "working_dir"
                    && !SERVER_KEYS.contains(&key.as_str())
                    && !is_empty(value)
                {
                    w.push(format!("`{key}`: no portable form; left out"));
                }
            }
            let mut imported = import_configuration(conf, run_name)?;
            if imported.spec.workdir.is_none() {
                imported.spec.workdir = outer_dir.map(str::to_string);
            }
            imported
        }
        Some(_) if !map.contains_key("type") => {
            return Err(ImportError::new("`configuration` is not a mapping"));
        }
        _ => import_configuration(map, None)?,
    };
    w.extend(imported.warnings);
    imported.spec.validate().map_err(|e| ImportError::new(e.to_string()))?;
    Ok(Imported { spec: imported.spec, warnings: w })
}

pub fn export(spec: &JobSpec) -> Result<Native, BackendError> {
    let (mut conf, mut warnings) = manifest::configuration(spec)?;
    let name = dstack_name(&spec.name);
    if name != spec.name {
        warnings.push(format!(
            "`name`: dstack names are lower-case letters, digits and '-' (2 to 41, a letter first); {:?} is written {name}",
            spec.name
        ));
    }
    conf.name = Some(name);
    let text = serde_saphyr::to_string(&conf)
        .map_err(|e| BackendError::Parse { what: "the task configuration".into(), message: e.to_string() })?;
    Ok(Native { dialect: DSTACK_RUN_SPEC, text, warnings })
}

/// `^[a-z][a-z0-9-]{1,40}$`, dstack's rule for run names.
fn is_dstack_name(name: &str) -> bool {
    (2..=41).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The name as dstack takes it: unchanged when it is one, else made one.
fn dstack_name(name: &str) -> String {
    if is_dstack_name(name) { name.to_string() } else { manifest::run_name(name, "") }
}

fn import_configuration(conf: &Map<String, Value>, run_name: Option<&str>) -> Result<Imported, ImportError> {
    let mut w = Vec::new();
    let mut spec = JobSpec::default();
    match conf.get("type").and_then(Value::as_str) {
        Some("task") => {}
        Some(other) => {
            return Err(ImportError::new(format!(
                "`type`: a dstack {other} is no job; only `type: task` configurations are read"
            )));
        }
        None => return Err(ImportError::new("`type`: missing; a dstack task says `type: task`")),
    }
    if conf.get("groups").is_some_and(|g| !is_empty(g)) {
        return Err(ImportError::new(
            "`groups`: a task of heterogeneous node groups has no portable form (one command for all nodes)",
        ));
    }

    // The configuration's `name` is the job's name as given; in a run spec the `run_name`
    // (the run itself, with the suffix a flightdeck submit adds) stands in where it has none.
    let name = match (run_name, conf.get("name")) {
        (_, Some(v)) if !v.is_null() && !is_empty(v) => {
            Some(scalar_text(v).ok_or_else(|| ImportError::new("`name` is not text"))?)
        }
        (Some(run), _) => Some(run.to_string()),
        _ => None,
    };
    spec.name = match name {
        Some(name) => {
            let taken = dstack_name(&name);
            if taken != name {
                w.push(format!("`name`: {name:?} is no dstack name; it is read as {taken}"));
            }
            taken
        }
        None => {
            w.push(format!("`name`: the configuration has none; it is called {UNNAMED}"));
            UNNAMED.to_string()
        }
    };

    let commands = lines_of(conf.get("commands"), "commands")?;
    if commands.is_empty() {
        return Err(ImportError::new("`commands`: the task runs nothing; a job needs a command"));
    }
    let setup = lines_of(conf.get("setup"), "setup")?;
    if !setup.is_empty() {
        w.push("`setup`: put before `commands` in the job's script".into());
    }
    let all: Vec<&str> = setup.iter().chain(&commands).map(String::as_str).collect();
    match all.as_slice() {
        [one] if !one.strip_suffix('\n').unwrap_or(one).contains('\n') => {
            spec.command = Some(one.strip_suffix('\n').unwrap_or(one).to_string());
        }
        many => spec.script = Some(many.join("\n")),
    }

    if let Some(env) = conf.get("env") {
        read_env(env, &mut spec, &mut w);
    }
    match conf.get("resources") {
        None | Some(Value::Null) => {}
        Some(Value::Object(r)) => read_resources(r, &mut spec, &mut w)?,
        Some(other) => w.push(format!("`resources`: {} is not a mapping; left out", brief(other))),
    }
    match conf.get("image") {
        None | Some(Value::Null) => {}
        Some(Value::String(i)) if !i.trim().is_empty() => spec.image = Some(i.clone()),
        Some(other) => w.push(format!("`image`: {} is no image; left out", brief(other))),
    }
    match conf.get("working_dir") {
        None | Some(Value::Null) => {}
        Some(Value::String(d)) if !d.trim().is_empty() => spec.workdir = Some(d.clone()),
        Some(other) => w.push(format!("`working_dir`: {} is no path; left out", brief(other))),
    }
    match conf.get("nodes") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let n = whole(v).filter(|n| *n >= 1).and_then(|n| u32::try_from(n).ok());
            spec.nodes = Some(n.ok_or_else(|| {
                ImportError::new(format!("`nodes`: {} is not a whole number of nodes (1 or more)", brief(v)))
            })?);
        }
    }
    match conf.get("max_duration") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::String(s)) if s.trim() == "off" => {}
        Some(v) => match duration_secs(v) {
            Some(secs) if secs > 0 => spec.time_limit = Some(duration_text(secs)),
            _ => w.push(format!("`max_duration`: {} is no duration; left out", brief(v))),
        },
    }
    read_fleets(conf.get("fleets"), &mut spec, &mut w);
    if let Some(tags) = conf.get("tags") {
        match tags {
            Value::Object(tags) => {
                for (key, value) in tags {
                    match (key.as_str(), value.as_str()) {
                        (MIGRATED_FROM_TAG, Some(origin)) => spec.migrated_from = Some(origin.to_string()),
                        _ => w.push(format!("`tags.{key}`: no portable form; left out")),
                    }
                }
            }
            other if !is_empty(other) => w.push("`tags`: not a mapping; left out".into()),
            _ => {}
        }
    }
    if conf.get("retry").is_some_and(|r| !is_empty(r)) {
        w.push(
            "`retry`: no portable form (a dstack cluster's own `retry` setting adds one at submit); left out".into(),
        );
    }
    let handled = [
        "type",
        "name",
        "groups",
        "commands",
        "setup",
        "env",
        "resources",
        "image",
        "working_dir",
        "nodes",
        "max_duration",
        "fleets",
        "tags",
        "retry",
    ];
    for (key, value) in conf {
        let default = match key.as_str() {
            // What the server writes into every stored run spec.
            "home_dir" => value.as_str() == Some("/root"),
            "priority" => value.as_u64() == Some(0),
            "shell" => matches!(value.as_str(), Some("bash" | "/bin/bash")),
            _ => false,
        };
        if !handled.contains(&key.as_str()) && !default && !is_empty(value) {
            w.push(format!("`{key}`: no portable form; left out"));
        }
    }
    Ok(Imported { spec, warnings: w })
}

/// `commands` / `setup`: a list of strings (one string is taken as a list of one).
fn lines_of(v: Option<&Value>, key: &str) -> Result<Vec<String>, ImportError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| scalar_text(i).ok_or_else(|| ImportError::new(format!("`{key}`: {} is not a command", brief(i)))))
            .filter(|r| r.as_ref().map_or(true, |s| !s.trim().is_empty()))
            .collect(),
        Some(other) => Err(ImportError::new(format!("`{key}`: {} is not a list of commands", brief(other)))),
    }
}

fn read_env(env: &Value, spec: &mut JobSpec, w: &mut Vec<String>) {
    let mut put = |key: &str, value: Option<String>, w: &mut Vec<String>| match value {
        None => w.push(format!("`env.{key}`: no value (dstack takes it from the environment at apply); left out")),
        Some(_) if !is_identifier(key) => w.push(format!("`env.{key}`: not a variable name; left out")),
        Some(v) => {
            spec.env.insert(key.to_string(), v);
        }
    };
    match env {
        Value::Object(map) => {
            for (key, value) in map {
                put(key, scalar_text(value), w);
            }
        }
        Value::Array(items) => {
            for item in items {
                match item.as_str() {
                    Some(entry) => match entry.split_once('=') {
                        Some((key, value)) => put(key, Some(value.to_string()), w),
                        None => put(entry, None, w),
                    },
                    None => w.push(format!("`env`: {} is no `NAME=VALUE`; left out", brief(item))),
                }
            }
        }
        other if !is_empty(other) => w.push("`env`: neither a list nor a mapping; left out".into()),
        _ => {}
    }
}

fn read_fleets(fleets: Option<&Value>, spec: &mut JobSpec, w: &mut Vec<String>) {
    let Some(Value::Array(items)) = fleets else {
        if fleets.is_some_and(|f| !is_empty(f)) {
            w.push("`fleets`: not a list; left out".into());
        }
        return;
    };
    let names: Vec<String> = items
        .iter()
        .filter_map(|f| match f {
            Value::String(s) => Some(s.clone()),
            Value::Object(r) => {
                let name = r.get("name").and_then(Value::as_str)?;
                Some(match r.get("project").and_then(Value::as_str) {
                    Some(project) => format!("{project}/{name}"),
                    None => name.to_string(),
                })
            }
            _ => None,
        })
        .filter(|n| !n.trim().is_empty())
        .collect();
    if names.len() > 1 {
        w.push(format!("`fleets`: {} fleets ({}); the first is the partition", names.len(), names.join(", ")));
    }
    spec.partition = names.into_iter().next();
}

/// A count or range as dstack writes it (`2`, `"2"`, `"2.."`, `"1..4"`, `{min, max}`):
/// (least, most).
fn range(v: &Value) -> Option<(Option<f64>, Option<f64>)> {
    match v {
        Value::Object(r) => Some((r.get("min").and_then(number), r.get("max").and_then(number))),
        Value::String(s) => match s.split_once("..") {
            Some((lo, hi)) => {
                let side =
                    |t: &str| if t.trim().is_empty() { Some(None) } else { t.trim().parse::<f64>().ok().map(Some) };
                Some((side(lo)?, side(hi)?))
            }
            None => s.trim().parse::<f64>().ok().map(|n| (Some(n), Some(n))),
        },
        other => number(other).map(|n| (Some(n), Some(n))),
    }
}

/// The least of a range, saying so when the range is wider.
fn least(v: &Value, key: &str, w: &mut Vec<String>) -> Option<f64> {
    let (lo, hi) = range(v)?;
    let taken = lo.or(hi)?;
    if let (Some(lo), Some(hi)) = (lo, hi)
        && hi > lo
    {
        w.push(format!("`{key}`: {lo}..{hi} is a range; {lo} is asked"));
    }
    Some(taken)
}

fn read_resources(r: &Map<String, Value>, spec: &mut JobSpec, w: &mut Vec<String>) -> Result<(), ImportError> {
    for (key, value) in r {
        if is_empty(value) {
            continue;
        }
        match key.as_str() {
            "gpu" => read_gpu(value, spec, w),
            "cpu" => {
                let (count, arch) = match value {
                    Value::Object(c) if c.contains_key("count") || c.contains_key("arch") => {
                        (c.get("count").cloned().unwrap_or(Value::Null), c.get("arch").cloned())
                    }
                    Value::String(s) => match s.rsplit_once(':') {
                        Some((arch, count)) => {
                            (Value::String(count.to_string()), Some(Value::String(arch.to_string())))
                        }
                        None => (value.clone(), None),
                    },
                    other => (other.clone(), None),
                };
                if let Some(arch) = arch.filter(|a| !is_empty(a)) {
                    w.push(format!(
                        "`resources.cpu`: the architecture {} has no portable form; left out",
                        brief(&arch)
                    ));
                }
                // The server's default (`{count: {min: 2}}`) in a stored run spec: unset.
                if matches!(&count, Value::Object(c) if c.get("min").and_then(number) == Some(2.0) && c.get("max").is_none_or(Value::is_null))
                {
                    continue;
                }
                let n = least(&count, "resources.cpu", w)
                    .map(f64::ceil)
                    .filter(|n| *n >= 1.0 && *n <= f64::from(u32::MAX))
                    .ok_or_else(|| ImportError::new(format!("`resources.cpu`: {} is no CPU count", brief(value))))?;
                spec.cpus = Some(n as u32);
            }
            "memory" => {
                if matches!(value, Value::Object(m) if m.get("min").and_then(number) == Some(8.0) && m.get("max").is_none_or(Value::is_null))
                {
                    continue;
                }
                let mib = memory_range(value, "resources.memory", w).ok_or_else(|| {
                    ImportError::new(format!("`resources.memory`: {} is no memory size", brief(value)))
                })?;
                spec.memory = Some(memory_text(mib));
            }
            "disk" => {
                let default = value.get("size").is_some_and(|s| {
                    s.get("min").and_then(number) == Some(100.0) && s.get("max").is_none_or(Value::is_null)
                });
                if !default {
                    w.push(format!("`resources.disk`: {} has no portable form; left out", brief(value)));
                }
            }
            other => w.push(format!("`resources.{other}`: no portable form; left out")),
        }
    }
    Ok(())
}

/// `32GB`, `32GB..`, `32..64`, `500MB..`, `{min: 32.0, max: null}`, `32` (GB) → the least, in MiB.
fn memory_range(v: &Value, key: &str, w: &mut Vec<String>) -> Option<u64> {
    let gb = |t: &str| -> Option<Option<f64>> {
        let t = t.trim().to_ascii_lowercase().replace(' ', "");
        if t.is_empty() {
            return Some(None);
        }
        let (n, scale) = if let Some(n) = t.strip_suffix("tb") {
            (n, 1024.0)
        } else if let Some(n) = t.strip_suffix("gb") {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix("mb") {
            (n, 1.0 / 1024.0)
        } else {
            (t.as_str(), 1.0)
        };
        n.parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0).map(|f| Some(f * scale))
    };
    let (lo, hi) = match v {
        Value::String(s) => match s.split_once("..") {
            Some((lo, hi)) => (gb(lo)?, gb(hi)?),
            None => {
                let n = gb(s)?;
                (n, n)
            }
        },
        other => range(other)?,
    };
    let taken = lo.or(hi)?;
    if let (Some(lo), Some(hi)) = (lo, hi)
        && hi > lo
    {
        w.push(format!("`{key}`: {lo}GB..{hi}GB is a range; {lo}GB is asked"));
    }
    let mib = (taken * 1024.0).ceil();
    (1.0..1e18).contains(&mib).then_some(mib as u64)
}

/// `resources.gpu`: `H100:8`, `A100:80GB:4`, `nvidia:H100:1..2`, `24GB..:2`, `A100,H100:2`,
/// `2`, `{name: [H100], count: {min, max}, memory}`.
fn read_gpu(value: &Value, spec: &mut JobSpec, w: &mut Vec<String>) {
    let key = "resources.gpu";
    let mut names: Vec<String> = Vec::new();
    let mut count: Option<Value> = None;
    let mut memory: Option<Value> = None;
    match value {
        Value::String(text) => {
            for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
                let lower = part.to_ascii_lowercase();
                if VENDORS.contains(&lower.as_str()) {
                    continue;
                }
                if range(&Value::String(part.to_string())).is_some() {
                    count = Some(Value::String(part.to_string()));
                } else if is_memory(&lower) {
                    memory = Some(Value::String(part.to_string()));
                } else {
                    names.extend(part.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string));
                }
            }
            if count.is_none() && (!names.is_empty() || memory.is_some()) {
                count = Some(Value::from(1));
            }
        }
        Value::Object(g) => {
            match g.get("name") {
                Some(Value::String(n)) => names.push(n.clone()),
                Some(Value::Array(ns)) => names.extend(ns.iter().filter_map(Value::as_str).map(str::to_string)),
                _ => {}
            }
            count = Some(g.get("count").cloned().unwrap_or(Value::from(1)));
            memory = g.get("memory").filter(|m| !m.is_null()).cloned();
            for extra in ["total_memory", "compute_capability"] {
                if g.get(extra).is_some_and(|v| !is_empty(v)) {
                    w.push(format!("`{key}.{extra}`: no portable form; left out"));
                }
            }
        }
        other => count = Some(other.clone()),
    }
    let Some(n) = count.as_ref().and_then(|c| least(c, key, w)) else {
        w.push(format!("`{key}`: {} is no GPU request; left out", brief(value)));
        return;
    };
    let gpus = n.ceil();
    if !(0.0..=f64::from(u32::MAX)).contains(&gpus) {
        w.push(format!("`{key}`: {n} GPUs is no count; left out"));
        return;
    }
    spec.gpus = gpus as u32;
    if spec.gpus == 0 {
        return;
    }
    if names.len() > 1 {
        w.push(format!("`{key}`: {} models ({}); {} is taken", names.len(), names.join(", "), names[0]));
    }
    // One memory size, as written (`80GB`) or as the server stores it (`{min: 80, max: 80}`).
    let exact_memory = memory.as_ref().and_then(|m| match m {
        Value::String(t) => (!t.contains("..")).then(|| t.trim().to_ascii_uppercase()),
        Value::Object(r) => match (r.get("min").and_then(number), r.get("max").and_then(number)) {
            (Some(lo), Some(hi)) if lo == hi && lo.fract() == 0.0 => Some(format!("{lo}GB")),
            _ => None,
        },
        _ => None,
    });
    let Some(name) = names.first() else {
        if let Some(m) = &memory {
            w.push(format!("`{key}`: GPUs of {} memory, of no model; the model is left to the target", brief(m)));
        }
        return;
    };
    let plain = gpu_names::canonical_model(name);
    let model = match &exact_memory {
        Some(m) => {
            let variant = gpu_names::canonical_model(&format!("{name}-{m}"));
            if variant == plain {
                w.push(format!("`{key}`: the memory {m} of {name} has no portable form; left out"));
            }
            variant
        }
        None => {
            if let Some(m) = &memory {
                w.push(format!("`{key}`: the memory {} of {name} has no portable form; left out", brief(m)));
            }
            plain
        }
    };
    if model.is_empty() || !model.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
        w.push(format!("`{key}`: {name:?} is no GPU model flightdeck can name; the model is left out"));
        return;
    }
    spec.gpu_type = Some(model);
}

/// `24GB`, `40GB..80GB`, `..80GB`: a memory bound, not a model name.
fn is_memory(lower: &str) -> bool {
    lower.contains("gb")
        && lower.split("..").all(|p| {
            p.is_empty() || p.strip_suffix("gb").is_some_and(|n| n.trim().parse::<f64>().is_ok_and(|f| f >= 0.0))
        })
}

/// `max_duration`: seconds as a number, or `30s`, `15m`, `2h`, `1d`, `1w`, `1h30m`.
fn duration_secs(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => {
            let s = s.trim();
            if let Some(weeks) = s.strip_suffix('w') {
                return weeks.parse::<u64>().ok()?.checked_mul(604_800);
            }
            if s.chars().all(|c| c.is_ascii_digit()) {
                return s.parse().ok();
            }
            crate::spec::parse_time_limit_secs(s).ok()
        }
        other => whole(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(text: &str) -> JobSpec {
        import(text).unwrap().spec
    }

    #[test]
    fn gpu_requests_in_every_form() {
        for (gpu, gpus, model) in [
            ("H100:8", 8, Some("h100")),
            ("H100", 1, Some("h100")),
            ("A100:80GB:4", 4, Some("a100-80gb")),
            ("nvidia:H100:1..2", 1, Some("h100")),
            ("24GB..:2", 2, None),
            ("A10G,L4:2", 2, Some("a10g")),
            ("'2'", 2, None),
            ("{name: [H100], count: {min: 2, max: 2}}", 2, Some("h100")),
            ("{name: L4, count: 3}", 3, Some("l4")),
            ("{name: [A100], count: {min: 4, max: 4}, memory: {min: 80.0, max: 80.0}}", 4, Some("a100-80gb")),
            ("0", 0, None),
        ] {
            let s = spec_of(&format!("type: task\nname: t1\ncommands: [x]\nresources:\n  gpu: {gpu}\n"));
            assert_eq!((s.gpus, s.gpu_type.as_deref()), (gpus, model), "{gpu}");
        }
        assert_eq!(manifest::gpu_name("a100-80gb"), "A100:80GB");
        assert_eq!(manifest::gpu_name("h100-nvl"), "H100-NVL");
        assert_eq!(manifest::gpu_name("1g.10gb"), "1G.10GB");
    }

    #[test]
    fn env_as_list_or_mapping_and_what_is_left_out() {
        let s = import("type: task\nname: t1\ncommands: [x]\nenv:\n  - A=1\n  - HF_TOKEN\n  - B=x=y\n").unwrap();
        assert_eq!(s.spec.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(s.spec.env.get("B").map(String::as_str), Some("x=y"));
        assert!(s.warnings.iter().any(|w| w.starts_with("`env.HF_TOKEN`")), "{:?}", s.warnings);
        let s = import("type: task\nname: t1\ncommands: [x]\nenv: {A: 1}\nspot_policy: auto\nports: [8080]\n").unwrap();
        assert_eq!(s.spec.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(s.warnings, ["`ports`: no portable form; left out", "`spot_policy`: no portable form; left out"]);
    }

    #[test]
    fn durations_and_names() {
        let t = |d: &str| spec_of(&format!("type: task\nname: t1\ncommands: [x]\nmax_duration: {d}\n")).time_limit;
        assert_eq!(t("7200").as_deref(), Some("2h"));
        assert_eq!(t("2h").as_deref(), Some("2h"));
        assert_eq!(t("90m").as_deref(), Some("1h30m"));
        assert_eq!(t("1w").as_deref(), Some("7d"));
        assert_eq!(t("off"), None);
        let s = import("type: task\nname: \"Train LLM!\"\ncommands: [x]\n").unwrap();
        assert_eq!(s.spec.name, "train-llm");
        assert!(s.warnings[0].starts_with("`name`"), "{:?}", s.warnings);
    }

    #[test]
    fn refusals_name_the_problem() {
        let err = |t: &str| import(t).unwrap_err().to_string();
        assert!(err("type: service\ncommands: [x]\n").contains("`type`"));
        assert!(err("type: task\n").contains("`commands`"));
        assert!(err("type: task\ncommands: [x]\ngroups: [{name: a}]\n").contains("`groups`"));
        assert!(err("type: task\ncommands: [x]\nnodes: 0\n").contains("`nodes`"));
        assert!(err("type: task\ncommands: [x]\n---\ntype: task\n").contains("2 YAML documents"));
        assert!(err("configuration: 5\n").contains("`configuration`"));
    }

    #[test]
    fn detection() {
        assert!(detect("type: task\ncommands: [x]\n"));
        assert!(detect("{\"run_name\": \"a\", \"configuration\": {\"type\": \"task\"}}"));
        assert!(!detect("apiVersion: v1\nkind: Secret\ntype: Opaque\n"));
        assert!(!detect("type: fleet\nnodes: 2\n"));
        assert!(!detect("run: python x.py\n"));
        assert!(!detect("#!/bin/bash\n#SBATCH -N 1\nsrun x\n"));
        assert!(!detect("name = \"x\"\ncommand = \"type: task\"\n"));
    }
}
