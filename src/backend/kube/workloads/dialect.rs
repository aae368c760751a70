//! The Kubernetes workload kinds as job forms of their own, offline: a JobSet, a Kubeflow
//! PyTorchJob or MPIJob, a KubeRay RayJob, a Volcano Job. Each is recognised by its
//! `apiVersion` group and `kind`, imported into a portable spec, and exported the way
//! [`super::submit`] builds it for a cluster (`spec convert --to pytorchjob`).
//!
//! A workload is read as N nodes running one pod template, the one its gang runs on:
//!
//! | kind | nodes | the node's pod | command |
//! |---|---|---|---|
//! | JobSet | Σ replicas × completions over `replicatedJobs` | the replicated Job with GPUs, else the first | its container's |
//! | PyTorchJob | Master + Worker replicas | Master's (Worker's without one) | its container's |
//! | MPIJob | Worker replicas (the launcher is no node) | Worker's | the Launcher's (`mpirun …`) |
//! | RayJob | head + Σ worker replicas | the group with GPUs, else the head | `spec.entrypoint` |
//! | Volcano Job | Σ task replicas | the task with GPUs, else the first | its container's |
//!
//! The pod is then read as the Job dialect reads a bare pod (`super::super::dialect`):
//! image, env, GPUs, CPUs, memory, the GPU model; the workload's own fields are read where
//! the spec has a place (`activeDeadlineSeconds` → `time_limit`, a Volcano `queue` →
//! `partition`, `nprocPerNode`, `slotsPerWorker` or torchrun's `PET_NPROC_PER_NODE` →
//! `tasks_per_node`) and every other one is a warning by its path, as is every group whose
//! pod differs from the node's. What [`super::submit`] adds (the anti-affinity that spreads
//! the pods, the rendezvous env) is taken off again, so a spec survives a trip.
//!
//! A spec read from one of these names no kind (its `multi_node` is left unset, so the spec
//! goes to Slurm or a cloud as it is): submitted, a cluster makes several nodes the kind its
//! `multi_node` setting says; a warning says so and how to keep the kind (`--multi-node`).

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::kinds::WorkloadKind;
use super::submit::{self, MultiNode};
use crate::backend::kube::dialect::{
    export_workload, json_error, looks_like_json, offline_target, shown, without_bom, yaml_error,
};
use crate::backend::kube::kueue::QUEUE_LABEL;
use crate::backend::kube::manifest;
use crate::backend::{BackendError, DialectEntry};
use crate::model::{Dialect, Native};
use crate::spec::{ImportError, Imported, JobSpec, duration_text};

/// A `jobset.x-k8s.io` JobSet: replicated Indexed Jobs, one pod per node.
pub const JOB_SET: Dialect = Dialect::new("job_set", "jobset", "a JobSet", "JobSet manifest");

/// A Kubeflow `PyTorchJob`: a Master and Workers.
pub const PYTORCH_JOB: Dialect = Dialect::new("py_torch_job", "pytorchjob", "a PyTorchJob", "PyTorchJob manifest");

/// A Kubeflow `MPIJob` (mpi-operator v2beta1): a launcher and Workers.
pub const MPI_JOB: Dialect = Dialect::new("mpi_job", "mpijob", "an MPIJob", "MPIJob manifest");

/// A KubeRay `RayJob`: an entrypoint on a Ray cluster of a head and worker groups.
pub const RAY_JOB: Dialect = Dialect::new("ray_job", "rayjob", "a RayJob", "RayJob manifest");

/// A Volcano `batch.volcano.sh` Job: tasks gang-scheduled together.
pub const VOLCANO_JOB: Dialect = Dialect::new("volcano_job", "volcano", "a Volcano Job", "Volcano Job manifest");

