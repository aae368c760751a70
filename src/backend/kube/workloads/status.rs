//! A workload object's own account of itself: state from its conditions or phase, its
//! replica groups (with what each replica asks for), and the object's words for why it waits
//! or how it ended. One reader per family; each follows the project's status types
//! (Kubeflow `JobCondition`, KubeRay `JobDeploymentStatus`, JobSet conditions, Volcano's
//! `JobPhase`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::core::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use super::super::gpu::{self, Amounts};
use super::super::kueue::{condition, is_true, str_at};
use super::kinds::WorkloadKind;
use crate::model::JobState;

/// One replica group, with the pod template its replicas run.
#[derive(Debug, Clone, Default)]
pub struct Group<'a> {
    pub name: String,
    /// Pods in the group.
    pub pods: u32,
    pub ready: Option<u32>,
    /// What one pod asks for.
    pub demand: Amounts,
    /// The GPU product the template's node selector names (`map::selected_product`).
    pub product: Option<String>,
    /// The pod template (`{metadata, spec}`) as the object holds it: read whole only on
    /// import ([`Group::pod_spec`]).
    pub template: Option<Cow<'a, Value>>,
}

impl Group<'_> {
    /// The template's pod spec, read whole.
    pub fn pod_spec(&self) -> Option<PodSpec> {
        PodTemplateSpec::deserialize(self.template.as_deref()?).ok()?.spec
    }
}

/// What the object says about itself.
#[derive(Debug, Clone)]
pub struct Status<'a> {
    pub state: JobState,
    /// The object's own state word (`Running`, `Suspended`, `Inqueue` …).
    pub native: String,
    pub reason: Option<String>,
    pub groups: Vec<Group<'a>>,
    /// Ready replicas and the replicas asked for, when the object counts in units other than
    /// pods (LeaderWorkerSet counts groups).
    pub replicas: Option<(u32, u32)>,
    pub suspended: bool,
    /// A Volcano queue the object names (`spec.queue`).
    pub queue: Option<String>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
}

impl Status<'_> {
    fn new<'a>(state: JobState, native: impl Into<String>) -> Status<'a> {
        Status {
            state,
            native: native.into(),
            reason: None,
            groups: Vec::new(),
            replicas: None,
            suspended: false,
            queue: None,
            start: None,
            end: None,
        }
    }
}

fn u32_at(v: &Value, key: &str) -> Option<u32> {
    v.get(key).and_then(Value::as_u64).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

fn time_at(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    str_at(v, path).and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&Utc))
}

fn words(c: &Value) -> Option<String> {
    let reason = c.get("reason").and_then(Value::as_str).filter(|s| !s.is_empty());
    let message = c.get("message").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    match (reason, message) {
        (Some(r), Some(m)) => Some(format!("{r}: {m}")),
        (Some(r), None) => Some(r.to_string()),
        (None, Some(m)) => Some(m.to_string()),
        (None, None) => None,
    }
}

fn true_condition<'a>(d: &'a Value, kind: &str) -> Option<&'a Value> {
    condition(d, kind).filter(|c| is_true(Some(c)))
}

fn condition_time(c: Option<&Value>) -> Option<DateTime<Utc>> {
    c.and_then(|c| time_at(c, &["lastTransitionTime"]))
}

/// What a status read needs of a pod template: what each replica asks of its node and the
/// GPU product its node selector names. Only these fields are deserialized: the whole
/// `PodSpec` (every container's image, env, probes, volumes) was most of a status read, once
/// per group of every workload mapped; the template is read whole only on import.
#[derive(Deserialize)]
struct DemandTemplate {
    spec: Option<DemandSpec>,
}

/// The fields of a `PodSpec` that [`gpu::spec_demand`] reads, plus the node selector.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DemandSpec {
    // Required, as in `PodSpec`: a template without containers has no demand.
    containers: Vec<ContainerDemand>,
    init_containers: Option<Vec<ContainerDemand>>,
    resources: Option<ResourceRequirements>,
    overhead: Option<BTreeMap<String, Quantity>>,
    node_selector: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerDemand {
    resources: Option<ResourceRequirements>,
    restart_policy: Option<String>,
}

