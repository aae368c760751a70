//! GPU telemetry over a Slurm cluster's own link, on both test-bed releases (22.05 on the
//! host, 24.11 in the Debian 13 chroot). Needs `tests/testbed/up.sh`, which installs the
//! stand-in `tests/testbed/nvidia-smi` as [`STAND_IN`] on the host and in the chroot.
//!
//! The stand-in prints, for node `PREFIX-NN` and real device index `I`, figures derived from
//! both ([`fake`] computes the same); inside a job step it shows only the job's GPUs,
//! renumbered from 0, as a device-constrained nvidia-smi does. So a sample's figures say
//! which real GPU the adapter mapped its line to.
//!
//! Every scenario runs on both clusters and holds the cluster's lock (it submits jobs).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use flightdeck::backend::Backend;
use flightdeck::backend::slurm::{SlurmBackend, SlurmConfig, TelemetryVia};
use flightdeck::model::{GpuOwner, GpuSample, JobRef, JobState, Snapshot, Telemetry};
use flightdeck::spec::JobSpec;

use common::*;

const WAIT: Duration = Duration::from_secs(90);

/// Where up.sh installs the stand-in, on the host and at the same path in the chroot.
const STAND_IN: &str = "/var/lib/flightdeck-testbed/bin/nvidia-smi";

on_both_clusters!(
    srun_reads_exactly_the_jobs_gpus_under_their_node_indices,
    array_tasks_are_stepped_into_through_their_own_job_id,
    one_node_per_reading_rotates_through_the_busy_nodes,
    a_job_gone_since_the_snapshot_is_a_note_beside_the_readings,
    a_missing_nvidia_smi_names_the_node_and_the_error,
    ssh_to_nodes_the_login_node_cannot_reach_says_so_per_node,
);

/// Two GPU nodes of the cluster with 4 GPUs each.
fn gpu_nodes(cluster: &str) -> [&'static str; 2] {
    if cluster == "fd22" { ["a100-01", "a100-02"] } else { ["l40s-01", "l40s-02"] }
}

/// What the stand-in prints for real GPU `index` of `node` (see tests/testbed/nvidia-smi).
fn fake(node: &str, index: u32) -> GpuSample {
    let n: u32 = node.rsplit('-').next().and_then(|d| d.parse().ok()).expect("node number");
    let (base, kind, product, total) = match &node[..4] {
        "a100" => (50, 0xa1, "NVIDIA A100-SXM4-80GB", 81920),
        "h100" => (90, 0x81, "NVIDIA H100 80GB HBM3", 81559),
        "l40s" => (30, 0xc4, "NVIDIA L40S", 46068),
        other => panic!("no fake GPUs on {other}"),
    };
    let util = (11 * n + 23 * index + base) % 101;
    let mut s = GpuSample::new(node, index);
    s.uuid = Some(format!("GPU-fd{kind:02x}{n:02x}{index:02x}-0000-4000-8000-000000000000"));
    s.product = Some(product.to_string());
    s.utilisation = Some(util as f32);
    s.memory_used_mb = Some(u64::from(1000 * index + 100 * n + util));
    s.memory_total_mb = Some(total);
    s.power_watts = Some(format!("{}.{:02}", 100 + 5 * util, (10 * n + index) % 100).parse().unwrap());
    s.temperature_c = Some((30 + util / 4) as f32);
    s
}

/// The test bed's cluster with the stand-in as `nvidia_smi`, changed by `tweak`.
fn telemetry_backend(cluster: &str, tweak: impl FnOnce(&mut SlurmConfig)) -> SlurmBackend {
    let mut cfg = slurm_config(cluster);
    cfg.settings.nvidia_smi = STAND_IN.to_string();
    tweak(&mut cfg.settings);
    SlurmBackend::new(&cfg)
}

/// Jobs of one scenario, cancelled when it ends, whether it passed or not (through the test
/// bed's own command wrappers, since `Drop` cannot wait on the backend).
struct Jobs {
    cluster: String,
    ids: Vec<String>,
}

impl Drop for Jobs {
    fn drop(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        let run = format!("/var/lib/flightdeck-testbed/bin/{}", self.cluster);
        let _ = std::process::Command::new(run).arg("scancel").args(&self.ids).status();
    }
}

