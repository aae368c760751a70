//! The dstack adapter against a small local HTTP stub, for what the offline test bed cannot
//! reach: RUNNING runs on priced machines, busy and idle instances with GPUs, and thousands
//! of runs paged through `prev_submitted_at` + `prev_run_id`. The responses are the files of
//! `tests/fixtures/dstack/` (written from the real server's `openapi.json` schemas; see its
//! README), or generated from the same shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use flightdeck::backend::Backend;
use flightdeck::backend::dstack::config::TokenFrom;
use flightdeck::backend::dstack::{DstackBackend, DstackConfig};
use flightdeck::backend::http::{Secret, TokenSource};
use flightdeck::config::ClusterConfig;
use flightdeck::model::{JobState, NodeState};
use serde_json::{Value, json};

const TOKEN: &str = "stub-token";

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/dstack/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[derive(Default)]
struct Stub {
    runs: Vec<Value>,
    fleets: Vec<Value>,
    instances: Vec<Value>,
    run_requests: AtomicU64,
}

fn authorised(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn forbidden() -> (StatusCode, Json<Value>) {
    (StatusCode::FORBIDDEN, Json(json!({"detail": {"msg": "Invalid token", "code": null}})))
}

/// `runs/list` as the server pages it: newest first, after the cursor, `limit` at most.
async fn runs_list(
    State(stub): State<Arc<Stub>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorised(&headers) {
        return forbidden();
    }
    stub.run_requests.fetch_add(1, Ordering::Relaxed);
    let limit = body["limit"].as_u64().unwrap_or(100) as usize;
    let after = body["prev_submitted_at"]
        .as_str()
        .map(|at| (at.to_string(), body["prev_run_id"].as_str().unwrap_or("").to_string()));
    let page: Vec<Value> = stub
        .runs
        .iter()
        .filter(|r| match &after {
            // Descending by (submitted_at, id): strictly after the cursor.
            Some((at, id)) => {
                let key =
                    (r["submitted_at"].as_str().unwrap_or("").to_string(), r["id"].as_str().unwrap_or("").to_string());
                key < (at.clone(), id.clone())
            }
            None => true,
        })
        .take(limit)
        .cloned()
        .collect();
    (StatusCode::OK, Json(Value::Array(page)))
}

async fn start(stub: Stub) -> (String, Arc<Stub>) {
    let stub = Arc::new(stub);
    let listed = |items: fn(&Stub) -> &Vec<Value>| {
        move |State(stub): State<Arc<Stub>>, headers: HeaderMap| async move {
            if !authorised(&headers) {
                return forbidden();
            }
            (StatusCode::OK, Json(Value::Array(items(&stub).clone())))
        }
    };
    let app = Router::new()
        .route("/api/server/get_info", post(|| async { Json(json!({"server_version": "0.22.5"})) }))
        .route("/api/runs/list", post(runs_list))
        .route("/api/fleets/list", post(listed(|s| &s.fleets)))
        .route("/api/instances/list", post(listed(|s| &s.instances)))
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), stub)
}

/// A backend whose token is given as is (no environment: tests run in parallel).
fn backend(url: &str, token: &str) -> DstackBackend {
    let mut settings = DstackConfig::new(url, "main", None);
    settings.token =
        Some(TokenFrom::Source(TokenSource::Given { secret: Secret::new(token), from: "the test".into() }));
    let mut cfg = ClusterConfig::new("dstack-main", settings);
    cfg.timeout = Duration::from_secs(10);
    DstackBackend::new(&cfg).unwrap()
}

fn recorded() -> Stub {
    let as_list = |v: Value| v.as_array().unwrap().clone();
    Stub {
        runs: as_list(fixture("runs-running.json")),
        fleets: as_list(fixture("fleets.json")),
        instances: as_list(fixture("instances.json")),
        ..Stub::default()
    }
}

