//! Kubernetes AI workloads shaped like the projects' own examples and CRD schemas (Kubeflow
//! Training Operator `PyTorchJob`, mpi-operator `MPIJob` v2beta1, Kubeflow Trainer
//! `TrainJob`, KubeRay `RayJob`/`RayCluster`, JobSet, LeaderWorkerSet, Volcano `Job`,
//! `PodGroup` and `Queue`), with their pods owned and labelled as each controller does.
//!
//! [`cluster`] is seven 8×H100 nodes and one of each situation the scenarios look at; see
//! the doc of each builder for what it holds.
//!
//! Where each shape comes from (read, not copied: names, sizes and images are ours). The
//! spec layout is each project's example; the status, labels and owner references are what
//! its controller writes, per its CRD schema and controller source:
//! * PyTorchJob, XGBoostJob, PaddleJob, JAXJob: `kubeflow/training-operator`
//!   `examples/pytorch/simple.yaml`, `examples/xgboost/xgboostjob.yaml`,
//!   `examples/paddlepaddle/simple-gpu.yaml`, `examples/jax/cpu-demo/demo.yaml`; conditions
//!   (`Created`, `Running`, `Succeeded`) and the `training.kubeflow.org/replica-type` /
//!   `job-role` pod labels from `pkg/controller.v1/common`;
//! * MPIJob v2beta1: `kubeflow/mpi-operator` `examples/v2beta1/pi/pi.yaml` (Launcher +
//!   Worker);
//! * TrainJob: `kubeflow/trainer` `examples/yaml/basic/01-multi-node.yaml`; the JobSet it
//!   owns, and that JobSet's Jobs, as the trainer's JobSet plugin builds them;
//! * JobSet: `kubernetes-sigs/jobset` `examples/simple/paralleljobs.yaml`; `spec.suspend`
//!   and the `jobset.sigs.k8s.io/replicatedjob-name` label from its API types;
//! * LeaderWorkerSet: `kubernetes-sigs/lws` `docs/examples/sample/lws.yaml`; the leader
//!   StatefulSet and per-group worker StatefulSets owned by the leader pod, as its
//!   controller builds them;
//! * RayJob, RayCluster, RayService: `ray-project/kuberay`
//!   `ray-operator/config/samples/ray-job.sample.yaml`, `ray-cluster.sample.yaml` and
//!   `ray-service.sample.yaml` (head group + worker groups, `ray.io/group` labels,
//!   `jobStatus`/`jobDeploymentStatus`, the `Ready` condition of KubeRay 1.3);
//! * Volcano Job, PodGroup, Queue: `volcano-sh/volcano` `example/job.yaml` and
//!   `example/deployment/queue.yaml`; the PodGroup's `Unschedulable` condition with reason
//!   `NotEnoughResources` and its "… minAvailable" message as volcano's scheduler writes it.

use serde_json::{Value, json};

use super::FakeApi;
use super::fixtures::{PodSpec, T_CREATED, T_RUNNING, T_STARTED, container, event, node_h100, uid};

/// `(apiVersion, kind, plural, namespaced)` of every CRD the workloads use.
pub const CRDS: [(&str, &str, &str, bool); 16] = [
    ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", true),
    ("kubeflow.org/v1", "XGBoostJob", "xgboostjobs", true),
    ("kubeflow.org/v1", "PaddleJob", "paddlejobs", true),
    ("kubeflow.org/v1", "JAXJob", "jaxjobs", true),
    ("ray.io/v1", "RayService", "rayservices", true),
    ("kubeflow.org/v2beta1", "MPIJob", "mpijobs", true),
    ("kubeflow.org/v1", "TFJob", "tfjobs", true),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs", true),
    ("ray.io/v1", "RayJob", "rayjobs", true),
    ("ray.io/v1", "RayCluster", "rayclusters", true),
    ("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", true),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkersets", true),
    ("batch.volcano.sh/v1alpha1", "Job", "jobs", true),
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", true),
    ("scheduling.volcano.sh/v1beta1", "Queue", "queues", false),
    ("bus.volcano.sh/v1alpha1", "Command", "commands", true),
];

/// Serve every workload CRD.
pub fn serve_crds(fake: &FakeApi) {
    for (av, kind, plural, namespaced) in CRDS {
        fake.add_resource(av, kind, plural, namespaced);
    }
}

