//! The watch caches hold only what is read (`backend::kube::trim`): every fixture object, made
//! as heavy as a real one (managedFields, env, volumes, a last-applied annotation), maps to
//! the same jobs, nodes, GPU tallies and Kueue facts trimmed as whole; and what the backend
//! caches from the fake has lost those fields.

use crate::kube_fake;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use flightdeck::backend::Backend;
use flightdeck::backend::kube::trim::Trim;
use flightdeck::backend::kube::{KubeBackend, KubeConfig, gpu, kueue, map};
use flightdeck::config::ClusterConfig;
use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::core::DynamicObject;
use kube_fake::{FakeApi, fixtures};
use serde_json::{Value, json};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What a real server adds that nothing reads: managedFields, a last-applied copy, env on
/// every container, a lastState on every container status.
fn heavy(mut obj: Value) -> Value {
    let copy = obj.to_string();
    let meta = &mut obj["metadata"];
    meta["managedFields"] = json!([{"manager": "kubectl-client-side-apply", "operation": "Update",
        "apiVersion": "v1", "time": fixtures::T_CREATED, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {"f:containers": {}}}}]);
    if !meta["annotations"].is_object() {
        meta["annotations"] = json!({});
    }
    meta["annotations"][LAST_APPLIED] = json!(copy);
    let spec = if obj["kind"] == "Job" { &mut obj["spec"]["template"]["spec"] } else { &mut obj["spec"] };
    for key in ["containers", "initContainers"] {
        for c in spec[key].as_array_mut().into_iter().flatten() {
            c["env"] = json!([{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "HF_HOME", "value": "/cache/hf"}]);
        }
    }
    for c in obj["status"]["containerStatuses"].as_array_mut().into_iter().flatten() {
        c["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error", "containerID": "containerd://0"}});
    }
    obj
}

fn heavy_cluster() -> Vec<Value> {
    fixtures::standard_cluster().into_iter().map(heavy).collect()
}

fn of_kind<T: serde::de::DeserializeOwned>(objs: &[Value], kind: &str) -> Vec<T> {
    objs.iter().filter(|o| o["kind"] == kind).map(|o| serde_json::from_value(o.clone()).unwrap()).collect()
}

fn trimmed<T: Trim + Clone>(objs: &[T]) -> Vec<T> {
    objs.iter()
        .cloned()
        .map(|mut o| {
            o.trim();
            o
        })
        .collect()
}

/// The lookups a snapshot makes, from the fixture nodes and scheduling events.
struct Fixtures {
    labels: HashMap<String, BTreeMap<String, String>>,
    failed: HashMap<(String, String), String>,
}

impl map::Lookup for Fixtures {
    fn failed_scheduling(&self, namespace: &str, pod: &str) -> Option<&str> {
        self.failed.get(&(namespace.to_string(), pod.to_string())).map(String::as_str)
    }
    fn node_labels(&self, node: &str) -> Option<&BTreeMap<String, String>> {
        self.labels.get(node)
    }
    fn cluster_queue_of(&self, _: &str, _: &str) -> Option<&str> {
        Some("gpu-cluster-queue")
    }
}