/// Recorded responses (see the module comment): a RUNNING run on an 8×H100 machine at
/// $23.92/h, a pending no-capacity run as the real server gave it, a soft-deleted run; a busy,
/// an idle and a block-shared instance; three fleets, one without instances.
#[tokio::test]
async fn running_runs_busy_instances_and_prices() {
    let (url, stub) = start(recorded()).await;
    let b = backend(&url, TOKEN);
    let snap = b.snapshot().await.unwrap();
    assert_eq!(snap.release.as_deref(), Some("0.22.5"));
    let ids: Vec<&str> = snap.jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
    assert_eq!(ids, ["train-llm", "probe-retry"], "the deleted run is left out");

    let train = &snap.jobs[0];
    assert_eq!(
        (train.state, train.partition.as_str(), train.user.as_str()),
        (JobState::Running, "h100-fleet", "alice")
    );
    assert_eq!((train.gpus_requested, train.gpus_allocated, train.gpu_model.as_deref()), (8, 8, Some("h100")));
    assert_eq!(train.nodes, ["h100-fleet-0"]);
    assert_eq!(train.cost_per_hour, Some(23.92));
    assert_eq!(train.time_limit_secs, Some(7200));
    assert!(train.start_time.is_some() && train.end_time.is_none());

    let pending = &snap.jobs[1];
    assert_eq!(pending.state, JobState::Pending);
    assert!(pending.reason.as_deref().unwrap().starts_with("retrying: no capacity: No matching fleet found"));

    let node = |name: &str| snap.nodes.iter().find(|n| n.name == name).unwrap();
    let busy = node("h100-fleet-0");
    assert_eq!((busy.state, busy.gpus_total(), busy.gpus_allocated()), (NodeState::Allocated, 8, 8));
    assert_eq!((busy.cost_per_hour, busy.partitions.clone()), (Some(23.92), vec!["h100-fleet".to_string()]));
    assert!(busy.features.contains(&"gpu_8x_h100_sxm5".to_string()));
    let idle = node("h100-fleet-1");
    assert_eq!((idle.state, idle.gpus_total(), idle.gpus_allocated()), (NodeState::Idle, 1, 0));
    // One block of four busy: a quarter of its GPUs held, the node mixed and not responding.
    let shared = node("a100-pool-0");
    assert_eq!((shared.state, shared.gpus_total(), shared.gpus_allocated()), (NodeState::Mixed, 4, 1));
    assert!(
        shared.has_flag("NOT_RESPONDING") && shared.has_flag("WARNING") && shared.features.contains(&"spot".into())
    );

    let queues: Vec<(&str, u32, u32)> = snap.queues.iter().map(|q| (q.name.as_str(), q.nodes, q.gpus_total)).collect();
    assert_eq!(queues, [("a100-pool", 1, 4), ("empty-fleet", 0, 0), ("h100-fleet", 2, 9)]);
    let total = snap.cost_per_hour().unwrap();
    assert!((total - (23.92 + 2.49 + 5.2)).abs() < 1e-9, "{total}");
    assert_eq!(stub.run_requests.load(Ordering::Relaxed), 1);

    // A second refresh: the release is known, three requests (one page of runs).
    let before = b.api().requests();
    b.snapshot().await.unwrap();
    assert_eq!(b.api().requests() - before, 3);
    let d = b.diagnose().await.unwrap();
    assert_eq!(d.get("requests per refresh"), Some("3"));
}

