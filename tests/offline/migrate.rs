//! Migration's order and its fault cases over two in-memory clusters: a pending job moves
//! (target first, source cancelled after), a target that refuses leaves the source alone, a
//! cancel that fails reports both jobs and `--resume` finishes it, a process that died after
//! the intent is finished from the tag, a second migration is refused, running jobs need
//! `--running`, read-only refuses; a submit whose answer is lost after the target took the
//! job carries on from the tagged copy (or stops as interrupted while the target cannot be
//! listed, and `--resume` adopts it), and `--resume` adopts only this migration's copy on
//! the target, owned by the user, newer than the intent. The same order runs over the real test bed in
//! `tests/bed/migrate_live.rs`; here the faults are injected on cue.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::{Backend, BackendError, Capabilities};
use flightdeck::fleet::migrate::{self, GpuChoice, MigrateOptions};
use flightdeck::fleet::{Action, AuditLog, Fleet, FleetOptions, Member};
use flightdeck::model::{Job, JobRef, JobState, Verb};
use flightdeck::spec::JobSpec;

use crate::memory::{Fault, MemoryCluster};

/// A cluster held in memory where actions take effect, acting as alice; every call of both
/// clusters, `submit NAME` / `cancel ID`, goes to `calls` (shared) in order.
fn toy(name: &str, calls: Arc<Mutex<Vec<String>>>) -> Arc<MemoryCluster> {
    let toy = MemoryCluster::new(name)
        .capabilities(Capabilities { submit: true, cancel: true, ..Capabilities::default() })
        .applying()
        .acting_as("alice")
        .ids_from(100)
        .import_warnings(vec!["`#SBATCH --mail-type=END`: no portable form".into()])
        .journal(calls);
    Arc::new(toy)
}

fn add(toy: &MemoryCluster, id: &str, state: JobState) -> JobRef {
    let r = JobRef::new(toy.name(), id);
    let mut job = Job::new(r.clone(), state);
    job.name = format!("train-{id}");
    job.partition = "gpu".into();
    let spec = JobSpec {
        name: job.name.clone(),
        command: Some("python train.py".into()),
        gpus: 4,
        gpu_type: Some("h100".into()),
        partition: Some("gpu".into()),
        account: Some("ml".into()),
        ..JobSpec::default()
    };
    toy.add(job, spec);
    r
}

/// A job someone else put there: tagged `tag`, owned by `user`, submitted at `at`.
fn plant(toy: &MemoryCluster, id: &str, tag: &str, user: &str, at: chrono::DateTime<chrono::Utc>) -> JobRef {
    let r = JobRef::new(toy.name(), id);
    let mut job = Job::new(r.clone(), JobState::Pending);
    job.name = format!("planted-{id}");
    job.user = user.into();
    job.submit_time = Some(at);
    job.migrated_from = Some(tag.into());
    let spec = JobSpec { name: job.name.clone(), command: Some("true".into()), ..JobSpec::default() };
    toy.add(job, spec);
    r
}

fn tagged(toy: &MemoryCluster, origin: &str) -> Vec<JobRef> {
    toy.edit(|s| s.jobs.iter().filter(|j| j.origin() == Some(origin)).map(|j| j.job_ref.clone()).collect())
}

/// The target refuses every submit, as sbatch does a partition it lacks.
fn refuse_submits(toy: &MemoryCluster) {
    toy.fail(
        Verb::Submit,
        Some(Fault::refused(|| BackendError::Command {
            command: "sbatch".into(),
            status: Some(1),
            stderr: "Batch job submission failed: Invalid partition name specified".into(),
        })),
    );
}

/// Cancels fail on a dead link (`false`: they work again).
fn fail_cancels(toy: &MemoryCluster, failing: bool) {
    let fault = Fault::refused(|| BackendError::Connect {
        target: "login".into(),
        message: "the remote process has terminated".into(),
    });
    toy.fail(Verb::Cancel, failing.then_some(fault));
}

/// A submit takes the job, then times out (sbatch under load, a dropped link).
fn lost_answer() -> Fault {
    Fault::answer_lost(|| BackendError::Timeout { what: "sbatch".into(), secs: 20 })
}