/// Submit a job that sleeps on `node` holding `gpus` GPUs (an array when `array` is given).
async fn submit_on(b: &SlurmBackend, jobs: &mut Jobs, node: &str, gpus: u32, array: Option<&str>) -> JobRef {
    let array = array.map(|a| format!("#SBATCH --array={a}\n")).unwrap_or_default();
    let spec = JobSpec {
        name: "fd-telemetry".into(),
        script: Some(format!(
            "#!/bin/sh\n#SBATCH --nodelist={node}\n#SBATCH --gres=gpu:{gpus}\n#SBATCH --output=/dev/null\n{array}sleep 300\n"
        )),
        workdir: Some("/tmp".into()),
        time_limit: Some("10m".into()),
        ..JobSpec::default()
    };
    let r = b.submit(&spec).await.expect("submit");
    jobs.ids.push(r.id.clone());
    r
}

/// The same cluster listed with `squeue --json`, whose `gres_detail` gives every running
/// job's device indices. The field listing (what `b` and the poller read) indexes a node's
/// GPUs only where one job holds them all; the scenarios wait on and expect from this one.
fn json_twin(b: &SlurmBackend) -> SlurmBackend {
    SlurmBackend::json_listing(&slurm_config(b.name()))
}

/// A snapshot in which every job of `ids` runs with its device indices known, cut down to
/// those jobs (whatever else runs on the cluster is not this scenario's to measure).
async fn running(b: &SlurmBackend, ids: &[String]) -> Snapshot {
    let b = &json_twin(b);
    let ready = |s: &Snapshot| {
        ids.iter().all(|id| {
            s.jobs.iter().any(|j| {
                &j.job_ref.id == id
                    && j.state == JobState::Running
                    && !j.gpu_allocations.is_empty()
                    && j.gpu_allocations.iter().all(|a| a.indices.len() as u32 == a.count)
            })
        })
    };
    let mut snap = wait_snapshot(b, WAIT, "the GPU jobs to run", ready).await;
    snap.jobs.retain(|j| ids.contains(&j.job_ref.id));
    snap
}

/// The running array tasks of array job `base` (`base_0`, `base_1`, …).
async fn running_tasks(b: &SlurmBackend, base: &str, count: usize) -> Snapshot {
    let b = &json_twin(b);
    let prefix = format!("{base}_");
    let ready = |s: &Snapshot| {
        s.jobs
            .iter()
            .filter(|j| j.job_ref.id.starts_with(&prefix) && j.state == JobState::Running)
            .filter(|j| j.gpu_allocations.iter().all(|a| a.indices.len() as u32 == a.count))
            .count()
            == count
    };
    let mut snap = wait_snapshot(b, WAIT, "the array tasks to run", ready).await;
    snap.jobs.retain(|j| j.job_ref.id.starts_with(&prefix));
    snap
}

/// What a reading should hold for `snap`'s jobs on `nodes`: every GPU they hold there, with
/// the stand-in's figures for its real index and the job as owner, sorted by node and index.
fn expected(snap: &Snapshot, nodes: &[&str]) -> Vec<GpuSample> {
    let mut want = BTreeMap::new();
    for j in &snap.jobs {
        for a in j.gpu_allocations.iter().filter(|a| nodes.contains(&a.node.as_str())) {
            for &i in &a.indices {
                let mut s = fake(&a.node, i);
                s.owner = Some(GpuOwner::Job(j.job_ref.id.clone()));
                want.insert((a.node.clone(), i), s);
            }
        }
    }
    want.into_values().collect()
}

/// What the poller hands telemetry: `b`'s own (field) listing of `ids`, which leaves the GPUs
/// of jobs sharing a node unindexed (asserted, so the lookup by JSON is what is exercised).
async fn listed(b: &SlurmBackend, ids: &[String]) -> Snapshot {
    let mut snap = b.snapshot().await.expect("a snapshot");
    snap.jobs.retain(|j| ids.contains(&j.job_ref.id));
    assert_eq!(snap.jobs.len(), ids.len(), "{:?}", snap.jobs);
    assert!(
        snap.jobs.iter().all(|j| j.gpu_allocations.iter().all(|a| a.indices.is_empty())),
        "the field listing cannot tell which of a shared node's GPUs each job holds"
    );
    snap
}

