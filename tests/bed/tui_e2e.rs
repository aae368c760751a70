//! The real `flightdeck` binary in a real terminal (a tmux pane) against the real Slurm test
//! bed: what a person at the keyboard sees and does. Needs `tests/testbed/up.sh` and tmux.

use crate::common;
use crate::kube_fake;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use flightdeck::backend::Backend;
use flightdeck::backend::slurm::SlurmBackend;
use flightdeck::model::{JobRef, JobState, NodeState, Snapshot};
use flightdeck::spec::JobSpec;

use common::*;

const WAIT: Duration = Duration::from_secs(60);

/// One tmux server and session per test, torn down on drop.
struct Pane {
    socket: String,
    session: String,
}

impl Pane {
    /// Start `flightdeck ARGS` in a `cols`×`rows` pane. When flightdeck exits, the pane's
    /// shell records `stty -a` (is the terminal sane again?) and the exit status.
    fn start(name: &str, args: &[&str], cols: u16, rows: u16, after: &Path) -> Pane {
        let tmux = which_tmux();
        let socket = format!("fd-e2e-{name}-{}", std::process::id());
        let bin = env!("CARGO_BIN_EXE_flightdeck");
        let quoted: Vec<String> = args.iter().map(|a| shlex::try_quote(a).unwrap().into_owned()).collect();
        let script = format!(
            "{} {}; echo \"exit=$?\" > {after}.status; stty -a > {after}; sleep 600",
            shlex::try_quote(bin).unwrap(),
            quoted.join(" "),
            after = after.display()
        );
        let state = std::env::temp_dir().join(format!("{socket}-state"));
        let ok = Command::new(&tmux)
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", name])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .args(["-e", "TERM=xterm-256color", "-e", &format!("XDG_STATE_HOME={}", state.display())])
            .args(["sh", "-c", &script])
            .status()
            .expect("tmux");
        assert!(ok.success(), "tmux new-session failed");
        Pane { socket, session: name.to_string() }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new(which_tmux()).args(["-L", &self.socket]).args(args).output().expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.session])
    }

    /// Type keys as tmux names them (`Enter`, `Escape`, `y`, literal text with `-l`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", &self.session, "-l", text]);
    }

    /// Wait until the screen satisfies `ok`; panic with the screen otherwise.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if started.elapsed() > WAIT {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn wait_text(&self, needle: &str) -> String {
        self.wait_for(&format!("`{needle}` on screen"), |s| s.contains(needle))
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new(which_tmux()).args(["-L", &self.socket, "kill-server"]).status();
    }
}

fn which_tmux() -> String {
    let found =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join("tmux").is_file())).unwrap_or(false);
    assert!(found, "tmux is not installed: tests/run.sh installs it (apt-get install tmux)");
    "tmux".to_string()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn submit(rt: &tokio::runtime::Runtime, b: &SlurmBackend, name: &str) -> JobRef {
    let spec = JobSpec {
        name: name.into(),
        command: Some("sleep 300".into()),
        workdir: Some("/tmp".into()),
        gpus: 1,
        ..JobSpec::default()
    };
    rt.block_on(b.submit(&spec)).expect("submit")
}

fn snapshot_until(rt: &tokio::runtime::Runtime, b: &SlurmBackend, what: &str, ok: impl Fn(&Snapshot) -> bool) {
    rt.block_on(wait_snapshot(b, WAIT, what, ok));
}

#[test]
fn the_cockpit_over_the_test_bed() {
    let cfg = testbed_config_path();
    cockpit_scenario("direct", &["--config", cfg.to_str().unwrap()]);
}

/// The same scenario through a hub: `flightdeck serve` over the test bed on a Unix socket
/// (its peers are its callers), the cockpit started with `--hub`.
#[test]
fn the_cockpit_through_a_hub() {
    let cfg = testbed_config_path();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("hub.sock");
    let hub = HubProcess::start(&cfg, &socket, dir.path());
    let url = format!("unix:{}", socket.display());
    cockpit_scenario("hub", &["--hub", &url]);
    drop(hub);
}

/// A `flightdeck serve` child, stopped on drop: SIGTERM, then SIGKILL if it has not ended
/// within a few seconds. Owned from the moment it is spawned, so a test that panics while
/// the hub starts still stops it; none of its output goes to a pipe the test runner waits on.
struct HubProcess(std::process::Child);

