//! Every screen rendered on ratatui's `TestBackend` at 80×24 and 160×48, snapshotted as text
//! with insta. The clock is fed in (`Msg::Tick`), so ages and times are fixed.
//!
//! New or changed snapshots fail until accepted:
//! `INSTA_UPDATE=always cargo test --test offline tui_snapshots`, then read the `.snap` files.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use flightdeck::backend::LogChunk;
use flightdeck::fleet::{ActionOutcome, ClusterState, FleetState};
use flightdeck::model::{GpuAllocation, GpuSlot, Health, Job, JobRef, JobState, Node, NodeState, Snapshot, Verb};
use flightdeck::tui::keymap::Keymap;
use flightdeck::tui::theme::{ColorDepth, Theme};
use flightdeck::tui::{App, Command, Msg, TuiOptions, views};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, h, m, s).unwrap()
}

fn now() -> DateTime<Utc> {
    at(12, 3, 30)
}

fn gpu_node(cluster: &str, name: &str, state: NodeState, model: &str, total: u32, allocated: u32) -> Node {
    let mut n = Node::new(cluster, name, state);
    n.gpus = vec![GpuSlot {
        model: model.into(),
        gpu_product: Some(model.into()),
        shared: false,
        total,
        allocated,
        unhealthy: 0,
        utilisation: None,
    }];
    n.cpus_total = 64;
    n.cpus_allocated = allocated * 8;
    n.memory_total_mb = 512 * 1024;
    n.memory_allocated_mb = u64::from(allocated) * 60 * 1024;
    n.partitions = vec!["gpu".into()];
    n
}

#[allow(clippy::too_many_arguments)]
fn job(
    cluster: &str,
    id: &str,
    name: &str,
    user: &str,
    state: JobState,
    reason: Option<&str>,
    gpus: u32,
    model: Option<&str>,
    nodes: &[&str],
) -> Job {
    let mut j = Job::new(JobRef::new(cluster, id), state);
    j.name = name.into();
    j.user = user.into();
    j.partition = "gpu".into();
    j.native_state = state.as_str().to_uppercase();
    j.reason = reason.map(Into::into);
    j.gpus_requested = gpus;
    if state.is_active() {
        j.gpus_allocated = gpus;
        j.start_time = Some(at(10, 0, 0));
    }
    j.gpu_model = model.map(Into::into);
    j.nodes = nodes.iter().map(|n| n.to_string()).collect();
    j.node_count = nodes.len().max(1) as u32;
    j.cpus = 8;
    j.memory_mb = Some(64 * 1024);
    j.submit_time = Some(at(9, 30, 0));
    j.time_limit_secs = Some(24 * 3600);
    j.priority = Some(4294);
    j.stdout = Some(format!("/home/{user}/slurm-{id}.out").into());
    j.workdir = Some(format!("/home/{user}"));
    j
}

fn fleet_state(read_only: bool) -> Arc<FleetState> {
    let mut big = job(
        "fd22",
        "1001",
        "train-llama-70b-with-a-very-long-name-that-must-be-cut",
        "alice",
        JobState::Running,
        None,
        8,
        Some("a100"),
        &["gpu-02"],
    );
    big.gpu_allocations =
        vec![GpuAllocation { node: "gpu-02".into(), model: Some("a100".into()), count: 8, indices: (0..8).collect() }];
    let mut sweep = job("fd22", "1003", "sweep-lr", "carol", JobState::Running, None, 4, Some("a100"), &["gpu-01"]);
    sweep.gpu_allocations =
        vec![GpuAllocation { node: "gpu-01".into(), model: Some("a100".into()), count: 4, indices: vec![2, 3, 4, 5] }];
    let mut moe =
        job("fd22", "1004", "train-moe", "alice", JobState::Pending, Some("Resources"), 16, Some("a100"), &[]);
    moe.node_count = 2;
    moe.time_limit_secs = Some(2 * 86_400);
    let mut array = job("fd22", "1007_3", "array-task", "bob", JobState::Running, None, 1, None, &["gpu-01"]);
    array.time_limit_secs = None;
    let fd22_jobs = vec![
        big,
        job("fd22", "1002", "eval-vit", "bob", JobState::Running, None, 2, Some("a100"), &["gpu-01"]),
        sweep,
        moe,
        job("fd22", "1005", "preprocess", "dave", JobState::Pending, Some("Priority"), 0, None, &[]),
        job("fd22", "1006", "debug", "alice", JobState::Held, Some("JobHeldUser"), 1, Some("a100"), &[]),
        array,
        job("fd22", "1008", "x\u{1b}[2Jboom", "mallory", JobState::Pending, Some("Dependency"), 1, None, &[]),
    ];
    let mut broken = gpu_node("fd22", "gpu-03", NodeState::Idle, "a100", 8, 0);
    broken.gpus[0].unhealthy = 1;
    let mut drained = gpu_node("fd22", "gpu-04", NodeState::Drained, "a100", 8, 0);
    drained.flags = vec!["DRAIN".into()];
    drained.reason = Some("bad NVLink on GPU 3".into());
    drained.reason_user = Some("root".into());
    drained.reason_time = Some(at(9, 30, 0));
    let mut down = gpu_node("fd22", "gpu-05", NodeState::Down, "a100", 8, 0);
    down.flags = vec!["NOT_RESPONDING".into()];
    down.reason = Some("Not responding".into());
    down.reason_user = Some("slurm".into());
    down.reason_time = Some(at(11, 2, 0));
    let mut cpu = Node::new("fd22", "cpu-01", NodeState::Idle);
    cpu.cpus_total = 128;
    cpu.memory_total_mb = 256 * 1024;
    let fd22_nodes = vec![
        gpu_node("fd22", "gpu-01", NodeState::Mixed, "a100", 8, 7),
        gpu_node("fd22", "gpu-02", NodeState::Allocated, "a100", 8, 8),
        broken,
        drained,
        down,
        cpu,
    ];
    let fd24_jobs =
        vec![job("fd24", "77", "bert-finetune", "bob", JobState::Running, None, 4, Some("h100"), &["node-a"])];
    let fd24_nodes = vec![
        gpu_node("fd24", "node-a", NodeState::Mixed, "h100", 8, 4),
        gpu_node("fd24", "node-b", NodeState::Idle, "h100", 8, 0),
        gpu_node("fd24", "node-c", NodeState::Idle, "l40s", 4, 0),
    ];
    let snapshot = |cluster: &str, jobs: Vec<Job>, nodes: Vec<Node>, taken: DateTime<Utc>, release: &str| {
        let mut s = Snapshot {
            cluster: cluster.into(),
            taken_at: Some(taken),
            release: Some(release.into()),
            jobs,
            nodes,
            queues: vec![],
            notes: vec![],
        };
        s.derive_queues();
        Some(Arc::new(s))
    };
    let clusters = vec![
        ClusterState {
            health: Health::Fresh { at: at(12, 3, 20) },
            snapshot: snapshot("fd22", fd22_jobs, fd22_nodes, at(12, 3, 20), "22.05.8"),
            attempts: 20,
            placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
            ..ClusterState::new("fd22", "slurm")
        },
        ClusterState {
            health: Health::Stale {
                since: at(11, 55, 0),
                error: "cannot reach login.fd24: ssh: connect to host login.fd24 port 22: Connection timed out".into(),
                last_ok: Some(at(11, 54, 30)),
            },
            snapshot: snapshot("fd24", fd24_jobs, fd24_nodes, at(11, 54, 30), "24.11.5").map(|s| {
                let mut s = (*s).clone();
                s.notes.push("node JSON unavailable: allocated GPUs and memory are not in sinfo's text output".into());
                s.queues.push(flightdeck::model::Queue {
                    cluster: "fd24".into(),
                    name: "gpu-cq".into(),
                    cohort: Some("ml".into()),
                    workloads_pending: 3,
                    workloads_admitted: 2,
                    quota: vec![flightdeck::model::QueueQuota {
                        flavor: "h100".into(),
                        resource: "nvidia.com/gpu".into(),
                        nominal_milli: 16_000,
                        used_milli: 12_000,
                        ..Default::default()
                    }],
                    ..Default::default()
                });
                Arc::new(s)
            }),
            attempts: 30,
            placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
            ..ClusterState::new("fd24", "slurm")
        },
        ClusterState {
            placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
            ..ClusterState::new("lab", "slurm")
        },
    ];
    let mut clusters = clusters;
    for c in &mut clusters {
        // What the Slurm adapter declares: everything but cordon/uncordon.
        c.capabilities =
            flightdeck::model::Capabilities { cordon_uncordon: false, ..flightdeck::model::Capabilities::ALL };
        // What the Slurm adapter's registry line declares: partitions are node sets.
        c.placement = flightdeck::backend::Registry::builtin().placement(&c.kind);
    }
    Arc::new(FleetState { clusters, read_only, version: 1 })
}

