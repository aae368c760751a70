//! `flightdeck why` against the Slurm test bed, on both releases: a job that asks by name
//! for a node an operator drained waits on `ReqNodeNotAvail` and is told which node and
//! the drain's reason; a held job is told how to release it; a job's size against its
//! partition (on fd22 a job that needs the node that is down for good, on fd24 one that
//! waits for a node to free up). The real binary, the real controller's reasons.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use flightdeck::model::{JobRef, JobState};
use serde_json::Value;

use common::*;
use flightdeck::backend::slurm::script::parse_sbatch_output;

/// `flightdeck why REF -o json` through the binary: the one answer.
fn why(cluster_ref: &str) -> Value {
    try_why(cluster_ref).unwrap_or_else(|e| panic!("{e}"))
}

/// The same, failing softly, for tests that must clean up before they assert.
fn try_why(cluster_ref: &str) -> Result<Value, String> {
    let _ = testbed_config();
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string(), "why", cluster_ref, "--output", "json"])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    if !out.status.success() {
        return Err(format!("why {cluster_ref}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let answers: Vec<Value> = serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}"))?;
    match answers.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("one answer expected: {answers:?}")),
    }
}

/// `flightdeck why REF` through the binary, as a person reads it.
fn why_text(cluster_ref: &str) -> String {
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string(), "why", cluster_ref])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    assert!(out.status.success(), "why {cluster_ref}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Asks `why` until `wanted` accepts the answer (the controller sets the reason on its next
/// scheduling pass; a node another test bed user just resumed may not answer for a moment),
/// for up to 30 s: the last answer, and the text a person reads.
async fn why_once_reasoned(job: &str, wanted: impl Fn(&Value) -> bool) -> (Result<Value, String>, String) {
    let started = Instant::now();
    let reasoned = |a: &Value| wanted(a);
    let mut answer = try_why(job);
    while !answer.as_ref().is_ok_and(reasoned) && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        answer = try_why(job);
    }
    let text = why_text(job);
    (answer, text)
}

async fn submit(cluster: &str, extra: &[&str]) -> String {
    let b = backend(cluster);
    let mut argv = vec!["sbatch", "--parsable", "--job-name=fd-why", "--output=/dev/null", "--chdir=/tmp"];
    argv.extend_from_slice(extra);
    argv.push("--wrap=sleep 60");
    let out = remote(&b, &argv).await;
    format!("{cluster}/{}", parse_sbatch_output(&out).expect("a job id"))
}

async fn cancel(cluster_ref: &str) {
    let (cluster, id) = cluster_ref.split_once('/').unwrap();
    let _ = remote(&backend(cluster), &["scancel", id]).await;
}

/// A node of each bed that no other test drains.
fn spare_node(cluster: &str) -> &'static str {
    if cluster == "fd22" { "a100-02" } else { "l40s-02" }
}

async fn a_job_on_a_drained_node_is_told_which_node_and_why(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let node = spare_node(cluster);
    remote(&b, &["scontrol", "update", &format!("nodename={node}"), "state=drain", "reason=fd-why: bad GPU"]).await;
    let job = submit(cluster, &[&format!("--nodelist={node}")]).await;
    // The controller sets the reason on its next scheduling pass. The node is resumed
    // before anything is asserted: a drained node would fail every later test.
    let mut answer = try_why(&job);
    for _ in 0..30 {
        if answer.as_ref().is_ok_and(|a| a["reason"].as_str().is_some_and(|r| r.starts_with("ReqNodeNotAvail"))) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        answer = try_why(&job);
    }
    cancel(&job).await;
    remote(&b, &["scontrol", "update", &format!("nodename={node}"), "state=resume"]).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["state"], "pending", "{answer}");
    assert!(answer["reason"].as_str().unwrap().starts_with("ReqNodeNotAvail"), "{answer}");
    assert_eq!(answer["outlook"], "needs action", "{answer}");
    assert!(answer["meaning"].as_str().unwrap().contains("down, drained"), "{answer}");
    let evidence: Vec<&str> = answer["evidence"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        evidence.iter().any(|l| l.contains(&format!("{node} (drained: fd-why: bad GPU)"))),
        "the drained node named with its reason: {evidence:?}"
    );
}

async fn a_held_job_is_told_how_to_release_it(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let job = submit(cluster, &["--hold"]).await;
    let answer = why(&job);
    cancel(&job).await;
    assert_eq!(answer["reason"], "JobHeldUser", "{answer}");
    assert_eq!(answer["outlook"], "needs action");
    assert_eq!(answer["evidence"][0], format!("`flightdeck release {job}` lets it run"));
}

