//! The Kubernetes adapter against the wire-protocol fake (`tests/kube_fake`): the real kube
//! client, watcher and reflector, talking HTTP to an in-process API server.
//!
//! Scenarios: GPU allocation equals the hand-computed values of the standard cluster and
//! follows pod events; a cordon shows after one watch event; drain evicts what it should and
//! names what stayed (disruption budget, emptyDir, unmanaged); submit creates the Job the
//! spec describes; dropped and expired (410) watches recover by themselves; the API server
//! going away makes the cluster stale in a real `Fleet` and it recovers; absent Kueue CRDs
//! or missing RBAC reduce the view with a note; logs tail and follow; actions are bounded;
//! a live Job (or bare pod) reads back as its spec, and a migrated one says where it came from.

use crate::kube_fake;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightdeck::backend::kube::KubeConfig;
use flightdeck::backend::kube::{KubeBackend, drain::DrainOptions, gpu, map};
use flightdeck::backend::{Backend, BackendError, JobAction, NodeAction};
use flightdeck::config::ClusterConfig;
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::{Health, JobState, NodeState, Snapshot};
use flightdeck::spec::JobSpec;
use k8s_openapi::api::core::v1::Pod;
use kube_fake::{FakeApi, fixtures};
use serde_json::{Value, json};

struct Setup {
    fake: FakeApi,
    cfg: ClusterConfig<KubeConfig>,
    _dir: tempfile::TempDir,
}

fn setup(objects: Vec<Value>) -> Setup {
    let fake = FakeApi::start_blocking();
    fake.put_all(objects);
    let dir = tempfile::tempdir().unwrap();
    let cfg = ClusterConfig::new("k8s", KubeConfig::context_of(fake.kubeconfig(dir.path(), "fake"), "fake"))
        .with_timeout(Duration::from_secs(5))
        .with_refresh(Duration::from_millis(200));
    Setup { fake, cfg, _dir: dir }
}

fn standard() -> Setup {
    setup(fixtures::standard_cluster())
}

/// Poll `f` every 20 ms until it gives a value, or fail after `secs`.
async fn until<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every watch that is not switched off has listed once.
async fn all_watches_synced(b: &KubeBackend) {
    b.start().await.unwrap();
    until("every watch to sync", 10, async || {
        let h = b.watches();
        (!h.is_empty() && h.values().all(|w| w.synced || w.disabled)).then_some(())
    })
    .await;
}

async fn snapshot(b: &KubeBackend) -> Snapshot {
    b.snapshot().await.unwrap_or_else(|e| panic!("snapshot failed: {e}"))
}

fn node<'a>(s: &'a Snapshot, name: &str) -> &'a flightdeck::model::Node {
    s.nodes.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
}

fn job<'a>(s: &'a Snapshot, id: &str) -> &'a flightdeck::model::Job {
    s.jobs.iter().find(|j| j.job_ref.id == id).unwrap_or_else(|| {
        let ids: Vec<&str> = s.jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
        panic!("no job {id} in {ids:?}")
    })
}

fn labels_of(fake: &FakeApi, node: &str) -> BTreeMap<String, String> {
    let n = fake.get("v1", "Node", None, node).unwrap();
    serde_json::from_value(n["metadata"]["labels"].clone()).unwrap()
}

fn fake_pods(fake: &FakeApi) -> Vec<Pod> {
    fake.list("v1", "Pod").into_iter().map(|p| serde_json::from_value(p).unwrap()).collect()
}

#[tokio::test]
async fn standard_cluster_gpu_allocation_matches_the_hand_computed_values() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    let snap = snapshot(&b).await;
    assert_eq!(snap.nodes.len(), 7);
    for row in fixtures::STANDARD_GPU_ALLOCATION {
        let n = node(&snap, row.node);
        let kind = map::gpu_kind(row.resource, Some(&labels_of(&s.fake, row.node)));
        let model = &kind.model;
        let slot = n.gpus.iter().find(|g| &g.model == model && g.shared == kind.shared);
        if row.capacity == 0 && row.allocated == 0 {
            assert!(slot.is_none(), "{}: an empty {} has no slot", row.node, row.resource);
            continue;
        }
        let slot = slot.unwrap_or_else(|| panic!("{}: no slot {model} in {:?}", row.node, n.gpus));
        assert_eq!(
            (slot.total, slot.allocated, slot.unhealthy),
            (row.capacity, row.allocated, row.capacity - row.allocatable),
            "{} {}",
            row.node,
            row.resource
        );
    }
    // The incremental tallies equal a full recount of the same pods.
    let recount = gpu::recount(&fake_pods(&s.fake));
    assert_eq!(b.node_tallies(), recount);
    let total: u32 = snap.nodes.iter().map(|n| n.gpus_allocated()).sum();
    assert_eq!(total, 24 + 2 + 1 + 2, "24 nvidia.com/gpu + 3 MIG slices + 2 amd.com/gpu");

    // Node triage.
    let degraded = node(&snap, fixtures::NODE_H100_B);
    assert_eq!(degraded.gpus_unhealthy(), 1);
    assert_eq!(degraded.state, NodeState::Allocated, "7 of the 7 usable GPUs are held");
    let cordoned = node(&snap, fixtures::NODE_CORDONED);
    assert_eq!(cordoned.flags, vec!["MEMORY_PRESSURE", "CORDONED"], "the controller's taints add nothing");
    assert!(cordoned.is_unavailable());
    let down = node(&snap, fixtures::NODE_NOT_READY);
    assert_eq!(down.state, NodeState::Down);
    assert!(down.has_flag("NOT_READY"), "{:?}", down.flags);
    assert_eq!(node(&snap, fixtures::NODE_A100_MIG).gpu_model().as_deref(), Some("1g.10gb,3g.40gb"));
    assert_eq!(node(&snap, fixtures::NODE_MI300).gpus[0].total, 8);
    // Canonical models, with the label each came from kept as the product.
    let names = |n: &str| -> Vec<(String, Option<String>, bool)> {
        node(&snap, n).gpus.iter().map(|g| (g.model.clone(), g.gpu_product.clone(), g.shared)).collect()
    };
    let named = |m: &str, p: &str, shared: bool| (m.to_string(), Some(p.to_string()), shared);
    assert_eq!(names(fixtures::NODE_H100_A), vec![named("h100", "NVIDIA-H100-80GB-HBM3", false)]);
    assert_eq!(names(fixtures::NODE_T4), vec![named("t4", "Tesla-T4-SHARED", true)]);
    assert_eq!(names(fixtures::NODE_MI300), vec![named("mi300x", "AMD_Instinct_MI300X_OAM", false)]);
    assert_eq!(
        names(fixtures::NODE_A100_MIG),
        vec![
            named("1g.10gb", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", false),
            named("3g.40gb", "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", false)
        ]
    );
    assert_eq!(node(&snap, fixtures::NODE_H100_A).partitions, Vec::<String>::new());
    assert!(snap.release.is_some(), "the server version is the release");
    assert_eq!(snap.notes, vec![flightdeck::backend::kube::workloads::ABSENT_NOTE.to_string()]);
}

