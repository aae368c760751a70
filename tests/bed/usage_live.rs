//! `flightdeck usage` on both Slurm releases: a GPU job running now is held by its user and
//! account with its node's model, and the window's GPU-hours (one sacct through the
//! backend's history, plus the running jobs' hours so far) agree with what `sacct -a -X`
//! itself says of the same window, clipped the way `sreport` clips. Two more users in two
//! accounts (`tests/testbed/users.sh`: fd-alice in fd-physics, fd-bob in fd-biology) run jobs
//! here, and a window of whole past hours agrees with `sreport cluster
//! AccountUtilizationByUser` per user and per account, to the minute. Through a hub
//! (`flightdeck serve` over the cluster), an operator's rows are the direct read's, and
//! fd-alice, a viewer, gets her own row beside the same total.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, Timelike, Utc};
use flightdeck::backend::slurm::script::parse_sbatch_output;
use serde_json::Value;

use common::*;

fn usage(cluster: &str, by: &str) -> Value {
    usage_of(cluster, by, &["--since", "2h"])
}

fn usage_of(cluster: &str, by: &str, window: &[&str]) -> Value {
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string()])
        .args(["usage", "--cluster", cluster, "--by", by, "--output", "json"])
        .args(window)
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

/// GPU-minutes by user or account.
type Minutes<'a> = Vec<(&'a str, f64)>;

/// The two users of `tests/testbed/users.sh`, each with their account.
const USERS: [(&str, &str, &str); 2] = [("fd-alice", "fd-physics", "1"), ("fd-bob", "fd-biology", "2")];

/// GPU-minutes per account (login empty) and per (account, login), as `sreport` reads the
/// slurmdbd's hourly rollups of `[start, end)`.
async fn sreport_gpu_minutes(cluster: &str, start: &str, end: &str) -> Vec<(String, String, f64)> {
    let b = backend(cluster);
    let (start, end) = (format!("start={start}"), format!("end={end}"));
    let argv = [
        "env",
        "TZ=UTC",
        "sreport",
        "-n",
        "-P",
        "-t",
        "Minutes",
        "-T",
        "gres/gpu",
        "cluster",
        "AccountUtilizationByUser",
        &start,
        &end,
        "format=Account,Login,Used",
    ];
    let text = remote(&b, &argv).await;
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').map(str::trim).collect();
            let [account, login, used] = f[..] else { return None };
            Some((account.to_string(), login.to_string(), used.parse().ok()?))
        })
        .collect()
}

/// Jobs of two users in two accounts, and a window of whole past hours (what slurmdbd has
/// rolled up) read both ways: every user's and account's GPU-minutes in `sreport` are ours
/// within a minute, and we count nobody sreport does not. The jobs submitted here fall into
/// later windows; the users' earlier jobs (and root's, every test's) fill this one.
async fn two_users_in_two_accounts_agree_with_sreport_to_the_minute(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    for (user, account, gpus) in USERS {
        let (account, gres) = (format!("--account={account}"), format!("--gres=gpu:{gpus}"));
        let argv = [
            "runuser",
            "-u",
            user,
            "--",
            "sbatch",
            "--parsable",
            &account,
            "--job-name=fd-usage-users",
            "--output=/dev/null",
            "--chdir=/tmp",
            "--partition=gpu",
            &gres,
            "--wrap=sleep 20",
        ];
        let id = parse_sbatch_output(&remote(&b, &argv).await).expect("a job id");
        let listed = remote(&b, &["squeue", "-h", "-j", &id, "-o", "%u %a"]).await;
        assert_eq!(listed.split_whitespace().collect::<Vec<_>>(), [user, &account[10..]], "{id}");
    }
    // Whole hours, ending at the last one slurmdbd has surely rolled up (it rolls up each
    // hour as the next begins).
    let end = Utc::now() - chrono::TimeDelta::minutes(5);
    let end = end.date_naive().and_hms_opt(end.hour(), 0, 0).unwrap().and_utc();
    let start = end - chrono::TimeDelta::hours(6);
    let (since, until) = (start.to_rfc3339(), end.to_rfc3339());
    let fmt = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let theirs = sreport_gpu_minutes(cluster, &fmt(start), &fmt(end)).await;
    let window = ["--since", since.as_str(), "--until", until.as_str()];
    let rows = |v: &Value| -> Vec<(String, f64)> {
        assert_eq!(v["total"]["gpu_hours_complete"], true, "sacct says all: {v}");
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["key"].as_str().unwrap().to_string(), r["gpu_hours"].as_f64().unwrap() * 60.0))
            .collect()
    };
    let by_user = rows(&usage_of(cluster, "user", &window));
    let by_account = rows(&usage_of(cluster, "account", &window));
    let minutes = |ours: &[(String, f64)], key: &str| ours.iter().find(|(k, _)| k == key).map_or(0.0, |(_, m)| *m);
    // sreport's account lines include their sub-accounts (fd-physics and fd-biology sit under
    // root); a job is charged to one account, so each account's own jobs are the sum of its
    // users' lines.
    let (mut users, mut accounts): (Minutes, Minutes) = (Vec::new(), Vec::new());
    for (account, login, used) in theirs.iter().filter(|(_, login, _)| !login.is_empty()) {
        for (sums, key) in [(&mut users, login), (&mut accounts, account)] {
            match sums.iter_mut().find(|(k, _)| k == key) {
                Some((_, m)) => *m += used,
                None => sums.push((key, *used)),
            }
        }
    }
    for (what, theirs_by, ours_by) in [("user", &users, &by_user), ("account", &accounts, &by_account)] {
        for (key, used) in theirs_by {
            let ours = minutes(ours_by, key);
            assert!((ours - used).abs() <= 1.0, "{what} {key}: ours {ours:.2} GPU-min, sreport {used} ({theirs:?})");
        }
        for (key, ours) in ours_by.iter() {
            let known = theirs_by.iter().any(|(k, _)| k == key);
            assert!(known || *ours < 1.0, "{what} {key}: {ours:.2} GPU-min that sreport does not report ({theirs:?})");
        }
    }
    eprintln!("{cluster} {since}..{until}: compared users {users:?} and accounts {accounts:?} with sreport");
}