/// A run in the shape of the recorded RUNNING one, numbered.
pub fn numbered_run(template: &Value, i: usize) -> Value {
    let mut r = template.clone();
    r["id"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
    // Distinct times, newest first for lower numbers.
    let secs = 1_000_000 - i as i64;
    let at = chrono::DateTime::from_timestamp(1_780_000_000 + secs, 0).unwrap();
    r["submitted_at"] = json!(at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
    r["run_spec"]["run_name"] = json!(format!("run-{i}"));
    r
}

#[tokio::test]
async fn thousands_of_runs_come_in_pages_of_a_hundred() {
    let template = fixture("runs-running.json")[0].clone();
    let stub = Stub { runs: (0..1234).map(|i| numbered_run(&template, i)).collect(), ..Stub::default() };
    let (url, stub) = start(stub).await;
    let b = backend(&url, TOKEN);
    let snap = b.snapshot().await.unwrap();
    assert_eq!(snap.jobs.len(), 1234);
    assert_eq!(snap.jobs[0].job_ref.id, "run-0");
    assert_eq!(stub.run_requests.load(Ordering::Relaxed), 13, "1234 runs: 12 full pages and a short one");
}

#[tokio::test]
async fn a_wrong_token_is_an_authentication_error_naming_the_cluster() {
    let (url, _) = start(recorded()).await;
    let err = backend(&url, "wrong").snapshot().await.unwrap_err();
    assert_eq!(err.to_string(), "cluster dstack-main: authentication failed (403)");
    assert!(!err.to_string().contains("wrong"));
}

/// `runs/get` of the stub: the recorded runs by name, else dstack's 400 "not found".
async fn runs_get(
    State(stub): State<Arc<Stub>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorised(&headers) {
        return forbidden();
    }
    match stub.runs.iter().find(|r| r["run_spec"]["run_name"] == body["run_name"]) {
        Some(run) => (StatusCode::OK, Json(run.clone())),
        None => (
            StatusCode::BAD_REQUEST,
            Json(json!({"detail": [{"msg": "Run not found", "code": "resource_not_exists"}]})),
        ),
    }
}

/// A run spec as the real server stores it (tests/fixtures/dialects/dstack/run-spec.json,
/// captured from dstack 0.22.5), served by `runs/get`: the spec comes back, and the
/// listing says where the run was migrated from.
#[tokio::test]
async fn a_runs_spec_is_read_from_runs_get() {
    let path = format!("{}/tests/fixtures/dialects/dstack/run-spec.json", env!("CARGO_MANIFEST_DIR"));
    let run_spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut run = fixture("runs-running.json")[1].clone();
    run["run_spec"] = run_spec;
    let stub = Arc::new(Stub { runs: vec![run], ..Stub::default() });
    let app = Router::new()
        .route("/api/server/get_info", post(|| async { Json(json!({"server_version": "0.22.5"})) }))
        .route("/api/project/main/runs/get", post(runs_get))
        .route("/api/runs/list", post(runs_list))
        .route("/api/fleets/list", post(|| async { Json(json!([])) }))
        .route("/api/instances/list", post(|| async { Json(json!([])) }))
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let b = backend(&url, TOKEN);

    let got = b.job_spec(&flightdeck::model::JobRef::new("dstack-main", "probe-cloud-x1")).await.unwrap();
    assert_eq!(got.spec.name, "probe-cloud-x1");
    assert_eq!((got.spec.gpus, got.spec.gpu_type.as_deref(), got.spec.nodes), (2, Some("h100"), Some(2)));
    assert_eq!((got.spec.cpus, got.spec.memory.as_deref()), (Some(4), Some("32G")));
    assert_eq!((got.spec.time_limit.as_deref(), got.spec.partition.as_deref()), (Some("2h"), Some("f1")));
    assert_eq!(got.spec.migrated_from.as_deref(), Some("hpc/123"));
    assert_eq!(got.warnings.len(), 1, "only the retry: {:?}", got.warnings);

    let err = b.job_spec(&flightdeck::model::JobRef::new("dstack-main", "gone")).await.unwrap_err();
    assert_eq!(err.to_string(), "no dstack run gone: Run not found");
    let err = b.job_spec(&flightdeck::model::JobRef::new("dstack-main", "a/b")).await.unwrap_err();
    assert!(err.to_string().contains("not a dstack run name"), "{err}");

    let snap = b.snapshot().await.unwrap();
    assert_eq!(snap.jobs[0].migrated_from.as_deref(), Some("hpc/123"));
    assert_eq!(snap.jobs[0].partition, "f1", "not placed yet: the fleet the stored spec names");
}

/// A run flightdeck submitted as `train-llm` is the run `train-llm-d3e3p` (a suffix makes each
/// submission new): the ref keeps the run's name, the NAME shown and the spec read back are
/// the configuration's. A run without a configuration name shows its run name.
#[tokio::test]
async fn a_submitted_runs_name_is_the_one_given_and_its_ref_the_runs() {
    let mut run = fixture("runs-running.json")[0].clone();
    run["run_spec"]["run_name"] = json!("train-llm-d3e3p");
    run["run_spec"]["configuration"]["name"] = json!("train-llm");
    let mut plain = fixture("runs-running.json")[1].clone();
    plain["run_spec"]["configuration"]["name"] = Value::Null;
    let stub = Stub { runs: vec![run, plain], ..recorded() };
    let (url, _) = start(stub).await;
    let b = backend(&url, TOKEN);
    let snap = b.snapshot().await.unwrap();
    let shown: Vec<(&str, &str)> = snap.jobs.iter().map(|j| (j.job_ref.id.as_str(), j.name.as_str())).collect();
    assert_eq!(shown, [("train-llm-d3e3p", "train-llm"), ("probe-retry", "probe-retry")]);

    // What a submit sends: the run name with a suffix, the configuration with the name given.
    let spec = flightdeck::spec::JobSpec {
        name: "Train LLM".into(),
        command: Some("python train.py".into()),
        ..Default::default()
    };
    let target = flightdeck::backend::dstack::manifest::Target { suffix: "d3e3p".into(), retry_secs: None };
    let (sent, _) = flightdeck::backend::dstack::manifest::run_spec_of(&spec, &target).unwrap();
    let sent = serde_json::to_value(&sent).unwrap();
    assert_eq!((&sent["run_name"], &sent["configuration"]["name"]), (&json!("train-llm-d3e3p"), &json!("train-llm")));
    // Read back, the stored spec names the job as given.
    let imported = (flightdeck::backend::Registry::builtin().dialect("dstack").unwrap().import)(&sent.to_string());
    assert_eq!(imported.unwrap().spec.name, "train-llm");
}

/// An ended run as the server lists it: the recorded running run, done at `finished_at`
/// after starting at `started_at`, renamed `name`.
fn ended(name: &str, started_at: &str, finished_at: &str) -> Value {
    let mut run = fixture("runs-running.json").as_array().unwrap()[0].clone();
    assert_eq!(run["status"], "running", "the recorded run this one is made from");
    run["id"] = json!(format!("id-{name}"));
    run["status"] = json!("done");
    run["run_spec"]["run_name"] = json!(name);
    run["submitted_at"] = json!(started_at);
    let sub = &mut run["latest_job_submission"];
    sub["submitted_at"] = json!(started_at);
    sub["finished_at"] = json!(finished_at);
    sub["status"] = json!("done");
    sub["termination_reason"] = json!("done_by_runner");
    run
}

/// `flightdeck usage --since` over ended recorded runs: each costs its machine's price for
/// its hours inside the window (one that began before the window only its part inside),
/// beside its 8 H100s' GPU-hours; the window's figures are lower bounds, because dstack lists
/// only the runs it still keeps.
#[tokio::test]
async fn usage_over_ended_recorded_runs_costs_their_hours_inside_the_window() {
    use flightdeck::model::usage::{SPENT_COLUMN, UsageAsk, UsageBy, compute, window_answers, window_sources};
    use flightdeck::model::{History, JobRecord};
    let mut stub = recorded();
    // Newest first, as the server lists them.
    stub.runs.insert(0, ended("eval", "2026-12-04T09:00:00.000000Z", "2026-12-04T11:00:00.000000Z"));
    stub.runs.insert(1, ended("warmup", "2026-12-03T23:00:00.000000Z", "2026-12-04T00:30:00.000000Z"));
    let (url, _stub) = start(stub).await;
    let snap = backend(&url, TOKEN).snapshot().await.unwrap();
    let records: Vec<JobRecord> =
        snap.jobs.iter().filter(|j| j.state.is_finished()).cloned().map(JobRecord::from_job).collect();
    let eval = records.iter().find(|r| r.job.job_ref.id == "eval").expect("the ended run is listed");
    assert_eq!(
        (eval.job.state, eval.job.gpus_allocated, eval.job.cost_per_hour),
        (JobState::Completed, 8, Some(23.92))
    );
    let history = History { records, source: "the cluster's current jobs".into(), ..History::default() };
    let answers = window_answers(vec![("dstack".to_string(), Ok(history))]);
    let sources = window_sources(&answers);
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&chrono::Utc);
    let ask = UsageAsk {
        by: UsageBy::User,
        now: at("2026-12-04T12:00:00Z"),
        window: Some((at("2026-12-04T00:00:00Z"), &sources)),
        idle_below_percent: None,
    };
    // Only the ended runs: the fleet's picture holds nothing now.
    let u = compute(&flightdeck::model::FleetState::default(), &ask);
    assert_eq!(u.rows.len(), 1, "{:?}", u.rows);
    let alice = &u.rows[0];
    assert_eq!(alice.key, "alice");
    // eval: 2 h inside; warmup: 30 min of its 90 inside. At $23.92/h, 8 GPUs each.
    let (hours, dollars) = (2.5, 2.5 * 23.92);
    assert!((alice.gpu_hours.unwrap() - 8.0 * hours).abs() < 1e-9, "{alice:?}");
    assert!((alice.cost_window.unwrap() - dollars).abs() < 1e-9, "{alice:?}");
    assert!(!alice.cost_window_complete, "dstack lists only the runs it keeps: at least");
    assert_eq!(alice.cells()[SPENT_COLUMN], format!(">={dollars:.2}"));
    assert_eq!(u.total.cost_window, alice.cost_window);
}

/// `flightdeck usage` over the recorded runs: the running run's user holds its machine's
/// 8 H100s at its price, and a project row carries the same; the pending run holds nothing.
#[tokio::test]
async fn usage_over_recorded_runs_carries_their_price() {
    use flightdeck::model::usage::{UsageAsk, UsageBy, compute};
    let (url, _stub) = start(recorded()).await;
    let snap = backend(&url, TOKEN).snapshot().await.unwrap();
    let mut cluster = flightdeck::model::ClusterState::new("dstack", "dstack");
    cluster.snapshot = Some(Arc::new(snap));
    let state = flightdeck::model::FleetState { clusters: vec![cluster], read_only: true, version: 1 };
    let ask = |by| UsageAsk { by, now: chrono::Utc::now(), window: None, idle_below_percent: None };
    let by_user = compute(&state, &ask(UsageBy::User));
    let rows: Vec<(&str, u32, Option<f64>)> =
        by_user.rows.iter().map(|r| (r.key.as_str(), r.gpus_now, r.cost_per_hour)).collect();
    assert_eq!(rows, [("alice", 8, Some(23.92))]);
    assert_eq!(by_user.rows[0].models[0].model, "h100");
    assert_eq!((by_user.total.gpus_now, by_user.total.cost_per_hour), (8, Some(23.92)));
    let by_model = compute(&state, &ask(UsageBy::Model));
    assert_eq!(
        by_model.rows.iter().map(|r| (r.key.as_str(), r.cost_per_hour)).collect::<Vec<_>>(),
        [("h100", Some(23.92))]
    );
}
