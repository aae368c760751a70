//! GPU telemetry from Prometheus through the real HTTP client: a local stub serves recorded
//! `/api/v1/query` answers (`tests/fixtures/telemetry/prometheus/`: dcgm-exporter 2.x on
//! Kubernetes, 4.x on Slurm with HPC job mapping, AMD's device-metrics-exporter) and counts
//! what it is asked. Then the same source through a fleet built from a config with
//! `prometheus_url`, its readings joined to the cluster's jobs.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use flightdeck::backend::http::TokenSource;
use flightdeck::backend::registry::typed;
use flightdeck::backend::telemetry::TelemetrySource;
use flightdeck::backend::telemetry::prometheus::PrometheusSource;
use flightdeck::backend::{Capabilities, KindEntry, Registry};
use flightdeck::config::{ClusterKind, Config, KindConfig, KindSettings, Settings};
use flightdeck::fleet::{Fleet, FleetOptions};
use flightdeck::model::{
    GpuAllocation, GpuOwner, GpuSample, GpuSlot, Job, JobRef, JobState, Node, NodeState, Snapshot, Telemetry,
};

use crate::memory::MemoryCluster;

// ---- the stub Prometheus ----

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The body, 200.
    Serve,
    /// 400 `bad_data` for a `{__name__=~…}` selector, the body for anything else.
    RefuseSelector,
    /// 400 `bad_data` whatever is asked.
    RefuseAll,
    /// 503 `unavailable`, Prometheus's own error JSON.
    Unavailable,
    /// An auth proxy's login page, 200.
    Garbage,
    /// 401 unless the token is right.
    Unauthorized,
    /// Answers after 5 s.
    Slow,
}

struct Stub {
    body: Mutex<String>,
    mode: Mutex<Mode>,
    requests: AtomicU64,
    queries: Mutex<Vec<String>>,
    authorization: Mutex<Vec<Option<String>>>,
}

impl Stub {
    fn set(&self, mode: Mode, body: &str) {
        *self.mode.lock().unwrap() = mode;
        *self.body.lock().unwrap() = body.to_string();
    }
    fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// What Prometheus answers `query` over a recorded answer `body` (every series of the
/// metrics asked for, with all their labels): for `group by (…) (V)` and `max by (…) (V)`,
/// each series keeps only the labels named (empty ones drop), and those then alike become
/// one (`group`: value 1; `max`: the largest). Anything else, or a body that is not a
/// well-formed vector answer, is served as recorded.
fn evaluate(query: &str, body: &str) -> String {
    let Some((op, rest)) = query.split_once(" by (") else { return body.to_string() };
    let (Ok(mut answer), Some((kept, _))) = (serde_json::from_str::<serde_json::Value>(body), rest.split_once(')'))
    else {
        return body.to_string();
    };
    let kept: Vec<&str> = kept.split(", ").collect();
    let Some(result) = answer.pointer_mut("/data/result").and_then(|r| r.as_array_mut()) else {
        return body.to_string();
    };
    // A damaged answer (the tests of bad answers) goes out as it is: Prometheus's own
    // aggregation could not have made it.
    let well_formed = |s: &serde_json::Value| {
        s["metric"].as_object().is_some_and(|m| m.values().all(|v| v.is_string()))
            && s["value"].as_array().is_some_and(|v| v.len() == 2)
    };
    if !result.iter().all(well_formed) {
        return body.to_string();
    }
    let mut out: Vec<serde_json::Value> = Vec::new();
    for series in result.drain(..) {
        let mut labels = serde_json::Map::new();
        for (k, v) in series["metric"].as_object().into_iter().flatten() {
            if kept.contains(&k.as_str()) && v.as_str().is_some_and(|v| !v.is_empty()) {
                labels.insert(k.clone(), v.clone());
            }
        }
        let mut value = series["value"].clone();
        if let (Some(figure), "group") = (value.get_mut(1), op) {
            *figure = "1".into();
        }
        let figure = |v: &serde_json::Value| {
            v.get(1).and_then(|f| f.as_str()).and_then(|f| f.parse::<f64>().ok()).unwrap_or(f64::NAN)
        };
        match out.iter_mut().find(|s| s["metric"] == serde_json::Value::Object(labels.clone())) {
            Some(seen) if op == "max" && figure(&value) > figure(&seen["value"]) => seen["value"] = value,
            Some(_) => {}
            None => out.push(serde_json::json!({"metric": labels, "value": value})),
        }
    }
    *result = out;
    answer.to_string()
}

async fn query(
    State(stub): State<Arc<Stub>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    stub.requests.fetch_add(1, Ordering::SeqCst);
    let asked = params.get("query").cloned().unwrap_or_default();
    stub.queries.lock().unwrap().push(asked.clone());
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string);
    stub.authorization.lock().unwrap().push(auth.clone());
    let mode = *stub.mode.lock().unwrap();
    let body = evaluate(&asked, &stub.body.lock().unwrap());
    let refusal = || json(StatusCode::BAD_REQUEST, fixture("error-bad-data.json"));
    match mode {
        Mode::Serve => json(StatusCode::OK, body),
        Mode::RefuseSelector if asked.contains("{__name__") => refusal(),
        Mode::RefuseSelector => json(StatusCode::OK, body),
        Mode::RefuseAll => refusal(),
        Mode::Unavailable => json(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"error","errorType":"unavailable","error":"too many concurrent queries"}"#.into(),
        ),
        Mode::Garbage => {
            (StatusCode::OK, "<!DOCTYPE html><html><body>Sign in to continue</body></html>").into_response()
        }
        Mode::Unauthorized if auth.as_deref() == Some(&format!("Bearer {TOKEN}")) => json(StatusCode::OK, body),
        Mode::Unauthorized => (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response(),
        Mode::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            json(StatusCode::OK, body)
        }
    }
}