/// The uid fixtures give an object of this apiVersion and kind (Volcano's `Job` apart from
/// batch Jobs of the same name).
pub fn obj_uid(api_version: &str, kind: &str, namespace: &str, name: &str) -> String {
    uid(&format!("{api_version}/{kind}"), namespace, name)
}

fn reference(api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": obj_uid(api_version, kind, namespace, name),
        "controller": true, "blockOwnerDeletion": true})
}

/// A custom resource (or batch Job) with an optional controller.
fn object(
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    owner: Option<(&str, &str, &str)>,
    spec: Value,
    status: Value,
) -> Value {
    let mut meta = json!({"name": name, "namespace": namespace, "uid": obj_uid(api_version, kind, namespace, name),
        "creationTimestamp": T_CREATED, "generation": 1, "labels": {}});
    if let Some((av, k, n)) = owner {
        meta["ownerReferences"] = json!([reference(av, k, namespace, n)]);
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec, "status": status})
}

fn template(container_name: &str, gpus: u32) -> Value {
    let res: Vec<(&str, u32)> = if gpus > 0 { vec![("nvidia.com/gpu", gpus)] } else { vec![] };
    let mut c = container(container_name, "nvcr.io/nvidia/pytorch:25.01-py3", "16", "128Gi", &res);
    c["command"] = json!(["torchrun", "--nproc-per-node=auto", "/workspace/train.py"]);
    json!({"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [c]}})
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message,
        "lastUpdateTime": T_RUNNING, "lastTransitionTime": T_RUNNING})
}

/// A pod of a workload: owned by `owner`, labelled as its controller labels it, Running on
/// `node` or Pending (unbound) without one.
#[allow(clippy::too_many_arguments)]
pub fn member(
    namespace: &str,
    name: &str,
    node: Option<&str>,
    gpus: u32,
    owner: (&str, &str, &str),
    labels: Value,
) -> Value {
    let res: Vec<(&str, u32)> = if gpus > 0 { vec![("nvidia.com/gpu", gpus)] } else { vec![] };
    let mut p = PodSpec::new(
        namespace,
        name,
        node,
        vec![container("main", "nvcr.io/nvidia/pytorch:25.01-py3", "16", "128Gi", &res)],
    );
    p.labels = labels;
    let mut pod = p.build();
    pod["metadata"]["ownerReferences"] = json!([reference(owner.0, owner.1, namespace, owner.2)]);
    pod
}

/// `ml/llama-ft`: a PyTorchJob, Master 1 + Worker 3, 8 GPUs each, all Running on
/// `wl-1`…`wl-4` (32 GPUs).
pub fn pytorchjob_running() -> Vec<Value> {
    let owner = ("kubeflow.org/v1", "PyTorchJob", "llama-ft");
    let mut out = vec![object(
        owner.0,
        owner.1,
        "ml",
        owner.2,
        None,
        json!({"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template("pytorch", 8)},
            "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": template("pytorch", 8)}},
            "runPolicy": {"cleanPodPolicy": "None", "suspend": false}}),
        json!({"conditions": [
            condition("Created", "True", "PyTorchJobCreated", "PyTorchJob llama-ft is created."),
            condition("Running", "True", "PyTorchJobRunning", "PyTorchJob ml/llama-ft is running.")],
            "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3}}, "startTime": T_STARTED}),
    )];
    let role = |r: &str, i: u32| {
        json!({"training.kubeflow.org/job-name": "llama-ft", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": r, "training.kubeflow.org/replica-index": i.to_string()})
    };
    out.push(member("ml", "llama-ft-master-0", Some("wl-1"), 8, owner, role("master", 0)));
    for i in 0..3 {
        out.push(member(
            "ml",
            &format!("llama-ft-worker-{i}"),
            Some(&format!("wl-{}", i + 2)),
            8,
            owner,
            role("worker", i),
        ));
    }
    out
}

/// `ml/sweep`: a JobSet of 2 replicated Jobs × 2 pods × 2 GPUs; three pods Running on
/// `wl-5`, `sweep-workers-1-1` Pending.
pub fn jobset_running() -> Vec<Value> {
    let js = ("jobset.x-k8s.io/v1alpha2", "JobSet", "sweep");
    let pod_template = template("main", 2);
    let mut out = vec![object(
        js.0,
        js.1,
        "ml",
        js.2,
        None,
        json!({"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 2, "completions": 2,
            "completionMode": "Indexed", "backoffLimit": 0, "template": pod_template}}}],
            "network": {"enableDNSHostnames": true}, "suspend": false}),
        json!({"replicatedJobsStatus": [{"name": "workers", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}],
            "restarts": 0, "terminalState": ""}),
    )];
    for j in 0..2 {
        let job = format!("sweep-workers-{j}");
        out.push(object(
            "batch/v1",
            "Job",
            "ml",
            &job,
            Some(js),
            json!({"parallelism": 2, "completions": 2, "completionMode": "Indexed",
            "template": template("main", 2)}),
            json!({"active": 2, "startTime": T_STARTED}),
        ));
        for i in 0..2 {
            let node = if (j, i) == (1, 1) { None } else { Some("wl-5") };
            let labels = json!({"jobset.sigs.k8s.io/jobset-name": "sweep", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                "jobset.sigs.k8s.io/job-index": j.to_string(), "batch.kubernetes.io/job-completion-index": i.to_string()});
            out.push(member("ml", &format!("{job}-{i}-x7k2p"), node, 2, ("batch/v1", "Job", &job), labels));
        }
    }
    out
}