impl ContainerDemand {
    fn into_container(self) -> Container {
        Container { resources: self.resources, restart_policy: self.restart_policy, ..Container::default() }
    }
}

/// A group from a pod template (`{metadata, spec}`) run `pods` times.
fn group<'a>(name: &str, pods: u32, template: Option<Cow<'a, Value>>) -> Group<'a> {
    // Read in place from the object's JSON: no copy of the template's JSON, once per group of
    // every workload mapped.
    let spec = template.as_deref().and_then(|t| DemandTemplate::deserialize(t).ok()).and_then(|t| t.spec);
    let (demand, product) = match spec {
        Some(s) => {
            let product = super::super::map::selected_product(s.node_selector.as_ref()).map(str::to_string);
            let spec = PodSpec {
                containers: s.containers.into_iter().map(ContainerDemand::into_container).collect(),
                init_containers: s
                    .init_containers
                    .map(|cs| cs.into_iter().map(ContainerDemand::into_container).collect()),
                resources: s.resources,
                overhead: s.overhead,
                ..PodSpec::default()
            };
            (gpu::spec_demand(&spec), product)
        }
        None => (Amounts::default(), None),
    };
    Group { name: name.to_string(), pods, ready: None, demand, product, template }
}

/// The value at `path` (object keys only): `Value::pointer` without its copy of each key.
fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// What the object is, read its family's way.
pub fn read(kind: WorkloadKind, obj: &DynamicObject) -> Status<'_> {
    let d = &obj.data;
    let mut status = match kind {
        WorkloadKind::PyTorchJob => kubeflow(d, "pytorchReplicaSpecs"),
        WorkloadKind::MpiJob => kubeflow(d, "mpiReplicaSpecs"),
        WorkloadKind::TfJob => kubeflow(d, "tfReplicaSpecs"),
        WorkloadKind::XgBoostJob => kubeflow(d, "xgbReplicaSpecs"),
        WorkloadKind::PaddleJob => kubeflow(d, "paddleReplicaSpecs"),
        WorkloadKind::JaxJob => kubeflow(d, "jaxReplicaSpecs"),
        WorkloadKind::TrainJob => train_job(d),
        WorkloadKind::RayJob => ray_job(d),
        WorkloadKind::RayCluster => ray_cluster(d),
        WorkloadKind::RayService => ray_service(d),
        WorkloadKind::JobSet => jobset(d),
        WorkloadKind::LeaderWorkerSet => leader_worker_set(d),
        WorkloadKind::VolcanoJob => volcano_job(d),
    };
    if obj.metadata.deletion_timestamp.is_some() && !status.state.is_finished() {
        status.state = JobState::Completing;
        status.native = "Terminating".into();
        status.reason = Some("deleting".into());
    }
    status
}

/// The states a job-like workload's conditions settle, in the order they win: done (the
/// `done` condition: Kubeflow's `Succeeded`, TrainJob's `Complete`, JobSet's `Completed`),
/// failed, or suspended (the `Suspended` condition or the flag at `suspend_at`). `None`: it
/// is still under way, which each kind reads its own way.
fn settled<'a>(d: &Value, done: &str, suspend_at: &[&str]) -> Option<Status<'a>> {
    if let Some(c) = true_condition(d, done) {
        let mut s = Status::new(JobState::Completed, done);
        s.end = condition_time(Some(c));
        Some(s)
    } else if let Some(c) = true_condition(d, "Failed") {
        let mut s = Status::new(JobState::Failed, "Failed");
        s.reason = words(c);
        s.end = condition_time(Some(c));
        Some(s)
    } else if true_condition(d, "Suspended").is_some() || at(d, suspend_at).and_then(Value::as_bool) == Some(true) {
        let mut s = Status::new(JobState::Held, "Suspended");
        s.suspended = true;
        Some(s)
    } else {
        None
    }
}

