//! A multi-node spec (`nodes > 1`) as one gang-scheduled workload: a JobSet (the default), a
//! Kubeflow PyTorchJob, an MPIJob or a Volcano Job, as the cluster's `multi_node` setting says.
//!
//! Every kind starts from the single-node Job [`manifest::job_manifest`] builds, so a pod of
//! the workload is exactly the pod a one-node spec runs (image, command, GPUs, memory,
//! placement, annotations); what changes is the object around it:
//!
//! * a **JobSet** of one replicated Job `node`, an Indexed Job of N pods, with DNS hostnames
//!   on, no restarts, Kueue's label and `suspend` when queued (JobSet is the kind Kueue
//!   admits as a whole); each pod gets torch's rendezvous in its env: `MASTER_ADDR` (pod 0's
//!   stable hostname), `MASTER_PORT`, `WORLD_SIZE` (nodes), `NODE_RANK` (the completion
//!   index), and the same as torchrun's `PET_*` defaults so a bare `torchrun train.py` joins;
//! * a **PyTorchJob** of one `Master` and N−1 `Worker`s, the container named `pytorch` (the
//!   operator injects `MASTER_ADDR`, `MASTER_PORT`, `RANK` and `WORLD_SIZE` into that one);
//! * an **MPIJob** (`kubeflow.org/v2beta1`) of one `Launcher` that runs the command (without
//!   GPUs) and N `Worker`s that hold the GPUs and run sshd for `mpirun` to reach;
//! * a **Volcano Job** of one task `node` with `minAvailable: N` (Volcano's gang), the
//!   `env` and `svc` plugins (rank in `VC_TASK_INDEX`, hostnames), `MASTER_ADDR`,
//!   `MASTER_PORT` and `WORLD_SIZE` set, in the spec's `partition` as its Volcano queue.
//!
//! Each pod is kept off the nodes of its siblings (a pod anti-affinity on the kind's own
//! pod label), since `nodes = N` means N machines, as on Slurm. The name is cut shorter than
//! a Job's so that the names the operators derive from it (`NAME-node-0-7`, pods, services)
//! stay within Kubernetes' 63 characters.

use serde_json::{Value, json};

use super::WorkloadKind;
use crate::backend::BackendError;
use crate::backend::kube::kueue::QUEUE_LABEL;
use crate::backend::kube::manifest::{self, dns_label};
use crate::spec::JobSpec;

/// Which kind a multi-node spec becomes (config `multi_node`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MultiNode {
    /// `jobset.x-k8s.io` JobSet: needs only the JobSet controller, and Kueue admits it.
    #[default]
    JobSet,
    /// `kubeflow.org` PyTorchJob: the Training Operator wires torch's rendezvous itself.
    PyTorchJob,
    /// `kubeflow.org` MPIJob (mpi-operator v2): a launcher runs `mpirun` over the workers.
    MpiJob,
    /// `batch.volcano.sh` Job: Volcano's gang scheduler and queues.
    Volcano,
}