fn new_app(read_only: bool) -> App {
    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only,
        user: "alice".into(),
        config_label: "~/.config/flightdeck/config.toml".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Tick(now()));
    app.update(Msg::Fleet(fleet_state(read_only)));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Command> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn keys(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| key(app, KeyCode::Char(c))).collect()
}

fn render(app: &mut App, w: u16, h: u16) -> String {
    app.update(Msg::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| views::render(app, f)).unwrap();
    terminal.backend().to_string()
}

/// Snapshot `setup`'s screen at both sizes.
fn both(name: &str, setup: impl Fn() -> App) {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = setup();
        let text = render(&mut app, w, h);
        assert!(!text.contains('\u{1b}'), "an escape character reached the screen");
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), text);
    }
}

#[test]
fn overview() {
    both("overview", || new_app(false));
}

/// The cockpit over `clusters`, with the text the CLI hands over for a fleet without any.
fn app_over(clusters: Vec<ClusterState>, no_clusters: &[&str]) -> App {
    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "the embedded default (no config file)".into(),
        no_clusters: no_clusters.iter().map(|l| l.to_string()).collect(),
    });
    app.update(Msg::Tick(now()));
    app.update(Msg::Fleet(Arc::new(FleetState { clusters, read_only: false, version: 1 })));
    app
}

const LOOKED_FOR: &[&str] = &[
    "",
    "Looked for on this machine:",
    "  NVML (libnvidia-ml.so.1) not loadable: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
    "  nvidia-smi not found on PATH",
    "  Slurm's squeue not found on PATH",
    "  no kubeconfig context ($KUBECONFIG or ~/.kube/config)",
    "",
    "To add a cluster: `flightdeck init` writes /home/alice/.config/flightdeck/config.toml from what it finds, or add [[cluster]] entries to it yourself ($XDG_CONFIG_HOME/flightdeck/config.toml, or --config FILE; see the README).",
];

/// No cluster at all: the overview says what was looked for and how to add one, wrapped
/// to the screen rather than cut.
#[test]
fn overview_of_an_empty_machine() {
    both("overview_no_clusters", || app_over(Vec::new(), LOOKED_FOR));
    for (w, h) in [(80, 24), (160, 48)] {
        let text = render(&mut app_over(Vec::new(), LOOKED_FOR), w, h);
        for part in [
            "no clusters configured",
            "nvidia-smi not found on PATH",
            "`flightdeck init`",
            "$XDG_CONFIG_HOME/flightdeck/config.toml",
        ] {
            assert!(text.contains(part), "{part} at {w}×{h}:\n{text}");
        }
        assert!(!text.contains('…'), "wrapped, never cut, at {w}×{h}:\n{text}");
    }
}