struct Bed {
    hpc: Arc<MemoryCluster>,
    k8s: Arc<MemoryCluster>,
    calls: Arc<Mutex<Vec<String>>>,
    audit: AuditLog,
    _dir: tempfile::TempDir,
}

impl Bed {
    fn new() -> Bed {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let dir = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
        Bed { hpc: toy("hpc", calls.clone()), k8s: toy("k8s", calls.clone()), calls, audit, _dir: dir }
    }

    /// A polling fleet over both clusters, once both have been seen.
    async fn fleet(&self, read_only: bool) -> Fleet {
        let member = |b: &Arc<MemoryCluster>, kind: &str| Member {
            backend: b.clone(),
            kind: kind.into(),
            refresh: Duration::from_millis(20),
            timeout: Duration::from_secs(2),
        };
        let fleet = Fleet::start(
            vec![member(&self.hpc, "slurm"), member(&self.k8s, "kubernetes")],
            FleetOptions { read_only, poll: true, audit: Some(self.audit.clone()), actor: "alice@login".into() },
        );
        fleet.wait_for(Duration::from_secs(5), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
        fleet
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    /// The audit outcomes of every migration, in order.
    fn story(&self) -> Vec<String> {
        self.audit.read_all().unwrap().into_iter().filter(|r| r.action == "migrate").map(|r| r.outcome).collect()
    }
}

async fn plan_and_go(fleet: &Fleet, source: &JobRef, opts: &MigrateOptions) -> Result<String, String> {
    let plan = fleet.plan_migration(std::slice::from_ref(source), "k8s", opts).await;
    assert_eq!(plan.moves.len(), 1);
    let actions = plan.actions();
    if let Some(why) = &plan.moves[0].refused {
        return Err(format!("refused: {why}"));
    }
    let batch = fleet.perform_batch(actions).await;
    batch.outcomes[0].result.clone()
}

#[tokio::test]
async fn a_pending_job_moves_target_first_and_the_source_is_cancelled_after() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    let fleet = bed.fleet(false).await;

    let plan = fleet.plan_migration(std::slice::from_ref(&source), "k8s", &MigrateOptions::default()).await;
    let planned = &plan.moves[0];
    assert_eq!(planned.refused, None);
    let spec = planned.spec.as_ref().unwrap();
    assert_eq!(spec.migrated_from.as_deref(), Some("hpc/12"));
    assert_eq!((spec.gpus, spec.gpu_type.as_deref()), (4, Some("h100")));
    // Every warning, by name: from reading the source, from adapting to the target.
    let warnings = planned.warnings.join("\n");
    assert!(warnings.contains("--mail-type"), "{warnings}");
    assert!(warnings.contains("`account`: \"ml\" is a slurm account"), "{warnings}");
    assert!(warnings.contains("`partition`: k8s has no partition or queue named \"gpu\""), "{warnings}");
    assert_eq!(planned.native.as_ref().unwrap().text, "#SBATCH --job-name=train-12\n");
    assert!(bed.calls().is_empty(), "planning changes nothing: {:?}", bed.calls());

    let outcome = fleet.perform_batch(plan.actions()).await;
    let result = outcome.outcomes[0].result.clone().expect("migrated");
    let moved = tagged(&bed.k8s, "hpc/12");
    assert_eq!(moved.len(), 1);
    assert_eq!(result, format!("hpc/12 → {}", moved[0]));
    assert!(!bed.hpc.has("12"), "the source is cancelled");
    assert_eq!(bed.calls(), ["submit k8s/train-12", "cancel hpc/12"], "target first, then the source");
    assert_eq!(bed.story(), ["intent", "submitted", "ok"]);
    let intent = &bed.audit.read_all().unwrap()[0];
    // The intent carries the spec, its origin tag naming this migration's id.
    let tag = intent.spec.as_ref().unwrap().migrated_from.clone().unwrap();
    assert_eq!(flightdeck::model::split_migration_tag(&tag), ("hpc/12", Some(intent.id.as_str())));
    let copy = bed.k8s.edit(|s| s.jobs[0].clone());
    assert_eq!(copy.migration_id(), Some(intent.id.as_str()), "the copy carries the id");
    assert_eq!((intent.target.as_str(), intent.detail.as_deref()), ("hpc/12", Some("to=k8s")));
    assert!(migrate::unfinished(&bed.audit.read_all().unwrap()).is_empty());
    assert_eq!(outcome.summary(), format!("migrate hpc/12: hpc/12 → {}", moved[0]));
}

#[tokio::test]
async fn a_target_that_refuses_leaves_the_source_untouched() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    refuse_submits(&bed.k8s);
    let fleet = bed.fleet(false).await;
    let err = plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    assert!(err.starts_with("k8s refused it: `sbatch` failed (exit 1): Batch job submission failed"), "{err}");
    assert!(err.ends_with("hpc/12 is untouched"), "{err}");
    assert!(bed.hpc.has("12"));
    assert_eq!(bed.calls(), ["submit k8s/train-12"], "no cancel was tried");
    assert_eq!(bed.story(), ["intent", "error"]);
    assert!(migrate::unfinished(&bed.audit.read_all().unwrap()).is_empty(), "nothing to resume");
}

