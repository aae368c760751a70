//! A multi-node spec (`nodes > 1`) as one gang-scheduled workload: a JobSet (the default), a
//! Kubeflow PyTorchJob or a Volcano Job, as the cluster's `multi_node` setting says.
//!
//! Every kind starts from the single-node Job [`manifest::job_manifest`] builds, so a pod of
//! the workload is exactly the pod a one-node spec runs (image, command, GPUs, memory,
//! placement, annotations); what changes is the object around it:
//!
//! * a **JobSet** of one replicated Job `node`, an Indexed Job of N pods (rank in
//!   `JOB_COMPLETION_INDEX`), with DNS hostnames on, no restarts, Kueue's label and
//!   `suspend` when queued (JobSet is the kind Kueue admits as a whole);
//! * a **PyTorchJob** of one `Master` and N−1 `Worker`s, the container named `pytorch` (the
//!   operator injects `MASTER_ADDR`, `RANK` and `WORLD_SIZE` into that one);
//! * a **Volcano Job** of one task `node` with `minAvailable: N` (Volcano's gang), the
//!   `env` and `svc` plugins (rank in `VC_TASK_INDEX`, hostnames), in the spec's
//!   `partition` as its Volcano queue.
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
    /// `batch.volcano.sh` Job: Volcano's gang scheduler and queues.
    Volcano,
}

impl MultiNode {
    /// The words the config accepts, in the order the message lists them.
    pub const NAMES: [&'static str; 3] = ["jobset", "pytorchjob", "volcano"];

    pub fn parse(word: &str) -> Option<MultiNode> {
        match word.trim().to_ascii_lowercase().as_str() {
            "jobset" => Some(MultiNode::JobSet),
            "pytorchjob" => Some(MultiNode::PyTorchJob),
            "volcano" | "vcjob" => Some(MultiNode::Volcano),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MultiNode::JobSet => "jobset",
            MultiNode::PyTorchJob => "pytorchjob",
            MultiNode::Volcano => "volcano",
        }
    }

    pub fn kind(self) -> WorkloadKind {
        match self {
            MultiNode::JobSet => WorkloadKind::JobSet,
            MultiNode::PyTorchJob => WorkloadKind::PyTorchJob,
            MultiNode::Volcano => WorkloadKind::VolcanoJob,
        }
    }

    /// The label each controller puts on every pod of one workload, naming it.
    fn pod_label(self) -> &'static str {
        match self {
            MultiNode::JobSet => "jobset.sigs.k8s.io/jobset-name",
            MultiNode::PyTorchJob => "training.kubeflow.org/job-name",
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
                "`nodes`: the JobSet's name gets a random suffix; its {nodes} pods answer at {name}-node-0-0.{name} … {name}-node-0-{}.{name}, each reads its rank from JOB_COMPLETION_INDEX",
                nodes - 1
            ));
            (format!("{}/{}", super::kinds::JOBSET, WorkloadKind::JobSet.def().versions[0]), "JobSet", body)
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
            let body = json!({
                "pytorchReplicaSpecs": {"Master": group(1), "Worker": group(nodes - 1)},
                "runPolicy": run_policy,
            });
            warnings.push(format!(
                "`nodes`: the PyTorchJob runs 1 Master and {} Worker{}; the operator sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE in each",
                nodes - 1,
                if nodes == 2 { "" } else { "s" }
            ));
            (format!("{}/v1", super::kinds::KUBEFLOW), "PyTorchJob", body)
        }
        MultiNode::Volcano => {
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
                "`nodes`: the Volcano Job starts its {nodes} pods together or not at all; they answer at {name}-node-0.{name} … {name}-node-{}.{name}, each reads its rank from VC_TASK_INDEX",
                nodes - 1
            ));
            (format!("{}/v1alpha1", super::kinds::VOLCANO_BATCH), "Job", body)
        }
    };
    let object = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": body});
    Ok(WorkloadManifest { object, kind: how.kind(), warnings })
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
/// empty), so that reading a workload back as a spec sees the pod a one-node spec runs.
pub fn strip_spread(pod_spec: &mut k8s_openapi::api::core::v1::PodSpec) {
    let Some(affinity) = pod_spec.affinity.as_mut() else { return };
    let ours = affinity.pod_anti_affinity.as_ref().is_some_and(|anti| {
        anti.preferred_during_scheduling_ignored_during_execution.as_ref().is_none_or(Vec::is_empty)
            && matches!(anti.required_during_scheduling_ignored_during_execution.as_deref(), Some([term])
            if term.topology_key == "kubernetes.io/hostname"
                && term.label_selector.as_ref().and_then(|s| s.match_labels.as_ref()).is_some_and(|labels| {
                    labels.len() == 1
                        && labels.keys().all(|k| {
                            [MultiNode::JobSet, MultiNode::PyTorchJob, MultiNode::Volcano]
                                .iter()
                                .any(|m| m.pod_label() == k)
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
        assert_eq!(MultiNode::parse("mpijob"), None);
        assert_eq!(MultiNode::default(), MultiNode::JobSet);
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