/// A local cluster whose machine has no GPU says so; other kinds keep their words.
#[test]
fn overview_of_a_machine_without_gpus() {
    let setup = || {
        let snapshot = |cluster: &str| {
            Some(Arc::new(Snapshot {
                cluster: cluster.into(),
                taken_at: Some(at(12, 3, 20)),
                nodes: vec![Node::new(cluster, "gpubox", NodeState::Idle)],
                notes: if cluster == "gpubox" {
                    vec!["no GPU found: NVML (libnvidia-ml.so.1) not loadable: libnvidia-ml.so.1: cannot open shared object file: No such file or directory; nvidia-smi not found on PATH".into()]
                } else {
                    Vec::new()
                },
                ..Snapshot::default()
            }))
        };
        let clusters = ["gpubox", "lab"]
            .into_iter()
            .zip(["local", "slurm"])
            .map(|(name, kind)| ClusterState {
                health: Health::Fresh { at: at(12, 3, 20) },
                snapshot: snapshot(name),
                attempts: 1,
                placement: flightdeck::backend::Registry::builtin().placement(&(*kind).into()),
                ..ClusterState::new(name, kind)
            })
            .collect();
        app_over(clusters, LOOKED_FOR)
    };
    both("overview_local_without_gpus", setup);
    let text = render(&mut setup(), 160, 48);
    // The fleet and both clusters read `no GPUs`, the same words for every kind; the local
    // one's note (from its backend) says what was looked for.
    assert_eq!(text.matches("  no GPUs ").count(), 3, "{text}");
    assert!(text.contains("note: no GPU found: NVML (libnvidia-ml.so.1) not loadable"), "{text}");
    assert!(!text.contains("Looked for on this machine"), "the fleet has clusters: {text}");
}

#[test]
fn jobs() {
    both("jobs", || {
        let mut app = new_app(false);
        keys(&mut app, "2jj ");
        app
    });
}

#[test]
fn jobs_filtered() {
    both("jobs_filter", || {
        let mut app = new_app(false);
        keys(&mut app, "2/train");
        app
    });
}

#[test]
fn nodes() {
    both("nodes", || {
        let mut app = new_app(false);
        keys(&mut app, "3");
        app
    });
}

#[test]
fn gpu_map() {
    both("gpus", || {
        let mut app = new_app(false);
        keys(&mut app, "4");
        key(&mut app, KeyCode::Right);
        key(&mut app, KeyCode::Right);
        app
    });
}

#[test]
fn detail() {
    both("detail", || {
        let mut app = new_app(false);
        keys(&mut app, "2");
        let sent = key(&mut app, KeyCode::Enter);
        let seq = sent
            .iter()
            .find_map(|c| match c {
                Command::FetchLog { seq, .. } => Some(*seq),
                _ => None,
            })
            .expect("a log read");
        let data: String =
            (1..=40).map(|i| format!("step {i:>4} loss {:.3} \u{1b}[32mok\u{1b}[0m\n", 3.0 / i as f64)).collect();
        app.update(Msg::Log { seq, result: Ok(LogChunk { offset: 9000 + data.len() as u64, data, dropped: 0 }) });
        keys(&mut app, "f");
        app
    });
}

#[test]
fn submit_form() {
    both("submit", || {
        let mut app = new_app(false);
        keys(&mut app, "n");
        keys(&mut app, "train-llm");
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "torchrun --nproc-per-node 4 train.py --config configs/llama.yaml");
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "4");
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "a100");
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "64X");
        app
    });
    both("submit_valid", || {
        let mut app = new_app(false);
        keys(&mut app, "n");
        keys(&mut app, "train-llm");
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "python train.py");
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "4");
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "a100");
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Tab);
        keys(&mut app, "64G");
        key(&mut app, KeyCode::Tab);
        let sent = keys(&mut app, "2h");
        // The fleet's answer, made by the Slurm adapter's own renderer.
        let Some(Command::Render { spec, seq, .. }) = sent.last() else { panic!("no render asked") };
        let text = flightdeck::backend::slurm::script::render_sbatch(spec, &Default::default()).unwrap();
        let native =
            flightdeck::model::Native { dialect: flightdeck::backend::slurm::dialect::SBATCH, text, warnings: vec![] };
        app.update(Msg::Rendered { seq: *seq, result: Ok(native) });
        app
    });
}

#[test]
fn help() {
    both("help", || {
        let mut app = new_app(false);
        keys(&mut app, "2?");
        app
    });
}

/// The history screen after its read: rows newest first, a cluster that could not answer,
/// a note, and how many older ones were left out.
fn history_app() -> App {
    let mut app = new_app(false);
    let sent = keys(&mut app, "2e");
    let Some(Command::FetchHistory { seq, .. }) = sent.last() else { panic!("no history read: {sent:?}") };
    let record =
        |id: &str, name: &str, state: JobState, ended: DateTime<Utc>, mins: i64, rss: Option<u64>, gpus: u32| {
            let mut j = job("fd22", id, name, "alice", state, None, gpus, Some("a100"), &["gpu-01"]);
            j.start_time = Some(ended - Duration::minutes(mins));
            j.end_time = Some(ended);
            j.gpus_allocated = gpus;
            j.exit = Some(flightdeck::model::ExitStatus {
                code: i32::from(state != JobState::Completed),
                signal: (state == JobState::Cancelled).then_some(15),
            });
            let secs = mins as u64 * 60;
            flightdeck::model::JobRecord {
                job: j,
                elapsed_secs: Some(secs),
                max_rss_mb: rss,
                gpu_hours: (gpus > 0).then(|| f64::from(gpus) * secs as f64 / 3600.0),
            }
        };
    let fd22 = flightdeck::model::History {
        records: vec![
            record(
                "990",
                "train-llama-70b-with-a-very-long-name-that-must-be-cut",
                JobState::Completed,
                at(11, 58, 0),
                1500,
                Some(412_000),
                8,
            ),
            record("985", "eval\u{1b}[2J", JobState::Failed, at(9, 12, 0), 3, Some(900), 1),
            record("970", "preprocess", JobState::Cancelled, at(2, 40, 0), 47, None, 0),
        ],
        source: "sacct".into(),
        left_out: 0,
        notes: vec![],
    };
    let mut oom = record("960", "sweep-lr", JobState::OutOfMemory, at(10, 30, 0), 125, Some(80_000), 4);
    oom.job.job_ref = JobRef::new("fd24", "960");
    let fd24 = flightdeck::model::History {
        records: vec![oom],
        source: "sacct".into(),
        left_out: 41,
        notes: vec!["no MaxRSS for jobs without a finished step".into()],
    };
    app.update(Msg::History {
        seq: *seq,
        results: vec![
            ("fd22".into(), Ok(fd22)),
            ("fd24".into(), Ok(fd24)),
            ("lab".into(), Err("sacct: Slurm accounting storage is disabled".into())),
        ],
    });
    app
}

