//! Kubernetes AI workloads as jobs, against the wire-protocol fake (`tests/kube_fake`) with
//! objects shaped like the projects' own (`tests/kube_fake/workloads.rs`): every GPU pod
//! grouped under its top owner; states from each kind's own status; pending reasons from
//! Kueue, the Volcano gang or the first unplaced pod; Volcano Queues beside the others;
//! cancel, hold and release on the workload object; absent CRDs reduced to a note.

use crate::kube_fake;

use std::time::{Duration, Instant};

use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::backend::{Backend, BackendError, JobAction};
use flightdeck::config::ClusterConfig;
use flightdeck::model::{Job, JobRef, JobState, Snapshot};
use kube_fake::{FakeApi, workloads};
use serde_json::json;

struct Setup {
    fake: FakeApi,
    cfg: ClusterConfig<KubeConfig>,
    _dir: tempfile::TempDir,
}

fn setup(with_crds: bool) -> Setup {
    let fake = FakeApi::start_blocking();
    if with_crds {
        workloads::serve_crds(&fake);
    }
    fake.put_all(
        workloads::cluster()
            .into_iter()
            .filter(|o| with_crds || o["apiVersion"] == "v1" || o["apiVersion"] == "batch/v1"),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = ClusterConfig::new("k8s", KubeConfig::context_of(fake.kubeconfig(dir.path(), "fake"), "fake"))
        .with_timeout(Duration::from_secs(5))
        .with_refresh(Duration::from_millis(200));
    Setup { fake, cfg, _dir: dir }
}

/// A snapshot once every watch has listed (the workload kinds are not required ones).
async fn synced_snapshot(b: &KubeBackend) -> Snapshot {
    b.start().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let h = b.watches();
        if !h.is_empty() && h.values().all(|w| w.synced || w.disabled) {
            break;
        }
        assert!(Instant::now() < deadline, "the watches did not sync: {h:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.snapshot().await.unwrap_or_else(|e| panic!("snapshot failed: {e}"))
}

async fn until_snapshot(b: &KubeBackend, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = b.snapshot().await.unwrap();
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; jobs {:?}", ids(&s));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

fn ids(s: &Snapshot) -> Vec<&str> {
    s.jobs.iter().map(|j| j.job_ref.id.as_str()).collect()
}

fn job<'a>(s: &'a Snapshot, id: &str) -> &'a Job {
    s.jobs.iter().find(|j| j.job_ref.id == id).unwrap_or_else(|| panic!("no job {id} in {:?}", ids(s)))
}

fn pod_names(j: &Job) -> Vec<&str> {
    j.workload.as_ref().expect("a workload").pods.iter().map(|p| p.name.as_str()).collect()
}

#[tokio::test]
async fn every_gpu_pod_is_grouped_under_its_top_owner() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let mut got = ids(&snap);
    got.sort();
    assert_eq!(
        got,
        vec![
            "inference:leaderworkerset:vllm-70b",
            "inference:rayservice:serve",
            "ml:appwrapper:aw-1",
            "ml:jaxjob:jax",
            "ml:jobset:big-sweep",
            "ml:jobset:later",
            "ml:jobset:sweep",
            "ml:mpijob:allreduce",
            "ml:paddlejob:paddle",
            "ml:pytorchjob:llama-ft",
            "ml:rayjob:bad-tune",
            "ml:rayjob:tune",
            "ml:trainjob:ft-trainer",
            "ml:xgboostjob:xgb",
            "research:vcjob:dist-train",
        ],
        "one job per top owner: no loose pods, no JobSet-owned Jobs, no RayCluster beside its RayJob"
    );

    let pt = job(&snap, "ml:pytorchjob:llama-ft");
    let w = pt.workload.as_ref().unwrap();
    assert_eq!((w.kind.as_str(), w.api_version.as_str()), ("PyTorchJob", "kubeflow.org/v1"));
    assert_eq!((pt.state, pt.native_state.as_str()), (JobState::Running, "Running"));
    assert_eq!((pt.gpus_requested, pt.gpus_allocated, pt.gpu_model.as_deref()), (32, 32, Some("h100")));
    assert_eq!((w.replicas_ready, w.replicas_total), (4, 4));
    let groups: Vec<(&str, u32, u32, Option<u32>)> =
        w.groups.iter().map(|g| (g.name.as_str(), g.replicas, g.gpus_per_replica, g.ready)).collect();
    assert_eq!(groups, vec![("Master", 1, 8, Some(1)), ("Worker", 3, 8, Some(3))]);
    assert_eq!(pt.nodes, vec!["wl-1", "wl-2", "wl-3", "wl-4"]);
    assert_eq!(pod_names(pt), vec!["llama-ft-master-0", "llama-ft-worker-0", "llama-ft-worker-1", "llama-ft-worker-2"]);
    assert_eq!(w.pods[0].role.as_deref(), Some("master"));
    assert_eq!(pt.stdout.as_ref().map(|h| h.as_str()), Some("pod/ml/llama-ft-master-0/main"), "the master's log first");
    assert_eq!(w.suspend.as_deref(), Some("spec.runPolicy.suspend"));

    // JobSet: its Jobs' pods, two levels down; running although one pod still waits.
    let js = job(&snap, "ml:jobset:sweep");
    assert_eq!((js.state, js.gpus_requested, js.gpus_allocated), (JobState::Running, 8, 6));
    assert_eq!(js.workload.as_ref().unwrap().pods.len(), 4);
    assert_eq!(js.workload.as_ref().unwrap().groups[0].ready, Some(2), "1 ready Job × 2 pods");

    // RayJob: its RayCluster's head and workers, and the submitter Job's pod.
    let rj = job(&snap, "ml:rayjob:tune");
    assert_eq!((rj.state, rj.native_state.as_str()), (JobState::Running, "Running,RUNNING"));
    assert_eq!((rj.gpus_requested, rj.gpus_allocated), (2, 2));
    let rw = rj.workload.as_ref().unwrap();
    let groups: Vec<(&str, u32, u32)> =
        rw.groups.iter().map(|g| (g.name.as_str(), g.replicas, g.gpus_per_replica)).collect();
    assert_eq!(groups, vec![("head", 1, 0), ("gpu-workers", 2, 1)]);
    assert_eq!(rw.pods.len(), 4);
    assert!(rw.pods.iter().any(|p| p.name == "tune-5vxm2-p2d4f"), "the submitter's pod is the RayJob's");

    // LeaderWorkerSet: pods of three StatefulSets, grouped by the set's label; ready in groups.
    let lws = job(&snap, "inference:leaderworkerset:vllm-70b");
    let lw = lws.workload.as_ref().unwrap();
    assert_eq!((lws.state, lws.gpus_requested, lws.gpus_allocated), (JobState::Running, 4, 4));
    assert_eq!((lw.replicas_ready, lw.replicas_total, lw.pods.len()), (2, 2, 4));
    assert_eq!(lw.suspend, None, "a LeaderWorkerSet cannot be held");

    // TrainJob → JobSet → Job → pods: three levels.
    let tj = job(&snap, "ml:trainjob:ft-trainer");
    assert_eq!((tj.state, tj.gpus_requested), (JobState::Pending, 8));
    assert_eq!(tj.workload.as_ref().unwrap().pods.len(), 2);

    // An owner flightdeck does not know still groups, with a state from its pods.
    let aw = job(&snap, "ml:appwrapper:aw-1");
    let aww = aw.workload.as_ref().unwrap();
    assert_eq!((aw.state, aw.native_state.as_str(), aw.gpus_allocated), (JobState::Running, "1 Running", 2));
    assert_eq!((aww.kind.as_str(), aww.cancel), ("AppWrapper", false));
}

