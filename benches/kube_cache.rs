//! The Kubernetes pod cache at scale: 10,000 pods on 1,000 nodes, each shaped like what a
//! real API server sends (managedFields, a last-applied annotation, env, volumes,
//! tolerations, IPs, container statuses with image digests: about 3.8 KB of JSON), listed in
//! pages of 500 as kube-runtime's watcher does, into a reflector store, then one watch event.
//!
//! Printed before criterion runs, for the store as kept before (`whole`: only managedFields
//! dropped, as the watcher did until issue #29) and now (`trimmed`: `backend::kube::trim`):
//! the peak heap while listing and the heap the store keeps afterwards, counted by a wrapper
//! around the binary's allocator (mimalloc, as `src/main.rs`). Goal (issue #29): the whole
//! `flightdeck jobs` run under 120 MB peak at 10,000 pods.
//!
//! Criterion then times `trim/one_pod` (the cost the watcher adds per object).
//!
//! Under `cargo test --all-targets` (no `--bench`) the binary only checks, on 200 pods, that
//! a trimmed pod maps to the same job as the whole one and that the trimmed store is smaller.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::Criterion;
use flightdeck::backend::kube::map::{self, Lookup};
use flightdeck::backend::kube::trim::Trim;
use k8s_openapi::api::core::v1::Pod;
use kube::core::ObjectList;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

/// Live and peak heap bytes, counted around mimalloc.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed straight to mimalloc; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract is the allocator's.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: as above.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const PODS: usize = 10_000;
const NODES: usize = 1_000;
/// kube-runtime's watcher lists in pages of 500.
const PAGE: usize = 500;

/// One pod as a real server sends it.
fn pod(i: usize) -> Value {
    let node = format!("gpu-node-{:04}", i % NODES);
    let (ns, job) = (format!("team-{}", i % 12), format!("train-{}", i / 8));
    let name = format!("{job}-worker-{}-{:05x}", i % 8, i * 7919 % 0xfffff);
    let uid = format!("{:08x}-1111-4222-8333-{:012x}", i, i * 31);
    let env: Vec<Value> = [
        ("NCCL_DEBUG", "INFO"),
        ("NCCL_IB_HCA", "mlx5_0,mlx5_1,mlx5_2,mlx5_3"),
        ("MASTER_ADDR", "train-master-0.train.svc.cluster.local"),
        ("MASTER_PORT", "23456"),
        ("WORLD_SIZE", "64"),
        ("HF_HOME", "/cache/huggingface"),
        ("PYTHONUNBUFFERED", "1"),
        ("WANDB_PROJECT", "llm-pretrain"),
    ]
    .iter()
    .map(|(k, v)| json!({"name": k, "value": v}))
    .chain([json!({"name": "RANK", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['rank']"}}})])
    .collect();
    let image = "nvcr.io/nvidia/pytorch:25.01-py3";
    let conditions: Vec<Value> = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .map(|t| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-05-01T09:01:12Z"}))
    .collect();
    json!({
        "metadata": {
            "name": name, "namespace": ns, "uid": uid, "resourceVersion": (100_000 + i).to_string(),
            "creationTimestamp": "2026-05-01T09:00:00Z", "generateName": format!("{job}-worker-"),
            "labels": {"job-name": job, "batch.kubernetes.io/job-name": job, "controller-uid": uid,
                "kueue.x-k8s.io/queue-name": "team-queue", "rank": (i % 8).to_string()},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\"}",
                "flightdeck.io/submitted-by": "alice"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": format!("job-{uid}"),
                "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-05-01T09:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:job-name": {}, "f:controller-uid": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"NCCL_DEBUG\"}": {".": {}, "f:name": {}, "f:value": {}}},
                        "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {".": {}, "f:nvidia.com/gpu": {}}}}},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-05-01T09:01:00Z", "subresource": "status",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "nodeName": node, "restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {}, "schedulerName": "default-scheduler",
            "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "containers": [{
                "name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["torchrun", "--nproc-per-node=8", "train.py"], "env": env, "workingDir": "/workspace",
                "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1600Gi"},
                              "requests": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1600Gi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "cache", "mountPath": "/cache"},
                    {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
            }],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                {"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache"}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]}}
            ]
        },
        "status": {
            "phase": "Running", "qosClass": "Guaranteed", "startTime": "2026-05-01T09:00:05Z",
            "hostIP": "10.0.12.36", "hostIPs": [{"ip": "10.0.12.36"}], "podIP": "10.244.3.17", "podIPs": [{"ip": "10.244.3.17"}],
            "conditions": conditions,
            "containerStatuses": [{
                "name": "main", "image": image, "imageID": format!("{image}@sha256:{:064x}", 7),
                "containerID": format!("containerd://{:064x}", i), "ready": true, "started": true, "restartCount": 1,
                "state": {"running": {"startedAt": "2026-05-01T09:01:12Z"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-05-01T09:00:10Z",
                    "finishedAt": "2026-05-01T09:01:00Z", "containerID": format!("containerd://{:064x}", i + 1)}},
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "cache", "mountPath": "/cache"}]
            }]
        }
    })
}

