//! Placement advice at scale: 10,000 nodes and 100,000 jobs over four clusters (two Slurm
//! with three partitions each, a Kubernetes cluster with a Kueue quota, a priced dstack
//! project).
//!
//! * `advise/h100x8`         – a one-node spec for a model most nodes have;
//! * `advise/h100x8_4nodes`  – the same on four nodes;
//! * `advise/kueue_queue`    – a spec naming the Kubernetes cluster's queue (quota checked);
//! * `advise/missing_model`  – a model no node has (every cluster walks everything, finds nothing).
//!
//! * `pending_index/build`   – counting the pending jobs of a state (once per state);
//! * `edit/h100x8`           – an advice over counts made beforehand: what the cockpit's
//!   submit form pays per edit of the spec (a new state costs `pending_index/build` once more).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use criterion::Criterion;
use flightdeck::fleet::advice::{Options, PendingIndex, Verdict, advise, advise_indexed};
use flightdeck::fleet::{ClusterState, FleetState};
use flightdeck::model::{GpuSlot, Health, Job, JobRef, JobState, Node, NodeState, Queue, QueueQuota, Snapshot};
use flightdeck::spec::JobSpec;

const NODES: usize = 10_000;
const JOBS: usize = 100_000;

fn fleet() -> FleetState {
    let at = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap();
    // (name, kind, share of nodes and jobs in tenths)
    let clusters = [("hpc", "slurm", 4), ("lab", "slurm", 3), ("k8s", "kubernetes", 2), ("cloud", "dstack", 1)];
    let models = ["h100", "a100", "l40s"];
    let partitions = ["gpu", "long", "debug"];
    let clusters = clusters
        .iter()
        .map(|(name, kind, tenths)| {
            let nodes: Vec<Node> = (0..NODES * tenths / 10)
                .map(|i| {
                    let state = match i % 50 {
                        0 => NodeState::Drained,
                        1 => NodeState::Down,
                        _ => NodeState::Mixed,
                    };
                    let mut n = Node::new(*name, format!("gpu{i:05}"), state);
                    n.gpus = vec![GpuSlot {
                        model: models[i % 3].into(),
                        gpu_product: None,
                        shared: false,
                        total: 8,
                        allocated: (i % 9) as u32,
                        unhealthy: u32::from(i % 97 == 0),
                        utilisation: None,
                    }];
                    n.cpus_total = 128;
                    n.cpus_allocated = (i % 9) as u32 * 16;
                    n.memory_total_mb = 1 << 20;
                    n.partitions = if *kind == "slurm" {
                        vec![partitions[i % 3].into(), "all".into()]
                    } else {
                        vec![format!("pool-{}", i % 4)]
                    };
                    if *kind == "dstack" {
                        n.cost_per_hour = Some(20.0 + (i % 13) as f64);
                    }
                    n
                })
                .collect();
            let jobs: Vec<Job> = (0..JOBS * tenths / 10)
                .map(|i| {
                    let state = if i % 3 == 0 { JobState::Pending } else { JobState::Running };
                    let mut j = Job::new(JobRef::new(*name, (1_000_000 + i).to_string()), state);
                    j.partition = if *kind == "slurm" {
                        if i % 7 == 0 { "gpu,long".into() } else { partitions[i % 3].into() }
                    } else {
                        "team-a".into()
                    };
                    j.gpus_requested = 8;
                    j.gpu_model = Some(models[i % 3].into());
                    j
                })
                .collect();
            let mut snap =
                Snapshot { cluster: name.to_string(), taken_at: Some(at), jobs, nodes, ..Snapshot::default() };
            snap.derive_queues();
            if *kind == "kubernetes" {
                snap.queues.push(Queue {
                    cluster: name.to_string(),
                    name: "team-a".into(),
                    quota: vec![QueueQuota {
                        flavor: "default".into(),
                        resource: "nvidia.com/gpu".into(),
                        nominal_milli: 4096 * 1000,
                        borrowing_limit_milli: None,
                        used_milli: 2048 * 1000,
                        borrowed_milli: 0,
                    }],
                    ..Queue::default()
                });
            }
            ClusterState {
                health: Health::Fresh { at },
                snapshot: Some(Arc::new(snap)),
                attempts: 1,
                capabilities: flightdeck::backend::Registry::builtin()
                    .capabilities(&(*kind).into())
                    .expect("a shipped kind"),
                placement: flightdeck::backend::Registry::builtin().placement(&(*kind).into()),
                ..ClusterState::new(*name, *kind)
            }
        })
        .collect();
    FleetState { clusters, read_only: false, version: 1 }
}

fn spec(gpus: u32, model: &str) -> JobSpec {
    JobSpec {
        name: "train".into(),
        command: Some("python train.py".into()),
        gpus,
        gpu_type: Some(model.into()),
        image: Some("nvcr.io/nvidia/pytorch:24.01-py3".into()),
        ..JobSpec::default()
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let state = fleet();
    let nodes: usize = state.clusters.iter().filter_map(|c| c.snapshot.as_ref()).map(|s| s.nodes.len()).sum();
    let jobs: usize = state.clusters.iter().filter_map(|c| c.snapshot.as_ref()).map(|s| s.jobs.len()).sum();
    assert_eq!((nodes, jobs), (NODES, JOBS));
    let one = spec(8, "h100");
    let four = JobSpec { nodes: Some(4), ..one.clone() };
    let queue = JobSpec { partition: Some("team-a".into()), ..spec(4, "a100") };
    let missing = spec(1, "b200");
    // Checked on every run (also under `cargo test`): the inputs give the answers they should.
    let advice = advise(&state, &one);
    for a in &advice {
        println!("{a}");
    }
    assert_eq!(advice[0].verdict, Verdict::Now);
    assert_eq!(advise_indexed(&state, &PendingIndex::of(&state), &one, &Options::default()), advice);
    assert!(advise(&state, &missing).iter().all(|a| a.verdict != Verdict::Now));
    assert!(advise(&state, &queue).iter().any(|a| a.cluster == "k8s" && a.partition.as_deref() == Some("team-a")));
    if !bench {
        println!("advice bench: inputs check out (run `cargo bench --bench advice` to measure)");
        return;
    }
    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut g = c.benchmark_group("advice_100k_jobs_10k_nodes");
    g.bench_function("advise/h100x8", |b| b.iter(|| advise(black_box(&state), black_box(&one))));
    g.bench_function("advise/h100x8_4nodes", |b| b.iter(|| advise(black_box(&state), black_box(&four))));
    g.bench_function("advise/kueue_queue", |b| b.iter(|| advise(black_box(&state), black_box(&queue))));
    g.bench_function("advise/missing_model", |b| b.iter(|| advise(black_box(&state), black_box(&missing))));
    g.bench_function("pending_index/build", |b| b.iter(|| PendingIndex::of(black_box(&state))));
    let pending = PendingIndex::of(&state);
    let opts = Options::default();
    g.bench_function("edit/h100x8", |b| {
        b.iter(|| advise_indexed(black_box(&state), black_box(&pending), black_box(&one), &opts))
    });
    g.finish();
    c.final_summary();
}
