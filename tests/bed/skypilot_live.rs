//! Contract tests against the real SkyPilot API server of the test bed
//! (`tests/testbed/skypilot.sh`: skypilot==0.14.1 on 127.0.0.1:46590, no cloud credentials,
//! a seeded catalog). `FD_SKYPILOT_URL` must be set (source
//! /var/lib/flightdeck-testbed/skypilot.env): a missing server fails, never skips.
//!
//! What the server cannot reach offline (UP clusters, running jobs, managed jobs) is in
//! `tests/fakes/skypilot_recorded.rs`.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightdeck::backend::Backend;
use flightdeck::backend::skypilot::{SkyPilotBackend, SkyPilotConfig, api};
use flightdeck::config::{ClusterConfig, KindSettings};
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::{Health, JobAction, JobRef, NodeAction};
use flightdeck::spec::JobSpec;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testbed/skypilot.sh");

fn url() -> String {
    std::env::var("FD_SKYPILOT_URL").unwrap_or_else(|_| {
        panic!(
            "FD_SKYPILOT_URL is not set: the SkyPilot test bed is not up. Run `bash tests/testbed/skypilot.sh`, then \
             `set -a; . /var/lib/flightdeck-testbed/skypilot.env; set +a` (tests/run.sh does both)"
        )
    })
}

fn cluster(timeout: Duration) -> ClusterConfig<SkyPilotConfig> {
    let mut c = ClusterConfig::new("sky", SkyPilotConfig { url: url(), token: None });
    c.timeout = timeout;
    c.refresh = Duration::from_millis(500);
    c
}

fn backend() -> SkyPilotBackend {
    SkyPilotBackend::new(&cluster(Duration::from_secs(60))).unwrap()
}

/// Every test but the restart reads the server under a shared lock; the restart takes it
/// alone, so no other test sees the server go away. A file lock: it also holds between test
/// binaries.
fn server_lock(exclusive: bool) -> std::fs::File {
    let path = std::env::temp_dir().join("flightdeck-testbed-skypilot.lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).expect("lock file");
    if exclusive { file.lock() } else { file.lock_shared() }.expect("lock the SkyPilot test bed");
    file
}

fn gpu_spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        command: Some("nvidia-smi".into()),
        gpus: 1,
        gpu_type: Some("h100".into()),
        ..JobSpec::default()
    }
}

#[tokio::test]
async fn empty_listings_and_what_a_refresh_costs() {
    let _lock = server_lock(false);
    let sky = backend();
    let first = sky.snapshot().await.expect("a refresh of the empty server");
    assert!(first.jobs.is_empty() && first.nodes.is_empty() && first.queues.is_empty(), "{first:?}");
    assert_eq!(first.release.as_deref(), Some("0.14.1"));
    assert!(first.notes.is_empty(), "no managed jobs is no note: {:?}", first.notes);
    // status + managed jobs, each a POST and a GET /api/get; the first also asks the version.
    assert_eq!(sky.last_refresh_requests(), 5);
    sky.snapshot().await.unwrap();
    assert_eq!(sky.last_refresh_requests(), 4);
}

#[tokio::test]
async fn a_managed_jobs_listing_with_none_is_empty_not_an_error() {
    let _lock = server_lock(false);
    let sky = backend();
    let listed = api::managed_jobs(sky.requests()).await.expect("no managed jobs is an empty list");
    assert!(listed.records.is_empty());
    // The raw protocol does fail with SkyPilot's words: the adapter is what turns it into none.
    let raw = sky.requests().call("/jobs/queue/v2", Some(&serde_json::json!({}))).await.unwrap_err();
    assert!(format!("{raw:?}").contains("No in-progress managed jobs."), "{raw:?}");
}

