//! `flightdeck usage` on a computed fleet: the JSON a script reads (keys, not-known as
//! `null`, lower bounds flagged, the window's dollars, the sources' gaps named) and the table (most held first,
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
    assert_eq!(alice["cost_window"], Value::Null, "no price in the window: null, never 0");
    assert_eq!(v["rows"][1]["cost_window"], 6.0, "carol: $3/h × 2 h so far");
    assert_eq!(v["rows"][1]["cost_window_complete"], false, "sky could not say all");
    assert_eq!(v["rows"][3]["cost_window"], Value::Null, "dave's Slurm record has no price");
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
    assert_eq!(lines[0], ["USER", "JOBS", "GPUS", "IDLE", "$/H", "GPU-H", "IDLE-H", "SPENT", "MODELS"]);
    assert_eq!(lines[1], ["alice", "1", "4", "?", "?", "8.00", "?", "?", "h100×4"]);
    // carol's run: $3/h × 2 h so far; the Slurm jobs' dollars are not known, so the total's
    // are at least hers.
    assert_eq!(lines[2], ["carol", "1", "2", "?", "3.00", "4.00", "?", "6.00", "h100×2"]);
    assert_eq!(lines[3], ["bob�[2J", "1", "1", "?", "?", "2.00", "?", "?", "h100×1"], "{text}");
    assert_eq!(lines[4], ["TOTAL", "3", "7", "?", "?", "14.00", "?", ">=6.00", "h100×7"]);
    assert!(!text.contains('\u{1b}'));

    // Without sky's window, its row and the total are lower bounds by cluster.
    let ask = UsageAsk { by: UsageBy::Cluster, window: Some((at("2026-12-06T12:00:00Z"), &sources[..1])), ..ask };
    let text = table(&compute(&fleet(), &ask));
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0][0], "CLUSTER");
    assert_eq!(lines[1], ["fd22", "2", "5", "?", "?", "10.00", "?", "?", "h100×5"]);
    assert_eq!(lines[2], ["sky", "1", "2", "?", "3.00", ">=4.00", "?", ">=6.00", "h100×2"]);
    assert_eq!(lines[3][5], ">=14.00");
}

fn held(cluster: &str, id: &str, user: &str, gpus: u32) -> Job {
    let mut j = job(cluster, id, user, gpus, None);
    j.start_time = Some(Utc::now() - chrono::TimeDelta::hours(1));
    j
}

/// A fleet of `backends`, polled until each has a snapshot.
async fn polled(backends: Vec<Arc<crate::memory::MemoryCluster>>) -> flightdeck::fleet::Fleet {
    use flightdeck::fleet::{Fleet, FleetOptions, Member};
    let members = backends
        .into_iter()
        .map(|backend| Member {
            backend,
            kind: "sim".into(),
            refresh: std::time::Duration::from_millis(50),
            timeout: std::time::Duration::from_secs(2),
        })
        .collect();
    let fleet = Fleet::start(members, FleetOptions { read_only: true, poll: true, audit: None, actor: "t@h".into() });
    fleet.wait_for(std::time::Duration::from_secs(5), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    fleet
}

#[tokio::test]
async fn a_hubs_part_is_merged_with_the_rest_and_an_older_hub_is_counted_here_and_named() {
    use crate::memory::MemoryCluster;
    use flightdeck::model::usage::{Usage, UsageQuery, UsageRow};
    // A hub that answers a viewer (bob): his row, everyone's total.
    let hub_part = Usage {
        rows: vec![UsageRow { key: "bob".into(), jobs_now: 1, gpus_now: 2, ..UsageRow::default() }],
        total: UsageRow { key: "total".into(), jobs_now: 3, gpus_now: 10, ..UsageRow::default() },
        rows_of: Some("bob".into()),
        ..Usage::default()
    };
    let hub = MemoryCluster::new("hub-c").usage(move |_| Ok(Some(hub_part.clone())));
    // An older hub: the client has only its picture.
    let older = MemoryCluster::new("old-c")
        .jobs(vec![held("old-c", "1", "alice", 4), held("old-c", "2", "bob", 1)])
        .usage(|_| {
            Err(flightdeck::backend::BackendError::Unsupported(
                "the hub at http://old:50051 is older and has no Usage call: counted here from what it lists".into(),
            ))
        });
    let local = MemoryCluster::new("lab").jobs(vec![held("lab", "7", "bob", 8)]);
    let fleet = polled(vec![Arc::new(hub), Arc::new(older), Arc::new(local)]).await;
    let query = UsageQuery { by: UsageBy::User, since: Some(Utc::now() - chrono::TimeDelta::days(1)), until: None };
    let answer = fleet.usage(&query, None).await;
    assert!(!answer.failed, "an older hub is no failure: {:?}", answer.usage.not_known);
    let u = answer.usage;
    // The hub's viewer answer keeps the rows to bob's: his 2 there, 1 + 8 counted here.
    let rows: Vec<(&str, u32)> = u.rows.iter().map(|r| (r.key.as_str(), r.gpus_now)).collect();
    assert_eq!(rows, vec![("bob", 11)]);
    assert_eq!(u.total.gpus_now, 10 + 5 + 8, "every part's total");
    assert!(
        u.not_known.iter().any(|n| n.starts_with("old-c: the hub at http://old:50051 is older and has no Usage call")),
        "{:?}",
        u.not_known
    );
    // What the older hub's clusters list now is all the client has of their window.
    assert!(u.not_known.iter().any(|n| n.starts_with("old-c: finished jobs counted only")), "{:?}", u.not_known);
    assert!(!u.total.gpu_hours_complete);
}
