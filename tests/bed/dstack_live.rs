//! The dstack adapter against the real dstack 0.22.5 server of the test bed
//! (`tests/testbed/dstack.sh`; its env file gives FD_DSTACK_URL, FD_DSTACK_TOKEN,
//! FD_DSTACK_PROJECT, FD_DSTACK_SERVER_DIR). The server has no backend and no fleet: runs are
//! accepted, then wait (with a no-capacity retry) or fail for lack of capacity. A missing
//! server is a failure naming the variable, never a skip.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightdeck::backend::Backend;
use flightdeck::backend::dstack::config::TokenFrom;
use flightdeck::backend::dstack::{DstackBackend, DstackConfig};
use flightdeck::backend::http::{Secret, TokenSource};
use flightdeck::config::{ClusterConfig, Config};
use flightdeck::fleet::{Fleet, FleetOptions};
use flightdeck::model::{Health, JobAction, JobRef, JobState, Snapshot};
use flightdeck::spec::JobSpec;
use serde_json::Value;

const CLUSTER: &str = "dstack-live";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: the dstack test bed is not up. Run `bash tests/testbed/dstack.sh` and source \
             /var/lib/flightdeck-testbed/dstack.env (tests/run.sh does both)"
        )
    })
}

fn settings(retry_secs: Option<u64>) -> DstackConfig {
    let mut s = DstackConfig::new(&var("FD_DSTACK_URL"), &var("FD_DSTACK_PROJECT"), Some("FD_DSTACK_TOKEN"));
    s.retry_secs = retry_secs;
    s
}

fn backend(retry_secs: Option<u64>) -> DstackBackend {
    let _ = var("FD_DSTACK_TOKEN");
    let mut cfg = ClusterConfig::new(CLUSTER, settings(retry_secs));
    cfg.timeout = Duration::from_secs(15);
    DstackBackend::new(&cfg).unwrap()
}

/// Tests take the server shared; the one that stops it takes it alone (a file lock, so it
/// holds across test binaries too).
fn server_lock(exclusive: bool) -> std::fs::File {
    let path = std::env::temp_dir().join("flightdeck-testbed-dstack.lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).unwrap();
    if exclusive {
        file.lock().unwrap()
    } else {
        file.lock_shared().unwrap()
    }
    file
}

fn spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        command: Some("nvidia-smi".into()),
        gpus: 1,
        gpu_type: Some("h100".into()),
        time_limit: Some("30m".into()),
        ..JobSpec::default()
    }
}

