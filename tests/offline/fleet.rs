//! The fleet's own logic (staleness, back-off, read-only, audit) over a scripted in-memory
//! backend. The real backends are exercised by the Slurm integration tests; this file checks
//! what the fleet adds on top, which a real cluster cannot be made to do on cue.

use std::sync::Arc;
use std::time::Duration;

use flightdeck::backend::{BackendError, Capabilities, JobAction};
use flightdeck::fleet::{Action, AuditLog, Fleet, FleetOptions, Member};
use flightdeck::model::{Health, Job, JobRef, JobState};

use crate::memory::{ActionFuture, Fault, MemoryCluster};

/// A cluster of one running job that can cancel. Its job actions go by the job's id: a
/// batch job (`b…`) takes long enough that calls would pile up if nothing bounded them,
/// `slow` takes 300 ms, `hang` never ends, `boom` panics, `404` is not there.
fn sim() -> MemoryCluster {
    let mut job = Job::new(JobRef::new("sim", "0"), JobState::Running);
    job.partition = "gpu".into();
    MemoryCluster::new("sim")
        .capabilities(Capabilities { cancel: true, ..Capabilities::default() })
        .jobs(vec![job])
        .acts_with(by_id)
}

fn scripted() -> Arc<MemoryCluster> {
    Arc::new(sim())
}

/// The same, announcing changes on `changes` as a watching backend does.
fn watching(changes: &tokio::sync::watch::Sender<u64>) -> Arc<MemoryCluster> {
    Arc::new(sim().announcing(changes.clone()))
}