/// The five workload forms, in the order `--to` lists them.
pub fn entries() -> Vec<DialectEntry> {
    vec![
        DialectEntry {
            dialect: JOB_SET,
            detect: |t| detect_kind(t, WorkloadKind::JobSet),
            import: |t| import(t, WorkloadKind::JobSet),
            export: |s| export_workload(s, MultiNode::JobSet),
        },
        DialectEntry {
            dialect: PYTORCH_JOB,
            detect: |t| detect_kind(t, WorkloadKind::PyTorchJob),
            import: |t| import(t, WorkloadKind::PyTorchJob),
            export: |s| export_workload(s, MultiNode::PyTorchJob),
        },
        DialectEntry {
            dialect: MPI_JOB,
            detect: |t| detect_kind(t, WorkloadKind::MpiJob),
            import: |t| import(t, WorkloadKind::MpiJob),
            export: |s| export_workload(s, MultiNode::MpiJob),
        },
        DialectEntry {
            dialect: RAY_JOB,
            detect: |t| detect_kind(t, WorkloadKind::RayJob),
            import: |t| import(t, WorkloadKind::RayJob),
            export: export_ray_job,
        },
        DialectEntry {
            dialect: VOLCANO_JOB,
            detect: |t| detect_kind(t, WorkloadKind::VolcanoJob),
            import: |t| import(t, WorkloadKind::VolcanoJob),
            export: |s| export_workload(s, MultiNode::Volcano),
        },
    ]
}

// ----- recognising -------------------------------------------------------------------------

/// `apiVersion` and `kind` of a document, without reading the rest.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

fn is_kind(api_version: Option<&str>, kind_word: Option<&str>, kind: WorkloadKind) -> bool {
    let def = kind.def();
    let group = api_version.and_then(|v| v.split_once('/')).map(|(g, _)| g);
    group == Some(def.group) && kind_word == Some(def.kind)
}

/// Whether the text's documents hold one of `kind` (YAML or JSON). Also claimed when it does
/// not parse but says so in its top-level lines, so the reader's error is what the user sees.
fn detect_kind(text: &str, kind: WorkloadKind) -> bool {
    let text = without_bom(text);
    let heads: Option<Vec<Option<Head>>> = if looks_like_json(text) {
        serde_json::from_str::<Head>(text).ok().map(|h| vec![Some(h)])
    } else {
        serde_saphyr::from_multiple::<Option<Head>>(text).ok()
    };
    match heads {
        Some(heads) => heads.iter().flatten().any(|h| is_kind(h.api_version.as_deref(), h.kind.as_deref(), kind)),
        None => {
            let def = kind.def();
            let top = |key: &str| {
                text.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().trim_matches(['"', '\'']).to_string())
            };
            let api = top("apiVersion:");
            is_kind(api.as_deref(), top("kind:").as_deref(), kind) && api.is_some_and(|a| a.starts_with(def.group))
        }
    }
}

// ----- reading -----------------------------------------------------------------------------

/// The text's one document.
fn document(text: &str) -> Result<Value, ImportError> {
    let text = without_bom(text);
    let docs: Vec<Value> = if looks_like_json(text) {
        vec![serde_json::from_str::<Value>(text).map_err(|e| json_error(&e, "not valid JSON"))?]
    } else {
        serde_saphyr::from_multiple::<Value>(text).map_err(|e| yaml_error(&e, "not valid YAML"))?
    };
    let mut docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    match docs.len() {
        0 => Err(ImportError::new("no Kubernetes object in the text")),
        1 => Ok(docs.remove(0)),
        n => Err(ImportError::new(format!(
            "{n} YAML documents: flightdeck reads one job at a time (split the file at its `---` lines)"
        ))),
    }
}

/// One replica group: where it is, how many pods, its pod template (`{metadata, spec}`).
struct Group<'a> {
    path: String,
    pods: u32,
    template: &'a Value,
}

fn count(v: &Value, key: &str, default: u32) -> Result<u32, ImportError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| ImportError::new(format!("`{key}`: {n} is not a count of pods"))),
    }
}

struct Reading {
    warnings: Vec<String>,
}

impl Reading {
    fn warn(&mut self, path: &str, why: impl std::fmt::Display) {
        self.warnings.push(format!("`{path}`: {why}"));
    }

    /// One warning per field of `raw` neither read nor at a value that changes nothing.
    fn leftovers(&mut self, path: &str, raw: &Value, read: &[&str], harmless: &[(&str, Value)]) {
        let Some(object) = raw.as_object() else { return };
        for (key, value) in object {
            let empty = value.is_null()
                || value.as_object().is_some_and(|o| o.is_empty())
                || value.as_array().is_some_and(|a| a.is_empty());
            if read.contains(&key.as_str()) || empty || harmless.iter().any(|(k, v)| k == key && v == value) {
                continue;
            }
            self.warn(&format!("{path}.{key}"), "no portable form; dropped");
        }
    }
}