#[tokio::test]
async fn states_come_from_each_kinds_own_status() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let later = job(&snap, "ml:jobset:later");
    assert_eq!((later.state, later.native_state.as_str(), later.gpus_requested), (JobState::Held, "Suspended", 32));
    let bad = job(&snap, "ml:rayjob:bad-tune");
    assert_eq!((bad.state, bad.native_state.as_str()), (JobState::Failed, "Failed,FAILED"));
    assert_eq!(bad.reason.as_deref(), Some("Job entrypoint command failed with exit code 1"));
    assert!(bad.end_time.is_some());
    let mpi = job(&snap, "ml:mpijob:allreduce");
    assert_eq!((mpi.state, mpi.gpus_requested), (JobState::Completed, 8));
    assert_eq!(mpi.exit.map(|e| e.code), Some(0));
    let groups: Vec<&str> = mpi.workload.as_ref().unwrap().groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(groups, vec!["Launcher", "Worker"], "the launcher first");

    // A pod event moves the workload: the last JobSet pod placed → all four running.
    let mut pod = s.fake.get("v1", "Pod", Some("ml"), "sweep-workers-1-1-x7k2p").unwrap();
    pod["spec"]["nodeName"] = json!("wl-6");
    pod["status"]["phase"] = json!("Running");
    s.fake.put(pod);
    let snap = until_snapshot(&b, "the JobSet's fourth pod", |s| job(s, "ml:jobset:sweep").gpus_allocated == 8).await;
    assert_eq!(job(&snap, "ml:jobset:sweep").nodes, vec!["wl-5", "wl-6"]);
}

#[tokio::test]
async fn pending_reasons_name_the_gang_or_the_first_unplaced_pod() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let vj = job(&snap, "research:vcjob:dist-train");
    assert_eq!((vj.state, vj.partition.as_str(), vj.gpus_requested), (JobState::Pending, "research", 32));
    // The REASON column says it in words, from the nodes as they are now; Volcano's own
    // words follow.
    let room: u32 =
        snap.nodes.iter().map(|n| n.gpus.iter().map(|g| g.total - g.allocated - g.unhealthy).sum::<u32>() / 8).sum();
    let takers = snap
        .nodes
        .iter()
        .filter(|n| n.gpus.iter().map(|g| g.total - g.allocated - g.unhealthy).sum::<u32>() >= 8)
        .count();
    let nodes_word = if takers == 1 { "node" } else { "nodes" };
    assert_eq!(
        vj.reason.as_deref(),
        Some(
            format!(
                "gang of 4 pods of 8 GPUs waits: {takers} {nodes_word} can take one (Volcano NotEnoughResources: 4/4 tasks in gang \
                 unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable)"
            )
            .as_str()
        )
    );
    // `why` says how many pods the gang needs and how many the nodes could place now.
    let why = flightdeck::fleet::why::why(&snap, vj);
    let gang = &why.evidence[0];
    assert!(gang.starts_with("gang of 4 pods of 8 GPUs waits: "), "{gang}");
    assert!(gang.contains(&format!("room for {} of the 4 it still needs", room.min(4))), "{gang} (room for {room})");
    assert_eq!(why.outlook, Some("waits"));
    let big = job(&snap, "ml:jobset:big-sweep");
    assert_eq!(big.state, JobState::Pending);
    assert_eq!(
        big.reason.as_deref(),
        Some("Unschedulable: 0/6 nodes are available: 6 Insufficient nvidia.com/gpu (pod big-sweep-node-0-0-q9w8e)")
    );
    let tj = job(&snap, "ml:trainjob:ft-trainer");
    assert_eq!(tj.reason.as_deref(), Some("Unschedulable (pod ft-trainer-node-0-0-m3n4b)"));
    // Each pod says its own.
    let pods = &big.workload.as_ref().unwrap().pods;
    assert!(pods.iter().all(|p| p.state == JobState::Pending && p.node.is_none()), "{pods:?}");
}

#[tokio::test]
async fn volcano_queues_stand_beside_the_others() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let q = snap.queues.iter().find(|q| q.name == "research").expect("queue research");
    assert_eq!((q.gpus_total, q.gpus_allocated, q.gpus_unavailable), (16, 8, 0));
    assert_eq!((q.workloads_pending, q.workloads_admitted), (1, 1));
    let quota = &q.quota[0];
    assert_eq!(
        (quota.resource.as_str(), quota.nominal_milli, quota.borrowing_limit_milli, quota.used_milli),
        ("nvidia.com/gpu", 8_000, Some(8_000), 8_000)
    );
    let closed = snap.queues.iter().find(|q| q.name == "closed").expect("queue closed");
    assert_eq!((closed.gpus_total, closed.gpus_unavailable), (4, 4), "a closed queue takes nothing");
}

