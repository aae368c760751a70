//! One fleet refresh at scale: a 50,000-job `squeue --json` document and 2,000 nodes parsed,
//! turned into a snapshot with its queues, and folded into the published fleet state.
//!
//! * `parse_and_merge` – what a poller does between receiving the bytes and publishing;
//! * `merge`           – only the fleet's part: deriving queues and recording the refresh.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use criterion::{BatchSize, Criterion};
use flightdeck::backend::slurm::parse::{parse_jobs_json, parse_nodes_json};
use flightdeck::fleet::{ClusterState, FleetState};
use flightdeck::model::Snapshot;
use serde_json::Value;

#[path = "support/squeue_doc.rs"]
mod squeue_doc;

const JOBS: usize = 50_000;
const NODES: usize = 2_000;

/// `scontrol show node --json` with the test bed's real node records replicated under new names.
fn nodes_document() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm/24.11/scontrol-node.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("node fixture")).expect("json");
    let real = doc["nodes"].as_array().expect("nodes").clone();
    let nodes: Vec<Value> = (0..NODES)
        .map(|i| {
            let mut n = real[i % real.len()].clone();
            n["name"] = Value::from(format!("gpu{i:05}"));
            n
        })
        .collect();
    serde_json::to_vec_pretty(&serde_json::json!({"nodes": nodes, "meta": doc["meta"].clone()})).expect("serialise")
}

fn refresh(jobs: &[u8], nodes: &[u8], state: &mut FleetState) {
    let j = parse_jobs_json("bench", jobs).expect("jobs");
    let n = parse_nodes_json("bench", nodes).expect("nodes");
    let snap =
        Snapshot { cluster: "bench".into(), jobs: j.jobs, nodes: n.nodes, release: j.release, ..Snapshot::default() };
    merge(snap, state);
}

fn merge(mut snap: Snapshot, state: &mut FleetState) {
    snap.derive_queues();
    state.record_refresh(0, Ok(Arc::new(snap)), 0, Utc::now());
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    // Under `cargo test --all-targets` this binary only checks its inputs, on a small document.
    let (jobs, nodes) = if bench {
        (squeue_doc::build_document(JOBS), nodes_document())
    } else {
        (squeue_doc::build_document(200), nodes_document())
    };
    let mut state = FleetState { clusters: vec![ClusterState::new("bench", "slurm")], ..FleetState::default() };
    refresh(&jobs, &nodes, &mut state);
    let snap = state.clusters[0].snapshot.clone().expect("merged");
    assert_eq!(snap.nodes.len(), NODES);
    assert!(!snap.queues.is_empty());
    if !bench {
        println!("fleet_refresh bench: inputs check out (run `cargo bench --bench fleet_refresh` to measure)");
        return;
    }
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut g = c.benchmark_group("fleet_refresh_50k_jobs_2k_nodes");
    g.bench_function("parse_and_merge", |b| b.iter(|| refresh(black_box(&jobs), black_box(&nodes), &mut state)));
    let parsed = (*snap).clone();
    g.bench_function("merge", |b| b.iter_batched(|| parsed.clone(), |s| merge(s, &mut state), BatchSize::LargeInput));
    g.finish();
    c.final_summary();
}