#[test]
fn history() {
    both("history", history_app);
    both("history_loading", || {
        let mut app = new_app(false);
        keys(&mut app, "2e");
        app
    });
}

/// The usage screen after its window came back: what each user holds now from the fleet,
/// the GPU-hours of the window from one cluster's finished jobs, and a cluster that could
/// not say (its hours then a lower bound, named above the table).
fn usage_app() -> App {
    usage_app_with(Vec::new())
}

/// [`usage_app`] with `cloud`'s ended runs in the window too (a cluster `sky` of them).
fn usage_app_with(cloud: Vec<flightdeck::model::JobRecord>) -> App {
    use flightdeck::model::usage::{self, UsageAsk, UsageBy};
    let mut app = new_app(false);
    let sent = keys(&mut app, "5");
    let Some(&Command::FetchUsage { seq, since }) = sent.last() else { panic!("no usage read: {sent:?}") };
    let mut done = job("fd22", "990", "sweep", "carol", JobState::Completed, None, 4, Some("a100"), &["gpu-01"]);
    done.start_time = Some(at(1, 0, 0));
    done.end_time = Some(at(3, 30, 0));
    done.gpus_allocated = 4;
    let record =
        flightdeck::model::JobRecord { job: done, elapsed_secs: Some(9000), max_rss_mb: None, gpu_hours: None };
    let fd22 = flightdeck::model::History { records: vec![record], source: "sacct".into(), left_out: 0, notes: vec![] };
    let mut answers =
        vec![("fd22".into(), Ok(fd22)), ("fd24".into(), Err("sacct: Slurm accounting storage is disabled".into()))];
    if !cloud.is_empty() {
        answers.push(("sky".into(), Ok(flightdeck::model::History::newest("the cluster's current jobs", cloud, 100))));
    }
    let answers = usage::window_answers(answers);
    let sources = usage::window_sources(&answers);
    let ask =
        UsageAsk { by: UsageBy::User, now: at(12, 0, 0), window: Some((since, &sources)), idle_below_percent: None };
    let window = usage::compute(app.fleet(), &ask);
    app.update(Msg::Usage { seq, result: Ok(Box::new(window)) });
    app
}

#[test]
fn usage() {
    both("usage", usage_app);
    // An ended priced cloud run of carol's: the window's dollars are a column, a lower bound
    // where Slurm's jobs (no price) are counted too, `?` for users with none priced.
    both("usage_spent", || {
        let mut run = job("sky", "r1", "eval", "carol", JobState::Completed, None, 8, Some("h100"), &["sky-1"]);
        run.start_time = Some(at(2, 0, 0));
        run.end_time = Some(at(4, 0, 0));
        run.gpus_allocated = 8;
        run.cost_per_hour = Some(23.92);
        usage_app_with(vec![flightdeck::model::JobRecord::from_job(run)])
    });
    both("usage_reading", || {
        let mut app = new_app(false);
        keys(&mut app, "5");
        app
    });
}

/// The usage screen beside a Kubernetes cluster's queues: a Kueue ClusterQueue borrowing
/// from its cohort, a Volcano Queue (deserved as nominal, capability beyond it as the
/// borrowing limit), and more flavors than the small screen has room for.
fn usage_quota_app() -> App {
    use flightdeck::model::{Queue, QueueQuota};
    let mut app = usage_app();
    let mut state = app.fleet().clone();
    let quota = |flavor: &str, nominal, limit, used, borrowed| QueueQuota {
        flavor: flavor.into(),
        resource: "nvidia.com/gpu".into(),
        nominal_milli: nominal,
        borrowing_limit_milli: limit,
        used_milli: used,
        borrowed_milli: borrowed,
    };
    let mut k8s = ClusterState::new("k8s", "kubernetes");
    let queues = vec![
        Queue {
            cluster: "k8s".into(),
            name: "team-a-cq".into(),
            cohort: Some("research".into()),
            quota: (0..6)
                .map(|i| quota(&format!("h100-pool-{i}"), 16_000, Some(8_000), 20_000 - i * 1000, 4_000 - i * 500))
                .collect(),
            workloads_pending: 4,
            workloads_admitted: 5,
            ..Queue::default()
        },
        Queue {
            cluster: "k8s".into(),
            name: "vc-research".into(),
            quota: vec![quota("volcano", 8_000, Some(4_000), 10_500, 2_500)],
            workloads_pending: 1,
            workloads_admitted: 3,
            ..Queue::default()
        },
    ];
    k8s.snapshot = Some(Arc::new(Snapshot { cluster: "k8s".into(), queues, ..Snapshot::default() }));
    state.clusters.push(k8s);
    state.version += 1;
    app.update(Msg::Fleet(Arc::new(state)));
    app
}

#[test]
fn usage_queue_quota() {
    both("usage_queue_quota", usage_quota_app);
}

#[test]
fn cancel_dialog() {
    both("cancel_dialog", || {
        let mut app = new_app(false);
        keys(&mut app, "2 j C");
        app
    });
}

#[test]
fn drain_dialog_read_only() {
    both("drain_dialog_read_only", || {
        let mut app = new_app(true);
        keys(&mut app, "3jD");
        keys(&mut app, "swap GPU 3");
        app
    });
}

#[test]
fn command_line_completion() {
    both("command_line", || {
        let mut app = new_app(false);
        keys(&mut app, ":cluster fd");
        key(&mut app, KeyCode::Tab);
        app
    });
}

#[test]
fn toasts() {
    both("toasts", || {
        let mut app = new_app(false);
        keys(&mut app, "2");
        app.update(Msg::Outcome(ActionOutcome {
            verb: Verb::Hold,
            target: "fd22/1001".into(),
            result: Ok(String::new()),
        }));
        app.update(Msg::Outcome(ActionOutcome {
            verb: Verb::Cancel,
            target: "fd24/77".into(),
            result: Err("cannot reach login.fd24: ssh: connect to host login.fd24 port 22: Connection timed out".into()),
        }));
        app
    });
}

