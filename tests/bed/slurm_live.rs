//! The Slurm adapter against two real Slurm releases (22.05 on the host, 24.11 in a Debian 13
//! chroot), each reached through its own sshd on loopback. Needs `tests/testbed/up.sh`.
//!
//! Every scenario runs on both clusters; tests that change a cluster hold its lock.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use flightdeck::backend::slurm::SlurmBackend;
use flightdeck::backend::{Backend, JobAction, NodeAction};
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::{Health, JobRef, JobState, NodeState, Snapshot};
use flightdeck::spec::JobSpec;

use common::*;

const WAIT: Duration = Duration::from_secs(90);

fn spec(name: &str, command: &str) -> JobSpec {
    JobSpec {
        name: name.to_string(),
        command: Some(command.to_string()),
        workdir: Some("/tmp".to_string()),
        time_limit: Some("10m".to_string()),
        ..JobSpec::default()
    }
}

fn job<'a>(s: &'a Snapshot, r: &JobRef) -> Option<&'a flightdeck::model::Job> {
    s.jobs.iter().find(|j| &j.job_ref == r)
}

async fn cancel_quietly(b: &SlurmBackend, r: &JobRef) {
    let _ = b.job_action(r, JobAction::Cancel).await;
}

on_both_clusters!(
    nodes_and_gpus_match_sinfo,
    release_is_detected,
    submit_runs_then_cancel_removes,
    hold_and_release_a_pending_job,
    requeue_a_running_job,
    drain_with_reason_then_resume,
    array_tasks_appear_and_cancel_one_by_one,
    failing_job_reports_its_exit_code,
    hostile_job_name_is_kept_verbatim_and_runs_nothing,
    dropped_ssh_link_goes_stale_then_recovers,
    one_refresh_costs_one_job_query_and_at_most_four_controller_rpcs,
    each_refresh_costs_one_job_query_with_telemetry_beside_it,
    slurm_errors_reach_the_user,
    job_output_is_tailed_and_followed,
    text_fallback_agrees_with_json,
    the_field_listing_agrees_with_json_at_a_tenth_of_the_bytes,
    the_preview_is_the_script_sbatch_gets,
    a_script_that_arrives_short_is_never_submitted,
    a_job_name_with_a_line_break_cannot_pose_as_a_row_in_text_output,
    output_through_a_symbolic_link_is_refused,
    output_owned_by_another_user_is_refused,
);

async fn release_is_detected(cluster: &str) {
    let _read = cluster_read(cluster);
    let b = backend(cluster);
    let s = b.snapshot().await.expect("snapshot");
    let release = s.release.expect("release");
    let want = if cluster == "fd22" { "22.05" } else { "24.11" };
    assert!(release.starts_with(want), "{cluster} reports release {release}");
}

/// Every node `sinfo` prints is there with the same GPU total and base state.
async fn nodes_and_gpus_match_sinfo(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let snap = b.snapshot().await.expect("snapshot");
    let text = remote(&b, &["sinfo", "-N", "-h", "-o", "%N|%G|%T"]).await;
    let mut expected: BTreeMap<String, (u32, String)> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let gpus = f[1]
            .split(',')
            .filter(|g| g.starts_with("gpu"))
            .map(|g| g.split('(').next().unwrap().rsplit(':').next().unwrap().parse::<u32>().unwrap())
            .sum();
        expected.insert(f[0].to_string(), (gpus, f[2].to_string()));
    }
    assert!(expected.len() >= 3, "sinfo printed {text}");
    let got: BTreeMap<String, (u32, NodeState)> =
        snap.nodes.iter().map(|n| (n.name.clone(), (n.gpus_total(), n.state))).collect();
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (name, (gpus, state)) in &expected {
        let (got_gpus, got_state) = got[name];
        assert_eq!(got_gpus, *gpus, "{cluster}/{name} GPUs");
        let base = state.trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-']);
        let want = match base {
            "idle" => vec![NodeState::Idle],
            "mixed" => vec![NodeState::Mixed],
            "allocated" => vec![NodeState::Allocated],
            "down" => vec![NodeState::Down],
            "drained" => vec![NodeState::Drained],
            "draining" => vec![NodeState::Draining],
            _ => vec![got_state],
        };
        assert!(want.contains(&got_state), "{cluster}/{name}: sinfo says {state}, we say {got_state}");
    }
    // The test bed's shape: two models, and a configured node without slurmd that is down.
    let models: std::collections::BTreeSet<String> =
        snap.nodes.iter().flat_map(|n| n.gpus.iter().map(|g| g.model.clone())).collect();
    assert!(models.len() >= 2, "{cluster} GPU models {models:?}");
    if cluster == "fd22" {
        let dead = snap.nodes.iter().find(|n| n.name == "dead-01").expect("dead-01");
        assert!(dead.is_unavailable(), "dead-01 is {:?} {:?}", dead.state, dead.flags);
        assert_eq!(dead.gpus_total(), 4);
    }
    assert!(!snap.queues.is_empty() && snap.queues.iter().any(|q| q.name == "gpu" && q.gpus_total > 0));
}