/// `ml/big-sweep`: a JobSet whose two 8-GPU pods cannot be placed; the scheduler's
/// `FailedScheduling` event names why for `big-sweep-node-0-0-q9w8e`.
pub fn jobset_unschedulable() -> Vec<Value> {
    let js = ("jobset.x-k8s.io/v1alpha2", "JobSet", "big-sweep");
    let job = "big-sweep-node-0";
    let mut out = vec![
        object(
            js.0,
            js.1,
            "ml",
            js.2,
            None,
            json!({"replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2, "template": template("main", 8)}}}]}),
            json!({"replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}]}),
        ),
        object(
            "batch/v1",
            "Job",
            "ml",
            job,
            Some(js),
            json!({"parallelism": 2, "completions": 2, "template": template("main", 8)}),
            json!({"active": 2}),
        ),
    ];
    for i in 0..2 {
        out.push(member(
            "ml",
            &format!("{job}-{i}-q9w8e"),
            None,
            8,
            ("batch/v1", "Job", job),
            json!({"jobset.sigs.k8s.io/jobset-name": "big-sweep", "jobset.sigs.k8s.io/replicatedjob-name": "node"}),
        ));
    }
    out.push(event(
        "ml",
        "big-sweep-node-0-0-q9w8e.18a1",
        json!({"kind": "Pod", "namespace": "ml", "name": format!("{job}-0-q9w8e"), "apiVersion": "v1"}),
        "Warning",
        "FailedScheduling",
        UNSCHEDULABLE,
        "default-scheduler",
        3,
    ));
    out
}

pub const UNSCHEDULABLE: &str = "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.";

/// `ml/later`: a JobSet held by its user (`spec.suspend`), no Jobs yet.
pub fn jobset_suspended() -> Vec<Value> {
    vec![object(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        "ml",
        "later",
        None,
        json!({"suspend": true, "replicatedJobs": [{"name": "workers", "replicas": 4, "template": {"spec": {"parallelism": 1, "completions": 1, "template": template("main", 8)}}}]}),
        json!({"conditions": [condition("Suspended", "True", "SuspendedJobs", "jobset is suspended")]}),
    )]
}

/// `ml/tune`: a RayJob running on its RayCluster `tune-raycluster-k8x2q` (head without GPUs,
/// worker group `gpu-workers` of 2 × 1 GPU on `wl-6`), with its submitter Job.
pub fn rayjob_running() -> Vec<Value> {
    let rj = ("ray.io/v1", "RayJob", "tune");
    let rc_name = "tune-raycluster-k8x2q";
    let rc = ("ray.io/v1", "RayCluster", rc_name);
    let cluster_spec = json!({"rayVersion": "2.41.0",
        "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}, "template": template("ray-head", 0)},
        "workerGroupSpecs": [{"groupName": "gpu-workers", "replicas": 2, "minReplicas": 1, "maxReplicas": 4, "numOfHosts": 1,
            "rayStartParams": {}, "template": template("ray-worker", 1)}]});
    let mut out = vec![
        object(
            rj.0,
            rj.1,
            "ml",
            rj.2,
            None,
            json!({"entrypoint": "python tune.py", "shutdownAfterJobFinishes": true, "rayClusterSpec": cluster_spec.clone()}),
            json!({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "jobId": "tune-4xk2m", "rayClusterName": rc_name,
                "startTime": T_STARTED, "rayClusterStatus": {"readyWorkerReplicas": 2, "desiredWorkerReplicas": 2}}),
        ),
        object(
            rc.0,
            rc.1,
            "ml",
            rc_name,
            Some(rj),
            cluster_spec,
            json!({"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2,
                "conditions": [condition("HeadPodReady", "True", "HeadPodRunningAndReady", ""), condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime", "")]}),
        ),
        object(
            "batch/v1",
            "Job",
            "ml",
            "tune-5vxm2",
            Some(rj),
            json!({"template": template("ray-job-submitter", 0)}),
            json!({"active": 1}),
        ),
    ];
    out.push(member(
        "ml",
        &format!("{rc_name}-head-abcde"),
        Some("wl-6"),
        0,
        rc,
        json!({"ray.io/cluster": rc_name, "ray.io/group": "headgroup", "ray.io/node-type": "head"}),
    ));
    for s in ["xyz12", "xyz34"] {
        out.push(member(
            "ml",
            &format!("{rc_name}-gpu-workers-worker-{s}"),
            Some("wl-6"),
            1,
            rc,
            json!({"ray.io/cluster": rc_name, "ray.io/group": "gpu-workers", "ray.io/node-type": "worker"}),
        ));
    }
    out.push(member(
        "ml",
        "tune-5vxm2-p2d4f",
        Some("wl-6"),
        0,
        ("batch/v1", "Job", "tune-5vxm2"),
        json!({"job-name": "tune-5vxm2"}),
    ));
    out
}

/// `ml/bad-tune`: a RayJob whose entrypoint failed.
pub fn rayjob_failed() -> Vec<Value> {
    vec![object(
        "ray.io/v1",
        "RayJob",
        "ml",
        "bad-tune",
        None,
        json!({"entrypoint": "python tune.py", "rayClusterSpec": {"headGroupSpec": {"template": template("ray-head", 0)}, "workerGroupSpecs": []}}),
        json!({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "reason": "AppFailed",
            "message": "Job entrypoint command failed with exit code 1", "startTime": T_STARTED, "endTime": T_RUNNING}),
    )]
}

/// `research/dist-train`: a Volcano Job of 4 × 8 GPUs in queue `research`, its PodGroup
/// `Unschedulable` (NotEnoughResources), its 4 pods Pending.
pub fn volcano_pending() -> Vec<Value> {
    let vj = ("batch.volcano.sh/v1alpha1", "Job", "dist-train");
    let mut out = vec![object(
        vj.0,
        vj.1,
        "research",
        vj.2,
        None,
        json!({"schedulerName": "volcano", "minAvailable": 4, "queue": "research", "maxRetry": 3,
            "plugins": {"env": [], "svc": []}, "tasks": [{"name": "worker", "replicas": 4, "template": template("worker", 8)}]}),
        json!({"state": {"phase": "Pending", "lastTransitionTime": T_RUNNING}, "minAvailable": 4, "pending": 4}),
    )];
    let vj_uid = obj_uid(vj.0, vj.1, "research", vj.2);
    let mut pg = object(
        "scheduling.volcano.sh/v1beta1",
        "PodGroup",
        "research",
        &format!("dist-train-{vj_uid}"),
        Some(vj),
        json!({"minMember": 4, "queue": "research", "minResources": {"nvidia.com/gpu": "32"}}),
        json!({"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
            "message": "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable",
            "lastTransitionTime": T_RUNNING, "transitionID": "5d1e3c4a"}]}),
    );
    pg["metadata"]["ownerReferences"][0]["uid"] = json!(vj_uid);
    out.push(pg);
    for i in 0..4 {
        out.push(member("research", &format!("dist-train-worker-{i}"), None, 8, vj,
            json!({"volcano.sh/job-name": "dist-train", "volcano.sh/job-namespace": "research", "volcano.sh/task-spec": "worker",
                "volcano.sh/queue-name": "research"})));
    }
    out
}

/// Volcano Queue `research`: capability 16 GPUs, deserved 8, 8 allocated; `closed` is a
/// Closed queue with 4 GPUs.
pub fn volcano_queues() -> Vec<Value> {
    let q = |name: &str, state: &str, cap: u32, deserved: u32, allocated: u32| {
        json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name, "uid": obj_uid("scheduling.volcano.sh/v1beta1", "Queue", "", name), "creationTimestamp": T_CREATED},
            "spec": {"weight": 1, "reclaimable": true, "capability": {"cpu": "256", "nvidia.com/gpu": cap.to_string()},
                "deserved": {"nvidia.com/gpu": deserved.to_string()}},
            "status": {"state": state, "running": 1, "pending": 1, "inqueue": 0,
                "allocated": {"cpu": "16", "nvidia.com/gpu": allocated.to_string()}}})
    };
    vec![q("research", "Open", 16, 8, 8), q("closed", "Closed", 4, 4, 0)]
}

/// `inference/vllm-70b`: a LeaderWorkerSet of 2 groups × 2 pods × 1 GPU on `wl-6`; the
/// leaders belong to StatefulSet `vllm-70b`, each group's worker to StatefulSet
/// `vllm-70b-<group>` (owned by its leader pod), as the LWS controller builds them.
pub fn lws_available() -> Vec<Value> {
    let mut out = vec![object(
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        "inference",
        "vllm-70b",
        None,
        json!({"replicas": 2, "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": {"size": 2, "restartPolicy": "RecreateGroupOnPodRestart",
            "workerTemplate": template("vllm", 1)}}),
        json!({"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2,
            "conditions": [condition("Available", "True", "AllGroupsReady", "All replicas are ready")]}),
    )];
    for g in 0..2 {
        let labels = |w: u32| {
            json!({"leaderworkerset.sigs.k8s.io/name": "vllm-70b", "leaderworkerset.sigs.k8s.io/group-index": g.to_string(),
            "leaderworkerset.sigs.k8s.io/worker-index": w.to_string()})
        };
        out.push(member(
            "inference",
            &format!("vllm-70b-{g}"),
            Some("wl-6"),
            1,
            ("apps/v1", "StatefulSet", "vllm-70b"),
            labels(0),
        ));
        out.push(member(
            "inference",
            &format!("vllm-70b-{g}-1"),
            Some("wl-6"),
            1,
            ("apps/v1", "StatefulSet", &format!("vllm-70b-{g}")),
            labels(1),
        ));
    }
    out
}

/// `ml/allreduce`: an MPIJob (v2beta1) that succeeded: Launcher without GPUs, 2 workers × 4.
pub fn mpijob_succeeded() -> Vec<Value> {
    vec![object(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "ml",
        "allreduce",
        None,
        json!({"slotsPerWorker": 4, "runPolicy": {"cleanPodPolicy": "Running"}, "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": template("launcher", 0)},
            "Worker": {"replicas": 2, "template": template("worker", 4)}}}),
        json!({"conditions": [condition("Created", "True", "MPIJobCreated", "MPIJob ml/allreduce is created."),
            condition("Running", "False", "MPIJobRunning", ""),
            condition("Succeeded", "True", "MPIJobSucceeded", "MPIJob ml/allreduce successfully completed.")],
            "startTime": T_STARTED, "completionTime": T_RUNNING}),
    )]
}

