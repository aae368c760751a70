//! The `local` kind: this machine's GPUs as one cluster, through each of its sources.
//!
//! Real programs wherever possible: `nvidia-smi` is a stand-in script on a temporary `PATH`
//! that answers the real program's queries with output recorded from it
//! (`tests/fixtures/telemetry/nvidia-smi/`) or the test bed's own stand-in
//! (`tests/testbed/nvidia-smi`); NVML is the real loader asked for a library that is not
//! there (this machine has no driver either). Every backend gets its machine as a `Host`
//! (its `PATH`, NVML library, `/proc`, host name), so no test touches the process's
//! environment and they run in parallel.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::DateTime;
use flightdeck::backend::local::config::FALLBACK_NAME;
use flightdeck::backend::local::{Host, LocalBackend, LocalConfig, nvml};
use flightdeck::backend::registry::discovery::{Discovery, Found, KindDiscovery, Line, embedded};
use flightdeck::backend::registry::looked_for_on;
use flightdeck::backend::telemetry::nvidia_smi::{QUERY_APPS, QUERY_GPU};
use flightdeck::backend::{Backend, BackendError, Registry};
use flightdeck::config::{ClusterConfig, ClusterKind, Config, ConfigError, IdleRule};
use flightdeck::fleet::telemetry::{TelemetryMemory, join};
use flightdeck::model::{GpuOwner, JobState, NodeState, Snapshot};

const FILE: &str = "/home/a/.config/flightdeck/config.toml";
/// An NVML library that no machine has: the absent-driver path on any machine.
const ABSENT_NVML: &str = "/nonexistent/libnvidia-ml.so.1";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/telemetry/nvidia-smi").join(name)
}

fn quote(path: &Path) -> String {
    shlex::try_quote(&path.to_string_lossy()).expect("no NUL in a temp path").into_owned()
}

/// An executable `/bin/sh` script `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `nvidia-smi` answering the two queries flightdeck asks, argument for argument, with the
/// recorded H100 output; anything else is refused as the real program refuses it.
fn recorded_smi(dir: &Path) -> PathBuf {
    let body = format!(
        "if [ \"$1 $2\" = {gpu} ]; then exec cat {gpus}; fi\n\
         if [ \"$1 $2\" = {apps} ]; then exec cat {procs}; fi\n\
         echo \"Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\" >&2\nexit 2",
        gpu = shlex::try_quote(&QUERY_GPU.join(" ")).unwrap(),
        apps = shlex::try_quote(&QUERY_APPS.join(" ")).unwrap(),
        gpus = quote(&fixture("h100-query-gpu.csv")),
        procs = quote(&fixture("h100-query-apps.csv")),
    );
    script(dir, "nvidia-smi", &body)
}

/// A `/proc` with one process, 41822 (root's `python3 train.py --epochs 10`, started 123 s
/// after a boot at 1 700 000 000), and the machine's memory.
fn fake_proc(root: &Path) {
    let dir = root.join("41822");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("status"), "Name:\tpython3\nUid:\t0\t0\t0\t0\n").unwrap();
    std::fs::write(dir.join("cmdline"), b"python3\0train.py\0--epochs\x0010\0").unwrap();
    let ticks = 123 * clock_ticks();
    std::fs::write(dir.join("stat"), format!("41822 (python3) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {ticks} 0 0"))
        .unwrap();
    std::fs::write(root.join("stat"), "cpu 1 2 3\nbtime 1700000000\n").unwrap();
    std::fs::write(root.join("meminfo"), "MemTotal:       65536000 kB\n").unwrap();
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf takes no pointers.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

fn host(path: &Path, proc_root: &Path) -> Host {
    Host {
        path: path.as_os_str().to_owned(),
        nvml_library: ABSENT_NVML.into(),
        proc_root: proc_root.to_path_buf(),
        hostname: "gpubox".into(),
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, Path::new(FILE), &Registry::builtin())
}

/// The one cluster of `section` (the lines after `kind = "local"`), read as a config file.
fn cluster(section: &str) -> ClusterConfig<LocalConfig> {
    let config = parse(&format!("[[cluster]]\nname = \"box\"\nkind = \"local\"\n{section}")).unwrap();
    config.clusters[0].typed::<LocalConfig>().expect("a local cluster")
}

