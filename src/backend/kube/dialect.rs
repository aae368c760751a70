//! This kind's native job form, offline: a `batch/v1` Job manifest (YAML or JSON). Recognise
//! it, import it into a `JobSpec`, export one (`flightdeck spec convert`, `submit` of a
//! native file, migration plans), and read back a live Job or bare pod the same way
//! (`Backend::job_spec`).
//!
//! | Job | spec |
//! |---|---|
//! | `metadata.name` (`generateName` less its `-`; flightdeck's random suffix taken off when the `flightdeck.io/name-suffix` annotation says it added one; the `flightdeck.io/name` annotation when the Job's name was made from it) | `name` |
//! | `metadata.namespace` | `account` |
//! | label `kueue.x-k8s.io/queue-name` | `partition` |
//! | annotation `flightdeck.io/migrated-from` | `migrated_from` |
//! | `spec.activeDeadlineSeconds` | `time_limit` |
//! | `completionMode: Indexed`, `completions` N, `parallelism` P | `array = "0-N-1%P"` |
//! | the one container's `command` + `args`: `sh -c CMD` → CMD; `INTERP -c SCRIPT` whose `#!` line is INTERP → the script; another shell's `-c` → a script with a `#!` line for it; any other argv → shell-quoted | `command` / `script` |
//! | `image`, `workingDir`, `env` (plain values) | `image`, `workdir`, `env` |
//! | `$(NAME)` and `$$` in command, args and env values, as the kubelet expands them | the text the container gets (export escapes the other way) |
//! | limits `nvidia.com/gpu`, `amd.com/gpu` (MIG `nvidia.com/mig-1g.10gb` names the type too) | `gpus` |
//! | node selector (or required node affinity) `nvidia.com/gpu.product`, `amd.com/gpu.product-name`, through `model::gpu_names` | `gpu_type` |
//! | requests `cpu` (rounded up to whole CPUs), limits `memory` (to whole MiB) | `cpus`, `memory` |
//!
//! Everything else a manifest says (volumes, tolerations, affinity, other containers, init
//! containers, a service account, retries …) is one warning per field, by its path, except
//! what the API server fills in by itself (its defaults, bookkeeping, status), so a live Job
//! reads as cleanly as the file it was created from.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::{Value, json};

use super::config::check_k8s_name;
use super::gpu;
use super::kueue::QUEUE_LABEL;
use super::manifest::{self, GpuPlacement, Target};
use super::map::{AMD_PRODUCT, MIGRATED_FROM, NAME, NAME_SUFFIX, NVIDIA_PRODUCT, SUBMITTED_BY};
use super::workloads::submit::{MultiNode, multi_node_manifest};
use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native, gpu_names};
use crate::spec::{ImportError, Imported, JobSpec, SpecError, duration_text, is_identifier, memory_text, parse_array};

/// A `batch/v1` Job manifest (YAML).
pub const KUBERNETES_JOB: Dialect =
    Dialect::new("kubernetes_job", "kubernetes", "a Kubernetes Job", "Kubernetes Job manifest");

pub fn entry() -> DialectEntry {
    DialectEntry { dialect: KUBERNETES_JOB, detect, import, export }
}

/// This kind's forms: the Job first, then the workloads (`workloads::dialect`).
pub fn entries() -> Vec<DialectEntry> {
    let mut all = vec![entry()];
    all.extend(super::workloads::dialect::entries());
    all
}

// ----- recognising -------------------------------------------------------------------------

/// Just enough of a Kubernetes object to say what it is.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    items: Option<Vec<Head>>,
}

impl Head {
    fn is_job(&self) -> bool {
        self.api_version.as_deref() == Some("batch/v1") && self.kind.as_deref() == Some("Job")
    }
}

pub(crate) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

pub(crate) fn looks_like_json(text: &str) -> bool {
    without_bom(text).trim_start().starts_with('{')
}

/// A `batch/v1` Job, in YAML or JSON. A List or a stream of several documents holding one
/// is claimed too, so that importing it says why it cannot be read instead of the file
/// falling through to another dialect.
/// A Job that does not parse is claimed too when it plainly says it is one, so that the
/// reader's error (with its line) is what the user sees.
pub fn detect(text: &str) -> bool {
    let text = without_bom(text);
    let heads: Option<Vec<Head>> =
        if looks_like_json(text) { serde_json::from_str::<Head>(text).ok().map(|h| vec![h]) } else { None };
    match heads.or_else(|| serde_saphyr::from_multiple::<Head>(text).ok()) {
        Some(heads) => {
            heads.iter().any(|h| h.is_job() || h.items.as_ref().is_some_and(|items| items.iter().any(Head::is_job)))
        }
        None => says_it_is_a_job(text),
    }
}

/// `apiVersion: batch/v1` and `kind: Job` as top-level lines, the first of them before any
/// other content (so a script that only carries a manifest in a here-document is not one).
fn says_it_is_a_job(text: &str) -> bool {
    if looks_like_json(text) {
        return text.contains("\"batch/v1\"") && text.contains("\"Job\"");
    }
    let mut lines = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#') && l.trim() != "---");
    let head = |l: &str| {
        let l = l.trim_end();
        l == "apiVersion: batch/v1" || l == "kind: Job"
    };
    lines.next().is_some_and(head) && text.lines().filter(|l| head(l)).count() >= 2
}

// ----- reading -----------------------------------------------------------------------------

/// A Job manifest (one YAML or JSON document) → the portable spec and what it could not carry.
pub fn import(text: &str) -> Result<Imported, ImportError> {
    let text = without_bom(text);
    let (raw, job) = parse(text)?;
    let doc = serde_json::to_value(&job).map_err(|e| ImportError::new(format!("cannot read the Job: {e}")))?;
    let mut reader = Reader::default();
    reader.unknown_fields("", &raw, &doc);
    reader.job(&doc, &job)
}

/// A Job object as the API server returns it.
pub fn import_job(job: &KJob) -> Result<Imported, ImportError> {
    let doc = serde_json::to_value(job).map_err(|e| ImportError::new(format!("cannot read the Job: {e}")))?;
    Reader::default().job(&doc, job)
}