#[tokio::test]
async fn cancel_deletes_the_workload_object_with_background_propagation() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let pt = job(&snap, "ml:pytorchjob:llama-ft");
    s.fake.clear_requests();
    b.job_action_if(&pt.job_ref, JobAction::Cancel, pt.uid.as_deref()).await.unwrap();
    let deletes: Vec<_> = s.fake.requests().into_iter().filter(|r| r.method == "DELETE").collect();
    assert_eq!(deletes.len(), 1, "one request for the workload, none per pod: {deletes:?}");
    assert_eq!(deletes[0].path, "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/llama-ft");
    assert!(deletes[0].raw_body.contains("\"propagationPolicy\":\"Background\""), "{}", deletes[0].raw_body);
    assert!(s.fake.get("kubeflow.org/v1", "PyTorchJob", Some("ml"), "llama-ft").is_none());
    assert!(s.fake.get("v1", "Pod", Some("ml"), "llama-ft-worker-0").is_none(), "its pods went with it");
    until_snapshot(&b, "the PyTorchJob gone", |s| !ids(s).contains(&"ml:pytorchjob:llama-ft")).await;

    // JobSet: its Jobs and their pods go too.
    let js = JobRef::new("k8s", "ml:jobset:sweep");
    b.job_action(&js, JobAction::Cancel).await.unwrap();
    assert!(s.fake.get("batch/v1", "Job", Some("ml"), "sweep-workers-0").is_none());
    assert!(s.fake.get("v1", "Pod", Some("ml"), "sweep-workers-0-0-x7k2p").is_none());

    // An owner flightdeck shows but does not manage is refused in words, nothing deleted.
    let err = b.job_action(&JobRef::new("k8s", "ml:appwrapper:aw-1"), JobAction::Cancel).await.unwrap_err();
    assert!(matches!(err, BackendError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("kubectl -n ml delete appwrapper aw-1"), "{err}");
    assert!(s.fake.get("v1", "Pod", Some("ml"), "aw-1-pod-0").is_some());
}

#[tokio::test]
async fn hold_and_release_set_what_each_operator_reads() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    synced_snapshot(&b).await;
    let at = |id: &str| JobRef::new("k8s", id);

    b.job_action(&at("ml:pytorchjob:llama-ft"), JobAction::Hold).await.unwrap();
    let pt = s.fake.get("kubeflow.org/v1", "PyTorchJob", Some("ml"), "llama-ft").unwrap();
    assert_eq!(pt["spec"]["runPolicy"]["suspend"], json!(true));
    assert_eq!(pt["spec"]["runPolicy"]["cleanPodPolicy"], json!("None"), "the rest of runPolicy kept");

    b.job_action(&at("ml:jobset:later"), JobAction::Release).await.unwrap();
    assert_eq!(
        s.fake.get("jobset.x-k8s.io/v1alpha2", "JobSet", Some("ml"), "later").unwrap()["spec"]["suspend"],
        json!(false)
    );
    b.job_action(&at("ml:rayjob:tune"), JobAction::Hold).await.unwrap();
    assert_eq!(s.fake.get("ray.io/v1", "RayJob", Some("ml"), "tune").unwrap()["spec"]["suspend"], json!(true));

    // Volcano: a Command the job controller carries out, owned by the job.
    b.job_action(&at("research:vcjob:dist-train"), JobAction::Hold).await.unwrap();
    let commands = s.fake.list("bus.volcano.sh/v1alpha1", "Command");
    assert_eq!(commands.len(), 1);
    let c = &commands[0];
    assert_eq!(c["action"], json!("AbortJob"));
    assert_eq!((&c["target"]["kind"], &c["target"]["name"]), (&json!("Job"), &json!("dist-train")));
    assert_eq!(c["metadata"]["ownerReferences"][0]["uid"], c["target"]["uid"]);
    assert!(c["metadata"]["name"].as_str().unwrap().starts_with("dist-train-abortjob-"));
    b.job_action(&at("research:vcjob:dist-train"), JobAction::Release).await.unwrap();
    let actions: Vec<_> =
        s.fake.list("bus.volcano.sh/v1alpha1", "Command").iter().map(|c| c["action"].clone()).collect();
    assert!(actions.contains(&json!("ResumeJob")), "{actions:?}");

    let err = b.job_action(&at("inference:leaderworkerset:vllm-70b"), JobAction::Hold).await.unwrap_err();
    assert!(matches!(err, BackendError::Unsupported(_)) && err.to_string().contains("kubectl scale"), "{err}");

    // Queued by Kueue: Kueue owns the suspend field, so the hold goes to its Workload.
    let mut later = s.fake.get("jobset.x-k8s.io/v1alpha2", "JobSet", Some("ml"), "later").unwrap();
    later["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("team-a");
    let suspended_before = later["spec"]["suspend"].clone();
    let uid = later["metadata"]["uid"].as_str().unwrap().to_string();
    s.fake.put(later);
    let err = b.job_action(&at("ml:jobset:later"), JobAction::Hold).await.unwrap_err();
    assert!(matches!(err, BackendError::NotFound(_)) && err.to_string().contains("no Kueue Workload yet"), "{err}");
    let owned = |name: &str, owner_uid: &str| {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ml", "uid": format!("wl-{name}"),
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "x",
                    "uid": owner_uid, "controller": true}]},
            "spec": {"active": true, "queueName": "team-a", "podSets": []},
        })
    };
    s.fake.put(owned("jobset-other-1", "someone-else"));
    s.fake.put(owned("jobset-later-2f3a", &uid));
    b.job_action(&at("ml:jobset:later"), JobAction::Hold).await.unwrap();
    let wl = |n: &str| s.fake.get("kueue.x-k8s.io/v1beta2", "Workload", Some("ml"), n).unwrap();
    assert_eq!(wl("jobset-later-2f3a")["spec"]["active"], json!(false));
    assert_eq!(wl("jobset-other-1")["spec"]["active"], json!(true), "only the object's own Workload");
    let js = s.fake.get("jobset.x-k8s.io/v1alpha2", "JobSet", Some("ml"), "later").unwrap();
    assert_eq!(js["spec"]["suspend"], suspended_before, "Kueue's field is left to Kueue");
    b.job_action(&at("ml:jobset:later"), JobAction::Release).await.unwrap();
    assert_eq!(wl("jobset-later-2f3a")["spec"]["active"], json!(true));
}

