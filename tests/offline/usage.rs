//! `flightdeck usage` on a computed fleet: the JSON a script reads (keys, not-known as
//! `null`, lower bounds flagged, the sources' gaps named) and the table (most held first,
//! `?` where not known, `>=` for a lower bound, the total last, backend text made printable).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use flightdeck::cli::usage::table;
use flightdeck::model::usage::{UsageAsk, UsageBy, WindowSource, compute};
use flightdeck::model::{ClusterState, FleetState, Job, JobRecord, JobRef, JobState, Snapshot};
use serde_json::Value;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn job(cluster: &str, id: &str, user: &str, gpus: u32, cost: Option<f64>) -> Job {
    let mut j = Job::new(JobRef::new(cluster, id), JobState::Running);
    j.user = user.into();
    j.account = Some("ml".into());
    j.gpus_allocated = gpus;
    j.gpu_model = Some("h100".into());
    j.start_time = Some(at("2026-12-07T10:00:00Z"));
    j.cost_per_hour = cost;
    j
}

fn cluster(name: &str, jobs: Vec<Job>) -> ClusterState {
    let mut c = ClusterState::new(name, "slurm");
    c.snapshot = Some(Arc::new(Snapshot { cluster: name.into(), jobs, ..Snapshot::default() }));
    c
}

fn fleet() -> FleetState {
    FleetState {
        clusters: vec![
            cluster("fd22", vec![job("fd22", "1", "alice", 4, None), job("fd22", "2", "bob\u{1b}[2J", 1, None)]),
            cluster("sky", vec![job("sky", "r1", "carol", 2, Some(3.0))]),
        ],
        read_only: false,
        version: 1,
    }
}

#[test]
fn the_json_names_each_figure_and_what_is_not_known() {
    let mut done = job("fd22", "9", "dave", 2, None);
    done.state = JobState::Completed;
    done.start_time = Some(at("2026-12-07T08:00:00Z"));
    done.end_time = Some(at("2026-12-07T09:30:00Z"));
    let records = [JobRecord::from_job(done)];
    let sources = [
        WindowSource { cluster: "fd22", records: &records, gap: None },
        WindowSource { cluster: "sky", records: &[], gap: Some("history: HTTP 503") },
    ];
    let ask = UsageAsk {
        by: UsageBy::User,
        now: at("2026-12-07T12:00:00Z"),
        window: Some((at("2026-12-06T12:00:00Z"), &sources)),
        idle_below_percent: Some(5.0),
    };
    let u = compute(&fleet(), &ask);
    let v: Value = serde_json::from_str(&flightdeck::output::json(&u)).unwrap();
    assert_eq!(v["by"], "user");
    assert_eq!(v["since"], "2026-12-06T12:00:00Z");
    let users: Vec<&str> = v["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(users, ["alice", "carol", "bob\u{1b}[2J", "dave"], "most held first");
    let alice = &v["rows"][0];
    assert_eq!(alice["gpus_now"], 4);
    assert_eq!(alice["jobs_now"], 1);
    assert_eq!(alice["idle_gpus_now"], 0);
    assert_eq!(alice["unmeasured_gpus_now"], 4, "no telemetry reading: idleness not known");
    assert_eq!(alice["cost_per_hour"], Value::Null, "a Slurm job has no price: null, never 0");
    assert_eq!(alice["gpu_hours"], 8.0, "4 GPUs × 2 h so far");
    assert_eq!(alice["gpu_hours_complete"], false, "sky could not say");
    assert_eq!(alice["idle_gpu_hours_at_least"], 0.0, "no telemetry: nothing known idle (the table says ?)");
    assert_eq!(alice["models"], serde_json::json!([{"model": "h100", "gpus": 4}]));
    assert_eq!(v["rows"][1]["cost_per_hour"], 3.0);
    assert_eq!(v["rows"][3]["gpu_hours"], 3.0, "dave: 2 GPUs × 1.5 h, finished");
    assert_eq!(v["total"]["gpus_now"], 7);
    assert_eq!(v["not_known"], serde_json::json!(["sky: history: HTTP 503"]));
    // JSON escapes the control a user name carried.
    assert!(!flightdeck::output::json(&u).contains('\u{1b}'));
}

#[test]
fn the_table_shows_most_held_first_marks_the_unknown_and_ends_with_the_total() {
    let records: [JobRecord; 0] = [];
    let sources = [
        WindowSource { cluster: "fd22", records: &records, gap: None },
        WindowSource { cluster: "sky", records: &[], gap: None },
    ];
    let ask = UsageAsk {
        by: UsageBy::User,
        now: at("2026-12-07T12:00:00Z"),
        window: Some((at("2026-12-06T12:00:00Z"), &sources)),
        idle_below_percent: None,
    };
    let text = table(&compute(&fleet(), &ask));
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["USER", "JOBS", "GPUS", "IDLE", "$/H", "GPU-H", "IDLE-H", "MODELS"]);
    assert_eq!(lines[1], ["alice", "1", "4", "?", "?", "8.00", "?", "h100×4"]);
    assert_eq!(lines[2], ["carol", "1", "2", "?", "3.00", "4.00", "?", "h100×2"]);
    assert_eq!(lines[3], ["bob�[2J", "1", "1", "?", "?", "2.00", "?", "h100×1"], "{text}");
    assert_eq!(lines[4], ["TOTAL", "3", "7", "?", "?", "14.00", "?", "h100×7"]);
    assert!(!text.contains('\u{1b}'));

    // Without sky's window, its row and the total are lower bounds by cluster.
    let ask = UsageAsk { by: UsageBy::Cluster, window: Some((at("2026-12-06T12:00:00Z"), &sources[..1])), ..ask };
    let text = table(&compute(&fleet(), &ask));
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0][0], "CLUSTER");
    assert_eq!(lines[1], ["fd22", "2", "5", "?", "?", "10.00", "?", "h100×5"]);
    assert_eq!(lines[2], ["sky", "1", "2", "?", "3.00", ">=4.00", "?", "h100×2"]);
    assert_eq!(lines[3][5], ">=14.00");
}