#[tokio::test]
async fn a_failed_cancel_reports_both_jobs_and_resume_finishes_without_a_second_submit() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    fail_cancels(&bed.hpc, true);
    let fleet = bed.fleet(false).await;
    let err = plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    let moved = tagged(&bed.k8s, "hpc/12");
    assert_eq!(moved.len(), 1);
    assert!(err.contains(&format!("both exist: hpc/12 and {}", moved[0])), "{err}");
    assert!(err.contains("the remote process has terminated"), "{err}");
    assert!(bed.hpc.has("12"));

    // The link is back: --resume finishes it from the log.
    fail_cancels(&bed.hpc, false);
    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].submitted.as_ref(), Some(&moved[0]));
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    assert_eq!(done.outcomes[0].result, Ok(format!("hpc/12 → {}", moved[0])));
    assert!(!bed.hpc.has("12"));
    assert_eq!(tagged(&bed.k8s, "hpc/12"), moved, "nothing duplicated");
    assert_eq!(bed.calls(), ["submit k8s/train-12", "cancel hpc/12", "cancel hpc/12"]);
    assert_eq!(bed.story(), ["intent", "submitted", "error", "intent", "ok"]);
    assert!(migrate::unfinished(&bed.audit.read_all().unwrap()).is_empty());
    // `flightdeck audit` tells it as one action that ended well.
    let entries = flightdeck::fleet::audit::entries(bed.audit.read_all().unwrap());
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].outcome, "ok");
}

#[tokio::test]
async fn a_migration_cut_off_after_its_intent_is_finished_from_the_tag_or_done_again() {
    let bed = Bed::new();
    let first = add(&bed.hpc, "12", JobState::Pending);
    let second = add(&bed.hpc, "13", JobState::Pending);
    let fleet = bed.fleet(false).await;
    // What a killed process leaves: intents on disk, and for hpc/12 a target job that was
    // accepted before the `submitted` record could be written.
    let plan = fleet.plan_migration(&[first.clone(), second.clone()], "k8s", &MigrateOptions::default()).await;
    let mut records = Vec::new();
    for (n, m) in plan.moves.iter().enumerate() {
        let Some(Action::Migrate { spec, .. }) = m.action() else { panic!("{m:?}") };
        records.push(flightdeck::fleet::AuditRecord {
            id: format!("cut-{n}"),
            time: chrono::Utc::now(),
            who: "alice@login".into(),
            action: "migrate".into(),
            target: m.source.to_string(),
            detail: Some("to=k8s".into()),
            outcome: "intent".into(),
            message: String::new(),
            spec: Some(spec),
        });
    }
    bed.audit.append_all(&records).unwrap();
    let spec = plan.moves[0].spec.clone().unwrap();
    bed.k8s.submit(&spec).await.unwrap();
    bed.calls.lock().unwrap().clear();
    fleet.refresh_now(None);
    fleet.wait_for(Duration::from_secs(5), |s| migrate::already_migrated(s, &first).is_some()).await;

    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    assert_eq!(open.len(), 2);
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    assert_eq!(done.failed(), 0, "{}", done.summary());
    assert_eq!(tagged(&bed.k8s, "hpc/12").len(), 1, "found by its tag, not submitted again");
    assert_eq!(tagged(&bed.k8s, "hpc/13").len(), 1, "never submitted: submitted now");
    assert!(!bed.hpc.has("12") && !bed.hpc.has("13"));
    let mut calls = bed.calls();
    calls.sort();
    assert_eq!(calls, ["cancel hpc/12", "cancel hpc/13", "submit k8s/train-13"]);
    assert!(migrate::unfinished(&bed.audit.read_all().unwrap()).is_empty());
}