/// A pod that no Job owns, as the API server returns it: its spec read as a Job's template.
pub fn import_pod(pod: &Pod) -> Result<Imported, ImportError> {
    let doc = serde_json::to_value(pod).map_err(|e| ImportError::new(format!("cannot read the pod: {e}")))?;
    let mut reader = Reader { pod: true, ..Reader::default() };
    let mut spec = reader.metadata(&pod.metadata, &doc["metadata"], "pod")?;
    let Some(pod_spec) = &pod.spec else { return Err(ImportError::new("`spec`: the pod has no spec")) };
    reader.pod_spec(&mut spec, &doc["spec"], pod_spec, "spec")?;
    reader.leftovers("", &doc, &["apiVersion", "kind", "metadata", "spec", "status"], &[]);
    reader.finish(spec)
}

/// The text's one document, as written (to find fields Kubernetes does not know) and as a
/// Job. The Job is read by type, straight from the text: YAML read without a type makes
/// `N`, `no` or `on` booleans and `0123` a number, which a Job's string fields are not.
fn parse(text: &str) -> Result<(Value, KJob), ImportError> {
    if looks_like_json(text) {
        match serde_json::from_str::<Value>(text) {
            Ok(raw) => {
                check_kind(std::slice::from_ref(&raw))?;
                let job = serde_json::from_str::<KJob>(text).map_err(|e| json_error(&e, "not a valid batch/v1 Job"))?;
                return Ok((raw, job));
            }
            // Text that starts like JSON but is not is told about as JSON, unless it is
            // YAML's flow style.
            Err(e) => {
                if serde_saphyr::from_multiple::<Value>(text).is_err() {
                    return Err(json_error(&e, "not valid JSON"));
                }
            }
        }
    }
    let docs = serde_saphyr::from_multiple::<Value>(text).map_err(|e| yaml_error(&e, "not valid YAML"))?;
    check_kind(&docs)?;
    let job = serde_saphyr::from_str::<KJob>(text).map_err(|e| yaml_error(&e, "not a valid batch/v1 Job"))?;
    let raw = docs.into_iter().next().unwrap_or_default();
    Ok((raw, job))
}

/// A JSON error at the line it names.
pub(crate) fn json_error(err: &serde_json::Error, what: &str) -> ImportError {
    let message = err.to_string();
    let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
    ImportError::at(err.line(), format!("{what}: {message}"))
}

/// A YAML error at the line it names (its first line: the rest is a picture of the text).
pub(crate) fn yaml_error(err: &serde_saphyr::Error, what: &str) -> ImportError {
    let text = err.to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // `line 4 column 16: invalid i32` → `invalid i32 (column 16)`.
    let message = match first.strip_prefix("line ").and_then(|rest| rest.split_once(": ")) {
        Some((position, message)) => match position.split_once(" column ") {
            Some((_, column)) => format!("{message} (column {column})"),
            None => message.to_string(),
        },
        None => first.to_string(),
    };
    let message = format!("{what}: {message}");
    match err.location().map(|l| l.line()).filter(|l| *l > 0) {
        Some(line) => ImportError::at(usize::try_from(line).unwrap_or(usize::MAX), message),
        None => ImportError::new(message),
    }
}

/// The documents are one `batch/v1` Job.
fn check_kind(docs: &[Value]) -> Result<(), ImportError> {
    let Some(doc) = docs.first() else {
        return Err(ImportError::new("no Kubernetes object in the text"));
    };
    if docs.len() > 1 {
        return Err(ImportError::new(format!(
            "{} YAML documents: flightdeck reads one Job at a time (split the file at its `---` lines)",
            docs.len()
        )));
    }
    let Value::Object(object) = doc else {
        return Err(ImportError::new("not a Kubernetes object (a mapping with `apiVersion` and `kind`)"));
    };
    let field = |k: &str| object.get(k).and_then(Value::as_str);
    match (field("apiVersion"), field("kind")) {
        (Some("batch/v1"), Some("Job")) => Ok(()),
        (_, Some(kind)) if kind.ends_with("List") => {
            let items = object.get("items").and_then(Value::as_array).map_or(0, Vec::len);
            Err(ImportError::new(format!(
                "a {} of {items} objects: flightdeck reads one Job at a time (`kubectl get job NAME -o yaml` gives one)",
                shown(kind)
            )))
        }
        (Some(api), Some(kind)) => {
            Err(ImportError::new(format!("a {} {}, not a batch/v1 Job", shown(api), shown(kind))))
        }
        _ => Err(ImportError::new("no `apiVersion` and `kind`: not a Kubernetes object")),
    }
}

/// A value from the manifest inside a message: quoted, escaped, at most 60 characters.
pub(crate) fn shown(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        format!("{:?}…", text.chars().take(MAX).collect::<String>())
    }
}

/// The pull policy the API server gives a container that names none.
fn default_pull_policy(image: &str) -> &'static str {
    let last = image.rsplit('/').next().unwrap_or(image);
    let tagged = last.contains(':') && !last.ends_with(":latest");
    if image.contains('@') || tagged { "IfNotPresent" } else { "Always" }
}

/// Labels and annotations the API server, the Job controller, Kueue and kubectl add.
fn is_system_key(key: &str) -> bool {
    matches!(key, "controller-uid" | "job-name" | "kubectl.kubernetes.io/last-applied-configuration")
        || key.starts_with("batch.kubernetes.io/")
        || key.starts_with("kueue.x-k8s.io/")
}

/// The shells whose `-c` runs a script as it is.
fn shell_name(program: &str) -> Option<&str> {
    let base = program.rsplit('/').next().unwrap_or(program);
    matches!(base, "sh" | "bash" | "dash" | "ash" | "zsh" | "ksh").then_some(base)
}

