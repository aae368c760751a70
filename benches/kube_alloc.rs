//! GPU allocation on a large Kubernetes cluster: 10,000 pods on 1,000 nodes.
//!
//! * `pod_event`  – what one pod event costs the adapter: the incremental ledger subtracts
//!   the pod's old charge and adds its new one (the pod flips between two states, so every
//!   iteration does real work);
//! * `full_recount` – every node's tally from scratch over all pods (what a polling adapter
//!   would redo on every change).
//!
//! Target: one event well under 1 ms. Under `cargo test --all-targets` (no `--bench`) the
//! binary only checks, on a small cluster, that the ledger equals the recount.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use flightdeck::backend::kube::gpu::{self, Ledger};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

const PODS: usize = 10_000;
const NODES: usize = 1_000;

/// A realistic mix: plain GPU pods, init containers, native sidecars, overhead, pending and
/// finished pods, CPU-only pods.
fn pod(i: usize, nodes: usize) -> Pod {
    let node = format!("gpu-{:04}", i % nodes);
    let gpus = 1 + i % 4;
    let mut spec = json!({
        "nodeName": node,
        "containers": [
            {"name": "main", "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"nvidia.com/gpu": gpus.to_string(), "memory": "32Gi"}}},
            {"name": "logger", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        ]
    });
    match i % 10 {
        0 => spec["initContainers"] = json!([{"name": "warm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]),
        1 => {
            spec["initContainers"] = json!([
                {"name": "monitor", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                {"name": "fetch", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "2"}}}
            ])
        }
        2 => spec["overhead"] = json!({"cpu": "250m", "memory": "160Mi"}),
        3 => spec["containers"][0]["resources"] = json!({"requests": {"cpu": "2", "memory": "4Gi"}}),
        _ => {}
    }
    let phase = match i % 50 {
        0 => "Pending",
        1 => "Succeeded",
        _ => "Running",
    };
    if phase == "Pending" {
        spec.as_object_mut().unwrap().remove("nodeName");
    }
    serde_json::from_value(json!({
        "metadata": {"name": format!("pod-{i:05}"), "namespace": format!("team-{}", i % 7)},
        "spec": spec,
        "status": {"phase": phase}
    }))
    .expect("pod")
}

fn cluster(pods: usize, nodes: usize) -> Vec<Pod> {
    (0..pods).map(|i| pod(i, nodes)).collect()
}

/// The same pod after an event: finished (so its GPUs are released), or running again.
fn flipped(p: &Pod) -> Pod {
    let mut q = p.clone();
    let status = q.status.as_mut().expect("status");
    status.phase = Some(if status.phase.as_deref() == Some("Running") { "Succeeded" } else { "Running" }.into());
    q
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n_pods, n_nodes) = if bench { (PODS, NODES) } else { (200, 20) };
    let pods = cluster(n_pods, n_nodes);
    let mut ledger = Ledger::default();
    for p in &pods {
        ledger.apply(p);
    }
    assert_eq!(ledger.nodes(), &gpu::recount(&pods), "the ledger equals a full recount");
    let target = pods.iter().position(|p| gpu::pod_charge(p).is_some_and(|c| c.amounts.gpus() > 0)).expect("a GPU pod");
    let (before, after) = (pods[target].clone(), flipped(&pods[target]));
    assert!(ledger.apply(&after), "the flip moves a tally");
    assert!(ledger.apply(&before));
    assert_eq!(ledger.nodes(), &gpu::recount(&pods));
    if !bench {
        println!("kube_alloc bench: inputs check out (run `cargo bench --bench kube_alloc` to measure)");
        return;
    }

    // Plain figures first: mean over many events, and a handful of recounts.
    let events = 200_000;
    let started = Instant::now();
    for i in 0..events {
        ledger.apply(black_box(if i % 2 == 0 { &after } else { &before }));
    }
    let per_event = started.elapsed() / events;
    let recounts = 20;
    let started = Instant::now();
    for _ in 0..recounts {
        black_box(gpu::recount(black_box(&pods)));
    }
    let per_recount = started.elapsed() / recounts;
    println!(
        "kube_alloc: {PODS} pods on {NODES} nodes: one pod event {per_event:?} (target < 1 ms), full recount {per_recount:?} ({:.0}× the event)",
        per_recount.as_secs_f64() / per_event.as_secs_f64().max(1e-12)
    );
    assert!(per_event < Duration::from_millis(1), "one pod event took {per_event:?}");

    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut g = c.benchmark_group("kube_alloc_10k_pods_1k_nodes");
    let mut flip = false;
    g.bench_function("pod_event", |b| {
        b.iter(|| {
            flip = !flip;
            ledger.apply(black_box(if flip { &after } else { &before }))
        })
    });
    g.bench_function("full_recount", |b| b.iter(|| gpu::recount(black_box(&pods))));
    g.finish();
    c.final_summary();
}
