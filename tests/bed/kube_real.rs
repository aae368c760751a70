//! The Kubernetes scenarios against a real cluster: the one `KUBECONFIG` (else
//! `~/.kube/config`) points at, context `FLIGHTDECK_KUBE_CONTEXT` or the current one.
//! Every test is ignored by default; run them with
//!
//! ```text
//! KUBECONFIG=~/.kube/config cargo test --test bed kube_real -- --ignored --test-threads 1
//! ```
//!
//! Read-only scenarios run as soon as a cluster is reachable. Scenarios that change the
//! cluster run only when told where:
//!
//! * `FLIGHTDECK_KUBE_NODE=name`: a node the cordon scenario may cordon and uncordon;
//! * `FLIGHTDECK_KUBE_DRAIN_NODE=name`: a node the drain scenario may drain (evictions!)
//!   and return to service afterwards;
//! * `FLIGHTDECK_KUBE_NAMESPACE=ns`: where the submit scenario creates (and deletes) a Job,
//!   with `FLIGHTDECK_KUBE_IMAGE` (default `busybox:1.36`), `FLIGHTDECK_KUBE_GPUS` (default 0)
//!   and `FLIGHTDECK_KUBE_QUEUE` (a Kueue LocalQueue, optional).
//!
//! The fake-only scenarios (a dropped watch, a 410, the server going away) cannot be caused
//! on a real cluster from here; `tests/fakes/kube_scenarios.rs` covers them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use flightdeck::backend::kube::KubeConfig;
use flightdeck::backend::kube::{KubeBackend, drain::DrainOptions, gpu};
use flightdeck::backend::{Backend, JobAction, NodeAction};
use flightdeck::config::ClusterConfig;
use flightdeck::model::Snapshot;
use flightdeck::spec::JobSpec;
use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

fn config() -> ClusterConfig<KubeConfig> {
    let context = std::env::var("FLIGHTDECK_KUBE_CONTEXT").ok().filter(|c| !c.is_empty());
    ClusterConfig::new("real", KubeConfig { context, ..KubeConfig::default() }).with_timeout(Duration::from_secs(30))
}

async fn backend() -> KubeBackend {
    let b = KubeBackend::new(&config());
    if let Err(e) = b.client().await {
        panic!("no usable kubeconfig (set KUBECONFIG): {e}");
    }
    b
}

async fn snapshot(b: &KubeBackend) -> Snapshot {
    b.snapshot().await.unwrap_or_else(|e| panic!("snapshot failed: {e}"))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::test]
#[ignore = "needs a real cluster (KUBECONFIG)"]
async fn real_snapshot_and_allocation_match_a_recount() {
    let b = backend().await;
    let snap = snapshot(&b).await;
    println!(
        "{}: {} nodes, {} GPUs ({} held, {} unhealthy), {} jobs, {} queues; notes: {:?}",
        snap.release.as_deref().unwrap_or("?"),
        snap.nodes.len(),
        snap.nodes.iter().map(|n| n.gpus_total()).sum::<u32>(),
        snap.nodes.iter().map(|n| n.gpus_allocated()).sum::<u32>(),
        snap.nodes.iter().map(|n| n.gpus_unhealthy()).sum::<u32>(),
        snap.jobs.len(),
        snap.queues.len(),
        snap.notes
    );
    // The incremental tallies equal a recount of a fresh list (pods churn: a few tries).
    let client = b.client().await.unwrap();
    let pods: Api<Pod> = Api::all(client);
    let mut last = None;
    for _ in 0..5 {
        let list = pods.list(&ListParams::default()).await.expect("list pods");
        let recount = gpu::recount(&list.items);
        let tallies = b.node_tallies();
        let gpus = |m: &HashMap<Box<str>, gpu::NodeTally>| {
            let mut v: Vec<(String, u64)> = m.iter().map(|(k, t)| (k.to_string(), t.amounts.gpus())).collect();
            v.sort();
            v
        };
        if gpus(&recount) == gpus(&tallies) {
            return;
        }
        last = Some((gpus(&recount), gpus(&tallies)));
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    panic!("GPU tallies never matched a recount: {last:?}");
}

#[tokio::test]
#[ignore = "needs a real cluster (KUBECONFIG)"]
async fn real_notes_say_what_is_missing() {
    let b = backend().await;
    let snap = snapshot(&b).await;
    let d = b.diagnose().await.expect("diagnose");
    println!("{d:#?}");
    let client = b.client().await.unwrap();
    let kueue = kube::discovery::Discovery::new(client).filter(&["kueue.x-k8s.io"]).run().await;
    let has_kueue = kueue.is_ok_and(|d| d.groups().next().is_some());
    let kueue_note = snap.notes.iter().any(|n| n.contains("Kueue is not installed"));
    assert_eq!(kueue_note, !has_kueue, "a note about Kueue exactly when it is absent: {:?}", snap.notes);
}

/// Puts a node back when the test ends, whether it passed or an assertion failed midway: a
/// real cluster must not be left with a node cordoned or drained by a test. (Drop cannot
/// await, so the restore runs on a runtime of its own, with a client of its own.)
struct Restore {
    node: String,
    action: NodeAction,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let (node, action) = (self.node.clone(), self.action.clone());
        let restored = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("a runtime for the restore");
            rt.block_on(async { KubeBackend::new(&config()).node_action(&node, &action).await })
        })
        .join();
        match restored {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!("could not restore {} ({}): {e}", self.node, self.action.verb()),
            Err(_) => eprintln!("could not restore {} ({}): the restore panicked", self.node, self.action.verb()),
        }
    }
}