#[tokio::test]
async fn a_launch_ends_with_the_no_cloud_access_error_shown_to_the_user() {
    let _lock = server_lock(false);
    let sky = backend();
    let err = sky.submit(&gpu_spec("fd-live-launch")).await.unwrap_err().to_string();
    assert!(err.contains("Cloud access is not set up. Run: sky check (NoCloudAccessError)"), "{err}");
    assert!(!err.contains('\u{1b}'), "ANSI codes are stripped: {err:?}");
    // A managed job too.
    let mut managed = gpu_spec("fd-live-managed");
    managed.partition = Some("managed-jobs".into());
    let err = sky.submit(&managed).await.unwrap_err().to_string();
    assert!(err.contains("Cloud access is not set up"), "{err}");

    // And as the user sees it: `flightdeck submit` prints the server's words and fails.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[[cluster]]\nname = \"sky\"\nkind = \"skypilot\"\nurl = \"{}\"\ntimeout_seconds = 60\n", url()),
    )
    .unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(&spec, "name = \"fd-live-cli\"\ncommand = \"nvidia-smi\"\ngpus = 1\ngpu_type = \"h100\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &config.display().to_string(), "submit", &spec.display().to_string(), "--cluster", "sky"])
        .env("XDG_STATE_HOME", dir.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("Cloud access is not set up. Run: sky check"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

#[tokio::test]
async fn cancel_of_a_missing_cluster_gives_the_servers_message() {
    let _lock = server_lock(false);
    let sky = backend();
    let err = sky.job_action(&JobRef::new("sky", "fd-no-such-cluster:1"), JobAction::Cancel).await.unwrap_err();
    assert_eq!(err.to_string(), "Cluster 'fd-no-such-cluster' does not exist.");
    let err = sky.node_action("fd-no-such-cluster:1", &NodeAction::Teardown).await.unwrap_err();
    assert_eq!(err.to_string(), "Cluster 'fd-no-such-cluster' does not exist.");
    let err = sky.job_action(&JobRef::new("sky", "99"), JobAction::Cancel).await.unwrap_err();
    assert_eq!(err.to_string(), "no managed job 99: No in-progress managed jobs.");
    let err = sky.job_action(&JobRef::new("sky", "fd-x:1"), JobAction::Hold).await.unwrap_err();
    assert!(err.to_string().contains("SkyPilot cannot hold a job"), "{err}");
}

#[tokio::test]
async fn doctor_reports_version_clouds_and_requests_per_refresh() {
    let _lock = server_lock(false);
    let d = backend().diagnose().await.unwrap();
    assert_eq!(d.release.as_deref(), Some("0.14.1"));
    assert_eq!(d.get("reachable"), Some("yes"));
    assert_eq!(d.get("API version"), Some("62"));
    assert_eq!(d.get("enabled clouds"), Some("none"));
    assert_eq!(d.get("auth"), Some("ok"));
    let cost = d.get("requests per refresh").unwrap();
    assert!(cost.starts_with("4 HTTP (2 operations"), "{cost}");
}

fn testbed(cmd: &str) {
    let t = Instant::now();
    let out = Command::new("bash").args([SCRIPT, cmd]).output().expect("run the test bed script");
    assert!(out.status.success(), "skypilot.sh {cmd}: {}", String::from_utf8_lossy(&out.stderr));
    eprintln!("skypilot.sh {cmd}: {:.1} s", t.elapsed().as_secs_f64());
}

/// Restarts the server even when an assertion fails midway.
struct Restart;
impl Drop for Restart {
    fn drop(&mut self) {
        testbed("start");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_stopped_mid_run_makes_the_cluster_stale_until_it_is_back() {
    let _lock = server_lock(true);
    let cfg = cluster(Duration::from_secs(10));
    let sky: Arc<dyn Backend> = Arc::new(SkyPilotBackend::new(&cfg).unwrap());
    let fleet = Fleet::start(
        vec![Member { backend: sky, kind: SkyPilotConfig::KIND, refresh: cfg.refresh, timeout: cfg.timeout }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "t".into() },
    );
    let s = fleet.wait_for(Duration::from_secs(30), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "{:?}", s.clusters[0].health);

    let restart = Restart;
    testbed("stop");
    // While it shuts down the server may still answer 503 ("Server is shutting down"); once
    // it is gone the cluster is stale with the connection error.
    let gone = |s: &flightdeck::model::FleetState| matches!(&s.clusters[0].health, Health::Stale { error, .. } if error.contains("cannot reach"));
    let s = fleet.wait_for(Duration::from_secs(30), gone).await;
    match &s.clusters[0].health {
        Health::Stale { error, last_ok, .. } => {
            assert!(error.contains("cannot reach http://127.0.0.1:46590"), "{error}");
            assert!(last_ok.is_some(), "the last good snapshot is kept");
        }
        other => panic!("still {other:?} with the server stopped"),
    }
    assert!(s.clusters[0].snapshot.is_some());

    drop(restart);
    let s = fleet.wait_for(Duration::from_secs(60), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "back after the restart: {:?}", s.clusters[0].health);
}

/// A server that takes every operation and never answers `/api/get`: the cluster's timeout
/// bounds the refresh, and the abandoned request is cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_api_get_is_bounded_by_the_cluster_timeout() {
    use axum::Router;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    let cancels = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let c = cancels.clone();
    let app = Router::new()
        .route(
            "/api/get",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                StatusCode::OK
            }),
        )
        .route(
            "/api/status",
            get(|| async { axum::Json(serde_json::json!([{"request_id": "r-1", "status": "RUNNING"}])) }),
        )
        .route(
            "/api/cancel",
            post(move || {
                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { "null" }
            }),
        )
        .fallback(|| async {
            let mut h = HeaderMap::new();
            h.insert("X-Skypilot-Request-ID", "r-1".parse().unwrap());
            (StatusCode::OK, h, "null").into_response()
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let mut cfg = ClusterConfig::new("slow-sky", SkyPilotConfig { url: format!("http://{addr}"), token: None });
    cfg.timeout = Duration::from_secs(2);
    let sky = SkyPilotBackend::new(&cfg).unwrap();
    let t = Instant::now();
    let err = sky.snapshot().await.unwrap_err().to_string();
    let took = t.elapsed();
    // Never before the timeout; after it, the margin is for a loaded machine (the bed's
    // scenarios share it): the message below names the one 2 s timeout that ended it.
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "{took:?}");
    assert!(err.contains("timed out after 2 s") && err.contains("POST /status"), "{err}");
    assert!(err.contains("still RUNNING on the server: cancelled"), "{err}");
    for _ in 0..100 {
        if cancels.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cancels.load(std::sync::atomic::Ordering::SeqCst), 1, "the abandoned request is cancelled");

    // Through the fleet: stale with that timeout, never a hang.
    let sky: Arc<dyn Backend> = Arc::new(SkyPilotBackend::new(&cfg).unwrap());
    let fleet = Fleet::start(
        vec![Member {
            backend: sky,
            kind: SkyPilotConfig::KIND,
            refresh: Duration::from_secs(1),
            timeout: cfg.timeout,
        }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "t".into() },
    );
    let s = fleet.wait_for(Duration::from_secs(10), |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    assert!(
        matches!(&s.clusters[0].health, Health::Stale { error, .. } if error.contains("timed out")),
        "{:?}",
        s.clusters[0].health
    );
}

/// The offline exports (`spec convert --to skypilot`) of every fixture are tasks the real
/// server reads: each launch gets past SkyPilot's own parsing and schema check to the
/// no-cloud-access error, the furthest a launch goes here.
#[tokio::test]
async fn exported_tasks_are_read_by_the_real_server() {
    let _lock = server_lock(false);
    let sky = backend();
    let registry = flightdeck::backend::Registry::builtin();
    let d = registry.dialect("skypilot").unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dialects/skypilot");
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut spec = (d.import)(&text).unwrap().spec;
        // SkyPilot checks that a workdir exists where it launches (here, on the server).
        spec.workdir = None;
        let exported = (d.export)(&spec).unwrap();
        let err = api::launch(sky.requests(), "fd-live-export", &exported.text).await.unwrap_err().to_string();
        assert!(err.contains("(NoCloudAccessError)"), "{}: {err}\n{}", path.display(), exported.text);
    }
}

/// `job_spec` asks the real server for one managed job (its body accepted), and says
/// plainly why a cluster job has no spec.
#[tokio::test]
async fn job_specs_of_missing_managed_jobs_and_of_cluster_jobs() {
    let _lock = server_lock(false);
    let sky = backend();
    let err = sky.job_spec(&JobRef::new("sky", "1")).await.unwrap_err();
    assert!(matches!(err, flightdeck::backend::BackendError::NotFound(_)), "{err}");
    let err = sky.job_spec(&JobRef::new("sky", "fd-x:1")).await.unwrap_err().to_string();
    assert!(err.contains("SkyPilot keeps no task for a job on a cluster"), "{err}");
}