impl MultiNode {
    /// The words the config accepts, in the order the message lists them.
    pub const NAMES: [&'static str; 4] = ["jobset", "pytorchjob", "mpijob", "volcano"];

    /// Every kind, in the order of [`MultiNode::NAMES`].
    pub const ALL: [MultiNode; 4] = [MultiNode::JobSet, MultiNode::PyTorchJob, MultiNode::MpiJob, MultiNode::Volcano];

    pub fn parse(word: &str) -> Option<MultiNode> {
        match word.trim().to_ascii_lowercase().as_str() {
            "jobset" => Some(MultiNode::JobSet),
            "pytorchjob" => Some(MultiNode::PyTorchJob),
            "mpijob" => Some(MultiNode::MpiJob),
            "volcano" | "vcjob" => Some(MultiNode::Volcano),
            _ => None,
        }
    }

    /// The kind `spec` becomes: the one its own `multi_node` names (`submit --multi-node`),
    /// else `configured`, the cluster's; a word that names no kind is refused by name.
    pub fn for_spec(spec: &JobSpec, configured: MultiNode) -> Result<MultiNode, BackendError> {
        match spec.multi_node.as_deref() {
            None => Ok(configured),
            Some(word) => MultiNode::parse(word).ok_or_else(|| {
                BackendError::InvalidSpec(format!(
                    "`multi_node`: {word:?} is no kind a job of several nodes becomes on Kubernetes: use one of {}",
                    MultiNode::NAMES.join(", ")
                ))
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MultiNode::JobSet => "jobset",
            MultiNode::PyTorchJob => "pytorchjob",
            MultiNode::MpiJob => "mpijob",
            MultiNode::Volcano => "volcano",
        }
    }

    /// The native form this kind is written in (`spec convert --to`).
    pub fn dialect(self) -> crate::model::Dialect {
        use super::dialect;
        match self {
            MultiNode::JobSet => dialect::JOB_SET,
            MultiNode::PyTorchJob => dialect::PYTORCH_JOB,
            MultiNode::MpiJob => dialect::MPI_JOB,
            MultiNode::Volcano => dialect::VOLCANO_JOB,
        }
    }

    pub fn kind(self) -> WorkloadKind {
        match self {
            MultiNode::JobSet => WorkloadKind::JobSet,
            MultiNode::PyTorchJob => WorkloadKind::PyTorchJob,
            MultiNode::MpiJob => WorkloadKind::MpiJob,
            MultiNode::Volcano => WorkloadKind::VolcanoJob,
        }
    }

    /// The `apiVersion` this kind is created at (mpi-operator's v2beta1 is the MPIJob with
    /// `runPolicy.suspend`; the Training Operator's old v1 MPIJob has none).
    pub fn api_version(self) -> String {
        let def = self.kind().def();
        format!("{}/{}", def.group, def.versions[0])
    }

    /// The label each controller puts on every pod of one workload, naming it.
    fn pod_label(self) -> &'static str {
        match self {
            MultiNode::JobSet => "jobset.sigs.k8s.io/jobset-name",
            MultiNode::PyTorchJob | MultiNode::MpiJob => "training.kubeflow.org/job-name",
            MultiNode::Volcano => "volcano.sh/job-name",
        }
    }
}

/// A built workload: the object to create, its kind, and what of the spec it could not carry
/// as asked (or what the user should know to run on it), one sentence per field.
#[derive(Debug, Clone)]
pub struct WorkloadManifest {
    pub object: Value,
    pub kind: WorkloadKind,
    pub warnings: Vec<String>,
}

/// The longest name a workload gets, suffix included: the Job a JobSet makes is
/// `NAME-node-0`, its pods' hostnames `NAME-node-0-INDEX`, a PyTorchJob's services
/// `NAME-worker-INDEX`, each within 63 characters for up to 10,000 nodes.
pub const MAX_NAME: usize = 44;

/// Build the workload for `spec` (which must be valid and name several nodes).
pub fn multi_node_manifest(
    spec: &JobSpec,
    target: &manifest::Target,
    how: MultiNode,
) -> Result<WorkloadManifest, BackendError> {
    let nodes = spec.nodes.unwrap_or(1);
    if nodes < 2 {
        return Err(BackendError::InvalidSpec(format!(
            "`nodes`: {nodes} node runs as a plain Kubernetes Job, not as a {}",
            how.kind().def().kind
        )));
    }
    if spec.array.is_some() {
        return Err(BackendError::InvalidSpec(format!(
            "`array`: a job array of {nodes}-node jobs has no Kubernetes form; submit one array of single-node jobs, or one {nodes}-node job"
        )));
    }
    // One node's pod, exactly as a single-node spec would run it.
    let one = manifest::job_manifest(&JobSpec { nodes: Some(1), ..spec.clone() }, target)?;
    let job = serde_json::to_value(&one.job)
        .map_err(|e| BackendError::InvalidSpec(format!("cannot build the {} manifest: {e}", how.kind().def().kind)))?;
    let mut warnings = one.warnings;

    let base = dns_label(&spec.name, MAX_NAME - 1 - target.suffix.len());
    let name = if target.suffix.is_empty() { base } else { format!("{base}-{}", target.suffix) };
    let mut metadata = job["metadata"].clone();
    metadata["name"] = json!(name);
    let mut template = job["spec"]["template"].clone();
    if let Some(labels) = template.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        // The queue is the workload's to carry: Kueue admits the whole gang, not a pod.
        labels.remove(QUEUE_LABEL);
    }
    spread_over_nodes(&mut template["spec"], how.pod_label(), &name);
    let deadline = job["spec"].get("activeDeadlineSeconds").cloned();
    let queued = target.queue.is_some();

    let (api_version, kind, body) = match how {
        MultiNode::JobSet => {
            let rank = json!({"name": "NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}});
            add_rendezvous(&mut template, &format!("{name}-node-0-0.{name}"), nodes, Some(rank), spec.tasks_per_node);
            let mut job_spec = json!({
                "parallelism": nodes,
                "completions": nodes,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": template,
            });
            if let Some(d) = &deadline {
                job_spec["activeDeadlineSeconds"] = d.clone();
            }
            let mut body = json!({
                "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": job_spec}}],
                "network": {"enableDNSHostnames": true},
                "failurePolicy": {"maxRestarts": 0},
            });
            if queued {
                body["suspend"] = json!(true);
            }
            warnings.push(format!(
                "`nodes`: {}its {nodes} pods answer at {name}-node-0-0.{name} … {name}-node-0-{}.{name}; each has MASTER_ADDR={name}-node-0-0.{name}, MASTER_PORT={MASTER_PORT}, WORLD_SIZE={nodes} and NODE_RANK (its JOB_COMPLETION_INDEX) for torchrun",
                if target.suffix.is_empty() { "" } else { "the JobSet's name gets a random suffix; " },
                nodes - 1
            ));
            (how.api_version(), "JobSet", body)
        }
        MultiNode::PyTorchJob => {
            if let Some(c) = template.pointer_mut("/spec/containers/0") {
                // The operator wires the rendezvous into the container named `pytorch` only.
                c["name"] = json!("pytorch");
            }
            let group = |replicas: u32| json!({"replicas": replicas, "restartPolicy": "Never", "template": template});
            let mut run_policy = json!({"cleanPodPolicy": "None", "backoffLimit": 0});
            if let Some(d) = &deadline {
                run_policy["activeDeadlineSeconds"] = d.clone();
            }
            if queued {
                run_policy["suspend"] = json!(true);
            }
            let mut body = json!({
                "pytorchReplicaSpecs": {"Master": group(1), "Worker": group(nodes - 1)},
                "runPolicy": run_policy,
            });
            if let Some(n) = spec.tasks_per_node.filter(|n| *n > 1) {
                // The operator passes it to torchrun as --nproc-per-node (PET_NPROC_PER_NODE).
                body["nprocPerNode"] = json!(n.to_string());
            }
            warnings.push(format!(
                "`nodes`: the PyTorchJob runs 1 Master and {} Worker{}; the operator sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE in each",
                nodes - 1,
                if nodes == 2 { "" } else { "s" }
            ));
            (how.api_version(), "PyTorchJob", body)
        }
        MultiNode::MpiJob => {
            // The launcher only starts `mpirun`: it needs no GPU, nor a node of its own.
            let mut launcher = job["spec"]["template"].clone();
            if let Some(labels) = launcher.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
                labels.remove(QUEUE_LABEL);
            }
            if let Some(limits) =
                launcher.pointer_mut("/spec/containers/0/resources/limits").and_then(Value::as_object_mut)
            {
                limits.remove(&target.gpus.resource);
            }
            // Workers hold the GPUs and wait for the launcher's ssh (mpi-operator's own examples).
            let mut worker = template.clone();
            worker["spec"]["containers"][0]["command"] = json!(["/usr/sbin/sshd", "-De"]);
            let slots = spec.tasks_per_node.filter(|t| *t > 0).unwrap_or(spec.gpus.max(1));
            let mut run_policy = json!({"cleanPodPolicy": "Running", "backoffLimit": 0});
            if let Some(d) = &deadline {
                run_policy["activeDeadlineSeconds"] = d.clone();
            }
            if queued {
                run_policy["suspend"] = json!(true);
            }
            let body = json!({
                "slotsPerWorker": slots,
                "runPolicy": run_policy,
                "mpiImplementation": "OpenMPI",
                "mpiReplicaSpecs": {
                    "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": launcher},
                    "Worker": {"replicas": nodes, "restartPolicy": "Never", "template": worker},
                },
            });
            warnings.push(format!(
                "`nodes`: the MPIJob's launcher runs the command (without GPUs) and its {nodes} workers run sshd with the GPUs: the command must start the work with mpirun (-np {}), which reads the hosts from /etc/mpi/hostfile ({slots} slots each)",
                nodes * slots
            ));
            (how.api_version(), "MPIJob", body)
        }
        MultiNode::Volcano => {
            add_rendezvous(&mut template, &format!("{name}-node-0.{name}"), nodes, None, spec.tasks_per_node);
            if let Some(d) = &deadline {
                template["spec"]["activeDeadlineSeconds"] = d.clone();
            }
            template["spec"]["schedulerName"] = json!("volcano");
            if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove(QUEUE_LABEL);
            }
            let queue = match (&spec.partition, &target.queue) {
                (Some(p), _) if !p.is_empty() => p.clone(),
                (_, Some(q)) => {
                    warnings.push(format!(
                        "`partition`: Kueue does not admit Volcano Jobs, so the configured queue {q:?} is not used; the job goes to Volcano's queue \"default\" (set `partition` to a Volcano queue)"
                    ));
                    "default".into()
                }
                _ => "default".into(),
            };
            let body = json!({
                "schedulerName": "volcano",
                "minAvailable": nodes,
                "queue": queue,
                "maxRetry": 0,
                "plugins": {"env": [], "svc": []},
                "tasks": [{"name": "node", "replicas": nodes, "template": template}],
            });
            warnings.push(format!(
                "`nodes`: the Volcano Job starts its {nodes} pods together or not at all; they answer at {name}-node-0.{name} … {name}-node-{}.{name}, with MASTER_ADDR, MASTER_PORT and WORLD_SIZE set; each reads its rank from VC_TASK_INDEX (torchrun --node-rank $VC_TASK_INDEX)",
                nodes - 1
            ));
            (how.api_version(), "Job", body)
        }
    };
    let object = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": body});
    Ok(WorkloadManifest { object, kind: how.kind(), warnings })
}