impl HubProcess {
    fn start(cfg: &Path, socket: &Path, state: &Path) -> HubProcess {
        let hub = HubProcess(
            Command::new(env!("CARGO_BIN_EXE_flightdeck"))
                .args(["serve", "--config", cfg.to_str().unwrap(), "--listen"])
                .arg(format!("unix:{}", socket.display()))
                .env("XDG_STATE_HOME", state.join("hub-state"))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("flightdeck serve"),
        );
        let started = Instant::now();
        while !socket.exists() && started.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(socket.exists(), "the hub never listened on {}", socket.display());
        hub
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(10) {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cockpit_scenario(name: &str, args: &[&str]) {
    let _ = testbed_config();
    let _lock = cluster_lock("fd22");
    // The cockpit polls fd24 too.
    let _read = cluster_read("fd24");
    let rt = rt();
    let b = backend("fd22");
    // Names unique to this run and this scenario: finished jobs of earlier runs (and of the
    // other scenario in this process) stay in squeue for a while, and a filter that matched
    // one of them would pass before the cockpit had seen the new jobs. The scenario names
    // ("direct", "hub") are no fuzzy subsequence of each other, so neither filter finds the
    // other's jobs.
    let tag = format!("{}-{name}", std::process::id());
    let (keep_name, doomed_name) = (format!("fd-e2e-keep-{tag}"), format!("fd-e2e-doomed-{tag}"));
    let keep = submit(&rt, &b, &keep_name);
    let doomed = submit(&rt, &b, &doomed_name);
    snapshot_until(&rt, &b, "both jobs listed", |s| {
        [&keep, &doomed].iter().all(|r| s.jobs.iter().any(|j| &j.job_ref == *r && !j.state.is_finished()))
    });

    let after = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let pane = Pane::start(name, args, 160, 48, &after);

    // The overview shows both clusters with their GPU totals.
    let screen =
        pane.wait_for("both clusters fresh", |s| s.contains("fd22 slurm 22.05") && s.contains("fd24 slurm 24.11"));
    assert!(screen.contains("/14 alloc"), "fd22 has 14 GPUs (12 a100 + 2 h100):\n{screen}");

    // Jobs screen, then the fuzzy filter narrows the table to one job.
    pane.keys(&["2"]);
    pane.wait_text(&doomed_name);
    pane.keys(&["/"]);
    pane.text(&doomed_name);
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("the filter to narrow", |s| s.contains(&doomed_name) && !s.contains(&keep_name));
    assert!(screen.contains(&doomed.id), "{screen}");

    // Cancel through the confirmation, which names the exact job.
    pane.keys(&["C"]);
    let screen = pane.wait_text("Cancel");
    assert!(screen.contains(&doomed.to_string()), "the dialog names its target:\n{screen}");
    pane.keys(&["y"]);
    snapshot_until(&rt, &b, "squeue to stop listing the cancelled job as active", |s| {
        s.jobs.iter().find(|j| j.job_ref == doomed).is_none_or(|j| j.state == JobState::Cancelled)
    });
    snapshot_until(&rt, &b, "the other job to be untouched", |s| {
        s.jobs.iter().any(|j| j.job_ref == keep && !j.state.is_finished())
    });

    // Nodes: drain h100-01 with a reason, then resume it.
    // Escape and the next key apart: together a terminal reads them as Alt+key.
    pane.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    pane.keys(&["3"]);
    pane.wait_text("h100-01");
    pane.keys(&["/"]);
    pane.text("fd22 h100");
    pane.keys(&["Enter"]);
    pane.wait_for("one node left", |s| s.contains("h100-01") && !s.contains("a100-02"));
    pane.keys(&["D"]);
    pane.wait_text("Drain");
    pane.text("e2e: fan failure");
    pane.keys(&["Enter"]);
    snapshot_until(&rt, &b, "h100-01 drained with the reason", |s| {
        s.nodes.iter().any(|n| {
            n.name == "h100-01"
                && matches!(n.state, NodeState::Drained | NodeState::Draining)
                && n.reason.as_deref() == Some("e2e: fan failure")
        })
    });
    pane.wait_text("e2e: fan failure");
    pane.keys(&["R"]);
    snapshot_until(&rt, &b, "h100-01 back in service", |s| {
        s.nodes.iter().any(|n| n.name == "h100-01" && !n.has_flag("DRAIN"))
    });

    // Usage (screen 5): the kept job's user holds at least its GPU, in a row of its own.
    let user =
        rt.block_on(b.snapshot()).expect("a snapshot").jobs.into_iter().find(|j| j.job_ref == keep).map(|j| j.user);
    let user = user.expect("the kept job listed");
    pane.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    pane.keys(&["5"]);
    let screen = pane.wait_for("the user's row on the usage screen", |s| {
        s.contains("Usage · GPU-hours of the last 7 d") && s.lines().any(|l| holds_gpus(l, &user))
    });
    assert!(screen.contains("GPU-H") && screen.contains("MODELS"), "{screen}");

    // Quit: the shell after flightdeck finds a sane terminal (canonical mode, echo on).
    pane.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    pane.keys(&["q"]);
    let started = Instant::now();
    while !Path::new(&format!("{}.status", after.display())).exists() && started.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = std::fs::read_to_string(format!("{}.status", after.display())).expect("flightdeck exited");
    assert_eq!(status.trim(), "exit=0");
    let stty = std::fs::read_to_string(&after).unwrap();
    for flag in ["icanon", "echo", "isig", "icrnl"] {
        assert!(stty.split_whitespace().any(|w| w == flag), "terminal left without {flag}: {stty}");
    }
    let _ = std::fs::remove_file(format!("{}.status", after.display()));
    rt.block_on(async {
        let _ = b.job_action(&keep, flightdeck::backend::JobAction::Cancel).await;
    });
}

/// Whether a usage table line is `user`'s row with jobs and GPUs held now: the name, then
/// the JOBS and GPUS cells, both at least one.
fn holds_gpus(line: &str, user: &str) -> bool {
    let words: Vec<&str> =
        line.split(|c: char| c.is_whitespace() || c == '│' || c == '>').filter(|w| !w.is_empty()).collect();
    words
        .windows(3)
        .any(|w| w[0] == user && w[1].parse::<u32>().is_ok_and(|n| n >= 1) && w[2].parse::<u32>().is_ok_and(|n| n >= 1))
}

/// The variable a test bed script wrote into its env file (tests/run.sh sources them).
fn testbed_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: tests/run.sh starts the cloud servers and sources their env files")
    })
}