/// Every GPU product label in the Kubernetes fixtures (GFD's `nvidia.com/gpu.product`, the MIG
/// profiles' `nvidia.com/mig-*.product`, AMD's `amd.com/gpu.product-name`, Kueue
/// ResourceFlavors' node labels) maps to the canonical model below; a fixture with a new
/// name fails here until it is added.
#[test]
fn every_gpu_label_in_the_fixtures_has_a_canonical_model() {
    use flightdeck::model::gpu_names::canonical;
    let expected: BTreeMap<&str, (&str, bool)> = [
        ("NVIDIA-H100-80GB-HBM3", ("h100", false)),
        ("NVIDIA-H200", ("h200", false)),
        ("NVIDIA-A100-SXM4-80GB", ("a100-80gb", false)),
        ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", ("1g.10gb", false)),
        ("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", ("3g.40gb", false)),
        ("Tesla-T4-SHARED", ("t4", true)),
        ("AMD_Instinct_MI300X_OAM", ("mi300x", false)),
    ]
    .into();
    let mut objects = fixtures::standard_cluster();
    objects.push(fixtures::node_h200("gpu-h200"));
    let mut found: BTreeSet<String> = BTreeSet::new();
    let is_product = |k: &str| k.ends_with("gpu.product") || k.ends_with("gpu.product-name") || k.ends_with(".product");
    for o in &objects {
        for labels in
            [&o["metadata"]["labels"], &o["spec"]["nodeLabels"], &o["spec"]["template"]["spec"]["nodeSelector"]]
        {
            for (k, v) in labels.as_object().into_iter().flatten() {
                if is_product(k) {
                    found.insert(v.as_str().unwrap().to_string());
                }
            }
        }
    }
    let names: BTreeSet<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(names, expected.keys().copied().collect::<BTreeSet<_>>(), "labels in the fixtures");
    for name in names {
        let got = canonical(name);
        assert_eq!((got.model.as_str(), got.shared), expected[name], "{name}");
    }
}

/// An H200 node labelled by GFD `NVIDIA-H200` and a pod on it: the node's slot and the
/// pod's job say `h200` and keep `NVIDIA-H200` as the product, so they add up with a Slurm
/// site's `gpu:h200`.
#[tokio::test]
async fn an_h200_node_and_its_pod_use_the_canonical_model_and_keep_the_product() {
    let mut objects = fixtures::standard_cluster();
    objects.push(fixtures::node_h200("gpu-h200"));
    objects.push(fixtures::gpu_pod("research", "on-h200", Some("gpu-h200"), "nvidia.com/gpu", 2));
    let s = setup(objects);
    let b = KubeBackend::new(&s.cfg);
    let snap = snapshot(&b).await;
    let n = node(&snap, "gpu-h200");
    assert_eq!(n.gpus.len(), 1);
    let g = &n.gpus[0];
    assert_eq!((g.model.as_str(), g.gpu_product.as_deref(), g.shared), ("h200", Some("NVIDIA-H200"), false));
    assert_eq!((g.total, g.allocated), (8, 2));
    assert_eq!(n.gpu_model().as_deref(), Some("h200"));
    let j = job(&snap, "research:pod:on-h200");
    assert_eq!((j.gpu_model.as_deref(), j.gpu_product.as_deref()), (Some("h200"), Some("NVIDIA-H200")));
    assert_eq!(j.gpu_allocations[0].model.as_deref(), Some("h200"));
}

/// A job asking for `a100-80gb` (the model the front ends show) is placed on the nodes
/// whose product label is `NVIDIA-A100-SXM4-80GB`.
#[tokio::test]
async fn submit_by_canonical_model_finds_the_product_label() {
    let mut s = standard();
    s.cfg.settings.namespaces = vec!["train".into()];
    let b = KubeBackend::new(&s.cfg);
    let spec = JobSpec { gpu_type: Some("a100-80gb".into()), ..train_spec() };
    let job_ref = b.submit(&spec).await.unwrap();
    let (ns, name) = job_ref.id.split_once(':').unwrap();
    let created = s.fake.get("batch/v1", "Job", Some(ns), name).expect("the Job exists");
    let pod = &created["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["nvidia.com/gpu.product"], json!("NVIDIA-A100-SXM4-80GB"), "{pod}");
}

#[tokio::test]
async fn jobs_pods_and_kueue_queues_from_the_standard_cluster() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let snap = snapshot(&b).await;

    let train = job(&snap, "train:llm-pretrain");
    assert_eq!(train.state, JobState::Running);
    assert_eq!((train.gpus_requested, train.gpus_allocated), (12, 12));
    assert_eq!(train.nodes.len(), 3);
    assert_eq!(train.partition, "gpu-cluster-queue", "Kueue: the ClusterQueue behind team-train");
    assert_eq!(train.account.as_deref(), Some("train"));
    assert_eq!(train.gpu_model.as_deref(), Some("h100"));
    assert_eq!(train.gpu_product.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
    assert!(train.gpu_allocations.iter().all(|a| a.model.as_deref() == Some("h100")), "{:?}", train.gpu_allocations);
    assert!(train.stdout.as_deref().is_some_and(|p| p.starts_with("pod/train/llm-pretrain-")));

    let sweep = job(&snap, "research:big-sweep");
    assert_eq!(sweep.state, JobState::Pending);
    assert_eq!(
        sweep.reason.as_deref(),
        Some(format!("Kueue Pending: {}", fixtures::PENDING_WORKLOAD_MESSAGE).as_str())
    );
    assert_eq!(sweep.gpus_requested, 16);

    let stuck = job(&snap, "research:pod:big-train-pending");
    assert_eq!(stuck.state, JobState::Pending);
    let reason = stuck.reason.as_deref().unwrap();
    assert!(reason.starts_with("Unschedulable: 0/7 nodes are available"), "{reason}");
    assert!(reason.contains("3 Insufficient nvidia.com/gpu") && !reason.contains("preemption"), "{reason}");

    // GPU pods are jobs, grouped under their owner (a ReplicaSet's under its Deployment);
    // GPU-less pods (DaemonSets, mirrors) are not; a Job's pods are folded into their Job.
    let vllm = job(&snap, "inference:deployment:vllm-llama");
    assert_eq!((vllm.state, vllm.gpus_allocated), (JobState::Running, 3));
    assert_eq!(job(&snap, "research:pod:eval-mmlu-h7x9k").state, JobState::Completed);
    assert!(!snap.jobs.iter().any(|j| j.job_ref.id.contains("dcgm") || j.job_ref.id.contains("gpu-health-probe")));
    assert!(!snap.jobs.iter().any(|j| j.job_ref.id.contains("llm-pretrain-0")));

    let cq = snap.queues.iter().find(|q| q.name == "gpu-cluster-queue").expect("the ClusterQueue is a queue");
    assert_eq!((cq.gpus_total, cq.gpus_allocated), (16, 12));
    assert_eq!(cq.cohort.as_deref(), Some("gpu-cohort"));
    let gpu = cq.quota.iter().find(|q| q.resource == "nvidia.com/gpu").expect("GPU quota per flavor");
    assert_eq!((gpu.flavor.as_str(), gpu.nominal_milli, gpu.used_milli), ("h100", 16_000, 12_000));
    assert_eq!(cq.quota.len(), 3, "cpu, memory and GPUs of flavor h100: {:?}", cq.quota);
    assert_eq!(cq.jobs_by_state.get(&JobState::Running), Some(&1));
    assert_eq!(cq.jobs_by_state.get(&JobState::Pending), Some(&1));
    assert!(snap.queues.iter().any(|q| q.name == "inference"), "namespaces without Kueue are queues too");
}

#[tokio::test]
async fn allocation_follows_pod_events() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    snapshot(&b).await;
    let held = |b: &KubeBackend| {
        b.node_tallies().get(fixtures::NODE_H100_A).map(|t| t.amounts.get(gpu::NVIDIA_GPU) / 1000).unwrap_or(0)
    };
    assert_eq!(held(&b), 7);
    let mut extra = fixtures::gpu_pod("research", "one-more", Some(fixtures::NODE_H100_A), "nvidia.com/gpu", 1);
    s.fake.put(extra.clone());
    until("the new pod's GPU", 5, async || (held(&b) == 8).then_some(())).await;
    extra["status"]["phase"] = json!("Succeeded");
    s.fake.put(extra);
    until("the finished pod to let go", 5, async || (held(&b) == 7).then_some(())).await;
    s.fake.put(fixtures::gpu_pod("research", "two-more", Some(fixtures::NODE_H100_A), "nvidia.com/gpu", 1));
    until("another pod", 5, async || (held(&b) == 8).then_some(())).await;
    s.fake.delete("v1", "Pod", Some("research"), "two-more");
    until("the deleted pod to let go", 5, async || (held(&b) == 7).then_some(())).await;
    assert_eq!(b.node_tallies(), gpu::recount(&fake_pods(&s.fake)));
    assert_eq!(node(&snapshot(&b).await, fixtures::NODE_H100_A).gpus_allocated(), 7);
}

