//! The adapter over recorded SkyPilot answers, served by a small local stub that speaks the
//! asynchronous protocol (operation → request id header → `/api/get`).
//!
//! Where the states come from: the request records are the real server's
//! (`tests/fixtures/skypilot/*.json`, captured from skypilot==0.14.1 by the test bed); the
//! states it cannot reach offline (UP clusters with GPUs, running and pending cluster jobs,
//! running/pending/failed managed jobs) are in `tests/fixtures/skypilot/recorded/`, built by
//! `make_recorded.py` with SkyPilot 0.14.1's own response models and encoders
//! (`StatusResponse`, `ClusterJobRecord`, `ManagedJobRecord`, `encode_status`, …) and
//! wrapped in a captured request record.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use flightdeck::backend::Backend;
use flightdeck::backend::skypilot::{SkyPilotBackend, SkyPilotConfig};
use flightdeck::config::ClusterConfig;
use flightdeck::model::{JobAction, JobRef, JobState, LogHandle, NodeAction, NodeState};
use flightdeck::spec::JobSpec;
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/skypilot");

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()).unwrap()
}

/// What the stub answers for each operation: `/api/get` status and record, by operation path.
#[derive(Default)]
struct Stub {
    answers: Mutex<HashMap<String, (u16, Value)>>,
    /// Operations as they came in: path and body.
    seen: Mutex<Vec<(String, Value)>>,
    /// Answer every request with this status instead (401: a refused token).
    refuse: Option<u16>,
    /// What the streaming `/logs` and `/jobs/logs` answer: the log itself.
    stream: Mutex<String>,
    /// Request id → the operation it was made for.
    ids: Mutex<HashMap<String, String>>,
}

impl Stub {
    fn answer(&self, op: &str, status: u16, record: Value) {
        self.answers.lock().unwrap().insert(op.to_string(), (status, record));
    }

    fn ops(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(p, _)| p.clone()).collect()
    }
}