async fn start(mode: Mode, body: &str) -> (String, Arc<Stub>) {
    let stub = Arc::new(Stub {
        body: Mutex::new(body.to_string()),
        mode: Mutex::new(mode),
        requests: AtomicU64::new(0),
        queries: Mutex::new(Vec::new()),
        authorization: Mutex::new(Vec::new()),
    });
    let app = Router::new().route("/api/v1/query", get(query)).with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, stub)
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/telemetry/prometheus/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

// ---- the token ----

const TOKEN_ENV: &str = "FD_TEST_PROMETHEUS_TOKEN";
const TOKEN: &str = "s3cret-prometheus-token";

/// The token, in the environment as a deployment would put it. Set once per process,
/// before any test of the `fakes` binary reads it; std's environment lock orders this
/// against every reader, and nothing in that binary reads the environment through C (every
/// stub listens on 127.0.0.1, so no host name goes through the resolver).
fn token_from_env() -> Option<TokenSource> {
    static SET: Once = Once::new();
    // SAFETY: see above; the value never changes after this.
    SET.call_once(|| unsafe { std::env::set_var(TOKEN_ENV, TOKEN) });
    Some(TokenSource::Env(TOKEN_ENV.into()))
}

fn source(url: &str, token: Option<TokenSource>, timeout: Duration) -> PrometheusSource {
    PrometheusSource::new("hpc", url, token, None, timeout).expect("a valid source")
}

// ---- snapshots ----

fn node(name: &str, gpus: u32) -> Node {
    let mut n = Node::new("hpc", name, NodeState::Mixed);
    n.gpus = vec![GpuSlot {
        model: "h100".into(),
        gpu_product: None,
        shared: false,
        total: gpus,
        allocated: gpus,
        unhealthy: 0,
        utilisation: None,
    }];
    n
}

fn nodes(names: &[&str]) -> Snapshot {
    Snapshot { cluster: "hpc".into(), nodes: names.iter().map(|n| node(n, 4)).collect(), ..Snapshot::default() }
}

fn slurm_job(id: &str, node: &str, gpus: u32, indices: &[u32]) -> Job {
    let mut job = Job::new(JobRef::new("hpc", id), JobState::Running);
    job.gpus_allocated = gpus;
    job.nodes = vec![node.into()];
    job.gpu_allocations =
        vec![GpuAllocation { node: node.into(), model: Some("h100".into()), count: gpus, indices: indices.to_vec() }];
    job
}