async fn read(b: &SlurmBackend, snap: &Snapshot) -> Telemetry {
    b.telemetry(snap).await.expect("a reading").expect("Slurm measures its GPUs")
}

/// Two jobs share a node: each is read inside its own step, which shows only its GPUs,
/// renumbered from 0; the adapter puts them back under the node's indices, owned by the job.
/// `doctor` then says how telemetry runs and that it worked.
async fn srun_reads_exactly_the_jobs_gpus_under_their_node_indices(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = telemetry_backend(cluster, |_| {});
    let node = gpu_nodes(cluster)[0];
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    let one = submit_on(&b, &mut jobs, node, 1, None).await;
    let two = submit_on(&b, &mut jobs, node, 2, None).await;
    let snap = running(&b, &jobs.ids).await;
    let indices = |r: &JobRef| snap.jobs.iter().find(|j| &j.job_ref == r).unwrap().gpu_allocations[0].indices.clone();
    assert!(
        [indices(&one), indices(&two)].iter().any(|i| i[0] != 0),
        "one job's GPUs do not start at 0, so the renumbering is exercised: {:?} {:?}",
        indices(&one),
        indices(&two)
    );
    let t = read(&b, &listed(&b, &jobs.ids).await).await;
    assert_eq!(t.source, "nvidia-smi via srun");
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    assert_eq!(t.gpus, expected(&snap, &[node]), "exactly the jobs' GPUs, under their node indices");
    assert_eq!(t.gpus.len(), 3);

    let d = b.diagnose().await.expect("doctor");
    let how = d.get("GPU telemetry").expect("a telemetry fact");
    assert!(how.starts_with("nvidia-smi via srun (srun --overlap") && how.contains(STAND_IN), "{how}");
    let last = d.get("GPU telemetry last reading").expect("the last reading");
    assert!(last.starts_with("worked at ") && last.ends_with("1 of 1 nodes read, 3 GPUs"), "{last}");
}

/// srun takes no `ID_TASK` (22.05 refuses it; 24.11 reads the array's id, another task):
/// the tasks' own job ids are looked up, and each task's GPUs are owned by the task.
async fn array_tasks_are_stepped_into_through_their_own_job_id(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = telemetry_backend(cluster, |_| {});
    let node = gpu_nodes(cluster)[1];
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    let array = submit_on(&b, &mut jobs, node, 1, Some("0-1")).await;
    let snap = running_tasks(&b, &array.id, 2).await;
    let tasks: Vec<String> = snap.jobs.iter().map(|j| j.job_ref.id.clone()).collect();
    let seen = listed(&b, &tasks).await;
    let t = read(&b, &seen).await;
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    let want = expected(&snap, &[node]);
    assert_eq!(want.len(), 2);
    assert_eq!(t.gpus, want);
    let owners: Vec<String> = t
        .gpus
        .iter()
        .filter_map(|g| match &g.owner {
            Some(GpuOwner::Job(id)) => Some(id.clone()),
            _ => None,
        })
        .collect();
    let mut sorted = owners.clone();
    sorted.sort();
    assert_eq!(sorted, [format!("{}_0", array.id), format!("{}_1", array.id)]);
    // The second reading asks squeue nothing new: the ids and indices are remembered.
    let before = b.transport().commands_run();
    read(&b, &seen).await;
    assert_eq!(b.transport().commands_run() - before, 2, "two sruns, no squeue");
}

/// `telemetry_max_nodes = 1` with two busy nodes: each reading reads one and names the other
/// in a note, and the next reading reads the other.
async fn one_node_per_reading_rotates_through_the_busy_nodes(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = telemetry_backend(cluster, |s| s.telemetry_max_nodes = 1);
    let nodes = gpu_nodes(cluster);
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    for node in nodes {
        submit_on(&b, &mut jobs, node, 2, None).await;
    }
    let snap = running(&b, &jobs.ids).await;
    let mut read_nodes = Vec::new();
    for _ in 0..2 {
        let t = read(&b, &snap).await;
        let on: Vec<&str> = t.gpus.iter().map(|g| g.node.as_str()).collect();
        let node = *on.first().expect("one node read");
        assert!(on.iter().all(|n| *n == node), "one node per reading: {on:?}");
        assert_eq!(t.gpus, expected(&snap, &[node]));
        let other = nodes.iter().find(|n| **n != node).unwrap();
        assert_eq!(
            t.notes,
            [format!(
                "1 of 2 nodes with running GPU jobs not read this time (telemetry_max_nodes = 1; they are read in turn): {other}"
            )]
        );
        read_nodes.push(node.to_string());
    }
    read_nodes.sort();
    assert_eq!(read_nodes, nodes, "the two readings read both nodes");
}