/// A workload manifest → the portable spec, with every field it cannot carry named.
pub fn import(text: &str, kind: WorkloadKind) -> Result<Imported, ImportError> {
    import_value(&document(text)?, kind)
}

/// Whether [`import_value`] reads `kind` (the five forms; the other workload kinds are read
/// back from their main group's pod alone, `status::import`).
pub fn reads(kind: WorkloadKind) -> bool {
    matches!(
        kind,
        WorkloadKind::JobSet
            | WorkloadKind::PyTorchJob
            | WorkloadKind::MpiJob
            | WorkloadKind::RayJob
            | WorkloadKind::VolcanoJob
    )
}

/// One workload object (a file's document, or a live object as the API server has it).
pub fn import_value(doc: &Value, kind: WorkloadKind) -> Result<Imported, ImportError> {
    let def = kind.def();
    let head = |k: &str| doc.get(k).and_then(Value::as_str);
    if !is_kind(head("apiVersion"), head("kind"), kind) {
        return Err(ImportError::new(format!(
            "a {} {}, not a {} ({}/…)",
            shown(head("apiVersion").unwrap_or("(no apiVersion)")),
            shown(head("kind").unwrap_or("(no kind)")),
            def.kind,
            def.group
        )));
    }
    let spec = doc.get("spec").filter(|s| s.is_object()).ok_or_else(|| ImportError::new("`spec`: not set"))?;
    let mut r = Reading { warnings: Vec::new() };
    r.leftovers("", doc, &["apiVersion", "kind", "metadata", "spec", "status"], &[]);
    let mut deadline: Option<(String, Value)> = None;
    let mut tasks: Option<u32> = None;
    let mut queue: Option<String> = None;
    let mut command: Option<Vec<String>> = None;
    let suspend_path;
    // The groups, the one whose pod a node runs, and the pods that are no node.
    let (groups, main, extra_pods): (Vec<Group>, usize, u32) = match kind {
        WorkloadKind::JobSet => {
            suspend_path = "spec.suspend";
            r.leftovers(
                "spec",
                spec,
                &["replicatedJobs", "suspend", "network", "failurePolicy"],
                &[("failurePolicy", json!({"maxRestarts": 0}))],
            );
            if let Some(network) = spec.get("network") {
                r.leftovers("spec.network", network, &[], &[("enableDNSHostnames", json!(true))]);
            }
            if let Some(policy) = spec.get("failurePolicy").filter(|p| **p != json!({"maxRestarts": 0})) {
                r.leftovers("spec.failurePolicy", policy, &[], &[("maxRestarts", json!(0))]);
            }
            let mut groups = Vec::new();
            let rjs = spec.get("replicatedJobs").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            for (i, rj) in rjs.iter().enumerate() {
                let at = format!("spec.replicatedJobs[{i}]");
                r.leftovers(&at, rj, &["name", "replicas", "template"], &[]);
                let job = &rj["template"]["spec"];
                r.leftovers(
                    &format!("{at}.template.spec"),
                    job,
                    &["parallelism", "completions", "completionMode", "template", "activeDeadlineSeconds"],
                    &[("backoffLimit", json!(0))],
                );
                let parallelism = count(job, "parallelism", 1)?;
                let per_job = count(job, "completions", parallelism)?;
                if let Some(d) = job.get("activeDeadlineSeconds") {
                    deadline.get_or_insert((format!("{at}.template.spec.activeDeadlineSeconds"), d.clone()));
                }
                groups.push(Group {
                    path: format!("{at}.template.spec.template"),
                    pods: count(rj, "replicas", 1)?.saturating_mul(per_job),
                    template: &job["template"],
                });
            }
            let main = with_gpus(&groups);
            (groups, main, 0)
        }
        WorkloadKind::PyTorchJob | WorkloadKind::MpiJob => {
            let (key, roles): (&str, &[&str]) = if kind == WorkloadKind::PyTorchJob {
                ("pytorchReplicaSpecs", &["Master", "Worker"])
            } else {
                ("mpiReplicaSpecs", &["Launcher", "Worker"])
            };
            suspend_path = "spec.runPolicy.suspend";
            let read: &[&str] = if kind == WorkloadKind::PyTorchJob {
                &[key, "runPolicy", "nprocPerNode"]
            } else {
                &[key, "runPolicy", "slotsPerWorker", "mpiImplementation"]
            };
            r.leftovers("spec", spec, read, &[]);
            if let Some(run) = spec.get("runPolicy") {
                r.leftovers(
                    "spec.runPolicy",
                    run,
                    &["activeDeadlineSeconds", "suspend", "cleanPodPolicy"],
                    &[("backoffLimit", json!(0))],
                );
                if let Some(d) = run.get("activeDeadlineSeconds") {
                    deadline = Some(("spec.runPolicy.activeDeadlineSeconds".into(), d.clone()));
                }
            }
            let specs = spec.get(key).and_then(Value::as_object);
            let mut groups = Vec::new();
            for (role, group) in specs.into_iter().flatten() {
                let at = format!("spec.{key}.{role}");
                if !roles.contains(&role.as_str()) {
                    r.warn(&at, format!("a {} has no {role} role; dropped", def.kind));
                    continue;
                }
                r.leftovers(&at, group, &["replicas", "template"], &[("restartPolicy", json!("Never"))]);
                groups.push(Group {
                    path: format!("{at}.template"),
                    pods: count(group, "replicas", 1)?,
                    template: &group["template"],
                });
            }
            groups.sort_by_key(|g| g.path.ends_with("Worker.template"));
            if kind == WorkloadKind::PyTorchJob {
                if let Some(n) = spec.get("nprocPerNode") {
                    match n
                        .as_str()
                        .and_then(|s| s.parse::<u32>().ok())
                        .or_else(|| n.as_u64().and_then(|n| u32::try_from(n).ok()))
                    {
                        Some(n) => tasks = Some(n),
                        None => {
                            r.warn("spec.nprocPerNode", format!("{n} (auto, gpu …) is no number of tasks; dropped"))
                        }
                    }
                }
                (groups, 0, 0)
            } else {
                let worker = groups.iter().position(|g| g.path.ends_with("Worker.template"));
                let launcher = groups.iter().position(|g| g.path.ends_with("Launcher.template"));
                let Some(worker) = worker else {
                    return Err(ImportError::new(format!(
                        "`spec.{key}.Worker`: an MPIJob without workers runs on no node"
                    )));
                };
                if let Some(l) = launcher {
                    let c = &groups[l].template["spec"]["containers"][0];
                    let argv: Vec<String> = ["command", "args"]
                        .iter()
                        .flat_map(|k| c[*k].as_array().cloned().unwrap_or_default())
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect();
                    if argv.is_empty() {
                        return Err(ImportError::new(format!(
                            "`spec.{key}.Launcher`: its container has no command; the launcher runs the job"
                        )));
                    }
                    command = Some(argv);
                    r.warnings.push(format!(
                        "`spec.{key}`: the Launcher's command is the job's, run on the first node (mpirun reaches the others); the Workers' own command is left to the operator"
                    ));
                }
                if let Some(slots) = spec.get("slotsPerWorker") {
                    tasks = slots.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0);
                }
                if let Some(m) = spec.get("mpiImplementation").and_then(Value::as_str).filter(|m| *m != "OpenMPI") {
                    r.warn("spec.mpiImplementation", format!("{}: flightdeck writes OpenMPI", shown(m)));
                }
                let extra = launcher.map_or(0, |l| groups[l].pods);
                (groups, worker, extra)
            }
        }
        WorkloadKind::RayJob => {
            suspend_path = "spec.suspend";
            r.leftovers(
                "spec",
                spec,
                &["entrypoint", "rayClusterSpec", "activeDeadlineSeconds", "suspend"],
                &[("shutdownAfterJobFinishes", json!(true))],
            );
            let entry = spec.get("entrypoint").and_then(Value::as_str).filter(|e| !e.trim().is_empty());
            let Some(entry) = entry else {
                return Err(ImportError::new("`spec.entrypoint`: not set; a RayJob's command is its entrypoint"));
            };
            // The entrypoint is no container command, so the kubelet expands nothing in it;
            // escaped here as one would be, the container reading below gives it back as it is.
            command = Some(vec!["sh".into(), "-c".into(), manifest::escape_expansion(entry).into_owned()]);
            if let Some(d) = spec.get("activeDeadlineSeconds") {
                deadline = Some(("spec.activeDeadlineSeconds".into(), d.clone()));
            }
            let cluster = &spec["rayClusterSpec"];
            r.leftovers("spec.rayClusterSpec", cluster, &["headGroupSpec", "workerGroupSpecs", "rayVersion"], &[]);
            r.leftovers(
                "spec.rayClusterSpec.headGroupSpec",
                &cluster["headGroupSpec"],
                &["template", "rayStartParams"],
                &[],
            );
            let mut groups = vec![Group {
                path: "spec.rayClusterSpec.headGroupSpec.template".into(),
                pods: 1,
                template: &cluster["headGroupSpec"]["template"],
            }];
            let workers =
                cluster.get("workerGroupSpecs").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            for (i, w) in workers.iter().enumerate() {
                let at = format!("spec.rayClusterSpec.workerGroupSpecs[{i}]");
                r.leftovers(
                    &at,
                    w,
                    &["replicas", "template", "groupName", "minReplicas", "maxReplicas", "rayStartParams"],
                    &[("numOfHosts", json!(1))],
                );
                let pods =
                    count(w, "replicas", count(w, "minReplicas", 0)?)?.saturating_mul(count(w, "numOfHosts", 1)?);
                groups.push(Group { path: format!("{at}.template"), pods, template: &w["template"] });
            }
            r.warnings.push(
                "`spec.entrypoint`: runs once, on the Ray head, and reaches the other nodes through Ray; run elsewhere, the command runs on each node and must start its Ray cluster itself (ray start)".into(),
            );
            let main = with_gpus(&groups);
            (groups, main, 0)
        }
        WorkloadKind::VolcanoJob => {
            suspend_path = "";
            r.leftovers(
                "spec",
                spec,
                &["tasks", "minAvailable", "queue", "schedulerName", "plugins"],
                &[("maxRetry", json!(0))],
            );
            if let Some(q) = spec.get("queue").and_then(Value::as_str).filter(|q| *q != "default") {
                queue = Some(q.to_string());
            }
            if let Some(s) = spec.get("schedulerName").and_then(Value::as_str).filter(|s| *s != "volcano") {
                r.warn("spec.schedulerName", format!("{}: flightdeck writes volcano", shown(s)));
            }
            // A plugin is on by being named, its arguments often none (`ssh: []`).
            for plugin in spec.get("plugins").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
                if plugin != "env" && plugin != "svc" {
                    r.warn(&format!("spec.plugins.{plugin}"), "a Volcano plugin with no portable form; dropped");
                }
            }
            let mut groups = Vec::new();
            let list = spec.get("tasks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            for (i, t) in list.iter().enumerate() {
                let at = format!("spec.tasks[{i}]");
                r.leftovers(&at, t, &["name", "replicas", "template"], &[]);
                groups.push(Group {
                    path: format!("{at}.template"),
                    pods: count(t, "replicas", 1)?,
                    template: &t["template"],
                });
            }
            let total: u32 = groups.iter().map(|g| g.pods).sum();
            if let Some(min) = spec.get("minAvailable").and_then(Value::as_u64).filter(|m| *m != u64::from(total)) {
                r.warn(
                    "spec.minAvailable",
                    format!("{min} of {total} pods start the gang; a spec starts all its nodes together"),
                );
            }
            let main = with_gpus(&groups);
            (groups, main, 0)
        }
        _ => return Err(ImportError::new(format!("a {} is not read as a job form", def.kind))),
    };
    let Some(node) = groups.get(main) else {
        return Err(ImportError::new(format!("the {} has no pod template to read", def.kind)));
    };
    if !suspend_path.is_empty() && doc.pointer(&format!("/{}", suspend_path.replace('.', "/"))) == Some(&json!(true)) {
        let queued = doc.pointer(&format!("/metadata/labels/{}", QUEUE_LABEL.replace('/', "~1"))).is_some();
        if !queued {
            r.warn(suspend_path, format!("the {} is suspended (held); the spec describes it running", def.kind));
        }
    }

    // The node's pod, read as a bare pod is, with the workload's metadata.
    let mut template = node.template.clone();
    // What a Volcano Job's pods get from flightdeck's export, read at the Job's level.
    if let Some(d) = template.pointer_mut("/spec").and_then(Value::as_object_mut)
        && kind == WorkloadKind::VolcanoJob
    {
        if d.get("schedulerName") == Some(&json!("volcano")) {
            d.remove("schedulerName");
        }
        if let Some(secs) = d.remove("activeDeadlineSeconds") {
            deadline = Some((format!("{}.spec.activeDeadlineSeconds", node.path), secs));
        }
    }
    if let Some(argv) = &command {
        template["spec"]["containers"][0]["command"] = json!(argv);
        if let Some(c) = template.pointer_mut("/spec/containers/0").and_then(Value::as_object_mut) {
            c.remove("args");
        }
    }
    let mut pod_spec: PodSpec = serde_json::from_value(template["spec"].clone())
        .map_err(|e| ImportError::new(format!("`{}.spec`: not a pod spec: {e}", node.path)))?;
    // torchrun's processes per node, as flightdeck's rendezvous env writes them.
    let ours = pod_spec.containers.first().and_then(|c| c.env.as_ref()).is_some_and(|env| {
        env.iter().any(|v| v.name == "PET_MASTER_ADDR" && v.value.as_deref() == Some("$(MASTER_ADDR)"))
    });
    if ours
        && let Some(n) = pod_spec.containers[0]
            .env
            .iter()
            .flatten()
            .find(|v| v.name == "PET_NPROC_PER_NODE")
            .and_then(|v| v.value.as_deref()?.parse::<u32>().ok())
    {
        tasks = Some(n);
    }
    submit::strip_spread(&mut pod_spec);
    if let Some(labels) = template.pointer("/metadata/labels").and_then(Value::as_object) {
        let own: Vec<&str> =
            labels.keys().map(String::as_str).filter(|k| !k.starts_with("app.kubernetes.io/managed-by")).collect();
        if !own.is_empty() {
            r.warn(
                &format!("{}.metadata.labels", node.path),
                format!("{} have no portable form; dropped", own.join(", ")),
            );
        }
    }
    let metadata: ObjectMeta = serde_json::from_value(doc.get("metadata").cloned().unwrap_or(json!({})))
        .map_err(|e| ImportError::new(format!("`metadata`: {e}")))?;
    let pod = Pod { metadata, spec: Some(pod_spec.clone()), status: None };
    let mut imported = crate::backend::kube::dialect::import_pod(&pod)
        .map_err(|e| ImportError { line: None, message: format!("{} (the pod of `{}`)", e.message, node.path) })?;
    let mut warnings = r.warnings;
    // The pod's fields by their place in the workload (`spec.containers[0].ports` is the
    // node group's template's).
    warnings.extend(imported.warnings.drain(..).map(|w| match w.strip_prefix("`spec") {
        Some(rest) => format!("`{}.spec{rest}", node.path),
        None => w,
    }));
    let mut spec_out = imported.spec;

    // Groups whose pod is not the node's.
    for (i, g) in groups.iter().enumerate() {
        if i == main || (kind == WorkloadKind::MpiJob && g.path.ends_with("Launcher.template")) {
            continue;
        }
        let mut other: Option<PodSpec> = serde_json::from_value(g.template["spec"].clone()).ok();
        if let Some(o) = other.as_mut() {
            submit::strip_spread(o);
            if let Some(c) = o.containers.first_mut().filter(|_| kind == WorkloadKind::RayJob) {
                c.command = pod_spec.containers.first().and_then(|m| m.command.clone());
                c.args = None;
            }
        }
        let mut main_pod = pod_spec.clone();
        if let (Some(o), Some(m)) = (other.as_ref(), main_pod.containers.first_mut()) {
            // Containers are named by role (ray-head, ray-worker); the name carries nothing.
            m.name = o.containers.first().map(|c| c.name.clone()).unwrap_or_default();
        }
        if other.as_ref() != Some(&main_pod) {
            warnings.push(format!(
                "`{}`: its pod differs from the one the nodes are read from (`{}`); only that one is carried",
                g.path, node.path
            ));
        }
    }
    let nodes: u32 = groups.iter().map(|g| g.pods).sum::<u32>().saturating_sub(extra_pods);
    if nodes > 1 {
        spec_out.nodes = Some(nodes);
    } else if nodes == 0 {
        return Err(ImportError::new(format!("the {} runs no pod (every group has 0 replicas)", def.kind)));
    }
    if let Some((at, d)) = deadline {
        match d.as_u64().filter(|s| *s > 0) {
            Some(secs) => spec_out.time_limit = Some(duration_text(secs)),
            None => warnings.push(format!("`{at}`: {d} is no time limit; dropped")),
        }
    }
    if let Some(t) = tasks.filter(|t| *t > 1 && (kind != WorkloadKind::MpiJob || *t != spec_out.gpus.max(1))) {
        spec_out.tasks_per_node = Some(t);
    }
    if let Some(q) = queue {
        spec_out.partition = Some(q);
    }
    if spec_out.nodes.unwrap_or(1) > 1 && kind != WorkloadKind::JobSet {
        warnings.push(format!(
            "`kind`: the spec names no workload kind: submitted to a Kubernetes cluster, {nodes} nodes become the kind its `multi_node` setting names (jobset unless set); `submit --multi-node {word}` submits a {kind} again and `spec convert --to {word}` writes one",
            word = dialect_of(kind).kind_name(),
            kind = def.kind
        ));
    }
    spec_out.validate().map_err(|e| ImportError::new(format!("{e} (read from the {})", def.kind)))?;
    Ok(Imported { spec: spec_out, warnings })
}