fn by_id(job: &JobRef, _action: JobAction) -> ActionFuture {
    let job = job.clone();
    Box::pin(async move {
        if job.id.starts_with('b') {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        match job.id.as_str() {
            "slow" => tokio::time::sleep(Duration::from_millis(300)).await,
            "hang" => std::future::pending::<()>().await,
            "boom" => panic!("cancel of {job} panicked"),
            "404" => {
                return Err(BackendError::Command {
                    command: "scancel 404".into(),
                    status: Some(1),
                    stderr: "Invalid job id specified".into(),
                });
            }
            _ => {}
        }
        Ok(())
    })
}

/// Listings panic, as an adapter with a bug does.
fn panicking() -> Option<Fault> {
    Some(Fault::refused(|| panic!("index out of bounds: the len is 0 but the index is 3")))
}

/// Listings fail as against a controller rate-limiting this user's RPCs.
fn rate_limited() -> Option<Fault> {
    Some(Fault::refused(|| BackendError::RateLimited {
        command: "squeue --json".into(),
        detail: "slurm_load_jobs error: Rate limit exceeded, please retry momentarily".into(),
    }))
}

fn fleet(backend: Arc<MemoryCluster>, read_only: bool, audit: Option<AuditLog>) -> Fleet {
    Fleet::start(
        vec![Member {
            backend,
            kind: "sim".into(),
            refresh: Duration::from_millis(50),
            timeout: Duration::from_secs(2),
        }],
        FleetOptions { read_only, poll: true, audit, actor: "tester@host".into() },
    )
}

#[tokio::test]
async fn stale_keeps_the_last_snapshot_and_recovers() {
    let b = scripted();
    let f = fleet(b.clone(), false, None);
    let s = f.wait_for(Duration::from_secs(5), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh());
    let first = s.clusters[0].snapshot.clone().expect("snapshot");
    assert_eq!(first.queues[0].name, "gpu");

    b.set_unreachable(true);
    let s = f.wait_for(Duration::from_secs(5), |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    match &s.clusters[0].health {
        Health::Stale { error, last_ok, .. } => {
            assert!(error.contains("link down"), "{error}");
            assert!(last_ok.is_some());
        }
        h => panic!("expected stale, got {h:?}"),
    }
    assert!(s.clusters[0].snapshot.is_some(), "the last good snapshot stays while stale");

    b.set_unreachable(false);
    f.refresh_now(None);
    let s = f.wait_for(Duration::from_secs(10), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "recovered: {:?}", s.clusters[0].health);
}

/// On tokio's paused clock, so the count is exact however busy the machine is.
#[tokio::test(start_paused = true)]
async fn failures_back_off() {
    let b = scripted();
    b.set_unreachable(true);
    let _f = fleet(b.clone(), false, None);
    // At 50 ms without back-off, one second would be 20 attempts; doubling after each
    // failure tries at 0, 50, 150, 350 and 750 ms, then not before 1550 ms.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(b.snapshots(), 5);
    tokio::time::sleep(Duration::from_millis(540)).await;
    assert_eq!(b.snapshots(), 5, "nothing before 1550 ms");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(b.snapshots(), 6);
}

/// A controller rate-limiting this user: the cluster is stale with that reason in words, the
/// poller waits one doubling longer than after another failure, a refresh key does not cut
/// the wait short, and the cluster is fresh again once the limit lifts. Paused clock.
#[tokio::test(start_paused = true)]
async fn a_rate_limiting_controller_is_asked_less_often_and_recovers() {
    let b = scripted();
    b.fail_listing(rate_limited());
    let f = fleet(b.clone(), false, None);
    // At 50 ms, waits of 100, 200, 400, 800 ms: attempts at 0, 100, 300, 700, then 1500 ms
    // (another failure's back-off would have made five attempts by 1000 ms).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(b.snapshots(), 4);
    f.refresh_now(None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(b.snapshots(), 4, "a refresh key does not ask a limiting controller again");
    let s = f.wait_for(Duration::from_secs(1), |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    match &s.clusters[0].health {
        Health::Stale { error, .. } => {
            assert!(error.starts_with("the controller is rate-limiting this user's RPCs; polling backs off"), "{error}")
        }
        h => panic!("expected stale, got {h:?}"),
    }
    b.fail_listing(None);
    tokio::time::sleep(Duration::from_millis(390)).await;
    assert_eq!(b.snapshots(), 4, "nothing before 1500 ms");
    let s = f.wait_for(Duration::from_secs(5), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "recovered: {:?}", s.clusters[0].health);
}

#[tokio::test]
async fn actions_are_audited_and_errors_keep_the_backends_words() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let b = scripted();
    let f = fleet(b.clone(), false, Some(log.clone()));
    let mut outcomes = f.outcomes();
    let ok = f.perform(Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Cancel, uid: None }).await;
    assert!(ok.is_ok());
    assert_eq!(outcomes.recv().await.unwrap().outcomes[0].target, "sim/7");
    let bad = f.perform(Action::Job { job: JobRef::new("sim", "404"), action: JobAction::Cancel, uid: None }).await;
    assert!(bad.result.as_ref().unwrap_err().contains("Invalid job id specified"));
    let unknown = f.perform(Action::Job { job: JobRef::new("nope", "1"), action: JobAction::Hold, uid: None }).await;
    assert!(unknown.result.unwrap_err().contains("no cluster named `nope`"));

    // On disk: an intent before each action reached the cluster, then its outcome.
    let recs = log.read_all().unwrap();
    let lines: Vec<(&str, &str)> = recs.iter().map(|r| (r.target.as_str(), r.outcome.as_str())).collect();
    assert_eq!(
        lines,
        [("sim/7", "intent"), ("sim/7", "ok"), ("sim/404", "intent"), ("sim/404", "error"), ("nope/1", "refused")]
    );
    assert_eq!(recs[0].id, recs[1].id);
    assert_ne!(recs[0].id, recs[2].id);
    let entries = flightdeck::fleet::audit::entries(recs);
    assert_eq!(entries.len(), 3);
    assert_eq!((entries[0].action.as_str(), entries[0].outcome.as_str()), ("cancel", "ok"));
    assert_eq!(entries[1].outcome, "error");
    assert!(entries[1].message.contains("Invalid job id"));
    assert_eq!(entries[0].who, "tester@host");
    assert_eq!(b.done(), 1);
}

#[tokio::test]
async fn read_only_is_refused_in_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let b = scripted();
    let f = fleet(b.clone(), true, Some(log.clone()));
    let out = f.perform(Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Cancel, uid: None }).await;
    assert!(out.result.unwrap_err().contains("read-only"));
    assert_eq!(b.done(), 0, "the backend was never called");
    assert_eq!(log.read_all().unwrap()[0].outcome, "refused");
}