/// torch's default rendezvous port (`torchrun --master-port`).
pub const MASTER_PORT: u16 = 29500;

/// The annotation an Indexed Job's controller writes on each pod: its index, 0 … N−1.
const COMPLETION_INDEX: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// The env each pod gets for torch's rendezvous, and torchrun's `PET_*` defaults from it
/// (the later ones expand the earlier: the kubelet resolves `$(NAME)` in order). A name the
/// spec sets itself is left as the spec has it.
const RENDEZVOUS: [&str; 9] = [
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_NPROC_PER_NODE",
];

fn add_rendezvous(template: &mut Value, master: &str, nodes: u32, rank: Option<Value>, per_node: Option<u32>) {
    let Some(container) = template.pointer_mut("/spec/containers/0") else { return };
    let mut wanted = vec![
        json!({"name": "MASTER_ADDR", "value": master}),
        json!({"name": "MASTER_PORT", "value": MASTER_PORT.to_string()}),
        json!({"name": "WORLD_SIZE", "value": nodes.to_string()}),
    ];
    let ranked = rank.is_some();
    wanted.extend(rank);
    wanted.push(json!({"name": "PET_MASTER_ADDR", "value": "$(MASTER_ADDR)"}));
    wanted.push(json!({"name": "PET_MASTER_PORT", "value": "$(MASTER_PORT)"}));
    wanted.push(json!({"name": "PET_NNODES", "value": "$(WORLD_SIZE)"}));
    if ranked {
        wanted.push(json!({"name": "PET_NODE_RANK", "value": "$(NODE_RANK)"}));
    }
    if let Some(n) = per_node.filter(|n| *n > 1) {
        wanted.push(json!({"name": "PET_NPROC_PER_NODE", "value": n.to_string()}));
    }
    let env = container["env"].as_array().cloned().unwrap_or_default();
    let taken: Vec<String> = env.iter().filter_map(|e| e["name"].as_str().map(str::to_string)).collect();
    let mut out = env;
    out.extend(wanted.into_iter().filter(|e| !taken.iter().any(|t| e["name"] == t.as_str())));
    container["env"] = Value::Array(out);
}