/// The Slurm cluster of `dcgm-4x-slurm.json`: jobs 4242 and 4243 share dgx01 and the
/// scheduler gives no device indices there (only the exporter's `hpc_job` tells them
/// apart); 4250 holds dgx02's GPU 0 by index.
fn slurm_snapshot() -> Snapshot {
    Snapshot {
        jobs: vec![
            slurm_job("4242", "dgx01", 2, &[]),
            slurm_job("4243", "dgx01", 2, &[]),
            slurm_job("4250", "dgx02", 1, &[0]),
        ],
        ..nodes(&["dgx01", "dgx02"])
    }
}

fn gpu<'t>(t: &'t Telemetry, node: &str, index: u32) -> &'t GpuSample {
    t.gpus.iter().find(|g| g.node == node && g.index == index).unwrap_or_else(|| panic!("no {node}/{index}: {t:?}"))
}

fn close(a: Option<f32>, b: f32) -> bool {
    a.is_some_and(|a| (a - b).abs() < 0.01)
}

// ---- readings ----

#[tokio::test]
async fn dcgm_2x_on_kubernetes_finds_nodes_through_relabelling_and_pods_as_owners() {
    let (url, stub) = start(Mode::Serve, &fixture("dcgm-2x-kubernetes.json")).await;
    let prom = source(&url, None, Duration::from_secs(5));
    let t = prom.read(&nodes(&["gpu-node-a", "gpu-node-b"])).await.unwrap();
    assert_eq!(t.source, format!("prometheus {url}"));
    assert_eq!(t.gpus.len(), 4, "{t:?}");
    // `Hostname` is the exporter pod's (nvidia-dcgm-exporter-7xkq2); `kubernetes_node` names the node.
    let a0 = gpu(&t, "gpu-node-a", 0);
    assert_eq!(a0.owner, Some(GpuOwner::Pod { namespace: "ml".into(), name: "train-worker-0-7f9c2".into() }));
    assert_eq!((a0.utilisation, a0.memory_used_mb, a0.memory_total_mb), (Some(93.0), Some(61234), Some(81200)));
    assert_eq!((a0.temperature_c, a0.product.as_deref()), (Some(64.0), Some("NVIDIA A100-SXM4-80GB")));
    assert!(close(a0.power_watts, 387.412));
    assert_eq!(a0.uuid.as_deref(), Some("GPU-9c4b6f3e-1a2d-4e8f-b7c1-0d5e6f7a8b90"));
    let b0 = gpu(&t, "gpu-node-b", 0);
    assert_eq!(b0.owner, Some(GpuOwner::Pod { namespace: "research".into(), name: "notebook-alice".into() }));
    let b1 = gpu(&t, "gpu-node-b", 1);
    assert_eq!((b1.owner.as_ref(), b1.last_xid), (None, Some(48)));
    assert_eq!(b1.problems, ["XID 48: double-bit ECC error"]);
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    assert_eq!((stub.requests(), prom.requests_sent()), (2, Some(2)), "two requests for the whole cluster");
    let queries = stub.queries.lock().unwrap().clone();
    assert!(queries[0].starts_with("group by (Hostname, hostname, kubernetes_node, "), "{}", queries[0]);
    // The node is found by `kubernetes_node`, not the exporter pod's `Hostname`: only that is kept.
    assert!(queries[1].starts_with("max by (__name__, kubernetes_node, gpu) ({__name__=~"), "{}", queries[1]);
}