/// Both h100 of h100-01 taken by a 10-minute job, a second asking for both behind it: `why`
/// says what it asks against the largest free block, gives the scheduler's estimate, about
/// when the first ends, and its priority's parts and fair share (sprio, sshare).
async fn a_job_bigger_than_any_free_block_is_told_the_block_and_when(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let gpus = ["--gres=gpu:h100:2", "--partition=gpu"];
    let first = submit(cluster, &[gpus[0], gpus[1], "--time=10"]).await;
    let first_ref = JobRef::new(cluster, first.split_once('/').unwrap().1);
    wait_snapshot(&b, Duration::from_secs(60), "the first job running", |s| {
        s.jobs.iter().any(|j| j.job_ref == first_ref && j.state == JobState::Running)
    })
    .await;
    let second = submit(cluster, &[gpus[0], gpus[1], "--time=5"]).await;
    // Backfill plans every 5 s on the test bed, and the main scheduler sets the reason on
    // its own pass: wait until both have looked at the second.
    let started = Instant::now();
    let ready = |a: &Value| {
        matches!(a["reason"].as_str(), Some("Resources" | "Priority")) && a["expected_start"]["at"].is_string()
    };
    let mut answer = try_why(&second);
    while !answer.as_ref().is_ok_and(ready) && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        answer = try_why(&second);
    }
    cancel(&second).await;
    cancel(&first).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["state"], "pending", "{answer}");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason == "Resources" || reason == "Priority", "{answer}");
    if reason == "Resources" {
        assert_eq!(
            answer["evidence"][0],
            "needs 1 node with 2 h100; the partition has 1 such node, none free now: it waits for one to free up",
            "{answer}"
        );
        assert_eq!(
            answer["evidence"][1],
            "it needs 2×h100 on one node; the largest free block in partition gpu is 0 on h100-01, and 0 nodes have room \
             for it",
            "{answer}"
        );
    }
    let at: DateTime<Utc> = answer["expected_start"]["at"].as_str().expect("an expected start").parse().unwrap();
    let wait = (at - Utc::now()).num_minutes();
    assert!((7..=11).contains(&wait), "about when the first ends: {answer}");
    // Waiting for room, where priority decides who goes first: its priority's parts and its
    // user's fair share, asked for this job.
    let evidence: Vec<&str> = answer["evidence"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(evidence.iter().any(|l| l.starts_with("its priority ") && l.ends_with("(sprio)")), "{evidence:?}");
    assert!(evidence.iter().any(|l| l.starts_with("root's fair share in account root is ")), "{evidence:?}");
}

/// A job told to begin in an hour: `why` gives that as the expected start, from the job
/// record the refresh already read, and costs the controller no more than the refresh
/// (`sdiag`'s query counters: 4: the job listing, the nodes, and the partition list the text
/// `squeue` and `sinfo` each load).
async fn a_planned_start_costs_no_more_than_the_refresh(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let _quiet = cluster_quiet(cluster);
    let b = backend(cluster);
    let job = submit(cluster, &["--begin=now+3600"]).await;
    // The controller has set its reason once squeue shows it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = b.rpc_counts().await.expect("sdiag");
    let answer = try_why(&job);
    let after = b.rpc_counts().await.expect("sdiag");
    cancel(&job).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["reason"], "BeginTime", "{answer}");
    let at: DateTime<Utc> = answer["expected_start"]["at"].as_str().expect("an expected start").parse().unwrap();
    let ahead = at - Utc::now();
    assert!(ahead > chrono::TimeDelta::minutes(55) && ahead < chrono::TimeDelta::minutes(61), "{answer}");
    let used = after.queries_since(&before);
    assert!(used <= 4, "{used} controller query RPCs for one `why` on {cluster}");
}