/// Kubeflow's v1 jobs (PyTorchJob, MPIJob, TFJob): `spec.<x>ReplicaSpecs.{Role}` and
/// `JobCondition`s (Created, Running, Restarting, Succeeded, Suspended, Failed).
fn kubeflow<'a>(d: &'a Value, specs_key: &str) -> Status<'a> {
    let mut s = if let Some(s) = settled(d, "Succeeded", &["spec", "runPolicy", "suspend"]) {
        s
    } else if let Some(c) = true_condition(d, "Restarting") {
        let mut s = Status::new(JobState::Running, "Restarting");
        s.reason = words(c);
        s
    } else if true_condition(d, "Running").is_some() {
        Status::new(JobState::Running, "Running")
    } else if true_condition(d, "Created").is_some() {
        Status::new(JobState::Pending, "Created")
    } else {
        Status::new(JobState::Pending, "Pending")
    };
    s.start = time_at(d, &["status", "startTime"]);
    s.end = s.end.or_else(|| time_at(d, &["status", "completionTime"]));
    let replica_status = at(d, &["status", "replicaStatuses"]);
    if let Some(specs) = d.get("spec").and_then(|s| s.get(specs_key)).and_then(Value::as_object) {
        // Launcher, Master and Chief first: the order the operators start them in.
        let mut roles: Vec<(&String, &Value)> = specs.iter().collect();
        roles.sort_by_key(|(role, _)| (!matches!(role.as_str(), "Launcher" | "Master" | "Chief"), role.to_string()));
        for (role, spec) in roles {
            let mut g = group(role, u32_at(spec, "replicas").unwrap_or(1), spec.get("template").map(Cow::Borrowed));
            g.ready = replica_status.and_then(|r| r.get(role)).and_then(|r| u32_at(r, "active"));
            s.groups.push(g);
        }
    }
    s
}

/// Kubeflow Trainer's TrainJob: `spec.trainer.numNodes` and `resourcesPerNode`; conditions
/// Suspended, Complete, Failed; `status.jobsStatus` counts the JobSet's jobs.
fn train_job<'a>(d: &'a Value) -> Status<'a> {
    let mut s = if let Some(s) = settled(d, "Complete", &["spec", "suspend"]) {
        s
    } else {
        let active: u64 = d
            .get("status")
            .and_then(|s| s.get("jobsStatus"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|j| j.get("active").and_then(Value::as_u64))
            .sum();
        if active > 0 { Status::new(JobState::Running, "Running") } else { Status::new(JobState::Pending, "Created") }
    };
    let trainer = at(d, &["spec", "trainer"]);
    let nodes = trainer.and_then(|t| u32_at(t, "numNodes")).unwrap_or(1);
    let mut g = Group { name: "node".into(), pods: nodes, ..Group::default() };
    if let Some(resources) = trainer.and_then(|t| t.get("resourcesPerNode")) {
        let container = serde_json::json!({"name": "node", "resources": resources});
        g = group("node", nodes, Some(Cow::Owned(serde_json::json!({"spec": {"containers": [container]}}))));
    }
    s.groups.push(g);
    s
}

/// Ray's cluster spec: the head group and every worker group (`replicas` × `numOfHosts`).
fn ray_groups<'a>(spec: Option<&'a Value>, status: Option<&Value>) -> Vec<Group<'a>> {
    let Some(spec) = spec else { return Vec::new() };
    let mut out = vec![group("head", 1, at(spec, &["headGroupSpec", "template"]).map(Cow::Borrowed))];
    for w in spec.get("workerGroupSpecs").and_then(Value::as_array).into_iter().flatten() {
        let name = w.get("groupName").and_then(Value::as_str).unwrap_or("workers");
        let replicas = u32_at(w, "replicas").or_else(|| u32_at(w, "minReplicas")).unwrap_or(0);
        let hosts = u32_at(w, "numOfHosts").unwrap_or(1).max(1);
        let suspended = w.get("suspend").and_then(Value::as_bool) == Some(true);
        let pods = if suspended { 0 } else { replicas.saturating_mul(hosts) };
        out.push(group(name, pods, w.get("template").map(Cow::Borrowed)));
    }
    if let (Some(ready), true) = (status.and_then(|s| u32_at(s, "readyWorkerReplicas")), out.len() == 2) {
        out[1].ready = Some(ready);
    }
    out
}