/// Every kind flightdeck submits for several nodes: hold and release set what its operator
/// reads (Volcano: a Command); cancel is one DELETE of the object, with background
/// propagation and the UID the dialog captured; a stale UID deletes nothing.
#[tokio::test]
async fn hold_release_and_cancel_of_each_multi_node_kind_act_on_that_object_only() {
    use flightdeck::backend::kube::workloads::submit::MultiNode;
    let mut s = setup(true);
    s.cfg.settings.namespaces = vec!["ml".into()];
    for (how, api_version, kind, plural, suspend) in [
        (MultiNode::JobSet, "jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", "/spec/suspend"),
        (MultiNode::PyTorchJob, "kubeflow.org/v1", "PyTorchJob", "pytorchjobs", "/spec/runPolicy/suspend"),
        (MultiNode::MpiJob, "kubeflow.org/v2beta1", "MPIJob", "mpijobs", "/spec/runPolicy/suspend"),
        (MultiNode::Volcano, "batch.volcano.sh/v1alpha1", "Job", "jobs", ""),
    ] {
        s.cfg.settings.multi_node = how;
        let b = KubeBackend::new(&s.cfg);
        let job_ref = b.submit(&two_node_spec()).await.unwrap_or_else(|e| panic!("{kind}: {e}"));
        let name = job_ref.id.rsplit(':').next().unwrap().to_string();
        // Hold and release first: the field the operator reads, or Volcano's Command.
        let commands = s.fake.list("bus.volcano.sh/v1alpha1", "Command").len();
        for (action, want) in [(JobAction::Hold, true), (JobAction::Release, false)] {
            b.job_action(&job_ref, action).await.unwrap_or_else(|e| panic!("{kind}: {e}"));
            let obj = s.fake.get(api_version, kind, Some("ml"), &name).unwrap();
            if suspend.is_empty() {
                let made = s.fake.list("bus.volcano.sh/v1alpha1", "Command");
                let last = made.iter().find(|c| {
                    c["target"]["name"] == name.as_str() && c["action"] == if want { "AbortJob" } else { "ResumeJob" }
                });
                assert!(last.is_some(), "{kind}: {made:?}");
            } else {
                assert_eq!(obj.pointer(suspend), Some(&json!(want)), "{kind} {action:?}");
            }
        }
        if suspend.is_empty() {
            assert_eq!(s.fake.list("bus.volcano.sh/v1alpha1", "Command").len(), commands + 2);
        }
        let uid =
            s.fake.get(api_version, kind, Some("ml"), &name).unwrap()["metadata"]["uid"].as_str().unwrap().to_string();
        let err = b.job_action_if(&job_ref, JobAction::Cancel, Some("not-its-uid")).await.unwrap_err();
        assert!(err.to_string().contains("no longer the object you chose"), "{kind}: {err}");
        assert!(s.fake.get(api_version, kind, Some("ml"), &name).is_some(), "{kind}: a stale UID deletes nothing");
        b.job_action_if(&job_ref, JobAction::Cancel, Some(&uid)).await.unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(s.fake.get(api_version, kind, Some("ml"), &name).is_none(), "{kind} deleted");
        let path = format!("/apis/{api_version}/namespaces/ml/{plural}/{name}");
        let deletes = s.fake.requests_to("DELETE", &path);
        assert_eq!(deletes.len(), 2, "{kind}: {deletes:?}");
        let body = &deletes[1].raw_body;
        assert!(body.contains("\"propagationPolicy\":\"Background\"") && body.contains(&uid), "{kind}: {body}");
    }
    let pods: Vec<_> =
        s.fake.requests().into_iter().filter(|r| r.method == "DELETE" && r.path.contains("/pods/")).collect();
    assert!(pods.is_empty(), "never pod by pod: {pods:?}");
}

#[tokio::test]
async fn without_the_crds_pods_still_group_by_owner_and_a_note_says_why() {
    let s = setup(false);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    // The batch Jobs are there; what owns them is not served, so they group by reference.
    assert!(ids(&snap).contains(&"ml:pytorchjob:llama-ft"), "{:?}", ids(&snap));
    let pt = job(&snap, "ml:pytorchjob:llama-ft");
    assert_eq!((pt.state, pt.gpus_allocated, pt.workload.as_ref().unwrap().pods.len()), (JobState::Running, 32, 4));
    assert!(pt.workload.as_ref().unwrap().cancel, "a known kind can still be cancelled by name");
    assert_eq!(
        snap.notes.iter().filter(|n| n.starts_with("AI workload kinds whose CRDs this cluster does not serve")).count(),
        1,
        "one note for every absent kind: {:?}",
        snap.notes
    );
    let disabled: Vec<String> = b.watches().into_iter().filter(|(_, w)| w.disabled).map(|(k, _)| k).collect();
    assert!(
        disabled.iter().any(|k| k.contains("kubeflow.org PyTorchJob")),
        "doctor's list names the kind: {disabled:?}"
    );
}

#[tokio::test]
async fn a_workload_reads_back_as_a_multi_node_spec() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    synced_snapshot(&b).await;
    let imported = b.job_spec(&JobRef::new("k8s", "ml:pytorchjob:llama-ft")).await.unwrap();
    assert_eq!((imported.spec.nodes, imported.spec.gpus), (Some(4), 8));
    assert_eq!(imported.spec.image.as_deref(), Some("nvcr.io/nvidia/pytorch:25.01-py3"));
}

fn two_node_spec() -> flightdeck::spec::JobSpec {
    flightdeck::spec::JobSpec {
        name: "Pretrain 70B".into(),
        command: Some("torchrun --nnodes 2 train.py".into()),
        gpus: 8,
        gpu_type: Some("h100".into()),
        nodes: Some(2),
        image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
        ..flightdeck::spec::JobSpec::default()
    }
}