async fn operation(State(s): State<Arc<Stub>>, uri: Uri, body: axum::body::Bytes) -> Response {
    if let Some(code) = s.refuse {
        return (StatusCode::from_u16(code).unwrap(), axum::Json(json!({"detail": "Invalid token"}))).into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = {
        let mut seen = s.seen.lock().unwrap();
        seen.push((uri.path().to_string(), body));
        format!("req-{}", seen.len())
    };
    s.ids.lock().unwrap().insert(id.clone(), uri.path().to_string());
    let mut h = HeaderMap::new();
    h.insert("X-Skypilot-Request-ID", id.parse().unwrap());
    (StatusCode::OK, h, "null").into_response()
}

async fn api_get(State(s): State<Arc<Stub>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let id = q.get("request_id").cloned().unwrap_or_default();
    let op = s.ids.lock().unwrap().get(&id).cloned().unwrap_or_default();
    let (status, record) = s
        .answers
        .lock()
        .unwrap()
        .get(&op)
        .cloned()
        .unwrap_or((404, json!({"detail": format!("Request '{id}' not found")})));
    (StatusCode::from_u16(status).unwrap(), axum::Json(record)).into_response()
}

/// `POST /logs`, `POST /jobs/logs`: streaming endpoints, the body is the log (seen live).
async fn logs(State(s): State<Arc<Stub>>, uri: Uri, body: axum::body::Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    s.seen.lock().unwrap().push((uri.path().to_string(), body));
    let mut h = HeaderMap::new();
    h.insert("X-Skypilot-Request-ID", "req-logs".parse().unwrap());
    (StatusCode::OK, h, s.stream.lock().unwrap().clone()).into_response()
}

async fn serve(stub: Stub) -> (SkyPilotBackend, Arc<Stub>) {
    let stub = Arc::new(stub);
    let app = Router::new()
        .route("/api/get", get(api_get))
        .route("/logs", post(logs))
        .route("/jobs/logs", post(logs))
        .route("/api/health", get(|| async { axum::Json(fixture("health.json")) }))
        .route("/api/cancel", post(|| async { "null" }))
        .fallback(operation)
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut cfg = ClusterConfig::new("sky", SkyPilotConfig { url: format!("http://{addr}"), token: None });
    cfg.timeout = Duration::from_secs(5);
    (SkyPilotBackend::new(&cfg).unwrap(), stub)
}

/// A stub with the recorded fleet: 4 clusters (UP with GPUs, INIT, STOPPED, the managed-jobs
/// controller), the jobs of the UP one, three managed jobs.
fn recorded() -> Stub {
    let stub = Stub::default();
    stub.answer("/status", 200, fixture("recorded/status_up_gpus.json"));
    stub.answer("/queue", 200, fixture("recorded/queue_running.json"));
    stub.answer("/jobs/queue/v2", 200, fixture("recorded/jobs_queue_v2_running.json"));
    stub
}

// States from recorded/status_up_gpus.json (UP 2 × H100:8 on AWS, INIT Lambda A100, STOPPED
// GCP L4:0.5, the controller) and recorded/queue_running.json (job 2 RUNNING on both nodes).
#[tokio::test]
async fn up_clusters_with_gpus_become_nodes_with_slots() {
    let (sky, stub) = serve(recorded()).await;
    let s = sky.snapshot().await.unwrap();
    let nodes: Vec<(&str, NodeState, u32, u32)> =
        s.nodes.iter().map(|n| (n.name.as_str(), n.state, n.gpus_total(), n.gpus_allocated())).collect();
    assert_eq!(
        nodes,
        [
            ("train-h100", NodeState::Allocated, 8, 8),
            ("train-h100:1", NodeState::Allocated, 8, 8),
            ("dev-a100", NodeState::Future, 1, 0),
            ("old-l4", NodeState::PoweredDown, 1, 0),
            ("sky-jobs-controller-fcd1e5cf", NodeState::Idle, 0, 0),
        ]
    );
    let head = &s.nodes[0];
    assert_eq!(head.features, ["AWS", "us-east-1", "p5.48xlarge"]);
    assert_eq!((head.gpus[0].model.as_str(), head.gpus[0].gpu_product.as_deref()), ("h100", Some("H100")));
    assert_eq!((head.cpus_total, head.memory_total_mb), (192, 2048 * 1024));
    assert_eq!(s.nodes[2].reason.as_deref(), Some("Launching on Lambda us-east-1"));
    assert!(s.nodes[3].gpus[0].shared, "half an L4 is a share");
    assert_eq!(s.release.as_deref(), Some("0.14.1"));
    // Only the UP cluster's queue is read (not INIT, STOPPED or the controller); the queue
    // and the managed jobs are asked at once, in either order.
    let mut ops = stub.ops();
    ops[1..].sort();
    assert_eq!(ops, ["/status", "/jobs/queue/v2", "/queue"]);
    let body_of = |op: &str| stub.seen.lock().unwrap().iter().find(|(p, _)| p == op).unwrap().1.clone();
    assert_eq!(body_of("/queue")["cluster_name"], "train-h100");
    assert_eq!(body_of("/status")["include_handle"], false);
    // status + managed jobs + one queue, each a POST and a GET; the first refresh also asks
    // the version.
    assert_eq!(sky.last_refresh_requests(), 7);
    sky.snapshot().await.unwrap();
    assert_eq!(sky.last_refresh_requests(), 6);
}

// States from recorded/queue_running.json: RUNNING (2x[H100:8]), PENDING, FAILED.
#[tokio::test]
async fn running_jobs_on_a_cluster_hold_its_gpus() {
    let (sky, _) = serve(recorded()).await;
    let s = sky.snapshot().await.unwrap();
    let on_cluster: Vec<_> = s.jobs.iter().filter(|j| j.partition == "train-h100").collect();
    let ids: Vec<(&str, JobState, u32)> =
        on_cluster.iter().map(|j| (j.job_ref.id.as_str(), j.state, j.gpus())).collect();
    assert_eq!(
        ids,
        [
            ("train-h100:2", JobState::Running, 16),
            ("train-h100:3", JobState::Pending, 4),
            ("train-h100:1", JobState::Failed, 1)
        ]
    );
    let train = on_cluster[0];
    assert_eq!((train.name.as_str(), train.user.as_str()), ("train", "alice"));
    assert_eq!(train.nodes, ["train-h100", "train-h100:1"]);
    assert_eq!(train.gpu_allocations.iter().map(|a| a.count).sum::<u32>(), 16);
    assert_eq!(train.start_time.unwrap().timestamp(), 1_796_290_130);
    assert_eq!(train.stdout.as_ref().unwrap().as_str(), "skypilot/train-h100/2");
    let q = s.queues.iter().find(|q| q.name == "train-h100").unwrap();
    assert_eq!((q.nodes, q.gpus_total, q.gpus_allocated), (2, 16, 16));
    assert_eq!(q.jobs_by_state.get(&JobState::Running), Some(&1));
}

// States from recorded/jobs_queue_v2_running.json: RUNNING (A100-80GB:4, recovered once),
// PENDING with details, FAILED_NO_RESOURCE with its failure reason.
#[tokio::test]
async fn managed_jobs_are_the_controllers_queue() {
    let (sky, _) = serve(recorded()).await;
    let s = sky.snapshot().await.unwrap();
    let managed: Vec<_> = s.jobs.iter().filter(|j| j.partition == "managed-jobs").collect();
    let rows: Vec<(&str, JobState, &str, u32)> =
        managed.iter().map(|j| (j.job_ref.id.as_str(), j.state, j.native_state.as_str(), j.gpus())).collect();
    assert_eq!(
        rows,
        [
            ("6", JobState::Failed, "FAILED_NO_RESOURCE", 8),
            ("7", JobState::Running, "RUNNING", 4),
            ("8", JobState::Pending, "PENDING", 1)
        ]
    );
    assert_eq!(managed[0].reason.as_deref(), Some("Failed to provision all possible launchable resources."));
    assert_eq!(managed[1].gpu_model.as_deref(), Some("a100-80gb"));
    assert_eq!(managed[1].nodes, ["finetune-7"]);
    assert_eq!(managed[1].account.as_deref(), Some("GCP/us-central1"));
    assert_eq!(managed[2].reason.as_deref(), Some("Waiting for other jobs to launch"));
    let q = s.queues.iter().find(|q| q.name == "managed-jobs").expect("the controller's queue");
    assert_eq!(q.nodes, 1, "the controller cluster is the queue's node");
    assert_eq!(q.pending_by_reason.get("Waiting for other jobs to launch"), Some(&1));
    // SkyPilot 0.14.1's /status reports no prices: no cost is made up.
    assert_eq!(s.cost_per_hour(), None);
}

// The captured empty answers: /status `[]`, /jobs/queue/v2 failing with "No in-progress
// managed jobs." (get_jobs_queue_v2_none.json, HTTP 500).
#[tokio::test]
async fn the_captured_empty_server_is_an_empty_cluster() {
    let stub = Stub::default();
    stub.answer("/status", 200, fixture("get_status_empty.json"));
    stub.answer("/jobs/queue/v2", 500, fixture("get_jobs_queue_v2_none.json"));
    let (sky, _) = serve(stub).await;
    let s = sky.snapshot().await.unwrap();
    assert!(s.jobs.is_empty() && s.nodes.is_empty() && s.notes.is_empty(), "{s:?}");
}

// A queue that fails (get_queue_missing_cluster.json: the cluster went away between /status
// and /queue) is a note, not a failed refresh.
#[tokio::test]
async fn a_queue_that_fails_is_a_note() {
    let stub = recorded();
    stub.answer("/queue", 500, fixture("get_queue_missing_cluster.json"));
    let (sky, _) = serve(stub).await;
    let s = sky.snapshot().await.unwrap();
    assert_eq!(s.nodes.len(), 5);
    assert_eq!(s.notes, ["jobs on cluster train-h100 not listed: Cluster 'nope' does not exist."]);
    assert!(s.jobs.iter().all(|j| j.partition == "managed-jobs"));
}

#[tokio::test]
async fn a_refused_token_names_the_cluster() {
    let (sky, _) = serve(Stub { refuse: Some(401), ..Stub::default() }).await;
    assert_eq!(sky.snapshot().await.unwrap_err().to_string(), "cluster sky: authentication failed (401)");
}

#[tokio::test]
async fn a_token_is_sent_as_a_bearer_and_never_shown() {
    let stub = Arc::new(Stub::default());
    let seen_auth = Arc::new(Mutex::new(None::<String>));
    let s2 = seen_auth.clone();
    let app = Router::new().fallback(move |h: HeaderMap| {
        *s2.lock().unwrap() = h.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
        async { (StatusCode::FORBIDDEN, "{}") }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "sky-s3cret\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let cfg = ClusterConfig::new(
        "sky",
        SkyPilotConfig {
            url: format!("http://{addr}"),
            token: Some(flightdeck::backend::http::TokenSource::File(token.clone())),
        },
    );
    let sky = SkyPilotBackend::new(&cfg).unwrap();
    let err = sky.snapshot().await.unwrap_err().to_string();
    assert_eq!(err, "cluster sky: authentication failed (403)");
    assert_eq!(seen_auth.lock().unwrap().as_deref(), Some("Bearer sky-s3cret"));
    let d = sky.diagnose().await.unwrap();
    let shown = format!("{d:?}");
    assert!(!shown.contains("sky-s3cret"), "{shown}");
    drop(stub);
}

// recorded/launch_ok.json: what /launch returns (`{"job_id": 4, "handle": …}`).
#[tokio::test]
async fn submit_launches_the_task_yaml_and_returns_the_job() {
    let stub = Stub::default();
    stub.answer("/launch", 200, fixture("recorded/launch_ok.json"));
    stub.answer("/jobs/launch", 200, fixture("recorded/launch_ok.json"));
    let (sky, stub) = serve(stub).await;
    let spec = JobSpec {
        name: "train".into(),
        command: Some("python train.py".into()),
        gpus: 8,
        gpu_type: Some("h100".into()),
        partition: Some("train-h100".into()),
        env: [("SEED".to_string(), "1".to_string())].into(),
        ..JobSpec::default()
    };
    let job = sky.submit(&spec).await.unwrap();
    assert_eq!(job, JobRef::new("sky", "train-h100:4"));
    let (path, body) = stub.seen.lock().unwrap()[0].clone();
    assert_eq!((path.as_str(), body["cluster_name"].as_str()), ("/launch", Some("train-h100")));
    let task = body["task"].as_str().unwrap();
    assert!(
        task.contains("accelerators: H100:8") && task.contains("SEED:") && task.contains("run: python train.py"),
        "{task}"
    );

    let preview = sky.render(&spec).await.unwrap();
    assert_eq!(preview.dialect, flightdeck::backend::skypilot::dialect::SKYPILOT_TASK);
    assert!(preview.text.starts_with("# POST /launch on cluster train-h100\n"), "{}", preview.text);
    assert!(preview.text.contains(task), "the preview is the YAML that is sent");

    let mut managed = spec.clone();
    managed.partition = Some("managed-jobs".into());
    assert_eq!(sky.submit(&managed).await.unwrap(), JobRef::new("sky", "4"));
    assert_eq!(stub.seen.lock().unwrap()[1].1["name"], "train");
}

#[tokio::test]
async fn cancel_and_teardown_go_to_the_right_operation() {
    let stub = Stub::default();
    let ok = fixture("get_status_empty.json");
    for op in ["/cancel", "/jobs/cancel", "/down"] {
        stub.answer(op, 200, ok.clone());
    }
    let (sky, stub) = serve(stub).await;
    sky.job_action(&JobRef::new("sky", "train-h100:2"), JobAction::Cancel).await.unwrap();
    sky.job_action(&JobRef::new("sky", "7"), JobAction::Cancel).await.unwrap();
    let said = sky.node_action("train-h100:1", &NodeAction::Teardown).await.unwrap();
    assert!(said.contains("cluster train-h100 torn down"), "{said}");
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        ("/cancel".to_string(), json!({"cluster_name": "train-h100", "job_ids": [2], "all_users": true}))
    );
    assert_eq!(seen[1], ("/jobs/cancel".to_string(), json!({"job_ids": [7], "all_users": true})));
    assert_eq!(seen[2], ("/down".to_string(), json!({"cluster_name": "train-h100"})));
    let err = sky.node_action("train-h100", &NodeAction::Cordon).await.unwrap_err();
    assert!(err.to_string().contains("SkyPilot cannot cordon"), "{err}");
    let err = sky.job_action(&JobRef::new("sky", "not an id"), JobAction::Cancel).await.unwrap_err();
    assert!(err.to_string().contains("not a SkyPilot job id"), "{err}");
}

// The log of a job is the body of the streaming POST /logs (as the real server answers it:
// tests/bed/skypilot_live.rs reads one from a job running on the Slurm infra).
#[tokio::test]
async fn logs_come_from_the_streaming_answer_bounded_and_without_colours() {
    let stub = Stub::default();
    *stub.stream.lock().unwrap() = "\u{1b}[32mline one\u{1b}[0m\nline two\nline three\n".into();
    let (sky, stub) = serve(stub).await;
    let handle = LogHandle::new("skypilot/train-h100/2");
    let tail = sky.read_log(&handle, None, 1 << 20).await.unwrap();
    assert_eq!(tail.data, "line one\nline two\nline three\n");
    assert_eq!((tail.offset, tail.dropped), (29, 0));
    let small = sky.read_log(&handle, None, 11).await.unwrap();
    assert_eq!(small.data, "line three\n");
    let more = sky.read_log(&handle, Some(29), 1 << 20).await.unwrap();
    assert_eq!((more.data.as_str(), more.offset), ("", 29));
    sky.read_log(&LogHandle::new("skypilot-managed/7"), None, 100).await.unwrap();
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen[0].1, json!({"cluster_name": "train-h100", "job_id": 2, "follow": false, "tail": 0}));
    assert_eq!(seen.last().unwrap(), &("/jobs/logs".to_string(), json!({"job_id": 7, "follow": false})));
    let err = sky.read_log(&LogHandle::new("pod/a/b/c"), None, 100).await.unwrap_err();
    assert!(err.to_string().contains("not a SkyPilot log handle"), "{err}");
}