/// KubeRay's RayJob: `status.jobDeploymentStatus` (Initializing, Running, Complete, Failed,
/// Suspending, Suspended, Retrying, Waiting) with `jobStatus` (Ray's own: SUCCEEDED, FAILED …).
fn ray_job<'a>(d: &'a Value) -> Status<'a> {
    let deployment = str_at(d, &["status", "jobDeploymentStatus"]).unwrap_or("");
    let job_status = str_at(d, &["status", "jobStatus"]).unwrap_or("");
    let message = str_at(d, &["status", "message"]).map(str::trim).filter(|m| !m.is_empty()).map(str::to_string);
    let native = match (deployment, job_status) {
        ("", _) => "New".to_string(),
        (dep, "") => dep.to_string(),
        (dep, js) => format!("{dep},{js}"),
    };
    let state = match deployment {
        "Complete" if job_status == "FAILED" => JobState::Failed,
        "Complete" if job_status == "STOPPED" => JobState::Cancelled,
        "Complete" => JobState::Completed,
        "Failed" => JobState::Failed,
        "Suspended" | "Suspending" => JobState::Held,
        "Running" => JobState::Running,
        _ if at(d, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true) => JobState::Held,
        _ => JobState::Pending,
    };
    let mut s = Status::new(state, native);
    s.suspended = state == JobState::Held;
    s.reason = match state {
        JobState::Pending if deployment == "Retrying" => {
            Some(message.map(|m| format!("Retrying: {m}")).unwrap_or_else(|| "Retrying".into()))
        }
        JobState::Pending | JobState::Failed => message,
        _ => None,
    };
    s.start = time_at(d, &["status", "startTime"]);
    s.end = time_at(d, &["status", "endTime"]).filter(|_| state.is_finished());
    s.groups = ray_groups(at(d, &["spec", "rayClusterSpec"]), at(d, &["status", "rayClusterStatus"]));
    s
}

/// KubeRay's RayCluster: `status.state` (`ready`, `suspended`) and conditions
/// (`HeadPodReady`, `RayClusterProvisioned`, `RayClusterSuspended`).
fn ray_cluster<'a>(d: &'a Value) -> Status<'a> {
    let state_word = str_at(d, &["status", "state"]).unwrap_or("");
    let suspended = at(d, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true)
        || true_condition(d, "RayClusterSuspended").is_some()
        || state_word == "suspended";
    let mut s = if suspended {
        let mut s = Status::new(JobState::Held, "Suspended");
        s.suspended = true;
        s
    } else if state_word == "failed" {
        let mut s = Status::new(JobState::Failed, "failed");
        s.reason = str_at(d, &["status", "reason"]).map(str::to_string);
        s
    } else if state_word == "ready" || true_condition(d, "HeadPodReady").is_some() {
        Status::new(JobState::Running, if state_word.is_empty() { "HeadPodReady" } else { state_word })
    } else {
        let mut s = Status::new(JobState::Pending, if state_word.is_empty() { "Provisioning" } else { state_word });
        s.reason = condition(d, "RayClusterProvisioned").filter(|c| !is_true(Some(c))).and_then(words);
        s
    };
    s.groups = ray_groups(d.get("spec"), d.get("status"));
    s
}