#[tokio::test]
async fn several_nodes_submit_a_jobset_or_a_pytorchjob_and_show_as_one_job() {
    use flightdeck::backend::kube::workloads::submit::MultiNode;
    let mut s = setup(true);
    s.cfg.settings.namespaces = vec!["ml".into()];
    let b = KubeBackend::new(&s.cfg);
    synced_snapshot(&b).await;

    let preview = b.render(&two_node_spec()).await.unwrap();
    assert!(preview.text.contains("kind: JobSet"), "{}", preview.text);
    assert!(preview.warnings.iter().any(|w| w.contains("JobSet's name gets a random")), "{:?}", preview.warnings);

    let job_ref = b.submit(&two_node_spec()).await.unwrap();
    let name = job_ref.id.strip_prefix("ml:jobset:").unwrap_or_else(|| panic!("a JobSet id: {}", job_ref.id));
    let js = s.fake.get("jobset.x-k8s.io/v1alpha2", "JobSet", Some("ml"), name).expect("the JobSet exists");
    let rj = &js["spec"]["replicatedJobs"][0];
    assert_eq!(
        (&rj["template"]["spec"]["parallelism"], &rj["template"]["spec"]["completions"]),
        (&json!(2), &json!(2))
    );
    let c = &rj["template"]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], json!("8"));
    let shown = until_snapshot(&b, "the new JobSet", |s| s.jobs.iter().any(|j| j.job_ref == job_ref)).await;
    let shown = job(&shown, &job_ref.id);
    assert_eq!((shown.gpus_requested, shown.workload.as_ref().unwrap().kind.as_str()), (16, "JobSet"));

    // The same spec on a cluster configured for PyTorchJobs.
    s.cfg.settings.multi_node = MultiNode::PyTorchJob;
    let b = KubeBackend::new(&s.cfg);
    let job_ref = b.submit(&two_node_spec()).await.unwrap();
    let name = job_ref.id.strip_prefix("ml:pytorchjob:").unwrap_or_else(|| panic!("a PyTorchJob id: {}", job_ref.id));
    let pt = s.fake.get("kubeflow.org/v1", "PyTorchJob", Some("ml"), name).expect("the PyTorchJob exists");
    let specs = &pt["spec"]["pytorchReplicaSpecs"];
    assert_eq!((&specs["Master"]["replicas"], &specs["Worker"]["replicas"]), (&json!(1), &json!(1)));
    assert_eq!(specs["Worker"]["template"]["spec"]["containers"][0]["name"], json!("pytorch"));
}

#[tokio::test]
async fn each_multi_node_kind_is_created_with_kueue_suspend_and_the_rendezvous() {
    use flightdeck::backend::kube::workloads::submit::MultiNode;
    let mut s = setup(true);
    s.cfg.settings.namespaces = vec!["ml".into()];
    s.cfg.settings.queue = Some("team-a".into());
    for (how, api_version, kind, suspend) in [
        (MultiNode::JobSet, "jobset.x-k8s.io/v1alpha2", "JobSet", "/spec/suspend"),
        (MultiNode::PyTorchJob, "kubeflow.org/v1", "PyTorchJob", "/spec/runPolicy/suspend"),
        (MultiNode::MpiJob, "kubeflow.org/v2beta1", "MPIJob", "/spec/runPolicy/suspend"),
    ] {
        s.cfg.settings.multi_node = how;
        let b = KubeBackend::new(&s.cfg);
        let job_ref = b.submit(&two_node_spec()).await.unwrap_or_else(|e| panic!("{kind}: {e}"));
        let name = job_ref.id.rsplit(':').next().unwrap();
        let obj = s.fake.get(api_version, kind, Some("ml"), name).unwrap_or_else(|| panic!("the {kind} exists"));
        assert_eq!(obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], json!("team-a"), "{kind}");
        assert_eq!(obj.pointer(suspend), Some(&json!(true)), "{kind} starts suspended for Kueue");
        let posts: Vec<_> = s
            .fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.starts_with(&format!("/apis/{api_version}/")))
            .collect();
        assert_eq!(posts.len(), 1, "{kind}: {posts:?}");
    }
    let js = s
        .fake
        .list("jobset.x-k8s.io/v1alpha2", "JobSet")
        .into_iter()
        .find(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "Pretrain 70B")
        .unwrap();
    let env = &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["env"];
    let names: Vec<&str> = env.as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    for want in ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK"] {
        assert!(names.contains(&want), "{want}: {names:?}");
    }
}

#[tokio::test]
async fn a_kind_the_cluster_does_not_serve_is_refused_by_name_before_anything_is_sent() {
    use flightdeck::backend::kube::workloads::submit::MultiNode;
    let mut s = setup(true);
    s.cfg.settings.namespaces = vec!["ml".into()];
    s.fake.disable_kind("jobset.x-k8s.io/v1alpha2", "JobSet", 404);
    let b = KubeBackend::new(&s.cfg);
    for err in [b.render(&two_node_spec()).await.unwrap_err(), b.submit(&two_node_spec()).await.unwrap_err()] {
        assert!(matches!(err, BackendError::Unsupported(_)), "{err:?}");
        assert!(err.to_string().starts_with("k8s does not serve jobset.x-k8s.io/v1alpha2"), "{err}");
        assert!(err.to_string().contains("`multi_node`"), "{err}");
    }
    s.fake.disable_kind("batch.volcano.sh/v1alpha1", "Job", 404);
    s.cfg.settings.multi_node = MultiNode::Volcano;
    let err = KubeBackend::new(&s.cfg).submit(&two_node_spec()).await.unwrap_err();
    assert!(err.to_string().starts_with("k8s does not serve batch.volcano.sh/v1alpha1"), "{err}");
    let sent: Vec<_> = s.fake.requests().into_iter().filter(|r| r.method != "GET").collect();
    assert!(sent.is_empty(), "nothing created: {sent:?}");
    // One node is a plain Job, which every cluster serves.
    let one = flightdeck::spec::JobSpec { nodes: Some(1), ..two_node_spec() };
    KubeBackend::new(&s.cfg).submit(&one).await.unwrap();
}