/// The list answers, one JSON body per page, as the server sends them.
fn pages(pods: usize) -> Vec<Vec<u8>> {
    (0..pods.div_ceil(PAGE))
        .map(|p| {
            let items: Vec<Value> = (p * PAGE..((p + 1) * PAGE).min(pods)).map(pod).collect();
            serde_json::to_vec(
                &json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
            .unwrap()
        })
        .collect()
}

/// The watcher's work for one list and one event: decode each page, cut each pod (`whole`:
/// managedFields only), apply it to the store; then a modified pod.
fn fill(pages: &[Vec<u8>], trim: bool) -> Writer<Pod> {
    let cut = |p: &mut Pod| {
        if trim {
            p.trim();
        } else {
            p.metadata.managed_fields = None;
        }
    };
    let mut w: Writer<Pod> = Writer::default();
    w.apply_watcher_event(&Event::Init);
    for body in pages {
        let list: ObjectList<Pod> = serde_json::from_slice(body).unwrap();
        for mut p in list.items {
            cut(&mut p);
            w.apply_watcher_event(&Event::InitApply(p));
        }
    }
    w.apply_watcher_event(&Event::InitDone);
    let mut changed: Pod = serde_json::from_value(pod(3)).unwrap();
    changed.status.as_mut().unwrap().phase = Some("Succeeded".into());
    cut(&mut changed);
    w.apply_watcher_event(&Event::Apply(changed));
    w
}

/// `(peak above the start, kept after)` in bytes, for [`fill`].
fn measure(pages: &[Vec<u8>], trim: bool) -> (usize, usize, Writer<Pod>) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let w = fill(pages, trim);
    (PEAK.load(Ordering::Relaxed) - base, LIVE.load(Ordering::Relaxed).saturating_sub(base), w)
}

struct H100;

impl Lookup for H100 {
    fn failed_scheduling(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
    fn node_labels(&self, _: &str) -> Option<&BTreeMap<String, String>> {
        static LABELS: std::sync::LazyLock<BTreeMap<String, String>> = std::sync::LazyLock::new(|| {
            [("nvidia.com/gpu.product".to_string(), "NVIDIA-H100-80GB-HBM3".to_string())].into()
        });
        Some(&LABELS)
    }
    fn cluster_queue_of(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
}

fn mb(b: usize) -> f64 {
    b as f64 / 1e6
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let n = if bench { PODS } else { 200 };
    let pages = pages(n);
    let wire: usize = pages.iter().map(Vec::len).sum();
    let (whole_peak, whole_kept, whole) = measure(&pages, false);
    let (trim_peak, trim_kept, trimmed) = measure(&pages, true);
    let (a, b) = (whole.as_reader(), trimmed.as_reader());
    assert_eq!((a.len(), b.len()), (n, n), "every pod in both stores");
    for p in a.state().iter().take(50) {
        let t = b.get(&kube::runtime::reflector::ObjectRef::from_obj(p.as_ref())).expect("the same pod trimmed");
        assert_eq!(map::bare_pod("k", p, &H100), map::bare_pod("k", &t, &H100), "a trimmed pod maps alike");
        assert!(t.metadata.managed_fields.is_none() && t.spec.as_ref().unwrap().containers[0].env.is_none());
    }
    assert!(trim_kept * 2 < whole_kept, "the trimmed store is a fraction of the whole: {trim_kept} vs {whole_kept}");
    if !bench {
        println!("kube_cache bench: inputs check out (run `cargo bench --bench kube_cache` to measure)");
        return;
    }
    println!(
        "kube_cache: {n} pods on {NODES} nodes, {:.0} B each on the wire ({:.1} MB in {} pages)",
        wire as f64 / n as f64,
        mb(wire),
        pages.len()
    );
    println!(
        "  whole   (managedFields dropped only): list + event peak {:6.1} MB, store keeps {:6.1} MB",
        mb(whole_peak),
        mb(whole_kept)
    );
    println!(
        "  trimmed (backend::kube::trim):        list + event peak {:6.1} MB, store keeps {:6.1} MB",
        mb(trim_peak),
        mb(trim_kept)
    );
    drop((a, b, whole, trimmed));

    let one: Pod = serde_json::from_value(pod(42)).unwrap();
    let mut crit = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    crit.bench_function("kube_cache/trim_one_pod", |bch| {
        bch.iter_batched(
            || one.clone(),
            |mut p| {
                p.trim();
                black_box(p)
            },
            criterion::BatchSize::SmallInput,
        )
    });
    crit.final_summary();
}
