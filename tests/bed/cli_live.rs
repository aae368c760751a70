//! The real `flightdeck` binary against the Slurm test bed: what a script or a person at a
//! shell sees (stdout, stderr, exit status), plus the config errors that stop it early.

use crate::common;
use crate::kube_fake;

use std::process::{Command, Output};

use serde_json::{Value, json};

use common::*;

/// The binary with a state directory of its own (its audit log and log file), thrown away.
fn flightdeck(args: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    flightdeck_in(state.path(), args)
}

/// The binary with `state` as `$XDG_STATE_HOME`, for tests that read what it left there.
fn flightdeck_in(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(args)
        .env("XDG_STATE_HOME", state)
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn config() -> String {
    let _ = testbed_config();
    testbed_config_path().display().to_string()
}

#[test]
fn nodes_json_has_the_documented_fields() {
    let _read = clusters_read();
    let cfg = config();
    let out = flightdeck(&["--config", &cfg, "nodes", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    for cluster in ["fd22", "fd24"] {
        let nodes: Vec<&Value> = rows.iter().filter(|r| r["cluster"] == cluster).collect();
        assert!(nodes.len() >= 3, "{cluster}: {nodes:?}");
        let total: u64 = nodes.iter().map(|n| n["gpus_total"].as_u64().unwrap()).sum();
        assert!(total >= 10, "{cluster} GPUs {total}");
    }
    for key in ["cluster", "name", "state", "flags", "gpus_total", "gpus_allocated", "gpu_type", "reason"] {
        assert!(rows[0].get(key).is_some(), "missing {key}");
    }
}

#[test]
fn submit_list_and_cancel_through_the_binary() {
    let cfg = config();
    let _lock = cluster_lock("fd24");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(
        &spec,
        "name = \"fd-cli-job\"\ncommand = \"sleep 300\"\nworkdir = \"/tmp\"\ngpus = 1\ngpu_type = \"l40s\"\n",
    )
    .unwrap();
    let out = flightdeck(&["--config", &cfg, "submit", spec.to_str().unwrap(), "--cluster", "fd24"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let job_ref = stdout(&out).trim().to_string();
    assert!(job_ref.starts_with("fd24/"), "{job_ref}");

    let out = flightdeck(&["--config", &cfg, "jobs", "--cluster", "fd24", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows.iter().find(|r| r["ref"] == job_ref.as_str()).expect("submitted job listed");
    assert_eq!(row["name"], "fd-cli-job");
    assert_eq!(row["cluster"], "fd24");
    assert_eq!(row["gpu_type"], "l40s");
    assert_eq!(row["gpus"], 1);
    for key in ["id", "user", "partition", "state", "native_state", "reason", "nodes"] {
        assert!(row.get(key).is_some(), "missing {key}");
    }

    let out = flightdeck(&["--config", &cfg, "cancel", &job_ref]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("cancelled {job_ref}"));

    // A job that does not exist: Slurm's words, one line, non-zero.
    let out = flightdeck(&["--config", &cfg, "cancel", "fd24/999999"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.to_lowercase().contains("invalid job id"), "{err}");
}

#[test]
fn table_output_and_summary() {
    let _read = clusters_read();
    let cfg = config();
    let out = flightdeck(&["--config", &cfg, "nodes", "--cluster", "fd22"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("NODE"), "{text}");
    assert!(text.contains("fd22/dead-01"), "{text}");
    let out = flightdeck(&["--config", &cfg]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fd22 (slurm 22.05"), "{text}");
    assert!(text.contains("fd24 (slurm 24.11"), "{text}");
    assert!(text.contains("a100") && text.contains("l40s") && text.contains("h100"), "{text}");
}

#[test]
fn read_only_refuses_and_unknown_cluster_is_named() {
    let _read = clusters_read();
    let cfg = config();
    let out = flightdeck(&["--config", &cfg, "--read-only", "drain", "fd22/h100-01", "--reason", "x"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    let out = flightdeck(&["--config", &cfg, "jobs", "--cluster", "nope"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no cluster named `nope`"), "{}", stderr(&out));
}

#[test]
fn doctor_reports_release_json_and_rpc_cost() {
    let _read = clusters_read();
    let cfg = config();
    let out = flightdeck(&["--config", &cfg, "doctor"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("release:        22.05"), "{text}");
    assert!(text.contains("release:        24.11"), "{text}");
    assert!(text.contains("JSON output:    yes"), "{text}");
    assert!(text.contains("controller RPCs per refresh:"), "{text}");
}

#[test]
fn a_broken_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[[cluster]]\nname = \"a\"\nkind = \"slurm\"\nhostt = \"x\"\n").unwrap();
    let out = flightdeck(&["--config", path.to_str().unwrap(), "jobs"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(&format!("{}:4", path.display())), "{err}");
    assert!(err.contains("hostt"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_dead_login_node_is_reported_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    // Nothing listens on port 1; the refresh fails fast with the ssh error, exit status 1.
    std::fs::write(
        &path,
        "[[cluster]]\nname = \"gone\"\nkind = \"slurm\"\nhost = \"127.0.0.1\"\nport = 1\nknown_hosts = \"off\"\ntimeout_seconds = 5\n",
    )
    .unwrap();
    let out = flightdeck(&["--config", path.to_str().unwrap(), "jobs"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.starts_with("flightdeck: gone: "), "{err}");
    assert!(err.contains("cannot reach"), "{err}");
}

/// No config file at all: the embedded default is this machine, whose `squeue` talks to the
/// test bed's 22.05 cluster (`/etc/slurm/slurm.conf` points there).
#[test]
fn without_a_config_it_watches_the_local_slurm() {
    let _read = clusters_read();
    let _ = config();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .arg("status")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("FLIGHTDECK_CONFIG")
        .output()
        .expect("run flightdeck");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("local (slurm 22.05"), "{text}");
    assert!(text.contains("a100") && text.contains("h100"), "{text}");
    assert!(home.path().join("state/flightdeck/flightdeck.log").exists(), "logs go to the state dir");
}

/// Slurm (the test bed's 22.05 over SSH) and Kubernetes (the fake API server) side by side in
/// one fleet: both in `status`, both in `nodes --output json`.
#[test]
fn slurm_and_kubernetes_side_by_side() {
    let _read = clusters_read();
    let testbed = std::fs::read_to_string(config()).unwrap();
    let fake = kube_fake::FakeApi::start_blocking();
    fake.put_all(kube_fake::fixtures::standard_cluster());
    fake.put(kube_fake::fixtures::node_h200("gpu-h200"));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let path = dir.path().join("config.toml");
    let fd22 = testbed.split("[[cluster]]").find(|c| c.contains("\"fd22\"")).expect("fd22 in the test bed config");
    std::fs::write(
        &path,
        format!(
            "[[cluster]]{fd22}\n[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\n",
            kubeconfig.display()
        ),
    )
    .unwrap();
    let cfg = path.to_str().unwrap();
    let out = flightdeck(&["--config", cfg, "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fd22 (slurm 22.05") && text.contains("k8s (kubernetes"), "{text}");
    // One GPU vocabulary: Slurm's `h100` and GFD's `NVIDIA-H100-80GB-HBM3` are one model,
    // added up across both clusters on the fleet line that starts the summary.
    assert!(text.starts_with("fleet (2 clusters):\n"), "{text}");
    let h100 = text.lines().find(|l| l.starts_with("  h100 ")).unwrap_or_else(|| panic!("no h100 fleet line: {text}"));
    assert!(h100.ends_with("(fd22, k8s)"), "{h100}");
    assert!(text.lines().any(|l| l.starts_with("  h200 ") && l.ends_with("(k8s)")), "{text}");
    assert!(text.contains("a100") && !text.contains("NVIDIA-H100-80GB-HBM3"), "{text}");
    let out = flightdeck(&["--config", cfg, "nodes", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let clusters: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["cluster"].as_str()).collect();
    assert_eq!(clusters, ["fd22", "k8s"].into_iter().collect());
    let row = |cluster: &str, name: &str| {
        rows.iter()
            .find(|r| r["cluster"] == cluster && r["name"] == name)
            .unwrap_or_else(|| panic!("no {cluster}/{name}"))
    };
    let h200 = row("k8s", "gpu-h200");
    assert_eq!((&h200["gpu_type"], &h200["gpu_product"]), (&json!("h200"), &json!("NVIDIA-H200")), "{h200}");
    let t4 = row("k8s", kube_fake::fixtures::NODE_T4);
    assert_eq!(
        (&t4["gpu_type"], &t4["gpu_product"], &t4["gpu_shared"]),
        (&json!("t4"), &json!("Tesla-T4-SHARED"), &json!(true))
    );
    let slurm_h100 = row("fd22", "h100-01");
    assert_eq!((&slurm_h100["gpu_type"], &slurm_h100["gpu_product"]), (&json!("h100"), &json!("h100")));
}

#[test]
fn what_a_cluster_kind_cannot_do_is_refused_before_contacting_it() {
    // A Kubernetes cluster whose API server does not exist: a refusal that needed the server
    // would hang or say "cannot reach"; the capability check answers at once.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         contexts:\n- name: prod\n  context:\n    cluster: c\n    user: u\ncurrent-context: prod\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!("[[cluster]]\nname = \"k8s-prod\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\n", kubeconfig.display()),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = flightdeck(&["--config", path.to_str().unwrap(), "requeue", "k8s-prod/ml:train"]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).trim(), "flightdeck: cluster k8s-prod (kubernetes) cannot requeue");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "answered without waiting on the server");
}

#[test]
fn the_audit_command_prints_every_action_and_what_became_of_it() {
    let _read = clusters_read();
    let cfg = config();
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| flightdeck_in(state.path(), args);
    let out = run(&["--config", &cfg, "cancel", "fd22/999999"]);
    assert!(!out.status.success(), "an unknown job id fails");
    // An action whose process died mid-way: an intent with no outcome.
    let log = state.path().join("flightdeck/audit.jsonl");
    let orphan = r#"{"id":"dead-1","time":"2026-01-01T06:00:00Z","who":"bob@login","action":"drain","target":"fd22/a100-01","detail":"reason=XID","outcome":"intent","message":""}"#;
    let mut text = std::fs::read_to_string(&log).expect("the audit log exists");
    assert_eq!(text.lines().count(), 2, "intent then outcome: {text}");
    text.push_str(orphan);
    text.push('\n');
    std::fs::write(&log, text).unwrap();

    let out = run(&["audit", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0]["action"].as_str(), rows[0]["target"].as_str()), (Some("cancel"), Some("fd22/999999")));
    assert_eq!(rows[0]["outcome"], "error");
    assert!(rows[0]["message"].as_str().unwrap().to_lowercase().contains("invalid job id"), "{rows:?}");
    assert_eq!(rows[1]["outcome"], "unknown");

    let table = stdout(&run(&["audit", "--since", "1h"]));
    assert!(table.starts_with("TIME"), "{table}");
    assert!(
        table.contains("fd22/999999") && !table.contains("a100-01"),
        "the old orphan is before the last hour: {table}"
    );
    let err = stderr(&run(&["audit", "--since", "soon"]));
    assert!(err.starts_with("flightdeck: --since: cannot read \"soon\""), "{err}");
}

#[test]
fn the_audit_command_reads_past_an_unreadable_line_and_names_it() {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("flightdeck");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let record = |id: &str, target: &str, outcome: &str| {
        format!(
            r#"{{"id":"{id}","time":"2026-01-01T06:00:00Z","who":"bob@login","action":"cancel","target":"{target}","outcome":"{outcome}","message":""}}"#
        )
    };
    let text =
        [record("1", "fd22/1", "intent"), "{\"id\":\"2\",\"ti".into(), record("1", "fd22/1", "ok"), String::new()];
    std::fs::write(dir.join("audit.jsonl"), text.join("\n")).unwrap();
    let out = flightdeck_in(state.path(), &["audit", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0]["target"].as_str(), rows[0]["outcome"].as_str()), (Some("fd22/1"), Some("ok")));
    assert!(stderr(&out).contains("audit.jsonl line 2: unreadable, skipped ("), "{}", stderr(&out));
    let empty = flightdeck_in(state.path(), &["audit", "--since", "1h", "--output", "json"]);
    assert_eq!(stdout(&empty).trim(), "[]");

    // A rotated generation is read too, before the live file, and --since reaches into it.
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let recent = record("3", "fd22/3", "intent").replace("2026-01-01T06:00:00Z", &now);
    std::fs::write(dir.join("audit.jsonl.1"), format!("{recent}\n")).unwrap();
    std::fs::write(dir.join("audit.jsonl"), record("3", "fd22/3", "ok").replace("2026-01-01T06:00:00Z", &now)).unwrap();
    let out = flightdeck_in(state.path(), &["audit", "--since", "1h", "--output", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0]["target"].as_str(), rows[0]["outcome"].as_str()), (Some("fd22/3"), Some("ok")));
}

#[test]
fn the_test_key_opens_only_the_test_bed_login_nodes() {
    let _read = clusters_read();
    // The test sshds read their own key file; root's authorized_keys (which the machine's
    // own sshd honours) never holds the passwordless test key.
    let _ = config();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let root_keys = std::fs::read_to_string(format!("{home}/.ssh/authorized_keys")).unwrap_or_default();
    assert!(
        !root_keys.lines().any(|l| l.ends_with(" flightdeck-testbed")),
        "the test key is in {home}/.ssh/authorized_keys"
    );
    let root = std::env::var("FD_TESTBED_ROOT").expect("FD_TESTBED_ROOT: source the test bed's env");
    for config in [format!("{root}/ssh/fd22/sshd_config"), format!("{root}/trixie/etc/ssh/sshd_config_fd24")] {
        let text = std::fs::read_to_string(&config).unwrap_or_else(|e| panic!("{config}: {e}"));
        assert!(text.lines().any(|l| l == "AuthorizedKeysFile /etc/flightdeck-testbed/authorized_keys"), "{config}");
    }
}

#[test]
fn without_a_private_state_directory_actions_are_refused_and_say_why() {
    let _read = clusters_read();
    use std::os::unix::fs::PermissionsExt;
    let cfg = config();
    let state = tempfile::tempdir().unwrap();
    let shared = state.path().join("flightdeck");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = flightdeck_in(state.path(), &["--config", &cfg, "cancel", "fd22/1"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "flightdeck: cancel fd22/1: cannot write the audit log ({}: the directory is writable by others (mode 777; chmod 700 it)); nothing was done",
            shared.join("audit.jsonl").display()
        )
    );
    assert!(!shared.join("audit.jsonl").exists());
}

/// SIGTERM while a batch of actions runs: the batch is one request the fleet carries out
/// whole, so the CLI says it waits, waits (bounded), and reports every action: nothing is
/// left half-known.
#[test]
fn a_terminated_cli_finishes_the_batch_under_way_and_reports_all_of_it() {
    let fake = kube_fake::FakeApi::start_blocking();
    fake.put_all(vec![
        kube_fake::fixtures::node_h100("n1"),
        kube_fake::fixtures::job("ml", "a", 1, 1, None, false),
        kube_fake::fixtures::job("ml", "b", 1, 1, None, false),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\n",
            kubeconfig.display()
        ),
    )
    .unwrap();
    // Every request takes 1.5 s: the batch is surely under way when the signal comes.
    fake.set_latency(std::time::Duration::from_millis(1500));
    let state = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", path.to_str().unwrap(), "cancel", "k8s/ml:a", "k8s/ml:b"])
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run flightdeck");
    // Signal once the first request reached the server (the handler is in place by then).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while fake.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "flightdeck never reached the API server");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("stopping; waiting for 2 actions…"), "{err}");
    let said = stdout(&out);
    assert!(said.contains("cancelled k8s/ml:a") && said.contains("cancelled k8s/ml:b"), "both reported: {said}\n{err}");
    fake.set_latency(std::time::Duration::ZERO);
    assert!(fake.get("batch/v1", "Job", Some("ml"), "a").is_none(), "a was cancelled");
    assert!(fake.get("batch/v1", "Job", Some("ml"), "b").is_none(), "b was cancelled");
}

/// Runs the binary, killing it if it has not finished within `secs` (a follow that never
/// stops fails the test instead of hanging it).
fn flightdeck_within(secs: u64, args: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(args)
        .env("XDG_STATE_HOME", state.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run flightdeck");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("flightdeck {args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    child.wait_with_output().unwrap()
}

fn submit_script(cfg: &str, cluster: &str, name: &str, script: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("job.toml");
    std::fs::write(&spec, format!("name = \"{name}\"\nworkdir = \"/tmp\"\nscript = '''\n{script}'''\n")).unwrap();
    let out = flightdeck(&["--config", cfg, "submit", spec.to_str().unwrap(), "--cluster", cluster]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn logs_prints_the_tail_follows_to_the_end_and_refuses_a_link() {
    let cfg = config();
    let _lock = cluster_lock("fd22");
    // Followed from before it starts until it has ended: every line, escapes neutralised.
    let job = submit_script(
        &cfg,
        "fd22",
        "fd-cli-logs",
        "#!/bin/sh\nprintf 'one\\n\\033[31mred\\n'\nseq 1 3\nsleep 4\necho the end\n",
    );
    let out = flightdeck_within(120, &["--config", &cfg, "logs", &job, "--follow"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains('\u{1b}'), "an escape reached the terminal: {text:?}");
    assert!(text.starts_with("one\n") && text.ends_with("1\n2\n3\nthe end\n"), "{text:?}");
    assert!(text.contains("\u{FFFD}[31mred\n"), "{text:?}");
    // The tail, by size.
    let out = flightdeck(&["--config", &cfg, "logs", &job, "--bytes", "8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "the end\n");
    let out = flightdeck(&["--config", &cfg, "logs", &job, "--stderr", "--bytes", "8"]);
    assert_eq!(stdout(&out), "the end\n", "stderr goes to the same file by default: {}", stderr(&out));

    // Output pointed at a link to a root-only file: refused, the reason said, nothing shown.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let secret = format!("/tmp/fd-cli-secret-{nanos}");
    let link = format!("/tmp/fd-cli-link-{nanos}.out");
    std::fs::write(&secret, "PRIVATE-KEY-MATERIAL\n").unwrap();
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let job =
        submit_script(&cfg, "fd22", "fd-cli-logs-link", &format!("#!/bin/sh\n#SBATCH --output={link}\nsleep 30\n"));
    for follow in [false, true] {
        let mut args = vec!["--config", &cfg, "logs", &job];
        if follow {
            args.push("--follow");
        }
        let out = flightdeck_within(60, &args);
        assert!(!out.status.success());
        assert!(!stdout(&out).contains("PRIVATE") && stdout(&out).is_empty(), "{}", stdout(&out));
        assert_eq!(stderr(&out).trim(), format!("flightdeck: not reading {link}: it is a symbolic link"));
    }
    let _ = flightdeck(&["--config", &cfg, "cancel", &job]);
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&secret);
    // A job that is not there.
    let out = flightdeck(&["--config", &cfg, "logs", "fd22/999999"]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).trim(), "flightdeck: no job fd22/999999 on fd22");
}

/// A job's `--output` path is its owner's text: both refusals of `flightdeck logs` quote it
/// (a link: the remote check's refusal; a `$`: refused before any command runs), and neither
/// lets its escape sequence, C1 control or bidi control reach the terminal.
#[test]
fn logs_refusals_of_a_hostile_output_path_print_it_readably() {
    let cfg = config();
    let _lock = cluster_lock("fd22");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let hostile = "\u{1b}]0;pwned\u{7}\u{9b}2J\u{202E}x";
    let secret = format!("/tmp/fd-cli-hostile-secret-{nanos}");
    let link = format!("/tmp/fd-cli-{hostile}-{nanos}.out");
    std::fs::write(&secret, "PRIVATE\n").unwrap();
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let dollar = format!("/tmp/fd-cli-$HOME{hostile}-{nanos}.out");
    for (path, refusal) in [(&link, "it is a symbolic link"), (&dollar, "a login shell could expand")] {
        // A basic TOML string: the script holds the control characters themselves.
        let mut spec = toml::Table::new();
        spec.insert("name".into(), "fd-cli-logs-hostile".into());
        spec.insert("workdir".into(), "/tmp".into());
        spec.insert("script".into(), format!("#!/bin/sh\n#SBATCH --output={path}\nsleep 30\n").into());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("job.toml");
        std::fs::write(&file, toml::to_string(&spec).unwrap()).unwrap();
        let out = flightdeck(&["--config", &cfg, "submit", file.to_str().unwrap(), "--cluster", "fd22"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let job = stdout(&out).trim().to_string();
        let out = flightdeck_within(60, &["--config", &cfg, "logs", &job]);
        let _ = flightdeck(&["--config", &cfg, "cancel", &job]);
        assert!(!out.status.success());
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        let err = stderr(&out);
        let raw: Vec<char> = err.chars().filter(|&c| c != '\n' && flightdeck::safe_text::is_unsafe(c)).collect();
        assert!(raw.is_empty(), "{raw:?} reached the terminal: {err:?}");
        let shown = flightdeck::safe_text::printable(path).into_owned();
        assert!(err.starts_with("flightdeck: ") && err.contains(&shown) && err.contains(refusal), "{err:?}");
    }
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&secret);
    let _ = std::fs::remove_file(&dollar);
}