fn backend(section: &str, host: Host) -> LocalBackend {
    LocalBackend::new(&cluster(section), host)
}

/// A temporary directory holding a `bin/` (the `PATH`) and a `proc/`.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        Machine { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn host(&self) -> Host {
        host(&self.bin(), &self.dir.path().join("proc"))
    }
}

#[tokio::test]
async fn nvidia_smi_on_path_gives_the_machine_its_gpus_and_its_processes_as_jobs() {
    let m = Machine::new();
    recorded_smi(&m.bin());
    fake_proc(&m.dir.path().join("proc"));
    // `gpu_source` left at auto: NVML is absent here, so `nvidia-smi` from PATH.
    let local = backend("", m.host());
    let snap = local.snapshot().await.unwrap();

    assert_eq!(snap.cluster, "box");
    assert!(snap.notes.is_empty(), "{:?}", snap.notes);
    let [node] = snap.nodes.as_slice() else { panic!("one node: {:?}", snap.nodes) };
    assert_eq!((node.name.as_str(), node.state), ("gpubox", NodeState::Mixed));
    assert_eq!(node.memory_total_mb, 64_000);
    let [slot] = node.gpus.as_slice() else { panic!("one model: {:?}", node.gpus) };
    assert_eq!(
        (slot.model.as_str(), slot.gpu_product.as_deref(), slot.total, slot.allocated, slot.utilisation),
        ("h100", Some("NVIDIA H100 80GB HBM3"), 2, 1, Some(50.0))
    );

    // Two processes on GPU 0 (the third line names a GPU the reading lacks).
    let ids: Vec<&str> = snap.jobs.iter().map(|j| j.job_ref.id.as_str()).collect();
    assert_eq!(ids, ["41822", "41901"]);
    let python = &snap.jobs[0];
    assert_eq!(python.name, "python3 train.py --epochs 10", "the command line from /proc");
    assert_eq!((python.user.as_str(), python.state), ("root", JobState::Running));
    assert_eq!((python.gpus_allocated, python.gpu_model.as_deref()), (1, Some("h100")));
    assert_eq!(python.gpu_allocations[0].indices, [0]);
    assert_eq!(python.nodes, ["gpubox"]);
    assert_eq!(python.memory_mb, Some(70_100), "its GPU memory");
    assert_eq!(python.start_time, DateTime::from_timestamp(1_700_000_123, 0));
    let torchrun = &snap.jobs[1];
    assert_eq!(torchrun.name, "torchrun --nproc,8", "nvidia-smi's name where /proc has none");
    assert_eq!((torchrun.user.as_str(), torchrun.memory_mb), ("", None));
    assert_eq!(local.requests_sent(), Some(2), "one refresh is the two queries");

    // Telemetry: the same GPUs with figures, users and owners.
    let reading = local.telemetry(&snap).await.unwrap().expect("nvidia-smi measures");
    assert_eq!(reading.source, "nvidia-smi");
    assert_eq!(reading.gpus.len(), 2);
    let busy = &reading.gpus[0];
    assert_eq!((busy.node.as_str(), busy.utilisation, busy.memory_used_mb), ("gpubox", Some(97.0), Some(71_234)));
    assert_eq!(busy.owner, Some(GpuOwner::Job("41822".into())), "the process holding the most memory");
    assert_eq!(busy.processes[0].user.as_deref(), Some("root"));
    assert_eq!(reading.gpus[1].owner, None);
    assert_eq!(reading.gpus[1].power_watts, None, "[N/A] is unknown");

    // Joined as the fleet joins it: the python job gets its GPU's utilisation.
    let used = join(&snap, reading, &mut TelemetryMemory::default(), IdleRule::default());
    assert_eq!(used.job("41822").map(|j| (j.gpus, j.mean_utilisation)), Some((1, Some(97.0))));
    assert!(used.job("41901").is_none(), "a GPU serves one job in the join");
}