/// The binary end to end: `flightdeck jobs` lists the PyTorchJob `llm` (4 + 2 GPUs) as one
/// row of its kind, with its pods, and no row for either pod.
#[test]
fn the_cli_lists_a_pytorchjob_as_one_job_with_its_pods() {
    let fake = FakeApi::start_blocking();
    workloads::serve_crds(&fake);
    let nodes = (1..=2).map(|i| kube_fake::fixtures::node_h100(&format!("wl-{i}")));
    fake.put_all(nodes.chain(workloads::pytorchjob_llm()));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let cli = kube_fake::Cli::new(dir.path(), &kubeconfig);
    let run = |args: &[&str]| {
        let (ok, stdout, stderr) = cli.run(args);
        assert!(ok, "{stderr}");
        stdout
    };
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run(&["jobs", "--output", "json"])).unwrap();
    assert_eq!(rows.len(), 1, "one row, no pod rows: {rows:#?}");
    let llm = &rows[0];
    assert_eq!(llm["ref"], "k8s/ml:pytorchjob:llm");
    assert_eq!((llm["name"].as_str(), llm["kind"].as_str()), (Some("llm"), Some("PyTorchJob")));
    assert_eq!((llm["gpus"].as_u64(), llm["gpus_allocated"].as_u64()), (Some(6), Some(6)));
    assert_eq!((llm["replicas"]["ready"].as_u64(), llm["replicas"]["total"].as_u64()), (Some(2), Some(2)));
    let pods: Vec<(&str, Option<&str>, u64)> = llm["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["node"].as_str(), p["gpus"].as_u64().unwrap()))
        .collect();
    assert_eq!(pods, vec![("llm-master-0", Some("wl-1"), 4), ("llm-worker-0", Some("wl-2"), 2)]);
    assert_eq!(llm["nodes"], json!(["wl-1", "wl-2"]));

    let table = run(&["jobs"]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("KIND"), "{table}");
    assert_eq!(table.lines().count(), 2, "a header and one row:\n{table}");
    assert!(table.contains("PyTorchJob"), "{table}");
}

/// Each pod of a workload carries its own log handle, and each reads that pod's log: the
/// detail's pod list reads any of them (the master's first).
#[tokio::test]
async fn each_pod_of_a_workload_reads_its_own_log() {
    let s = setup(true);
    s.fake.set_pod_log("ml", "llama-ft-master-0", None, "master: rendezvous on :29500\nstep 1 loss 2.31\n");
    s.fake.set_pod_log("ml", "llama-ft-worker-1", None, "worker 1: joined\n");
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let pt = job(&snap, "ml:pytorchjob:llama-ft");
    let w = pt.workload.as_ref().unwrap();
    let read = |name: &str| {
        let log = w.pods.iter().find(|p| p.name == name).and_then(|p| p.log.clone()).expect("a log handle");
        let b = &b;
        async move { b.read_log(&log, None, 4096).await.unwrap().data }
    };
    assert_eq!(read("llama-ft-master-0").await, "master: rendezvous on :29500\nstep 1 loss 2.31\n");
    assert_eq!(read("llama-ft-worker-1").await, "worker 1: joined\n");
    assert_eq!(pt.stdout, w.pods[0].log, "the job's own log is the master's");
}

/// Every GPU a pod holds is counted once, whichever row holds it: the jobs' allocated GPUs
/// add up to the nodes' allocated GPUs (the GPU map and the overview count from the nodes).
#[tokio::test]
async fn each_gpu_is_counted_once_whichever_row_holds_it() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let held_by_jobs: u32 = snap.jobs.iter().filter(|j| j.state.is_active()).map(|j| j.gpus_allocated).sum();
    let held_on_nodes: u32 = snap.nodes.iter().flat_map(|n| &n.gpus).map(|g| g.allocated).sum();
    assert!(held_on_nodes > 0);
    assert_eq!(held_by_jobs, held_on_nodes, "jobs {:?}", ids(&snap));
}

/// XGBoostJob, PaddleJob and JAXJob read Kubeflow's conditions like a PyTorchJob; a
/// RayService is one job with its RayCluster's pods, running while it is `Ready`.
#[tokio::test]
async fn the_other_kubeflow_jobs_and_a_rayservice_read_their_own_status() {
    let s = setup(true);
    let b = KubeBackend::new(&s.cfg);
    let snap = synced_snapshot(&b).await;
    let state = |id: &str| {
        let j = job(&snap, id);
        (j.state, j.native_state.clone(), j.workload.as_ref().unwrap().kind.clone())
    };
    assert_eq!(state("ml:xgboostjob:xgb"), (JobState::Running, "Running".into(), "XGBoostJob".into()));
    assert_eq!(state("ml:paddlejob:paddle"), (JobState::Completed, "Succeeded".into(), "PaddleJob".into()));
    assert_eq!(state("ml:jaxjob:jax"), (JobState::Pending, "Created".into(), "JAXJob".into()));
    assert_eq!(
        job(&snap, "ml:xgboostjob:xgb").workload.as_ref().unwrap().suspend.as_deref(),
        Some("spec.runPolicy.suspend")
    );
    let serve = job(&snap, "inference:rayservice:serve");
    let w = serve.workload.as_ref().unwrap();
    assert_eq!((serve.state, w.kind.as_str()), (JobState::Running, "RayService"));
    assert_eq!((serve.gpus_allocated, w.pods.len()), (1, 2), "its RayCluster's head and GPU worker");
    let groups: Vec<(&str, u32)> = w.groups.iter().map(|g| (g.name.as_str(), g.replicas)).collect();
    assert_eq!(groups, vec![("head", 1), ("gpu", 1)]);
    assert_eq!(w.suspend, None, "a RayService is scaled, not held");
    assert!(!ids(&snap).iter().any(|id| id.contains("raycluster")), "its RayCluster is part of it");
}

