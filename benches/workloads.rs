//! Kubernetes AI workloads at scale: 10,000 GPU pods under 500 workloads (150 PyTorchJobs,
//! 100 JobSets through their 200 Jobs, 100 RayJobs through their RayClusters, 150 Volcano
//! Jobs), 20 pods each, on 1,250 8-GPU nodes.
//!
//! * `regroup`: every pod under its top owner (`workloads::owners::group`) and the 500
//!   workloads mapped to jobs: what the adapter does for each snapshot it hands the fleet;
//! * `one_workload`: one workload's status read and its 20 pods mapped to its job: what a
//!   pod event costs when only its workload is mapped again.
//!
//! Goals (issue #26): a whole regroup under 20 ms, one workload under 1 ms. Under
//! `cargo test --all-targets` (no `--bench`) the binary only checks, on 10 workloads, that
//! every pod lands under its top owner.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use flightdeck::backend::kube::map::Lookup;
use flightdeck::backend::kube::workloads::cache::JobCache;
use flightdeck::backend::kube::workloads::job::{Beside, workload_job, workload_jobs};
use flightdeck::backend::kube::workloads::{WorkloadKind, owners, status};
use flightdeck::model::Job;
use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::Pod;
use kube::core::DynamicObject;
use serde_json::{Value, json};

/// As the binary (`src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PODS_PER_WORKLOAD: usize = 20;

/// Every node an H100 node.
struct Nodes(BTreeMap<String, String>);

impl Lookup for Nodes {
    fn failed_scheduling(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
    fn node_labels(&self, _: &str) -> Option<&BTreeMap<String, String>> {
        Some(&self.0)
    }
    fn cluster_queue_of(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
}

fn uid(kind: &str, ns: &str, name: &str) -> String {
    format!("{kind}-{ns}-{name}")
}

fn owner_ref(api_version: &str, kind: &str, ns: &str, name: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid(kind, ns, name), "controller": true}])
}

fn object(
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
    owner: Option<Value>,
    spec: Value,
    status: Value,
) -> Value {
    let mut meta = json!({"name": name, "namespace": ns, "uid": uid(kind, ns, name), "resourceVersion": "1",
        "creationTimestamp": "2026-05-01T09:00:00Z", "labels": {}});
    if let Some(o) = owner {
        meta["ownerReferences"] = o;
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec, "status": status})
}

fn pod(ns: &str, name: &str, node: usize, owner: Value, role: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "uid": uid("Pod", ns, name), "ownerReferences": owner, "resourceVersion": "1",
            "creationTimestamp": "2026-05-01T09:01:00Z",
            "labels": {"training.kubeflow.org/replica-type": role, "app": "train"}},
        "spec": {"nodeName": format!("gpu-{node:04}"), "containers": [{"name": "main", "image": "pytorch:25.01",
            "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "16", "memory": "128Gi"}}}]},
        "status": {"phase": "Running", "startTime": "2026-05-01T09:02:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "pytorch:25.01",
                "imageID": "", "state": {"running": {"startedAt": "2026-05-01T09:02:00Z"}}}]}
    }))
    .expect("pod")
}

fn dynamic(v: Value) -> Arc<DynamicObject> {
    Arc::new(serde_json::from_value(v).expect("object"))
}

struct Cluster {
    pods: Vec<Arc<Pod>>,
    jobs: Vec<Arc<KJob>>,
    workloads: Vec<(WorkloadKind, Arc<DynamicObject>)>,
}