#[tokio::test]
async fn the_test_beds_stand_in_through_a_configured_path() {
    let m = Machine::new();
    let stand_in = repo().join("tests/testbed/nvidia-smi");
    let wrapper = script(
        &m.bin(),
        "smi-h100-01",
        &format!(
            "unset SLURMD_NODENAME SLURM_JOB_ID\nFD_TESTBED_NODE=h100-01 exec /bin/sh {} \"$@\"",
            quote(&stand_in)
        ),
    );
    let empty_path = Machine::new();
    let local = backend(
        &format!("gpu_source = \"nvidia-smi\"\nnvidia_smi = {:?}\n", wrapper.to_string_lossy()),
        Host { path: empty_path.bin().into_os_string(), ..m.host() },
    );
    let snap = local.snapshot().await.unwrap();
    let node = &snap.nodes[0];
    assert_eq!(node.state, NodeState::Idle, "the stand-in's GPUs run nothing");
    assert_eq!((node.gpus[0].model.as_str(), node.gpus[0].total, node.gpus[0].allocated), ("h100", 2, 0));
    assert!(snap.jobs.is_empty());
    // The stand-in's figures for node 1: utilisation (11·1 + 23·I + 90) mod 101.
    let reading = local.telemetry(&snap).await.unwrap().unwrap();
    let figures: Vec<_> = reading.gpus.iter().map(|g| (g.index, g.utilisation, g.memory_used_mb)).collect();
    assert_eq!(figures, [(0, Some(0.0), Some(100)), (1, Some(23.0), Some(1123))]);
    assert_eq!(reading.gpus[0].uuid.as_deref(), Some("GPU-fd810100-0000-4000-8000-000000000000"));
    assert_eq!(reading.gpus[0].power_watts, Some(100.1));
}

#[tokio::test]
async fn forcing_nvml_without_a_driver_is_an_error_naming_the_library() {
    let m = Machine::new();
    recorded_smi(&m.bin());
    let local = backend("gpu_source = \"nvml\"\n", m.host());
    for err in [
        local.snapshot().await.unwrap_err(),
        local.telemetry(&Snapshot::default()).await.unwrap_err(),
        local.diagnose().await.unwrap_err(),
    ] {
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("NVML ({ABSENT_NVML}) not loadable: {ABSENT_NVML}: ")), "{shown}");
    }

    // This machine's own NVML, by its real name: where no driver is installed, the same
    // error; where one is, the real library read as it reports.
    let here = Host { nvml_library: nvml::LIBRARY.into(), ..m.host() };
    if nvml::probe(nvml::LIBRARY.as_ref()).is_ok() {
        this_machines_nvml_is_read_as_it_reports(backend("gpu_source = \"nvml\"\n", here)).await;
        return;
    }
    let shown = backend("gpu_source = \"nvml\"\n", here).snapshot().await.unwrap_err().to_string();
    assert!(shown.starts_with("NVML (libnvidia-ml.so.1) not loadable: libnvidia-ml.so.1"), "{shown}");
}

/// On a machine with a driver: the cluster has exactly the GPUs NVML counts, under the
/// names NVML gives them, and a reading has one sample per GPU with NVML's UUID. NVML is
/// asked directly through nvml-wrapper, not through the code under test.
async fn this_machines_nvml_is_read_as_it_reports(local: LocalBackend) {
    let direct = nvml_wrapper::Nvml::builder()
        .lib_path(nvml::LIBRARY.as_ref())
        .init()
        .unwrap_or_else(|e| panic!("{} loads here but NVML does not start: {e}", nvml::LIBRARY));
    let count = direct.device_count().expect("NVML counts its GPUs");
    let mut names = Vec::new();
    let mut uuids = Vec::new();
    for index in 0..count {
        let device = direct.device_by_index(index).expect("NVML opens each GPU it counts");
        names.push(device.name().expect("a GPU's name"));
        uuids.push(device.uuid().expect("a GPU's UUID"));
    }
    names.sort();
    uuids.sort();

    let snap = local.snapshot().await.expect("a snapshot through this machine's NVML");
    let [node] = snap.nodes.as_slice() else { panic!("one node: {:?}", snap.nodes) };
    let total: u64 = node.gpus.iter().map(|s| u64::from(s.total)).sum();
    assert_eq!(total, u64::from(count), "the GPUs NVML counts: {:?}", node.gpus);
    let mut products: Vec<String> = node.gpus.iter().filter_map(|s| s.gpu_product.clone()).collect();
    products.sort();
    products.dedup();
    let mut distinct = names.clone();
    distinct.dedup();
    assert_eq!(products, distinct, "the names NVML gives");

    let reading = local.telemetry(&snap).await.expect("a reading").expect("NVML measures");
    assert_eq!(reading.source, "nvml");
    let mut read: Vec<String> = reading.gpus.iter().map(|g| g.uuid.clone().expect("NVML's UUID")).collect();
    read.sort();
    assert_eq!(read, uuids);
    let d = local.diagnose().await.expect("doctor through NVML");
    let driver = direct.sys_driver_version().expect("NVML's driver version");
    assert_eq!(d.release.as_deref(), Some(format!("driver {driver}").as_str()));
}