/// A plain Job queued by Kueue is held and released through its Workload's `spec.active`,
/// its own `spec.suspend` left to Kueue.
#[tokio::test]
async fn a_kueue_queued_job_is_held_through_its_workload() {
    let s = setup(false);
    s.fake.put(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "queued", "namespace": "ml", "uid": "job-queued-uid",
            "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {"suspend": false, "template": {"spec": {"restartPolicy": "Never", "containers": []}}},
    }));
    s.fake.put(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "job-queued-1a2b3", "namespace": "ml", "uid": "wl-queued",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "queued",
                "uid": "job-queued-uid", "controller": true}]},
        "spec": {"active": true, "queueName": "team-a", "podSets": []},
    }));
    let b = KubeBackend::new(&s.cfg);
    let job = JobRef::new("k8s", "ml:queued");
    b.job_action(&job, JobAction::Hold).await.unwrap();
    let wl = || s.fake.get("kueue.x-k8s.io/v1beta2", "Workload", Some("ml"), "job-queued-1a2b3").unwrap();
    assert_eq!(wl()["spec"]["active"], json!(false));
    assert_eq!(s.fake.get("batch/v1", "Job", Some("ml"), "queued").unwrap()["spec"]["suspend"], json!(false));
    b.job_action(&job, JobAction::Release).await.unwrap();
    assert_eq!(wl()["spec"]["active"], json!(true));
    let patches: Vec<_> = s.fake.requests().into_iter().filter(|r| r.method == "PATCH").collect();
    assert!(patches.iter().all(|p| p.path.contains("/workloads/")), "{patches:?}");
}