#[tokio::test]
#[ignore = "needs a real cluster (KUBECONFIG) and FLIGHTDECK_KUBE_NODE"]
async fn real_cordon_shows_within_one_watch_event() {
    let node = env("FLIGHTDECK_KUBE_NODE")
        .expect("FLIGHTDECK_KUBE_NODE must be set for this test (it names what the test may change)");
    let b = backend().await;
    let before = snapshot(&b).await;
    let was_cordoned = before.nodes.iter().find(|n| n.name == node).expect("the node exists").has_flag("CORDONED");
    let mut rx = b.changes().unwrap();
    rx.borrow_and_update();
    let _restore = (!was_cordoned).then(|| Restore { node: node.clone(), action: NodeAction::Uncordon });
    b.node_action(&node, &NodeAction::Cordon).await.expect("cordon");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::timeout(Duration::from_secs(30), rx.changed()).await.expect("a watch event").unwrap();
        if b.build_snapshot().nodes.iter().any(|n| n.name == node && n.has_flag("CORDONED")) {
            break;
        }
        assert!(Instant::now() < deadline, "the cordon never showed");
    }
}

#[tokio::test]
#[ignore = "needs a real cluster (KUBECONFIG) and FLIGHTDECK_KUBE_DRAIN_NODE"]
async fn real_drain_reports_what_stayed() {
    let node = env("FLIGHTDECK_KUBE_DRAIN_NODE")
        .expect("FLIGHTDECK_KUBE_DRAIN_NODE must be set for this test (it names what the test may change)");
    let b = backend().await;
    let _restore = Restore { node: node.clone(), action: NodeAction::Resume };
    let report = b.drain_node(&node, "flightdeck kube_real test", &DrainOptions::default()).await.expect("drain");
    println!("{}", report.summary());
    for (pod, why) in &report.stayed {
        assert!(!why.is_empty(), "{pod} stayed without a reason");
    }
    let snap = snapshot(&b).await;
    let n = snap.nodes.iter().find(|n| n.name == node).unwrap();
    assert!(n.has_flag("DRAIN") && n.has_flag("CORDONED"), "{:?}", n.flags);
}

#[tokio::test]
#[ignore = "needs a real cluster (KUBECONFIG) and FLIGHTDECK_KUBE_NAMESPACE"]
async fn real_submit_creates_the_job_the_spec_describes() {
    let namespace = env("FLIGHTDECK_KUBE_NAMESPACE")
        .expect("FLIGHTDECK_KUBE_NAMESPACE must be set for this test (it names what the test may change)");
    let mut cfg = config();
    cfg.settings.namespaces = vec![namespace.clone()];
    cfg.settings.queue = env("FLIGHTDECK_KUBE_QUEUE");
    let b = KubeBackend::new(&cfg);
    let spec = JobSpec {
        name: "flightdeck-kube-real".into(),
        command: Some("echo hello from flightdeck; sleep 5".into()),
        image: Some(env("FLIGHTDECK_KUBE_IMAGE").unwrap_or_else(|| "busybox:1.36".into())),
        gpus: env("FLIGHTDECK_KUBE_GPUS").and_then(|g| g.parse().ok()).unwrap_or(0),
        cpus: Some(1),
        memory: Some("128M".into()),
        time_limit: Some("10m".into()),
        env: [("GREETING".to_string(), "hi".to_string())].into(),
        ..JobSpec::default()
    };
    let job_ref = b.submit(&spec).await.expect("submit");
    let (ns, name) = job_ref.id.split_once(':').unwrap();
    let jobs: Api<KJob> = Api::namespaced(b.client().await.unwrap(), ns);
    let created = jobs.get(name).await.expect("the Job exists");
    let job_spec = created.spec.as_ref().unwrap();
    assert_eq!(job_spec.active_deadline_seconds, Some(600));
    let queue_label = created.metadata.labels.as_ref().and_then(|l| l.get("kueue.x-k8s.io/queue-name")).cloned();
    assert_eq!(queue_label, cfg.settings.queue);
    let c = &job_spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.command.as_deref(), Some(&["/bin/sh".to_string(), "-c".into(), spec.command.clone().unwrap()][..]));
    assert_eq!(c.image, spec.image);
    // It shows up through the watches.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !b.snapshot().await.is_ok_and(|s| s.jobs.iter().any(|j| j.job_ref == job_ref)) {
        assert!(Instant::now() < deadline, "the job never showed");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    b.job_action(&job_ref, JobAction::Cancel).await.expect("cancel");
}
