//! Finished jobs from Slurm's accounting (slurmdbd + MariaDB on the test bed), on both
//! releases: a job that completed, one that failed with exit 3, one cancelled, each read
//! back by one `sacct` call with its end, exit code, elapsed time, steps' max RSS and GPU
//! hours, through the backend and through `flightdeck jobs --since`; and what a history
//! costs the controller (`sdiag`: nothing, sacct asks slurmdbd).

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use chrono::Utc;
use flightdeck::backend::Backend;
use flightdeck::backend::slurm::script::parse_sbatch_output;
use flightdeck::model::{ExitStatus, History, HistoryQuery, JobState};
use serde_json::Value;

use common::*;

async fn submit(cluster: &str, name: &str, extra: &[&str], wrap: &str) -> String {
    let b = backend(cluster);
    let name = format!("--job-name={name}");
    let wrap = format!("--wrap={wrap}");
    let mut argv = vec!["sbatch", "--parsable", &name, "--output=/dev/null", "--chdir=/tmp", "--partition=gpu"];
    argv.extend_from_slice(extra);
    argv.push(&wrap);
    parse_sbatch_output(&remote(&b, &argv).await).expect("a job id")
}

/// Until every job is in the history under its own name: slurmdbd hears of a job's end a
/// moment after it ends, and 22.05 records a job that started quickly under the name
/// `allocation` for a few seconds more.
async fn history_with(cluster: &str, query: &HistoryQuery, jobs: &[(&str, &str)]) -> History {
    let b = backend(cluster);
    let started = Instant::now();
    loop {
        let history = b.history(query).await.expect("sacct").expect("Slurm keeps a history");
        let all = jobs
            .iter()
            .all(|(id, name)| history.records.iter().any(|r| r.job.job_ref.id == *id && r.job.name == *name));
        if all || started.elapsed() > Duration::from_secs(90) {
            return history;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn ended_jobs_come_back_from_accounting_with_what_they_used(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let since = Utc::now() - chrono::TimeDelta::minutes(1);
    let run = format!("fd-hist-{}", std::process::id());
    let gres = "--gres=gpu:1";
    let names = [format!("{run}-ok"), format!("{run}-fail|;$(x)"), format!("{run}-cancel")];
    let done = submit(cluster, &names[0], &[gres], "srun sleep 7").await;
    let failed = submit(cluster, &names[1], &[], "exit 3").await;
    let cancelled = submit(cluster, &names[2], &[gres], "sleep 120").await;
    let b = backend(cluster);
    // Cancelled once it runs, so it ends CANCELLED with an allocation.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let state = remote(&b, &["squeue", "-h", "-j", &cancelled, "-o", "%T"]).await;
        if state.trim() == "RUNNING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    remote(&b, &["scancel", &cancelled]).await;

    let query = HistoryQuery { since, user: None, states: vec![], limit: 10_000 };
    let jobs = [(done.as_str(), names[0].as_str()), (&failed, &names[1]), (&cancelled, &names[2])];
    let history = history_with(cluster, &query, &jobs).await;
    assert_eq!(history.source, "sacct");
    let record = |id: &str| {
        history.records.iter().find(|r| r.job.job_ref.id == id).unwrap_or_else(|| panic!("{id} in {history:?}"))
    };
    let ok = record(&done);
    assert_eq!((ok.job.state, ok.job.exit), (JobState::Completed, Some(ExitStatus { code: 0, signal: None })));
    assert_eq!(ok.job.name, format!("{run}-ok"));
    assert!(ok.elapsed_secs.is_some_and(|s| s >= 7), "{ok:?}");
    assert_eq!(ok.job.gpus_allocated, 1, "AllocTRES lists the GPU: {ok:?}");
    assert!(ok.gpu_hours.is_some_and(|h| h > 0.0), "{ok:?}");
    // Memory is sampled every 5 s (JobAcctGatherFrequency): the 7 s step was measured.
    assert!(ok.max_rss_mb.is_some(), "the srun step measured memory: {ok:?}");
    assert!(ok.job.end_time.is_some_and(|end| end >= since) && !ok.job.nodes.is_empty(), "{ok:?}");
    let bad = record(&failed);
    assert_eq!((bad.job.state, bad.job.exit), (JobState::Failed, Some(ExitStatus { code: 3, signal: None })));
    assert_eq!(bad.job.name, format!("{run}-fail|;$(x)"), "the name whole, separator and all");
    let gone = record(&cancelled);
    assert_eq!(gone.job.state, JobState::Cancelled, "{gone:?}");
    assert!(gone.job.reason.as_deref().is_some_and(|r| r.starts_with("cancelled by uid ")), "{gone:?}");
    // Newest end first.
    assert!(history.records.windows(2).all(|w| w[0].job.end_time >= w[1].job.end_time));

    // One state asked for: only those.
    let failures = HistoryQuery { states: vec![JobState::Failed], ..query.clone() };
    let history = b.history(&failures).await.unwrap().unwrap();
    assert!(history.records.iter().all(|r| r.job.state == JobState::Failed), "{history:?}");
    assert!(history.records.iter().any(|r| r.job.job_ref.id == failed));

    // The binary: `jobs --since` prints the same records as JSON.
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string()])
        .args(["jobs", "--cluster", cluster, "--since", "10m", "--state", "failed,completed", "--output", "json"])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).cloned();
    let ok_row = row(&done).unwrap_or_else(|| panic!("{done} in {rows:?}"));
    assert_eq!((ok_row["state"].as_str(), ok_row["exit_code"].as_i64()), (Some("completed"), Some(0)));
    assert!(ok_row["gpu_hours"].as_f64().is_some_and(|h| h > 0.0) && ok_row["elapsed_secs"].as_u64().is_some());
    assert_eq!(row(&failed).map(|r| r["exit_code"].clone()), Some(Value::from(3)));
    assert!(row(&cancelled).is_none(), "cancelled was not asked for");
}

/// A history asks slurmdbd, not slurmctld: the controller's query counters do not move.
async fn a_history_costs_the_controller_nothing(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let _quiet = cluster_quiet(cluster);
    let b = backend(cluster);
    let query = HistoryQuery::recent(Utc::now());
    b.history(&query).await.expect("warm up");
    let before = b.rpc_counts().await.expect("sdiag");
    for _ in 0..3 {
        b.history(&query).await.expect("sacct");
    }
    let after = b.rpc_counts().await.expect("sdiag");
    let used = after.queries_since(&before);
    // Fewer than one per history: none of them costs one (scenarios that only read the
    // cluster wait on the quiet lock; its own slurmctld may still count a background RPC).
    assert!(used < 3, "{used} controller query RPCs for three histories on {cluster}");
}

on_both_clusters!(ended_jobs_come_back_from_accounting_with_what_they_used, a_history_costs_the_controller_nothing);