/// Two one-GPU jobs under the test bed's QOS of one GPU per user (`fd-gpu1`): the second
/// waits on the QOS limit, told in words with what its user already holds.
async fn a_job_over_its_qos_limit_is_told_what_its_user_holds(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let ask = ["--qos=fd-gpu1", "--gres=gpu:1", "--partition=gpu"];
    let first = submit(cluster, &ask).await;
    let first_ref = JobRef::new(cluster, first.split_once('/').unwrap().1);
    wait_snapshot(&b, Duration::from_secs(60), "the first job running", |s| {
        s.jobs.iter().any(|j| j.job_ref == first_ref && j.state == JobState::Running)
    })
    .await;
    let second = submit(cluster, &ask).await;
    let limited = |a: &Value| a["reason"].as_str().is_some_and(|r| r.starts_with("QOSMax"));
    let started = Instant::now();
    let mut answer = try_why(&second);
    while !answer.as_ref().is_ok_and(limited) && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        answer = try_why(&second);
    }
    cancel(&second).await;
    cancel(&first).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["reason"], "QOSMaxGRESPerUser", "{answer}");
    assert_eq!(answer["outlook"], "limited", "{answer}");
    assert!(answer["meaning"].as_str().is_some_and(|m| m.contains("QOS")), "{answer}");
    let evidence: Vec<&str> = answer["evidence"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(evidence.iter().any(|l| l.starts_with("root holds 1 GPU in 1 running job on")), "{evidence:?}");
}

/// A job that waits for another to end well: `Dependency`, in words.
async fn a_dependent_job_is_told_it_waits_for_another(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let first = submit(cluster, &[]).await;
    let first_id = first.split_once('/').unwrap().1.to_string();
    let second = submit(cluster, &[&format!("--dependency=afterok:{first_id}")]).await;
    let started = Instant::now();
    let mut answer = try_why(&second);
    while !answer.as_ref().is_ok_and(|a| a["reason"] == "Dependency") && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        answer = try_why(&second);
    }
    cancel(&second).await;
    cancel(&first).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["reason"], "Dependency", "{answer}");
    assert_eq!(answer["outlook"], "waits", "{answer}");
    assert!(answer["meaning"].as_str().is_some_and(|m| m.contains("depends on")), "{answer}");
}

/// fd22's partition `gpu` holds three nodes of 4 a100, one of them (`dead-01`) down for good:
/// a job of 3 nodes asking for 4 a100 on each is told it cannot start until dead-01 returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_needs_the_node_that_is_down_cannot_start_until_it_returns() {
    let _lock = cluster_lock("fd22");
    let job = submit("fd22", &["--nodes=3", "--gres=gpu:a100:4", "--partition=gpu"]).await;
    let line = "needs 3 nodes with 4 a100 each; the partition has 3 such nodes, one of them (dead-01) down: it cannot \
                start until dead-01 returns";
    let (answer, text) = why_once_reasoned(&job, |a| {
        a["reason"].as_str().is_some_and(|r| r.starts_with("ReqNodeNotAvail")) && a["evidence"][0] == line
    })
    .await;
    cancel(&job).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["evidence"][0], line, "{answer}");
    assert_eq!(answer["outlook"], "needs action", "{answer}");
    assert!(text.contains(&format!("\n  - {line}\n")), "{text}");
    println!("{text}");
}

/// fd24's two l40s nodes, one of them holding a 1-GPU job: a job of 2 nodes asking for all 4
/// l40s of each waits for one more to free up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_fits_its_partition_waits_for_nodes_to_free_up() {
    let _lock = cluster_lock("fd24");
    let b = backend("fd24");
    let first = submit("fd24", &["--gres=gpu:l40s:1", "--nodelist=l40s-01", "--partition=gpu"]).await;
    let first_ref = JobRef::new("fd24", first.split_once('/').unwrap().1);
    wait_snapshot(&b, Duration::from_secs(30), "the first job running", |s| {
        s.jobs.iter().any(|j| j.job_ref == first_ref && j.state == JobState::Running)
    })
    .await;
    let second = submit("fd24", &["--nodes=2", "--gres=gpu:l40s:4", "--partition=gpu"]).await;
    let line = "needs 2 nodes with 4 l40s each; the partition has 2 such nodes, 1 free now: it waits for one more to \
                free up";
    let (answer, text) = why_once_reasoned(&second, |a| a["reason"] == "Resources" && a["evidence"][0] == line).await;
    cancel(&second).await;
    cancel(&first).await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["evidence"][0], line, "{answer}");
    assert_eq!(answer["outlook"], "waits", "{answer}");
    assert!(text.contains(&format!("\n  - {line}\n")), "{text}");
    println!("{text}");
}

on_both_clusters!(
    a_job_over_its_qos_limit_is_told_what_its_user_holds,
    a_dependent_job_is_told_it_waits_for_another,
    a_planned_start_costs_no_more_than_the_refresh,
    a_job_on_a_drained_node_is_told_which_node_and_why,
    a_held_job_is_told_how_to_release_it,
    a_job_bigger_than_any_free_block_is_told_the_block_and_when,
);
