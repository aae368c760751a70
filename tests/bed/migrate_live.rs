//! Migration over the real test bed: Slurm 22.05 → Slurm 24.11 through the binary, Slurm →
//! Kubernetes (the wire-protocol fake) and back, Slurm → dstack (the real server: the run
//! arrives pending), and the fault cases: a target that rejects the job (the source stays
//! pending), and a source whose cancel fails because its link died between the two steps
//! (both reported, `--resume` finishes it from the audit log, nothing lost or duplicated).
//! The failed cancel is injected by wrapping the real fd22 backend; everything else is real.
//! A target `sbatch` slower than the cluster's timeout (a wrapper first on `PATH`, fd22's
//! commands run on this machine) takes the job and loses the answer: the migration finds
//! its tagged copy and ends with one job; `--resume` leaves alone jobs planted with the
//! source's tag under another migration's id, and stops at one with this migration's id
//! from before the intent.

use crate::common;
use crate::kube_fake;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use flightdeck::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, LogChunk, NodeAction, Registry};
use flightdeck::config::{ClusterConfig, Config};
use flightdeck::fleet::migrate::{self, MigrateOptions};
use flightdeck::fleet::{AuditLog, Fleet, FleetOptions, Member};
use flightdeck::model::{JobRef, JobState, LogHandle, Native, Snapshot, SpecFields};
use flightdeck::spec::{Imported, JobSpec};

use common::*;

const WAIT: Duration = Duration::from_secs(60);

/// A held job on `cluster`, cancelled when dropped, whatever the test did.
struct Held {
    backend: Arc<dyn Backend>,
    job: JobRef,
}

impl Drop for Held {
    fn drop(&mut self) {
        let (backend, job) = (self.backend.clone(), self.job.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async { backend.job_action(&job, JobAction::Cancel).await.ok() });
        })
        .join();
    }
}

fn spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        command: Some("echo moved; sleep 600".into()),
        gpus: 1,
        time_limit: Some("20m".into()),
        env: [("FD_MIGRATED".to_string(), "yes it was".to_string())].into(),
        ..JobSpec::default()
    }
}

fn built(cluster: &ClusterConfig) -> Arc<dyn Backend> {
    Registry::builtin().build(cluster).expect("backend")
}

/// A source job that waits held. The portable spec cannot submit held, so it is held
/// right after submission; a scheduler quick enough to start it first gets it cancelled and
/// submitted again (dropping a `Held` cancels its job; the scenarios need a held source, not a running one).
async fn held(backend: Arc<dyn Backend>, spec: &JobSpec) -> Held {
    for _ in 0..5 {
        let job = backend.submit(spec).await.expect("submit the source job");
        let held = Held { backend: backend.clone(), job: job.clone() };
        if backend.job_action(&job, JobAction::Hold).await.is_ok()
            && listed(&*backend, &job).await == Some(JobState::Held)
        {
            return held;
        }
        // Dropped here: `Held` cancels it.
    }
    panic!("the source job of {} started every time before it could be held", spec.name);
}

fn member(backend: Arc<dyn Backend>, kind: &str) -> Member {
    Member { backend, kind: kind.into(), refresh: Duration::from_secs(1), timeout: Duration::from_secs(20) }
}