/// Every kind at once: the Slurm test bed, the Kubernetes fake, the real dstack and SkyPilot
/// servers, all in one config; the overview lists each cluster with its kind, fresh.
#[test]
fn the_overview_lists_every_kind_side_by_side() {
    let _ = testbed_config();
    let _read = clusters_read();
    let (dstack_url, dstack_project) = (testbed_var("FD_DSTACK_URL"), testbed_var("FD_DSTACK_PROJECT"));
    let _ = testbed_var("FD_DSTACK_TOKEN");
    let sky_url = testbed_var("FD_SKYPILOT_URL");
    let fake = kube_fake::FakeApi::start_blocking();
    fake.put(kube_fake::fixtures::node_h100("kn-1"));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let slurm = std::fs::read_to_string(testbed_config_path()).unwrap();
    let config = format!(
        "{slurm}\n[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\n\n\
         [[cluster]]\nname = \"dstack-main\"\nkind = \"dstack\"\nurl = \"{dstack_url}\"\nproject = \"{dstack_project}\"\ntoken_env = \"FD_DSTACK_TOKEN\"\n\n\
         [[cluster]]\nname = \"sky\"\nkind = \"skypilot\"\nurl = \"{sky_url}\"\n",
        kubeconfig.display()
    );
    let path = dir.path().join("all-kinds.toml");
    std::fs::write(&path, config).unwrap();

    let after = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let pane = Pane::start("kinds", &["--config", path.to_str().unwrap()], 200, 90, &after);
    let line = |s: &str, name: &str, kind: &str| {
        s.lines().any(|l| l.contains(&format!("▌{name} {kind}")) && l.contains("fresh"))
    };
    let screen = pane.wait_for("every kind fresh on the overview", |s| {
        line(s, "fd22", "slurm")
            && line(s, "k8s", "kubernetes")
            && line(s, "dstack-main", "dstack")
            && line(s, "sky", "skypilot")
    });
    assert!(!screen.contains("STALE"), "{screen}");
    pane.keys(&["q"]);
    let started = Instant::now();
    while !Path::new(&format!("{}.status", after.display())).exists() && started.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = std::fs::read_to_string(format!("{}.status", after.display())).expect("flightdeck exited");
    assert_eq!(status.trim(), "exit=0");
    let _ = std::fs::remove_file(format!("{}.status", after.display()));
}

