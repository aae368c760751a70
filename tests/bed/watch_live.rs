//! `flightdeck watch` against the Slurm test bed, on both releases: a job that runs a few
//! seconds and exits 3 is followed to its end through the real binary, which exits 3, and
//! `--exec` receives each change as JSON on its standard input (no shell in between).

use crate::common;

use std::time::Duration;

use tokio::process::Command;

use serde_json::Value;

use common::*;
use flightdeck::backend::slurm::script::parse_sbatch_output;

async fn a_job_is_followed_to_its_end_and_its_exit_code_returned(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let out = remote(
        &b,
        &[
            "sbatch",
            "--parsable",
            "--job-name=fd-watch",
            "--output=/dev/null",
            "--chdir=/tmp",
            "--wrap=sleep 8; exit 3",
        ],
    )
    .await;
    let job = format!("{cluster}/{}", parse_sbatch_output(&out).expect("a job id"));
    let _ = testbed_config();
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    // `sh -c` would be a shell: the words go to tee itself, the `;` included as a file name.
    let exec = format!("tee -a {} ;", events.display());
    let watch = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string(), "watch", &job, "--exec", &exec])
        .env("XDG_STATE_HOME", dir.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .current_dir(dir.path())
        // A watch that never ends is killed when the deadline drops it, not left running.
        .kill_on_drop(true)
        .output();
    // The job ends in about 8 s; a watch still running long after has missed its end.
    let deadline = Duration::from_secs(180);
    let watched = tokio::time::timeout(deadline, watch)
        .await
        .unwrap_or_else(|_| panic!("flightdeck watch {job} still running after {deadline:?}"))
        .expect("run flightdeck watch");
    let stdout = String::from_utf8_lossy(&watched.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&watched.stderr).into_owned();
    assert_eq!(watched.status.code(), Some(3), "the job's exit code; stdout {stdout} stderr {stderr}");
    // tee echoes each event to the same stdout: the watch's own lines are the others.
    let last = stdout.lines().rev().find(|l| l.contains(&job) && !l.starts_with('{')).expect("lines about the job");
    assert!(last.contains("→ failed  exit 3"), "{stdout}");
    let lines = std::fs::read_to_string(&events).expect("tee wrote the events");
    let events: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).expect("one JSON event a line")).collect();
    assert!(events.len() >= 2, "found, then ended at least: {events:?}");
    assert!(events.iter().all(|e| e["job"] == job.as_str() && e["name"] == "fd-watch"), "{events:?}");
    assert_eq!(events[0]["from"], Value::Null, "the first event is the state it was found in");
    let end = events.last().unwrap();
    assert_eq!((end["to"].as_str(), end["exit_code"].as_i64()), (Some("failed"), Some(3)), "{end}");
    assert!(dir.path().join(";").exists(), "`;` reached tee as a word, no shell read it");
}

on_both_clusters!(a_job_is_followed_to_its_end_and_its_exit_code_returned);
