//! `model::usage` over the Kubernetes fake: pods of several namespaces are held by their
//! namespace (the account) and their owner's user, and the Kueue ClusterQueue's nominal
//! quota, borrowing limit, use and borrowing stand beside them, as `flightdeck usage` prints.

use crate::kube_fake;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use flightdeck::backend::Backend;
use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::config::ClusterConfig;
use flightdeck::model::usage::{UsageAsk, UsageBy, compute};
use flightdeck::model::{ClusterState, FleetState};
use kube_fake::{FakeApi, fixtures};
use serde_json::json;

#[tokio::test]
async fn namespaces_hold_their_pods_gpus_beside_the_cluster_queues_quota_and_borrowing() {
    let mut objects = fixtures::standard_cluster();
    // The ClusterQueue borrows 2 GPUs from its cohort, within a limit of 4.
    let cq = objects.iter_mut().find(|o| o["kind"] == "ClusterQueue").expect("the fixture's ClusterQueue");
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = json!("4");
    cq["status"]["flavorsUsage"][0]["resources"][2] = json!({"name": "nvidia.com/gpu", "total": "18", "borrowed": "2"});
    let fake = FakeApi::start_blocking();
    fake.put_all(objects);
    let dir = tempfile::tempdir().unwrap();
    let cfg = ClusterConfig::new("k8s", KubeConfig::context_of(fake.kubeconfig(dir.path(), "fake"), "fake"))
        .with_timeout(Duration::from_secs(5));
    let snapshot = KubeBackend::new(&cfg).snapshot().await.expect("a snapshot of the fake");
    let mut cluster = ClusterState::new("k8s", "kubernetes");
    cluster.snapshot = Some(Arc::new(snapshot));
    let state = FleetState { clusters: vec![cluster], read_only: false, version: 1 };
    let ask = |by| UsageAsk { by, now: Utc::now(), window: None, idle_below_percent: None };

    let by_ns = compute(&state, &ask(UsageBy::Account));
    let rows: Vec<(&str, u32, u32)> = by_ns.rows.iter().map(|r| (r.key.as_str(), r.jobs_now, r.gpus_now)).collect();
    // train: llm-pretrain's 3 pods × 4 as one job; the others their running workloads (a
    // finished pod holds nothing, a DaemonSet's pods ask no GPU).
    assert_eq!(rows, vec![("train", 1, 12), ("inference", 4, 8), ("research", 4, 7), ("notebooks", 2, 2)]);
    // Every GPU the fixture allocates on a node is held by exactly one namespace.
    let allocated: u32 = fixtures::STANDARD_GPU_ALLOCATION.iter().map(|g| g.allocated).sum();
    assert_eq!((by_ns.total.gpus_now, rows.iter().map(|r| r.2).sum::<u32>()), (allocated, allocated));

    let quota = &by_ns.queue_quota;
    assert_eq!(quota.len(), 1, "the GPUs of flavor h100 only, no cpu or memory: {quota:?}");
    let q = &quota[0];
    assert_eq!(
        (q.cluster.as_str(), q.queue.as_str(), q.cohort.as_deref()),
        ("k8s", "gpu-cluster-queue", Some("gpu-cohort"))
    );
    assert_eq!((q.flavor.as_str(), q.resource.as_str()), ("h100", "nvidia.com/gpu"));
    assert_eq!((q.nominal, q.borrowing_limit, q.used, q.borrowed), (16.0, Some(4.0), 18.0, 2.0));
    assert_eq!((q.workloads_pending, q.workloads_admitted), (1, 1));
    let text = flightdeck::cli::usage::table(&by_ns);
    assert!(text.contains("gpu-cluster-queue  gpu-cohort  h100    nvidia.com/gpu  16"), "{text}");
    let json = serde_json::to_value(&by_ns).unwrap();
    assert_eq!(json["queue_quota"][0]["borrowed"], 2.0, "{json}");
}