#[tokio::test]
async fn a_watching_backend_is_reread_when_it_changes_not_at_the_interval() {
    let (tx, _rx) = tokio::sync::watch::channel(0u64);
    let b = watching(&tx);
    let f = Fleet::start(
        vec![Member {
            backend: b.clone(),
            kind: "sim".into(),
            refresh: Duration::from_secs(3600),
            timeout: Duration::from_secs(2),
        }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "t".into() },
    );
    f.wait_for(Duration::from_secs(5), |s| s.clusters[0].attempts == 1).await;
    assert_eq!(b.snapshots(), 1);
    // A burst of changes: one more refresh soon after, not one per change.
    for i in 1..=5 {
        tx.send_replace(i);
    }
    let s = f.wait_for(Duration::from_secs(5), |s| s.clusters[0].attempts == 2).await;
    assert_eq!(s.clusters[0].attempts, 2, "re-read after the change");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(b.snapshots(), 2, "the burst cost one refresh");
}

#[tokio::test]
async fn a_change_after_failures_cuts_the_back_off_short() {
    let (tx, _rx) = tokio::sync::watch::channel(0u64);
    let b = watching(&tx);
    b.set_unreachable(true);
    let f = Fleet::start(
        vec![Member {
            backend: b.clone(),
            kind: "sim".into(),
            refresh: Duration::from_millis(500),
            timeout: Duration::from_secs(2),
        }],
        FleetOptions { read_only: true, poll: true, audit: None, actor: "t".into() },
    );
    // Four failures: the next attempt would be 500 ms × 2³ = 4 s away.
    f.wait_for(Duration::from_secs(10), |s| s.clusters[0].attempts >= 4).await;
    b.set_unreachable(false);
    tx.send_replace(1);
    // The change brings the refresh forward to within one interval (500 ms), well before 4 s.
    let s = f.wait_for(Duration::from_secs(2), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "{:?}", s.clusters[0].health);
}

#[tokio::test]
async fn what_a_cluster_cannot_do_is_refused_by_the_fleet_without_calling_it() {
    let b = scripted();
    let f = fleet(b.clone(), false, None);
    let state = f.state();
    assert!(!state.clusters[0].capabilities.allows(flightdeck::model::Verb::Requeue));
    let refusal = state.check("sim", flightdeck::model::Verb::Requeue).unwrap_err();
    assert_eq!(refusal, "cluster sim (sim) cannot requeue");
    assert!(state.check("sim", flightdeck::model::Verb::Cancel).is_ok());

    let out = f.perform(Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Requeue, uid: None }).await;
    assert_eq!(out.result.unwrap_err(), refusal, "the fleet says the same as the front ends");
    assert_eq!(b.done(), 0, "the backend was never called");
    let out = f.perform(Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Cancel, uid: None }).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(b.done(), 1);
}

#[tokio::test]
async fn a_panicking_backend_goes_stale_with_an_internal_error_and_is_retried() {
    let b = scripted();
    let f = fleet(b.clone(), true, None);
    f.wait_for(Duration::from_secs(5), |s| s.clusters[0].health.is_fresh()).await;
    b.fail_listing(panicking());
    let s = f.wait_for(Duration::from_secs(5), |s| matches!(s.clusters[0].health, Health::Stale { .. })).await;
    match &s.clusters[0].health {
        Health::Stale { error, .. } => {
            assert_eq!(error, "internal error: index out of bounds: the len is 0 but the index is 3")
        }
        h => panic!("a panic must not pass for fresh: {h:?}"),
    }
    assert!(s.clusters[0].snapshot.is_some(), "the last good snapshot stays");
    // The poller lives on: it keeps trying, and recovers once the bug stops biting.
    let before = b.snapshots();
    b.fail_listing(None);
    f.refresh_now(None);
    let s = f.wait_for(Duration::from_secs(5), |s| s.clusters[0].health.is_fresh()).await;
    assert!(s.clusters[0].health.is_fresh(), "{:?}", s.clusters[0].health);
    assert!(b.snapshots() > before);
}

