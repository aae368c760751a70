//! Placement advice and start estimates against the Slurm test bed, both releases (22.05 and
//! 24.11): `sbatch --test-only` and `squeue --start` read back into a time that is really
//! in the future, and `flightdeck advise` ranking a cluster with free GPUs of the model as
//! `now` (for a job file and for a live job), and the scheduler's refusal overruling the
//! snapshot's hope.

use crate::common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use chrono::Utc;
use flightdeck::backend::Backend;
use flightdeck::model::{JobRef, JobState};
use flightdeck::spec::JobSpec;
use serde_json::Value;

use common::*;

fn job_spec(name: &str, gpus: u32, model: &str, minutes: u32) -> JobSpec {
    JobSpec {
        name: name.into(),
        command: Some("sleep 600".into()),
        gpus,
        gpu_type: Some(model.into()),
        time_limit: Some(minutes.to_string()),
        workdir: Some("/tmp".into()),
        ..JobSpec::default()
    }
}

/// Both h100 of the cluster's h100-01 taken by one 10-minute job, a second one pending
/// behind it: the scheduler's estimates for a spec like the second, and for the second
/// itself, are about ten minutes out, read as UTC.
async fn estimates_on(cluster: &'static str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let name = format!("fd-advice-{}-{cluster}", std::process::id());
    let _cleanup = CancelByName { cluster, name: name.clone() };

    // Nothing submitted by a test: the cluster answers for an idle h100 at once.
    let probe = job_spec(&name, 1, "h100", 5);
    let e = b.estimate_start(&probe).await.expect("sbatch --test-only").expect("an estimate");
    let now = Utc::now();
    assert!((e.at - now).num_minutes().abs() <= 2, "{cluster}: idle GPUs start about now: {e:?} vs {now}");
    assert_eq!(e.partition.as_deref(), Some("gpu"), "{e:?}");
    assert_eq!(e.nodes.as_deref(), Some("h100-01"), "{e:?}");
    assert!(e.processors.is_some_and(|p| p >= 1), "{e:?}");
    // More than any node has: Slurm's reason, not an estimate.
    let err = b.estimate_start(&job_spec(&name, 9, "h100", 5)).await.expect_err("never fits");
    assert!(err.to_string().contains("Requested node configuration is not available"), "{cluster}: {err}");

    let first = b.submit(&job_spec(&name, 2, "h100", 10)).await.expect("submit the first");
    wait_snapshot(&b, Duration::from_secs(60), "the first job running", |s| {
        s.jobs.iter().any(|j| j.job_ref == first && j.state == JobState::Running)
    })
    .await;
    let second = b.submit(&job_spec(&name, 2, "h100", 5)).await.expect("submit the second");
    // Backfill plans every 5 s on the test bed (`bf_interval=5`): wait for its estimate.
    let started = Instant::now();
    let planned = loop {
        match b.estimate_job_start(&second).await.expect("squeue --start") {
            Some(e) => break e,
            None if started.elapsed() < Duration::from_secs(60) => tokio::time::sleep(Duration::from_secs(2)).await,
            None => panic!("{cluster}: no backfill estimate for {second} within 60 s"),
        }
    };
    let wait = (planned.at - Utc::now()).num_minutes();
    assert!((7..=11).contains(&wait), "{cluster}: the second starts when the first ends (~10 min): {planned:?}");
    assert_eq!(planned.partition.as_deref(), Some("gpu"));
    // A spec like the second: the planner says the same.
    let like = b.estimate_start(&job_spec(&name, 2, "h100", 5)).await.expect("test-only").expect("an estimate");
    let wait = (like.at - Utc::now()).num_minutes();
    assert!((7..=11).contains(&wait), "{cluster}: {like:?}");
    // A running job has no start to estimate.
    assert_eq!(b.estimate_job_start(&first).await.expect("squeue --start"), None);
    // Not a job id: refused before anything runs.
    assert!(b.estimate_job_start(&JobRef::new(cluster, "--help")).await.is_err());
}

#[tokio::test]
async fn start_estimates_on_22_05() {
    estimates_on("fd22").await;
}

#[tokio::test]
async fn start_estimates_on_24_11() {
    estimates_on("fd24").await;
}

fn flightdeck(args: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let _ = testbed_config();
    Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(args)
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck")
}