/// Whether `var` is one [`add_rendezvous`] wrote (by name and the value it writes), so that
/// reading a workload back leaves it out of the spec.
fn is_rendezvous(var: &k8s_openapi::api::core::v1::EnvVar) -> bool {
    if !RENDEZVOUS.contains(&var.name.as_str()) {
        return false;
    }
    match (var.name.as_str(), var.value.as_deref(), &var.value_from) {
        ("NODE_RANK", None, Some(from)) => from.field_ref.as_ref().is_some_and(|f| f.field_path == COMPLETION_INDEX),
        ("MASTER_PORT", Some(v), None) => v == MASTER_PORT.to_string(),
        ("MASTER_ADDR" | "WORLD_SIZE" | "PET_NPROC_PER_NODE", Some(_), None) => true,
        ("PET_MASTER_ADDR", Some(v), None) => v == "$(MASTER_ADDR)",
        ("PET_MASTER_PORT", Some(v), None) => v == "$(MASTER_PORT)",
        ("PET_NNODES", Some(v), None) => v == "$(WORLD_SIZE)",
        ("PET_NODE_RANK", Some(v), None) => v == "$(NODE_RANK)",
        _ => false,
    }
}

/// Keep each pod of workload `name` off the nodes its siblings run on (`label` is the one
/// the controller sets on all of them), beside any node affinity the GPU model asked for.
fn spread_over_nodes(pod_spec: &mut Value, label: &str, name: &str) {
    pod_spec["affinity"]["podAntiAffinity"] = json!({
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {label: name}},
            "topologyKey": "kubernetes.io/hostname",
        }]
    });
}