#[tokio::test]
async fn a_cordon_shows_within_one_watch_event() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let before = snapshot(&b).await;
    assert!(!node(&before, fixtures::NODE_H100_A).has_flag("CORDONED"));
    let mut rx = b.changes().expect("a watching backend announces changes");
    rx.borrow_and_update();

    // Someone else cordons the node (kubectl): one watch event, one change, and it shows.
    let mut n = s.fake.get("v1", "Node", None, fixtures::NODE_H100_A).unwrap();
    n["spec"]["unschedulable"] = json!(true);
    s.fake.put(n);
    tokio::time::timeout(Duration::from_secs(5), rx.changed()).await.expect("a change").unwrap();
    let after = b.build_snapshot();
    let cordoned = node(&after, fixtures::NODE_H100_A);
    assert!(cordoned.has_flag("CORDONED"), "{:?}", cordoned.flags);
    assert!(cordoned.is_unavailable());
    assert_eq!(cordoned.native_state, "Ready,SchedulingDisabled");

    // Our own uncordon and cordon: strategic-merge patches on the node.
    b.node_action(fixtures::NODE_H100_A, &NodeAction::Uncordon).await.unwrap();
    assert_eq!(s.fake.get("v1", "Node", None, fixtures::NODE_H100_A).unwrap()["spec"]["unschedulable"], json!(false));
    until("the uncordon to show", 5, async || {
        (!node(&b.build_snapshot(), fixtures::NODE_H100_A).has_flag("CORDONED")).then_some(())
    })
    .await;
    b.node_action(fixtures::NODE_H100_B, &NodeAction::Cordon).await.unwrap();
    let patches: Vec<_> = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path == format!("/api/v1/nodes/{}", fixtures::NODE_H100_B))
        .collect();
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type.as_deref(), Some("application/strategic-merge-patch+json"));
    assert_eq!(patches[0].body.as_ref().unwrap()["spec"]["unschedulable"], json!(true));
    let err = b.node_action("no-such-node", &NodeAction::Cordon).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)), "{err}");
}

#[tokio::test]
async fn drain_evicts_what_it_should_and_names_what_stayed() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    s.fake.block_eviction("train", "llm-pretrain-2-m3v8r", None);
    let started = Instant::now();
    let err = b
        .node_action(fixtures::NODE_CORDONED, &NodeAction::Drain { reason: "ECC errors on GPU 3".into(), force: false })
        .await
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < Duration::from_secs(5), "bounded by the cluster's timeout");
    assert!(err.starts_with(&format!("`drain {}` failed", fixtures::NODE_CORDONED)), "{err}");
    assert!(err.contains("train/llm-pretrain-2-m3v8r (blocked by a disruption budget"), "{err}");
    assert!(err.contains("research/scratch-cache-5d8f7b6c9-kq4zm (has emptyDir data"), "{err}");
    assert!(err.contains("research/debug-shell (no controller"), "{err}");
    assert!(err.contains("3 stayed") && err.contains("2 left alone"), "{err}");
    // Nothing was evicted: every pod is still there, the node is cordoned with the reason.
    for (pod, _) in fixtures::CORDONED_NODE_PODS {
        let (ns, name) = pod.split_once('/').unwrap();
        assert!(s.fake.get("v1", "Pod", Some(ns), name).is_some(), "{pod} is still there");
    }
    let evictions: Vec<_> = s.fake.requests().into_iter().filter(|r| r.path.ends_with("/eviction")).collect();
    assert_eq!(evictions.len(), 4, "the budget-blocked pod was tried 4 times, nothing else");
    let n = s.fake.get("v1", "Node", None, fixtures::NODE_CORDONED).unwrap();
    assert_eq!(n["metadata"]["annotations"][map::DRAIN_REASON], json!("ECC errors on GPU 3"));
    let snap = snapshot(&b).await;
    let drained = node(&snap, fixtures::NODE_CORDONED);
    assert_eq!(drained.state, NodeState::Draining);
    assert_eq!(drained.reason.as_deref(), Some("ECC errors on GPU 3"));

    // Told to, with a budget that gives way after one 429: everything but the DaemonSet and
    // mirror pods goes (the Job pod's finalizer keeps it terminating).
    s.fake.block_eviction("train", "llm-pretrain-2-m3v8r", Some(1));
    let opts = DrainOptions {
        force: true,
        delete_emptydir_data: true,
        retry_pause: Duration::from_millis(100),
        ..DrainOptions::default()
    };
    let report = b.drain_node(fixtures::NODE_CORDONED, "ECC errors on GPU 3", &opts).await.unwrap();
    assert!(report.complete(), "{}", report.summary());
    assert_eq!(
        report.evicted,
        vec!["research/debug-shell", "research/scratch-cache-5d8f7b6c9-kq4zm", "train/llm-pretrain-2-m3v8r"]
    );
    let skipped: Vec<&str> = report.skipped.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        skipped,
        vec!["gpu-operator/nvidia-dcgm-exporter-c4d7n", "kube-system/gpu-health-probe-gpu-h100-cordoned"]
    );
    assert!(s.fake.get("v1", "Pod", Some("research"), "debug-shell").is_none());
    assert!(s.fake.get("v1", "Pod", Some("gpu-operator"), "nvidia-dcgm-exporter-c4d7n").is_some());

    // Resume = uncordon, and the drain annotations go.
    b.node_action(fixtures::NODE_CORDONED, &NodeAction::Resume).await.unwrap();
    let n = s.fake.get("v1", "Node", None, fixtures::NODE_CORDONED).unwrap();
    assert_eq!(n["spec"]["unschedulable"], json!(false));
    assert!(n["metadata"]["annotations"].get(map::DRAIN_REASON).is_none(), "{}", n["metadata"]);
}