#[tokio::test]
async fn without_nvml_or_nvidia_smi_the_machine_has_no_gpus_and_says_why() {
    let m = Machine::new();
    let local = backend("", m.host());
    let snap = local.snapshot().await.unwrap();
    assert_eq!(snap.nodes.len(), 1);
    assert!(snap.nodes[0].gpus.is_empty() && snap.jobs.is_empty());
    let [note] = snap.notes.as_slice() else { panic!("{:?}", snap.notes) };
    assert!(note.starts_with(&format!("no GPU found: NVML ({ABSENT_NVML}) not loadable: ")), "{note}");
    assert!(note.ends_with("; nvidia-smi not found on PATH"), "{note}");
    assert_eq!(local.telemetry(&snap).await.unwrap(), None, "nothing can measure");
    let d = local.diagnose().await.unwrap();
    assert_eq!(d.get("reads"), Some("nothing (no GPU found)"));
    assert_eq!(d.notes.as_slice(), std::slice::from_ref(note));

    // Forcing nvidia-smi instead: its absence is the cluster's error.
    let err = backend("gpu_source = \"nvidia-smi\"\n", m.host()).snapshot().await.unwrap_err();
    assert_eq!(err.to_string(), "nvidia-smi not found on PATH");
    let err = backend("nvidia_smi = \"/opt/none/nvidia-smi\"\ngpu_source = \"nvidia-smi\"\n", m.host())
        .snapshot()
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "nvidia-smi not found at /opt/none/nvidia-smi");
}

#[tokio::test]
async fn auto_takes_nvidia_smi_when_nvml_is_absent_and_doctor_says_so() {
    let m = Machine::new();
    let smi = recorded_smi(&m.bin());
    let d = backend("", m.host()).diagnose().await.unwrap();
    assert_eq!(d.get("gpu_source"), Some("auto"));
    assert_eq!(d.get("reads"), Some(format!("nvidia-smi at {}", smi.display()).as_str()));
    assert_eq!((d.get("GPUs"), d.get("GPU processes")), (Some("2"), Some("2")));
    assert_eq!(d.transport, "this machine (gpubox)");
}

/// A `nvidia-smi` that misbehaves as `body` says, forced, with a one-second timeout.
async fn broken(body: &str) -> (Result<Snapshot, BackendError>, Duration) {
    let m = Machine::new();
    let smi = script(&m.bin(), "nvidia-smi", body);
    let local = backend(
        &format!("gpu_source = \"nvidia-smi\"\nnvidia_smi = {:?}\ntimeout_seconds = 1\n", smi.to_string_lossy()),
        m.host(),
    );
    let started = Instant::now();
    let result = local.snapshot().await;
    (result, started.elapsed())
}