#[tokio::test]
async fn an_action_the_audit_log_cannot_record_is_not_done() {
    let dir = tempfile::tempdir().unwrap();
    // The log's directory is a file: nothing can be created under it.
    let blocker = dir.path().join("state");
    std::fs::write(&blocker, "not a directory").unwrap();
    let log = AuditLog::new(blocker.join("audit.jsonl"));
    let b = scripted();
    let f = fleet(b.clone(), false, Some(log));
    let out = f.perform(Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Cancel, uid: None }).await;
    let err = out.result.unwrap_err();
    assert!(
        err.starts_with(&format!("cannot write the audit log ({}: ", blocker.join("audit.jsonl").display()))
            && err.ends_with("); nothing was done"),
        "{err}"
    );
    assert_eq!(b.done(), 0, "the cluster was never asked");
}

#[tokio::test]
async fn a_panicking_action_answers_with_an_internal_error() {
    let b = scripted();
    let f = fleet(b.clone(), false, None);
    b.fail_listing(panicking());
    let out = f.perform(Action::Job { job: JobRef::new("sim", "boom"), action: JobAction::Cancel, uid: None }).await;
    assert_eq!(out.result.unwrap_err(), "internal error: cancel of sim/boom panicked");
}

#[tokio::test]
async fn quitting_waits_for_actions_under_way_and_names_those_that_do_not_end() {
    let b = scripted();
    let f = fleet(b.clone(), false, None);
    assert!(f.request(Action::Job { job: JobRef::new("sim", "slow"), action: JobAction::Cancel, uid: None }));
    assert_eq!(f.in_flight(), ["cancel sim/slow"]);
    assert!(f.settle(Duration::from_secs(5)).await.is_empty(), "it finished within the bound");
    assert_eq!(b.done(), 1, "the action was carried out, not dropped");

    assert!(f.request(Action::Job { job: JobRef::new("sim", "hang"), action: JobAction::Cancel, uid: None }));
    assert!(f.request(Action::Job { job: JobRef::new("sim", "slow"), action: JobAction::Hold, uid: None }));
    let started = std::time::Instant::now();
    let unknown = f.settle(Duration::from_millis(600)).await;
    assert_eq!(unknown, ["cancel sim/hang"], "the slow hold ended; the hung cancel is named");
    assert!(started.elapsed() < Duration::from_secs(2), "bounded");
}

/// A confirmed batch of a thousand cancels (four times the request queue) is one request:
/// every job is asked for, a bounded few at a time, each has one intent and one outcome on
/// disk, and the one that fails is named in the summary.
#[tokio::test]
async fn a_thousand_job_batch_is_carried_out_whole_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let b = scripted();
    let f = fleet(b.clone(), false, Some(log.clone()));
    let mut ids: Vec<String> = (0..1000).map(|i| format!("b{i}")).collect();
    ids[500] = "404".into();
    let actions: Vec<Action> = ids
        .iter()
        .map(|id| Action::Job { job: JobRef::new("sim", id.clone()), action: JobAction::Cancel, uid: None })
        .collect();
    let mut outcomes = f.outcomes();
    assert!(f.request_batch(actions), "one request, whatever its size");
    let batch = tokio::time::timeout(Duration::from_secs(60), outcomes.recv()).await.expect("done").unwrap();
    assert_eq!(batch.outcomes.len(), 1000);
    let targets: Vec<String> = batch.outcomes.iter().map(|o| o.target.clone()).collect();
    let asked: Vec<String> = ids.iter().map(|id| format!("sim/{id}")).collect();
    assert_eq!(targets, asked, "outcomes in the order asked");
    assert_eq!(batch.failed(), 1);
    assert!(batch.summary().starts_with("cancelled 999 of 1000; 1 failed: sim/404 ("), "{}", batch.summary());
    assert_eq!(b.done(), 999);
    let most = b.most_at_once();
    assert!((1..=flightdeck::backend::BATCH_CONCURRENCY as u32).contains(&most), "{most} job actions at once");

    let recs = log.read_all().unwrap();
    let intents: Vec<&str> = recs.iter().filter(|r| r.outcome == "intent").map(|r| r.target.as_str()).collect();
    assert_eq!(intents.len(), 1000);
    let ends = recs.iter().filter(|r| r.outcome == "ok" || r.outcome == "error").count();
    assert_eq!(ends, 1000);
    let entries = flightdeck::fleet::audit::entries(recs);
    assert_eq!(entries.len(), 1000, "each intent paired with its outcome");
    assert!(entries.iter().all(|e| e.outcome != "unknown"));
    // Every intent was on disk before the first outcome.
    let all = log.read_all().unwrap();
    let first_end = all.iter().position(|r| r.outcome != "intent").unwrap();
    assert_eq!(first_end, 1000);
    assert!(f.in_flight().is_empty());
}