async fn fleet(members: Vec<Member>, audit: &AuditLog) -> Fleet {
    let fleet = Fleet::start(
        members,
        FleetOptions { read_only: false, poll: true, audit: Some(audit.clone()), actor: "tester@testbed".into() },
    );
    fleet.wait_for(WAIT, |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    fleet
}

/// Wait until the fleet lists `job` (the source's hold reached it, a new job arrived …).
async fn until_listed(fleet: &Fleet, job: &JobRef) {
    fleet.refresh_now(None);
    let state = fleet
        .wait_for(WAIT, |s| {
            s.cluster(&job.cluster)
                .and_then(|c| c.snapshot.as_ref())
                .is_some_and(|s| s.jobs.iter().any(|j| &j.job_ref == job))
        })
        .await;
    assert!(
        state
            .cluster(&job.cluster)
            .and_then(|c| c.snapshot.as_ref())
            .is_some_and(|s| s.jobs.iter().any(|j| &j.job_ref == job)),
        "{job} never listed"
    );
}

async fn listed(backend: &dyn Backend, job: &JobRef) -> Option<JobState> {
    let snap = backend.snapshot().await.expect("snapshot");
    snap.jobs.iter().find(|j| &j.job_ref == job).map(|j| j.state).filter(|s| !s.is_finished())
}

fn tagged(snapshot: &Snapshot, origin: &JobRef) -> Vec<JobRef> {
    let origin = origin.to_string();
    snapshot
        .jobs
        .iter()
        .filter(|j| j.origin() == Some(origin.as_str()) && !j.state.is_finished())
        .map(|j| j.job_ref.clone())
        .collect()
}

#[test]
fn slurm_22_to_slurm_24_through_the_binary() {
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    let source = rt.block_on(held(fd22.clone(), &spec("fd-migrate-22-24")));
    let state = tempfile::tempdir().unwrap();
    let config = testbed_config_path();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flightdeck"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("run flightdeck")
    };
    let src = source.job.to_string();
    // Without --yes: the plan, and nothing done.
    let out = run(&["migrate", &src, "--to", "fd24"]);
    assert!(!out.status.success());
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains(&format!("{src} (held) → fd24")), "{plan}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --yes"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(rt.block_on(listed(&*fd22, &source.job)), Some(JobState::Held));
    // --dry-run shows the sbatch script the target will get.
    let out = run(&["migrate", &src, "--to", "fd24", "--dry-run"]);
    let dry = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dry.contains("#SBATCH --job-name=fd-migrate-22-24") && dry.contains(&src), "{dry}");

    let out = run(&["migrate", &src, "--to", "fd24", "--yes"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    let new: JobRef =
        said.trim().rsplit(' ').next().and_then(|r| r.parse().ok()).unwrap_or_else(|| panic!("no new ref in {said:?}"));
    let _moved = Held { backend: fd24.clone(), job: new.clone() };
    assert_eq!(new.cluster, "fd24");
    // The plan first (the same lines --dry-run prints), then the outcome.
    assert!(said.starts_with(&format!("{src} (held) → fd24\n  placement: ")), "{said}");
    assert!(said.trim_end().ends_with(&format!("migrated {src}: {src} → {new}")), "{said}");
    assert_eq!(rt.block_on(listed(&*fd22, &source.job)), None, "the source is cancelled");
    let snap = rt.block_on(fd24.snapshot()).unwrap();
    assert_eq!(tagged(&snap, &source.job), vec![new.clone()], "the new job says where it came from");
    // What arrived is what left: the spec read back from fd24.
    let back = rt.block_on(fd24.job_spec(&new)).expect("spec of the new job");
    assert_eq!((back.spec.gpus, back.spec.time_limit_secs()), (1, Some(20 * 60)), "{:?}", back.spec);
    assert_eq!(back.spec.env.get("FD_MIGRATED").map(String::as_str), Some("yes it was"));
    let tag = back.spec.migrated_from.clone().unwrap_or_default();
    assert_eq!(flightdeck::model::split_migration_tag(&tag).0, src.as_str(), "{tag}");
    assert!(flightdeck::model::split_migration_tag(&tag).1.is_some(), "the tag names the migration: {tag}");
    // The audit log tells it as one migration that ended well.
    let out = run(&["audit", "--output", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows.iter().find(|r| r["action"] == "migrate").expect("a migrate entry");
    assert_eq!((&row["outcome"], &row["target"]), (&serde_json::json!("ok"), &serde_json::json!(src)));
}

/// A job asking for a100 (fd22 has them), moved to fd24 (l40s and h100 only): refused,
/// naming why and the models there, the source left held; `--gpu-type l40s` maps the
/// model, the plan shows the changed field, and fd24 gets a job asking for l40s.
#[test]
fn a_move_across_gpu_models_is_refused_until_the_model_is_mapped() {
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    let ask = JobSpec { gpu_type: Some("a100".into()), ..spec("fd-migrate-model") };
    let source = rt.block_on(held(fd22.clone(), &ask));
    let state = tempfile::tempdir().unwrap();
    let config = testbed_config_path();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flightdeck"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("run flightdeck")
    };
    let src = source.job.to_string();
    let out = run(&["migrate", &src, "--to", "fd24", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&format!("{src} → fd24: refused: it can never start on fd24: no node")), "{err}");
    assert!(err.contains("has a100") && err.contains("(h100, l40s here)"), "{err}");
    assert!(err.contains("nothing to migrate"), "{err}");
    assert_eq!(rt.block_on(listed(&*fd22, &source.job)), Some(JobState::Held), "the source stays");

    let out = run(&["migrate", &src, "--to", "fd24", "--gpu-type", "l40s", "--yes"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("  warning: `gpu_type`: changed from a100 to l40s, as asked (--gpu-type)"), "{said}");
    let new: JobRef =
        said.trim().rsplit(' ').next().and_then(|r| r.parse().ok()).unwrap_or_else(|| panic!("no new ref in {said:?}"));
    let _moved = Held { backend: fd24.clone(), job: new.clone() };
    assert_eq!(new.cluster, "fd24");
    let back = rt.block_on(fd24.job_spec(&new)).expect("spec of the new job");
    assert_eq!((back.spec.gpus, back.spec.gpu_type.as_deref()), (1, Some("l40s")), "{:?}", back.spec);
    assert_eq!(rt.block_on(listed(&*fd22, &source.job)), None, "the source is cancelled");
}

#[tokio::test]
async fn a_target_that_rejects_the_job_leaves_the_source_pending() {
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    // fd22 has a100s and fd24 has none: fd24's sbatch refuses the job at submit.
    let mut s = spec("fd-migrate-rejected");
    s.gpu_type = Some("a100".into());
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let source = held(fd22.clone(), &s).await;
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(fd24.clone(), "slurm")], &audit).await;
    until_listed(&f, &source.job).await;
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "fd24", &MigrateOptions::default()).await;
    // The plan already refuses it (no a100 on fd24); the move carried out anyway, as a plan
    // made from a listing that could not tell would, still leaves the source untouched when
    // the target's sbatch says no.
    let mut planned = plan.moves[0].clone();
    let why = planned.refused.take().unwrap_or_default();
    assert!(why.starts_with("it can never start on fd24: no node in partition gpu has a100"), "{why}");
    let actions = vec![planned.action().expect("the planned move")];
    let done = f.perform_batch(actions).await;
    let err = done.outcomes[0].result.clone().unwrap_err();
    assert!(err.starts_with("fd24 refused it: "), "{err}");
    assert!(err.ends_with(&format!("{} is untouched", source.job)), "{err}");
    assert_eq!(listed(&*fd22, &source.job).await, Some(JobState::Held), "the source is as it was");
    assert!(migrate::unfinished(&audit.read_all().unwrap()).is_empty(), "nothing to resume");
}