/// Every screen at every size from tiny to large: no panic, nothing drawn outside the area.
#[test]
fn every_screen_at_many_sizes() {
    type Setup = fn(&mut App);
    let setups: [(&str, Setup); 12] = [
        ("overview", |_| {}),
        ("jobs", |a| drop(keys(a, "2jj "))),
        ("nodes", |a| drop(keys(a, "3"))),
        ("gpus", |a| drop(keys(a, "4"))),
        ("detail", |a| {
            keys(a, "2");
            key(a, KeyCode::Enter);
        }),
        ("submit", |a| drop(keys(a, "nname"))),
        ("help", |a| drop(keys(a, "?"))),
        ("dialog", |a| drop(keys(a, "2 j C"))),
        ("drain", |a| drop(keys(a, "3D"))),
        ("command", |a| drop(keys(a, ":c"))),
        ("history", |a| *a = history_app()),
        ("history detail", |a| {
            *a = history_app();
            keys(a, "j");
            key(a, KeyCode::Enter);
        }),
    ];
    for (name, setup) in &setups {
        let mut app = new_app(false);
        setup(&mut app);
        app.update(Msg::Outcome(ActionOutcome {
            verb: Verb::Hold,
            target: "fd22/1".into(),
            result: Ok(String::new()),
        }));
        for w in [0u16, 1, 2, 5, 10, 20, 39, 40, 41, 50, 60, 79, 80, 81, 100, 120, 200, 300] {
            for h in [0u16, 1, 2, 3, 5, 7, 8, 9, 10, 12, 24, 48, 100] {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    app.update(Msg::Resize(w, h));
                    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
                    terminal.draw(|f| views::render(&app, f)).unwrap();
                }));
                assert!(result.is_ok(), "{name} panicked at {w}×{h}");
            }
        }
    }
}

/// The stale banner's age follows the clock passed in, in whole minutes.
#[test]
fn stale_age_moves_with_the_clock() {
    let mut app = new_app(false);
    let before = render(&mut app, 160, 48);
    assert!(before.contains("fd24 STALE for 8m — failing since 11:55:00"), "{before}");
    let generation = app.generation();
    app.update(Msg::Tick(now() + Duration::seconds(20)));
    assert_eq!(app.generation(), generation, "the same minute: nothing to redraw");
    app.update(Msg::Tick(now() + Duration::seconds(31)));
    assert!(app.generation() > generation, "a new minute: the age changes");
    assert!(render(&mut app, 160, 48).contains("STALE for 9m"));
}

#[test]
fn the_footer_offers_only_what_the_selected_rows_cluster_can_do() {
    let footer = |kube: bool| {
        let mut state = (*fleet_state(false)).clone();
        if kube {
            for c in &mut state.clusters {
                c.kind = "kubernetes".into();
                c.capabilities =
                    flightdeck::model::Capabilities { requeue: false, ..flightdeck::model::Capabilities::ALL };
            }
        }
        let mut app = new_app(false);
        app.update(Msg::Fleet(Arc::new(state)));
        keys(&mut app, "2");
        let screen = render(&mut app, 200, 30);
        screen.lines().rev().find(|l| !l.trim_matches(['"', ' ']).is_empty()).unwrap_or_default().to_string()
    };
    let slurm = footer(false);
    assert!(slurm.contains(" requeue "), "{slurm}");
    let kube = footer(true);
    assert!(!kube.contains("requeue"), "{kube}");
    assert!(kube.contains(" cancel "), "{kube}");
}

/// A small queue as a new user sees it: finished jobs among live ones on a Slurm cluster,
/// and a Kubernetes cluster whose job ids are long (`ml:pod:train-0`).
fn mixed_queue_app() -> App {
    let finished = |id: &str, name: &str, state: JobState| {
        let mut j = job("fd22", id, name, "alice", state, None, 1, Some("a100"), &["gpu-01"]);
        j.start_time = Some(at(8, 0, 0));
        j.end_time = Some(at(9, 0, 0));
        j
    };
    let fd22_jobs = vec![
        finished("2001", "old-sweep", JobState::Completed),
        job("fd22", "2002", "train-llm", "alice", JobState::Running, None, 4, Some("a100"), &["gpu-01"]),
        finished("2003", "oops", JobState::Cancelled),
        job("fd22", "2004", "eval", "bob", JobState::Pending, Some("Priority"), 2, Some("a100"), &[]),
        finished("2005", "crashed", JobState::Failed),
    ];
    let kube_jobs = vec![
        job("k8s-prod", "ml:pod:train-0", "train-0", "ml", JobState::Running, None, 8, Some("h200"), &["gpu-node-1"]),
        job("k8s-prod", "research:job:sweep-lr-7", "sweep", "research", JobState::Pending, None, 1, None, &[]),
    ];
    let snapshot = |cluster: &str, jobs: Vec<Job>| {
        Some(Arc::new(Snapshot { cluster: cluster.into(), taken_at: Some(at(12, 3, 20)), jobs, ..Snapshot::default() }))
    };
    let clusters = vec![
        ClusterState {
            health: Health::Fresh { at: at(12, 3, 20) },
            snapshot: snapshot("fd22", fd22_jobs),
            attempts: 1,
            placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
            ..ClusterState::new("fd22", "slurm")
        },
        ClusterState {
            health: Health::Fresh { at: at(12, 3, 20) },
            snapshot: snapshot("k8s-prod", kube_jobs),
            attempts: 1,
            ..ClusterState::new("k8s-prod", "kubernetes")
        },
    ];
    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "~/.config/flightdeck/config.toml".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Tick(now()));
    app.update(Msg::Fleet(Arc::new(FleetState { clusters, read_only: false, version: 1 })));
    keys(&mut app, "2");
    app
}

/// Live jobs first, finished ones after them; Kubernetes ids in full while NAME has room.
#[test]
fn jobs_live_first_and_long_ids() {
    both("jobs_live_first", mixed_queue_app);
    both("jobs_finished_hidden", || {
        let mut app = mixed_queue_app();
        keys(&mut app, "f");
        app
    });
    for (w, h) in [(80, 24), (160, 48)] {
        let text = render(&mut mixed_queue_app(), w, h);
        assert!(text.contains("ml:pod:train-0 "), "the Kubernetes id is cut at {w}×{h}:\n{text}");
    }
}