/// `flightdeck submit pytorchjob.yaml --cluster k8s`: a PyTorchJob file (4 nodes × 8 GPUs,
/// 8 processes each) goes to the cluster as its `multi_node` kind says: a JobSet by default,
/// with a warning naming the kind it came as, and a PyTorchJob again where the cluster says
/// `multi_node = "pytorchjob"`.
#[test]
fn a_pytorchjob_file_submits_through_the_cli() {
    let fake = FakeApi::start_blocking();
    workloads::serve_crds(&fake);
    fake.put_all(workloads::cluster());
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let cli = kube_fake::Cli::new(dir.path(), &kubeconfig);
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dialects/workloads/pytorchjob-gpu.yaml");

    let (ok, stdout, stderr) = cli.run(&["submit", file, "--cluster", "k8s"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("`kind`: the spec names no workload kind"), "{stderr}");
    assert!(stdout.contains("k8s/ml:jobset:pretrain-"), "{stdout}");
    let sets = fake.list("jobset.x-k8s.io/v1alpha2", "JobSet");
    let js = sets.iter().find(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "pretrain").expect("a JobSet");
    let job = &js["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!((&job["parallelism"], &job["activeDeadlineSeconds"]), (&json!(4), &json!(7200)));
    let c = &job["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], json!("8"));
    assert_eq!(c["command"], json!(["/bin/sh", "-c", "torchrun train.py '--backend=nccl'"]));
    assert!(c["env"].to_string().contains("PET_NPROC_PER_NODE"), "{}", c["env"]);

    let config = dir.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("multi_node = \"pytorchjob\"\n");
    std::fs::write(&config, text).unwrap();
    let (ok, stdout, stderr) = cli.run(&["submit", file, "--cluster", "k8s"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("k8s/ml:pytorchjob:pretrain-"), "{stdout}");
    let pt = fake
        .list("kubeflow.org/v1", "PyTorchJob")
        .into_iter()
        .find(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "pretrain")
        .expect("a PyTorchJob");
    let specs = &pt["spec"]["pytorchReplicaSpecs"];
    assert_eq!((&specs["Master"]["replicas"], &specs["Worker"]["replicas"]), (&json!(1), &json!(3)));
    assert_eq!(
        (&pt["spec"]["nprocPerNode"], &pt["spec"]["runPolicy"]["activeDeadlineSeconds"]),
        (&json!("8"), &json!(7200))
    );
}

/// `flightdeck submit --multi-node KIND`: one submit becomes that kind on a cluster set for
/// JobSets; a word that is no kind, and a kind for a Slurm cluster, are refused by name with
/// nothing created.
#[test]
fn submit_multi_node_picks_the_kind_for_one_submit() {
    let fake = FakeApi::start_blocking();
    workloads::serve_crds(&fake);
    fake.put_all(workloads::cluster());
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = fake.kubeconfig(dir.path(), "fake");
    let cli = kube_fake::Cli::new(dir.path(), &kubeconfig);
    let spec = dir.path().join("pretrain.toml");
    std::fs::write(
        &spec,
        "name = \"pretrain\"\ncommand = \"torchrun train.py\"\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\naccount = \"ml\"\nnodes = 2\ngpus = 8\n",
    )
    .unwrap();
    let file = spec.to_str().unwrap();
    let (ok, stdout, stderr) = cli.run(&["submit", file, "--cluster", "k8s", "--multi-node", "pytorchjob"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("k8s/ml:pytorchjob:pretrain-"), "{stdout}");
    let pt = fake
        .list("kubeflow.org/v1", "PyTorchJob")
        .into_iter()
        .find(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "pretrain")
        .expect("a PyTorchJob");
    let specs = &pt["spec"]["pytorchReplicaSpecs"];
    assert_eq!((&specs["Master"]["replicas"], &specs["Worker"]["replicas"]), (&json!(1), &json!(1)));
    let made_jobset = |fake: &FakeApi| {
        fake.list("jobset.x-k8s.io/v1alpha2", "JobSet")
            .iter()
            .any(|o| o["metadata"]["annotations"]["flightdeck.io/name"] == "pretrain")
    };
    assert!(!made_jobset(&fake), "the cluster's own kind is not used");
    // Without the flag, the cluster's setting (a JobSet here).
    let (ok, stdout, stderr) = cli.run(&["submit", file, "--cluster", "k8s"]);
    assert!(ok && stdout.contains("k8s/ml:jobset:pretrain-"), "{stdout}{stderr}");

    let posts = |fake: &FakeApi| fake.requests().into_iter().filter(|r| r.method == "POST").count();
    let before = posts(&fake);
    let (ok, _, stderr) = cli.run(&["submit", file, "--cluster", "k8s", "--multi-node", "tfjob"]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("`multi_node`: \"tfjob\" is no kind a job of several nodes becomes on Kubernetes"),
        "{stderr}"
    );
    assert!(stderr.contains("jobset, pytorchjob, mpijob, volcano"), "{stderr}");
    assert_eq!(posts(&fake), before, "nothing created");

    // A Slurm cluster (this machine's, never reached: the spec is refused first).
    let config = dir.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n");
    std::fs::write(&config, text).unwrap();
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, "name = \"pretrain\"\ncommand = \"torchrun train.py\"\nnodes = 2\n").unwrap();
    let (ok, _, stderr) = cli.run(&["submit", plain.to_str().unwrap(), "--cluster", "hpc", "--multi-node", "jobset"]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("`multi_node`: Slurm runs a job of several nodes itself"), "{stderr}");
    assert!(stderr.contains("remove `multi_node` (or --multi-node)"), "{stderr}");
}

/// The preview of a spec asks the spec's kind, in that kind's dialect, and names the Slurm
/// lines of its script that no pod can run.
#[tokio::test]
async fn the_preview_shows_the_specs_kind_and_warns_of_srun_lines() {
    let mut s = setup(true);
    s.cfg.settings.namespaces = vec!["ml".into()];
    let b = KubeBackend::new(&s.cfg);
    synced_snapshot(&b).await;
    let spec = flightdeck::spec::JobSpec {
        multi_node: Some("mpijob".into()),
        command: None,
        script: Some("#!/bin/bash\n#SBATCH --exclusive\nsrun --mpi=pmix ./allreduce\n".into()),
        ..two_node_spec()
    };
    let preview = b.render(&spec).await.unwrap();
    assert_eq!(preview.dialect, flightdeck::backend::kube::workloads::dialect::MPI_JOB);
    assert!(preview.text.contains("kind: MPIJob"), "{}", preview.text);
    let w = &preview.warnings;
    assert!(w.iter().any(|w| w.starts_with("`script`: line 3 runs `srun`, which no Kubernetes pod has")), "{w:?}");
    assert!(w.iter().any(|w| w.starts_with("`script`: line 2 has `#SBATCH`")), "{w:?}");
    // One node runs as a plain Job whatever kind is asked, and says so.
    let one = flightdeck::spec::JobSpec { nodes: Some(1), ..spec };
    let preview = b.render(&one).await.unwrap();
    assert!(preview.text.contains("kind: Job"), "{}", preview.text);
    assert!(preview.warnings.iter().any(|w| w.starts_with("`multi_node`: mpijob is for 2 or more nodes")));
}

/// The cockpit's jobs screen over the fake with a workload of every kind of the table: each
/// is one row (its id `namespace:word:name`), and no pod of theirs has a row of its own.
#[tokio::test]
async fn the_jobs_screen_shows_every_kind_as_one_row() {
    use flightdeck::fleet::{ClusterState, FleetState};
    use flightdeck::model::Health;
    use flightdeck::tui::keymap::Keymap;
    use flightdeck::tui::theme::{ColorDepth, Theme};
    use flightdeck::tui::{App, Msg, Screen, TuiOptions};
    use std::sync::Arc;

    let s = setup(true);
    s.fake.put_all(workloads::tfjob_and_raycluster());
    let b = KubeBackend::new(&s.cfg);
    synced_snapshot(&b).await;
    let snap = until_snapshot(&b, "the TFJob and the RayCluster", |snap| {
        ["ml:tfjob:mnist", "ml:raycluster:notebook"].iter().all(|id| snap.jobs.iter().any(|j| j.job_ref.id == *id))
    })
    .await;
    // The RayCluster of a head group and two worker groups is one job with its three pods.
    let notebook = job(&snap, "ml:raycluster:notebook");
    let w = notebook.workload.as_ref().unwrap();
    let groups: Vec<(&str, u32, u32)> =
        w.groups.iter().map(|g| (g.name.as_str(), g.replicas, g.gpus_per_replica)).collect();
    assert_eq!(groups, vec![("head", 1, 0), ("gpu", 1, 1), ("cpu", 1, 0)]);
    assert_eq!((notebook.gpus_requested, notebook.gpus_allocated, w.pods.len()), (1, 1, 3));
    let at = snap.taken_at.unwrap();
    let cluster = ClusterState {
        health: Health::Fresh { at },
        snapshot: Some(Arc::new(snap)),
        attempts: 1,
        ..ClusterState::new("k8s", "kubernetes")
    };
    let mut app = App::new(TuiOptions {
        keymap: Keymap::builtin("default").unwrap(),
        theme: Theme::builtin("default", ColorDepth::TrueColor).unwrap(),
        read_only: false,
        user: "alice".into(),
        config_label: "test".into(),
        no_clusters: Vec::new(),
    });
    app.update(Msg::Tick(at));
    app.update(Msg::Fleet(Arc::new(FleetState { clusters: vec![cluster], read_only: false, version: 1 })));
    app.update(Msg::Key(ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::Char('2'))));
    assert_eq!(app.screen(), Screen::Jobs);
    let (w, h) = (240, 60);
    app.update(Msg::Resize(w, h));
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| flightdeck::tui::views::render(&app, f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    let lines: Vec<String> = (0..h).map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>()).collect();
    let screen = lines.join("\n");
    // Every workload kind of the table, by its KIND cell and its name (long ids are
    // cut to the ID column's width).
    for (kind, name) in [
        ("PyTorchJob", "llama-ft"),
        ("TFJob", "mnist"),
        ("XGBoostJob", "xgb"),
        ("PaddleJob", "paddle"),
        ("JAXJob", "jax"),
        ("MPIJob", "allreduce"),
        ("TrainJob", "ft-trainer"),
        ("JobSet", "sweep"),
        ("LeaderWorkerSet", "vllm-70b"),
        ("RayJob", "tune"),
        ("RayCluster", "notebook"),
        ("RayService", "serve"),
        ("VolcanoJob", "dist-train"),
    ] {
        let (kind_cell, name_cell) = (format!(" {kind} "), format!(" {name} "));
        let rows = lines.iter().filter(|l| l.contains(&kind_cell) && l.contains(&name_cell)).count();
        assert_eq!(rows, 1, "{kind}: one row for {name}:\n{screen}");
    }
    assert!(!screen.contains(":pod:"), "no pod of a workload has a row of its own:\n{screen}");
}