fn train_spec() -> JobSpec {
    JobSpec {
        name: "Fine-tune 7B".into(),
        command: Some("torchrun --nproc-per-node 4 train.py".into()),
        gpus: 4,
        gpu_type: Some("h100".into()),
        cpus: Some(32),
        memory: Some("256G".into()),
        time_limit: Some("3h".into()),
        image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
        workdir: Some("/workspace".into()),
        env: [("NCCL_DEBUG".to_string(), "INFO".to_string())].into(),
        ..JobSpec::default()
    }
}

#[tokio::test]
async fn submit_creates_the_job_the_spec_describes_and_cancel_deletes_it() {
    let mut s = standard();
    s.cfg.settings.namespaces = vec!["train".into()];
    s.cfg.settings.queue = Some("team-train".into());
    let b = KubeBackend::new(&s.cfg);
    let spec = train_spec();
    let job_ref = b.submit(&spec).await.unwrap();
    let (ns, name) = job_ref.id.split_once(':').unwrap();
    assert_eq!(ns, "train");
    assert!(name.starts_with("fine-tune-7b-"), "{name}");
    let created = s.fake.get("batch/v1", "Job", Some(ns), name).expect("the Job exists");
    assert_eq!(created["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], json!("team-train"));
    assert_eq!(created["spec"]["suspend"], json!(true), "Kueue admits it by unsuspending");
    assert_eq!(created["spec"]["activeDeadlineSeconds"], json!(3 * 3600));
    let pod = &created["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], json!("Never"));
    assert_eq!(pod["nodeSelector"]["nvidia.com/gpu.product"], json!("NVIDIA-H100-80GB-HBM3"));
    let c = &pod["containers"][0];
    assert_eq!(c["image"], json!("nvcr.io/nvidia/pytorch:25.01-py3"));
    assert_eq!(c["command"], json!(["/bin/sh", "-c", "torchrun --nproc-per-node 4 train.py"]));
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], json!("4"));
    assert_eq!(c["resources"]["requests"]["cpu"], json!("32"));
    assert_eq!(c["resources"]["limits"]["memory"], json!(format!("{}Mi", 256 * 1024)));
    assert_eq!(c["env"], json!([{"name": "NCCL_DEBUG", "value": "INFO"}]));
    assert_eq!(c["workingDir"], json!("/workspace"));

    // It shows as a pending job in the ClusterQueue.
    let shown =
        until("the new job", 5, async || b.snapshot().await.ok()?.jobs.into_iter().find(|j| j.job_ref == job_ref))
            .await;
    assert_eq!((shown.state, shown.gpus_requested), (JobState::Pending, 4));
    assert_eq!(shown.partition, "gpu-cluster-queue");
    assert_eq!(shown.time_limit_secs, Some(3 * 3600));

    // Without an image: a clear refusal, and no request.
    s.fake.clear_requests();
    let mut no_image = train_spec();
    no_image.image = None;
    let err = b.submit(&no_image).await.unwrap_err();
    assert!(matches!(err, BackendError::InvalidSpec(_)) && err.to_string().contains("`image`"), "{err}");
    assert!(s.fake.requests().iter().all(|r| r.method != "POST"));
    let mut unknown_model = train_spec();
    unknown_model.gpu_type = Some("b200".into());
    let err = b.submit(&unknown_model).await.unwrap_err().to_string();
    assert!(err.contains("no node has GPU model \"b200\"") && err.contains("NVIDIA-H100-80GB-HBM3"), "{err}");

    // Cancel: delete with background propagation.
    b.job_action(&job_ref, JobAction::Cancel).await.unwrap();
    assert!(s.fake.get("batch/v1", "Job", Some(ns), name).is_none());
    let delete = s.fake.requests().into_iter().find(|r| r.method == "DELETE").unwrap();
    assert_eq!(delete.body.as_ref().unwrap()["propagationPolicy"], json!("Background"));
    let err = b.job_action(&job_ref, JobAction::Cancel).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)), "{err}");
    let err = b.job_action(&job_ref, JobAction::Requeue).await.unwrap_err();
    assert!(matches!(err, BackendError::Unsupported(_)), "{err}");
}

/// A cancel confirmed on a Job carries the UID the user saw: when the name has since been
/// taken by a new Job (deleted and submitted again), the API server refuses and the new
/// Job is left alone; the Job of that UID is deleted.
#[tokio::test]
async fn cancel_deletes_only_the_job_that_was_chosen() {
    let s = setup(vec![fixtures::node_h100("n1"), fixtures::job("ml", "again", 1, 1, None, false)]);
    let b = KubeBackend::new(&s.cfg);
    let r = flightdeck::model::JobRef::new("k8s", "ml:again");
    let seen = until("the job", 5, async || b.snapshot().await.ok()?.jobs.into_iter().find(|j| j.job_ref == r)).await;
    let chosen = seen.uid.clone().expect("a Kubernetes job carries its UID");
    assert_eq!(
        Some(chosen.as_str()),
        s.fake.get("batch/v1", "Job", Some("ml"), "again").unwrap()["metadata"]["uid"].as_str()
    );

    // Meanwhile someone deletes it and submits a job of the same name.
    s.fake.delete("batch/v1", "Job", Some("ml"), "again");
    let mut again = fixtures::job("ml", "again", 1, 1, None, false);
    // The server gives a new object a new UID.
    again["metadata"]["uid"] = json!("");
    s.fake.put(again);
    let newer =
        s.fake.get("batch/v1", "Job", Some("ml"), "again").unwrap()["metadata"]["uid"].as_str().unwrap().to_string();
    assert_ne!(newer, chosen);

    let err = b.job_action_if(&r, JobAction::Cancel, Some(&chosen)).await.unwrap_err().to_string();
    assert!(err.contains("no longer the object you chose") && err.contains("nothing was deleted"), "{err}");
    assert!(s.fake.get("batch/v1", "Job", Some("ml"), "again").is_some(), "the newer job is left alone");
    let delete = s.fake.requests().into_iter().find(|r| r.method == "DELETE").unwrap();
    assert_eq!(delete.body.as_ref().unwrap()["preconditions"]["uid"], json!(chosen));

    b.job_action_if(&r, JobAction::Cancel, Some(&newer)).await.unwrap();
    assert!(s.fake.get("batch/v1", "Job", Some("ml"), "again").is_none());
}