fn dialect_of(kind: WorkloadKind) -> Dialect {
    match kind {
        WorkloadKind::JobSet => JOB_SET,
        WorkloadKind::PyTorchJob => PYTORCH_JOB,
        WorkloadKind::MpiJob => MPI_JOB,
        WorkloadKind::RayJob => RAY_JOB,
        _ => VOLCANO_JOB,
    }
}

/// The group whose pods ask for GPUs, else the first.
fn with_gpus(groups: &[Group]) -> usize {
    groups
        .iter()
        .position(|g| {
            g.template["spec"]["containers"][0]["resources"]["limits"]
                .as_object()
                .is_some_and(|l| l.keys().any(|k| crate::backend::kube::gpu::is_gpu_resource(k)))
        })
        .unwrap_or(0)
}

// ----- writing -----------------------------------------------------------------------------

/// A RayJob: `command` as the entrypoint, a head and `nodes − 1` workers, each the pod a
/// one-node spec runs (KubeRay starts Ray in them, so their own command is left out).
fn export_ray_job(spec: &JobSpec) -> Result<Native, BackendError> {
    spec.validate().map_err(|e| BackendError::InvalidSpec(e.to_string()))?;
    let Some(entrypoint) = spec.command.clone() else {
        return Err(BackendError::InvalidSpec(
            "`script`: a RayJob's entrypoint is one command line; write it as `command` (a script file the image holds, run by it)".into(),
        ));
    };
    if spec.array.is_some() {
        return Err(BackendError::InvalidSpec("`array`: a RayJob has no array form".into()));
    }
    let mut warnings = Vec::new();
    let target = offline_target(spec, true, "RayJob", &mut warnings);
    let one = manifest::job_manifest(&JobSpec { nodes: Some(1), ..spec.clone() }, &target)?;
    warnings.extend(one.warnings);
    let job = serde_json::to_value(&one.job)
        .map_err(|e| BackendError::InvalidSpec(format!("cannot build the RayJob manifest: {e}")))?;
    let mut metadata = job["metadata"].clone();
    metadata["name"] = json!(manifest::dns_label(&spec.name, submit::MAX_NAME));
    let mut template = job["spec"]["template"].clone();
    if let Some(labels) = template.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(QUEUE_LABEL);
    }
    if let Some(c) = template.pointer_mut("/spec/containers/0").and_then(Value::as_object_mut) {
        c.remove("command");
        c.remove("args");
    }
    if let Some(p) = template.pointer_mut("/spec").and_then(Value::as_object_mut) {
        // KubeRay restarts Ray's pods itself.
        p.remove("restartPolicy");
    }
    let role = |name: &str| {
        let mut t = template.clone();
        t["spec"]["containers"][0]["name"] = json!(name);
        t
    };
    let nodes = spec.nodes.unwrap_or(1).max(1);
    let mut body = json!({
        "entrypoint": entrypoint,
        "shutdownAfterJobFinishes": true,
        "rayClusterSpec": {
            "headGroupSpec": {"rayStartParams": {}, "template": role("ray-head")},
        },
    });
    if nodes > 1 {
        body["rayClusterSpec"]["workerGroupSpecs"] = json!([{
            "groupName": "node",
            "replicas": nodes - 1,
            "minReplicas": nodes - 1,
            "maxReplicas": nodes - 1,
            "rayStartParams": {},
            "template": role("ray-worker"),
        }]);
    }
    if let Some(d) = job["spec"].get("activeDeadlineSeconds") {
        body["activeDeadlineSeconds"] = d.clone();
    }
    if target.queue.is_some() {
        body["suspend"] = json!(true);
    }
    warnings.push(format!(
        "`command`: the entrypoint, run once by KubeRay's submitter against a Ray cluster of {nodes} pod{} (a head{}); the image must hold Ray",
        if nodes == 1 { "" } else { "s" },
        if nodes > 1 { format!(" and {} worker{}", nodes - 1, if nodes == 2 { "" } else { "s" }) } else { String::new() }
    ));
    if spec.env.keys().any(|k| k.starts_with("RAY_")) {
        warnings.push("`env`: RAY_ variables are set in every pod, KubeRay's own among them".into());
    }
    let def = WorkloadKind::RayJob.def();
    let object = json!({
        "apiVersion": format!("{}/{}", def.group, def.versions[0]),
        "kind": def.kind,
        "metadata": metadata,
        "spec": body,
    });
    let text = serde_saphyr::to_string(&object)
        .map_err(|e| BackendError::Parse { what: "the RayJob manifest".into(), message: e.to_string() })?;
    Ok(Native { dialect: RAY_JOB, text, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(nodes: u32) -> JobSpec {
        JobSpec {
            name: "train".into(),
            command: Some("torchrun train.py".into()),
            image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
            gpus: 8,
            nodes: Some(nodes),
            account: Some("ml".into()),
            ..JobSpec::default()
        }
    }

    #[test]
    fn each_kind_reads_back_what_it_wrote() {
        for entry in entries() {
            let native = (entry.export)(&spec(3)).unwrap_or_else(|e| panic!("{:?}: {e}", entry.dialect));
            assert_eq!(native.dialect, entry.dialect);
            assert!((entry.detect)(&native.text), "{:?}", entry.dialect);
            let back =
                (entry.import)(&native.text).unwrap_or_else(|e| panic!("{:?}: {e}\n{}", entry.dialect, native.text));
            let s = back.spec;
            assert_eq!(
                (s.nodes, s.gpus, s.command.as_deref()),
                (Some(3), 8, Some("torchrun train.py")),
                "{:?}",
                entry.dialect
            );
            assert_eq!((s.name.as_str(), s.account.as_deref()), ("train", Some("ml")), "{:?}", entry.dialect);
            for other in entries().iter().filter(|o| o.dialect != entry.dialect) {
                assert!(!(other.detect)(&native.text), "{:?} claims {:?}", other.dialect, entry.dialect);
            }
        }
    }

    #[test]
    fn a_wrong_kind_is_refused_by_name() {
        let e = import("apiVersion: batch/v1\nkind: Job\nspec: {}\n", WorkloadKind::JobSet).unwrap_err();
        assert!(e.message.contains("not a JobSet"), "{e}");
        let e = import("a: 1\n---\nb: 2\n", WorkloadKind::JobSet).unwrap_err();
        assert!(e.message.contains("2 YAML documents"), "{e}");
    }
}