/// A window of whole past hours: running jobs are clipped to its end, so two reads a moment
/// apart say the same.
fn past_hours() -> [String; 4] {
    let end = Utc::now() - chrono::TimeDelta::minutes(5);
    let end = end.date_naive().and_hms_opt(end.hour(), 0, 0).unwrap().and_utc();
    let start = end - chrono::TimeDelta::hours(6);
    ["--since".into(), start.to_rfc3339(), "--until".into(), end.to_rfc3339()]
}

/// `flightdeck --hub URL usage` with `token`.
fn usage_through(hub: &str, token: &str, by: &str, window: &[String]) -> Value {
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--hub", hub, "usage", "--by", by, "--output", "json"])
        .args(window)
        .env("XDG_STATE_HOME", state.path())
        .env("FLIGHTDECK_HUB_TOKEN", token)
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Each row's key and GPU-hours.
fn hours_by_key(v: &Value) -> Vec<(String, f64)> {
    let mut rows: Vec<(String, f64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap().to_string(), r["gpu_hours"].as_f64().unwrap()))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

async fn through_a_hub_a_viewer_gets_their_own_row_and_the_operators_total(cluster: &str) {
    use flightdeck::fleet::{Fleet, FleetOptions, Member};
    let _lock = cluster_lock(cluster);
    let dir = tempfile::tempdir().unwrap();
    let (viewer, operator) = ("fd-alice-token-0001", "operator-token-0002");
    let tokens = tokens_file(dir.path(), &[(viewer, "fd-alice viewer"), (operator, "tester operator")]);
    let member = Member {
        backend: backend(cluster),
        kind: "slurm".into(),
        refresh: Duration::from_secs(2),
        timeout: Duration::from_secs(20),
    };
    let opts = FleetOptions { read_only: true, poll: true, audit: None, actor: "tester@live".into() };
    let fleet = std::sync::Arc::new(Fleet::start(vec![member], opts));
    fleet.wait_for(Duration::from_secs(60), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    let served = LoopbackHub::start(fleet.clone(), tokens).await;
    let hub = served.url();
    let window = past_hours();
    let (w, h, c) = (window.clone(), hub.clone(), cluster.to_string());
    let (direct, as_operator, as_viewer) = tokio::task::spawn_blocking(move || {
        let direct = usage_of(&c, "user", &w.iter().map(String::as_str).collect::<Vec<_>>());
        (direct, usage_through(&h, operator, "user", &w), usage_through(&h, viewer, "user", &w))
    })
    .await
    .unwrap();
    served.stop().await;

    // The operator's rows are the direct read's, from the hub's own sacct.
    let (ours, theirs) = (hours_by_key(&as_operator), hours_by_key(&direct));
    assert_eq!(ours.iter().map(|r| &r.0).collect::<Vec<_>>(), theirs.iter().map(|r| &r.0).collect::<Vec<_>>());
    for ((key, hub_hours), (_, direct_hours)) in ours.iter().zip(&theirs) {
        assert!(
            (hub_hours - direct_hours).abs() < 1.0 / 60.0,
            "{key}: {hub_hours} through the hub, {direct_hours} direct"
        );
    }
    assert_eq!(as_operator["total"]["gpu_hours_complete"], true, "{as_operator}");
    // The viewer: her own row alone (if she used any GPU in the window), the same total.
    let hers = hours_by_key(&as_viewer);
    assert!(hers.iter().all(|(k, _)| k == "fd-alice"), "{as_viewer}");
    assert_eq!(hers, ours.iter().filter(|(k, _)| k == "fd-alice").cloned().collect::<Vec<_>>());
    assert_eq!(as_viewer["rows_of"], "fd-alice");
    assert_eq!(as_viewer["total"]["gpu_hours"], as_operator["total"]["gpu_hours"], "{as_viewer} {as_operator}");
    assert!(as_operator.get("rows_of").is_none());
    eprintln!("{cluster}: operator {ours:?}, viewer {hers:?}, total {}", as_viewer["total"]["gpu_hours"]);
}

on_both_clusters!(
    the_gpus_held_now_and_the_windows_hours_agree_with_sacct,
    the_fair_share_is_the_schedulers_sshare,
    two_users_in_two_accounts_agree_with_sreport_to_the_minute,
    through_a_hub_a_viewer_gets_their_own_row_and_the_operators_total
);