/// `ml/ft-trainer`: a TrainJob of 2 nodes × 4 GPUs; its JobSet `ft-trainer` and that
/// JobSet's Job `ft-trainer-node-0` with two Pending pods (three levels of owners).
pub fn trainjob_pending() -> Vec<Value> {
    let tj = ("trainer.kubeflow.org/v1alpha1", "TrainJob", "ft-trainer");
    let js = ("jobset.x-k8s.io/v1alpha2", "JobSet", "ft-trainer");
    let mut out = vec![
        object(
            tj.0,
            tj.1,
            "ml",
            tj.2,
            None,
            json!({"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
                "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}}),
            json!({"conditions": [], "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}]}),
        ),
        object(
            js.0,
            js.1,
            "ml",
            js.2,
            Some(tj),
            json!({"replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2, "template": template("node", 4)}}}]}),
            json!({}),
        ),
        object(
            "batch/v1",
            "Job",
            "ml",
            "ft-trainer-node-0",
            Some(js),
            json!({"parallelism": 2, "completions": 2, "template": template("node", 4)}),
            json!({"active": 2}),
        ),
    ];
    for i in 0..2 {
        out.push(member(
            "ml",
            &format!("ft-trainer-node-0-{i}-m3n4b"),
            None,
            4,
            ("batch/v1", "Job", "ft-trainer-node-0"),
            json!({"jobset.sigs.k8s.io/jobset-name": "ft-trainer", "jobset.sigs.k8s.io/replicatedjob-name": "node"}),
        ));
    }
    out
}

/// `ml/aw-1`: a GPU pod owned by a kind flightdeck does not know (a CodeFlare AppWrapper).
pub fn unknown_owner() -> Vec<Value> {
    vec![member(
        "ml",
        "aw-1-pod-0",
        Some("wl-5"),
        2,
        ("workload.codeflare.dev/v1beta2", "AppWrapper", "aw-1"),
        json!({}),
    )]
}

/// `ml/llm`: the PyTorchJob, a Master of 4 GPUs on `wl-1` and a Worker of 2 on
/// `wl-2` (6 GPUs), both Running.
pub fn pytorchjob_llm() -> Vec<Value> {
    let owner = ("kubeflow.org/v1", "PyTorchJob", "llm");
    let labels = |r: &str| {
        json!({"training.kubeflow.org/job-name": "llm", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": r, "training.kubeflow.org/replica-index": "0"})
    };
    vec![
        object(
            owner.0,
            owner.1,
            "ml",
            owner.2,
            None,
            json!({"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template("pytorch", 4)},
                "Worker": {"replicas": 1, "restartPolicy": "OnFailure", "template": template("pytorch", 2)}}}),
            json!({"conditions": [
                condition("Created", "True", "PyTorchJobCreated", "PyTorchJob llm is created."),
                condition("Running", "True", "PyTorchJobRunning", "PyTorchJob ml/llm is running.")],
                "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 1}}, "startTime": T_STARTED}),
        ),
        member("ml", "llm-master-0", Some("wl-1"), 4, owner, labels("master")),
        member("ml", "llm-worker-0", Some("wl-2"), 2, owner, labels("worker")),
    ]
}

/// On `wl-7`, one GPU each: an XGBoostJob `ml/xgb` (Master 1, Running), a PaddleJob
/// `ml/paddle` (Worker 1, Succeeded), a JAXJob `ml/jax` (Worker 1, Created, its pod Pending
/// without a node) and a RayService `inference/serve` whose RayCluster `serve-raycluster-x9k`
/// runs a head (no GPU) and one GPU worker (KubeRay 1.3: the `Ready` condition).
pub fn kubeflow_family_and_rayservice() -> Vec<Value> {
    let mut out = vec![node_h100("wl-7")];
    let kubeflow = |kind: &str, key: &str, name: &str, role: &str, condition_type: &str, node: Option<&str>| {
        let owner = ("kubeflow.org/v1", kind, name);
        let status = json!({"conditions": [
            condition("Created", "True", &format!("{kind}Created"), &format!("{kind} {name} is created.")),
            condition(condition_type, "True", &format!("{kind}{condition_type}"), &format!("{kind} ml/{name} is {condition_type}."))],
            "replicaStatuses": {role: {"active": u32::from(node.is_some())}}, "startTime": T_STARTED});
        let spec = json!({key: {role: {"replicas": 1, "restartPolicy": "OnFailure", "template": template("main", 1)}}});
        let labels = json!({"training.kubeflow.org/job-name": name, "training.kubeflow.org/replica-type": role.to_lowercase(),
            "training.kubeflow.org/replica-index": "0"});
        let mut pod = member("ml", &format!("{name}-{}-0", role.to_lowercase()), node, 1, owner, labels);
        if condition_type == "Succeeded" {
            pod["status"]["phase"] = json!("Succeeded");
        }
        vec![object(owner.0, owner.1, "ml", owner.2, None, spec, status), pod]
    };
    out.extend(kubeflow("XGBoostJob", "xgbReplicaSpecs", "xgb", "Master", "Running", Some("wl-7")));
    out.extend(kubeflow("PaddleJob", "paddleReplicaSpecs", "paddle", "Worker", "Succeeded", Some("wl-7")));
    out.extend(kubeflow("JAXJob", "jaxReplicaSpecs", "jax", "Worker", "Created", None));
    let cluster_spec = json!({"headGroupSpec": {"rayStartParams": {}, "template": template("ray-head", 0)},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 4,
            "rayStartParams": {}, "template": template("ray-worker", 1)}]});
    let service = ("ray.io/v1", "RayService", "serve");
    out.push(object(
        service.0,
        service.1,
        "inference",
        service.2,
        None,
        json!({"serveConfigV2": "applications: []", "rayClusterConfig": cluster_spec}),
        json!({"conditions": [condition("Ready", "True", "RunningServeDeployments", "Serve applications are running")],
            "activeServiceStatus": {"rayClusterName": "serve-raycluster-x9k"}}),
    ));
    let rc = ("ray.io/v1", "RayCluster", "serve-raycluster-x9k");
    out.push(object(rc.0, rc.1, "inference", rc.2, Some(service), cluster_spec, json!({"state": "ready"})));
    let ray = |t: &str| json!({"ray.io/cluster": "serve-raycluster-x9k", "ray.io/node-type": t});
    out.push(member("inference", "serve-raycluster-x9k-head-7q2m4", Some("wl-7"), 0, rc, ray("head")));
    out.push(member("inference", "serve-raycluster-x9k-gpu-worker-p8z3c", Some("wl-7"), 1, rc, ray("worker")));
    out
}

/// The two kinds of the table `cluster()` has no top-level object of: `ml/mnist`, a TFJob
/// of one Worker (shaped after the training-operator's `tf_job_mnist.yaml` example), and
/// `ml/notebook`, a RayCluster of its own (KubeRay's `ray-cluster.sample.yaml`: a head and a
/// GPU worker group, with a second worker group of CPU pods beside it, as the issue asks),
/// all on `wl-7`.
pub fn tfjob_and_raycluster() -> Vec<Value> {
    let tf = ("kubeflow.org/v1", "TFJob", "mnist");
    let tf_status = json!({"conditions": [
        condition("Created", "True", "TFJobCreated", "TFJob mnist is created."),
        condition("Running", "True", "TFJobRunning", "TFJob ml/mnist is running.")],
        "replicaStatuses": {"Worker": {"active": 1}}, "startTime": T_STARTED});
    let tf_spec = json!({"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
        "template": template("tensorflow", 1)}}});
    let tf_labels = json!({"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0"});
    let rc = ("ray.io/v1", "RayCluster", "notebook");
    let rc_spec = json!({"headGroupSpec": {"rayStartParams": {}, "template": template("ray-head", 0)},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 2,
            "rayStartParams": {}, "template": template("ray-worker", 1)},
            {"groupName": "cpu", "replicas": 1, "minReplicas": 0, "maxReplicas": 4,
            "rayStartParams": {}, "template": template("ray-worker", 0)}]});
    let ray = |t: &str| json!({"ray.io/cluster": "notebook", "ray.io/node-type": t, "ray.io/group": t});
    vec![
        object(tf.0, tf.1, "ml", tf.2, None, tf_spec, tf_status),
        member("ml", "mnist-worker-0", Some("wl-7"), 1, tf, tf_labels),
        object(rc.0, rc.1, "ml", rc.2, None, rc_spec, json!({"state": "ready"})),
        member("ml", "notebook-head-4xk2p", Some("wl-7"), 0, rc, ray("headgroup")),
        member("ml", "notebook-gpu-worker-8fz7q", Some("wl-7"), 1, rc, ray("gpu")),
        member("ml", "notebook-cpu-worker-2m9xq", Some("wl-7"), 0, rc, ray("cpu")),
    ]
}

/// Seven 8×H100 nodes `wl-1`…`wl-7` and every workload above.
pub fn cluster() -> Vec<Value> {
    let mut out: Vec<Value> = (1..=6).map(|i| node_h100(&format!("wl-{i}"))).collect();
    out.extend(kubeflow_family_and_rayservice());
    for part in [
        pytorchjob_running(),
        jobset_running(),
        jobset_unschedulable(),
        jobset_suspended(),
        rayjob_running(),
        rayjob_failed(),
        volcano_pending(),
        volcano_queues(),
        lws_available(),
        mpijob_succeeded(),
        trainjob_pending(),
        unknown_owner(),
    ] {
        out.extend(part);
    }
    out
}