/// Finished rows are drawn in the theme's `dim` colour, live rows are not.
#[test]
fn finished_rows_are_dimmed() {
    use flightdeck::tui::theme::Slot;
    let mut app = mixed_queue_app();
    app.update(Msg::Resize(160, 48));
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    terminal.draw(|f| views::render(&app, f)).unwrap();
    let dim = Theme::builtin("default", ColorDepth::TrueColor).unwrap().style(Slot::Dim).fg;
    assert!(dim.is_some());
    let buf = terminal.backend().buffer();
    let row_of = |needle: &str| {
        (0..buf.area.height)
            .find(|&y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().contains(needle))
            .unwrap_or_else(|| panic!("{needle} not on screen"))
    };
    // The NAME column: the cell under the first letter of the name.
    let name_fg = |needle: &str| {
        let y = row_of(needle);
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        let x = line.find(needle).unwrap() as u16;
        buf[(x, y)].fg
    };
    assert_eq!(Some(name_fg("old-sweep")), dim, "a completed job is dimmed");
    assert_eq!(Some(name_fg("crashed")), dim, "a failed job is dimmed");
    assert_ne!(Some(name_fg("eval ")), dim, "a pending job is not");
}

/// The CLI's table and the cockpit write the same cell text for the same job.
#[test]
fn cli_and_cockpit_show_the_same_cells() {
    use flightdeck::columns::JobColumn;
    let mut app = new_app(false);
    keys(&mut app, "2");
    let screen = render(&mut app, 160, 48);
    let fleet = fleet_state(false);
    let jobs: Vec<&Job> =
        fleet.clusters.iter().filter_map(|c| c.snapshot.as_ref()).flat_map(|s| s.jobs.iter()).collect();
    let rows: Vec<_> = jobs.iter().map(|job| (*job, None)).collect();
    let cli = flightdeck::output::jobs_table(&rows);
    let job = jobs.iter().find(|j| j.job_ref.id == "1003").unwrap();
    let cli_row = cli.lines().find(|l| l.starts_with("fd22/1003 ")).expect("the job in the CLI table");
    let screen_row = screen.lines().find(|l| l.contains(" 1003 ")).expect("the job on the screen");
    for column in [JobColumn::Name, JobColumn::User, JobColumn::State, JobColumn::Gpus] {
        let cell = column.cell(job, flightdeck::columns::JobContext::default());
        let word = format!(" {cell} ");
        assert!(cli_row.contains(&word), "{column:?}: {word:?} not in the CLI row {cli_row:?}");
        assert!(screen_row.contains(&word), "{column:?}: {word:?} not in the cockpit row {screen_row:?}");
    }
    assert!(cli_row.contains(" a100×4 ") && screen_row.contains(" a100×4 "), "{cli_row}\n{screen_row}");
}

/// The demo fleet with telemetry on fd22: job 1001's eight GPUs idle for the whole window,
/// job 1003's four busy, and GPU 0 of gpu-03 fallen off the bus.
fn telemetry_app() -> App {
    use flightdeck::model::{GpuReading, GpuSample, GpuUse, JobGpuUse};
    let reading = |node: &str, index: u32, util: f32, job: Option<&str>| {
        let mut sample = GpuSample::new(node, index);
        sample.utilisation = Some(util);
        sample.memory_used_mb = Some(40 * 1024);
        sample.memory_total_mb = Some(80 * 1024);
        sample.power_watts = Some(300.0);
        sample.temperature_c = Some(55.0);
        GpuReading { sample, job: job.map(str::to_string), history: vec![util, util, 100.0, util] }
    };
    let mut gpus: Vec<GpuReading> = (0..8).map(|i| reading("gpu-02", i, 2.0, Some("1001"))).collect();
    gpus.extend((2..6).map(|i| reading("gpu-01", i, 95.0, Some("1003"))));
    let mut broken = reading("gpu-03", 0, 0.0, None);
    broken.sample.last_xid = Some(79);
    broken.sample.problems = vec!["XID 79: GPU has fallen off the bus".into()];
    gpus.push(broken);
    gpus.sort_by(|a, b| (a.sample.node.as_str(), a.sample.index).cmp(&(b.sample.node.as_str(), b.sample.index)));
    let used = GpuUse {
        taken_at: at(12, 3, 0),
        source: "nvidia-smi via srun".into(),
        gpus,
        jobs: vec![
            JobGpuUse {
                job: "1001".into(),
                gpus: 8,
                mean_utilisation: Some(2.0),
                below_since: Some(at(11, 30, 0)),
                idle: true,
            },
            JobGpuUse { job: "1003".into(), gpus: 4, mean_utilisation: Some(95.0), below_since: None, idle: false },
        ],
        notes: vec![],
    };
    let mut fleet = (*fleet_state(false)).clone();
    fleet.clusters[0].gpu_use = Some(Arc::new(used));
    fleet.version += 1;
    let mut app = new_app(false);
    app.update(Msg::Fleet(Arc::new(fleet)));
    app
}

#[test]
fn telemetry_shows_idle_allocated_gpus_everywhere() {
    let mut app = telemetry_app();
    let overview = render(&mut app, 160, 48);
    assert!(
        overview.contains("telemetry (nvidia-smi via srun): 13 GPUs read")
            && overview.contains("8 GPUs idle-allocated: 1 job"),
        "{overview}"
    );

    // The jobs table's GPU% column: idle flagged, busy as a figure; `:idle` keeps the one.
    keys(&mut app, "2");
    let jobs = render(&mut app, 160, 48);
    let row =
        |screen: &str, id: &str| screen.lines().find(|l| l.contains(&format!(" {id} "))).unwrap_or("").to_string();
    assert!(jobs.contains("GPU%"), "{jobs}");
    assert!(row(&jobs, "1001").contains("idle(2%)"), "{}", row(&jobs, "1001"));
    assert!(row(&jobs, "1003").contains("95%"), "{}", row(&jobs, "1003"));
    keys(&mut app, ":idle");
    key(&mut app, KeyCode::Enter);
    let idle = render(&mut app, 160, 48);
    assert!(idle.contains("idle GPUs only") && idle.contains(" 1001 ") && !idle.contains(" 1003 "), "{idle}");
}