#[test]
fn trimmed_objects_map_to_the_same_jobs_nodes_and_tallies() {
    let objs = heavy_cluster();
    let pods: Vec<Pod> = of_kind(&objs, "Pod");
    let nodes: Vec<Node> = of_kind(&objs, "Node");
    let jobs: Vec<KJob> = of_kind(&objs, "Job");
    let workloads: Vec<DynamicObject> = of_kind(&objs, "Workload");
    let queues: Vec<DynamicObject> = of_kind(&objs, "LocalQueue");
    assert!(pods.len() > 15 && nodes.len() == 7 && jobs.len() == 2 && workloads.len() == 2, "the standard cluster");
    let (tpods, tnodes, tjobs) = (trimmed(&pods), trimmed(&nodes), trimmed(&jobs));

    let lookup = Fixtures {
        labels: nodes
            .iter()
            .map(|n| (n.metadata.name.clone().unwrap(), n.metadata.labels.clone().unwrap_or_default()))
            .collect(),
        failed: [(("research".into(), "big-train-pending".into()), fixtures::UNSCHEDULABLE_MESSAGE.into())].into(),
    };
    for (whole, cut) in pods.iter().zip(&tpods) {
        let name = whole.metadata.name.as_deref().unwrap();
        assert_eq!(map::bare_pod("k", whole, &lookup), map::bare_pod("k", cut, &lookup), "pod {name}");
        assert_eq!(gpu::pod_charge(whole), gpu::pod_charge(cut), "pod {name}");
        assert_eq!(map::pod_pending_reason(whole, None), map::pod_pending_reason(cut, None), "pod {name}");
    }
    let tallies = gpu::recount(&pods);
    assert_eq!(tallies, gpu::recount(&tpods), "GPU tallies per node");
    assert!(tallies.values().any(|t| t != &gpu::NodeTally::default()), "the fixtures hold GPUs");
    for (whole, cut) in nodes.iter().zip(&tnodes) {
        let tally = tallies.get(whole.metadata.name.as_deref().unwrap());
        assert_eq!(map::node("k", whole, tally), map::node("k", cut, tally));
    }
    for (whole, cut) in jobs.iter().zip(&tjobs) {
        let owned = |ps: &[Pod]| -> Vec<Pod> {
            let name = whole.metadata.name.as_deref();
            ps.iter().filter(|p| map::owning_job(p).map(|(_, j)| j) == name).cloned().collect()
        };
        let (a, b) = (owned(&pods), owned(&tpods));
        let (a, b): (Vec<&Pod>, Vec<&Pod>) = (a.iter().collect(), b.iter().collect());
        assert_eq!(map::batch_job("k", whole, &a, None, &lookup), map::batch_job("k", cut, &b, None, &lookup));
    }
    for w in &workloads {
        let mut cut = w.clone();
        cut.trim();
        assert_eq!(kueue::WorkloadInfo::from_object(w), kueue::WorkloadInfo::from_object(&cut));
    }
    for q in &queues {
        let mut cut = q.clone();
        cut.trim();
        assert_eq!(kueue::LocalQueueInfo::from_object(q), kueue::LocalQueueInfo::from_object(&cut));
    }
}

#[tokio::test]
async fn the_cache_holds_no_managed_fields_env_or_volumes_and_the_picture_is_unchanged() {
    let plain = FakeApi::start_blocking();
    plain.put_all(fixtures::standard_cluster());
    let fat = FakeApi::start_blocking();
    fat.put_all(heavy_cluster());
    let served = fat.list("v1", "Pod");
    assert!(
        served.iter().all(|p| p["metadata"]["managedFields"].is_array() && p["spec"]["volumes"].is_array()),
        "the fake serves what a real server does"
    );
    let dir = tempfile::tempdir().unwrap();
    let backend = |fake: &FakeApi, file: &str| {
        let cfg =
            ClusterConfig::new("k8s", KubeConfig::context_of(fake.kubeconfig(&dir.path().join(file), "fake"), "fake"))
                .with_timeout(Duration::from_secs(5));
        KubeBackend::new(&cfg)
    };
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let (a, b) = (backend(&plain, "a"), backend(&fat, "b"));
    let (mut sa, mut sb) = (a.snapshot().await.unwrap(), b.snapshot().await.unwrap());
    (sa.taken_at, sb.taken_at) = (None, None);
    assert_eq!(sa.jobs, sb.jobs, "the jobs of a heavy cluster are those of a plain one");
    assert_eq!(sa.nodes, sb.nodes);

    let (pods, nodes) = b.cached();
    assert_eq!(pods.len(), served.len());
    for p in &pods {
        let name = p.metadata.name.as_deref().unwrap_or("");
        assert!(p.metadata.managed_fields.is_none(), "{name}: managedFields");
        assert!(!p.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(LAST_APPLIED)), "{name}");
        let spec = p.spec.as_ref().unwrap();
        assert!(spec.volumes.is_none() && spec.tolerations.is_none(), "{name}: volumes");
        assert!(spec.containers.iter().all(|c| c.env.is_none() && c.image.is_none()), "{name}: env");
        let statuses = p.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        assert!(statuses.into_iter().flatten().all(|c| c.image_id.is_empty()), "{name}: image digests");
    }
    assert!(nodes.iter().all(|n| n.metadata.managed_fields.is_none()));
}

/// The fake serving 10,000 heavy GPU pods on 1,000 nodes, a config naming it as cluster
/// `k8s`, and the bytes one pod takes on the wire (issue #29's scale).
struct TenThousandPods {
    _fake: FakeApi,
    dir: tempfile::TempDir,
    config: std::path::PathBuf,
    wire_per_pod: usize,
}

