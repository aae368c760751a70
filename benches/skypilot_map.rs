//! Parsing and mapping a large SkyPilot fleet: 500 clusters (`/status`), 500 cluster queues
//! of 3 jobs each (`/queue`), 1,000 managed jobs (`/jobs/queue/v2`), as the server sends them
//! (records from `tests/fixtures/skypilot/recorded/`, whose `return_value` is a JSON string
//! decoded twice).
//!
//! * `status_500` – the request record → clusters → nodes (1,000 nodes, GPU slots);
//! * `queues_500` – 500 queue records → 1,500 jobs;
//! * `managed_1000` – the managed-jobs record → 1,000 jobs.
//!
//! Printed: cost per 1,000 records, and what one refresh costs in requests (`2 + UP
//! clusters` operations, each a POST and a GET /api/get). Under `cargo test --all-targets`
//! (no `--bench`) the binary only checks the inputs map as expected, on a small fleet.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use flightdeck::backend::skypilot::map::{self, ClusterJobRecord, ClusterRecord, ManagedJobRecord};
use flightdeck::backend::skypilot::request::{Record, outcome};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/skypilot/recorded");

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture")).expect("json")
}

/// A request record (as `/api/get` sends it) whose return value is `n` copies of the first
/// item of `name`'s list (or its `jobs` list), each made distinct by `key`.
fn scaled(name: &str, n: usize, key: &str) -> Vec<u8> {
    let mut record = fixture(name);
    let value: Value = serde_json::from_str(record["return_value"].as_str().expect("a string")).expect("json");
    let (template, wrap) = match &value {
        Value::Array(items) => (items[0].clone(), false),
        other => (other["jobs"][0].clone(), true),
    };
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let mut item = template.clone();
            item[key] = if key == "name" { json!(format!("c{i:04}")) } else { json!(i) };
            item
        })
        .collect();
    let value = if wrap { json!({"jobs": items, "total": n}) } else { Value::Array(items) };
    record["return_value"] = Value::String(value.to_string());
    serde_json::to_vec(&record).expect("bytes")
}

fn decode(bytes: &[u8]) -> Value {
    let record: Record = serde_json::from_slice(bytes).expect("a record");
    outcome("bench", record).expect("succeeded")
}

fn status(bytes: &[u8]) -> (Vec<ClusterRecord>, Vec<flightdeck::model::Node>) {
    let clusters = map::records::<ClusterRecord>(decode(bytes)).records;
    let nodes = map::nodes("sky", &clusters, &[]);
    (clusters, nodes)
}

fn queues(bytes: &[u8], clusters: &[ClusterRecord]) -> usize {
    clusters
        .iter()
        .map(|c| map::cluster_jobs("sky", c, &map::records::<ClusterJobRecord>(decode(bytes)).records).len())
        .sum()
}

fn managed(bytes: &[u8]) -> usize {
    map::managed_jobs("sky", &map::records::<ManagedJobRecord>(decode(bytes)).records).len()
}

fn per_1000(took: Duration, records: usize) -> Duration {
    took.mul_f64(1000.0 / records as f64)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n_clusters, n_managed) = if bench { (500, 1000) } else { (20, 40) };
    let status_bytes = scaled("status_up_gpus.json", n_clusters, "name");
    let queue_bytes = fixture("queue_running.json").to_string().into_bytes();
    let managed_bytes = scaled("jobs_queue_v2_running.json", n_managed, "job_id");

    let (clusters, nodes) = status(&status_bytes);
    assert_eq!(clusters.len(), n_clusters);
    assert_eq!(nodes.len(), 2 * n_clusters, "two nodes per recorded cluster");
    assert_eq!(queues(&queue_bytes, &clusters), 3 * n_clusters);
    assert_eq!(managed(&managed_bytes), n_managed);
    if !bench {
        println!("skypilot_map bench: inputs check out (run `cargo bench --bench skypilot_map` to measure)");
        return;
    }

    let rounds = 20;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(status(black_box(&status_bytes)));
    }
    let status_took = t.elapsed() / rounds;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(queues(black_box(&queue_bytes), &clusters));
    }
    let queues_took = t.elapsed() / rounds;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(managed(black_box(&managed_bytes)));
    }
    let managed_took = t.elapsed() / rounds;
    let up = clusters.iter().filter(|c| c.is_up() && !c.is_controller()).count();
    println!(
        "skypilot_map: {n_clusters} clusters {status_took:?} ({:?} per 1,000), {} cluster jobs in {n_clusters} queues {queues_took:?} ({:?} per 1,000), {n_managed} managed jobs {managed_took:?} ({:?} per 1,000); one refresh of this fleet: {} operations = {} HTTP requests",
        per_1000(status_took, n_clusters),
        3 * n_clusters,
        per_1000(queues_took, 3 * n_clusters),
        per_1000(managed_took, n_managed),
        2 + up,
        2 * (2 + up),
    );

    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut g = c.benchmark_group("skypilot_map");
    g.bench_function("status_500", |b| b.iter(|| status(black_box(&status_bytes))));
    g.bench_function("queues_500", |b| b.iter(|| queues(black_box(&queue_bytes), &clusters)));
    g.bench_function("managed_1000", |b| b.iter(|| managed(black_box(&managed_bytes))));
    g.finish();
    c.final_summary();
}
