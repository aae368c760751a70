//! Contract tests against the real SkyPilot API server of the test bed
//! (`tests/testbed/skypilot.sh`: skypilot==0.14.1 on 127.0.0.1:46590, no cloud credentials,
//! a seeded catalog). `FD_SKYPILOT_URL` must be set (source
//! /var/lib/flightdeck-testbed/skypilot.env): a missing server fails, never skips.
//!
//! A second server (`skypilot.sh slurm`, 127.0.0.1:46591, `FD_SKYPILOT_SLURM_URL` in
//! skypilot-slurm.env) has the bed's Slurm 24.11 cluster fd24 as its infra: there a submit
//! really launches, runs, logs, cancels and tears down (the last test here).
//!
//! What neither reaches (clusters of the clouds, managed jobs, several nodes, STOPPED) is in
//! `tests/fakes/skypilot_recorded.rs`.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightdeck::backend::Backend;
use flightdeck::backend::skypilot::{SkyPilotBackend, SkyPilotConfig, api};
use flightdeck::config::{ClusterConfig, KindSettings};
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::{Health, JobAction, JobRef, JobState, NodeAction};
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

// ---- The Slurm-infra server: a job that really runs ------------------------------------

/// The cluster the Slurm-infra scenario launches (one sbatch allocation on fd24).
const SLURM_CLUSTER: &str = "fd-live-slurm";

fn slurm_url() -> String {
    std::env::var("FD_SKYPILOT_SLURM_URL").unwrap_or_else(|_| {
        panic!(
            "FD_SKYPILOT_SLURM_URL is not set: the SkyPilot server with fd24 as its Slurm infra is not up. Run \
             `bash tests/testbed/skypilot.sh slurm` (after up.sh), then `set -a; . /var/lib/flightdeck-testbed/skypilot-slurm.env; \
             set +a` (tests/run.sh does both)"
        )
    })
}

fn slurm_backend() -> SkyPilotBackend {
    let mut c = ClusterConfig::new("sky", SkyPilotConfig { url: slurm_url(), token: None });
    c.timeout = Duration::from_secs(300);
    SkyPilotBackend::new(&c).unwrap()
}

/// Tears the scenario's cluster down even when an assertion fails midway (its allocation
/// would otherwise hold an fd24 GPU for the partition's time limit).
struct TearDown;
impl Drop for TearDown {
    fn drop(&mut self) {
        let _ = std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async { slurm_backend().node_action(SLURM_CLUSTER, &NodeAction::Teardown).await })
        })
        .join();
    }
}