#[tokio::test]
async fn hold_and_release_suspend_a_plain_job() {
    let s = setup(vec![fixtures::node_h100("n1"), fixtures::job("ml", "plain", 1, 1, None, false)]);
    let b = KubeBackend::new(&s.cfg);
    let r = flightdeck::model::JobRef::new("k8s", "ml:plain");
    b.job_action(&r, JobAction::Hold).await.unwrap();
    assert_eq!(s.fake.get("batch/v1", "Job", Some("ml"), "plain").unwrap()["spec"]["suspend"], json!(true));
    let held =
        until("the hold", 5, async || b.snapshot().await.ok()?.jobs.into_iter().find(|j| j.state == JobState::Held))
            .await;
    assert_eq!(held.job_ref, r);
    b.job_action(&r, JobAction::Release).await.unwrap();
    assert_eq!(s.fake.get("batch/v1", "Job", Some("ml"), "plain").unwrap()["spec"]["suspend"], json!(false));
    // Kueue owns spec.suspend of a queued job: the hold goes to its Workload, and without one
    // (Kueue has not seen the job yet) nothing is patched.
    s.fake.put(fixtures::job("ml", "queued", 1, 1, Some("q"), true));
    let err = b.job_action(&flightdeck::model::JobRef::new("k8s", "ml:queued"), JobAction::Hold).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)) && err.to_string().contains("no Kueue Workload yet"), "{err}");
    assert_eq!(s.fake.get("batch/v1", "Job", Some("ml"), "queued").unwrap()["spec"]["suspend"], json!(true));
}

#[tokio::test]
async fn dropped_and_expired_watches_recover_without_a_restart() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let count = |b: &KubeBackend| b.build_snapshot().jobs.len();
    let jobs = count(&b);

    s.fake.drop_watches();
    s.fake.put(fixtures::gpu_pod("research", "after-drop", Some(fixtures::NODE_MI300), "amd.com/gpu", 1));
    until("the pod made after the drop", 10, async || (count(&b) == jobs + 1).then_some(())).await;

    s.fake.expire_watches();
    s.fake.put(fixtures::gpu_pod("research", "after-expiry", Some(fixtures::NODE_MI300), "amd.com/gpu", 1));
    s.fake.delete("v1", "Pod", Some("research"), "after-drop");
    until("the changes made after the 410", 10, async || {
        let snap = b.build_snapshot();
        let ids: Vec<String> = snap.jobs.iter().map(|j| j.job_ref.id.clone()).collect();
        (ids.contains(&"research:pod:after-expiry".to_string())
            && !ids.contains(&"research:pod:after-drop".to_string()))
        .then_some(())
    })
    .await;
    let snap = snapshot(&b).await;
    assert_eq!(node(&snap, fixtures::NODE_MI300).gpus_allocated(), 3);
    assert_eq!(b.node_tallies(), gpu::recount(&fake_pods(&s.fake)), "the re-list reconciled the tallies");
    // The watcher re-listed after the 410.
    let lists = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods" && !r.query.iter().any(|(k, _)| k == "watch"));
    assert!(lists.count() >= 2, "a fresh list after the expiry");
}

#[tokio::test]
async fn the_api_server_going_away_makes_the_cluster_stale_and_it_recovers() {
    let mut s = standard();
    s.cfg.timeout = Duration::from_secs(2);
    s.cfg.refresh = Duration::from_millis(100);
    let backend = Arc::new(KubeBackend::new(&s.cfg));
    let fleet = Fleet::start(
        vec![Member { backend, kind: "kubernetes".into(), refresh: s.cfg.refresh, timeout: s.cfg.timeout }],
        FleetOptions { read_only: false, poll: true, audit: None, actor: "tester".into() },
    );
    let state = fleet.wait_for(Duration::from_secs(10), |st| st.clusters[0].health.is_fresh()).await;
    assert!(state.clusters[0].health.is_fresh(), "{:?}", state.clusters[0].health);

    s.fake.set_down(true);
    let state =
        fleet.wait_for(Duration::from_secs(15), |st| matches!(st.clusters[0].health, Health::Stale { .. })).await;
    let Health::Stale { error, .. } = &state.clusters[0].health else { panic!("still {:?}", state.clusters[0].health) };
    assert!(error.contains("cannot reach"), "{error}");
    assert!(state.clusters[0].snapshot.is_some(), "the last good snapshot stays");

    // Changed while the server was away; seen once it is back.
    s.fake.put(fixtures::gpu_pod("research", "while-away", Some(fixtures::NODE_MI300), "amd.com/gpu", 1));
    s.fake.set_down(false);
    let state = fleet
        .wait_for(Duration::from_secs(30), |st| {
            st.clusters[0].health.is_fresh()
                && st.clusters[0]
                    .snapshot
                    .as_ref()
                    .is_some_and(|snap| snap.jobs.iter().any(|j| j.job_ref.id == "research:pod:while-away"))
        })
        .await;
    assert!(state.clusters[0].health.is_fresh(), "{:?}", state.clusters[0].health);
}

#[tokio::test]
async fn without_kueue_crds_it_still_works_with_a_note() {
    let s = standard();
    for kind in ["Workload", "LocalQueue", "ClusterQueue"] {
        for version in ["v1beta2", "v1beta1"] {
            s.fake.disable_kind(&format!("kueue.x-k8s.io/{version}"), kind, 404);
        }
    }
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let kueue_off = |b: &KubeBackend| b.watches().iter().filter(|(k, w)| k.starts_with("Kueue") && w.disabled).count();
    until("every Kueue watch to switch off", 10, async || (kueue_off(&b) == 3).then_some(())).await;
    let snap = snapshot(&b).await;
    let notes: Vec<&String> =
        snap.notes.iter().filter(|n| *n != flightdeck::backend::kube::workloads::ABSENT_NOTE).collect();
    assert_eq!(notes.len(), 1, "one note for the three kinds: {notes:?}");
    assert!(notes[0].starts_with("Kueue is not installed"), "{notes:?}");
    assert_eq!(snap.nodes.len(), 7);
    let train = job(&snap, "train:llm-pretrain");
    assert_eq!(train.state, JobState::Running);
    assert_eq!(train.partition, "team-train", "the LocalQueue label, with no ClusterQueue to resolve it");
    assert_eq!(job(&snap, "research:big-sweep").reason.as_deref(), Some("Kueue: waiting for admission"));
    assert!(!snap.queues.iter().any(|q| q.name == "gpu-cluster-queue"));
    let d = b.diagnose().await.unwrap();
    assert!(d.notes.iter().any(|n| n.contains("Kueue is not installed")), "{:?}", d.notes);
}