/// fd22 as it is, except that a cancel finds its SSH link dead.
struct DeadLinkOnCancel(Arc<dyn Backend>);

#[async_trait]
impl Backend for DeadLinkOnCancel {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    fn spec_fields(&self) -> SpecFields {
        self.0.spec_fields()
    }
    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        self.0.snapshot().await
    }
    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        self.0.submit(spec).await
    }
    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        self.0.render(spec).await
    }
    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        self.0.job_spec(job).await
    }
    async fn acting_user(&self) -> Result<Option<String>, BackendError> {
        self.0.acting_user().await
    }
    async fn job_action(&self, _job: &JobRef, _action: JobAction) -> Result<(), BackendError> {
        Err(BackendError::Connect {
            target: "root@127.0.0.1:2222".into(),
            message: "the remote process has terminated".into(),
        })
    }
    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        self.0.node_action(node, action).await
    }
    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        self.0.diagnose().await
    }
    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max: u64) -> Result<LogChunk, BackendError> {
        self.0.read_log(log, from, max).await
    }
}

#[tokio::test]
async fn a_link_that_dies_between_submit_and_cancel_is_reported_and_resume_finishes_it() {
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let source = held(fd22.clone(), &spec("fd-migrate-cut")).await;
    let broken =
        fleet(vec![member(Arc::new(DeadLinkOnCancel(fd22.clone())), "slurm"), member(fd24.clone(), "slurm")], &audit)
            .await;
    until_listed(&broken, &source.job).await;
    let plan = broken.plan_migration(std::slice::from_ref(&source.job), "fd24", &MigrateOptions::default()).await;
    let done = broken.perform_batch(plan.actions()).await;
    let err = done.outcomes[0].result.clone().unwrap_err();
    let snap = fd24.snapshot().await.unwrap();
    let moved = tagged(&snap, &source.job);
    assert_eq!(moved.len(), 1, "{err}");
    let _moved = Held { backend: fd24.clone(), job: moved[0].clone() };
    assert!(err.contains(&format!("both exist: {} and {}", source.job, moved[0])), "{err}");
    assert_eq!(listed(&*fd22, &source.job).await, Some(JobState::Held), "the source was not cancelled");
    drop(broken);

    // The link is back: a new fleet (a new process) resumes from the same audit log.
    let open = migrate::unfinished(&audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].submitted.as_ref(), Some(&moved[0]));
    let healed = fleet(vec![member(fd22.clone(), "slurm"), member(fd24.clone(), "slurm")], &audit).await;
    let done = healed.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    assert_eq!(done.outcomes[0].result, Ok(format!("{} → {}", source.job, moved[0])), "{}", done.summary());
    assert_eq!(listed(&*fd22, &source.job).await, None, "the source is cancelled now");
    let snap = fd24.snapshot().await.unwrap();
    assert_eq!(tagged(&snap, &source.job), moved, "nothing duplicated");
    assert!(migrate::unfinished(&audit.read_all().unwrap()).is_empty());
}

