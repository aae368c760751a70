//! One Prometheus reading of a large Slurm cluster: 10,000 GPUs on 1,250 nodes, each GPU
//! with the eight dcgm-exporter 4.x metrics the source asks for (utilisation, engine
//! activity, memory used and free, power, temperature, XID, ECC), labelled as
//! `tests/fixtures/telemetry/prometheus/dcgm-4x-slurm.json` is (`hpc_job` on every GPU): the
//! two answers Prometheus would send, byte for byte in form. The identity query's holds
//! 10,000 series with the long labels (what its `group by` keeps: no `DCGM_FI_DRIVER_VERSION`,
//! `device`, `pci_bus_id`, `job`); the values query's 80,000 with `__name__`, `Hostname`, `gpu`.
//!
//! * `parse`          – both answers → one sample per GPU, hosts matched to the snapshot's nodes;
//! * `join`           – the samples joined to the snapshot's 2,500 jobs (`fleet::telemetry::join`);
//! * `parse_and_join` – both: what one reading costs off the UI thread besides the wait.
//!
//! Prints the answers' sizes, the time of each step and the requests one reading takes.
//! Under `cargo test --all-targets` (no `--bench`) the binary only checks, on a small
//! cluster, that every GPU is read and joined; `cargo bench --bench telemetry -- --test`
//! runs each step once at full size.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use criterion::{BatchSize, Criterion};
use flightdeck::backend::telemetry::prometheus::read_answers;
use flightdeck::config::IdleRule;
use flightdeck::fleet::telemetry::{TelemetryMemory, join};
use flightdeck::model::{GpuAllocation, GpuSlot, GpuUse, Job, JobRef, JobState, Node, NodeState, Snapshot, Telemetry};

/// The binary's allocator (`src/main.rs`): what a reading costs depends on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NODES: usize = 1_250;
const GPUS_PER_NODE: usize = 8;
/// Two jobs per node, four GPUs each.
const GPUS_PER_JOB: usize = 4;

const METRICS: [&str; 8] = [
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
];

const RULE: IdleRule = IdleRule { below_percent: 5.0, window: Duration::from_secs(20 * 60) };

fn host(n: usize) -> String {
    format!("gpu{n:04}")
}

fn job_id(node: usize, gpu: usize) -> String {
    format!("{}", 100_000 + node * (GPUS_PER_NODE / GPUS_PER_JOB) + gpu / GPUS_PER_JOB)
}