/// 500 clusters with their queues through the stub: one refresh, every node mapped.
#[tokio::test(flavor = "multi_thread")]
async fn five_hundred_clusters_in_one_refresh() {
    let status = fixture("recorded/status_up_gpus.json");
    let one = serde_json::from_str::<Vec<Value>>(status["return_value"].as_str().unwrap()).unwrap()[0].clone();
    let many: Vec<Value> = (0..500)
        .map(|i| {
            let mut c = one.clone();
            c["name"] = json!(format!("c{i:03}"));
            c
        })
        .collect();
    let mut record = status.clone();
    record["return_value"] = json!(serde_json::to_string(&many).unwrap());
    let stub = recorded();
    stub.answer("/status", 200, record);
    let (sky, stub) = serve(stub).await;
    let t = std::time::Instant::now();
    let s = sky.snapshot().await.unwrap();
    eprintln!("500 clusters, 500 queues: refresh in {:?}", t.elapsed());
    assert_eq!(s.nodes.len(), 1000);
    assert_eq!(s.jobs.len(), 500 * 3 + 3);
    assert_eq!(stub.ops().len(), 502);
    assert_eq!(sky.last_refresh_requests(), 2 * 502 + 1);
}

// The tasks in recorded/: managed job 7's user_yaml is a flightdeck task carrying
// FLIGHTDECK_MIGRATED_FROM=hpc/4242; job 8's a user's task with setup, choices, spot and a
// file mount; job 6 has none; cluster train-h100 was started by a task tagged
// k8s-prod/ml/train-7 (its last_creation_yaml), whose job is train-h100:2.
#[tokio::test]
async fn a_managed_jobs_spec_is_its_stored_task() {
    let (sky, stub) = serve(recorded()).await;
    let got = sky.job_spec(&JobRef::new("sky", "7")).await.unwrap();
    let want = JobSpec {
        name: "finetune".into(),
        script: Some("python finetune.py --epochs 3\npython eval.py\n".into()),
        gpus: 4,
        gpu_type: Some("a100-80gb".into()),
        cpus: Some(48),
        memory: Some("340G".into()),
        nodes: Some(1),
        env: [("WANDB_MODE".to_string(), "offline".to_string())].into(),
        managed: true,
        migrated_from: Some("hpc/4242".into()),
        ..JobSpec::default()
    };
    assert_eq!(got.spec, want);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    let (op, body) = stub.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!((op.as_str(), &body["job_ids"]), ("/jobs/queue/v2", &json!([7])));
    assert!(body.get("fields").is_none(), "every field, user_yaml with them");

    // The stub answers every job for any job_ids: only job 8's record is read.
    let sweep = sky.job_spec(&JobRef::new("sky", "8")).await.unwrap();
    assert_eq!(sweep.spec.script.as_deref(), Some("pip install -r requirements.txt\npython sweep.py --lr $LR"));
    assert_eq!((sweep.spec.gpus, sweep.spec.gpu_type.as_deref()), (1, Some("h100")));
    assert_eq!(sweep.spec.env.get("LR").map(String::as_str), Some("0.001"));
    let said = sweep.warnings.join("\n");
    for name in ["`setup`", "`resources.any_of`", "`resources.use_spot`", "`file_mounts`"] {
        assert!(said.contains(name), "{name} in {said}");
    }

    let err = sky.job_spec(&JobRef::new("sky", "6")).await.unwrap_err().to_string();
    assert!(err.contains("kept no task (user_yaml) for managed job 6"), "{err}");
    let err = sky.job_spec(&JobRef::new("sky", "99")).await.unwrap_err();
    assert!(matches!(err, flightdeck::backend::BackendError::NotFound(_)), "{err}");
    let err = sky.job_spec(&JobRef::new("sky", "train-h100:2")).await.unwrap_err().to_string();
    assert!(err.contains("keeps no task for a job on a cluster") && err.contains("last_creation_yaml"), "{err}");
}

#[tokio::test]
async fn no_managed_jobs_at_all_is_not_found() {
    let stub = Stub::default();
    stub.answer("/jobs/queue/v2", 500, fixture("get_jobs_queue_v2_none.json"));
    let (sky, _) = serve(stub).await;
    let err = sky.job_spec(&JobRef::new("sky", "7")).await.unwrap_err();
    assert!(matches!(err, flightdeck::backend::BackendError::NotFound(_)), "{err}");
}

#[tokio::test]
async fn the_listing_says_where_jobs_were_migrated_from() {
    let (sky, _) = serve(recorded()).await;
    let s = sky.snapshot().await.unwrap();
    let from: Vec<(&str, Option<&str>)> =
        s.jobs.iter().map(|j| (j.job_ref.id.as_str(), j.migrated_from.as_deref())).collect();
    assert_eq!(
        from,
        [
            ("train-h100:2", Some("k8s-prod/ml/train-7")),
            ("train-h100:3", None),
            ("train-h100:1", None),
            ("6", None),
            ("7", Some("hpc/4242")),
            ("8", None),
        ]
    );
}