#[tokio::test]
async fn dcgm_4x_on_slurm_reads_job_labels_engine_activity_and_problems() {
    let (url, _stub) = start(Mode::Serve, &fixture("dcgm-4x-slurm.json")).await;
    let t = source(&url, None, Duration::from_secs(5)).read(&slurm_snapshot()).await.unwrap();
    assert_eq!(t.gpus.len(), 6, "dgx03 is not the cluster's: {t:?}");
    let owners: Vec<Option<&GpuOwner>> = (0..4).map(|i| gpu(&t, "dgx01", i).owner.as_ref()).collect();
    let job = |id: &str| GpuOwner::Job(id.into());
    assert_eq!(owners, [Some(&job("4242")), Some(&job("4242")), Some(&job("4243")), Some(&job("4243"))]);
    // GPU_UTIL says 100 for a GPU spinning one tiny kernel; the engine says 1.2 %.
    assert!(close(gpu(&t, "dgx01", 2).utilisation, 1.2), "{:?}", gpu(&t, "dgx01", 2).utilisation);
    assert!(close(gpu(&t, "dgx01", 0).utilisation, 87.1));
    let off_the_bus = gpu(&t, "dgx02", 1);
    assert_eq!(off_the_bus.last_xid, Some(79));
    assert_eq!(off_the_bus.problems, ["XID 79: GPU has fallen off the bus", "3 uncorrectable ECC errors"]);
    assert_eq!(off_the_bus.power_watts, None, "NaN is no figure");
    assert_eq!(off_the_bus.owner, None);
    assert_eq!(
        t.notes,
        [
            "1 GPU on 1 host this cluster does not list was left out: dgx03",
            "1 values were not finite numbers and were left out (first: DCGM_FI_DEV_POWER_USAGE = \"NaN\" on dgx02 GPU 1)",
        ]
    );
}

#[tokio::test]
async fn amd_device_metrics_exporter_reads_the_same_way() {
    let (url, _stub) = start(Mode::Serve, &fixture("amd-device-metrics-exporter.json")).await;
    // The scheduler's name is qualified; the exporter's is not.
    let t = source(&url, None, Duration::from_secs(5)).read(&nodes(&["mi300-07.hpc.example"])).await.unwrap();
    assert_eq!(t.gpus.len(), 3);
    let g0 = gpu(&t, "mi300-07.hpc.example", 0);
    assert_eq!(g0.owner, Some(GpuOwner::Job("9001".into())));
    assert_eq!((g0.utilisation, g0.memory_used_mb, g0.memory_total_mb), (Some(98.0), Some(182034), Some(196592)));
    assert_eq!((g0.power_watts, g0.temperature_c), (Some(705.0), Some(78.0)), "power usage, junction temperature");
    assert_eq!(g0.product.as_deref(), Some("AMD Instinct MI300X OAM"));
    assert_eq!(g0.uuid.as_deref(), Some("ccff74a1-0000-1000-80e0-c6d49f5b0d86"));
    let g2 = gpu(&t, "mi300-07.hpc.example", 2);
    assert_eq!((g2.owner.as_ref(), g2.problems.as_slice()), (None, &["1 uncorrectable ECC error".to_string()][..]));
}

#[tokio::test]
async fn the_bearer_token_comes_from_the_environment_and_never_shows() {
    let (url, stub) = start(Mode::Unauthorized, &fixture("dcgm-4x-slurm.json")).await;
    let prom = source(&url, token_from_env(), Duration::from_secs(5));
    let t = prom.read(&slurm_snapshot()).await.unwrap();
    assert_eq!(t.gpus.len(), 6);
    assert_eq!(
        stub.authorization.lock().unwrap().as_slice(),
        [Some(format!("Bearer {TOKEN}")), Some(format!("Bearer {TOKEN}"))]
    );
    let shown = format!("{prom:?} {} {:?}", t.source, t.notes);
    assert!(!shown.contains(TOKEN), "{shown}");

    // A variable that is not set: said by name, and nothing is sent.
    let unset = source(&url, Some(TokenSource::Env("FD_TEST_PROMETHEUS_UNSET".into())), Duration::from_secs(5));
    let err = unset.read(&slurm_snapshot()).await.unwrap_err().to_string();
    assert_eq!(err, "cluster hpc: authentication failed (environment variable FD_TEST_PROMETHEUS_UNSET is not set)");
    assert_eq!((stub.requests(), unset.requests_sent()), (2, Some(0)));
}

