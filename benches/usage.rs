//! Who holds the GPUs, over a busy fleet: 50,000 jobs in four clusters' snapshots (40,000
//! running with GPUs on 2,000 users in 200 accounts, a telemetry reading covering half the
//! clusters, cloud runs with prices) plus 10,000 finished records in a 7-day window: what
//! `flightdeck usage` and the cockpit compute once the fleet has its picture (the issue's
//! goal: under 20 ms).
//!
//! Under `cargo test --all-targets` (no `--bench`) the binary only checks, on 500 jobs and
//! 100 records, that every GPU and GPU-hour is counted once.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use criterion::Criterion;
use flightdeck::model::usage::{UsageAsk, UsageBy, WindowSource, compute};
use flightdeck::model::{
    ClusterState, FleetState, GpuAllocation, GpuUse, Job, JobGpuUse, JobRecord, JobRef, JobState, Snapshot,
};

/// As the binary (`src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLUSTERS: [&str; 4] = ["fd22", "fd24", "k8s", "sky"];
const MODELS: [&str; 4] = ["h100", "a100-80gb", "l40s", "h200"];

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z").unwrap().with_timezone(&Utc)
}

fn job(cluster: &str, i: usize) -> Job {
    let mut j = Job::new(JobRef::new(cluster, i.to_string()), JobState::Running);
    j.user = format!("user{}", i % 2_000);
    j.account = Some(format!("acct{}", i % 200));
    j.partition = "gpu".into();
    let gpus = 1 + (i % 8) as u32;
    j.gpus_allocated = gpus;
    j.gpus_requested = gpus;
    let model = MODELS[i % MODELS.len()];
    j.gpu_model = Some(model.into());
    j.gpu_allocations = vec![GpuAllocation {
        node: format!("n{:04}", i % 5_000),
        model: Some(model.into()),
        count: gpus,
        indices: vec![],
    }];
    j.start_time = Some(now() - TimeDelta::minutes((i % 20_000) as i64));
    if cluster == "sky" {
        j.cost_per_hour = Some(2.5 * f64::from(gpus));
    }
    if i.is_multiple_of(5) {
        j.state = JobState::Pending;
        j.gpus_allocated = 0;
        j.gpu_allocations.clear();
    }
    j
}

fn fleet(jobs: usize) -> (FleetState, usize, u64) {
    let (mut held, mut gpus) = (0usize, 0u64);
    let per = jobs / CLUSTERS.len();
    let clusters = CLUSTERS
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let jobs: Vec<Job> = (c * per..(c + 1) * per).map(|i| job(name, i)).collect();
            held += jobs.iter().filter(|j| j.gpus_allocated > 0).count();
            gpus += jobs.iter().map(|j| u64::from(j.gpus_allocated)).sum::<u64>();
            let mut state = ClusterState::new(*name, if *name == "k8s" { "kubernetes" } else { "slurm" });
            if c < 2 {
                let mut used: Vec<JobGpuUse> = jobs
                    .iter()
                    .filter(|j| j.gpus_allocated > 0)
                    .map(|j| JobGpuUse {
                        job: j.job_ref.id.clone(),
                        gpus: j.gpus_allocated,
                        mean_utilisation: Some((j.gpus_allocated * 13 % 100) as f32),
                        // Some read low for a while: idle GPU-hours to sum.
                        below_since: j.job_ref.id.ends_with('3').then(|| now() - TimeDelta::minutes(10)),
                        idle: false,
                    })
                    .collect();
                used.sort_by(|a, b| a.job.cmp(&b.job));
                state.gpu_use = Some(Arc::new(GpuUse {
                    taken_at: now(),
                    source: "bench".into(),
                    gpus: vec![],
                    jobs: used,
                    notes: vec![],
                }));
            }
            let snapshot = Snapshot { cluster: name.to_string(), jobs, ..Snapshot::default() };
            state.snapshot = Some(Arc::new(snapshot));
            state
        })
        .collect();
    (FleetState { clusters, read_only: false, version: 1 }, held, gpus)
}

/// Finished jobs of the window, each 1 h × 4 GPUs, ending over the last 6 days.
fn records(n: usize) -> Vec<JobRecord> {
    (0..n)
        .map(|i| {
            let mut j = job("fd22", 1_000_000 + i);
            j.state = JobState::Completed;
            j.gpus_allocated = 4;
            j.gpu_allocations[..].iter_mut().for_each(|a| a.count = 4);
            if j.gpu_allocations.is_empty() {
                j.gpu_model = Some("h100".into());
            }
            let end = now() - TimeDelta::seconds((i * 50) as i64);
            j.end_time = Some(end);
            j.start_time = Some(end - TimeDelta::hours(1));
            JobRecord::from_job(j)
        })
        .collect()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (jobs, finished) = if bench { (50_000, 10_000) } else { (500, 100) };
    let (state, held, gpus) = fleet(jobs);
    let records = records(finished);
    let sources: Vec<WindowSource> = CLUSTERS
        .iter()
        .map(|c| WindowSource { cluster: c, records: if *c == "fd22" { &records } else { &[] }, gap: None })
        .collect();
    let ask = |by| UsageAsk {
        by,
        now: now(),
        window: Some((now() - TimeDelta::days(7), &sources[..])),
        idle_below_percent: Some(5.0),
    };
    for by in [UsageBy::User, UsageBy::Account, UsageBy::Cluster, UsageBy::Model] {
        let u = compute(&state, &ask(by));
        assert_eq!(u.total.gpus_now as u64, gpus, "{by:?}");
        assert_eq!(u.rows.iter().map(|r| u64::from(r.gpus_now)).sum::<u64>(), gpus, "{by:?}: every GPU once");
        assert_eq!(u.rows.iter().map(|r| r.jobs_now as usize).sum::<usize>(), held, "{by:?}");
        let hours: f64 = u.rows.iter().map(|r| r.gpu_hours.unwrap()).sum();
        assert!((hours - u.total.gpu_hours.unwrap()).abs() < 1e-6 * hours, "{by:?}: every GPU-hour once");
        let idle: f64 = u.rows.iter().map(|r| r.idle_gpu_hours_at_least.unwrap()).sum();
        let total_idle = u.total.idle_gpu_hours_at_least.unwrap();
        assert!(total_idle > 0.0 && (idle - total_idle).abs() < 1e-6 * idle, "{by:?}: every idle GPU-hour once");
        assert!(u.rows.windows(2).all(|w| w[0].gpus_now >= w[1].gpus_now), "{by:?}: most held first");
    }
    if !bench {
        println!("usage bench: inputs check out (run `cargo bench --bench usage` to measure)");
        return;
    }
    println!("usage: {jobs} jobs ({held} holding {gpus} GPUs) + {finished} finished records");
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    c.bench_function("usage_50k_jobs_10k_records/by_user", |b| {
        b.iter(|| compute(black_box(&state), &ask(UsageBy::User)))
    });
    c.bench_function("usage_50k_jobs_10k_records/by_model", |b| {
        b.iter(|| compute(black_box(&state), &ask(UsageBy::Model)))
    });
    c.final_summary();
}