/// A model for an AMD Instinct board (`mi300x`).
fn is_amd_model(model: &str) -> bool {
    model.strip_prefix("mi").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

fn is_gpu_type(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Where a spec field came from in the manifest, for a validation message.
fn manifest_path(field: &str, container: &str) -> String {
    match field {
        "name" => "metadata.name".into(),
        "account" => "metadata.namespace".into(),
        "partition" => format!("metadata.labels.{QUEUE_LABEL}"),
        "migrated_from" => format!("metadata.annotations.{MIGRATED_FROM}"),
        "time_limit" => "spec.activeDeadlineSeconds".into(),
        "array" => "spec.completions".into(),
        "command" | "script" => format!("{container}.command"),
        "image" => format!("{container}.image"),
        "workdir" => format!("{container}.workingDir"),
        "gpus" | "gpu_type" | "cpus" | "memory" => format!("{container}.resources"),
        f => match f.strip_prefix("env.") {
            Some(name) => format!("{container}.env.{name}"),
            None => f.to_string(),
        },
    }
}

#[derive(Default)]
struct Reader {
    warnings: Vec<String>,
    /// Reading a pod (where the scheduler sets `nodeName`), not a Job.
    pod: bool,
    /// The path of the container the spec came from.
    container: String,
}

impl Reader {
    fn warn(&mut self, path: &str, why: impl fmt::Display) {
        self.warnings.push(format!("`{path}`: {why}"));
    }

    /// The text the container gets: the kubelet's expansion of `$(NAME)` to the value of an
    /// env variable and of `$$` to `$` (the rules of Kubernetes' `third_party/forked/golang/
    /// expansion`); a reference it cannot resolve stays as written, as it does there.
    fn expand(&mut self, text: &str, values: &BTreeMap<String, Option<String>>, at: &str) -> String {
        if !text.contains('$') {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            match after.as_bytes().first() {
                Some(b'$') => {
                    out.push('$');
                    rest = &after[1..];
                }
                Some(b'(') => match after.find(')') {
                    Some(close) => {
                        let name = &after[1..close];
                        match values.get(name) {
                            Some(Some(value)) => out.push_str(value),
                            unresolved => {
                                if unresolved.is_some() {
                                    self.warn(
                                        at,
                                        format!("refers to $({name}), whose value is set at run time; left as written"),
                                    );
                                }
                                out.push('$');
                                out.push_str(&after[..=close]);
                            }
                        }
                        rest = &after[close + 1..];
                    }
                    None => {
                        out.push_str("$(");
                        rest = &after[1..];
                    }
                },
                // A lone `$` (at the end, or before anything else) is itself.
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    fn finish(self, spec: JobSpec) -> Result<Imported, ImportError> {
        spec.validate().map_err(|err| match err {
            SpecError::Invalid { field, message } => ImportError::new(format!(
                "`{}` (the spec's `{field}`): {message}",
                manifest_path(&field, &self.container)
            )),
            other => ImportError::new(other.to_string()),
        })?;
        Ok(Imported { spec, warnings: self.warnings })
    }

    /// A Job: its metadata, its own fields, then its pod template.
    fn job(mut self, doc: &Value, job: &KJob) -> Result<Imported, ImportError> {
        let mut spec = self.metadata(&job.metadata, &doc["metadata"], "Job")?;
        let Some(job_spec) = &job.spec else { return Err(ImportError::new("`spec`: the Job has no spec")) };
        let raw = &doc["spec"];

        match job_spec.active_deadline_seconds {
            Some(secs) if secs > 0 => spec.time_limit = Some(duration_text(secs.unsigned_abs())),
            Some(secs) => self.warn("spec.activeDeadlineSeconds", format!("{secs} is no time limit; dropped")),
            None => {}
        }
        let completions = job_spec.completions;
        let parallelism = job_spec.parallelism;
        if job_spec.completion_mode.as_deref() == Some("Indexed") {
            spec.array = Some(self.indexed(completions, parallelism)?);
        } else {
            if completions.is_some_and(|c| c != 1) || parallelism.is_some_and(|p| p != 1) {
                self.warn(
                    "spec.completions",
                    format!(
                        "{} completions, {} at a time, of interchangeable pods (a work queue) have no portable form; read as one run",
                        completions.map_or("unset".into(), |c| c.to_string()),
                        parallelism.unwrap_or(1)
                    ),
                );
            }
        }
        if job_spec.suspend == Some(true) && spec.partition.is_none() {
            self.warn("spec.suspend", "the Job is suspended (held); the spec describes it running");
        }
        match job_spec.backoff_limit {
            Some(0) | None => {}
            Some(n) => self.warn(
                "spec.backoffLimit",
                format!("failed pods are retried up to {n} times here; a spec job is not retried (flightdeck submits with 0)"),
            ),
        }
        let mut ignored = vec![
            "template",
            "activeDeadlineSeconds",
            "completionMode",
            "completions",
            "parallelism",
            "suspend",
            "backoffLimit",
        ];
        // The controller writes a selector of its own unless the manifest chose one.
        if job_spec.manual_selector != Some(true) {
            ignored.extend(["selector", "manualSelector"]);
        }
        self.leftovers("spec", raw, &ignored, &[("podReplacementPolicy", json!("TerminatingOrFailed"))]);
        self.leftovers("", doc, &["apiVersion", "kind", "metadata", "spec", "status"], &[]);

        let template = &raw["template"];
        let job_labels = job.metadata.labels.clone().unwrap_or_default();
        if let Some(labels) = template["metadata"]["labels"].as_object() {
            let extra: Vec<&str> = labels
                .iter()
                .filter(|(k, v)| {
                    job_labels.get(*k).map(String::as_str) != v.as_str()
                        && !is_system_key(k)
                        && !(k.as_str() == "app.kubernetes.io/managed-by" && v.as_str() == Some("flightdeck"))
                })
                .map(|(k, _)| k.as_str())
                .collect();
            self.listed("spec.template.metadata.labels", &extra);
        }
        if let Some(annotations) = template["metadata"]["annotations"].as_object() {
            let extra: Vec<&str> = annotations.keys().map(String::as_str).filter(|k| !is_system_key(k)).collect();
            self.listed("spec.template.metadata.annotations", &extra);
        }
        self.leftovers(
            "spec.template.metadata",
            &template["metadata"],
            &["labels", "annotations", "creationTimestamp"],
            &[],
        );
        self.leftovers("spec.template", template, &["metadata", "spec"], &[]);
        let Some(pod_spec) = job_spec.template.spec.as_ref() else {
            return Err(ImportError::new("`spec.template.spec`: the Job has no pod template"));
        };
        self.pod_spec(&mut spec, &template["spec"], pod_spec, "spec.template.spec")?;
        self.finish(spec)
    }

    /// `completionMode: Indexed` → `0-N-1%P`.
    fn indexed(&mut self, completions: Option<i32>, parallelism: Option<i32>) -> Result<String, ImportError> {
        let count = match completions {
            Some(c) if c > 0 => c.unsigned_abs(),
            Some(c) => {
                return Err(ImportError::new(format!(
                    "`spec.completions`: an Indexed Job of {c} completions runs nothing"
                )));
            }
            None => return Err(ImportError::new("`spec.completions`: an Indexed Job needs its number of completions")),
        };
        let mut array = if count == 1 { "0".to_string() } else { format!("0-{}", count - 1) };
        // Kubernetes runs one pod at a time when parallelism is not set.
        match parallelism.unwrap_or(1) {
            p if p <= 0 => {
                self.warn("spec.parallelism", format!("{p}: the Job runs no pod until it is raised; read as no limit"))
            }
            p if p.unsigned_abs() < count => array.push_str(&format!("%{p}")),
            _ => {}
        }
        parse_array(&array).map_err(|why| ImportError::new(format!("`spec.completions`: {count}: {why}")))?;
        Ok(array)
    }

    /// Name, namespace, queue and flightdeck's annotations; the rest of the metadata warned.
    fn metadata(&mut self, meta: &ObjectMeta, raw: &Value, what: &str) -> Result<JobSpec, ImportError> {
        let annotations = meta.annotations.clone().unwrap_or_default();
        let labels = meta.labels.clone().unwrap_or_default();
        let mut spec = JobSpec { name: self.name(meta, &annotations, what)?, ..JobSpec::default() };
        if let Some(namespace) = meta.namespace.as_deref().filter(|n| !n.is_empty()) {
            match check_k8s_name(namespace, 63, false) {
                Ok(()) => spec.account = Some(namespace.to_string()),
                Err(why) => self.warn("metadata.namespace", format!("{why}; dropped")),
            }
        }
        if let Some(queue) = labels.get(QUEUE_LABEL) {
            match check_k8s_name(queue, 63, true) {
                Ok(()) => spec.partition = Some(queue.clone()),
                Err(why) => self.warn(&format!("metadata.labels.{QUEUE_LABEL}"), format!("{why}; dropped")),
            }
        }
        if let Some(origin) = annotations.get(MIGRATED_FROM) {
            if origin.trim().is_empty() || origin.chars().any(crate::safe_text::is_unsafe) {
                self.warn(
                    &format!("metadata.annotations.{MIGRATED_FROM}"),
                    format!("{} is no job reference; dropped", shown(origin)),
                );
            } else {
                spec.migrated_from = Some(origin.clone());
            }
        }
        let extra: Vec<&str> = labels
            .iter()
            .filter(|(k, v)| {
                let read = k.as_str() == QUEUE_LABEL
                    || is_system_key(k)
                    || (k.as_str() == "app.kubernetes.io/managed-by" && v.as_str() == "flightdeck")
                    || (self.pod && k.as_str() == "pod-template-hash");
                !read
            })
            .map(|(k, _)| k.as_str())
            .collect();
        self.listed("metadata.labels", &extra);
        let ours = [NAME, NAME_SUFFIX, MIGRATED_FROM, SUBMITTED_BY];
        let extra: Vec<&str> =
            annotations.keys().map(String::as_str).filter(|k| !ours.contains(k) && !is_system_key(k)).collect();
        self.listed("metadata.annotations", &extra);
        self.leftovers(
            "metadata",
            raw,
            &[
                "name",
                "generateName",
                "namespace",
                "labels",
                "annotations",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "managedFields",
                "selfLink",
                "finalizers",
            ],
            &[],
        );
        Ok(spec)
    }

    fn name(
        &mut self,
        meta: &ObjectMeta,
        annotations: &BTreeMap<String, String>,
        what: &str,
    ) -> Result<String, ImportError> {
        let base = match (meta.name.as_deref(), meta.generate_name.as_deref()) {
            (Some(name), _) if !name.is_empty() => name,
            (_, Some(prefix)) if !prefix.trim_end_matches('-').is_empty() => prefix.trim_end_matches('-'),
            _ => return Err(ImportError::new(format!("`metadata.name`: the {what} has no name (nor generateName)"))),
        };
        let mut base = base.to_string();
        let mut suffix_len = 0;
        if let Some(suffix) = annotations.get(NAME_SUFFIX).filter(|s| !s.is_empty()) {
            match base.strip_suffix(suffix.as_str()).and_then(|b| b.strip_suffix('-')).filter(|b| !b.is_empty()) {
                Some(stripped) => {
                    suffix_len = suffix.len();
                    base = stripped.to_string();
                }
                None => self.warn(
                    &format!("metadata.annotations.{NAME_SUFFIX}"),
                    format!("the name {} does not end in -{suffix}; kept whole", shown(&base)),
                ),
            }
        }
        // The name the spec was written with, if the Job's name is still the one made of it.
        if let Some(written) = annotations.get(NAME) {
            let usable = !written.trim().is_empty() && !written.chars().any(crate::safe_text::is_unsafe);
            let max = (63 - 1usize).saturating_sub(suffix_len);
            if usable && manifest::dns_label(written, max) == base {
                return Ok(written.clone());
            }
            self.warn(
                &format!("metadata.annotations.{NAME}"),
                format!("{} is not the name {} was made from; the {what}'s name is used", shown(written), shown(&base)),
            );
        }
        Ok(base)
    }

    /// One warning for the keys of a map that have no portable form.
    fn listed(&mut self, path: &str, keys: &[&str]) {
        if !keys.is_empty() {
            let names: Vec<String> = keys.iter().map(|k| shown(k)).collect();
            let verb = if keys.len() == 1 { "has" } else { "have" };
            self.warn(path, format!("{} {verb} no portable form; dropped", summary_list(&names)));
        }
    }

    /// Fields of the text that no Kubernetes type has (a misspelt `activeDeadlineSecond`):
    /// kubectl refuses them, and they must not vanish without a word.
    fn unknown_fields(&mut self, path: &str, raw: &Value, typed: &Value) {
        match (raw, typed) {
            (Value::Object(raw), Value::Object(typed)) => {
                for (key, value) in raw {
                    let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    match typed.get(key) {
                        Some(known) => self.unknown_fields(&at, value, known),
                        None if value.is_null() => {}
                        None => self.warn(&at, "not a field Kubernetes knows here (kubectl refuses it); ignored"),
                    }
                }
            }
            (Value::Array(raw), Value::Array(typed)) => {
                for (i, (value, known)) in raw.iter().zip(typed).enumerate() {
                    self.unknown_fields(&format!("{path}[{i}]"), value, known);
                }
            }
            _ => {}
        }
    }

    /// One warning per field of `raw` that is neither read (`read`), nor empty, nor the
    /// value the API server would give it anyway (`defaults`).
    fn leftovers(&mut self, path: &str, raw: &Value, read: &[&str], defaults: &[(&str, Value)]) {
        let Some(object) = raw.as_object() else { return };
        for (key, value) in object {
            if read.contains(&key.as_str()) || is_empty(value) || defaults.iter().any(|(k, v)| k == key && v == value) {
                continue;
            }
            let full = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            let what = describe(value);
            self.warn(&full, format!("{what}no portable form; dropped"));
        }
    }

    fn pod_spec(&mut self, spec: &mut JobSpec, raw: &Value, pod: &PodSpec, path: &str) -> Result<(), ImportError> {
        let Some(container) = pod.containers.first() else {
            return Err(ImportError::new(format!("`{path}.containers`: the pod has no container")));
        };
        self.container = format!("{path}.containers[0]");
        if pod.containers.len() > 1 {
            let others: Vec<String> = pod.containers[1..].iter().map(|c| shown(&c.name)).collect();
            self.warn(
                &format!("{path}.containers"),
                format!(
                    "only the first container ({}) is carried; {} dropped",
                    shown(&container.name),
                    summary_list(&others)
                ),
            );
        }
        let container_path = self.container.clone();
        self.container(spec, &raw["containers"][0], container, &container_path)?;
        self.gpu_model(spec, raw, pod, path);
        match pod.restart_policy.as_deref() {
            None | Some("Never") => {}
            Some(policy) => {
                let when = if policy == "OnFailure" { "after it fails" } else { "whenever it ends" };
                self.warn(
                    &format!("{path}.restartPolicy"),
                    format!("{}: the container is started again {when}; a spec job runs once", shown(policy)),
                );
            }
        }

        let mut cleaned = raw.clone();
        if let Some(object) = cleaned.as_object_mut() {
            // What admission adds to every pod: the service account token and the tolerations
            // of unready nodes.
            if let Some(Value::Array(volumes)) = object.get_mut("volumes") {
                volumes.retain(|v| {
                    !(v["name"].as_str().is_some_and(|n| n.starts_with("kube-api-access"))
                        && v.get("projected").is_some())
                });
            }
            if let Some(Value::Array(tolerations)) = object.get_mut("tolerations") {
                tolerations.retain(|t| {
                    let key = t["key"].as_str().unwrap_or("");
                    !(matches!(key, "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
                        && t["operator"] == "Exists"
                        && t["effect"] == "NoExecute")
                });
            }
        }
        let mut read = vec!["containers", "restartPolicy", "nodeSelector", "affinity"];
        if self.pod {
            read.push("nodeName");
        }
        self.leftovers(
            path,
            &cleaned,
            &read,
            &[
                ("dnsPolicy", json!("ClusterFirst")),
                ("schedulerName", json!("default-scheduler")),
                ("terminationGracePeriodSeconds", json!(30)),
                ("enableServiceLinks", json!(true)),
                ("serviceAccountName", json!("default")),
                ("serviceAccount", json!("default")),
                ("priority", json!(0)),
                ("preemptionPolicy", json!("PreemptLowerPriority")),
            ],
        );
        Ok(())
    }

    fn container(&mut self, spec: &mut JobSpec, raw: &Value, c: &Container, path: &str) -> Result<(), ImportError> {
        spec.image = c.image.clone().filter(|i| !i.trim().is_empty());
        // `#` is how a spec writes an enroot registry (`nvcr.io#nvidia/pytorch`), and no image
        // reference Kubernetes pulls has one: such a manifest would not run, so say so.
        if let Some(image) = spec.image.as_deref().filter(|i| i.contains('#')) {
            return Err(ImportError::new(format!(
                "`{path}.image`: {image:?} is not an image reference (a `#` has no place in one)"
            )));
        }
        let argv: Vec<String> = c.command.iter().flatten().chain(c.args.iter().flatten()).cloned().collect();
        if c.command.as_ref().is_none_or(Vec::is_empty) {
            return Err(ImportError::new(format!(
                "`{path}.command`: not set, so the container runs its image's entrypoint{}, which a spec cannot name; write the program into `command`",
                if argv.is_empty() { String::new() } else { " with `args`".into() }
            )));
        }
        // Plain values in order, each expanded with the ones before it, as the kubelet does;
        // a variable set at run time (valueFrom) has no value here.
        let mut values: BTreeMap<String, Option<String>> = BTreeMap::new();
        for (i, var) in c.env.iter().flatten().enumerate() {
            let at = format!("{path}.env.{}", var.name);
            if let Some(from) = &var.value_from {
                let source = serde_json::to_value(from)
                    .ok()
                    .and_then(|v| v.as_object().and_then(|o| o.keys().next().cloned()))
                    .unwrap_or_else(|| "valueFrom".into());
                self.warn(&at, format!("set from {source} (valueFrom), which has no portable form; dropped"));
                values.insert(var.name.clone(), None);
                continue;
            }
            let value = self.expand(var.value.as_deref().unwrap_or(""), &values, &format!("{path}.env[{i}].value"));
            values.insert(var.name.clone(), Some(value.clone()));
            if !is_identifier(&var.name) {
                self.warn(&at, "not a portable variable name (letters, digits and '_'); dropped");
            } else if value.contains('\0') {
                self.warn(&at, "the value holds a NUL character; dropped");
            } else {
                spec.env.insert(var.name.clone(), value);
            }
        }
        let argv: Vec<String> = argv.iter().map(|a| self.expand(a, &values, &format!("{path}.command"))).collect();
        self.command(spec, &argv, path)?;
        spec.workdir = c.working_dir.clone().filter(|d| !d.is_empty());
        self.resources(spec, &raw["resources"], c.resources.as_ref(), &format!("{path}.resources"));

        let mut cleaned = raw.clone();
        if let Some(Value::Array(mounts)) = cleaned.get_mut("volumeMounts") {
            mounts.retain(|m| m["mountPath"] != "/var/run/secrets/kubernetes.io/serviceaccount");
        }
        let pull = default_pull_policy(c.image.as_deref().unwrap_or(""));
        self.leftovers(
            path,
            &cleaned,
            &["name", "image", "command", "args", "workingDir", "env", "resources"],
            &[
                ("terminationMessagePath", json!("/dev/termination-log")),
                ("terminationMessagePolicy", json!("File")),
                ("imagePullPolicy", json!(pull)),
            ],
        );
        Ok(())
    }

    /// The container's argv as a command line or a script.
    fn command(&mut self, spec: &mut JobSpec, argv: &[String], path: &str) -> Result<(), ImportError> {
        if let [interpreter @ .., flag, body] = argv
            && flag == "-c"
            && !interpreter.is_empty()
        {
            // A script under the interpreter its own `#!` line names (what export writes).
            if manifest::shebang_words(body).as_deref() == Some(interpreter) {
                spec.script = Some(body.clone());
                return Ok(());
            }
            if let [shell] = interpreter
                && let Some(name) = shell_name(shell)
            {
                if name == "sh" {
                    spec.command = Some(body.clone());
                } else {
                    // Another shell's script keeps its shell: a `#!` line names it.
                    let line = if shell.starts_with('/') { shell.clone() } else { format!("/usr/bin/env {shell}") };
                    spec.script = Some(format!("#!{line}\n{body}"));
                }
                return Ok(());
            }
        }
        let line = shlex::try_join(argv.iter().map(String::as_str)).map_err(|_| {
            ImportError::new(format!("`{path}.command`: an argument holds a NUL character, which no shell can pass"))
        })?;
        spec.command = Some(line);
        Ok(())
    }

    fn resources(&mut self, spec: &mut JobSpec, raw: &Value, res: Option<&ResourceRequirements>, path: &str) {
        let empty = BTreeMap::new();
        let limits = res.and_then(|r| r.limits.as_ref()).unwrap_or(&empty);
        let requests = res.and_then(|r| r.requests.as_ref()).unwrap_or(&empty);
        let amount = |name: &str| {
            limits.get(name).map(|q| ("limits", q)).or_else(|| requests.get(name).map(|q| ("requests", q)))
        };

        // GPUs: extended resources live in limits (requests must equal them).
        let mut gpu_names_seen: Vec<&str> =
            limits.keys().chain(requests.keys()).map(String::as_str).filter(|n| gpu::is_gpu_resource(n)).collect();
        gpu_names_seen.sort();
        gpu_names_seen.dedup();
        let order = |n: &str| match n {
            gpu::NVIDIA_GPU => 0,
            gpu::AMD_GPU => 1,
            n if n.starts_with(gpu::NVIDIA_MIG_PREFIX) => 2,
            gpu::NVIDIA_SHARED => 3,
            _ => 4,
        };
        gpu_names_seen.sort_by_key(|n| order(n));
        let mut taken: Option<&str> = None;
        for name in gpu_names_seen {
            let Some((side, q)) = amount(name) else { continue };
            let at = format!("{path}.{side}.{name}");
            let Some(count) = self.whole(&at, q, "GPUs") else { continue };
            if count == 0 {
                continue;
            }
            if let Some(first) = taken {
                self.warn(&at, format!("a second kind of GPU beside {first}; dropped"));
                continue;
            }
            taken = Some(name);
            spec.gpus = count;
            if let Some(profile) = name.strip_prefix(gpu::NVIDIA_MIG_PREFIX) {
                let model = gpu_names::canonical_model(profile);
                if is_gpu_type(&model) {
                    spec.gpu_type = Some(model);
                } else {
                    self.warn(
                        &at,
                        format!("the MIG profile {} is no spec GPU type; the type is dropped", shown(profile)),
                    );
                }
            } else if name == gpu::NVIDIA_SHARED {
                self.warn(&at, "time-sliced shares of a GPU, read as whole GPUs");
            } else if name != gpu::NVIDIA_GPU && name != gpu::AMD_GPU {
                self.warn(&at, "read as GPUs; the spec names no vendor, and nvidia.com/gpu is what exports ask for");
            }
        }

        // CPUs: what the scheduler reserves, the request (a limit alone is the request too).
        let cpu =
            requests.get(gpu::CPU).map(|q| ("requests", q)).or_else(|| limits.get(gpu::CPU).map(|q| ("limits", q)));
        if let Some((side, q)) = cpu {
            let at = format!("{path}.{side}.cpu");
            if let Some(cpus) = self.whole(&at, q, "CPUs").filter(|c| *c > 0) {
                spec.cpus = Some(cpus);
            }
            if let (Some(limit), Some(request)) = (limits.get(gpu::CPU), requests.get(gpu::CPU))
                && gpu::parse_quantity_milli(&limit.0) != gpu::parse_quantity_milli(&request.0)
            {
                self.warn(
                    &format!("{path}.limits.cpu"),
                    format!("a cap of {} CPUs has no portable form; dropped", shown(&limit.0)),
                );
            }
        }
        if let Some((side, q)) = amount(gpu::MEMORY) {
            let at = format!("{path}.{side}.memory");
            if let Some(mib) = self.mebibytes(&at, q) {
                spec.memory = Some(memory_text(mib));
            }
            if let (Some(limit), Some(request)) = (limits.get(gpu::MEMORY), requests.get(gpu::MEMORY))
                && gpu::parse_quantity_milli(&limit.0) != gpu::parse_quantity_milli(&request.0)
            {
                self.warn(
                    &format!("{path}.requests.memory"),
                    format!("{} is below the limit {}; the spec keeps the limit", shown(&request.0), shown(&limit.0)),
                );
            }
        }
        for (side, map) in [("limits", limits), ("requests", requests)] {
            for (name, q) in map {
                if name != gpu::CPU && name != gpu::MEMORY && !gpu::is_gpu_resource(name) {
                    self.warn(
                        &format!("{path}.{side}.{name}"),
                        format!("{} has no portable form; dropped", shown(&q.0)),
                    );
                }
            }
        }
        self.leftovers(path, raw, &["limits", "requests"], &[]);
    }

    /// A count of whole units (GPUs, CPUs), rounded up with a warning when it is not whole.
    fn whole(&mut self, at: &str, q: &Quantity, what: &str) -> Option<u32> {
        let Some(milli) = gpu::parse_quantity_milli(&q.0).filter(|m| *m >= 0) else {
            self.warn(at, format!("{} is not a Kubernetes quantity; dropped", shown(&q.0)));
            return None;
        };
        let whole = gpu::whole_units(milli);
        let Ok(count) = u32::try_from(whole) else {
            self.warn(at, format!("{} {what} are more than a spec can ask for; dropped", shown(&q.0)));
            return None;
        };
        if milli % 1000 != 0 {
            self.warn(at, format!("{}: the spec counts whole {what}; rounded up to {count}", shown(&q.0)));
        }
        Some(count)
    }

    /// Bytes to whole MiB, rounded up with a warning when they are not whole.
    fn mebibytes(&mut self, at: &str, q: &Quantity) -> Option<u64> {
        let milli = gpu::parse_quantity_milli(&q.0).filter(|m| *m > 0 && *m < i64::MAX);
        let Some(milli) = milli else {
            self.warn(at, format!("{} is no usable amount of memory; dropped", shown(&q.0)));
            return None;
        };
        let milli = milli.unsigned_abs();
        let per_mib = 1000 * 1024 * 1024;
        let mib = milli.div_ceil(per_mib);
        if milli % per_mib != 0 {
            self.warn(at, format!("{} is not a whole number of MiB; rounded up to {}", shown(&q.0), memory_text(mib)));
        }
        Some(mib)
    }

    /// The GPU model: the product a node selector (or a required node affinity) asks for.
    fn gpu_model(&mut self, spec: &mut JobSpec, raw: &Value, pod: &PodSpec, path: &str) {
        let mut products: Vec<(String, String)> = Vec::new();
        let mut others: Vec<&str> = Vec::new();
        for (key, value) in pod.node_selector.iter().flatten() {
            if key == NVIDIA_PRODUCT || key == AMD_PRODUCT {
                products.push((format!("{path}.nodeSelector.{key}"), value.clone()));
            } else {
                others.push(key);
            }
        }
        self.listed(&format!("{path}.nodeSelector"), &others);
        // What submit writes for several product labels: one term, one expression.
        let affinity = &raw["affinity"];
        let expressions =
            &affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        let product_affinity = match (expressions.as_array().map(Vec::as_slice), affinity.as_object()) {
            (Some([term]), Some(a))
                if a.len() == 1 && affinity["nodeAffinity"].as_object().is_some_and(|n| n.len() == 1) =>
            {
                match (term.as_object(), term["matchExpressions"].as_array().map(Vec::as_slice)) {
                    (Some(t), Some([e])) if t.len() == 1 && e["operator"] == "In" => {
                        let key = e["key"].as_str().unwrap_or("");
                        (key == NVIDIA_PRODUCT || key == AMD_PRODUCT).then(|| {
                            e["values"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect::<Vec<_>>()
                        })
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        match product_affinity {
            Some(values) => {
                for v in values {
                    products.push((format!("{path}.affinity"), v));
                }
            }
            None if !is_empty(affinity) => {
                self.warn(&format!("{path}.affinity"), format!("{}no portable form; dropped", describe(affinity)))
            }
            None => {}
        }
        // A value no node could carry (a label value starts and ends with a letter or digit)
        // selects nothing: said, and not taken as the GPU model.
        let label_value = |v: &str| {
            v.len() <= 63
                && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric())
                && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        products.retain(|(at, value)| {
            let ok = label_value(value);
            if !ok {
                self.warn(at, format!("{} is not a label value a node could carry; dropped", shown(value)));
            }
            ok
        });
        let Some((at, _)) = products.first().cloned() else { return };
        if spec.gpus == 0 {
            self.warn(&at, "a GPU model for a pod that asks for no GPUs; dropped");
            return;
        }
        if let Some(mig) = &spec.gpu_type {
            self.warn(&at, format!("the MIG resource already names the GPU type {mig}; dropped"));
            return;
        }
        let names: BTreeSet<gpu_names::GpuName> = products.iter().map(|(_, p)| gpu_names::canonical(p)).collect();
        let models: BTreeSet<&str> = names.iter().map(|n| n.model.as_str()).collect();
        match models.into_iter().collect::<Vec<_>>().as_slice() {
            [model] if is_gpu_type(model) => {
                spec.gpu_type = Some(model.to_string());
                if names.iter().any(|n| n.shared) {
                    self.warn(&at, format!("time-sliced shares of {model}, read as whole GPUs"));
                }
            }
            [model] => self.warn(&at, format!("{} is no spec GPU type; dropped", shown(model))),
            several => {
                self.warn(&at, format!("several GPU models ({}); a spec names one; dropped", several.join(", ")))
            }
        }
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// `a, b, c` or `a, b, c and 4 more`.
fn summary_list(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// What a dropped value was, as the start of its warning: `"trainer": `, `(data, scratch): `.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{}: ", shown(s)),
        Value::Number(_) | Value::Bool(_) => format!("{value}: "),
        Value::Array(items) => {
            let names: Vec<String> = items.iter().filter_map(|i| i["name"].as_str()).map(shown).collect();
            if names.len() == items.len() {
                format!("{}: ", summary_list(&names))
            } else {
                format!("{} {}: ", items.len(), if items.len() == 1 { "entry" } else { "entries" })
            }
        }
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().map(|k| shown(k)).collect();
            format!("{}: ", summary_list(&keys))
        }
        Value::Null => String::new(),
    }
}

// ----- writing -----------------------------------------------------------------------------

/// The Job a spec becomes, with no cluster at hand: the namespace from `account` (none
/// without one, so kubectl uses its context's), the Kueue queue from `partition`, GPUs as
/// NVIDIA's (AMD's for an AMD model, a MIG profile's resource for a profile), the model as a
/// node selector with the spec's name for it; each choice said in a warning. Several nodes
/// are the kind the spec's `multi_node` names, else a JobSet, the kind a cluster's
/// `multi_node` gives them unless it says otherwise.
pub fn export(spec: &JobSpec) -> Result<Native, BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    let how = MultiNode::for_spec(spec, MultiNode::default())?;
    let nodes = spec.nodes.unwrap_or(1);
    if nodes > 1 {
        let mut native = export_workload(spec, how)?;
        let why = match &spec.multi_node {
            Some(_) => "as the spec's `multi_node` says".to_string(),
            None => format!(
                "submitted to a cluster, its `multi_node` setting picks the kind: {}; `--to KIND` or `--multi-node KIND` writes another",
                MultiNode::NAMES.join(", ")
            ),
        };
        native.warnings.insert(0, format!("`nodes`: {nodes} nodes are written as a {} ({why})", how.kind().def().kind));
        return Ok(native);
    }
    let mut warnings = Vec::new();
    if let Some(word) = &spec.multi_node {
        warnings.push(format!("`multi_node`: {word} is for 2 or more nodes; one node is written as a plain Job"));
    }
    let target = offline_target(spec, true, "Job", &mut warnings);
    let built = manifest::job_manifest(spec, &target)?;
    let name = built.job.metadata.name.clone().unwrap_or_default();
    if name != spec.name {
        warnings.push(format!(
            "`name`: {} is not a Kubernetes name; the Job is named {name} (the name as written is kept in the {NAME} annotation)",
            shown(&spec.name)
        ));
    }
    warnings.extend(built.warnings);
    let text = serde_saphyr::to_string(&built.job)
        .map_err(|e| BackendError::Parse { what: "the Job manifest".into(), message: e.to_string() })?;
    Ok(Native { dialect: KUBERNETES_JOB, text, warnings })
}

/// Where a spec goes with no cluster at hand: the namespace from `account`, the Kueue queue
/// from `partition` (`kueue`: the kind is one Kueue admits; a Volcano Job's partition is its
/// Volcano queue instead), GPUs as [`offline_placement`] says; each choice in `warnings`.
pub(crate) fn offline_target(spec: &JobSpec, kueue: bool, what: &str, warnings: &mut Vec<String>) -> Target {
    let namespace = match spec.account.as_deref() {
        None => {
            warnings.push(format!(
                "`account`: not set, so the manifest names no namespace: kubectl creates the {what} in its context's namespace"
            ));
            String::new()
        }
        Some(ns) => match check_k8s_name(ns, 63, false) {
            Ok(()) => ns.to_string(),
            Err(why) => {
                warnings.push(format!("`account`: the namespace of a Kubernetes {what}, but {why}; left out"));
                String::new()
            }
        },
    };
    let queue = match spec.partition.as_deref().filter(|_| kueue) {
        None => None,
        Some(q) => match check_k8s_name(q, 63, true) {
            Ok(()) => {
                warnings.push(format!(
                    "`partition`: {} becomes the Kueue LocalQueue label {QUEUE_LABEL} and the {what} is created suspended for Kueue to admit (without Kueue it stays suspended)",
                    shown(q)
                ));
                Some(q.to_string())
            }
            Err(why) => {
                warnings.push(format!("`partition`: a Kueue LocalQueue name here, but {why}; left out"));
                None
            }
        },
    };
    let gpus = offline_placement(spec, warnings);
    Target { namespace, queue, gpus, user: String::new(), suffix: String::new() }
}

/// `spec` as the workload `how` with no cluster to ask (`spec convert --to pytorchjob`).
pub(crate) fn export_workload(spec: &JobSpec, how: MultiNode) -> Result<Native, BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    let mut warnings = Vec::new();
    if let Some(word) = spec.multi_node.as_deref().filter(|w| MultiNode::parse(w) != Some(how)) {
        warnings.push(format!(
            "`multi_node`: the spec asks for {word:?}; written as a {}, as `--to` says",
            how.kind().def().kind
        ));
    }
    let target = offline_target(spec, how != MultiNode::Volcano, how.kind().def().kind, &mut warnings);
    if how == MultiNode::Volcano
        && let Some(p) = &spec.partition
    {
        warnings.push(format!("`partition`: {} is the Volcano queue the Job goes to", shown(p)));
    }
    let built = multi_node_manifest(spec, &target, how)?;
    let kind = built.kind.def().kind;
    let name = built.object["metadata"]["name"].as_str().unwrap_or_default();
    if name != spec.name {
        warnings.push(format!(
            "`name`: {} is not a Kubernetes name; the {kind} is named {name} (the name as written is kept in the {NAME} annotation)",
            shown(&spec.name)
        ));
    }
    warnings.extend(built.warnings);
    let text = serde_saphyr::to_string(&built.object)
        .map_err(|e| BackendError::Parse { what: format!("the {kind} manifest"), message: e.to_string() })?;
    Ok(Native { dialect: how.dialect(), text, warnings })
}

/// Where the GPUs come from when no cluster's nodes can say.
fn offline_placement(spec: &JobSpec, warnings: &mut Vec<String>) -> GpuPlacement {
    if spec.gpus == 0 {
        return GpuPlacement::any_nvidia();
    }
    let Some(gpu_type) = spec.gpu_type.as_deref() else {
        warnings.push(format!(
            "`gpus`: {} as {} limits (NVIDIA's device plugin assumed; an AMD `gpu_type` asks for {})",
            spec.gpus,
            gpu::NVIDIA_GPU,
            gpu::AMD_GPU
        ));
        return GpuPlacement::any_nvidia();
    };
    if manifest::is_mig_profile(gpu_type) {
        let resource = format!("{}{}", gpu::NVIDIA_MIG_PREFIX, gpu_type.to_ascii_lowercase());
        warnings.push(format!(
            "`gpu_type`: the MIG profile {gpu_type} as {resource} limits (the mixed MIG strategy assumed)"
        ));
        return GpuPlacement { resource, node_label: None };
    }
    let model = gpu_names::canonical_model(gpu_type);
    let (resource, label, example) = if is_amd_model(&model) {
        (gpu::AMD_GPU, AMD_PRODUCT, "AMD_Instinct_MI300X_OAM")
    } else {
        (gpu::NVIDIA_GPU, NVIDIA_PRODUCT, "NVIDIA-H100-80GB-HBM3")
    };
    if check_k8s_name(gpu_type, 63, true).is_err() {
        warnings
            .push(format!("`gpu_type`: {} cannot be a node label value; no node selector is written", shown(gpu_type)));
        return GpuPlacement { resource: resource.into(), node_label: None };
    }
    warnings.push(format!(
        "`gpu_type`: written as the node selector {label}={gpu_type}, but nodes carry the full product name ({example}): put your nodes' value there (kubectl get nodes -L {label}), or submit through flightdeck, which looks it up"
    ));
    GpuPlacement { resource: resource.into(), node_label: Some((label.into(), vec![gpu_type.to_string()])) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(default_pull_policy("nvcr.io/nvidia/pytorch:24.01-py3"), "IfNotPresent");
        assert_eq!(default_pull_policy("localhost:5000/train"), "Always");
        assert_eq!(default_pull_policy("busybox:latest"), "Always");
        assert_eq!(default_pull_policy("busybox@sha256:abc"), "IfNotPresent");
        assert!(is_amd_model("mi300x") && !is_amd_model("mig") && !is_amd_model("h100"));
        assert_eq!(shown(&"x".repeat(100)).chars().count(), 63);
    }
}
