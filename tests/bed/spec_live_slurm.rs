//! A live job's spec read back from both test-bed releases (22.05: `scontrol show job` text;
//! 24.11: its `--json`, and the text through a text-only backend): an array job with GPUs,
//! environment, a time limit and the migration tag is submitted (then held), and
//! `Fleet::job_spec`, the CLI's `spec export` and the job listings give its fields back.
//! Needs `tests/testbed/up.sh`; every job submitted here is cancelled by a drop guard, also
//! when an assertion fails.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use flightdeck::backend::slurm::SlurmBackend;
use flightdeck::backend::{Backend, BackendError, JobAction};
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::JobRef;
use flightdeck::spec::JobSpec;

use common::*;

const WAIT: Duration = Duration::from_secs(90);

/// Cancels its job when dropped, from a thread of its own with a fresh backend (a new
/// connection), so it works while the test's runtime unwinds from a failed assertion.
struct CancelOnDrop {
    cluster: String,
    job: JobRef,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (cluster, job) = (self.cluster.clone(), self.job.clone());
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let b = SlurmBackend::new(&slurm_config(&cluster));
                if let Err(e) = b.job_action(&job, JobAction::Cancel).await {
                    eprintln!("could not cancel {job}: {e}");
                }
            })
        });
        let _ = done.join();
    }
}

fn gpu_type(cluster: &str) -> &'static str {
    if cluster == "fd22" { "a100" } else { "l40s" }
}

fn the_spec(cluster: &str) -> JobSpec {
    let env: BTreeMap<String, String> = [
        ("FD_GREETING".to_string(), "it's \"quoted\" $(not run)".to_string()),
        ("FD_MODE".to_string(), "offline".to_string()),
    ]
    .into_iter()
    .collect();
    JobSpec {
        name: format!("fd-spec-{cluster}"),
        command: Some("sleep 300".into()),
        gpus: 1,
        gpu_type: Some(gpu_type(cluster).into()),
        cpus: Some(2),
        memory: Some("1G".into()),
        time_limit: Some("90m".into()),
        partition: Some("gpu".into()),
        workdir: Some("/tmp".into()),
        array: Some("0-3%2".into()),
        tasks_per_node: Some(1),
        migrated_from: Some("hpc/12".into()),
        env,
        ..JobSpec::default()
    }
}

/// What a spec read back from the cluster must say for [`the_spec`].
fn check_read_back(cluster: &str, got: &JobSpec, how: &str) {
    let want = the_spec(cluster);
    assert_eq!(got.name, want.name, "{how}");
    assert_eq!((got.gpus, got.gpu_type.as_deref()), (1, Some(gpu_type(cluster))), "{how}");
    assert_eq!((got.cpus, got.tasks_per_node), (Some(2), Some(1)), "{how}");
    assert_eq!(got.memory_mb(), Some(1024), "{how}");
    assert_eq!(got.time_limit_secs(), Some(90 * 60), "{how}");
    assert_eq!((got.partition.as_deref(), got.workdir.as_deref()), (Some("gpu"), Some("/tmp")), "{how}");
    assert_eq!(got.array.as_deref(), Some("0-3%2"), "{how}");
    assert_eq!(got.migrated_from.as_deref(), Some("hpc/12"), "{how}");
    assert_eq!(got.env, want.env, "{how}");
    assert_eq!((got.command.as_deref(), got.script.as_deref()), (None, Some("#!/bin/bash\nsleep 300\n")), "{how}");
    assert!(got.validate().is_ok(), "{how}");
}

fn fleet_of(cluster: &str) -> Fleet {
    let cfg = cluster_config(cluster);
    Fleet::start(
        vec![Member {
            backend: flightdeck::backend::Registry::builtin().build(&cfg).expect("a slurm backend"),
            kind: "slurm".into(),
            refresh: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
        }],
        FleetOptions { read_only: true, poll: false, audit: None, actor: "test".into() },
    )
}