/// A job that ended after the snapshot was taken: its node is a note in srun's own words,
/// and the other job's GPUs are still read.
async fn a_job_gone_since_the_snapshot_is_a_note_beside_the_readings(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = telemetry_backend(cluster, |_| {});
    let nodes = gpu_nodes(cluster);
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    submit_on(&b, &mut jobs, nodes[0], 1, None).await;
    let gone = submit_on(&b, &mut jobs, nodes[1], 1, None).await;
    let snap = running(&b, &jobs.ids).await;
    b.job_action(&gone, flightdeck::backend::JobAction::Cancel).await.expect("cancel");
    wait_snapshot(&b, WAIT, "the job to end", |s| {
        s.jobs.iter().find(|j| j.job_ref == gone).is_none_or(|j| j.state.is_finished())
    })
    .await;
    let t = read(&b, &snap).await;
    assert_eq!(t.gpus, expected(&snap, &[nodes[0]]));
    assert_eq!(t.notes.len(), 1, "{:?}", t.notes);
    let prefix = format!("{}: job {}: srun: error: ", nodes[1], gone.id);
    assert!(t.notes[0].starts_with(&prefix), "{:?}", t.notes);
}

/// A `nvidia_smi` that is not on the nodes: the node and the error, in the words of srun and
/// slurmstepd; with every node failing the reading fails, naming each.
async fn a_missing_nvidia_smi_names_the_node_and_the_error(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let missing = "/nonexistent/flightdeck/nvidia-smi";
    let b = telemetry_backend(cluster, |s| s.nvidia_smi = missing.into());
    let nodes = gpu_nodes(cluster);
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    let mut refs = Vec::new();
    for node in nodes {
        refs.push(submit_on(&b, &mut jobs, node, 1, None).await);
    }
    let snap = running(&b, &jobs.ids).await;
    let err = b.telemetry(&snap).await.expect_err("no node can be read").to_string();
    assert!(err.starts_with("`nvidia-smi via srun` failed: no node could be read: "), "{err}");
    for (node, r) in nodes.iter().zip(&refs) {
        // slurmstepd's cause first, srun's summary after, whichever came first on the wire.
        let note = format!(
            "{node}: job {}: slurmstepd-{node}: error: execve(): {missing}: No such file or directory; \
             srun: error: {node}: task 0: Exited with exit code 2",
            r.id
        );
        assert!(err.contains(&note), "{note:?} in {err}");
    }
    let d = b.diagnose().await.expect("doctor");
    let last = d.get("GPU telemetry last reading").expect("the last reading");
    assert!(last.starts_with("failed at ") && last.contains("No such file or directory"), "{last}");
}

/// `telemetry_via = "ssh"`: the login node runs `ssh NODE nvidia-smi …`. The test bed's
/// nodes are slurmd names on loopback with no sshd of their own: fd22's login node cannot
/// resolve them, and fd24's resolves them to 127.0.0.1 (SkyPilot's skylet needs that), where
/// no sshd of the node answers. So each node fails with ssh's own words, no prompt waits,
/// and `doctor` says it did not work.
async fn ssh_to_nodes_the_login_node_cannot_reach_says_so_per_node(cluster: &str) {
    let _lock = cluster_lock(cluster);
    let b = telemetry_backend(cluster, |s| s.telemetry_via = TelemetryVia::Ssh);
    let nodes = gpu_nodes(cluster);
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    for node in nodes {
        submit_on(&b, &mut jobs, node, 1, None).await;
    }
    let snap = running(&b, &jobs.ids).await;
    let started = std::time::Instant::now();
    let err = b.telemetry(&snap).await.expect_err("no node reachable by ssh").to_string();
    assert!(started.elapsed() < Duration::from_secs(20), "no prompt or hang: {:?}", started.elapsed());
    assert!(err.starts_with("`nvidia-smi via ssh` failed: no node could be read: "), "{err}");
    for node in nodes {
        let after = err.split(&format!("{node}: ")).nth(1).unwrap_or_else(|| panic!("a note for {node} in {err}"));
        // Up to the other node's note, so each node is held to its own words.
        let other = nodes.iter().find(|n| **n != node).unwrap();
        let note = after.split(&format!("{other}: ")).next().unwrap_or(after);
        assert!(ssh_refused(note), "ssh's own words for {node}: {err}");
    }
    // A fresh backend's doctor reads once itself and says how that went.
    let fresh = telemetry_backend(cluster, |s| s.telemetry_via = TelemetryVia::Ssh);
    let d = fresh.diagnose().await.expect("doctor");
    let how = d.get("GPU telemetry").expect("a telemetry fact");
    assert!(how.starts_with("nvidia-smi via ssh (ssh NODE"), "{how}");
    let last = d.get("GPU telemetry last reading").expect("the last reading");
    assert!(last.starts_with("failed at ") && ssh_refused(last), "{last}");
}