#[tokio::test]
async fn slurm_to_kubernetes_and_back() {
    let _lock = cluster_lock("fd22");
    let fake = kube_fake::FakeApi::start().await;
    fake.put_all(kube_fake::fixtures::standard_cluster());
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let text = format!(
        "[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\n",
        kubeconfig.display()
    );
    let path = dir.path().join("k8s.toml");
    std::fs::write(&path, text).unwrap();
    let k8s_config = Config::load(Some(&path), &Registry::builtin()).unwrap().clusters.remove(0);
    let (fd22, k8s) = (built(&cluster_config("fd22")), built(&k8s_config));
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let source = held(fd22.clone(), &spec("fd-migrate-to-k8s")).await;
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(k8s.clone(), "kubernetes")], &audit).await;
    until_listed(&f, &source.job).await;

    // Kubernetes runs containers: without an image the plan says so by name.
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "k8s", &MigrateOptions::default()).await;
    let why = plan.moves[0].refused.clone().expect("refused without an image");
    assert!(why.contains("`image`"), "{why}");
    let opts =
        MigrateOptions { image: Some(Some("nvcr.io/nvidia/pytorch:24.01-py3".into())), ..MigrateOptions::default() };
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "k8s", &opts).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    let native = plan.moves[0].native.clone().unwrap();
    assert!(native.text.contains("kind: Job") && native.text.contains("nvidia.com/gpu"), "{}", native.text);
    let done = f.perform_batch(plan.actions()).await;
    let result = done.outcomes[0].result.clone().expect("moved to Kubernetes");
    assert_eq!(listed(&*fd22, &source.job).await, None, "the Slurm job is cancelled");
    let jobs = fake.list("batch/v1", "Job");
    let made = jobs
        .iter()
        .find(|j| j["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("fd-migrate-to-k8s")))
        .unwrap_or_else(|| panic!("no Job in the fake: {jobs:?}"));
    let annotations = made["metadata"]["annotations"].to_string();
    assert!(annotations.contains(&source.job.to_string()), "the origin is on the Job: {annotations}");
    let new: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();

    // And back to Slurm, which has no pyxis here: the image is dropped, by name.
    until_listed(&f, &new).await;
    let back = MigrateOptions { image: Some(None), ..MigrateOptions::default() };
    let plan = f.plan_migration(std::slice::from_ref(&new), "fd22", &back).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    assert!(plan.moves[0].warnings.iter().any(|w| w.starts_with("`image`")), "{:?}", plan.moves[0].warnings);
    let done = f.perform_batch(plan.actions()).await;
    let result = done.outcomes[0].result.clone().expect("moved back to Slurm");
    let home: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    let _home = Held { backend: fd22.clone(), job: home.clone() };
    assert_eq!(home.cluster, "fd22");
    let snap = fd22.snapshot().await.unwrap();
    assert_eq!(tagged(&snap, &new), vec![home.clone()]);
    assert!(
        fake.get(
            "batch/v1",
            "Job",
            Some(made["metadata"]["namespace"].as_str().unwrap()),
            made["metadata"]["name"].as_str().unwrap()
        )
        .is_none(),
        "the Kubernetes Job is deleted"
    );
}

#[tokio::test]
async fn slurm_to_dstack_arrives_pending() {
    let _lock = cluster_lock("fd22");
    let dstack_lock = std::env::temp_dir().join("flightdeck-testbed-dstack.lock");
    let dstack_lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dstack_lock).unwrap();
    dstack_lock.lock_shared().unwrap();
    let var = |k: &str| {
        std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set: source /var/lib/flightdeck-testbed/dstack.env"))
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dstack.toml");
    std::fs::write(
        &path,
        format!(
            "[[cluster]]\nname = \"dstack\"\nkind = \"dstack\"\nurl = \"{}\"\nproject = \"{}\"\ntoken_env = \"FD_DSTACK_TOKEN\"\nretry = \"1h\"\n",
            var("FD_DSTACK_URL"),
            var("FD_DSTACK_PROJECT")
        ),
    )
    .unwrap();
    let dstack_config = Config::load(Some(&path), &Registry::builtin()).unwrap().clusters.remove(0);
    let (fd22, dstack) = (built(&cluster_config("fd22")), built(&dstack_config));
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let source = held(fd22.clone(), &spec("fd-migrate-to-dstack")).await;
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(dstack.clone(), "dstack")], &audit).await;
    until_listed(&f, &source.job).await;
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "dstack", &MigrateOptions::default()).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    let done = f.perform_batch(plan.actions()).await;
    let result = done.outcomes[0].result.clone().expect("moved to dstack");
    let new: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    let cleanup = dstack.clone();
    let run = new.clone();
    let _gone = Cleanup(Some(Box::new(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            cleanup.job_action(&run, JobAction::Cancel).await.ok();
            tokio::time::sleep(Duration::from_secs(2)).await;
            cleanup.job_action(&run, JobAction::Delete).await.ok();
        });
    })));
    assert_eq!(listed(&*fd22, &source.job).await, None, "the Slurm job is cancelled");
    let state = listed(&*dstack, &new).await;
    assert!(matches!(state, Some(JobState::Pending)), "the run waits for capacity: {state:?}");
}