async fn a_live_jobs_spec_comes_back(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    let job = b.submit(&the_spec(cluster)).await.expect("submit");
    let _cancel = CancelOnDrop { cluster: cluster.into(), job: job.clone() };
    // Held, so the array stays mostly pending (tasks that started already are fine: the
    // array is read from all of its records).
    b.job_action(&job, JobAction::Hold).await.expect("hold");

    let fleet = fleet_of(cluster);
    let imported = fleet.job_spec(&job).await.unwrap_or_else(|e| panic!("{job}: {e}"));
    check_read_back(cluster, &imported.spec, "Fleet::job_spec");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);

    // One task's reference gives the whole array's spec, and says so.
    let task = JobRef::new(cluster, format!("{}_1", job.id));
    let from_task = fleet.job_spec(&task).await.unwrap_or_else(|e| panic!("{task}: {e}"));
    assert_eq!(from_task.spec, imported.spec);
    assert!(from_task.warnings.iter().any(|w| w.contains("a task of an array job")), "{:?}", from_task.warnings);

    // The text form of the record (the only one on 22.05) gives the same spec on 24.11.
    let text = SlurmBackend::text_only(&slurm_config(cluster));
    let from_text = text.job_spec(&job).await.unwrap_or_else(|e| panic!("{job} (text): {e}"));
    assert_eq!(from_text.spec, imported.spec);

    // The job listings carry the tag, JSON and text alike.
    for (how, backend) in [("json", &*b), ("text", &text)] {
        let snap = wait_snapshot(backend, WAIT, "the array's jobs", |s| {
            s.jobs.iter().any(|j| j.array.as_ref().is_some_and(|a| a.array_id == job.id))
        })
        .await;
        let tasks: Vec<_> =
            snap.jobs.iter().filter(|j| j.array.as_ref().is_some_and(|a| a.array_id == job.id)).collect();
        assert!(!tasks.is_empty());
        for t in tasks {
            assert_eq!(t.migrated_from.as_deref(), Some("hpc/12"), "{how}: {}", t.job_ref);
        }
    }

    // The CLI prints the spec as TOML that reads back as the same spec.
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", &testbed_config_path().display().to_string(), "spec", "export", &job.to_string()])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed =
        JobSpec::from_toml_str(&stdout, std::path::Path::new("stdout")).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!(printed, imported.spec, "{stdout}");
    check_read_back(cluster, &printed, "flightdeck spec export");
}

async fn the_command_line_beats_the_script(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    // The script asks for one thing, sbatch's command line for another.
    let script =
        "#!/bin/bash\n#SBATCH --job-name=from-script\n#SBATCH --time=10\n#SBATCH --cpus-per-task=1\nsleep 300\n";
    let out = b
        .transport()
        .output(
            &[
                "sbatch",
                "--parsable",
                "--hold",
                "--job-name=fd-spec-cli",
                "--time=20",
                "--cpus-per-task=3",
                "--chdir=/tmp",
            ]
            .map(String::from),
            Some(script.as_bytes()),
            Duration::from_secs(30),
        )
        .await
        .expect("sbatch");
    assert!(out.success(), "{}", out.stderr);
    let id = String::from_utf8_lossy(&out.stdout).trim().split(';').next().unwrap().to_string();
    let job = JobRef::new(cluster, id);
    let _cancel = CancelOnDrop { cluster: cluster.into(), job: job.clone() };
    let imported = b.job_spec(&job).await.unwrap_or_else(|e| panic!("{job}: {e}"));
    assert_eq!(imported.spec.name, "fd-spec-cli");
    assert_eq!(imported.spec.time_limit_secs(), Some(20 * 60));
    assert_eq!(imported.spec.cpus, Some(3));
    // It asked for no memory: what the cluster gives by default (fd24: DefMemPerCPU) is not
    // taken for a request.
    assert_eq!(imported.spec.memory, None, "{:?}", imported.warnings);
    for field in ["`name`", "`time_limit`", "`cpus`"] {
        assert!(
            imported.warnings.iter().any(|w| w.starts_with(field) && w.contains("command line")),
            "{field}: {:?}",
            imported.warnings
        );
    }
}

async fn jobs_without_a_script_and_unknown_jobs_are_refused_by_name(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = backend(cluster);
    // An allocation with no batch script: salloc returns once it is granted, and says which.
    let argv = ["salloc", "--no-shell", "-N1", "-t", "5", "-J", "fd-spec-nobatch"].map(String::from);
    let out = b.transport().output(&argv, None, WAIT).await.expect("salloc");
    let id = out
        .stderr
        .lines()
        .find_map(|l| l.split("Granted job allocation ").nth(1))
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|| panic!("salloc: {}", out.stderr));
    let job = JobRef::new(cluster, id);
    let _cancel = CancelOnDrop { cluster: cluster.into(), job: job.clone() };
    match b.job_spec(&job).await {
        Err(BackendError::Unsupported(why)) => assert!(why.contains("srun or salloc"), "{why}"),
        other => panic!("{job}: {other:?}"),
    }
    match b.job_spec(&JobRef::new(cluster, "99999999")).await {
        Err(BackendError::NotFound(why)) => assert!(why.contains("does not know"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(b.job_spec(&JobRef::new(cluster, "--help")).await, Err(BackendError::NotFound(_))));
}

on_both_clusters!(
    a_live_jobs_spec_comes_back,
    the_command_line_beats_the_script,
    jobs_without_a_script_and_unknown_jobs_are_refused_by_name,
);