/// ssh's words for a node it cannot reach: unresolvable (fd22), or nothing of ours listening
/// on its port 22 (fd24's names resolve to loopback; a machine's own sshd may answer there).
fn ssh_refused(text: &str) -> bool {
    ["Could not resolve hostname", "Connection refused", "Host key verification failed", "Permission denied"]
        .iter()
        .any(|words| text.contains(words))
}

/// `flightdeck jobs --output json` on a cluster with telemetry: one reading, bounded by the
/// cluster's timeout, and every job listed gets `gpu_use` (a running GPU job its GPUs and
/// their mean, a pending one none measured); `--no-telemetry` takes no reading, so no job
/// has it. fd22 only: the binary and the reading are the same on both releases (the
/// scenarios above hold the backend to both).
#[test]
fn jobs_gives_scripts_gpu_use_and_no_telemetry_skips_the_reading() {
    let cluster = "fd22";
    let _lock = cluster_lock(cluster);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = telemetry_backend(cluster, |_| {});
    let node = gpu_nodes(cluster)[0];
    let mut jobs = Jobs { cluster: cluster.into(), ids: Vec::new() };
    let busy = rt.block_on(submit_on(&b, &mut jobs, node, 2, None));
    let snap = rt.block_on(running(&b, &jobs.ids));
    let indices = snap.jobs[0].gpu_allocations[0].indices.clone();
    let want: f32 = indices.iter().map(|i| fake(node, *i).utilisation.unwrap()).sum::<f32>() / indices.len() as f32;

    // The test bed's fd22 with the stand-in as its nvidia-smi.
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(testbed_config_path()).unwrap();
    let section = base.split("[[cluster]]").find(|s| s.contains("name = \"fd22\"")).expect("fd22 in the test bed");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("[[cluster]]{}\nnvidia_smi = \"{STAND_IN}\"\n", section.trim_end())).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .unwrap()
    };

    let out = run(&["jobs", "--output", "json"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("telemetry"), "a reading that worked says nothing: {err}");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!rows.is_empty());
    for row in &rows {
        assert!(row["gpu_use"].is_object(), "every job has gpu_use: {row}");
    }
    let row = rows.iter().find(|r| r["id"] == busy.id.as_str()).expect("the GPU job listed");
    assert_eq!(row["gpu_use"]["gpus_measured"], 2, "{row}");
    let got = row["gpu_use"]["utilisation"].as_f64().expect("a mean");
    assert!((got - f64::from(want)).abs() < 0.01, "{got} != {want}: {row}");
    assert_eq!(row["gpu_use"]["idle"], false);
    for pending in rows.iter().filter(|r| r["state"] == "pending") {
        assert_eq!(pending["gpu_use"]["gpus_measured"], 0, "{pending}");
    }
    // The table shows the same as the GPU% column.
    let out = run(&["jobs"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.lines().next().is_some_and(|h| h.contains("GPU%")), "{table}");

    let out = run(&["jobs", "--no-telemetry", "--output", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.iter().any(|r| r["id"] == busy.id.as_str()));
    assert!(rows.iter().all(|r| r.get("gpu_use").is_none()), "no reading, no gpu_use: {rows:?}");
    let out = run(&["jobs", "--no-telemetry", "--idle"]);
    assert!(!out.status.success(), "--idle needs the reading --no-telemetry skips");
}