#[tokio::test]
async fn forbidden_kinds_reduce_the_view_with_a_note() {
    let s = standard();
    s.fake.disable_kind("kueue.x-k8s.io/v1beta2", "ClusterQueue", 403);
    s.fake.disable_kind("v1", "Event", 403);
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let snap = until("the RBAC notes", 10, async || {
        let snap = b.snapshot().await.ok()?;
        (snap.notes.iter().filter(|n| *n != flightdeck::backend::kube::workloads::ABSENT_NOTE).count() >= 2)
            .then_some(snap)
    })
    .await;
    assert!(snap.notes.iter().any(|n| n.contains("ClusterQueue") && n.contains("no permission")), "{:?}", snap.notes);
    assert!(snap.notes.iter().any(|n| n.contains("events") && n.contains("403")), "{:?}", snap.notes);
    // Still the ClusterQueue's name for the job (from the LocalQueue), but no quota.
    assert_eq!(job(&snap, "train:llm-pretrain").partition, "gpu-cluster-queue");
    // Without the event, the pending reason comes from the pod's condition.
    let stuck = job(&snap, "research:pod:big-train-pending");
    assert!(stuck.reason.as_deref().unwrap().contains("3 Insufficient nvidia.com/gpu"), "{:?}", stuck.reason);

    // Pods forbidden everywhere: nodes and jobs still show, with a note.
    let s = standard();
    s.fake.disable_kind("v1", "Pod", 403);
    let b = KubeBackend::new(&s.cfg);
    let snap = until("a snapshot without pods", 10, async || {
        let snap = b.snapshot().await.ok()?;
        snap.notes.iter().any(|n| n.contains("pods in default")).then_some(snap)
    })
    .await;
    assert!(snap.notes.iter().any(|n| n.contains("pods in all namespaces: no permission")), "{:?}", snap.notes);
    assert_eq!(snap.nodes.len(), 7);
    assert!(snap.jobs.iter().any(|j| j.job_ref.id == "train:llm-pretrain"));
}

#[tokio::test]
async fn configured_namespaces_limit_the_view() {
    let mut s = standard();
    s.cfg.settings.namespaces = vec!["train".into(), "inference".into()];
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let snap = snapshot(&b).await;
    assert!(snap.jobs.iter().all(|j| {
        let ns = j.job_ref.id.split(':').next().unwrap();
        ns == "train" || ns == "inference"
    }));
    assert!(snap.jobs.iter().any(|j| j.job_ref.id == "train:llm-pretrain"));
    // GPUs held by pods of other namespaces are not seen (and not counted).
    assert_eq!(node(&snap, fixtures::NODE_H100_A).gpus_allocated(), 4);
    let watches: Vec<String> = b.watches().into_keys().collect();
    assert!(watches.contains(&"pods in train".to_string()) && watches.contains(&"pods in inference".to_string()));
    assert!(s.fake.requests().iter().all(|r| r.path != "/api/v1/pods"), "never lists all namespaces");
}

#[tokio::test]
async fn logs_tail_and_follow() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    let snap = snapshot(&b).await;
    let path = job(&snap, "inference:deployment:vllm-llama").stdout.clone().unwrap();
    assert_eq!(path.as_str(), "pod/inference/vllm-llama-6f7d9c8b5-x2k4n/vllm");
    let first = "INFO loading weights\nINFO ready on :8000\n";
    s.fake.set_pod_log("inference", "vllm-llama-6f7d9c8b5-x2k4n", Some("vllm"), first);
    let chunk = b.read_log(&path, None, 1 << 20).await.unwrap();
    assert_eq!((chunk.data.as_str(), chunk.offset, chunk.dropped), (first, first.len() as u64, 0));
    // Bounded: only the newest bytes.
    let tail = b.read_log(&path, None, 10).await.unwrap();
    assert_eq!(tail.data, first[first.len() - 10..]);
    // Follow: what was appended since.
    let more = format!("{first}INFO request 1\n");
    s.fake.set_pod_log("inference", "vllm-llama-6f7d9c8b5-x2k4n", Some("vllm"), &more);
    let next = b.read_log(&path, Some(chunk.offset), 1 << 20).await.unwrap();
    assert_eq!((next.data.as_str(), next.offset), ("INFO request 1\n", more.len() as u64));
    let none = b.read_log(&path, Some(next.offset), 1 << 20).await.unwrap();
    assert_eq!((none.data.as_str(), none.offset), ("", more.len() as u64));
    assert!(b.read_log(&"/home/alice/slurm-1.out".into(), None, 100).await.is_err());
    let err = b.read_log(&"pod/inference/gone/main".into(), None, 100).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)), "{err}");
}

#[tokio::test]
async fn interactive_actions_never_wait_on_kube_retries() {
    let mut s = standard();
    s.cfg.timeout = Duration::from_secs(1);
    let b = KubeBackend::new(&s.cfg);
    // A 429 is answered at once, not retried fifteen times: the action fails with it (a
    // retry would have succeeded, one failure is injected) and it is the last request the
    // server saw. Counted, not timed, so a loaded machine cannot fail it.
    s.fake.fail_next(1, 429);
    let err = b.node_action(fixtures::NODE_H100_A, &NodeAction::Cordon).await.unwrap_err();
    assert!(err.to_string().contains("429"), "{err}");
    let statuses: Vec<u16> = s.fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|&&st| st == 429).count(), 1, "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429), "nothing was asked after the 429: {statuses:?}");
    // A server far slower than the timeout (10 s against 1 s): a timeout error, well before
    // the answer would have come.
    s.fake.set_latency(Duration::from_secs(10));
    let started = Instant::now();
    let err = b.job_action(&flightdeck::model::JobRef::new("k8s", "train:llm-pretrain"), JobAction::Cancel).await;
    assert!(matches!(err, Err(BackendError::Timeout { .. })), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());
}