fn ten_thousand_pods() -> TenThousandPods {
    let fake = FakeApi::start_blocking();
    let namespaces = ["train", "research", "inference", "notebooks"];
    let mut objs: Vec<Value> = namespaces.iter().map(|ns| fixtures::namespace(ns)).collect();
    objs.extend((0..1_000).map(|n| heavy(fixtures::node_h100(&format!("gpu-{n:04}")))));
    let pods: Vec<Value> = (0..10_000)
        .map(|i| {
            let node = format!("gpu-{:04}", i % 1_000);
            let name = format!("train-{:05}-worker", i);
            heavy(fixtures::gpu_pod(namespaces[i % 4], &name, Some(&node), "nvidia.com/gpu", 1))
        })
        .collect();
    let wire: usize = pods.iter().map(|p| p.to_string().len()).sum();
    objs.extend(pods);
    fake.put_all(objs);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\ntimeout_seconds = 60\n",
            kubeconfig.display()
        ),
    )
    .unwrap();
    TenThousandPods { _fake: fake, dir, config, wire_per_pod: wire / 10_000 }
}

/// FLIGHTDECK_BIN: the release binary (`scripts/scale-figures.sh kube`), else this build's.
fn flightdeck_bin() -> String {
    std::env::var("FLIGHTDECK_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_flightdeck").to_string())
}

/// `flightdeck jobs --output json` against 10,000 heavy GPU pods on 1,000 nodes: the peak
/// resident set (`/usr/bin/time -f %M`) printed for the record (issue #29's figure; measured,
/// not asserted: a figure of the build, not a behaviour). Run by hand:
/// `cargo test --test fakes kube_trim::ten_thousand_pods -- --ignored --nocapture`.
#[test]
#[ignore]
fn ten_thousand_pods_jobs_peak() {
    let scale = ten_thousand_pods();
    let dir = scale.dir.path();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M", &flightdeck_bin(), "jobs", "--output", "json"])
        .env("FLIGHTDECK_CONFIG", &scale.config)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_CACHE_HOME", dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let peak_kb: u64 = stderr.lines().last().and_then(|l| l.trim().parse().ok()).expect("a peak from /usr/bin/time");
    println!(
        "flightdeck jobs --output json: 10,000 pods ({} B each on the wire) on 1,000 nodes: peak {} MB, {} B of JSON out",
        scale.wire_per_pod,
        peak_kb / 1024,
        out.stdout.len()
    );
}

/// A `/proc/PID/status` figure in kB (`VmHWM`, `VmRSS`).
fn proc_status_kb(pid: &str, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The cockpit over the same 10,000 pods in a 160×48 tmux pane: once the cluster is
/// connected (the watches listed, the rows built), the jobs screen for 30 s; then its peak
/// and resident memory from `/proc/PID/status`, printed for the record like the `jobs`
/// figure. Needs tmux. Run by hand:
/// `cargo test --test fakes kube_trim::ten_thousand_pods_cockpit -- --ignored --nocapture`.
#[test]
#[ignore]
fn ten_thousand_pods_cockpit_peak() {
    let scale = ten_thousand_pods();
    let dir = scale.dir.path().display().to_string();
    let session = format!("fd-kube-scale-{}", std::process::id());
    let command = format!(
        "exec env FLIGHTDECK_CONFIG='{}' HOME='{dir}' XDG_CONFIG_HOME='{dir}' XDG_STATE_HOME='{dir}' XDG_CACHE_HOME='{dir}' '{}'",
        scale.config.display(),
        flightdeck_bin()
    );
    let tmux = |args: &[&str]| std::process::Command::new("tmux").args(["-L", &session]).args(args).output().unwrap();
    let screen = || String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &session]).stdout).to_string();
    let started = tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "48", &command]);
    assert!(started.status.success(), "tmux: {}", String::from_utf8_lossy(&started.stderr));
    let pid = String::from_utf8_lossy(&tmux(&["display-message", "-p", "-t", &session, "#{pane_pid}"]).stdout)
        .trim()
        .to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    // Drawn, and the cluster no longer connecting.
    let connected = |s: &str| s.contains("1 cluster") && !s.contains("connecting");
    while !connected(&screen()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
    }
    tmux(&["send-keys", "-t", &session, "2"]);
    std::thread::sleep(Duration::from_secs(30));
    let figures = (proc_status_kb(&pid, "VmHWM:"), proc_status_kb(&pid, "VmRSS:"));
    let shown = screen();
    tmux(&["kill-server"]);
    let (Some(peak_kb), Some(rss_kb)) = figures else { panic!("the cockpit (pid {pid}) ended early:\n{shown}") };
    assert!(shown.contains("train-0"), "the jobs screen shows the pods:\n{shown}");
    println!(
        "cockpit, 10,000 pods ({} B each on the wire) on 1,000 nodes, jobs screen 30 s: peak {} MB, resident {} MB",
        scale.wire_per_pod,
        peak_kb / 1024,
        rss_kb / 1024
    );
}