/// `n` workloads of 20 pods each, the four families in turn.
fn cluster(n: usize) -> Cluster {
    let mut c = Cluster { pods: Vec::new(), jobs: Vec::new(), workloads: Vec::new() };
    let mut node = 0usize;
    let mut next_node = || {
        node += 1;
        node
    };
    let running = json!({"conditions": [{"type": "Running", "status": "True", "reason": "Running"}]});
    for w in 0..n {
        let ns = format!("team-{}", w % 9);
        let name = format!("train-{w:04}");
        match w % 10 {
            0..=2 => {
                let spec = json!({"pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
                    "Worker": {"replicas": PODS_PER_WORKLOAD - 1, "template": {"spec": {"containers": [{"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}});
                c.workloads.push((
                    WorkloadKind::PyTorchJob,
                    dynamic(object("kubeflow.org/v1", "PyTorchJob", &ns, &name, None, spec, running.clone())),
                ));
                let owner = owner_ref("kubeflow.org/v1", "PyTorchJob", &ns, &name);
                for p in 0..PODS_PER_WORKLOAD {
                    let role = if p == 0 { "master" } else { "worker" };
                    c.pods.push(Arc::new(pod(&ns, &format!("{name}-{role}-{p}"), next_node(), owner.clone(), role)));
                }
            }
            3 | 4 => {
                let spec = json!({"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
                    "parallelism": PODS_PER_WORKLOAD / 2, "completions": PODS_PER_WORKLOAD / 2,
                    "template": {"spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]});
                c.workloads.push((
                    WorkloadKind::JobSet,
                    dynamic(object("jobset.x-k8s.io/v1alpha2", "JobSet", &ns, &name, None, spec, json!({}))),
                ));
                for j in 0..2 {
                    let job_name = format!("{name}-workers-{j}");
                    let owner = owner_ref("jobset.x-k8s.io/v1alpha2", "JobSet", &ns, &name);
                    let job = object(
                        "batch/v1",
                        "Job",
                        &ns,
                        &job_name,
                        Some(owner),
                        json!({"template": {}}),
                        json!({"active": 10}),
                    );
                    c.jobs.push(Arc::new(serde_json::from_value(job).expect("job")));
                    let owner = owner_ref("batch/v1", "Job", &ns, &job_name);
                    for p in 0..PODS_PER_WORKLOAD / 2 {
                        c.pods.push(Arc::new(pod(
                            &ns,
                            &format!("{job_name}-{p}"),
                            next_node(),
                            owner.clone(),
                            "worker",
                        )));
                    }
                }
            }
            5 | 6 => {
                c.workloads.push((
                    WorkloadKind::RayJob,
                    dynamic(object(
                        "ray.io/v1",
                        "RayJob",
                        &ns,
                        &name,
                        None,
                        json!({"entrypoint": "python tune.py"}),
                        json!({"jobStatus": "RUNNING", "jobDeploymentStatus": "Running"}),
                    )),
                ));
                let cluster_name = format!("{name}-raycluster");
                let owner = owner_ref("ray.io/v1", "RayJob", &ns, &name);
                let spec = json!({"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}},
                    "workerGroupSpecs": [{"groupName": "gpu", "replicas": PODS_PER_WORKLOAD - 1,
                        "template": {"spec": {"containers": [{"name": "ray-worker", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]});
                c.workloads.push((
                    WorkloadKind::RayCluster,
                    dynamic(object(
                        "ray.io/v1",
                        "RayCluster",
                        &ns,
                        &cluster_name,
                        Some(owner),
                        spec,
                        json!({"state": "ready"}),
                    )),
                ));
                let owner = owner_ref("ray.io/v1", "RayCluster", &ns, &cluster_name);
                for p in 0..PODS_PER_WORKLOAD {
                    let role = if p == 0 { "head" } else { "worker" };
                    c.pods.push(Arc::new(pod(
                        &ns,
                        &format!("{cluster_name}-{role}-{p}"),
                        next_node(),
                        owner.clone(),
                        role,
                    )));
                }
            }
            _ => {
                let spec = json!({"minAvailable": PODS_PER_WORKLOAD, "queue": "research", "tasks": [{"name": "worker",
                    "replicas": PODS_PER_WORKLOAD, "template": {"spec": {"containers": [{"name": "worker", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]});
                c.workloads.push((
                    WorkloadKind::VolcanoJob,
                    dynamic(object(
                        "batch.volcano.sh/v1alpha1",
                        "Job",
                        &ns,
                        &name,
                        None,
                        spec,
                        json!({"state": {"phase": "Running"}, "running": PODS_PER_WORKLOAD}),
                    )),
                ));
                let owner = owner_ref("batch.volcano.sh/v1alpha1", "Job", &ns, &name);
                for p in 0..PODS_PER_WORKLOAD {
                    c.pods.push(Arc::new(pod(
                        &ns,
                        &format!("{name}-worker-{p}"),
                        next_node(),
                        owner.clone(),
                        "worker",
                    )));
                }
            }
        }
    }
    c
}

/// Every pod under its top owner, then every top-level workload as a job, through the
/// adapter's cache (`JobCache`: a fresh one maps every workload).
fn regroup(c: &Cluster, lookup: &Nodes, cache: &JobCache) -> Vec<Job> {
    let grouped = owners::group(&c.pods, &c.jobs, &c.workloads);
    let mut out = Vec::with_capacity(c.workloads.len());
    let mut round = cache.round();
    workload_jobs("k8s", &c.workloads, &grouped, |_, _| Beside::default(), lookup, 0, &mut round, &mut out);
    out
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    // Ten of each family's turn; 500 (10,000 pods) when measuring.
    let workloads = if bench { 500 } else { 10 };
    let lookup = Nodes([("nvidia.com/gpu.product".to_string(), "NVIDIA-H100-80GB-HBM3".to_string())].into());
    let mut c = cluster(workloads);
    let jobs = regroup(&c, &lookup, &JobCache::default());
    assert_eq!(jobs.len(), workloads, "one job per top owner (the RayClusters inside their RayJobs)");
    assert!(
        jobs.iter().all(|j| j.workload.as_ref().is_some_and(|w| w.pods.len() == PODS_PER_WORKLOAD)),
        "every pod under its top owner"
    );
    let gpus: u32 = jobs.iter().map(|j| j.gpus_allocated).sum();
    assert_eq!(gpus as usize, c.pods.len() * 8, "every GPU counted once");
    let cache = JobCache::default();
    regroup(&c, &lookup, &cache);
    assert_eq!(regroup(&c, &lookup, &cache), jobs, "jobs kept from the last round are the jobs built");
    if !bench {
        println!("workloads bench: inputs check out (run `cargo bench --bench workloads` to measure)");
        return;
    }
    println!(
        "workloads: {} pods under {} workloads ({} batch Jobs, {} objects)",
        c.pods.len(),
        jobs.len(),
        c.jobs.len(),
        c.workloads.len()
    );
    let mut crit = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    crit.bench_function("workloads_10k_pods/regroup_cold", |b| {
        b.iter(|| regroup(black_box(&c), &lookup, &JobCache::default()))
    });
    crit.bench_function("workloads_10k_pods/group_only", |b| {
        b.iter(|| owners::group(black_box(&c.pods), &c.jobs, &c.workloads).bare.len())
    });
    {
        // One PyTorchJob with its 20 pods, mapped again as a pod event of its own needs.
        let grouped = owners::group(&c.pods, &c.jobs, &c.workloads);
        let (kind, obj) = &c.workloads[0];
        let members: Vec<&Pod> = grouped.workloads[0].clone();
        crit.bench_function("workloads_10k_pods/one_workload", |b| {
            b.iter(|| {
                let status = status::read(*kind, black_box(obj));
                workload_job("k8s", *kind, obj, &status, black_box(&members), Beside::default(), &lookup)
            })
        });
    }
    // A pod event: one pod of one workload at a new resourceVersion, the rest kept.
    let cache = JobCache::default();
    regroup(&c, &lookup, &cache);
    let at = c.pods.len() / 2;
    let mut versions = [(*c.pods[at]).clone(), (*c.pods[at]).clone()];
    versions[1].metadata.resource_version = Some("2".into());
    let mut flip = 0;
    crit.bench_function("workloads_10k_pods/regroup_after_one_pod_event", |b| {
        b.iter(|| {
            flip ^= 1;
            c.pods[at] = Arc::new(versions[flip].clone());
            regroup(black_box(&c), &lookup, &cache)
        })
    });
    crit.final_summary();
}