#[tokio::test]
async fn a_second_migration_of_the_same_source_is_refused() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    fail_cancels(&bed.hpc, true);
    let fleet = bed.fleet(false).await;
    plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    let moved = tagged(&bed.k8s, "hpc/12");
    fleet.refresh_now(None);
    fleet.wait_for(Duration::from_secs(5), |s| migrate::already_migrated(s, &source).is_some()).await;
    let err = plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    assert_eq!(err, format!("refused: hpc/12 was already migrated: {} carries it as its origin", moved[0]));
    // The fleet holds to it whoever asks, even with a plan made before the first move.
    let spec = JobSpec { name: "x".into(), command: Some("true".into()), ..JobSpec::default() };
    let direct =
        Action::Migrate { source: source.clone(), to: "k8s".into(), spec: Box::new(spec), uid: None, resume: None };
    let out = fleet.perform(direct).await;
    assert!(out.result.unwrap_err().contains("already migrated"));
    assert_eq!(tagged(&bed.k8s, "hpc/12").len(), 1);
}

#[tokio::test]
async fn running_jobs_move_only_when_asked_and_ended_ones_never() {
    let bed = Bed::new();
    let running = add(&bed.hpc, "20", JobState::Running);
    let ended = add(&bed.hpc, "21", JobState::Completed);
    let fleet = bed.fleet(false).await;
    let err = plan_and_go(&fleet, &running, &MigrateOptions::default()).await.unwrap_err();
    assert!(err.contains("hpc/20 is running: moving it kills it") && err.contains("--running"), "{err}");
    let err =
        plan_and_go(&fleet, &ended, &MigrateOptions { running: true, ..MigrateOptions::default() }).await.unwrap_err();
    assert!(err.contains("hpc/21 has ended"), "{err}");
    assert!(bed.calls().is_empty());
    plan_and_go(&fleet, &running, &MigrateOptions { running: true, ..MigrateOptions::default() })
        .await
        .expect("moved with --running");
    assert!(!bed.hpc.has("20"));
}

#[tokio::test]
async fn read_only_refuses_a_migration_and_touches_nothing() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    let fleet = bed.fleet(true).await;
    let err = plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    assert_eq!(err, "refused: flightdeck runs read-only");
    assert!(bed.calls().is_empty());
    assert!(bed.hpc.has("12"));
}

#[tokio::test]
async fn a_thousand_moves_are_planned_and_carried_out_whole() {
    let bed = Bed::new();
    let sources: Vec<JobRef> = (0..1000).map(|i| add(&bed.hpc, &format!("{}", 1000 + i), JobState::Pending)).collect();
    let fleet = bed.fleet(false).await;
    let plan = fleet.plan_migration(&sources, "k8s", &MigrateOptions::default()).await;
    assert_eq!(plan.refused(), 0);
    let done = fleet.perform_batch(plan.actions()).await;
    assert_eq!(done.failed(), 0, "{}", done.summary());
    assert_eq!(done.summary(), "migrated 1000 of 1000");
    assert!(bed.hpc.edit(|s| s.jobs.is_empty()));
    assert_eq!(bed.k8s.edit(|s| s.jobs.len()), 1000);
}