/// KubeRay's RayService: a RayCluster it keeps serving. `status.serviceStatus` (`Running`,
/// or a waiting word such as `WaitForServeDeploymentReady`) in KubeRay up to 1.2, the `Ready`
/// condition from 1.3; the groups are its cluster spec's.
fn ray_service<'a>(d: &'a Value) -> Status<'a> {
    let word = str_at(d, &["status", "serviceStatus"]).unwrap_or("");
    let ready = true_condition(d, "Ready").is_some() || word == "Running";
    let mut s = if ready {
        Status::new(JobState::Running, if word.is_empty() { "Ready" } else { word })
    } else {
        let mut s = Status::new(JobState::Pending, if word.is_empty() { "NotReady" } else { word });
        s.reason = condition(d, "Ready").and_then(words);
        s
    };
    s.groups =
        ray_groups(at(d, &["spec", "rayClusterConfig"]), at(d, &["status", "activeServiceStatus", "rayClusterStatus"]));
    s
}

/// JobSet: `spec.replicatedJobs` (replicas × the Job template's pods) and conditions
/// Completed, Failed, Suspended; `status.replicatedJobsStatus` counts ready jobs.
fn jobset<'a>(d: &'a Value) -> Status<'a> {
    let mut s = if let Some(s) = settled(d, "Completed", &["spec", "suspend"]) {
        s
    } else {
        // Running or not is the pods' to say (the JobSet has no Running condition).
        Status::new(JobState::Pending, "Active")
    };
    let statuses = at(d, &["status", "replicatedJobsStatus"]).and_then(Value::as_array);
    for rj in at(d, &["spec", "replicatedJobs"]).and_then(Value::as_array).into_iter().flatten() {
        let name = rj.get("name").and_then(Value::as_str).unwrap_or("");
        let replicas = u32_at(rj, "replicas").unwrap_or(1);
        let job_spec = at(rj, &["template", "spec"]);
        let parallelism = job_spec.and_then(|j| u32_at(j, "parallelism")).unwrap_or(1);
        let per_job = match job_spec.and_then(|j| u32_at(j, "completions")) {
            Some(c) => parallelism.min(c),
            None => parallelism,
        };
        let mut g =
            group(name, replicas.saturating_mul(per_job), job_spec.and_then(|j| j.get("template")).map(Cow::Borrowed));
        g.ready = statuses
            .and_then(|all| all.iter().find(|st| st.get("name").and_then(Value::as_str) == Some(name)))
            .and_then(|st| u32_at(st, "ready"))
            .map(|jobs| jobs.saturating_mul(per_job));
        s.groups.push(g);
    }
    s
}

/// LeaderWorkerSet: `spec.replicas` groups of `leaderWorkerTemplate.size` pods (one leader,
/// size − 1 workers); ready is counted in groups; `Available` says it serves.
fn leader_worker_set<'a>(d: &'a Value) -> Status<'a> {
    let replicas = at(d, &["spec", "replicas"]).and_then(Value::as_u64).unwrap_or(1) as u32;
    let template = at(d, &["spec", "leaderWorkerTemplate"]);
    let size = template.and_then(|t| u32_at(t, "size")).unwrap_or(1).max(1);
    let ready = at(d, &["status", "readyReplicas"]).and_then(Value::as_u64).unwrap_or(0) as u32;
    let mut s = if true_condition(d, "Available").is_some() {
        Status::new(JobState::Running, "Available")
    } else {
        let mut s = Status::new(JobState::Pending, "Progressing");
        s.reason = condition(d, "Available").and_then(words);
        s
    };
    let worker = template.and_then(|t| t.get("workerTemplate"));
    let leader = template.and_then(|t| t.get("leaderTemplate")).or(worker);
    let mut l = group("leader", replicas, leader.map(Cow::Borrowed));
    l.ready = Some(ready);
    s.groups.push(l);
    if size > 1 {
        s.groups.push(group("worker", replicas.saturating_mul(size - 1), worker.map(Cow::Borrowed)));
    }
    s.replicas = Some((ready, replicas));
    s
}