#[tokio::test]
async fn a_refused_selector_is_asked_once_more_and_no_reading_costs_more_than_three_requests() {
    let (url, stub) = start(Mode::Serve, &fixture("dcgm-4x-slurm.json")).await;
    let prom = source(&url, None, Duration::from_secs(5));
    let snap = slurm_snapshot();
    let whole = prom.read(&snap).await.unwrap();
    for _ in 0..2 {
        prom.read(&snap).await.unwrap();
    }
    assert_eq!(stub.requests(), 6, "two requests per reading");

    stub.set(Mode::RefuseSelector, &fixture("dcgm-4x-slurm.json"));
    let t = prom.read(&snap).await.unwrap();
    assert_eq!(t.gpus, whole.gpus, "the same reading either way");
    assert_eq!(stub.requests(), 9);
    assert!(
        t.notes[0].starts_with(
            "Prometheus refused the `{__name__=~…}` selector (bad_data: invalid parameter \"query\": vector selector must"
        ),
        "{:?}",
        t.notes
    );
    let queries = stub.queries.lock().unwrap().clone();
    assert!(
        queries[6].starts_with("group by (Hostname, ") && queries[6].contains(") ({__name__=~\"DCGM_FI_DEV_GPU_UTIL|")
    );
    assert!(queries[7].starts_with("group by (Hostname, "), "{}", queries[7]);
    assert!(queries[7].contains(") (DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE or "), "{}", queries[7]);
    assert!(queries[7].contains(" or amd_gpu_gfx_activity or "));
    assert!(queries[8].starts_with("max by (__name__, Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL or "), "{}", queries[8]);

    stub.set(Mode::RefuseAll, "");
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert_eq!(stub.requests(), 11);
    assert!(
        err.starts_with(&format!("`GET {url}/api/v1/query` failed (HTTP 400): bad_data: invalid parameter")),
        "{err}"
    );
    assert!(err.contains("; asked as `a or b or …`: bad_data: "), "{err}");
    assert_eq!(prom.requests_sent(), Some(11));
    assert!(stub.requests() <= 6 * 5, "the budget is 6 requests per reading");
}