/// Take off the anti-affinity [`spread_over_nodes`] wrote (and the `affinity` it leaves
/// empty) and the rendezvous env [`add_rendezvous`] wrote, so that reading a workload back
/// as a spec sees the pod a one-node spec runs.
pub fn strip_spread(pod_spec: &mut k8s_openapi::api::core::v1::PodSpec) {
    for c in &mut pod_spec.containers {
        // Only where ours is (its `PET_MASTER_ADDR` marker): a pod of someone else's that
        // sets MASTER_ADDR keeps it.
        let ours = c.env.as_ref().is_some_and(|env| {
            env.iter().any(|v| v.name == "PET_MASTER_ADDR" && v.value.as_deref() == Some("$(MASTER_ADDR)"))
        });
        if let Some(env) = c.env.as_mut().filter(|_| ours) {
            env.retain(|v| !is_rendezvous(v));
            if env.is_empty() {
                c.env = None;
            }
        }
    }
    let Some(affinity) = pod_spec.affinity.as_mut() else { return };
    let ours = affinity.pod_anti_affinity.as_ref().is_some_and(|anti| {
        anti.preferred_during_scheduling_ignored_during_execution.as_ref().is_none_or(Vec::is_empty)
            && matches!(anti.required_during_scheduling_ignored_during_execution.as_deref(), Some([term])
            if term.topology_key == "kubernetes.io/hostname"
                && term.label_selector.as_ref().and_then(|s| s.match_labels.as_ref()).is_some_and(|labels| {
                    labels.len() == 1
                        && labels.keys().all(|k| {
                            MultiNode::ALL.iter().any(|m| m.pod_label() == k)
                        })
                }))
    });
    if ours {
        affinity.pod_anti_affinity = None;
    }
    if affinity.node_affinity.is_none() && affinity.pod_affinity.is_none() && affinity.pod_anti_affinity.is_none() {
        pod_spec.affinity = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::kube::manifest::{GpuPlacement, Target};

    fn target(queue: Option<&str>) -> Target {
        Target {
            namespace: "ml".into(),
            queue: queue.map(str::to_string),
            gpus: GpuPlacement::any_nvidia(),
            user: "alice".into(),
            suffix: "abc12".into(),
        }
    }

    fn spec(nodes: u32) -> JobSpec {
        JobSpec {
            name: "Pretrain 70B".into(),
            command: Some("torchrun --nnodes 4 train.py".into()),
            gpus: 8,
            time_limit: Some("1h".into()),
            image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
            nodes: Some(nodes),
            ..JobSpec::default()
        }
    }

    fn pod_of(template: &Value) -> &Value {
        &template["spec"]
    }

    #[test]
    fn multi_node_words_read_back() {
        for word in MultiNode::NAMES {
            assert_eq!(MultiNode::parse(word).map(MultiNode::as_str), Some(word));
        }
        assert_eq!(MultiNode::parse(" JobSet "), Some(MultiNode::JobSet));
        assert_eq!(MultiNode::parse("mpijob"), Some(MultiNode::MpiJob));
        assert_eq!(MultiNode::parse("slurm"), None);
        for m in MultiNode::ALL {
            assert_eq!(MultiNode::parse(m.as_str()), Some(m));
        }
        assert_eq!(MultiNode::default(), MultiNode::JobSet);
    }

    #[test]
    fn the_specs_own_kind_goes_before_the_clusters() {
        let asked = |word: Option<&str>| JobSpec { multi_node: word.map(Into::into), ..spec(2) };
        assert_eq!(MultiNode::for_spec(&asked(None), MultiNode::Volcano).unwrap(), MultiNode::Volcano);
        assert_eq!(MultiNode::for_spec(&asked(Some("PyTorchJob")), MultiNode::JobSet).unwrap(), MultiNode::PyTorchJob);
        let err = MultiNode::for_spec(&asked(Some("tfjob")), MultiNode::JobSet).unwrap_err().to_string();
        assert!(err.contains("`multi_node`: \"tfjob\" is no kind"), "{err}");
        assert!(err.ends_with("use one of jobset, pytorchjob, mpijob, volcano"), "{err}");
    }

    #[test]
    fn a_jobset_of_one_indexed_job() {
        let built = multi_node_manifest(&spec(4), &target(Some("team-a")), MultiNode::JobSet).unwrap();
        let v = &built.object;
        assert_eq!((&v["apiVersion"], &v["kind"]), (&json!("jobset.x-k8s.io/v1alpha2"), &json!("JobSet")));
        assert_eq!(v["metadata"]["name"], "pretrain-70b-abc12");
        assert_eq!(v["metadata"]["labels"][QUEUE_LABEL], "team-a");
        assert_eq!(v["metadata"]["annotations"]["flightdeck.io/name"], "Pretrain 70B");
        assert_eq!(v["spec"]["suspend"], true);
        assert_eq!(v["spec"]["network"]["enableDNSHostnames"], true);
        let rj = &v["spec"]["replicatedJobs"][0];
        assert_eq!((&rj["name"], &rj["replicas"]), (&json!("node"), &json!(1)));
        let job = &rj["template"]["spec"];
        assert_eq!((&job["parallelism"], &job["completions"]), (&json!(4), &json!(4)));
        assert_eq!((&job["completionMode"], &job["activeDeadlineSeconds"]), (&json!("Indexed"), &json!(3600)));
        let template = &job["template"];
        assert!(template["metadata"]["labels"].get(QUEUE_LABEL).is_none(), "the queue is the JobSet's");
        let pod = pod_of(template);
        assert_eq!(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "8");
        let term = &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
        assert_eq!(term["labelSelector"]["matchLabels"]["jobset.sigs.k8s.io/jobset-name"], "pretrain-70b-abc12");
        assert_eq!(term["topologyKey"], "kubernetes.io/hostname");
        assert!(
            built.warnings.iter().any(|w| w.contains("pretrain-70b-abc12-node-0-3.pretrain-70b-abc12")),
            "{:?}",
            built.warnings
        );
        // Unqueued: not suspended, no label.
        let v = multi_node_manifest(&spec(4), &target(None), MultiNode::JobSet).unwrap().object;
        assert!(v["spec"].get("suspend").is_none() && v["metadata"]["labels"].get(QUEUE_LABEL).is_none());
    }

    fn env_of(pod: &Value) -> std::collections::BTreeMap<String, Value> {
        pod["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (e["name"].as_str().unwrap().to_string(), e.get("value").cloned().unwrap_or(e["valueFrom"].clone()))
            })
            .collect()
    }

    #[test]
    fn each_jobset_pod_gets_the_rendezvous_torchrun_reads() {
        let s = JobSpec {
            env: [("MASTER_PORT".to_string(), "12345".to_string())].into(),
            tasks_per_node: Some(8),
            ..spec(2)
        };
        let v = multi_node_manifest(&s, &target(None), MultiNode::JobSet).unwrap().object;
        let pod = &v["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
        let env = env_of(pod);
        assert_eq!(env["MASTER_ADDR"], "pretrain-70b-abc12-node-0-0.pretrain-70b-abc12");
        assert_eq!(env["MASTER_PORT"], "12345", "the spec's own value stands");
        assert_eq!(env["WORLD_SIZE"], "2");
        assert_eq!(env["NODE_RANK"], json!({"fieldRef": {"fieldPath": COMPLETION_INDEX}}));
        assert_eq!((&env["PET_NNODES"], &env["PET_NODE_RANK"]), (&json!("$(WORLD_SIZE)"), &json!("$(NODE_RANK)")));
        assert_eq!(env["PET_NPROC_PER_NODE"], "8");
        // The kubelet expands `$(NAME)` only from names defined before.
        let names: Vec<&str> =
            pod["containers"][0]["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(at("NODE_RANK") < at("PET_NODE_RANK") && at("MASTER_ADDR") < at("PET_MASTER_ADDR"), "{names:?}");

        // Read back, the pod is the one-node spec's again: the spec's own env only.
        let mut pod: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(pod.clone()).unwrap();
        strip_spread(&mut pod);
        let left: Vec<String> = pod.containers[0].env.iter().flatten().map(|e| e.name.clone()).collect();
        assert_eq!(left, ["MASTER_PORT"]);
    }

    #[test]
    fn a_volcano_pod_gets_the_leader_and_the_size() {
        let v = multi_node_manifest(&spec(3), &target(None), MultiNode::Volcano).unwrap().object;
        let env = env_of(&v["spec"]["tasks"][0]["template"]["spec"]);
        assert_eq!(env["MASTER_ADDR"], "pretrain-70b-abc12-node-0.pretrain-70b-abc12");
        assert_eq!((&env["MASTER_PORT"], &env["WORLD_SIZE"]), (&json!("29500"), &json!("3")));
        assert!(!env.contains_key("NODE_RANK"), "Volcano's env plugin gives VC_TASK_INDEX after ours");
    }

    #[test]
    fn an_mpijob_of_a_launcher_and_gpu_workers() {
        let built = multi_node_manifest(&spec(2), &target(Some("team-a")), MultiNode::MpiJob).unwrap();
        let v = &built.object;
        assert_eq!((&v["apiVersion"], &v["kind"]), (&json!("kubeflow.org/v2beta1"), &json!("MPIJob")));
        assert_eq!(v["metadata"]["labels"][QUEUE_LABEL], "team-a");
        assert_eq!((&v["spec"]["runPolicy"]["suspend"], &v["spec"]["slotsPerWorker"]), (&json!(true), &json!(8)));
        let specs = &v["spec"]["mpiReplicaSpecs"];
        assert_eq!((&specs["Launcher"]["replicas"], &specs["Worker"]["replicas"]), (&json!(1), &json!(2)));
        let launcher = &specs["Launcher"]["template"]["spec"]["containers"][0];
        assert_eq!(launcher["command"][2], "torchrun --nnodes 4 train.py");
        assert!(launcher["resources"]["limits"].get("nvidia.com/gpu").is_none(), "{launcher}");
        let worker = pod_of(&specs["Worker"]["template"]);
        assert_eq!(worker["containers"][0]["command"], json!(["/usr/sbin/sshd", "-De"]));
        assert_eq!(worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "8");
        assert!(worker["affinity"]["podAntiAffinity"].is_object());
        assert!(built.warnings.iter().any(|w| w.contains("mpirun (-np 16)")), "{:?}", built.warnings);
    }

    #[test]
    fn a_pytorchjob_of_a_master_and_workers() {
        let built = multi_node_manifest(&spec(4), &target(Some("team-a")), MultiNode::PyTorchJob).unwrap();
        let v = &built.object;
        assert_eq!((&v["apiVersion"], &v["kind"]), (&json!("kubeflow.org/v1"), &json!("PyTorchJob")));
        let specs = &v["spec"]["pytorchReplicaSpecs"];
        assert_eq!((&specs["Master"]["replicas"], &specs["Worker"]["replicas"]), (&json!(1), &json!(3)));
        for role in ["Master", "Worker"] {
            let pod = pod_of(&specs[role]["template"]);
            assert_eq!(pod["containers"][0]["name"], "pytorch", "{role}");
            assert_eq!(specs[role]["restartPolicy"], "Never");
            let term = &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
            assert_eq!(term["labelSelector"]["matchLabels"]["training.kubeflow.org/job-name"], "pretrain-70b-abc12");
        }
        let run = &v["spec"]["runPolicy"];
        assert_eq!((&run["suspend"], &run["activeDeadlineSeconds"]), (&json!(true), &json!(3600)));
        assert_eq!(run["backoffLimit"], 0);
        assert!(built.warnings.iter().any(|w| w.contains("1 Master and 3 Workers")), "{:?}", built.warnings);
    }

    #[test]
    fn a_volcano_job_in_the_partitions_queue() {
        let s = JobSpec { partition: Some("research".into()), ..spec(3) };
        let built = multi_node_manifest(&s, &target(None), MultiNode::Volcano).unwrap();
        let v = &built.object;
        assert_eq!((&v["apiVersion"], &v["kind"]), (&json!("batch.volcano.sh/v1alpha1"), &json!("Job")));
        assert_eq!((&v["spec"]["minAvailable"], &v["spec"]["queue"]), (&json!(3), &json!("research")));
        assert_eq!(v["spec"]["plugins"], json!({"env": [], "svc": []}));
        let task = &v["spec"]["tasks"][0];
        assert_eq!((&task["name"], &task["replicas"]), (&json!("node"), &json!(3)));
        let pod = pod_of(&task["template"]);
        assert_eq!((&pod["schedulerName"], &pod["activeDeadlineSeconds"]), (&json!("volcano"), &json!(3600)));
        assert!(built.warnings.iter().any(|w| w.contains("VC_TASK_INDEX")), "{:?}", built.warnings);
        // A configured Kueue queue does not carry over, and says so.
        let built = multi_node_manifest(&spec(3), &target(Some("team-a")), MultiNode::Volcano).unwrap();
        assert_eq!(built.object["spec"]["queue"], "default");
        assert!(built.object["metadata"]["labels"].get(QUEUE_LABEL).is_none());
        assert!(built.warnings.iter().any(|w| w.contains("Kueue does not admit Volcano Jobs")), "{:?}", built.warnings);
    }

    #[test]
    fn long_names_leave_room_for_what_the_operators_derive() {
        let s = JobSpec { name: "a".repeat(100), ..spec(2) };
        let v = multi_node_manifest(&s, &target(None), MultiNode::JobSet).unwrap().object;
        let name = v["metadata"]["name"].as_str().unwrap();
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.ends_with("-abc12"));
        assert!(format!("{name}-node-0-9999").len() <= 63);
    }

    #[test]
    fn one_node_and_arrays_are_refused_by_name() {
        let err = multi_node_manifest(&spec(1), &target(None), MultiNode::JobSet).unwrap_err().to_string();
        assert!(err.contains("`nodes`"), "{err}");
        let s = JobSpec { array: Some("0-3".into()), ..spec(2) };
        let err = multi_node_manifest(&s, &target(None), MultiNode::PyTorchJob).unwrap_err();
        assert!(matches!(err, BackendError::InvalidSpec(_)) && err.to_string().contains("`array`"), "{err}");
        let s = JobSpec { image: None, ..spec(2) };
        let err = multi_node_manifest(&s, &target(None), MultiNode::Volcano).unwrap_err().to_string();
        assert!(err.contains("`image`"), "{err}");
    }

    #[test]
    fn the_spread_is_taken_off_on_the_way_back() {
        let v = multi_node_manifest(&spec(2), &target(None), MultiNode::JobSet).unwrap().object;
        let pod_json = v["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].clone();
        let mut pod: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(pod_json).unwrap();
        strip_spread(&mut pod);
        assert!(pod.affinity.is_none());
        // Someone else's anti-affinity stays.
        let mut pod: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(json!({
            "containers": [],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        }))
        .unwrap();
        strip_spread(&mut pod);
        assert!(pod.affinity.and_then(|a| a.pod_anti_affinity).is_some());
    }
}
