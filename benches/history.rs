//! A day of finished jobs on a busy cluster: 10,000 jobs, each with its batch step and one
//! srun step, as `sacct -n -P --delimiter=MARK -o SACCT_FIELDS` prints them (the test bed's
//! real lines, in form), read into records with steps folded in and sorted newest end
//! first: what the history view costs off the UI thread once sacct has answered (one call;
//! slurmdbd's own time is not ours to measure here).
//!
//! Under `cargo test --all-targets` (no `--bench`) the binary only checks, on 100 jobs,
//! that every job is read with its steps' memory.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use flightdeck::backend::slurm::parse::sacct::parse_sacct;
use flightdeck::model::{History, JobState};

/// As the binary (`src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const JOBS: usize = 10_000;
const MARK: &str = "fd0123456789abcdef";

fn sacct_output(jobs: usize) -> String {
    let mut out = String::with_capacity(jobs * 3 * 220);
    for i in 0..jobs {
        let id = 100_000 + i;
        let (state, exit) = match i % 10 {
            0 => ("FAILED", "3:0"),
            1 => ("CANCELLED by 1000", "0:15"),
            2 => ("TIMEOUT", "0:0"),
            _ => ("COMPLETED", "0:0"),
        };
        let node = format!("gpu{:04}", i % 1_250);
        let (h, m, s) = (i / 3_600 % 24, i / 60 % 60, i % 60);
        let end = format!("2026-12-04T{h:02}:{m:02}:{s:02}");
        let start = "2026-12-03T23:00:00";
        let tres = "billing=16,cpu=16,gres/gpu:h100=4,gres/gpu=4,mem=64000M,node=1";
        let mut field = |fields: &[&str]| {
            out.push_str(&fields.join(MARK));
            out.push('\n');
        };
        let id_s = id.to_string();
        let name = format!("train-llama-{i}");
        field(&[&id_s, state, exit, "alice", "ml", "gpu", start, start, &end, "3600", "1", &node, tres, "", &name]);
        let batch = format!("{id}.batch");
        field(&[&batch, state, exit, "", "ml", "", start, start, &end, "3600", "1", &node, tres, "10784K", "batch"]);
        let step = format!("{id}.0");
        let rss = format!("{}M", 1_000 + i % 7_000);
        field(&[&step, state, exit, "", "ml", "", start, start, &end, "3599", "1", &node, tres, &rss, "python"]);
    }
    out
}

fn load(text: &str) -> History {
    let (records, dropped) = parse_sacct("hpc", text, MARK).expect("sacct output");
    assert_eq!(dropped, 0);
    History::newest("sacct", records, JOBS)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let jobs = if bench { JOBS } else { 100 };
    let text = sacct_output(jobs);
    let history = load(&text);
    assert_eq!(history.records.len(), jobs);
    assert!(history.records.iter().all(|r| r.max_rss_mb.is_some() && r.gpu_hours == Some(4.0)));
    assert_eq!(history.records.iter().filter(|r| r.job.state == JobState::Failed).count(), jobs / 10);
    if !bench {
        println!("history bench: inputs check out (run `cargo bench --bench history` to measure)");
        return;
    }
    println!("history: {jobs} jobs, {} sacct lines, {:.1} MB of output", jobs * 3, text.len() as f64 / 1e6);
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    c.bench_function("history_10k_jobs/parse_fold_sort", |b| b.iter(|| load(black_box(&text))));
    c.final_summary();
}