#[tokio::test]
async fn failures_each_say_what_went_wrong() {
    let snap = slurm_snapshot();
    let (url, stub) = start(Mode::Unauthorized, "").await;
    let prom = source(&url, None, Duration::from_secs(5));
    assert_eq!(prom.read(&snap).await.unwrap_err().to_string(), "cluster hpc: authentication failed (401)");

    stub.set(Mode::Garbage, "");
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "cannot read the output of `GET {url}/api/v1/query`: not a Prometheus answer: expected value at line 1 \
             column 1; it begins: <!DOCTYPE html><html><body>Sign in to continue</body></html>"
        )
    );

    stub.set(Mode::Serve, r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"gpu":0}}]}}"#);
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert!(err.contains("not a Prometheus answer: invalid type: integer `0`, expected a string"), "{err}");

    stub.set(Mode::Serve, r#"{"status":"success","data":{"resultType":"scalar","result":[1767225600,"1"]}}"#);
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert!(err.contains("not a Prometheus answer: invalid type: integer `1767225600`, expected a series"), "{err}");

    stub.set(Mode::Serve, r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#);
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert!(err.ends_with(": the answer is a matrix, not an instant vector"), "{err}");

    let before = stub.requests();
    stub.set(Mode::Unavailable, "");
    let err = prom.read(&snap).await.unwrap_err().to_string();
    assert_eq!(err, format!("`GET {url}/api/v1/query` failed (HTTP 503): too many concurrent queries"));
    assert_eq!(stub.requests() - before, 1, "an overloaded server is not asked twice");

    stub.set(Mode::Slow, &fixture("dcgm-4x-slurm.json"));
    let slow = source(&url, None, Duration::from_millis(300));
    let started = std::time::Instant::now();
    let err = slow.read(&snap).await.unwrap_err().to_string();
    assert_eq!(err, format!("`GET {url}/api/v1/query` timed out after 1 s"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_server_that_is_down_and_urls_that_are_not_urls() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = source(&url, None, Duration::from_secs(2)).read(&slurm_snapshot()).await.unwrap_err().to_string();
    assert!(err.starts_with(&format!("cannot reach {url}: ")), "{err}");
    assert!(err.to_lowercase().contains("refused"), "{err}");
    assert!(!err.contains("query="), "the query is not the point: {err}");

    let bad =
        |url: &str| PrometheusSource::new("hpc", url, None, None, Duration::from_secs(1)).unwrap_err().to_string();
    assert_eq!(bad("ftp://prom:9090"), "cluster hpc: Prometheus: `ftp://prom:9090` is not an http:// or https:// URL");
    assert!(bad("http://").starts_with("cluster hpc: Prometheus: `http:` is not a URL"), "{}", bad("http://"));
    let missing = Path::new("/nonexistent/ca.pem");
    let err = PrometheusSource::new("hpc", "https://prom", None, Some(missing), Duration::from_secs(1)).unwrap_err();
    assert!(err.to_string().contains("cannot read CA file /nonexistent/ca.pem"), "{err}");
}

// ---- through the fleet ----

/// A Slurm-like cluster for the fleet: a [`MemoryCluster`] with the snapshot of
/// [`slurm_snapshot`], built by a kind of this test's own so the config's `prometheus_url` is
/// what the fleet reads.
#[derive(Debug, Clone, PartialEq)]
struct Scripted;

impl KindSettings for Scripted {
    const KIND: ClusterKind = ClusterKind::from_static("scripted");
}

fn registry() -> Registry {
    Registry::builtin().with(KindEntry {
        config: KindConfig { kind: Scripted::KIND, keys: &[], parse: |_| Ok(Settings::new(Scripted)) },
        build: |cluster| {
            let cluster = typed::<Scripted>(cluster)?;
            let backend = MemoryCluster::new(&cluster.name).snapshot_of(slurm_snapshot()).telemetry(|_| {
                panic!("the cluster's Prometheus is read, not the backend");
            });
            Ok(Arc::new(backend))
        },
        capabilities: Capabilities::default(),
        placement: flightdeck::model::Placement::default(),
        dialects: Vec::new(),
        expand: None,
        discover: flightdeck::backend::registry::discovery::nothing,
    })
}

#[tokio::test]
async fn a_fleet_with_prometheus_url_joins_the_readings_to_its_jobs() {
    let (url, stub) = start(Mode::Unauthorized, &fixture("dcgm-4x-slurm.json")).await;
    token_from_env();
    let text = format!(
        "[[cluster]]\nname = \"hpc\"\nkind = \"scripted\"\nrefresh_seconds = 1\ntelemetry_seconds = 1\n\
         timeout_seconds = 5\nprometheus_url = \"{url}/\"\nprometheus_token_env = \"{TOKEN_ENV}\"\n"
    );
    let config = Config::from_toml_str(&text, Path::new("/test/config.toml"), &registry()).unwrap();
    let fleet = Fleet::builder(&config)
        .registry(registry())
        .start(FleetOptions { read_only: true, poll: true, audit: None, actor: "tester".into() })
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let used = loop {
        let state = fleet.subscribe().borrow().clone();
        let cluster = &state.clusters[0];
        if let Some(used) = &cluster.gpu_use {
            break used.clone();
        }
        assert_eq!(cluster.telemetry_error, None, "the reading failed");
        assert!(tokio::time::Instant::now() < deadline, "no reading in 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(used.source, format!("prometheus {url}"));
    let job = |id: &str| used.job(id).unwrap_or_else(|| panic!("job {id}: {:?}", used.jobs));
    assert_eq!(job("4242").gpus, 2);
    assert!(close(job("4242").mean_utilisation, 86.2), "{:?}", job("4242"));
    assert_eq!(job("4243").gpus, 2, "told apart from 4242 by hpc_job alone");
    assert!(close(job("4243").mean_utilisation, 1.0), "{:?}", job("4243"));
    assert_eq!(job("4250").gpus, 1, "by the scheduler's device index");
    let dgx02 = used.node("dgx02");
    assert_eq!(dgx02.len(), 2);
    assert_eq!((dgx02[1].job.as_ref(), dgx02[1].sample.last_xid), (None, Some(79)));
    assert!(used.notes.iter().any(|n| n.contains("left out: dgx03")), "{:?}", used.notes);
    assert!(stub.authorization.lock().unwrap().iter().all(|a| a.as_deref() == Some(&format!("Bearer {TOKEN}"))));
}