/// A config with fd24 as the test bed has it and fd22 run on this machine (the test bed's
/// 22.05 is the host's own Slurm) with a 3 s timeout: the `sbatch` the binary finds first on
/// its `PATH` is the one fd22's submits run.
fn config_with_local_fd22(dir: &std::path::Path) -> std::path::PathBuf {
    let bed = std::fs::read_to_string(testbed_config_path()).expect("test bed config");
    let fd24 = bed.split("[[cluster]]").find(|c| c.contains("name = \"fd24\"")).expect("fd24 in the test bed config");
    let text = format!(
        "[[cluster]]\nname = \"fd22\"\nkind = \"slurm\"\nrefresh_seconds = 1\ntimeout_seconds = 3\n\n[[cluster]]{fd24}"
    );
    let path = dir.join("flightdeck.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_target_sbatch_slower_than_the_timeout_still_ends_with_one_job() {
    use std::os::unix::fs::PermissionsExt;
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    let source = rt.block_on(held(fd24.clone(), &spec("fd-migrate-slow-sbatch")));
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_local_fd22(dir.path());
    // sbatch under load: the controller takes the job, the answer comes after the timeout.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let wrapper = bin.join("sbatch");
    std::fs::write(&wrapper, "#!/bin/sh\n/usr/bin/sbatch \"$@\"\nstatus=$?\nsleep 30\nexit $status\n").unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let slurm_conf = std::env::var("FD22_SLURM_CONF").expect("FD22_SLURM_CONF: source /var/lib/flightdeck-testbed/env");
    let src = source.job.to_string();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .arg("--config")
        .arg(&config)
        .args(["migrate", &src, "--to", "fd22", "--yes"])
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("PATH", &path)
        .env("SLURM_CONF", &slurm_conf)
        .output()
        .expect("run flightdeck");
    let (said, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Done long before sbatch's answer would have come: the timeout struck, the copy was found.
    assert!(started.elapsed() < Duration::from_secs(25), "took {:?}: {said}{err}", started.elapsed());
    let snap = rt.block_on(fd22.snapshot()).unwrap();
    let copies = tagged(&snap, &source.job);
    let _copies: Vec<Held> = copies.iter().map(|j| Held { backend: fd22.clone(), job: j.clone() }).collect();
    assert_eq!(copies.len(), 1, "exactly one copy: {said}{err}");
    assert!(out.status.success(), "{said}{err}");
    assert!(said.trim_end().ends_with(&format!("migrated {src}: {src} → {}", copies[0])), "{said}{err}");
    assert_eq!(rt.block_on(listed(&*fd24, &source.job)), None, "the source is cancelled");
    // The audit log: the copy recorded as submitted (found, not answered), then done.
    let audit = AuditLog::new(dir.path().join("state/flightdeck/audit.jsonl"));
    let story: Vec<(String, String)> = audit.read_all().unwrap().into_iter().map(|r| (r.outcome, r.message)).collect();
    let outcomes: Vec<&str> = story.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(outcomes, ["intent", "submitted", "ok"], "{story:?}");
    assert_eq!(story[1].1, copies[0].to_string());
}

#[tokio::test]
async fn resume_leaves_alone_jobs_tagged_by_another_migration_or_from_before_the_intent() {
    let _locks = (cluster_lock("fd22"), cluster_lock("fd24"));
    let (fd22, fd24) = (built(&cluster_config("fd22")), built(&cluster_config("fd24")));
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let source = held(fd22.clone(), &spec("fd-migrate-planted")).await;
    let src = source.job.to_string();
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(fd24.clone(), "slurm")], &audit).await;
    until_listed(&f, &source.job).await;
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "fd24", &MigrateOptions::default()).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    let mut ours = plan.moves[0].spec.clone().unwrap();
    ours.migrated_from = Some(flightdeck::model::migration_tag(&src, "live-m-1"));
    // Planted on the target with the source's tag: under another migration's id, and under
    // this one's id but submitted before its intent (the test bed has one Unix user, root,
    // so the owner rule is held in tests/offline/migrate.rs).
    let mut other = spec("fd-migrate-planted-other");
    other.migrated_from = Some(flightdeck::model::migration_tag(&src, "live-m-2"));
    let planted_other = Held { backend: fd24.clone(), job: fd24.submit(&other).await.expect("plant") };
    let mut early = spec("fd-migrate-planted-early");
    early.migrated_from = ours.migrated_from.clone();
    let planted_early = Held { backend: fd24.clone(), job: fd24.submit(&early).await.expect("plant") };
    // Slurm's submit times are whole seconds: the intent comes in a later one.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    audit
        .append(&flightdeck::fleet::AuditRecord {
            id: "live-m-1".into(),
            time: chrono::Utc::now(),
            who: "tester@testbed".into(),
            action: "migrate".into(),
            target: src.clone(),
            detail: Some("to=fd24".into()),
            outcome: "intent".into(),
            message: String::new(),
            spec: Some(Box::new(ours)),
        })
        .unwrap();

    // A job with this migration's id from before its intent: not adopted, nothing submitted
    // beside it (a clock behind ours would show our own copy so); stopped, in words.
    let open = migrate::unfinished(&audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    let done = f.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let err = done.outcomes[0].result.clone().unwrap_err();
    assert!(
        err.starts_with(&format!("{} carries this migration's id but says it was submitted", planted_early.job)),
        "{err}"
    );
    assert_eq!(listed(&*fd22, &source.job).await, Some(JobState::Held), "the source is as it was");
    let snap = fd24.snapshot().await.unwrap();
    assert_eq!(tagged(&snap, &source.job).len(), 2, "nothing submitted: {:?}", tagged(&snap, &source.job));

    // Once that job is cancelled, --resume submits a copy of its own and leaves the other.
    fd24.job_action(&planted_early.job, JobAction::Cancel).await.expect("cancel the planted job");
    f.refresh_now(None);
    let gone = planted_early.job.clone();
    f.wait_for(WAIT, |s| {
        s.cluster("fd24")
            .and_then(|c| c.snapshot.as_ref())
            .is_some_and(|s| s.jobs.iter().all(|j| j.job_ref != gone || j.state.is_finished()))
    })
    .await;
    let open = migrate::unfinished(&audit.read_all().unwrap());
    assert_eq!(open.len(), 1);
    let done = f.perform_batch(open.iter().map(migrate::Unfinished::action).collect()).await;
    let result = done.outcomes[0].result.clone().unwrap_or_else(|e| panic!("{e}"));
    let new: JobRef = result.rsplit(' ').next().and_then(|r| r.parse().ok()).expect("a new ref");
    let _new = Held { backend: fd24.clone(), job: new.clone() };
    assert!(new != planted_other.job && new != planted_early.job, "a planted job was adopted: {result}");
    assert_eq!(listed(&*fd22, &source.job).await, None, "the source is cancelled");
    let snap = fd24.snapshot().await.unwrap();
    let mut tags = tagged(&snap, &source.job);
    tags.sort_by(|a, b| a.id.cmp(&b.id));
    let mut expected = vec![planted_other.job.clone(), new.clone()];
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(tags, expected, "the planted jobs are left as they were, one copy of our own");
    let copy = snap.jobs.iter().find(|j| j.job_ref == new).unwrap();
    assert_eq!(copy.migration_id(), Some("live-m-1"));
}