/// An intent as `flightdeck migrate` writes it, for a process cut off right after it.
fn intent_record(
    id: &str,
    source: &JobRef,
    spec: JobSpec,
    at: chrono::DateTime<chrono::Utc>,
) -> flightdeck::fleet::AuditRecord {
    flightdeck::fleet::AuditRecord {
        id: id.into(),
        time: at,
        who: "alice@login".into(),
        action: "migrate".into(),
        target: source.to_string(),
        detail: Some("to=k8s".into()),
        outcome: "intent".into(),
        message: String::new(),
        spec: Some(Box::new(spec)),
    }
}

#[tokio::test]
async fn a_submit_whose_answer_is_lost_after_the_target_took_it_carries_on_from_the_tagged_copy() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    bed.k8s.fail(Verb::Submit, Some(lost_answer()));
    let fleet = bed.fleet(false).await;
    let result = plan_and_go(&fleet, &source, &MigrateOptions::default()).await;
    let moved = tagged(&bed.k8s, "hpc/12");
    assert_eq!(moved.len(), 1, "{result:?}");
    assert_eq!(result, Ok(format!("hpc/12 → {}", moved[0])));
    assert!(!bed.hpc.has("12"), "the source is cancelled");
    assert_eq!(bed.calls(), ["submit k8s/train-12", "cancel hpc/12"], "one submit, never a second");
    assert_eq!(bed.story(), ["intent", "submitted", "ok"]);
}

#[tokio::test]
async fn a_lost_answer_while_the_target_cannot_be_listed_is_interrupted_and_resume_adopts_the_copy() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    bed.k8s.fail(Verb::Submit, Some(lost_answer().then_link_down()));
    let fleet = bed.fleet(false).await;
    let err = plan_and_go(&fleet, &source, &MigrateOptions::default()).await.unwrap_err();
    assert!(err.starts_with("k8s gave no answer to the submit (`sbatch` timed out after 20 s)"), "{err}");
    assert!(err.contains("has no fresh listing") && err.contains("hpc/12 is left as it was"), "{err}");
    assert!(err.contains("--resume"), "{err}");
    assert!(bed.hpc.has("12"), "the source is untouched");
    assert_eq!(bed.story(), ["intent", "interrupted"], "the audit shows it interrupted, not refused");
    let entries = flightdeck::fleet::audit::entries(bed.audit.read_all().unwrap());
    assert_eq!(entries[0].outcome, "interrupted");
    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].submitted, None);

    // The link is back: --resume finds the copy the lost answer named and submits nothing.
    bed.k8s.fail(Verb::Submit, None);
    bed.k8s.set_unreachable(false);
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let moved = tagged(&bed.k8s, "hpc/12");
    assert_eq!(moved.len(), 1, "{}", done.summary());
    assert_eq!(done.outcomes[0].result, Ok(format!("hpc/12 → {}", moved[0])));
    assert!(!bed.hpc.has("12"));
    assert_eq!(bed.calls(), ["submit k8s/train-12", "cancel hpc/12"]);
    assert_eq!(bed.story(), ["intent", "interrupted", "intent", "submitted", "ok"]);
    assert!(migrate::unfinished(&bed.audit.read_all().unwrap()).is_empty());
}