/// Polls the server's listing until `pick` finds what it waits for, at most `within`.
async fn wait_for<T>(
    sky: &SkyPilotBackend,
    within: Duration,
    what: &str,
    mut pick: impl FnMut(&flightdeck::model::Snapshot) -> Option<T>,
) -> T {
    let t = Instant::now();
    let mut last = String::new();
    while t.elapsed() < within {
        match sky.snapshot().await {
            Ok(s) => {
                if let Some(v) = pick(&s) {
                    return v;
                }
                last = format!(
                    "jobs {:?}, nodes {:?}",
                    s.jobs.iter().map(|j| (&j.job_ref.id, &j.native_state)).collect::<Vec<_>>(),
                    s.nodes.iter().map(|n| (&n.name, &n.native_state)).collect::<Vec<_>>()
                );
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    panic!("{what}: not within {within:?}; last seen: {last}");
}

/// SkyPilot's success path, for real: `flightdeck submit --cluster sky` launches a cluster on
/// the Slurm infra (an sbatch allocation on fd24 holding one L40S), the cluster shows UP with
/// the job RUNNING, its log holds the stand-in nvidia-smi's answer, cancel ends the job and
/// teardown removes the cluster and its allocation.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_launched_on_the_slurm_infra_runs_logs_cancels_and_is_torn_down() {
    // The allocation is an fd24 job: no other scenario of fd24 may see it or count its RPCs.
    let _fd24 = crate::common::cluster_lock("fd24");
    let _quiet = crate::common::cluster_quiet("fd24");
    let url = slurm_url();
    let sky = slurm_backend();
    let _down = TearDown;
    // A cluster left by an interrupted run: gone first (a missing one is an error, ignored).
    let _ = sky.node_action(SLURM_CLUSTER, &NodeAction::Teardown).await;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[[cluster]]\nname = \"sky\"\nkind = \"skypilot\"\nurl = \"{url}\"\ntimeout_seconds = 480\n"),
    )
    .unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"fd-live-slurm-job\"\npartition = \"{SLURM_CLUSTER}\"\ngpus = 1\ngpu_type = \"l40s\"\ncpus = 1\nmemory = \"1G\"\n\
             command = \"echo fd-sky-start; /var/lib/flightdeck-testbed/bin/nvidia-smi --query-gpu=index,name --format=csv,noheader; sleep 600\"\n"
        ),
    )
    .unwrap();
    let t = Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_flightdeck"))
            .args([
                "--config",
                &config.display().to_string(),
                "submit",
                &spec.display().to_string(),
                "--cluster",
                "sky",
            ])
            .env("XDG_STATE_HOME", dir.path())
            .env_remove("FLIGHTDECK_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "submit: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    let job_ref = stdout.trim().to_string();
    assert!(job_ref.starts_with(&format!("sky/{SLURM_CLUSTER}:")), "{job_ref}");
    let job_id = job_ref.trim_start_matches("sky/").to_string();
    eprintln!("launched {job_ref} in {:.0} s", t.elapsed().as_secs_f64());

    // UP, its job RUNNING, the GPU held on the cluster's node.
    let (job, node) = wait_for(&sky, Duration::from_secs(120), "the job RUNNING on an UP cluster", |s| {
        let job = s.jobs.iter().find(|j| j.job_ref.id == job_id && j.native_state == "RUNNING")?;
        let node = s.nodes.iter().find(|n| n.name == SLURM_CLUSTER && n.native_state == "UP")?;
        Some((job.clone(), node.clone()))
    })
    .await;
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.partition, SLURM_CLUSTER);
    assert_eq!(job.gpus_requested, 1);
    assert_eq!(node.gpus_total(), 1, "{node:?}");
    assert!(node.features.iter().any(|f| f.eq_ignore_ascii_case("slurm")), "{:?}", node.features);
    // And as Slurm sees it: the allocation is a job on fd24 named after the cluster.
    let squeue = Command::new("chroot")
        .args([
            std::env::var("FD_TESTBED_CHROOT").unwrap_or("/var/lib/flightdeck-testbed/trixie".into()).as_str(),
            "squeue",
            "-h",
            "-o",
            "%j %T %b",
        ])
        .output()
        .unwrap();
    let squeue = String::from_utf8_lossy(&squeue.stdout).to_string();
    assert!(
        squeue.lines().any(|l| l.starts_with(SLURM_CLUSTER) && l.contains("RUNNING") && l.contains("l40s")),
        "{squeue}"
    );

    // The log holds the stand-in nvidia-smi's answer: the job's one GPU, an L40S.
    let handle = job.stdout.clone().expect("a log handle");
    let t = Instant::now();
    let log = loop {
        let chunk = sky.read_log(&handle, None, 1 << 20).await.expect("the job's log");
        if chunk.data.contains("L40S") || t.elapsed() > Duration::from_secs(60) {
            break chunk.data;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    assert!(log.contains("fd-sky-start") && log.contains("0, NVIDIA L40S"), "{log}");

    // Cancel: the job ends CANCELLED, the cluster stays UP.
    sky.job_action(&JobRef::new("sky", &job_id), JobAction::Cancel).await.expect("cancel");
    wait_for(&sky, Duration::from_secs(60), "the job CANCELLED", |s| {
        s.jobs.iter().find(|j| j.job_ref.id == job_id && j.state == JobState::Cancelled).map(drop)
    })
    .await;

    // Teardown: the cluster is gone from the server and its allocation from fd24.
    let said = sky.node_action(SLURM_CLUSTER, &NodeAction::Teardown).await.expect("teardown");
    assert!(said.contains("torn down"), "{said}");
    let s = sky.snapshot().await.unwrap();
    assert!(!s.nodes.iter().any(|n| n.name == SLURM_CLUSTER), "{:?}", s.nodes);
    let t = Instant::now();
    loop {
        let out = Command::new("chroot")
            .args([
                std::env::var("FD_TESTBED_CHROOT").unwrap_or("/var/lib/flightdeck-testbed/trixie".into()).as_str(),
                "squeue",
                "-h",
                "-o",
                "%j",
            ])
            .output()
            .unwrap();
        let names = String::from_utf8_lossy(&out.stdout).to_string();
        if !names.lines().any(|l| l.starts_with(SLURM_CLUSTER)) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(90), "the allocation outlived the teardown: {names}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