/// Runs its closure on drop, on a thread of its own (a runtime may be running here).
struct Cleanup(Option<Box<dyn FnOnce() + Send>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            let _ = std::thread::spawn(f).join();
        }
    }
}

/// How many copies of one job are alive, source and target together, sampled while a move
/// runs: never none (the target is submitted and listed before the source is cancelled).
/// `kind` is the workload's `(apiVersion, kind)` on the fake, `name` the spec's name both
/// copies carry.
async fn sample_alive(
    fd22: Arc<dyn Backend>,
    slurm_job: Option<JobRef>,
    fake: kube_fake::FakeApi,
    kind: (&'static str, &'static str),
    name: &'static str,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Vec<usize> {
    let mut seen = Vec::new();
    while !*stop.borrow() {
        let on_slurm = match &slurm_job {
            Some(job) => usize::from(listed(&*fd22, job).await.is_some()),
            None => {
                let snap = fd22.snapshot().await.expect("snapshot");
                snap.jobs.iter().filter(|j| j.name == name && !j.state.is_finished()).count()
            }
        };
        let on_k8s = fake
            .list(kind.0, kind.1)
            .iter()
            .filter(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == name)
            .count();
        seen.push(on_slurm + on_k8s);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    seen
}

const JOBSET: (&str, &str) = ("jobset.x-k8s.io/v1alpha2", "JobSet");
const PYTORCHJOB: (&str, &str) = ("kubeflow.org/v1", "PyTorchJob");

/// The Kubernetes fake with the workload CRDs served, as a configured cluster `k8s`.
async fn fake_with_crds(dir: &std::path::Path) -> (kube_fake::FakeApi, ClusterConfig) {
    let fake = kube_fake::FakeApi::start().await;
    kube_fake::workloads::serve_crds(&fake);
    fake.put_all(kube_fake::fixtures::standard_cluster());
    let kubeconfig = fake.kubeconfig(dir, "fake");
    let text = format!(
        "[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\n",
        kubeconfig.display()
    );
    let path = dir.join("k8s.toml");
    std::fs::write(&path, text).unwrap();
    (fake, Config::load(Some(&path), &Registry::builtin()).unwrap().clusters.remove(0))
}

/// Issue #31: a pending 3-node Slurm job moves to Kubernetes as a JobSet of 3 pods with
/// torch's rendezvous, and the JobSet moves back as a 3-node sbatch job whose command runs
/// once per node through srun; at every sample one copy or (between submit and cancel) two
/// are alive, never none, and after each move exactly one.
#[tokio::test]
async fn a_three_node_slurm_job_migrates_to_a_jobset_and_back() {
    let _lock = cluster_lock("fd22");
    let dir = tempfile::tempdir().unwrap();
    let (fake, k8s_config) = fake_with_crds(dir.path()).await;
    let (fd22, k8s) = (built(&cluster_config("fd22")), built(&k8s_config));
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let name = "fd-migrate-3-nodes";
    let three = JobSpec { nodes: Some(3), gpus: 0, ..spec(name) };
    let source = held(fd22.clone(), &three).await;
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(k8s.clone(), "kubernetes")], &audit).await;
    until_listed(&f, &source.job).await;

    let opts =
        MigrateOptions { image: Some(Some("nvcr.io/nvidia/pytorch:25.01-py3".into())), ..MigrateOptions::default() };
    let plan = f.plan_migration(std::slice::from_ref(&source.job), "k8s", &opts).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    let native = plan.moves[0].native.clone().unwrap();
    assert!(native.text.contains("kind: JobSet"), "{}", native.text);
    assert!(fake.list("jobset.x-k8s.io/v1alpha2", "JobSet").is_empty());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sampler =
        tokio::spawn(sample_alive(fd22.clone(), Some(source.job.clone()), fake.clone(), JOBSET, name, stopped));
    let done = f.perform_batch(plan.actions()).await;
    stop.send(true).unwrap();
    let seen = sampler.await.unwrap();
    let result = done.outcomes[0].result.clone().expect("moved to Kubernetes");
    assert!(!seen.is_empty() && seen.iter().all(|n| (1..=2).contains(n)), "alive copies over the move: {seen:?}");
    assert_eq!(listed(&*fd22, &source.job).await, None, "the Slurm job is cancelled");
    let sets = fake.list("jobset.x-k8s.io/v1alpha2", "JobSet");
    assert_eq!(sets.len(), 1, "exactly one JobSet: {sets:?}");
    let js = &sets[0];
    let job = &js["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!((&job["parallelism"], &job["completions"]), (&serde_json::json!(3), &serde_json::json!(3)));
    assert_eq!(job["activeDeadlineSeconds"], serde_json::json!(1200), "the time limit travels");
    let env = job["template"]["spec"]["containers"][0]["env"].to_string();
    for want in ["MASTER_ADDR", "WORLD_SIZE", "NODE_RANK", "FD_MIGRATED"] {
        assert!(env.contains(want), "{want}: {env}");
    }
    let command = job["template"]["spec"]["containers"][0]["command"].to_string();
    assert!(
        command.contains("echo moved; sleep 600") && !command.contains("srun"),
        "the command, not the wrapper: {command}"
    );
    assert!(js["metadata"]["annotations"].to_string().contains(&source.job.to_string()), "the origin is on it");
    let new: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(new.id.contains(":jobset:"), "{new}");

    // And back: a 3-node sbatch job, the command once per node.
    until_listed(&f, &new).await;
    let back = MigrateOptions { image: Some(None), ..MigrateOptions::default() };
    let plan = f.plan_migration(std::slice::from_ref(&new), "fd22", &back).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    let script = plan.moves[0].native.clone().unwrap().text;
    assert!(script.contains("#SBATCH --nodes=3\n"), "{script}");
    assert!(script.contains("srun --ntasks-per-node=1 bash -c 'echo moved; sleep 600'"), "{script}");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn(sample_alive(fd22.clone(), None, fake.clone(), JOBSET, name, stopped));
    let done = f.perform_batch(plan.actions()).await;
    stop.send(true).unwrap();
    let seen = sampler.await.unwrap();
    let result = done.outcomes[0].result.clone().expect("moved back to Slurm");
    let home: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    let _home = Held { backend: fd22.clone(), job: home.clone() };
    assert!(!seen.is_empty() && seen.iter().all(|n| (1..=2).contains(n)), "alive copies over the move: {seen:?}");
    assert!(fake.list("jobset.x-k8s.io/v1alpha2", "JobSet").is_empty(), "the JobSet is deleted");
    let snap = fd22.snapshot().await.unwrap();
    assert_eq!(tagged(&snap, &new), vec![home.clone()], "exactly one job on Slurm");
    let spec = fd22.job_spec(&home).await.unwrap().spec;
    assert_eq!((spec.nodes, spec.command.as_deref()), (Some(3), Some("echo moved; sleep 600")));
}

