//! `flightdeck usage` on both Slurm releases: a GPU job running now is held by its user and
//! account with its node's model, and the window's GPU-hours (one sacct through the
//! backend's history, plus the running jobs' hours so far) agree with what `sacct -a -X`
//! itself says of the same window, clipped the way `sreport` clips (every job on the test bed
//! is root's: one user, one account).

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, Utc};
use flightdeck::backend::slurm::script::parse_sbatch_output;
use serde_json::Value;

use common::*;

fn usage(cluster: &str, by: &str) -> Value {
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string()])
        .args(["usage", "--cluster", cluster, "--since", "2h", "--by", by, "--output", "json"])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn at(text: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok().map(|t| t.and_utc())
}

/// GPU-hours of every job in `[since, now]` as sacct reports them (allocations only, every
/// user): GPUs from AllocTRES × the part of Start–End inside the window.
async fn sacct_gpu_hours(cluster: &str, since: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let b = backend(cluster);
    let start = format!("--starttime={}", since.format("%Y-%m-%dT%H:%M:%S"));
    let text = remote(
        &b,
        &["env", "TZ=UTC", "sacct", "-a", "-X", "-n", "-P", &start, "--endtime=now", "-o", "Start,End,AllocTRES"],
    )
    .await;
    let mut hours = 0.0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split('|').collect();
        let [start, end, tres] = fields[..] else { continue };
        let gpus: f64 =
            tres.split(',').find_map(|t| t.strip_prefix("gres/gpu=")).and_then(|n| n.parse().ok()).unwrap_or(0.0);
        let Some(start) = at(start) else { continue };
        let end = at(end).unwrap_or(now).min(now);
        let from = start.max(since);
        if end > from {
            hours += gpus * (end - from).num_milliseconds() as f64 / 3_600_000.0;
        }
    }
    hours
}

async fn the_gpus_held_now_and_the_windows_hours_agree_with_sacct(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let name = format!("--job-name=fd-usage-{}", std::process::id());
    let out = remote(
        &b,
        &[
            "sbatch",
            "--parsable",
            &name,
            "--output=/dev/null",
            "--chdir=/tmp",
            "--partition=gpu",
            "--gres=gpu:1",
            "--wrap=sleep 120",
        ],
    )
    .await;
    let id = parse_sbatch_output(&out).expect("a job id");
    let started = Instant::now();
    while remote(&b, &["squeue", "-h", "-j", &id, "-o", "%T"]).await.trim() != "RUNNING" {
        assert!(started.elapsed() < Duration::from_secs(60), "{id} did not start");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    let before = Utc::now();
    let by_user = usage(cluster, "user");
    let after = Utc::now();
    let root = by_user["rows"].as_array().unwrap().iter().find(|r| r["key"] == "root").cloned();
    let root = root.unwrap_or_else(|| panic!("root holds GPUs: {by_user}"));
    assert!(root["gpus_now"].as_u64().is_some_and(|n| n >= 1) && root["jobs_now"].as_u64() >= Some(1), "{root}");
    assert!(root["models"].as_array().is_some_and(|m| !m.is_empty() && m[0]["model"] != "(unknown)"), "{root}");
    assert_eq!(root["cost_per_hour"], Value::Null, "Slurm has no prices");
    assert_eq!(by_user["total"]["gpu_hours_complete"], true, "sacct says all: {by_user}");
    // Our window against sacct's own: the same jobs, the running ones counted to now. The
    // two readings are moments apart; the GPUs held move the figure by that much.
    let since: DateTime<Utc> = by_user["since"].as_str().unwrap().parse().unwrap();
    let ours = by_user["total"]["gpu_hours"].as_f64().unwrap();
    let theirs = sacct_gpu_hours(cluster, since, after).await;
    let held = by_user["total"]["gpus_now"].as_f64().unwrap();
    let slack = held * (Utc::now() - before).num_milliseconds() as f64 / 3_600_000.0 + 0.01;
    assert!((ours - theirs).abs() <= slack, "usage {ours} GPU-h, sacct {theirs} GPU-h (slack {slack})");
    assert!(ours > 0.0);

    let by_account = usage(cluster, "account");
    let acct = by_account["rows"].as_array().unwrap().iter().find(|r| r["key"] == "root").cloned();
    assert!(acct.is_some_and(|a| a["gpus_now"].as_u64() >= Some(1)), "root's account: {by_account}");
    remote(&b, &["scancel", &id]).await;
}

/// The fair share beside the usage is the scheduler's own: the same associations and
/// figures as `sshare -a -P -n` run on the login node.
async fn the_fair_share_is_the_schedulers_sshare(cluster: &str) {
    // `usage` refreshes the cluster: never while a scenario counts the controller's RPCs.
    let _read = cluster_read(cluster);
    let b = backend(cluster);
    let by_user = usage(cluster, "user");
    let ours = by_user["fair_share"].as_array().unwrap_or_else(|| panic!("no fair_share: {by_user}"));
    let text = remote(&b, &["sshare", "-a", "-P", "-n", "-o", "Account,User,RawShares,FairShare"]).await;
    let theirs: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').map(str::trim).collect()).collect();
    assert_eq!(ours.len(), theirs.len(), "ours {ours:?}, sshare {text}");
    for (row, line) in ours.iter().zip(&theirs) {
        assert_eq!(row["cluster"], cluster);
        assert_eq!(row["account"], line[0], "{row} against {line:?}");
        assert_eq!(row["user"].as_str().unwrap_or(""), line[1], "{row} against {line:?}");
        assert_eq!(row["raw_shares"].as_u64().map(|v| v.to_string()).unwrap_or_default(), line[2]);
        let factor: Option<f64> = line[3].parse().ok();
        assert_eq!(row["fair_share"].as_f64(), factor, "{row} against {line:?}");
    }
    let root = ours.iter().find(|r| r["user"] == "root").unwrap_or_else(|| panic!("root's association: {ours:?}"));
    assert!(root["fair_share"].as_f64().is_some_and(|f| (0.0..=1.0).contains(&f)), "{root}");
}

on_both_clusters!(the_gpus_held_now_and_the_windows_hours_agree_with_sacct, the_fair_share_is_the_schedulers_sshare);