/// `w` on a held job, then the job released and run to its end: the cockpit writes each
/// change to the terminal as OSC 9 (wrapped for tmux passthrough, since it runs in a tmux
/// pane and the config says passthrough is on), read raw from the pane with `pipe-pane`,
/// and runs the `[notify]` command with each event as JSON on its standard input.
#[test]
fn a_watched_job_notifies_the_terminal_and_the_command() {
    let _ = testbed_config();
    let _lock = cluster_lock("fd22");
    // The cockpit polls fd24 too.
    let _read = cluster_read("fd24");
    let rt = rt();
    let b = backend("fd22");
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let raw = dir.path().join("pane.raw");
    let config = dir.path().join("flightdeck.toml");
    let bed = std::fs::read_to_string(testbed_config_path()).unwrap();
    std::fs::write(
        &config,
        format!(
            "{bed}\n[notify]\nterminal = \"osc9\"\ntmux_passthrough = true\ncommand = [\"tee\", \"-a\", \"{}\"]\n",
            events.display()
        ),
    )
    .unwrap();
    let name = format!("fd-e2e-watch-{}", std::process::id());
    let out = rt.block_on(remote(
        &b,
        &[
            "sbatch",
            "--parsable",
            "--hold",
            &format!("--job-name={name}"),
            "--output=/dev/null",
            "--chdir=/tmp",
            "--wrap=sleep 5",
        ],
    ));
    let job = JobRef::new("fd22", flightdeck::backend::slurm::script::parse_sbatch_output(&out).expect("a job id"));

    let after = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let pane = Pane::start("notify", &["--config", config.to_str().unwrap()], 160, 48, &after);
    pane.tmux(&["pipe-pane", "-o", "-t", &pane.session, &format!("cat >> {}", raw.display())]);
    pane.wait_for("fd22 fresh", |s| s.contains("fd22 slurm 22.05"));
    pane.keys(&["2"]);
    pane.keys(&["/"]);
    pane.text(&name);
    pane.keys(&["Enter"]);
    pane.wait_text(&job.id);
    pane.keys(&["w"]);
    pane.wait_text(&format!("watching {job}"));

    rt.block_on(remote(&b, &["scontrol", "release", &job.id]));
    // Held → (pending →) running → completed: the end is the last event.
    let started = Instant::now();
    let ended = loop {
        let lines = std::fs::read_to_string(&events).unwrap_or_default();
        if lines.contains("\"to\":\"completed\"") {
            break lines;
        }
        assert!(started.elapsed() < WAIT, "no completed event from the notify command: {lines:?}\n{}", pane.screen());
        std::thread::sleep(Duration::from_millis(300));
    };
    pane.keys(&["q"]);
    let events: Vec<serde_json::Value> =
        ended.lines().map(|l| serde_json::from_str(l).expect("one JSON event a line")).collect();
    assert_eq!(events[0]["from"], "held", "{events:?}");
    assert!(events.iter().all(|e| e["job"] == job.to_string().as_str() && e["name"] == name.as_str()), "{events:?}");
    assert_eq!(events.last().unwrap()["exit_code"], 0);

    let bytes = std::fs::read(&raw).expect("the pane's raw output");
    let wrapped = format!("\x1bPtmux;\x1b\x1b]9;flightdeck: {job}  held → ");
    assert!(
        bytes.windows(wrapped.len()).any(|w| w == wrapped.as_bytes()),
        "the wrapped OSC 9 for the first change is in the pane's output"
    );
    // The end, from whichever state the last refresh before it saw, terminated and wrapped.
    let end = "→ completed  exit 0\x07\x1b\\";
    assert!(bytes.windows(end.len()).any(|w| w == end.as_bytes()), "and the end, terminated and wrapped");
}