async fn submit_runs_then_cancel_removes(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let mut s = spec("fd-submit-cancel", "sleep 300");
    s.gpus = 1;
    let r = b.submit(&s).await.expect("submit");
    assert_eq!(r.cluster, cluster);
    let snap =
        wait_snapshot(&b, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    let j = job(&snap, &r).unwrap();
    assert_eq!(j.name, "fd-submit-cancel");
    assert_eq!(j.gpus_allocated, 1, "{j:?}");
    assert_eq!(j.nodes.len(), 1);
    assert!(j.gpu_model.is_some(), "a typed GPU model is reported: {j:?}");
    b.job_action(&r, JobAction::Cancel).await.expect("cancel");
    let snap = wait_snapshot(&b, WAIT, "the job to be cancelled", |s| {
        job(s, &r).is_none_or(|j| j.state == JobState::Cancelled)
    })
    .await;
    // And Slurm agrees: squeue no longer lists it as active.
    let active = remote(&b, &["squeue", "-h", "-o", "%i", "--states=PD,R,CG,S"]).await;
    assert!(!active.lines().any(|l| l.trim() == r.id), "squeue still lists {r}");
    drop(snap);
}

async fn hold_and_release_a_pending_job(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    // A blocker takes every CPU of the one-node debug partition, so the next job waits.
    let mut blocker = spec("fd-blocker", "sleep 300");
    blocker.partition = Some("debug".into());
    blocker.cpus = Some(node_cpus(&b, "debug").await);
    let blocker = b.submit(&blocker).await.expect("submit blocker");
    let mut waiting = spec("fd-waits", "true");
    waiting.partition = Some("debug".into());
    let r = b.submit(&waiting).await.expect("submit");
    wait_snapshot(&b, WAIT, "the job to pend", |s| job(s, &r).is_some_and(|j| j.state == JobState::Pending)).await;
    b.job_action(&r, JobAction::Hold).await.expect("hold");
    let snap =
        wait_snapshot(&b, WAIT, "the job to be held", |s| job(s, &r).is_some_and(|j| j.state == JobState::Held)).await;
    let reason = job(&snap, &r).unwrap().reason.clone().unwrap_or_default();
    assert!(reason.starts_with("JobHeld"), "held reason {reason}");
    b.job_action(&r, JobAction::Release).await.expect("release");
    wait_snapshot(&b, WAIT, "the job to pend again", |s| job(s, &r).is_some_and(|j| j.state != JobState::Held)).await;
    cancel_quietly(&b, &r).await;
    cancel_quietly(&b, &blocker).await;
}

async fn node_cpus(b: &SlurmBackend, partition: &str) -> u32 {
    let snap = b.snapshot().await.expect("snapshot");
    snap.nodes.iter().filter(|n| n.partitions.iter().any(|p| p == partition)).map(|n| n.cpus_total).min().expect("node")
}

async fn requeue_a_running_job(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let r = b.submit(&spec("fd-requeue", "sleep 300")).await.expect("submit");
    wait_snapshot(&b, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    b.job_action(&r, JobAction::Requeue).await.expect("requeue");
    let snap = wait_snapshot(&b, WAIT, "the job to go back to the queue", |s| {
        job(s, &r).is_some_and(|j| j.state != JobState::Running || j.native_state.contains("REQUEUE"))
    })
    .await;
    let j = job(&snap, &r).unwrap();
    assert!(
        matches!(j.state, JobState::Pending | JobState::Held | JobState::Completing | JobState::Running),
        "after requeue: {:?} {}",
        j.state,
        j.native_state
    );
    cancel_quietly(&b, &r).await;
}

async fn drain_with_reason_then_resume(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let node = "h100-01";
    let reason = format!("fd test: bad GPU 'x' $(id) {}", std::process::id());
    b.node_action(node, &NodeAction::Drain { reason: reason.clone(), force: false }).await.expect("drain");
    let snap = wait_snapshot(&b, WAIT, "the node to drain", |s| {
        s.nodes.iter().any(|n| n.name == node && matches!(n.state, NodeState::Drained | NodeState::Draining))
    })
    .await;
    let n = snap.nodes.iter().find(|n| n.name == node).unwrap();
    assert_eq!(n.reason.as_deref(), Some(reason.as_str()));
    assert!(n.has_flag("DRAIN"), "{:?}", n.flags);
    assert!(n.is_unavailable());
    // A drain without a reason is refused before anything reaches Slurm.
    assert!(b.node_action(node, &NodeAction::Drain { reason: " ".into(), force: false }).await.is_err());
    // A reason other admins' `sinfo -R` would print with an escape sequence or a bidi
    // override is refused by name, and the stored reason stays as it was.
    for hostile in ["XID 79\u{1b}]0;owned\u{7}", "gpu\u{202e}niard", "two\nlines"] {
        let err = b.node_action(node, &NodeAction::Drain { reason: hostile.into(), force: false }).await.unwrap_err();
        assert!(err.to_string().contains("drain reason"), "{err}");
    }
    let reasons = remote(&b, &["sinfo", "-h", "-n", node, "-o", "%E"]).await;
    assert_eq!(reasons.trim(), reason, "Slurm still holds the first reason");
    b.node_action(node, &NodeAction::Resume).await.expect("resume");
    wait_snapshot(&b, WAIT, "the node to return", |s| {
        s.nodes.iter().any(|n| {
            n.name == node && !n.has_flag("DRAIN") && !matches!(n.state, NodeState::Drained | NodeState::Draining)
        })
    })
    .await;
}

async fn array_tasks_appear_and_cancel_one_by_one(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let mut s = spec("fd-array", "");
    s.command = None;
    s.script = Some("#!/bin/bash\n#SBATCH --array=0-3%1\nsleep 300\n".into());
    let r = b.submit(&s).await.expect("submit");
    let base = r.id.clone();
    let task0 = JobRef::new(cluster, format!("{base}_0"));
    let snap =
        wait_snapshot(&b, WAIT, "task 0 to run", |s| job(s, &task0).is_some_and(|j| j.state == JobState::Running))
            .await;
    let parent = snap
        .jobs
        .iter()
        .find(|j| j.array.as_ref().is_some_and(|a| a.array_id == base && a.task_id.is_none()))
        .expect("the pending parent holding tasks 1-3");
    assert!(parent.job_ref.id.starts_with(&format!("{base}_[")), "{}", parent.job_ref);
    assert_eq!(parent.state, JobState::Pending);
    let t0 = job(&snap, &task0).unwrap();
    assert_eq!(t0.array.as_ref().unwrap().task_id, Some(0));
    b.job_action(&task0, JobAction::Cancel).await.expect("cancel task 0");
    let task1 = JobRef::new(cluster, format!("{base}_1"));
    wait_snapshot(&b, WAIT, "task 0 cancelled and task 1 started", |s| {
        job(s, &task0).is_none_or(|j| j.state == JobState::Cancelled) && job(s, &task1).is_some()
    })
    .await;
    b.job_action(&JobRef::new(cluster, base.clone()), JobAction::Cancel).await.expect("cancel the array");
    wait_snapshot(&b, WAIT, "the whole array to end", |s| {
        s.jobs.iter().filter(|j| j.array.as_ref().is_some_and(|a| a.array_id == base)).all(|j| j.state.is_finished())
    })
    .await;
}

async fn failing_job_reports_its_exit_code(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let r = b.submit(&spec("fd-fails", "exit 3")).await.expect("submit");
    let snap =
        wait_snapshot(&b, WAIT, "the job to fail", |s| job(s, &r).is_some_and(|j| j.state == JobState::Failed)).await;
    let j = job(&snap, &r).unwrap();
    assert_eq!(j.exit.map(|e| e.code), Some(3), "{j:?}");
}

async fn hostile_job_name_is_kept_verbatim_and_runs_nothing(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let pwned = cluster_root(cluster).join("tmp/pwned");
    let _ = std::fs::remove_file(&pwned);
    let name = "x'; touch /tmp/pwned; echo '$(id)";
    let r = b.submit(&spec(name, "sleep 1")).await.expect("submit");
    let snap = wait_snapshot(&b, WAIT, "the job to appear", |s| job(s, &r).is_some()).await;
    assert_eq!(job(&snap, &r).unwrap().name, name);
    // Let it run to the end: the name must not have been executed anywhere on the way.
    wait_snapshot(&b, WAIT, "the job to finish", |s| job(s, &r).is_none_or(|j| j.state.is_finished())).await;
    assert!(!pwned.exists(), "{} was created: the job name reached a shell", pwned.display());
}

async fn dropped_ssh_link_goes_stale_then_recovers(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let cfg = cluster_config(cluster);
    let fleet = Fleet::start(
        vec![Member {
            backend: flightdeck::backend::Registry::builtin().build(&cfg).expect("a slurm backend"),
            kind: "slurm".into(),
            refresh: Duration::from_secs(1),
            timeout: Duration::from_secs(20),
        }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "test".into() },
    );
    let s = fleet.wait_for(WAIT, |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "{:?}", s.clusters[0].health);
    let kill = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testbed/kill-ssh.sh"))
        .arg(cluster)
        .status()
        .expect("kill-ssh.sh");
    assert!(kill.success());
    let s = fleet.wait_for(WAIT, |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    match &s.clusters[0].health {
        Health::Stale { last_ok, .. } => assert!(last_ok.is_some()),
        h => panic!("expected stale after the link dropped, got {h:?}"),
    }
    assert!(s.clusters[0].snapshot.is_some(), "the last good snapshot is kept");
    let s = fleet.wait_for(WAIT, |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "reconnected: {:?}", s.clusters[0].health);
}

/// A refresh: one job query and one node query, each with the partition list beside it
/// (every text `squeue` loads it; `sinfo --json` and `scontrol show node --json` too).
async fn one_refresh_costs_one_job_query_and_at_most_four_controller_rpcs(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let _quiet = cluster_quiet(cluster);
    let b = backend(cluster);
    b.snapshot().await.expect("warm up (release detection)");
    let before = b.rpc_counts().await.expect("sdiag");
    const REFRESHES: u64 = 4;
    for _ in 0..REFRESHES {
        b.snapshot().await.expect("snapshot");
    }
    let after = b.rpc_counts().await.expect("sdiag");
    let used = after.queries_since(&before);
    assert!(used >= REFRESHES, "sdiag saw only {used} query RPCs: is it counting?");
    assert!(used <= 4 * REFRESHES, "{used} query RPCs for {REFRESHES} refreshes on {cluster}");
    assert_eq!(after.count_since(&before, "REQUEST_JOB_INFO"), REFRESHES, "{cluster}: one job query per refresh");
}

/// A polling fleet (refresh and GPU telemetry through srun, as a hub runs them, and `doctor`
/// asked every other refresh, as a hub's viewers ask it) asks the controller for the job list
/// exactly once per refresh: `REQUEST_JOB_INFO` in sdiag equals the refreshes the fleet made,
/// with a running GPU array task for telemetry to step into.
async fn each_refresh_costs_one_job_query_with_telemetry_beside_it(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let _quiet = cluster_quiet(cluster);
    let b = backend(cluster);
    let mut s = spec("fd-rpc-count", "");
    s.command = None;
    s.gpus = 1;
    s.script = Some("#!/bin/bash\n#SBATCH --array=0-0\nsleep 300\n".into());
    let r = b.submit(&s).await.expect("submit");
    wait_snapshot(&b, WAIT, "the task to run", |s| {
        s.jobs.iter().any(|j| {
            j.array.as_ref().is_some_and(|a| a.array_id == r.id) && j.state == JobState::Running && j.gpus_allocated > 0
        })
    })
    .await;
    let mut cfg = slurm_config(cluster);
    // The test bed's stand-in nvidia-smi, at the same path on every node (tests/testbed/up.sh).
    cfg.settings.nvidia_smi = "/var/lib/flightdeck-testbed/bin/nvidia-smi".into();
    let mut telemetry = flightdeck::fleet::TelemetryOptions::default();
    telemetry.every.insert(cluster.to_string(), Duration::from_secs(1));
    let fleet = Fleet::start_with_telemetry(
        vec![Member {
            backend: std::sync::Arc::new(SlurmBackend::new(&cfg)),
            kind: "slurm".into(),
            refresh: Duration::from_secs(2),
            timeout: Duration::from_secs(20),
        }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "test".into() },
        telemetry,
    );
    let attempts = |f: &Fleet| f.state().clusters[0].attempts;
    // Start right after a refresh ended and the telemetry read once, and stop right after
    // another: none is half counted.
    let s = fleet.wait_for(WAIT, |s| s.clusters[0].attempts >= 2 && s.clusters[0].gpu_use.is_some()).await;
    assert!(s.clusters[0].gpu_use.is_some(), "telemetry read the running task: {:?}", s.clusters[0].telemetry_error);
    let first = attempts(&fleet);
    fleet.wait_for(WAIT, |s| s.clusters[0].attempts > first).await;
    // A hub's viewers ask for `doctor` every refresh interval: the first one is counted from,
    // the others measure over the poller's refreshes; none refreshes by itself.
    let first_doctor = fleet.diagnose(cluster).await.expect("doctor");
    let before = b.rpc_counts().await.expect("sdiag");
    let from = attempts(&fleet);
    const REFRESHES: u64 = 6;
    for n in 1..=3 {
        fleet.wait_for(WAIT, |s| s.clusters[0].attempts >= from + 2 * n).await;
        let d = fleet.diagnose(cluster).await.expect("doctor");
        let rpcs = d.get("controller RPCs per refresh").unwrap_or_default().to_string();
        assert!(rpcs.contains("(1 job queries;"), "{cluster}: doctor says {rpcs}");
        assert!(d.get("bytes per job").is_some(), "{:?}", d.facts);
        assert!(d.get("GPU telemetry controller cost").is_some_and(|c| c.contains("no job query")), "{:?}", d.facts);
    }
    assert!(
        first_doctor.get("controller RPCs per refresh").is_some_and(|v| v.starts_with("measured from the next doctor")),
        "{:?}",
        first_doctor.facts
    );
    fleet.wait_for(WAIT, |s| s.clusters[0].attempts >= from + REFRESHES).await;
    let after = b.rpc_counts().await.expect("sdiag");
    let made = attempts(&fleet) - from;
    let job_queries = after.count_since(&before, "REQUEST_JOB_INFO");
    eprintln!("{cluster}: {job_queries} REQUEST_JOB_INFO for {made} refreshes; by type {:?}", {
        let mut d = after.by_type.clone();
        d.retain(|k, v| *v > before.by_type.get(k).copied().unwrap_or(0));
        d.iter().map(|(k, v)| (k.clone(), v - before.by_type.get(k).copied().unwrap_or(0))).collect::<Vec<_>>()
    });
    assert_eq!(made, REFRESHES, "the fleet refreshed as often as waited for");
    assert_eq!(job_queries, made, "{cluster}: one job query per refresh");
    cancel_quietly(&b, &JobRef::new(cluster, format!("{}_[*]", r.id))).await;
    cancel_quietly(&b, &r).await;
}

async fn slurm_errors_reach_the_user(cluster: &str) {
    let _read = cluster_read(cluster);
    let b = backend(cluster);
    let err = b.job_action(&JobRef::new(cluster, "999999"), JobAction::Cancel).await.unwrap_err().to_string();
    assert!(err.to_lowercase().contains("invalid job id"), "{err}");
    let err = b.node_action("no-such-node", &NodeAction::Resume).await.unwrap_err().to_string();
    assert!(err.to_lowercase().contains("invalid node name"), "{err}");
    let mut s = spec("fd-bad-queue", "true");
    s.partition = Some("nosuchpart".into());
    let err = b.submit(&s).await.unwrap_err().to_string();
    assert!(err.to_lowercase().contains("invalid partition"), "Slurm's own words: {err}");
    // The test bed has no pyxis: a container image is refused before anything is submitted.
    let mut s = spec("fd-image", "true");
    s.image = Some("nvcr.io#nvidia/pytorch:24.01-py3".into());
    let err = b.submit(&s).await.unwrap_err().to_string();
    assert!(err.contains("pyxis"), "{err}");
}

async fn job_output_is_tailed_and_followed(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let r = b.submit(&spec("fd-log", "seq 1 2000; echo 'it said: $(id)'; sleep 300")).await.expect("submit");
    let snap =
        wait_snapshot(&b, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    let path = job(&snap, &r).unwrap().stdout.clone().expect("stdout path");
    assert!(path.starts_with('/') && !path.contains('%'), "expanded stdout path: {path}");
    // The job writes a little after it starts; poll until the last line is there.
    let started = std::time::Instant::now();
    let tail = loop {
        let chunk = b.read_log(&path, None, 64).await.expect("read log");
        if chunk.data.contains("it said") || started.elapsed() > WAIT {
            break chunk;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert!(tail.data.ends_with("it said: $(id)\n"), "{:?}", tail.data);
    assert!(tail.data.len() <= 64);
    assert!(tail.offset > 8000, "offset {}", tail.offset);
    // Nothing new since: an empty follow read at the same offset.
    let next = b.read_log(&path, Some(tail.offset), 64).await.expect("follow");
    assert_eq!((next.data.as_str(), next.offset, next.dropped), ("", tail.offset, 0));
    // From the start with a small bound: the newest bytes win and the rest is counted.
    let bounded = b.read_log(&path, Some(0), 100).await.expect("bounded");
    assert_eq!(bounded.dropped + 100, tail.offset);
    cancel_quietly(&b, &r).await;
}

/// The pipe-separated fallback sees the same queue and nodes as `--json`.
async fn text_fallback_agrees_with_json(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let json = backend(cluster);
    let text = SlurmBackend::text_only(&slurm_config(cluster));
    let mut s = spec("fd-text-vs-json", "sleep 300");
    s.gpus = 1;
    let r = json.submit(&s).await.expect("submit");
    wait_snapshot(&json, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    let (a, b) = (json.snapshot().await.expect("json"), text.snapshot().await.expect("text"));
    let ja = job(&a, &r).unwrap();
    let jb = job(&b, &r).expect("the text snapshot lists the job");
    assert_eq!((&jb.name, jb.state, &jb.nodes, &jb.partition), (&ja.name, ja.state, &ja.nodes, &ja.partition));
    assert_eq!(jb.start_time, ja.start_time, "text times are read in UTC");
    assert!(a.notes.is_empty(), "{:?}", a.notes);
    assert!(b.notes.iter().any(|n| n.contains("text output")), "the text snapshot says what it lacks: {:?}", b.notes);
    let ids = |s: &Snapshot| {
        s.jobs.iter().filter(|j| !j.state.is_finished()).map(|j| j.job_ref.id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&b), ids(&a));
    let nodes =
        |s: &Snapshot| s.nodes.iter().map(|n| (n.name.clone(), (n.state, n.gpus_total()))).collect::<BTreeMap<_, _>>();
    assert_eq!(nodes(&b), nodes(&a));
    cancel_quietly(&json, &r).await;
}

/// The refresh's job listing (`squeue --Format`, the model's fields) reads a running GPU job
/// as `squeue --json` does, every listed job is in both, and `doctor` reports the bytes: a
/// tenth of the JSON's or less. (At most 300 per job is held on the captures in
/// `tests/slurm_parse.rs`; here the listing also carries other scenarios' recently ended jobs,
/// some with deliberately long hostile names, so the bound is 320.)
async fn the_field_listing_agrees_with_json_at_a_tenth_of_the_bytes(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let fields = backend(cluster);
    let json = SlurmBackend::json_listing(&slurm_config(cluster));
    let mut s = spec("fd-fields-vs-json", "sleep 300");
    s.gpus = 1;
    let r = fields.submit(&s).await.expect("submit");
    wait_snapshot(&fields, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    let (a, b) = (fields.snapshot().await.expect("fields"), json.snapshot().await.expect("json"));
    let (ja, jb) = (job(&a, &r).unwrap(), job(&b, &r).expect("the JSON lists the job"));
    let mut jb = jb.clone();
    for (x, y) in jb.gpu_allocations.iter_mut().zip(&ja.gpu_allocations) {
        // A node shared with another GPU job: the field listing counts, it does not index.
        if y.indices.is_empty() {
            x.indices.clear();
        }
    }
    assert_eq!(ja, &jb, "{cluster}: the field listing and the JSON read the job alike");
    assert!(a.notes.is_empty(), "{:?}", a.notes);
    let ids = |s: &Snapshot| s.jobs.iter().map(|j| j.job_ref.id.clone()).collect::<std::collections::BTreeSet<_>>();
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(
        ia.is_subset(&ib) || ib.is_subset(&ia),
        "{cluster}: the same jobs but for one ending between: {ia:?} {ib:?}"
    );
    let (fa, fb) = (fields.last_refresh().unwrap(), json.last_refresh().unwrap());
    let (per_fields, per_json) = (fa.job_bytes / fa.jobs as u64, fb.job_bytes / fb.jobs as u64);
    eprintln!("{cluster}: {per_fields} B per job by fields, {per_json} B by --json ({} jobs)", fa.jobs);
    assert!(per_fields <= 320, "{cluster}: {per_fields} B per job");
    assert!(per_fields * 10 <= per_json, "{cluster}: {per_fields} B per job against the JSON's {per_json}");
    let d = fields.diagnose().await.expect("doctor");
    assert!(d.get("job listing").is_some_and(|l| l.starts_with("squeue --Format")), "{:?}", d.facts);
    let per_job: u64 = d.get("bytes per job").and_then(|v| v.parse().ok()).expect("bytes per job");
    assert!(per_job <= 320, "{cluster}: doctor says {per_job} B per job");
    assert!(d.get("bytes one refresh moved").is_some(), "{:?}", d.facts);
    cancel_quietly(&fields, &r).await;
}

/// The submit form's preview comes from the cluster: the sbatch call and script the adapter
/// sends, with the cluster's real pyxis answer (none on the test bed).
async fn the_preview_is_the_script_sbatch_gets(cluster: &str) {
    let _read = cluster_read(cluster);
    let b = backend(cluster);
    let mut s = spec("fd-preview", "python train.py");
    s.gpus = 2;
    s.gpu_type = Some("h100".into());
    let native = b.render(&s).await.expect("render");
    assert_eq!(native.dialect, flightdeck::backend::slurm::dialect::SBATCH);
    let (call, script) = native.text.split_once('\n').expect("two parts");
    assert!(call.starts_with("# sbatch ") && call.contains("--job-name=fd-preview"), "{call}");
    let sent = flightdeck::backend::slurm::script::render_sbatch(&s, &Default::default()).unwrap();
    assert_eq!(script, sent, "the preview is byte for byte the script submit sends");
    assert!(script.contains("#SBATCH --gres=gpu:h100:2"), "{script}");
    // With an image, the preview asks the cluster about pyxis and says what submit would.
    s.image = Some("nvcr.io#nvidia/pytorch:24.01-py3".into());
    let err = b.render(&s).await.unwrap_err().to_string();
    assert!(err.contains("pyxis"), "{err}");
}

/// A link that drops while the batch script is written leaves the remote side with part of
/// it: the check in front of `sbatch` refuses to submit that.
async fn a_script_that_arrives_short_is_never_submitted(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let script = b"#!/bin/sh\necho truncated\n";
    let argv =
        flightdeck::backend::slurm::commands::sbatch_checked(&["--job-name=fd-short".into()], script.len() + 100);
    let out = b.transport().output(&argv, Some(script), Duration::from_secs(30)).await.expect("ran");
    assert_eq!(out.status, Some(flightdeck::backend::slurm::commands::SHORT_SCRIPT_EXIT), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("arrived short ({} of {} bytes)", script.len(), script.len() + 100)),
        "{}",
        out.stderr
    );
    let queue = remote(&b, &["squeue", "-h", "-n", "fd-short", "-o", "%i"]).await;
    assert!(queue.trim().is_empty(), "nothing submitted: {queue}");
    // The whole script goes through.
    let argv = flightdeck::backend::slurm::commands::sbatch_checked(
        &["--job-name=fd-whole".into(), "--chdir=/tmp".into(), "--output=/dev/null".into()],
        script.len(),
    );
    let out = b.transport().output(&argv, Some(script), Duration::from_secs(30)).await.expect("ran");
    assert!(out.success(), "{}", out.stderr);
    let id = flightdeck::backend::slurm::script::parse_sbatch_output(&String::from_utf8_lossy(&out.stdout))
        .expect("a job id");
    cancel_quietly(&b, &JobRef::new(cluster, id)).await;
}

/// Slurm accepts a job name with a line break, and its text output then splits the row: a
/// name ending in a forged row would add a phantom job to a text-only cluster. Records end
/// with a mark the job's owner cannot know, so the name stays one job's name.
async fn a_job_name_with_a_line_break_cannot_pose_as_a_row_in_text_output(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let json = backend(cluster);
    let text = SlurmBackend::text_only(&slurm_config(cluster));
    let forged = "fd-evil\n999999|N/A|N/A|phantom|root|root|gpu|RUNNING|None|h100-01|1|4|16G|gres/gpu:h100:8|2026-12-03T06:00:00|N/A|N/A|1:00:00|0:00|100";
    let out = remote(
        &json,
        &[
            "sbatch",
            "--parsable",
            "--hold",
            &format!("--job-name={forged}"),
            "--output=/dev/null",
            "--chdir=/tmp",
            "--wrap=true",
        ],
    )
    .await;
    let r = JobRef::new(cluster, flightdeck::backend::slurm::script::parse_sbatch_output(&out).expect("a job id"));
    let snap = text.snapshot().await.expect("text snapshot");
    assert!(snap.jobs.iter().all(|j| j.job_ref.id != "999999"), "no phantom job");
    let shown = job(&snap, &r).expect("the real job is listed");
    assert_eq!(shown.name, forged, "its name whole, line break and all");
    cancel_quietly(&json, &r).await;
}

/// A job whose `--output` the user chose, written into `path` by a script of its own.
fn spec_writing_to(name: &str, path: &str) -> JobSpec {
    JobSpec {
        name: name.to_string(),
        script: Some(format!("#!/bin/sh\n#SBATCH --output={path}\necho written by the job\nsleep 300\n")),
        workdir: Some("/tmp".to_string()),
        time_limit: Some("10m".to_string()),
        ..JobSpec::default()
    }
}

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("/tmp/fd-{what}-{}-{nanos}", std::process::id())
}

/// Runs the job until it is running and returns its stdout handle (and the job).
async fn running_with_output(b: &SlurmBackend, spec: &JobSpec) -> (JobRef, flightdeck::model::LogHandle, String) {
    let r = b.submit(spec).await.expect("submit");
    let snap =
        wait_snapshot(b, WAIT, "the job to run", |s| job(s, &r).is_some_and(|j| j.state == JobState::Running)).await;
    let j = job(&snap, &r).unwrap();
    (r, j.stdout.clone().expect("stdout handle"), j.user.clone())
}

/// A user points a job's output at a symbolic link to a root-only file (think
/// `/root/.ssh/id_ed25519`): whoever opens that job's log reads a refusal, not the file.
async fn output_through_a_symbolic_link_is_refused(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let (secret, link) = (unique("secret"), format!("{}.out", unique("link")));
    remote(&b, &["sh", "-c", "umask 077; echo PRIVATE-KEY-MATERIAL >\"$1\"; ln -s \"$1\" \"$2\"", "x", &secret, &link])
        .await;
    let (r, handle, user) = running_with_output(&b, &spec_writing_to("fd-log-link", &link)).await;
    assert_eq!((handle.as_str(), handle.owner()), (link.as_str(), Some(user.as_str())));
    let err = b.read_log(&handle, None, 4096).await.expect_err("a link is never read").to_string();
    assert_eq!(err, format!("not reading {link}: it is a symbolic link"));
    // Following from an offset is refused the same way.
    let err = b.read_log(&handle, Some(0), 4096).await.expect_err("nor followed").to_string();
    assert!(err.contains("symbolic link") && !err.contains("PRIVATE"), "{err}");
    cancel_quietly(&b, &r).await;
    remote(&b, &["rm", "-f", &secret, &link]).await;
}

/// A job's output in a file that belongs to someone else (here `nobody`'s, appended to by a
/// root job): not the job user's to show, so not shown. The user's own file still is.
async fn output_owned_by_another_user_is_refused(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let theirs = format!("{}.out", unique("theirs"));
    remote(&b, &["sh", "-c", "echo NOT-YOURS >\"$1\"; chown nobody \"$1\"; chmod 666 \"$1\"", "x", &theirs]).await;
    let (r, handle, user) = running_with_output(&b, &spec_writing_to("fd-log-owner", &theirs)).await;
    let err = b.read_log(&handle, None, 4096).await.expect_err("another user's file").to_string();
    assert_eq!(err, format!("not reading {theirs}: it is owned by nobody, not {user}"));
    // The same path under the job user's name is read (the refusal was the owner, nothing else).
    remote(&b, &["chown", &user, &theirs]).await;
    let started = std::time::Instant::now();
    let chunk = loop {
        let chunk = b.read_log(&handle, None, 4096).await.expect("own file");
        if chunk.data.contains("written by the job") || started.elapsed() > WAIT {
            break chunk;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    // (Slurm truncates the file when the job starts: only the job's own words are left.)
    assert_eq!(chunk.data, "written by the job\n");
    // A directory is not a log either.
    let dir = flightdeck::model::LogHandle::owned_by("/tmp", user.clone());
    let err = b.read_log(&dir, None, 10).await.expect_err("a directory").to_string();
    assert_eq!(err, "not reading /tmp: it is a directory, not a regular file");
    cancel_quietly(&b, &r).await;
    remote(&b, &["rm", "-f", &theirs]).await;
}

/// Four times as many commands as the SSH link has session slots, each well inside its own
/// timeout but the last ones queued for longer than it: waiting for a slot is not part of a
/// command's timeout, so every one runs, and the connection is never thrown away.
#[tokio::test]
async fn commands_queued_for_an_ssh_slot_do_not_time_out_or_drop_the_connection() {
    // The lock keeps out the scenario that kills the cluster's SSH links on purpose.
    let _lock = cluster_lock("fd22");
    let b = backend("fd22");
    let t = b.transport();
    // One command first so that the connection exists and its generation is known.
    remote(&b, &["true"]).await;
    let generation = t.generation();
    let argv: Vec<String> = ["sleep", "0.5"].iter().map(|s| s.to_string()).collect();
    let runs = (0..32).map(|_| t.output(&argv, None, Duration::from_millis(1500)));
    let started = std::time::Instant::now();
    let results = futures_util::future::join_all(runs).await;
    let took = started.elapsed();
    for r in &results {
        let out = r.as_ref().expect("no command timed out while it waited for a slot");
        assert_eq!(out.status, Some(0), "{}", out.stderr);
    }
    assert!(took >= Duration::from_millis(1900), "four waves of eight: {took:?}");
    assert_eq!(t.generation(), generation, "the same connection throughout");
}