#[test]
fn the_gpu_map_marks_idle_cells_and_names_the_selected_gpus_figures() {
    let mut app = telemetry_app();
    keys(&mut app, "4");
    let screen = render(&mut app, 160, 48);
    assert!(screen.contains("▣ 8 idle-allocated"), "{screen}");
    let line = |screen: &str, node: &str| screen.lines().find(|l| l.contains(node)).unwrap_or("").to_string();
    assert_eq!(line(&screen, "gpu-02").matches('▣').count(), 8, "{}", line(&screen, "gpu-02"));
    assert_eq!(line(&screen, "gpu-01").matches('▣').count(), 0, "busy GPUs are not idle");
    // The cursor starts on gpu-01, GPU 0 (unmeasured); GPU 2 is job 1003's.
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Right);
    let screen = render(&mut app, 160, 48);
    assert!(
        screen.contains("gpu-01 · GPU 2") && screen.contains("util 95% ") && screen.contains("mem 40.0/80.0 GiB"),
        "{screen}"
    );
    assert!(screen.contains("▃▃█▃") || screen.contains("█"), "the history as a sparkline:\n{screen}");
}

#[test]
fn a_gpu_problem_from_telemetry_is_a_problem_node_with_its_evidence() {
    let mut app = telemetry_app();
    keys(&mut app, "3p");
    let screen = render(&mut app, 160, 48);
    let row = screen.lines().find(|l| l.contains("gpu-03")).unwrap_or_else(|| panic!("gpu-03 kept:\n{screen}"));
    assert!(row.contains("GPU 0: XID 79: GPU has fallen off the bus"), "{row}");
    assert!(!screen.contains("gpu-02"), "a healthy node is filtered out:\n{screen}");
    // The overview counts it with the drained and the down node; without telemetry it does not.
    let overview = render(&mut telemetry_app(), 160, 48);
    assert!(overview.contains("3 need attention"), "{overview}");
    let overview = render(&mut new_app(false), 160, 48);
    assert!(overview.contains("2 need attention"), "{overview}");
}

#[test]
fn job_detail_shows_each_gpu_with_its_last_minutes() {
    let mut app = telemetry_app();
    keys(&mut app, "2");
    key(&mut app, KeyCode::Enter);
    let screen = render(&mut app, 160, 48);
    assert!(screen.contains("GPUs · nvidia-smi via srun") && screen.contains("IDLE"), "{screen}");
    assert!(screen.contains("gpu-02 GPU 0") && screen.contains("gpu-02 GPU 7"), "{screen}");
    assert!(!screen.contains("more GPUs"), "eight fit:\n{screen}");
    assert!(screen.contains("util 2% ▁▁█▁"), "the sparkline:\n{screen}");
}

/// A Slurm array of 10 tasks (3 running, 2 completed, `5-9` pending) beside a plain job.
fn array_app() -> App {
    let task = |id: &str, t: Option<u32>, pending: Option<&str>, state: JobState| {
        let nodes: &[&str] = if state.is_active() { &["gpu-01"] } else { &[] };
        let reason = pending.map(|_| "Resources");
        let mut j = job("fd22", id, "sweep-lr", "alice", state, reason, 1, Some("a100"), nodes);
        j.array = Some(flightdeck::model::ArrayInfo {
            array_id: "3100".into(),
            task_id: t,
            pending_tasks: pending.map(Into::into),
        });
        j
    };
    let mut jobs =
        vec![job("fd22", "3001", "train-llm", "alice", JobState::Running, None, 4, Some("a100"), &["gpu-02"])];
    jobs.extend((0..3).map(|t| task(&format!("3100_{t}"), Some(t), None, JobState::Running)));
    jobs.extend((3..5).map(|t| task(&format!("3100_{t}"), Some(t), None, JobState::Completed)));
    jobs.push(task("3100_[5-9]", None, Some("5-9"), JobState::Pending));
    let clusters = vec![ClusterState {
        health: Health::Fresh { at: at(12, 3, 20) },
        snapshot: Some(Arc::new(Snapshot {
            cluster: "fd22".into(),
            taken_at: Some(at(12, 3, 20)),
            jobs,
            ..Snapshot::default()
        })),
        attempts: 1,
        placement: flightdeck::backend::Registry::builtin().placement(&"slurm".into()),
        ..ClusterState::new("fd22", "slurm")
    }];
    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "~/.config/flightdeck/config.toml".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Tick(now()));
    app.update(Msg::Fleet(Arc::new(FleetState { clusters, read_only: false, version: 1 })));
    keys(&mut app, "2");
    app
}

/// An array folded into its parent row (`▸ 3100_[0-9]`, counts in REASON), then unfolded
/// with its tasks under it.
#[test]
fn array_folded_and_expanded() {
    both("jobs_array_folded", array_app);
    both("jobs_array_expanded", || {
        let mut app = array_app();
        keys(&mut app, "jz");
        app
    });
}