#[tokio::test]
async fn several_contexts_are_separate_clusters() {
    let (a, b) = (FakeApi::start_blocking(), FakeApi::start_blocking());
    a.put(fixtures::node_h100("only-in-a"));
    b.put(fixtures::node_mi300("only-in-b"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    kube_fake::write_kubeconfig(&path, &[("ctx-a", &a.url()), ("ctx-b", &b.url())], "ctx-b");
    let cluster = |name: &str, context: Option<&str>| {
        let kube =
            KubeConfig { kubeconfig: Some(path.clone()), context: context.map(str::to_string), ..Default::default() };
        let cfg = ClusterConfig::new(name, kube).with_timeout(Duration::from_secs(5));
        KubeBackend::new(&cfg)
    };
    let names = |s: Snapshot| s.nodes.into_iter().map(|n| n.name).collect::<Vec<_>>();
    assert_eq!(names(snapshot(&cluster("a", Some("ctx-a"))).await), vec!["only-in-a"]);
    assert_eq!(names(snapshot(&cluster("b", Some("ctx-b"))).await), vec!["only-in-b"]);
    assert_eq!(names(snapshot(&cluster("current", None)).await), vec!["only-in-b"], "the current context");
    let err = cluster("nope", Some("ctx-c")).snapshot().await.unwrap_err();
    assert!(matches!(err, BackendError::Connect { .. }) && err.to_string().contains("ctx-c"), "{err}");
}

/// The binary end to end (a fake on its own runtime; no runtime in the test).
#[test]
fn the_cli_reads_a_kubernetes_cluster() {
    let s = standard();
    let dir = tempfile::tempdir().unwrap();
    let cli = kube_fake::Cli::new(dir.path(), s.cfg.settings.kubeconfig.as_ref().unwrap());
    let run = |args: &[&str]| {
        let (ok, stdout, stderr) = cli.run(args);
        (ok, format!("{stdout}{stderr}"))
    };
    let nodes = run(&["nodes"]);
    let jobs = run(&["jobs", "--output", "json"]);
    let cordon = run(&["cordon", "k8s/gpu-h100-a"]);
    let doctor = run(&["doctor"]);
    assert!(nodes.0 && nodes.1.contains("gpu-h100-cordoned"), "{}", nodes.1);
    assert!(jobs.0 && jobs.1.contains("\"train:llm-pretrain\""), "{}", jobs.1);
    assert!(cordon.0, "{}", cordon.1);
    assert_eq!(s.fake.get("v1", "Node", None, "gpu-h100-a").unwrap()["spec"]["unschedulable"], json!(true));
    assert!(doctor.0 && doctor.1.contains("watch pods"), "{}", doctor.1);
    println!("{}\n{}", nodes.1, doctor.1);
}

/// A pod asking for 8 GPUs on a cluster of 4-GPU H200 nodes: `why` through the binary says
/// it is larger than any node, before the scheduler's own counts.
#[test]
fn a_pod_larger_than_any_node_is_told_so_by_why() {
    let four_h200 = |name: &str| {
        let mut n = fixtures::node_h200(name);
        for field in ["capacity", "allocatable"] {
            n["status"][field]["nvidia.com/gpu"] = json!("4");
        }
        n["metadata"]["labels"]["nvidia.com/gpu.count"] = json!("4");
        n
    };
    let mut pod = fixtures::gpu_pod("research", "big-h200", None, "nvidia.com/gpu", 8);
    pod["status"] = json!({
        "phase": "Pending",
        "conditions": [{
            "type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": fixtures::T_STARTED, "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 \
                        No preemption victims found for incoming pod.",
        }],
    });
    let s = setup(vec![four_h200("gpu-h200-a"), four_h200("gpu-h200-b"), fixtures::namespace("research"), pod]);
    let dir = tempfile::tempdir().unwrap();
    let cli = kube_fake::Cli::new(dir.path(), s.cfg.settings.kubeconfig.as_ref().unwrap());
    let (ok, stdout, stderr) = cli.run(&["why", "k8s/research:pod:big-h200"]);
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "k8s/research:pod:big-h200  pending  Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu\n  \
         it asks for more on one node than any node has (blocked)\n  - needs 8 GPUs on one node: larger than any node \
         (largest: 4 × h200)\n  - 0 of 2 nodes can take it\n  - 2 nodes: Insufficient nvidia.com/gpu\n"
    );
    println!("{stdout}");
}

/// Through the `Backend` trait, as the fleet calls it: a forced drain reports what it did.
#[tokio::test]
async fn a_forced_drain_reports_what_it_did() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    let done = b
        .node_action(fixtures::NODE_CORDONED, &NodeAction::Drain { reason: "fan".into(), force: true })
        .await
        .expect("forced drain");
    assert!(done.contains("3 evicted"), "{done}");
    assert!(done.contains("2 left alone"), "{done}");
    assert!(s.fake.get("v1", "Pod", Some("research"), "debug-shell").is_none(), "the unmanaged pod was evicted");
}

#[tokio::test]
async fn the_preview_is_the_job_manifest_submit_creates() {
    let mut s = standard();
    s.cfg.settings.namespaces = vec!["train".into()];
    s.cfg.settings.queue = Some("team-train".into());
    let b = KubeBackend::new(&s.cfg);
    let mut spec = train_spec();
    spec.partition = Some("no-such-queue".into());
    s.fake.clear_requests();
    let native = b.render(&spec).await.unwrap();
    assert_eq!(native.dialect, flightdeck::backend::kube::dialect::KUBERNETES_JOB);
    assert!(s.fake.requests().iter().all(|r| r.method != "POST"), "a preview creates nothing");
    assert!(native.text.contains("kind: Job"), "{}", native.text);
    let shown: Value = serde_saphyr::from_str(&native.text).expect("the preview is YAML");
    // What was shown is what gets created, but for the name's random suffix.
    let job_ref = b.submit(&spec).await.unwrap();
    let (ns, name) = job_ref.id.split_once(':').unwrap();
    let created = s.fake.get("batch/v1", "Job", Some(ns), name).expect("the Job exists");
    assert_eq!(shown["spec"]["template"]["spec"], created["spec"]["template"]["spec"]);
    assert_eq!(shown["metadata"]["labels"], created["metadata"]["labels"]);
    assert_eq!(shown["metadata"]["namespace"], json!("train"));
    assert_eq!(shown["spec"]["suspend"], json!(true));
    assert_eq!(shown["metadata"]["name"], json!("fine-tune-7b-xxxxx"));
    // What the cluster does not use is named, never dropped silently.
    assert!(
        native.warnings.iter().any(|w| w.starts_with("`partition`: \"no-such-queue\"") && w.contains("team-train")),
        "{:?}",
        native.warnings
    );
    // Without an image the preview says what submit would.
    spec.image = None;
    let err = b.render(&spec).await.unwrap_err().to_string();
    assert!(err.contains("`image`"), "{err}");
}

/// An exec credential plugin that never answers (a login waiting on a browser): kube runs
/// it as a blocking child inside the request, beyond any async timeout, so flightdeck runs
/// it under `timeout`, and the action fails after the cluster's timeout instead of hanging.
#[test]
fn a_hanging_exec_credential_plugin_is_bounded_by_the_cluster_timeout() {
    let fake = FakeApi::start_blocking();
    fake.put(fixtures::node_h100("n1"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: sh\n      args: [\"-c\", \"sleep 120\"]\n      interactiveMode: Never\n",
            fake.url()
        ),
    )
    .unwrap();
    let cfg = ClusterConfig::new("k8s", KubeConfig::context_of(path, "c")).with_timeout(Duration::from_secs(2));
    let (tx, rx) = std::sync::mpsc::channel();
    let started = Instant::now();
    // Its own thread and runtime: if the plugin blocked it for good, this test still ends.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let result = rt.block_on(async {
            let b = KubeBackend::new(&cfg);
            b.job_action(&flightdeck::model::JobRef::new("k8s", "ml:x"), JobAction::Cancel).await
        });
        let _ = tx.send(result.map_err(|e| e.to_string()));
    });
    let result = rx.recv_timeout(Duration::from_secs(30)).expect("the action ended instead of hanging on the plugin");
    let err = result.expect_err("no credential, no action");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}: {err}", started.elapsed());
    assert!(err.contains("k8s") || err.contains("exec") || err.contains("timed out"), "{err}");
}