#[tokio::test]
async fn resume_adopts_only_this_migrations_copy_on_the_target_owned_by_the_user_after_the_intent() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    let fleet = bed.fleet(false).await;
    let plan = fleet.plan_migration(std::slice::from_ref(&source), "k8s", &MigrateOptions::default()).await;
    let mut spec = plan.moves[0].spec.clone().unwrap();
    let ours = flightdeck::model::migration_tag("hpc/12", "m-1");
    spec.migrated_from = Some(ours.clone());
    let now = chrono::Utc::now();
    let later = now + chrono::TimeDelta::seconds(2);
    // Tagged with this migration's id, but submitted before its intent.
    let early = plant(&bed.k8s, "900", &ours, "alice", now - chrono::TimeDelta::seconds(5));
    bed.audit.append(&intent_record("m-1", &source, spec, now)).unwrap();
    // The same origin under another migration's id; no id at all (anyone can write a comment).
    let other_id = plant(&bed.k8s, "901", &flightdeck::model::migration_tag("hpc/12", "m-2"), "alice", later);
    let no_id = plant(&bed.k8s, "902", "hpc/12", "alice", later);
    // This migration's id, but another user's job.
    let mallory = plant(&bed.k8s, "903", &ours, "mallory", later);
    // This migration's id on the source cluster itself.
    let on_source = plant(&bed.hpc, "904", &ours, "alice", later);
    fleet.refresh_now(None);
    fleet.wait_for(Duration::from_secs(5), |s| migrate::already_migrated(s, &source).is_some()).await;

    // The job with this migration's id from before the intent is neither adopted nor
    // submitted beside (a target's clock behind ours shows our own copy so): stop, in words.
    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let err = done.outcomes[0].result.clone().unwrap_err();
    assert!(err.starts_with("k8s/900 carries this migration's id but says it was submitted at "), "{err}");
    assert!(err.contains("not taken as the copy and nothing is submitted beside it"), "{err}");
    assert!(bed.calls().is_empty(), "{:?}", bed.calls());
    assert!(bed.hpc.has("12"));

    // That one cancelled by its owner, --resume submits a copy of its own.
    bed.k8s.edit(|s| s.jobs.retain(|j| j.job_ref != early));
    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let result = done.outcomes[0].result.clone().expect("finished with a copy of its own");
    assert_eq!(bed.calls(), ["submit k8s/train-12", "cancel hpc/12"], "none of the planted jobs was adopted");
    let copy: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(![&early, &other_id, &no_id, &mallory, &on_source].contains(&&copy), "{copy}");
    let made = bed.k8s.edit(|s| s.jobs.iter().find(|j| j.job_ref == copy).cloned()).unwrap();
    assert_eq!(made.migration_id(), Some("m-1"));
    for planted in [&other_id, &no_id, &mallory] {
        assert!(bed.k8s.has(&planted.id), "{planted} is left alone");
    }
    assert!(bed.hpc.has("904") && !bed.hpc.has("12"));
}

#[tokio::test]
async fn resume_never_submits_while_the_target_cannot_be_listed() {
    let bed = Bed::new();
    let source = add(&bed.hpc, "12", JobState::Pending);
    let fleet = bed.fleet(false).await;
    let plan = fleet.plan_migration(std::slice::from_ref(&source), "k8s", &MigrateOptions::default()).await;
    let mut spec = plan.moves[0].spec.clone().unwrap();
    spec.migrated_from = Some(flightdeck::model::migration_tag("hpc/12", "m-1"));
    bed.audit.append(&intent_record("m-1", &source, spec, chrono::Utc::now())).unwrap();
    bed.k8s.set_unreachable(true);

    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let err = done.outcomes[0].result.clone().unwrap_err();
    assert!(err.starts_with("k8s has no fresh listing (cannot reach k8s: link down)"), "{err}");
    assert!(err.contains("nothing is submitted again"), "{err}");
    assert!(bed.calls().is_empty(), "{:?}", bed.calls());
    assert!(bed.hpc.has("12"));
    assert_eq!(migrate::unfinished(&bed.audit.read_all().unwrap()).len(), 1, "still to finish");

    // Once the target answers, the same resume finishes it.
    bed.k8s.set_unreachable(false);
    let open = migrate::unfinished(&bed.audit.read_all().unwrap());
    let done = fleet.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    assert_eq!(done.failed(), 0, "{}", done.summary());
    assert_eq!(tagged(&bed.k8s, "hpc/12").len(), 1);
    assert!(!bed.hpc.has("12"));
}

/// A target whose only node holds 8 idle GPUs of `model`.
fn gpu_node(cluster: &str, model: &str) -> flightdeck::model::Node {
    let mut node = flightdeck::model::Node::new(cluster, "gpu-1", flightdeck::model::NodeState::Idle);
    node.gpus = vec![flightdeck::model::GpuSlot {
        model: model.into(),
        gpu_product: None,
        shared: false,
        total: 8,
        allocated: 0,
        unhealthy: 0,
        utilisation: None,
    }];
    node.cpus_total = 64;
    node.memory_total_mb = 512 * 1024;
    node
}