/// Volcano's Job: `status.state.phase` (Pending, Aborting, Aborted, Running, Restarting,
/// Completing, Completed, Terminating, Terminated, Failed) and `spec.tasks`.
fn volcano_job<'a>(d: &'a Value) -> Status<'a> {
    let phase = str_at(d, &["status", "state", "phase"]).unwrap_or("Pending");
    let state = match phase {
        "Running" | "Restarting" => JobState::Running,
        "Aborting" | "Completing" | "Terminating" => JobState::Completing,
        // Aborted by a Command: its pods are gone and ResumeJob brings it back.
        "Aborted" => JobState::Held,
        "Completed" => JobState::Completed,
        "Terminated" => JobState::Cancelled,
        "Failed" => JobState::Failed,
        _ => JobState::Pending,
    };
    let mut s = Status::new(state, phase);
    s.suspended = phase == "Aborted" || phase == "Aborting";
    s.reason = at(d, &["status", "state"]).and_then(words);
    s.queue = str_at(d, &["spec", "queue"]).map(str::to_string);
    if state.is_finished() {
        s.end = time_at(d, &["status", "state", "lastTransitionTime"]);
    }
    for t in at(d, &["spec", "tasks"]).and_then(Value::as_array).into_iter().flatten() {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("task");
        s.groups.push(group(name, u32_at(t, "replicas").unwrap_or(1), t.get("template").map(Cow::Borrowed)));
    }
    s
}

/// The replica group a pod belongs to, from the labels each operator sets on its pods.
/// Borrowed from the labels: the mapping compares it to a group's name and copies it only
/// into the pod's row.
pub fn pod_role(pod: &Pod) -> Option<&str> {
    let labels = pod.metadata.labels.as_ref()?;
    const ROLE_LABELS: [&str; 6] = [
        "training.kubeflow.org/replica-type",
        "training.kubeflow.org/job-role",
        "jobset.sigs.k8s.io/replicatedjob-name",
        "ray.io/group",
        "volcano.sh/task-spec",
        "replica-type",
    ];
    if let Some(v) = ROLE_LABELS.iter().find_map(|k| labels.get(*k)) {
        return Some(v);
    }
    match labels.get("leaderworkerset.sigs.k8s.io/worker-index").map(String::as_str) {
        Some("0") => Some("leader"),
        Some(_) => Some("worker"),
        None => None,
    }
}

/// A workload read back as a spec: its first replica group's pod template (Master,
/// Launcher, the head, the leader) read the way a bare pod is, with `nodes` the pods of all
/// its groups.
pub fn import(kind: WorkloadKind, obj: &DynamicObject) -> Result<crate::spec::Imported, crate::spec::ImportError> {
    if super::dialect::reads(kind) {
        // The kinds that are job forms of their own are read as their files are, so a
        // migrated one keeps its time limit, tasks per node and queue.
        let doc = serde_json::to_value(obj)
            .map_err(|e| crate::spec::ImportError::new(format!("cannot read the {}: {e}", kind.def().kind)))?;
        return super::dialect::import_value(&doc, kind);
    }
    let status = read(kind, obj);
    let main = status.groups.iter().find(|g| g.demand.gpus() > 0).or(status.groups.first());
    let Some(mut template) = main.and_then(Group::pod_spec) else {
        return Err(crate::spec::ImportError::new(format!("the {} has no pod template to read", kind.def().kind)));
    };
    super::submit::strip_spread(&mut template);
    let pod = Pod { metadata: obj.metadata.clone(), spec: Some(template), status: None };
    let mut imported = super::super::dialect::import_pod(&pod)?;
    let pods: u32 = status.groups.iter().map(|g| g.pods).sum();
    if pods > 1 {
        imported.spec.nodes = Some(pods);
        imported.warnings.push(format!(
            "`nodes`: the {}'s {} pods in {} read as {pods} nodes of its `{}` group's template",
            kind.def().kind,
            pods,
            crate::model::words::counted(status.groups.len() as u64, "group", "groups"),
            main.map(|g| g.name.as_str()).unwrap_or("")
        ));
    }
    Ok(imported)
}