/// `spec export` of a live job: the Job object the fake serves, read through the fleet and
/// imported; a job flightdeck submitted reads back as the spec it was submitted from; the
/// migration annotation shows in the snapshot.
#[tokio::test]
async fn a_live_job_reads_back_as_its_spec_and_says_where_it_came_from() {
    let mut s = standard();
    s.cfg.settings.namespaces = vec!["train".into()];
    let served: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/dialects/kubernetes/flightdeck-made.yaml"
        ))
        .unwrap(),
    )
    .unwrap();
    s.fake.put(served);
    let backend = Arc::new(KubeBackend::new(&s.cfg));
    let spec = JobSpec { account: Some("train".into()), migrated_from: Some("slurm-a/4242".into()), ..train_spec() };
    let submitted = backend.submit(&spec).await.unwrap();
    let fleet = Fleet::start(
        vec![Member { backend, kind: "kubernetes".into(), refresh: s.cfg.refresh, timeout: s.cfg.timeout }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "tester".into() },
    );
    s.fake.clear_requests();

    let job_ref = flightdeck::model::JobRef::new("k8s", "train:fine-tune-7b-x7k2p");
    let got = fleet.job_spec(&job_ref).await.unwrap();
    assert_eq!(got.spec.name, "Fine-tune 7B");
    assert_eq!(got.spec.migrated_from.as_deref(), Some("hpc/88123"));
    assert_eq!((got.spec.gpus, got.spec.gpu_type.as_deref(), got.spec.cpus), (4, Some("h100"), Some(32)));
    assert_eq!((got.spec.memory.as_deref(), got.spec.time_limit.as_deref()), (Some("256G"), Some("3h")));
    assert_eq!(got.spec.partition.as_deref(), Some("team-train"));
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    let gets = s.fake.requests_to("GET", "/apis/batch/v1/namespaces/train/jobs/fine-tune-7b-x7k2p");
    assert_eq!(gets.len(), 1, "one GET of the Job object");

    // What submit created reads back as what was submitted, random suffix and all.
    let back = fleet.job_spec(&submitted).await.unwrap();
    assert_eq!(back.spec, spec);
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);

    // The annotation is where the job came from, in the snapshot every front end reads.
    let state = fleet
        .wait_for(Duration::from_secs(10), |st| {
            st.clusters[0].snapshot.as_ref().is_some_and(|snap| snap.jobs.iter().any(|j| j.job_ref == submitted))
        })
        .await;
    let snap = state.clusters[0].snapshot.as_ref().unwrap();
    assert_eq!(job(snap, "train:fine-tune-7b-x7k2p").migrated_from.as_deref(), Some("hpc/88123"));
    assert_eq!(job(snap, &submitted.id).migrated_from.as_deref(), Some("slurm-a/4242"));

    // Gone, or no Kubernetes id: said so.
    let err = fleet.job_spec(&flightdeck::model::JobRef::new("k8s", "train:no-such-job")).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)) && err.to_string() == "no Job train/no-such-job", "{err}");
    let err = fleet.job_spec(&flightdeck::model::JobRef::new("k8s", "not-an-id")).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)) && err.to_string().contains("NAMESPACE:JOB"), "{err}");
}

/// A bare pod reads back from its own spec; one that runs its image's entrypoint is refused
/// with the reason.
#[tokio::test]
async fn a_bare_pod_reads_back_from_its_spec_or_is_refused_clearly() {
    let s = standard();
    let mut pod = fixtures::gpu_pod("research", "notebook", Some(fixtures::NODE_MI300), "amd.com/gpu", 1);
    pod["spec"]["containers"][0]["command"] = json!(["jupyter", "lab", "--ip=0.0.0.0"]);
    s.fake.put(pod);
    s.fake.put(fixtures::gpu_pod("research", "entrypoint", Some(fixtures::NODE_MI300), "amd.com/gpu", 1));
    let b = KubeBackend::new(&s.cfg);
    let got = b.job_spec(&flightdeck::model::JobRef::new("k8s", "research:pod:notebook")).await.unwrap();
    assert_eq!(shlex::split(got.spec.command.as_deref().unwrap()).unwrap(), ["jupyter", "lab", "--ip=0.0.0.0"]);
    assert_eq!((got.spec.gpus, got.spec.cpus, got.spec.memory.as_deref()), (1, Some(8), Some("64G")));
    assert_eq!(got.spec.account.as_deref(), Some("research"));
    // What admission and the scheduler added is no warning; the restart policy is.
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(got.warnings[0].starts_with("`spec.restartPolicy`: \"Always\""), "{:?}", got.warnings);

    let err = b.job_spec(&flightdeck::model::JobRef::new("k8s", "research:pod:entrypoint")).await.unwrap_err();
    assert!(matches!(err, BackendError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("pod research/entrypoint") && err.to_string().contains("entrypoint"), "{err}");
}

/// Reading a spec back is bounded by the cluster's timeout like every other request.
#[tokio::test]
async fn reading_a_spec_back_is_bounded_by_the_cluster_timeout() {
    let mut s = standard();
    s.cfg.timeout = Duration::from_secs(1);
    let b = KubeBackend::new(&s.cfg);
    s.fake.set_latency(Duration::from_secs(5));
    let started = Instant::now();
    let err = b.job_spec(&flightdeck::model::JobRef::new("k8s", "train:llm-pretrain")).await.unwrap_err();
    assert!(matches!(err, BackendError::Timeout { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// `why` on a job waiting in Kueue asks the visibility API where it stands: once served, its
/// place among the ClusterQueue's pending workloads (higher priority first) and in its
/// LocalQueue; where the API is not served, it says so.
#[tokio::test]
async fn a_kueue_job_learns_its_place_in_the_queue() {
    let s = standard();
    let b = KubeBackend::new(&s.cfg);
    all_watches_synced(&b).await;
    let snap = snapshot(&b).await;
    let sweep = job(&snap, "research:big-sweep");
    assert!(flightdeck::fleet::why::why(&snap, sweep).wants_priority(), "why asks for a Kueue job's place");
    assert_eq!(
        b.priority_details(sweep).await.unwrap(),
        [
            "no queue position: this cluster does not serve Kueue's visibility API (visibility.kueue.x-k8s.io) for ClusterQueue gpu-cluster-queue"
        ]
    );

    s.fake.serve_kueue_visibility();
    // Two more pending: one of higher priority (ahead of it) in another namespace's queue,
    // one of the same priority but newer (behind it) in its own LocalQueue.
    let mut urgent = fixtures::workload_pending();
    urgent["metadata"]["name"] = json!("job-urgent-1a2b3");
    urgent["metadata"]["namespace"] = json!("train");
    urgent["metadata"]["ownerReferences"][0]["name"] = json!("urgent");
    urgent["spec"]["queueName"] = json!("team-train");
    urgent["spec"]["priority"] = json!(100);
    let mut later = fixtures::workload_pending();
    later["metadata"]["name"] = json!("job-later-4c5d6");
    later["metadata"]["ownerReferences"][0]["name"] = json!("later");
    later["metadata"]["creationTimestamp"] = json!("2030-01-01T00:00:00Z");
    s.fake.put_all([urgent, later]);
    assert_eq!(
        b.priority_details(sweep).await.unwrap(),
        ["position 2 of 3 in ClusterQueue gpu-cluster-queue (1 of 2 in LocalQueue research/team-research)"]
    );
    // A running job has no place to ask for.
    assert!(b.priority_details(job(&snap, "train:llm-pretrain")).await.unwrap().is_empty());
}