#[tokio::test]
async fn a_broken_nvidia_smi_says_what_went_wrong() {
    // Exit 6: it runs and finds no GPU, as on a node without one (the recorded message).
    let said = std::fs::read_to_string(fixture("no-devices.txt")).unwrap();
    let (snap, _) = broken(&format!("printf '%s' {}\nexit 6", shlex::try_quote(&said).unwrap())).await;
    let snap = snap.unwrap();
    assert!(snap.nodes[0].gpus.is_empty());
    assert_eq!(snap.notes, ["nvidia-smi found no GPU: No devices were found (exit 6)"]);

    let (err, _) = broken("echo 'garbage'").await;
    let shown = err.unwrap_err().to_string();
    assert!(shown.starts_with("cannot read the output of `"), "{shown}");
    assert!(shown.contains("/nvidia-smi '--query-gpu=index,uuid,name,"), "the command as run: {shown}");
    assert!(shown.ends_with("line 1: 1 fields, expected 8 (index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu): garbage"), "{shown}");

    let (err, _) =
        broken("echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9").await;
    let shown = err.unwrap_err().to_string();
    assert!(
        shown.ends_with(
            "failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        ),
        "{shown}"
    );

    let (err, took) = broken("exec sleep 30").await;
    let err = err.unwrap_err();
    assert!(matches!(err, BackendError::Timeout { secs: 1, .. }), "{err}");
    assert!(err.to_string().ends_with("timed out after 1 s"), "{err}");
    assert!(took < Duration::from_secs(10), "bounded by the timeout: {took:?}");

    // The process query failing leaves the GPUs, with a note.
    let gpus = quote(&fixture("h100-query-gpu.csv"));
    let (snap, _) = broken(&format!(
        "case \"$1\" in --query-gpu=*) exec cat {gpus} ;; esac\necho 'Failed to query apps' >&2\nexit 15"
    ))
    .await;
    let snap = snap.unwrap();
    assert_eq!(snap.nodes[0].gpus_total(), 2);
    assert!(snap.jobs.is_empty());
    let [note] = snap.notes.as_slice() else { panic!("{:?}", snap.notes) };
    assert!(
        note.starts_with("GPU processes unknown: `") && note.ends_with("failed (exit 15): Failed to query apps"),
        "{note}"
    );
}

#[test]
fn config_errors_name_file_line_and_key() {
    let base = "[[cluster]]\nname = \"box\"\nkind = \"local\"\n";
    let cases: &[(&str, usize, &str, &str)] = &[
        ("gpu_sorce = \"auto\"\n", 4, "gpu_sorce", "unknown key `gpu_sorce` in [[cluster]] \"box\" (expected one of:"),
        (
            "gpu_source = \"cuda\"\n",
            4,
            "gpu_source",
            "bad value for `gpu_source` in [[cluster]] \"box\": \"cuda\" (expected one of: auto, nvml, nvidia-smi)",
        ),
        ("\nnvidia_smi = \"bin/nvidia-smi\"\n", 5, "nvidia_smi", "is a relative path"),
        ("host = \"login\"\n", 4, "host", "`host` does not apply to a local cluster in [[cluster]] \"box\""),
        ("telemetry_seconds = 0\n", 4, "telemetry_seconds", "must be at least 1"),
    ];
    for (section, line, key, message) in cases {
        let err = parse(&format!("{base}{section}")).unwrap_err();
        let shown = err.to_string();
        assert_eq!((err.line(), err.key()), (Some(*line), Some(*key)), "{shown}");
        assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
        assert!(shown.contains(message), "{shown}");
    }
    let err = parse(&format!("{base}gpu_sorce = \"auto\"\n")).unwrap_err().to_string();
    assert!(err.contains(", gpu_source)"), "the local kind's key is offered: {err}");
    let err = parse("[[cluster]]\nname = \"x\"\nkind = \"gpu\"\n").unwrap_err().to_string();
    assert!(err.ends_with("(accepted kinds: slurm, kubernetes, skypilot, dstack, hub, local)"), "{err}");
}

#[test]
fn the_registry_builds_a_local_cluster_that_can_change_nothing() {
    let config = parse("[[cluster]]\nname = \"here\"\nkind = \"local\"\n").unwrap();
    let cluster = &config.clusters[0];
    assert_eq!(cluster.kind(), ClusterKind::from_static("local"));
    assert_eq!(cluster.section::<LocalConfig>(), Some(&LocalConfig::default()));
    let registry = Registry::builtin();
    let built = registry.build(cluster).unwrap();
    assert_eq!(built.name(), "here");
    assert_eq!(built.capabilities(), Default::default());
    assert_eq!(registry.capabilities(&cluster.kind()), Some(Default::default()));
}

#[test]
fn the_embedded_default_picks_up_a_gpu_box() {
    let m = Machine::new();
    let local = |host: &Host, before: Option<Found>| {
        let before = KindDiscovery {
            kind: ClusterKind::SLURM,
            discovery: Discovery { found: before.into_iter().collect(), ..Discovery::default() },
        };
        let here = KindDiscovery {
            kind: flightdeck::backend::local::config::KIND,
            discovery: flightdeck::backend::local::discover::on(host),
        };
        embedded(&[before, here])
    };
    assert!(local(&m.host(), None).is_empty(), "no GPU source: no cluster");
    recorded_smi(&m.bin());
    let found = local(&m.host(), None);
    assert_eq!(found, [ClusterConfig::new("gpubox", LocalConfig::default()).erase()]);
    // Taken names (the local Slurm's `local`) and unusable host names give the fallback.
    let slurm_local = Found {
        names: vec!["local".into()],
        why: "Slurm's squeue at /usr/bin/squeue".into(),
        active: true,
        settings: flightdeck::config::Settings::new(flightdeck::backend::slurm::SlurmConfig::default()),
        section: vec![Line::Comment("host omitted".into())],
    };
    let taken = local(&Host { hostname: "local".into(), ..m.host() }, Some(slurm_local));
    assert_eq!(taken[1].name, FALLBACK_NAME);
    let odd = local(&Host { hostname: "-".into(), ..m.host() }, None);
    assert_eq!(odd[0].name, "this-machine");

    // This machine: a local cluster exactly when one of its GPU sources is there.
    let here = Host::this_machine();
    let has_gpu_source = nvml::probe(&here.nvml_library).is_ok()
        || flightdeck::backend::local::smi::locate("nvidia-smi", &here.path).is_some();
    let config = Config::embedded_default(&Registry::builtin());
    let local = config.clusters.iter().filter(|c| c.kind() == "local").count();
    assert_eq!(local, usize::from(has_gpu_source), "{:?}", config.clusters);

    let said = looked_for_on(&m.host());
    assert!(said.contains(&format!("nvidia-smi at {}", m.bin().join("nvidia-smi").display())), "{said}");
}

#[test]
fn the_binary_runs_without_a_driver_and_does_not_link_nvml() {
    let exe = env!("CARGO_BIN_EXE_flightdeck");
    if let Ok(out) = Command::new("ldd").arg(exe).output() {
        let libs = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ldd: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!libs.contains("nvidia"), "NVML is opened at run time, never linked:\n{libs}");
        assert!(libs.contains("libc.so"), "{libs}");
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str| {
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        let out = Command::new(exe)
            .arg("--config")
            .arg(&path)
            .arg("doctor")
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains("panicked"), "{text}");
        (out.status.code(), text)
    };

    let (code, text) = run("");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("No clusters configured"), "{text}");
    // Each kind's sources in the registry's order: the GPU sources come with the local kind's.
    assert!(text.contains("\nlooked for: ") && text.contains("; NVML (libnvidia-ml.so.1) "), "{text}");
    assert!(text.contains("`flightdeck init`"), "{text}");

    let (code, text) = run("[[cluster]]\nname = \"gpus\"\nkind = \"local\"\ngpu_source = \"nvml\"\n");
    if nvml::probe(nvml::LIBRARY.as_ref()).is_ok() {
        // A driver here: doctor reads this machine's GPUs through it.
        assert_eq!(code, Some(0), "{text}");
        assert!(text.contains("gpus (local)") && text.contains("driver "), "{text}");
        assert!(!text.contains("FAILED"), "{text}");
        return;
    }
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("gpus (local)\n  FAILED: NVML (libnvidia-ml.so.1) not loadable: libnvidia-ml.so.1"),
        "{text}"
    );
}