async fn wait(b: &DstackBackend, what: &str, done: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let started = Instant::now();
    loop {
        let last = match b.snapshot().await {
            Ok(s) if done(&s) => return s,
            Ok(s) => format!("{:?}", s.jobs.iter().map(|j| (&j.job_ref.id, j.state, &j.reason)).collect::<Vec<_>>()),
            Err(e) => e.to_string(),
        };
        assert!(started.elapsed() < Duration::from_secs(60), "timed out waiting for {what}; last: {last}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn job<'a>(s: &'a Snapshot, r: &JobRef) -> Option<&'a flightdeck::model::Job> {
    s.jobs.iter().find(|j| j.job_ref == *r)
}

fn config_file(dir: &std::path::Path, retry: bool) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[[cluster]]\nname = \"{CLUSTER}\"\nkind = \"dstack\"\nurl = \"{}\"\nproject = \"{}\"\ntoken_env = \"FD_DSTACK_TOKEN\"\n{}",
            var("FD_DSTACK_URL"),
            var("FD_DSTACK_PROJECT"),
            if retry { "retry = \"1h\"\n" } else { "" }
        ),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn an_empty_server_lists_no_machines_and_doctor_says_what_it_is() {
    // Exclusive: "no run is active" is about the whole server, and another scenario's
    // no-capacity run waits (active) while it is listed.
    let _lock = server_lock(true);
    let b = backend(None);
    let snap = b.snapshot().await.unwrap();
    assert_eq!(snap.release.as_deref(), Some("0.22.5"));
    assert!(snap.nodes.is_empty() && snap.queues.iter().all(|q| q.nodes == 0), "{:?}", snap.nodes);
    assert!(snap.jobs.iter().all(|j| !j.state.is_active()), "no run can run here");
    let d = b.diagnose().await.unwrap();
    assert_eq!(d.release.as_deref(), Some("0.22.5"));
    assert_eq!((d.get("reachable"), d.get("auth"), d.get("backends")), (Some("yes"), Some("ok"), Some("none")));
    let requests: u64 = d.get("requests per refresh").unwrap().parse().unwrap();
    assert!(requests >= 3, "{requests}");
    let shown = format!("{d:?}");
    assert!(!shown.contains(&var("FD_DSTACK_TOKEN")), "the token never reaches doctor");
}

#[tokio::test]
async fn a_run_with_a_no_capacity_retry_waits_is_listed_then_stopped_and_deleted() {
    let _lock = server_lock(false);
    let b = backend(Some(3600));
    let native = b.render(&spec("retry me")).await.unwrap();
    assert!(native.text.contains("gpu: H100:1") && native.text.contains("no-capacity"), "{}", native.text);
    let r = b.submit(&spec("retry me")).await.unwrap();
    assert!(r.id.starts_with("retry-me-"), "{r}");
    let snap = wait(&b, "the run pending with its reason", |s| {
        job(s, &r).is_some_and(|j| {
            j.state == JobState::Pending && j.reason.as_deref().is_some_and(|x| x.contains("no capacity"))
        })
    })
    .await;
    let j = job(&snap, &r).unwrap();
    assert!(
        j.reason.as_deref().unwrap().starts_with("retrying: no capacity: No matching fleet found"),
        "{:?}",
        j.reason
    );
    assert_eq!((j.gpus_requested, j.gpu_model.as_deref(), j.time_limit_secs), (1, Some("h100"), Some(1800)));

    // Through the fleet, as the cockpit sees it.
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(dir.path(), true);
    let config = Config::load(Some(&path), &flightdeck::backend::Registry::builtin()).unwrap();
    let fleet =
        Fleet::from_config(&config, FleetOptions { read_only: true, poll: true, audit: None, actor: "tester".into() })
            .unwrap();
    let state = fleet
        .wait_for(Duration::from_secs(30), |s| {
            s.clusters[0]
                .snapshot
                .as_ref()
                .is_some_and(|snap| job(snap, &r).is_some_and(|j| j.state == JobState::Pending))
        })
        .await;
    assert!(state.clusters[0].health.is_fresh(), "{:?}", state.clusters[0].health);
    drop(fleet);

    // Through the binary: `flightdeck jobs` shows it pending with its reason.
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", path.to_str().unwrap(), "jobs", "--output", "json"])
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows.iter().find(|row| row.to_string().contains(&r.id)).unwrap_or_else(|| panic!("{r} not in {rows:?}"));
    let text = row.to_string();
    assert!(text.contains("pending") && text.contains("no capacity"), "{text}");
    assert_eq!((row["id"].as_str(), row["name"].as_str()), (Some(r.id.as_str()), Some("retry-me")), "{text}");

    // Delete of an active run is refused with the server's words; stop, then delete.
    let err = b.job_action(&r, JobAction::Delete).await.unwrap_err();
    assert!(err.to_string().contains("Cannot delete active runs"), "{err}");
    b.job_action(&r, JobAction::Cancel).await.unwrap();
    wait(&b, "the run cancelled", |s| job(s, &r).is_some_and(|j| j.state == JobState::Cancelled)).await;
    b.job_action(&r, JobAction::Delete).await.unwrap();
    wait(&b, "the run gone", |s| job(s, &r).is_none()).await;
    let err = b.job_action(&r, JobAction::Cancel).await.unwrap_err();
    assert!(matches!(err, flightdeck::backend::BackendError::NotFound(_)), "{err}");
    assert!(err.to_string().contains("Run not found"), "{err}");
}

#[tokio::test]
async fn a_run_without_retry_fails_for_lack_of_capacity_and_its_log_reads() {
    let _lock = server_lock(false);
    let b = backend(None);
    let r = b.submit(&spec("fail fast")).await.unwrap();
    let snap = wait(&b, "the run failed", |s| job(s, &r).is_some_and(|j| j.state == JobState::Failed)).await;
    let j = job(&snap, &r).unwrap();
    assert!(j.reason.as_deref().unwrap().starts_with("no capacity: No matching fleet found"), "{:?}", j.reason);
    assert!(j.end_time.is_some());

    // No runner can start here: write what one would have logged into the server's file log
    // storage, then read it through `logs/poll`, tail and follow.
    let handle = j.stdout.clone().expect("a log handle");
    let (run, submission) = handle.strip_prefix("run/").unwrap().split_once('/').unwrap();
    let dir = PathBuf::from(var("FD_DSTACK_SERVER_DIR"))
        .join("projects")
        .join(var("FD_DSTACK_PROJECT"))
        .join("logs")
        .join(run)
        .join(submission);
    std::fs::create_dir_all(&dir).unwrap();
    let line = |ms: u64, text: &str| {
        format!(
            "{{\"timestamp\": \"2026-12-03T12:00:00.{ms:03}Z\", \"log_source\": \"stdout\", \"message\": \"{text}\"}}\n"
        )
    };
    std::fs::write(dir.join("job.log"), format!("{}{}", line(1, "hello"), line(2, "\\u001b[31mworld\\u001b[0m")))
        .unwrap();
    let chunk = b.read_log(&handle, None, 1 << 20).await.unwrap();
    assert_eq!(chunk.data, "hello\n\u{1b}[31mworld\u{1b}[0m\n");
    assert_eq!(chunk.offset, chunk.data.len() as u64);
    let tail = b.read_log(&handle, None, 6).await.unwrap();
    assert_eq!((tail.data.as_str(), tail.offset, tail.dropped), ("d\u{1b}[0m\n", chunk.offset, 0));
    let mut file = std::fs::OpenOptions::new().append(true).open(dir.join("job.log")).unwrap();
    std::io::Write::write_all(&mut file, line(3, "again").as_bytes()).unwrap();
    let next = b.read_log(&handle, Some(chunk.offset), 1 << 20).await.unwrap();
    assert_eq!((next.data.as_str(), next.dropped), ("again\n", 0));
    b.job_action(&r, JobAction::Delete).await.unwrap();
}

#[tokio::test]
async fn a_wrong_token_is_an_authentication_error_naming_the_cluster() {
    let _lock = server_lock(false);
    let mut s = settings(None);
    s.token = Some(TokenFrom::Source(TokenSource::Given { secret: Secret::new("wrong-token"), from: "test".into() }));
    let b = DstackBackend::new(&ClusterConfig::new("dstack-main", s)).unwrap();
    let err = b.snapshot().await.unwrap_err();
    assert_eq!(err.to_string(), "cluster dstack-main: authentication failed (403)");
    let mut none = settings(None);
    none.token = None;
    let err = DstackBackend::new(&ClusterConfig::new("dstack-main", none)).unwrap().snapshot().await.unwrap_err();
    assert_eq!(err.to_string(), "cluster dstack-main: authentication failed (401)");
}

fn testbed_script(arg: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testbed/dstack.sh");
    let out = Command::new("bash").args([script, arg]).output().unwrap();
    assert!(out.status.success(), "dstack.sh {arg}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Restarts the server even when an assertion fails midway.
struct Restart;
impl Drop for Restart {
    fn drop(&mut self) {
        testbed_script("start");
    }
}

#[tokio::test]
async fn a_server_stopped_mid_run_goes_stale_and_recovers_when_restarted() {
    let _lock = server_lock(true);
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(dir.path(), false);
    let text = std::fs::read_to_string(&path).unwrap() + "refresh_seconds = 1\ntimeout_seconds = 3\n";
    std::fs::write(&path, text).unwrap();
    let config = Config::load(Some(&path), &flightdeck::backend::Registry::builtin()).unwrap();
    let fleet = Arc::new(
        Fleet::from_config(&config, FleetOptions { read_only: true, poll: true, audit: None, actor: "tester".into() })
            .unwrap(),
    );
    fleet.wait_for(Duration::from_secs(30), |s| s.clusters[0].health.is_fresh()).await;
    let restart = Restart;
    testbed_script("stop");
    let state = fleet.wait_for(Duration::from_secs(30), |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    match &state.clusters[0].health {
        Health::Stale { error, .. } => assert!(error.contains("127.0.0.1"), "{error}"),
        h => panic!("expected stale, got {h:?}"),
    }
    assert!(state.clusters[0].snapshot.is_some(), "the last good snapshot stays");
    let started = Instant::now();
    drop(restart);
    let restart_secs = started.elapsed().as_secs_f32();
    let state = fleet.wait_for(Duration::from_secs(60), |s| s.clusters[0].health.is_fresh()).await;
    assert!(
        state.clusters[0].health.is_fresh(),
        "{:?} (server restarted in {restart_secs:.1} s)",
        state.clusters[0].health
    );
}

/// Stops and deletes a run however the test ends (an active run cannot be deleted: stop,
/// wait for it to end, then delete), on a runtime of its own so it works from `drop`.
struct RunGuard(Option<JobRef>);
impl Drop for RunGuard {
    fn drop(&mut self) {
        let Some(r) = self.0.take() else { return };
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let b = backend(None);
                let _ = b.job_action(&r, JobAction::Cancel).await;
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(60) {
                    if b.job_action(&r, JobAction::Delete).await.is_ok() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                eprintln!("run {r} could not be deleted");
            });
        });
        let _ = cleanup.join();
    }
}

#[tokio::test]
async fn a_pending_runs_spec_reads_back_from_the_stored_run_spec() {
    let _lock = server_lock(false);
    let b = backend(Some(3600));
    let spec = JobSpec {
        name: "spec back".into(),
        script: Some("echo one\necho \"two $HOME\" 'three'".into()),
        gpus: 2,
        gpu_type: Some("a100-80gb".into()),
        cpus: Some(4),
        memory: Some("500M".into()),
        time_limit: Some("1h30m".into()),
        workdir: Some("/workflow".into()),
        // The server writes `nodes: 1` into every stored run spec; ask it explicitly.
        nodes: Some(1),
        env: [("WANDB_MODE".to_string(), "offline".to_string()), ("EMPTY".to_string(), String::new())].into(),
        migrated_from: Some("hpc/123_4".into()),
        ..JobSpec::default()
    };
    let r = b.submit(&spec).await.unwrap();
    let _guard = RunGuard(Some(r.clone()));
    let snap = wait(&b, "the run listed", |s| job(s, &r).is_some()).await;
    assert_eq!(job(&snap, &r).unwrap().migrated_from.as_deref(), Some("hpc/123_4"), "the listing carries the tag");

    // The ref is the run (with the suffix a submit adds); the name shown is the one given,
    // made a dstack name.
    assert!(r.id.starts_with("spec-back-") && r.id.len() == "spec-back-".len() + 5, "{r}");
    assert_eq!(job(&snap, &r).unwrap().name, "spec-back");
    let got = b.job_spec(&r).await.unwrap();
    // What the server stored is what was sent, the name as the configuration carries it.
    assert_eq!(got.spec, JobSpec { name: "spec-back".into(), ..spec.clone() });
    assert_eq!(
        got.warnings,
        ["`retry`: no portable form (a dstack cluster's own `retry` setting adds one at submit); left out"]
    );

    // A run the server does not know is "not found", in its words.
    let err = b.job_spec(&JobRef::new(CLUSTER, "no-such-run-x")).await.unwrap_err();
    assert!(matches!(err, flightdeck::backend::BackendError::NotFound(_)), "{err}");
}

/// The offline exports (`spec convert --to dstack`) of every fixture are configurations the
/// real server takes as they are (with a run name and the retry that keeps them pending),
/// and what it stores reads back as the spec that was exported.
#[tokio::test]
async fn exported_configurations_are_stored_as_they_were_written() {
    let _lock = server_lock(false);
    let b = backend(None);
    let registry = flightdeck::backend::Registry::builtin();
    let d = registry.dialect("dstack").unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dialects/dstack");
    let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for (i, path) in paths.iter().enumerate() {
        let mut spec = (d.import)(&std::fs::read_to_string(path).unwrap()).unwrap().spec;
        // The server looks an image up online, and plans only for fleets it has: none here.
        spec.image = None;
        spec.partition = None;
        let exported = (d.export)(&spec).unwrap();
        let mut configuration: Value = serde_saphyr::from_str(&exported.text).unwrap();
        configuration["retry"] = serde_json::json!({"on_events": ["no-capacity"], "duration": 3600});
        let run_name = format!("fd-export-{}-{i}", std::process::id());
        let body = serde_json::json!({"plan": {"run_spec": {"run_name": run_name, "configuration": configuration}}, "force": false});
        let applied = b.api().apply(&body).await;
        let r = JobRef::new(CLUSTER, run_name.clone());
        let _guard = RunGuard(Some(r.clone()));
        applied.unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), exported.text));
        let got = b.job_spec(&r).await.unwrap().spec;
        // The server writes `nodes: 1` into a run spec without it.
        // The name read back is the configuration's, as written, not the run's.
        let want = JobSpec { nodes: Some(spec.nodes.unwrap_or(1)), ..spec };
        assert_eq!(got, want, "{}:\n{}", path.display(), exported.text);
    }
}