/// An action that names its object's identity goes to the backend with it, on its own;
/// the others of the batch go together through `job_actions`.
#[tokio::test]
async fn an_identity_reaches_the_backend_with_its_action() {
    let b = scripted();
    let f = fleet(b.clone(), false, None);
    let batch = f
        .perform_batch(vec![
            Action::Job { job: JobRef::new("sim", "7"), action: JobAction::Cancel, uid: Some("u-7".into()) },
            Action::Job { job: JobRef::new("sim", "8"), action: JobAction::Cancel, uid: None },
        ])
        .await;
    assert_eq!(batch.failed(), 0, "{}", batch.summary());
    assert_eq!(b.uids(), vec![Some("u-7".to_string())]);
    assert_eq!(b.done(), 2);
}

/// A backend that keeps no history of its own (a Kubernetes cluster, a cloud): what its
/// snapshot still shows.
fn forgetful(now: chrono::DateTime<chrono::Utc>) -> MemoryCluster {
    let job = |id: &str, state: JobState, user: &str, ended_hours_ago: i64| {
        let mut j = Job::new(JobRef::new("k8s", id), state);
        j.user = user.into();
        j.gpus_allocated = 4;
        j.start_time = Some(now - chrono::TimeDelta::hours(ended_hours_ago + 1));
        j.end_time = Some(now - chrono::TimeDelta::hours(ended_hours_ago));
        j.reason = Some(format!("{state}: BackoffLimitExceeded"));
        j
    };
    let mut running = job("ml:serve", JobState::Running, "alice", 0);
    running.end_time = None;
    MemoryCluster::new("k8s").jobs(vec![
        job("ml:train", JobState::Completed, "alice", 1),
        job("ml:old", JobState::Failed, "alice", 30),
        job("ml:bob", JobState::Failed, "bob", 2),
        running,
    ])
}

#[tokio::test]
async fn a_backend_without_accounting_gives_the_ended_jobs_its_snapshot_still_shows() {
    use flightdeck::model::HistoryQuery;
    let now = chrono::Utc::now();
    let backend = Arc::new(forgetful(now));
    let member = Member {
        backend: backend.clone(),
        kind: "kubernetes".into(),
        refresh: Duration::from_secs(60),
        timeout: Duration::from_secs(2),
    };
    // No polling, as `flightdeck jobs --since` runs it: the snapshot is asked for the history.
    let f = Fleet::start(vec![member], FleetOptions { read_only: true, poll: false, audit: None, actor: "t".into() });
    let mut query = HistoryQuery::recent(now);
    let h = f.history("k8s", &query).await.unwrap();
    assert_eq!(h.source, "the cluster's current jobs");
    let ids: Vec<&str> = h.records.iter().map(|r| r.job.job_ref.id.as_str()).collect();
    assert_eq!(ids, ["ml:train", "ml:bob"], "ended in the last 24 h, newest first; not the running one");
    let train = &h.records[0];
    assert_eq!((train.elapsed_secs, train.gpu_hours), (Some(3600), Some(4.0)));
    assert_eq!(train.job.reason.as_deref(), Some("completed: BackoffLimitExceeded"), "the backend's own words kept");
    assert_eq!(backend.snapshots(), 1);

    query.user = Some("alice".into());
    query.states = vec![JobState::Failed];
    query.since = now - chrono::TimeDelta::hours(48);
    let h = f.history("k8s", &query).await.unwrap();
    let ids: Vec<&str> = h.records.iter().map(|r| r.job.job_ref.id.as_str()).collect();
    assert_eq!(ids, ["ml:old"]);
    query.limit = 0;
    assert_eq!(f.history("k8s", &query).await.unwrap().left_out, 1);
    let err = f.history("nowhere", &query).await.unwrap_err().to_string();
    assert!(err.contains("no cluster named `nowhere`"), "{err}");
}