fn advise_json(target: &str) -> Vec<Value> {
    let cfg = testbed_config_path().display().to_string();
    let out = flightdeck(&["--config", &cfg, "advise", target, "--output", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn entry<'a>(rows: &'a [Value], cluster: &str) -> &'a Value {
    rows.iter().find(|r| r["cluster"] == cluster).unwrap_or_else(|| panic!("no {cluster} in {rows:#?}"))
}

#[test]
fn advise_ranks_the_cluster_with_free_gpus_of_the_model_now() {
    let _lock = cluster_lock("fd24");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(&spec, "name = \"fd-advise\"\ncommand = \"true\"\ngpus = 1\ngpu_type = \"l40s\"\n").unwrap();
    let rows = advise_json(spec.to_str().unwrap());
    // Only fd24 has l40s (two nodes of 4).
    let fd24 = &rows[0];
    assert_eq!(
        (fd24["cluster"].as_str(), fd24["verdict"].as_str(), fd24["rank"].as_u64()),
        (Some("fd24"), Some("now"), Some(1))
    );
    assert_eq!(fd24["partition"], "gpu");
    assert!(fd24["idle_gpus"].as_u64().unwrap() >= 1 && fd24["total_gpus"] == 8, "{fd24}");
    // The top Slurm clusters get the scheduler's own estimate: about now.
    let at: chrono::DateTime<Utc> = fd24["estimate"]["at"].as_str().expect("an estimate").parse().unwrap();
    assert!((at - Utc::now()).num_minutes().abs() <= 2, "{fd24}");
    let fd22 = entry(&rows, "fd22");
    assert_eq!(fd22["verdict"], "cannot");
    assert_eq!(fd22["reason"], "no node has l40s (models: a100, h100)");
    assert!(fd22.get("estimate").is_none(), "no estimate for a cluster that cannot: {fd22}");

    // The table: one row per cluster, best first.
    let cfg = testbed_config_path().display().to_string();
    let out = flightdeck(&["--config", &cfg, "advise", spec.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["RANK", "CLUSTER", "VERDICT", "REASON", "$/H", "START"]
    );
    assert!(lines[1].starts_with("1     fd24     now"), "{text}");
    assert!(lines[2].starts_with("2     fd22     cannot   no node has l40s"), "{text}");
}

#[test]
fn advise_a_live_job_from_its_snapshot_fields() {
    let _lock = cluster_lock("fd22");
    let name = format!("fd-advise-ref-{}", std::process::id());
    let _cleanup = CancelByName { cluster: "fd22", name: name.clone() };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = backend("fd22");
    let job = rt.block_on(b.submit(&job_spec(&name, 1, "a100", 5))).expect("submit");
    rt.block_on(wait_snapshot(&b, Duration::from_secs(60), "the job listed", |s| {
        s.jobs.iter().any(|j| j.job_ref == job)
    }));
    let rows = advise_json(&job.to_string());
    // An a100 job: fd22 has 12 a100 (one node down), fd24 none.
    let fd22 = entry(&rows, "fd22");
    assert_eq!(fd22["verdict"], "now", "{rows:#?}");
    assert_eq!(fd22["partition"], "gpu");
    assert!(fd22["reason"].as_str().unwrap().contains("a100 idle in partition gpu"), "{fd22}");
    assert_eq!(entry(&rows, "fd24")["verdict"], "cannot");
    assert!(fd22.get("estimate_error").is_none(), "{fd22}");
    // Three nodes of 4 a100: the snapshot counts dead-01 (down) as one that could come
    // back; Slurm's planner refuses the job outright, and its word wins.
    let dir = tempfile::tempdir().unwrap();
    let three = dir.path().join("three.toml");
    std::fs::write(&three, "name = \"fd-advise-3\"\ncommand = \"true\"\ngpus = 4\ngpu_type = \"a100\"\nnodes = 3\n")
        .unwrap();
    let rows = advise_json(three.to_str().unwrap());
    let fd22 = entry(&rows, "fd22");
    assert_eq!(fd22["verdict"], "cannot", "{rows:#?}");
    assert!(
        fd22["reason"].as_str().unwrap().contains("the scheduler refuses it: ")
            && fd22["reason"].as_str().unwrap().contains("Requested node configuration is not available"),
        "{fd22}"
    );
    // A reference that is no job: one line, non-zero.
    let cfg = testbed_config_path().display().to_string();
    let out = flightdeck(&["--config", &cfg, "advise", "fd22/999999999"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fd22/999999999: no such job"), "{out:?}");
    let out = flightdeck(&["--config", &cfg, "advise", "nowhere/1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cluster `nowhere`"), "{out:?}");
}