/// The identity query's answer (`group by`): one series per GPU with every label the
/// query keeps, value 1.
fn identity_answer(nodes: usize) -> String {
    let mut body = String::with_capacity(nodes * GPUS_PER_NODE * 240);
    body.push_str(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    for n in 0..nodes {
        let host = host(n);
        for g in 0..GPUS_PER_NODE {
            if n + g > 0 {
                body.push(',');
            }
            write!(
                body,
                r#"{{"metric":{{"Hostname":"{host}","UUID":"GPU-{n:08x}-{g:04x}-4e3d-2c1b-0a9f8e7d6c5b","gpu":"{g}","hpc_job":"{job}","instance":"{host}.cluster.local:9400","modelName":"NVIDIA H100 80GB HBM3"}},"value":[1767225600.123,"1"]}}"#,
                job = job_id(n, g),
            )
            .unwrap();
        }
    }
    body.push_str("]}}");
    body
}

/// The values query's answer (`max by (__name__, Hostname, gpu)`): series sorted by name,
/// then labels, as Prometheus returns them.
fn values_answer(nodes: usize) -> String {
    let mut body = String::with_capacity(nodes * GPUS_PER_NODE * METRICS.len() * 110);
    body.push_str(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    let mut first = true;
    for metric in METRICS {
        for n in 0..nodes {
            let host = host(n);
            for g in 0..GPUS_PER_NODE {
                let value = match metric {
                    "DCGM_FI_DEV_FB_FREE" => "12402".to_string(),
                    "DCGM_FI_DEV_FB_USED" => "69027".to_string(),
                    "DCGM_FI_DEV_GPU_TEMP" => "64".to_string(),
                    "DCGM_FI_DEV_GPU_UTIL" => "100".to_string(),
                    "DCGM_FI_DEV_POWER_USAGE" => "612.833".to_string(),
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE" => format!("0.{:03}", (n * 7 + g * 131) % 1000),
                    _ => "0".to_string(),
                };
                if !first {
                    body.push(',');
                }
                first = false;
                write!(
                    body,
                    r#"{{"metric":{{"__name__":"{metric}","Hostname":"{host}","gpu":"{g}"}},"value":[1767225600.123,"{value}"]}}"#,
                )
                .unwrap();
            }
        }
    }
    body.push_str("]}}");
    body
}

/// The scheduler's side: the nodes, and two running jobs per node; every other job also
/// carries its device indices (the join's other path).
fn snapshot(nodes: usize) -> Snapshot {
    let mut jobs = Vec::with_capacity(nodes * 2);
    let node_list = (0..nodes)
        .map(|n| {
            for half in 0..GPUS_PER_NODE / GPUS_PER_JOB {
                let mut job = Job::new(JobRef::new("hpc", job_id(n, half * GPUS_PER_JOB)), JobState::Running);
                job.gpus_allocated = GPUS_PER_JOB as u32;
                job.nodes = vec![host(n)];
                let indices = if n % 2 == 0 {
                    ((half * GPUS_PER_JOB) as u32..((half + 1) * GPUS_PER_JOB) as u32).collect()
                } else {
                    Vec::new()
                };
                job.gpu_allocations = vec![GpuAllocation {
                    node: host(n),
                    model: Some("h100".into()),
                    count: GPUS_PER_JOB as u32,
                    indices,
                }];
                jobs.push(job);
            }
            let mut node = Node::new("hpc", host(n), NodeState::Allocated);
            node.gpus = vec![GpuSlot {
                model: "h100".into(),
                gpu_product: Some("NVIDIA H100 80GB HBM3".into()),
                shared: false,
                total: GPUS_PER_NODE as u32,
                allocated: GPUS_PER_NODE as u32,
                unhealthy: 0,
                utilisation: None,
            }];
            node
        })
        .collect();
    Snapshot { cluster: "hpc".into(), jobs, nodes: node_list, ..Snapshot::default() }
}

fn at() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap()
}

fn parse(answers: &Answers, snapshot: &Snapshot) -> Telemetry {
    let reading =
        read_answers(&[answers.identity.as_bytes(), answers.values.as_bytes()], snapshot).expect("valid answers");
    Telemetry { taken_at: at(), source: "prometheus bench".into(), gpus: reading.gpus, notes: reading.notes }
}

fn parse_and_join(body: &Answers, snapshot: &Snapshot, memory: &mut TelemetryMemory) -> GpuUse {
    join(snapshot, parse(body, snapshot), memory, RULE)
}

/// One reading's two answers.
struct Answers {
    identity: String,
    values: String,
}

/// Every GPU read, on its node, and in a job; every job measured on all its GPUs.
fn check(nodes: usize, used: &GpuUse, reading: &Telemetry) {
    assert!(reading.notes.is_empty(), "{:?}", reading.notes);
    assert_eq!(used.gpus.len(), nodes * GPUS_PER_NODE);
    assert!(used.gpus.iter().all(|g| g.job.is_some()), "every GPU joined to its job");
    assert_eq!(used.jobs.len(), nodes * GPUS_PER_NODE / GPUS_PER_JOB);
    assert!(used.jobs.iter().all(|j| j.gpus == GPUS_PER_JOB as u32 && j.mean_utilisation.is_some()));
}

/// The median of `rounds` runs of `f`, each on a fresh input from `setup` (not timed).
fn median<I>(rounds: usize, mut setup: impl FnMut() -> I, mut f: impl FnMut(I)) -> Duration {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let input = setup();
            let started = Instant::now();
            f(input);
            started.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--test");
    let nodes = if bench { NODES } else { 25 };
    let body = Answers { identity: identity_answer(nodes), values: values_answer(nodes) };
    let snap = snapshot(nodes);
    let reading = parse(&body, &snap);
    let used = join(&snap, reading.clone(), &mut TelemetryMemory::default(), RULE);
    check(nodes, &used, &reading);
    if !bench {
        println!("telemetry bench: inputs check out (run `cargo bench --bench telemetry` to measure)");
        return;
    }
    let gpus = nodes * GPUS_PER_NODE;
    let rounds = if quick { 1 } else { 15 };
    let mut memory = TelemetryMemory::default();
    let parse_time = median(
        rounds,
        || (),
        |()| {
            black_box(parse(black_box(&body), &snap));
        },
    );
    let join_time = median(
        rounds,
        || reading.clone(),
        |r| {
            black_box(join(&snap, black_box(r), &mut memory, RULE));
        },
    );
    let both = median(
        rounds,
        || (),
        |()| {
            black_box(parse_and_join(black_box(&body), &snap, &mut memory));
        },
    );
    println!(
        "prometheus: {gpus} GPUs on {nodes} nodes, {gpus} + {} series, answers {:.1} + {:.1} MB: parse \
         {parse_time:.2?}, join {join_time:.2?}, parse + join {both:.2?} (median of {rounds}); 2 requests per \
         reading (3 if the selector is refused)",
        gpus * METRICS.len(),
        body.identity.len() as f64 / 1e6,
        body.values.len() as f64 / 1e6,
    );
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut g = c.benchmark_group("prometheus_10k_gpus_1250_nodes");
    g.bench_function("parse", |b| b.iter(|| parse(black_box(&body), &snap)));
    g.bench_function("join", |b| {
        let mut memory = TelemetryMemory::default();
        b.iter_batched(|| reading.clone(), |r| join(&snap, r, &mut memory, RULE), BatchSize::LargeInput)
    });
    g.bench_function("parse_and_join", |b| {
        let mut memory = TelemetryMemory::default();
        b.iter(|| parse_and_join(black_box(&body), &snap, &mut memory))
    });
    g.finish();
    c.final_summary();
}