/// Issue #31: a PyTorchJob waiting on Kubernetes (the fake: no operator starts it; submitted
/// there as the spec's `multi_node` asks, 1 Master and 1 Worker) moves to Slurm as a 2-node
/// sbatch job whose command runs once per node through srun, by the same never-lose order:
/// at every sample one copy or (between submit and cancel) two are alive, never none, and
/// after the move exactly one, on Slurm, the PyTorchJob deleted.
#[tokio::test]
async fn a_pytorchjob_migrates_to_slurm_with_a_copy_alive_throughout() {
    let _lock = cluster_lock("fd22");
    let dir = tempfile::tempdir().unwrap();
    let (fake, k8s_config) = fake_with_crds(dir.path()).await;
    let (fd22, k8s) = (built(&cluster_config("fd22")), built(&k8s_config));
    let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
    let name = "fd-migrate-pytorchjob";
    let two = JobSpec {
        nodes: Some(2),
        gpus: 0,
        image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
        multi_node: Some("pytorchjob".into()),
        ..spec(name)
    };
    let source = k8s.submit(&two).await.expect("the PyTorchJob is created");
    assert!(source.id.contains(":pytorchjob:"), "{source}");
    let made = fake.list(PYTORCHJOB.0, PYTORCHJOB.1);
    assert_eq!(made.len(), 1, "{made:?}");
    let replicas = &made[0]["spec"]["pytorchReplicaSpecs"];
    assert_eq!(
        (&replicas["Master"]["replicas"], &replicas["Worker"]["replicas"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );
    let f = fleet(vec![member(fd22.clone(), "slurm"), member(k8s.clone(), "kubernetes")], &audit).await;
    until_listed(&f, &source).await;

    // fd22 has no pyxis: the image is dropped, by name.
    let opts = MigrateOptions { image: Some(None), ..MigrateOptions::default() };
    let plan = f.plan_migration(std::slice::from_ref(&source), "fd22", &opts).await;
    assert_eq!(plan.moves[0].refused, None, "{:?}", plan.moves[0]);
    assert!(plan.moves[0].warnings.iter().any(|w| w.starts_with("`image`")), "{:?}", plan.moves[0].warnings);
    let script = plan.moves[0].native.clone().unwrap().text;
    assert!(script.contains("#SBATCH --nodes=2\n"), "{script}");
    assert!(script.contains("srun --ntasks-per-node=1 bash -c 'echo moved; sleep 600'"), "{script}");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn(sample_alive(fd22.clone(), None, fake.clone(), PYTORCHJOB, name, stopped));
    let done = f.perform_batch(plan.actions()).await;
    stop.send(true).unwrap();
    let seen = sampler.await.unwrap();
    let result = done.outcomes[0].result.clone().expect("moved to Slurm");
    let home: JobRef = result.rsplit(' ').next().unwrap().parse().unwrap();
    let _home = Held { backend: fd22.clone(), job: home.clone() };
    assert_eq!(home.cluster, "fd22");
    assert!(!seen.is_empty() && seen.iter().all(|n| (1..=2).contains(n)), "alive copies over the move: {seen:?}");
    assert!(fake.list(PYTORCHJOB.0, PYTORCHJOB.1).is_empty(), "the PyTorchJob is deleted");
    let snap = fd22.snapshot().await.unwrap();
    assert_eq!(tagged(&snap, &source), vec![home.clone()], "exactly one job on Slurm");
    let back = fd22.job_spec(&home).await.unwrap().spec;
    assert_eq!((back.nodes, back.command.as_deref()), (Some(2), Some("echo moved; sleep 600")));
    assert_eq!(
        (back.time_limit_secs(), back.env.get("FD_MIGRATED").map(String::as_str)),
        (Some(20 * 60), Some("yes it was"))
    );
}