/// A Kubernetes cluster running AI workloads: a PyTorchJob of four pods, a gang-pending
/// Volcano Job and a plain batch Job, each one row with its kind.
fn workloads_app() -> App {
    use flightdeck::model::{ReplicaGroup, Workload, WorkloadPod};
    let pod = |name: &str, role: &str, state: JobState, node: Option<&str>, reason: Option<&str>| WorkloadPod {
        name: name.into(),
        role: Some(role.into()),
        state,
        native_state: if state == JobState::Running { "Running".into() } else { "Pending".into() },
        node: node.map(Into::into),
        gpus: 8,
        reason: reason.map(Into::into),
        log: Some(format!("pod/ml/{name}/pytorch").into()),
    };
    let nodes = ["wl-1", "wl-2", "wl-3", "wl-4"];
    let mut llm =
        job("k8s", "ml:pytorchjob:llama-ft", "llama-ft", "alice", JobState::Running, None, 32, Some("h100"), &nodes);
    llm.partition = "ml".into();
    llm.native_state = "Running".into();
    llm.stdout = Some("pod/ml/llama-ft-master-0/pytorch".into());
    llm.workload =
        Some(std::sync::Arc::new(Workload {
            kind: "PyTorchJob".into(),
            api_version: "kubeflow.org/v1".into(),
            replicas_ready: 4,
            replicas_total: 4,
            groups: vec![
                ReplicaGroup { name: "Master".into(), replicas: 1, ready: Some(1), gpus_per_replica: 8 },
                ReplicaGroup { name: "Worker".into(), replicas: 3, ready: Some(3), gpus_per_replica: 8 },
            ],
            pods: std::iter::once(pod("llama-ft-master-0", "master", JobState::Running, Some("wl-1"), None))
                .chain((0..3).map(|i| {
                    pod(&format!("llama-ft-worker-{i}"), "worker", JobState::Running, Some(nodes[i + 1]), None)
                }))
                .collect(),
            suspend: Some("spec.runPolicy.suspend".into()),
            cancel: true,
        }));
    let gang = "Volcano NotEnoughResources: 4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable";
    let mut vc = job(
        "k8s",
        "research:vcjob:dist-train",
        "dist-train",
        "bob",
        JobState::Pending,
        Some(gang),
        32,
        Some("h100"),
        &[],
    );
    vc.partition = "research".into();
    vc.node_count = 4;
    vc.workload = Some(std::sync::Arc::new(Workload {
        kind: "Job".into(),
        api_version: "batch.volcano.sh/v1alpha1".into(),
        replicas_ready: 0,
        replicas_total: 4,
        groups: vec![ReplicaGroup { name: "worker".into(), replicas: 4, ready: Some(0), gpus_per_replica: 8 }],
        pods: (0..4)
            .map(|i| pod(&format!("dist-train-worker-{i}"), "worker", JobState::Pending, None, Some("gang waits")))
            .collect(),
        suspend: Some("Volcano Command AbortJob/ResumeJob".into()),
        cancel: true,
    }));
    let mut batch =
        job("k8s", "ml:preprocess", "preprocess", "carol", JobState::Running, None, 1, Some("h100"), &["wl-5"]);
    batch.partition = "ml".into();
    let mut snap = Snapshot {
        cluster: "k8s".into(),
        taken_at: Some(at(12, 3, 20)),
        release: Some("v1.31.0".into()),
        jobs: vec![llm, vc, batch],
        nodes: (1..=5)
            .map(|i| gpu_node("k8s", &format!("wl-{i}"), NodeState::Allocated, "h100", 8, if i == 5 { 1 } else { 8 }))
            .collect(),
        queues: vec![],
        notes: vec![],
    };
    snap.derive_queues();
    app_over(
        vec![ClusterState {
            health: Health::Fresh { at: at(12, 3, 20) },
            snapshot: Some(Arc::new(snap)),
            attempts: 3,
            ..ClusterState::new("k8s", "kubernetes")
        }],
        &[],
    )
}

/// Each workload is one row with a KIND; its detail lists the pods, the shown log's pod
/// highlighted, and `p` moves the log to the next pod.
#[test]
fn workloads_are_one_row_each_with_their_pods_in_the_detail() {
    both("jobs_workloads", || {
        let mut app = workloads_app();
        keys(&mut app, "2");
        app
    });
    both("detail_workload", || {
        let mut app = workloads_app();
        keys(&mut app, "2j");
        key(&mut app, KeyCode::Enter);
        keys(&mut app, "p");
        app
    });
    let mut app = workloads_app();
    keys(&mut app, "2");
    let jobs = render(&mut app, 160, 48);
    assert!(jobs.contains("KIND") && jobs.contains("PyTorchJob") && jobs.contains("VolcanoJob"), "{jobs}");
    assert_eq!(jobs.matches("llama-ft").count(), 2, "one row (id and name), no pod rows:\n{jobs}");
    keys(&mut app, "j");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "p");
    let detail = render(&mut app, 160, 48);
    assert!(detail.contains("pod/ml/llama-ft-worker-0/pytorch"), "the next pod's log:\n{detail}");
    assert!(detail.contains("llama-ft-worker-2") && detail.contains("4/4 ready"), "{detail}");
}

/// A hub names its clusters, a backend its kind and release: text that may hold escapes,
/// C1 controls and bidi controls. No screen shows any of them raw, and the name stays
/// readable (each control as `�`).
#[test]
fn a_hostile_cluster_name_kind_and_release_reach_no_screen_raw() {
    let hostile = "hub-\u{1b}]0;pwned\u{7}\u{9b}2J\u{202E}x\u{2066}";
    let mut node = gpu_node(hostile, "n1", NodeState::Mixed, "h100", 8, 4);
    node.reason = Some("r\u{85}".into());
    let snapshot = Snapshot {
        cluster: hostile.into(),
        taken_at: Some(now()),
        release: Some(format!("24.11 {hostile}")),
        nodes: vec![node],
        jobs: vec![job(hostile, "7", "train", "alice", JobState::Running, None, 4, Some("h100"), &["n1"])],
        ..Snapshot::default()
    };
    let cluster = ClusterState {
        health: Health::Fresh { at: now() },
        snapshot: Some(Arc::new(snapshot)),
        ..ClusterState::new(hostile, hostile)
    };
    let stale = ClusterState {
        health: Health::Stale { since: now(), error: format!("down {hostile}"), last_ok: None },
        ..ClusterState::new(format!("{hostile}2"), "slurm")
    };
    type Setup = fn(&mut App);
    let setups: [(&str, Setup); 7] = [
        ("overview", |_| {}),
        ("overview filtered", |a| drop(keys(a, "c"))),
        ("jobs filtered", |a| drop(keys(a, "2c"))),
        ("nodes filtered", |a| drop(keys(a, "3c"))),
        ("gpus filtered", |a| drop(keys(a, "4c"))),
        ("gpus", |a| drop(keys(a, "4j"))),
        ("detail", |a| {
            keys(a, "2");
            key(a, KeyCode::Enter);
        }),
    ];
    for (name, setup) in &setups {
        let mut app = app_over(vec![cluster.clone(), stale.clone()], &[]);
        setup(&mut app);
        let text = render(&mut app, 160, 48);
        let bad: Vec<String> = text
            .chars()
            .filter(|&c| c != '\n' && flightdeck::safe_text::is_unsafe(c))
            .map(|c| format!("U+{:04X}", c as u32))
            .collect();
        assert!(bad.is_empty(), "{name}: {bad:?}\n{text}");
        assert!(text.contains("hub-\u{FFFD}]0;pwned"), "{name}: the name is shown, readably\n{text}");
    }
}