/// A job asking for h100, moved to a cluster that has only h200: refused, naming why and
/// the way out; nothing is submitted or cancelled.
#[tokio::test]
async fn a_move_that_can_never_start_on_the_target_is_refused_naming_why() {
    let bed = Bed::new();
    bed.k8s.edit(|s| s.nodes.push(gpu_node("k8s", "h200")));
    let job = add(&bed.hpc, "7", JobState::Pending);
    let fleet = bed.fleet(false).await;
    let plan = fleet.plan_migration(std::slice::from_ref(&job), "k8s", &MigrateOptions::default()).await;
    let why = plan.moves[0].refused.clone().expect("refused");
    assert!(why.contains("can never start on k8s"), "{why}");
    assert!(why.contains("no node has h100"), "{why}");
    assert!(why.contains("--gpu-type MODEL") && why.contains("(h200 here)"), "{why}");
    assert!(plan.actions().is_empty());
    assert_eq!(plan_and_go(&fleet, &job, &MigrateOptions::default()).await.unwrap_err(), format!("refused: {why}"));
    assert!(bed.calls().is_empty(), "{:?}", bed.calls());
    assert!(bed.hpc.has("7"));
}

/// `--gpu-type h200` maps the model: the plan shows it as a changed field, the placement
/// is `now`, and the target gets the job asking for h200.
#[tokio::test]
async fn gpu_type_maps_the_model_and_the_plan_shows_the_change() {
    let bed = Bed::new();
    bed.k8s.edit(|s| s.nodes.push(gpu_node("k8s", "h200")));
    let job = add(&bed.hpc, "7", JobState::Pending);
    let fleet = bed.fleet(false).await;
    let opts = MigrateOptions { gpu_type: Some(GpuChoice::Model("h200".into())), ..MigrateOptions::default() };
    let plan = fleet.plan_migration(std::slice::from_ref(&job), "k8s", &opts).await;
    let m = &plan.moves[0];
    assert_eq!(m.refused, None);
    assert!(
        m.warnings.iter().any(|w| w == "`gpu_type`: changed from h100 to h200, as asked (--gpu-type)"),
        "{:?}",
        m.warnings
    );
    assert_eq!(m.advice.as_ref().map(|a| a.verdict.as_str()), Some("now"), "{:?}", m.advice);
    assert_eq!(m.spec.as_ref().and_then(|s| s.gpu_type.as_deref()), Some("h200"));
    plan_and_go(&fleet, &job, &opts).await.expect("moved");
    let on_target = tagged(&bed.k8s, "hpc/7");
    let copy = on_target.first().expect("the target has the copy");
    let spec = bed.k8s.job_spec(copy).await.unwrap().spec;
    assert_eq!((spec.gpus, spec.gpu_type.as_deref()), (4, Some("h200")));
    assert!(!bed.hpc.has("7"), "the source is cancelled once the target lists the copy");
}

/// `--gpu-type any` leaves the model open (the target's render decides whether it can);
/// a job without GPUs is left as it is, said so; a name that is not one is refused.
#[tokio::test]
async fn gpu_type_any_leaves_the_model_open_and_bad_names_are_refused() {
    let bed = Bed::new();
    bed.k8s.edit(|s| s.nodes.push(gpu_node("k8s", "h200")));
    let job = add(&bed.hpc, "7", JobState::Pending);
    let fleet = bed.fleet(false).await;
    let opts = MigrateOptions { gpu_type: Some(GpuChoice::Any), ..MigrateOptions::default() };
    let plan = fleet.plan_migration(std::slice::from_ref(&job), "k8s", &opts).await;
    let m = &plan.moves[0];
    assert_eq!(m.refused, None);
    assert_eq!(m.spec.as_ref().map(|s| (s.gpus, s.gpu_type.clone())), Some((4, None)));
    assert!(m.warnings.iter().any(|w| w.contains("changed from h100 to any model")), "{:?}", m.warnings);

    assert_eq!(GpuChoice::parse("ANY"), Ok(GpuChoice::Any));
    assert_eq!(GpuChoice::parse("a100-80gb"), Ok(GpuChoice::Model("a100-80gb".into())));
    let err = GpuChoice::parse("h200;rm -rf").unwrap_err();
    assert!(err.contains("not a GPU model"), "{err}");
}
