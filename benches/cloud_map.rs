//! Parsing and mapping a large dstack project: 5,000 runs (in 50 `runs/list` pages of 100,
//! as the adapter reads them) and 500 instances, from the recorded RUNNING run and busy
//! instance of `tests/fixtures/dstack/`.
//!
//! * `parse_and_map` – the 50 page bodies decoded (JSON text → values → typed records) and
//!   mapped into one snapshot (jobs, nodes, fleets as queues): everything a refresh does
//!   off the UI thread besides waiting for the server.
//!
//! Prints the cost per 1,000 runs and the requests one refresh takes (50 pages of runs, one
//! of fleets, one of instances). Under `cargo test --all-targets` (no `--bench`) the binary
//! only checks, on a small project, that every run and instance is mapped.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use flightdeck::backend::dstack::api::RUNS_PAGE;
use flightdeck::backend::dstack::map::{self, Fleet, Instance, Run};
use serde_json::{Value, json};

const RUNS: usize = 5_000;
const INSTANCES: usize = 500;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/dstack/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The page bodies as the server sends them.
fn pages(runs: usize, instances: usize) -> (Vec<String>, String, String) {
    let run = fixture("runs-running.json")[0].clone();
    let inst = fixture("instances.json")[0].clone();
    let all: Vec<Value> = (0..runs)
        .map(|i| {
            let mut r = run.clone();
            r["id"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
            r["run_spec"]["run_name"] = json!(format!("run-{i}"));
            r["jobs"][0]["job_spec"]["job_name"] = json!(format!("run-{i}-0-0"));
            if i % 3 != 0 {
                r["status"] = json!(["pending", "failed", "done"][i % 3]);
            }
            r
        })
        .collect();
    let pages = all.chunks(RUNS_PAGE).map(|p| serde_json::to_string(p).unwrap()).collect();
    let insts: Vec<Value> = (0..instances)
        .map(|i| {
            let mut x = inst.clone();
            x["name"] = json!(format!("fleet-{}-{i}", i % 5));
            x["fleet_name"] = json!(format!("fleet-{}", i % 5));
            x["job_name"] = json!(format!("run-{}-0-0", i * 3));
            x
        })
        .collect();
    (pages, serde_json::to_string(&insts).unwrap(), fixture("fleets.json").to_string())
}

fn parse_and_map(pages: &[String], instances: &str, fleets: &str) -> flightdeck::model::Snapshot {
    let mut runs: Vec<Run> = Vec::new();
    for page in pages {
        let values: Vec<Value> = serde_json::from_str(page).unwrap();
        runs.extend(map::records::<Run>(values).0);
    }
    let instances: Vec<Instance> = map::records(serde_json::from_str(instances).unwrap()).0;
    let fleets: Vec<Fleet> = map::records(serde_json::from_str(fleets).unwrap()).0;
    map::snapshot("dstack", &runs, &fleets, &instances)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n_runs, n_instances) = if bench { (RUNS, INSTANCES) } else { (250, 25) };
    let (pages, instances, fleets) = pages(n_runs, n_instances);
    let snap = parse_and_map(&pages, &instances, &fleets);
    assert_eq!((snap.jobs.len(), snap.nodes.len()), (n_runs, n_instances));
    assert!(snap.jobs.iter().filter(|j| j.state.is_active()).all(|j| j.cost_per_hour.is_some()));
    let requests = pages.len() + 2;
    if !bench {
        println!("cloud_map bench: inputs check out (run `cargo bench --bench cloud_map` to measure)");
        return;
    }
    let started = Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        black_box(parse_and_map(&pages, &instances, &fleets));
    }
    let per_thousand = started.elapsed() / rounds / (RUNS as u32 / 1000);
    println!(
        "dstack: {RUNS} runs + {INSTANCES} instances parsed and mapped: {per_thousand:?} per 1,000 runs; {requests} requests per refresh ({} runs/list pages, fleets/list, instances/list)",
        pages.len()
    );
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut g = c.benchmark_group("dstack_5k_runs");
    g.bench_function("parse_and_map", |b| b.iter(|| parse_and_map(black_box(&pages), &instances, &fleets)));
    g.finish();
    c.final_summary();
}
