//! Placement advice over fixed fleet states with known answers: each test builds the
//! snapshots a backend would publish and checks verdict, reason, rank and price.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use flightdeck::backend::Registry;
use flightdeck::fleet::advice::{
    Advice, Options, PendingIndex, Verdict, advise, advise_indexed, advise_with, placement_key, spec_of_job,
};
use flightdeck::model::{
    ClusterKind, ClusterState, FieldUse, FleetState, GpuSlot, Health, Job, JobRef, JobState, Need, Node, NodeState,
    Queue, QueueQuota, Snapshot, SpecFields,
};
use flightdeck::spec::JobSpec;

fn slot(model: &str, total: u32, allocated: u32) -> GpuSlot {
    GpuSlot { model: model.into(), gpu_product: None, shared: false, total, allocated, unhealthy: 0, utilisation: None }
}

fn node(name: &str, state: NodeState, gpus: Vec<GpuSlot>, partitions: &[&str]) -> Node {
    let mut n = Node::new("", name, state);
    n.gpus = gpus;
    n.partitions = partitions.iter().map(|p| p.to_string()).collect();
    n.cpus_total = 64;
    n.memory_total_mb = 512 * 1024;
    n
}

fn drained(mut n: Node) -> Node {
    n.state = NodeState::Drained;
    n.flags = vec!["DRAIN".into()];
    n
}

fn priced(mut n: Node, price: f64) -> Node {
    n.cost_per_hour = Some(price);
    n
}

fn pending(id: &str, partition: &str, gpus: u32, model: Option<&str>) -> Job {
    let mut j = Job::new(JobRef::new("", id), JobState::Pending);
    j.partition = partition.into();
    j.gpus_requested = gpus;
    j.gpu_model = model.map(str::to_string);
    j
}

/// A cluster of `kind` as the fleet publishes it: the kind's own capabilities, the spec
/// fields its backend declares, fresh, with this snapshot.
fn cluster(name: &str, kind: &str, nodes: Vec<Node>, jobs: Vec<Job>) -> ClusterState {
    let nodes = nodes.into_iter().map(|mut n| (n.cluster = name.into(), n).1).collect();
    let jobs = jobs
        .into_iter()
        .map(|mut j| {
            j.job_ref.cluster = name.into();
            j
        })
        .collect();
    let mut snap = Snapshot { cluster: name.into(), nodes, jobs, ..Snapshot::default() };
    snap.derive_queues();
    let kind = ClusterKind::from(kind);
    let capabilities = Registry::builtin().capabilities(&kind).expect("a shipped kind");
    let spec_fields = match kind.as_str() {
        "kubernetes" => SpecFields {
            image: FieldUse::new("image", Need::Required, "a Kubernetes job runs in a container"),
            account: FieldUse::new("namespace", Need::Optional, ""),
            partition: FieldUse::new("queue", Need::Optional, "a Kueue LocalQueue in the namespace"),
        },
        "dstack" => SpecFields {
            partition: FieldUse::new("fleet", Need::Optional, "a dstack fleet of the project"),
            ..SpecFields::default()
        },
        "skypilot" => SpecFields { partition: FieldUse::new("cluster", Need::Optional, ""), ..SpecFields::default() },
        _ => SpecFields::default(),
    };
    let placement = Registry::builtin().placement(&kind);
    ClusterState {
        capabilities,
        spec_fields,
        placement,
        health: Health::Fresh { at: Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap() },
        snapshot: Some(Arc::new(snap)),
        attempts: 1,
        ..ClusterState::new(name, kind)
    }
}

fn with_queues(mut c: ClusterState, queues: Vec<Queue>) -> ClusterState {
    let mut snap = (**c.snapshot.as_ref().unwrap()).clone();
    snap.queues.extend(queues);
    c.snapshot = Some(Arc::new(snap));
    c
}

fn fleet(clusters: Vec<ClusterState>) -> FleetState {
    FleetState { clusters, ..FleetState::default() }
}

fn spec(gpus: u32, model: &str) -> JobSpec {
    JobSpec {
        name: "train".into(),
        command: Some("python train.py".into()),
        gpus,
        gpu_type: Some(model.into()),
        ..JobSpec::default()
    }
}

fn find<'a>(advice: &'a [Advice], cluster: &str) -> &'a Advice {
    advice.iter().find(|a| a.cluster == cluster).unwrap_or_else(|| panic!("no advice for {cluster}: {advice:#?}"))
}

fn order(advice: &[Advice]) -> Vec<&str> {
    advice.iter().map(|a| a.cluster.as_str()).collect()
}

/// Slurm: 6 of 8 h100 idle on one node of partition gpu.
fn fd24() -> ClusterState {
    cluster(
        "fd24",
        "slurm",
        vec![
            node("gpu-01", NodeState::Mixed, vec![slot("h100", 8, 2)], &["gpu"]),
            node("cpu-01", NodeState::Idle, vec![], &["cpu"]),
        ],
        vec![],
    )
}

#[test]
fn slurm_with_six_of_eight_h100_idle_starts_now() {
    let state = fleet(vec![fd24()]);
    let a = &advise(&state, &spec(4, "h100"))[0];
    assert_eq!((a.rank, a.verdict), (1, Verdict::Now));
    assert_eq!(a.reason, "6 of 8 h100 idle in partition gpu");
    assert_eq!(a.to_string(), "fd24 (now): 6 of 8 h100 idle in partition gpu");
    assert_eq!(a.partition.as_deref(), Some("gpu"));
    assert_eq!((a.idle_gpus, a.total_gpus, a.ahead), (6, 8, 0));
    assert_eq!(a.price_per_hour, None, "Slurm prices nothing");
    // The canonical model is matched: a GFD label names the same board.
    assert_eq!(advise(&state, &spec(4, "NVIDIA-H100-80GB-HBM3"))[0].verdict, Verdict::Now);

    // Seven do not fit on the node now, but would once its jobs end.
    let a = &advise(&state, &spec(7, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Queued);
    assert_eq!(a.reason, "busy: 6 of 8 h100 idle in partition gpu, needs 7 free on one node");
    // Nine never fit.
    let a = &advise(&state, &spec(9, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Cannot);
    assert_eq!(a.reason, "no node has 9 h100 (largest: 8 on gpu-01)");
}

#[test]
fn pending_jobs_for_the_same_model_are_counted_ahead() {
    let mut c = fd24();
    let jobs = vec![
        pending("10", "gpu", 8, Some("h100")),
        pending("11", "gpu,debug", 2, None),   // any GPU: competes
        pending("12", "gpu", 4, Some("a100")), // another model
        pending("13", "cpu", 8, Some("h100")), // another partition
        pending("14", "gpu", 0, None),         // no GPUs
        {
            let mut held = pending("15", "gpu", 8, Some("h100"));
            held.state = JobState::Held; // waits for a person, not for GPUs
            held
        },
    ];
    let mut snap = (**c.snapshot.as_ref().unwrap()).clone();
    snap.jobs = jobs.into_iter().map(|mut j| (j.job_ref.cluster = "fd24".into(), j).1).collect();
    c.snapshot = Some(Arc::new(snap));
    let state = fleet(vec![c]);
    let a = &advise(&state, &spec(7, "h100"))[0];
    assert_eq!(a.ahead, 2, "{a:#?}");
    assert!(a.reason.ends_with("; 2 pending jobs ask for h100"), "{}", a.reason);
    // A live job is not ahead of itself.
    let me = JobRef::new("fd24", "10");
    let a = &advise_with(&state, &spec(7, "h100"), &Options { exclude: Some(&me), partition_on: None })[0];
    assert_eq!(a.ahead, 1);
    assert!(a.reason.ends_with("; 1 pending job asks for h100"), "{}", a.reason);
}

#[test]
fn a_cluster_with_every_node_drained_waits_for_them_and_ranks_after_busy_ones() {
    let fd22 = cluster(
        "fd22",
        "slurm",
        vec![
            drained(node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"])),
            drained(node("gpu-02", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"])),
        ],
        vec![],
    );
    let busy = cluster(
        "busy",
        "slurm",
        vec![node("gpu-01", NodeState::Allocated, vec![slot("h100", 8, 8)], &["gpu"])],
        (0..5).map(|i| pending(&i.to_string(), "gpu", 8, Some("h100"))).collect(),
    );
    let state = fleet(vec![fd22, busy]);
    let advice = advise(&state, &spec(8, "h100"));
    let a = find(&advice, "fd22");
    assert_eq!(a.verdict, Verdict::Queued);
    assert_eq!(a.reason, "the nodes with 8 h100 in partition gpu are out of service (gpu-01 drained, gpu-02 drained)");
    assert_eq!(a.idle_gpus, 0);
    // Five jobs ahead on working nodes still beat nodes nobody has resumed.
    assert_eq!(order(&advice), ["busy", "fd22"]);
    assert_eq!(find(&advice, "busy").ahead, 5);
}

fn k8s_prod(quota_used: i64, nominal: i64, cohort: Option<&str>) -> ClusterState {
    let c = cluster(
        "k8s-prod",
        "kubernetes",
        vec![
            node("node-a", NodeState::Idle, vec![slot("h100", 8, 0)], &["pool-h100"]),
            node("node-b", NodeState::Mixed, vec![slot("h100", 8, 4)], &["pool-h100"]),
        ],
        vec![pending("ml/wait-1", "team-a", 8, Some("h100")), pending("ml/other", "team-b", 8, Some("h100"))],
    );
    let team_a = Queue {
        cluster: "k8s-prod".into(),
        name: "team-a".into(),
        quota: vec![QueueQuota {
            flavor: "default-flavor".into(),
            resource: "nvidia.com/gpu".into(),
            nominal_milli: nominal * 1000,
            borrowing_limit_milli: None,
            used_milli: quota_used * 1000,
            borrowed_milli: 0,
        }],
        cohort: cohort.map(str::to_string),
        ..Queue::default()
    };
    with_queues(c, vec![team_a])
}

fn kube_spec(gpus: u32, queue: Option<&str>) -> JobSpec {
    JobSpec {
        image: Some("nvcr.io/nvidia/pytorch:24.01-py3".into()),
        partition: queue.map(str::to_string),
        ..spec(gpus, "h100")
    }
}

#[test]
fn a_kueue_queue_with_its_quota_used_up_queues_the_job() {
    let state = fleet(vec![k8s_prod(16, 16, None)]);
    let a = &advise(&state, &kube_spec(8, Some("team-a")))[0];
    assert_eq!(a.verdict, Verdict::Queued, "{a:#?}");
    assert_eq!(a.reason, "queue team-a quota exhausted (16/16 nvidia.com/gpu); 1 pending job asks for h100");
    assert_eq!(a.partition.as_deref(), Some("team-a"));
    assert_eq!(a.idle_gpus, 12, "the nodes themselves have room");

    // Quota left: the nodes decide.
    let state = fleet(vec![k8s_prod(8, 16, None)]);
    let a = &advise(&state, &kube_spec(8, Some("team-a")))[0];
    assert_eq!(a.verdict, Verdict::Now, "{a:#?}");
    assert_eq!(a.reason, "12 of 16 h100 idle; 1 pending job asks for h100");
    // Pods of one job may share a node: 2 × 6 fit on node-a (8 free) + node-b (4 free)? No:
    // 6 fit once on node-a and not on node-b, so 2 × 6 quota is enough but the nodes are not.
    let two = JobSpec { nodes: Some(2), ..kube_spec(6, Some("team-a")) };
    assert_eq!(advise(&state, &two)[0].verdict, Verdict::Queued);
    let two = JobSpec { nodes: Some(2), ..kube_spec(4, Some("team-a")) };
    assert_eq!(advise(&state, &two)[0].verdict, Verdict::Now, "node-a holds two pods of 4");

    // A quota smaller than the job, with no cohort to borrow from: never.
    let state = fleet(vec![k8s_prod(0, 8, None)]);
    let a = &advise(&state, &kube_spec(8, Some("team-a")))[0];
    assert_eq!(a.verdict, Verdict::Now);
    let a = &advise(&state, &JobSpec { nodes: Some(2), ..kube_spec(8, Some("team-a")) })[0];
    assert_eq!(a.verdict, Verdict::Cannot);
    assert_eq!(a.reason, "queue team-a quota is 8 nvidia.com/gpu; the job needs 16");
    // With a cohort it may borrow: it waits rather than never.
    let state = fleet(vec![k8s_prod(8, 8, Some("research"))]);
    let a = &advise(&state, &kube_spec(8, Some("team-a")))[0];
    assert_eq!(a.verdict, Verdict::Queued);
    assert!(a.reason.contains("unless it borrows within cohort research"), "{}", a.reason);
}

#[test]
fn kubernetes_needs_an_image_and_says_what_it_cannot_check() {
    let state = fleet(vec![k8s_prod(16, 16, None)]);
    let a = &advise(&state, &spec(8, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Cannot);
    assert_eq!(a.reason, "needs `image` (a Kubernetes job runs in a container)");
    // No queue named: nodes only, and the caveat says the quota was not checked.
    let a = &advise(&state, &kube_spec(8, None))[0];
    assert_eq!(a.verdict, Verdict::Now);
    assert_eq!(a.ahead, 2, "every pending h100 job of the cluster");
    assert!(a.caveats.iter().any(|c| c.contains("quota not checked")), "{:?}", a.caveats);
    // A kind chosen for several nodes is Kubernetes' own choice: no refusal here.
    let kind = JobSpec { multi_node: Some("pytorchjob".into()), ..kube_spec(8, None) };
    assert_eq!(advise(&state, &kind)[0].verdict, Verdict::Now);
    let a = &advise(&state, &kube_spec(8, Some("nope")))[0];
    assert!(a.caveats.iter().any(|c| c.starts_with("`nope` is no Kueue queue")), "{:?}", a.caveats);
}

fn dstack(name: &str, prices: &[f64]) -> ClusterState {
    let nodes = prices
        .iter()
        .enumerate()
        .map(|(i, p)| priced(node(&format!("{name}-{i}"), NodeState::Idle, vec![slot("h100", 8, 0)], &["fleet-a"]), *p))
        .collect();
    cluster(name, "dstack", nodes, vec![])
}

#[test]
fn a_dstack_fleet_with_prices() {
    let state = fleet(vec![dstack("cloud", &[31.5, 24.0, 28.0])]);
    let a = &advise(&state, &spec(8, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Now);
    assert_eq!(a.reason, "24 of 24 h100 idle");
    assert_eq!(a.price_per_hour, Some(24.0), "the cheapest machine that fits");
    // Two machines: the two cheapest.
    let a = &advise(&state, &JobSpec { nodes: Some(2), ..spec(8, "h100") })[0];
    assert_eq!((a.verdict, a.price_per_hour), (Verdict::Now, Some(52.0)));
    assert_eq!(a.reason, "24 of 24 h100 idle, 3 nodes fit (it needs 2)");
    // A fleet named: it must exist.
    let a = &advise(&state, &JobSpec { partition: Some("fleet-a".into()), ..spec(8, "h100") })[0];
    assert_eq!((a.verdict, a.partition.as_deref()), (Verdict::Now, Some("fleet-a")));
    assert_eq!(a.reason, "24 of 24 h100 idle in fleet fleet-a");
    let a = &advise(&state, &JobSpec { partition: Some("gone".into()), ..spec(8, "h100") })[0];
    assert_eq!(a.verdict, Verdict::Cannot);
    assert_eq!(a.reason, "no fleet `gone` here (fleets: fleet-a)");
    // More than any machine has: dstack may provision one, which the snapshot cannot tell.
    let a = &advise(&state, &spec(16, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Queued);
    assert!(a.reason.starts_with("no node has 16 h100 (largest: 8 on cloud-0); dstack provisions"), "{}", a.reason);
}

#[test]
fn a_model_nobody_has() {
    let state = fleet(vec![fd24(), k8s_prod(0, 16, None), dstack("cloud", &[24.0])]);
    let advice = advise(&state, &JobSpec { image: Some("img".into()), ..spec(1, "b200") });
    assert_eq!(find(&advice, "fd24").verdict, Verdict::Cannot);
    assert_eq!(find(&advice, "fd24").reason, "no node has b200 (models: h100)");
    assert_eq!(find(&advice, "k8s-prod").reason, "no node has b200 (models: h100)");
    // dstack could still find one through a backend: queued, said so, and ranked first.
    let cloud = find(&advice, "cloud");
    assert_eq!(cloud.verdict, Verdict::Queued);
    assert!(cloud.reason.contains("dstack provisions"), "{}", cloud.reason);
    assert_eq!(order(&advice), ["cloud", "fd24", "k8s-prod"], "cannots by name");
    // A partition nobody has, on Slurm.
    let a = &advise(&fleet(vec![fd24()]), &JobSpec { partition: Some("big".into()), ..spec(1, "h100") })[0];
    assert_eq!(a.reason, "no partition `big` here (partitions: cpu, gpu)");
}

#[test]
fn multi_node_specs_need_that_many_nodes() {
    let two_free = cluster(
        "two",
        "slurm",
        vec![
            node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"]),
            node("gpu-02", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"]),
        ],
        vec![],
    );
    let one_busy = cluster(
        "onebusy",
        "slurm",
        vec![
            node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"]),
            node("gpu-02", NodeState::Mixed, vec![slot("h100", 8, 3)], &["gpu"]),
        ],
        vec![],
    );
    let one_big = cluster(
        "onebig",
        "slurm",
        vec![
            node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"]),
            node("gpu-03", NodeState::Idle, vec![slot("h100", 4, 0)], &["gpu"]),
        ],
        vec![],
    );
    // Partitions split the nodes: two fit only together, and they are not in one partition.
    let split = cluster(
        "split",
        "slurm",
        vec![
            node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["a"]),
            node("gpu-02", NodeState::Idle, vec![slot("h100", 8, 0)], &["b"]),
        ],
        vec![],
    );
    let state = fleet(vec![one_big, one_busy, split, two_free]);
    let advice = advise(&state, &JobSpec { nodes: Some(2), ..spec(8, "h100") });
    assert_eq!(order(&advice), ["two", "onebusy", "onebig", "split"]);
    assert_eq!(find(&advice, "two").verdict, Verdict::Now);
    assert_eq!(find(&advice, "two").reason, "16 of 16 h100 idle in partition gpu, 2 nodes fit (it needs 2)");
    let busy = find(&advice, "onebusy");
    assert_eq!(busy.verdict, Verdict::Queued);
    assert_eq!(busy.reason, "busy: 13 of 16 h100 idle in partition gpu, needs 8 free on each of 2 nodes");
    assert_eq!(find(&advice, "onebig").reason, "needs 2 nodes with 8 h100 in partition gpu; only 1 has them");
    assert_eq!(find(&advice, "onebig").verdict, Verdict::Cannot);
    assert_eq!(find(&advice, "split").verdict, Verdict::Cannot);
    // One node: every one of them would do, the one with most idle first.
    let advice = advise(&state, &spec(8, "h100"));
    assert!(advice.iter().all(|a| a.verdict == Verdict::Now), "{advice:#?}");
    assert_eq!(order(&advice), ["two", "onebusy", "onebig", "split"], "16, 13, 12 and 8 idle");
}

#[test]
fn a_stale_cluster_is_said_so_and_ranks_after_fresh_ones() {
    let mut stale =
        cluster("old", "slurm", vec![node("gpu-01", NodeState::Idle, vec![slot("h100", 8, 0)], &["gpu"])], vec![]);
    stale.health = Health::Stale {
        since: Utc.with_ymd_and_hms(2026, 12, 1, 11, 58, 0).unwrap(),
        error: "cannot reach 10.0.0.1: timed out".into(),
        last_ok: Some(Utc.with_ymd_and_hms(2026, 12, 1, 11, 57, 0).unwrap()),
    };
    let state = fleet(vec![stale, fd24()]);
    let advice = advise(&state, &spec(4, "h100"));
    assert_eq!(order(&advice), ["fd24", "old"], "fresh data first, though old has more idle");
    let old = find(&advice, "old");
    assert!(old.stale);
    assert_eq!(old.verdict, Verdict::Now);
    assert_eq!(old.reason, "8 of 8 h100 idle in partition gpu (stale since 11:58 UTC)");
    // Never heard from: unknown, last.
    let mut never = ClusterState::new("new", "slurm");
    never.capabilities = Registry::builtin().capabilities(&ClusterKind::SLURM).unwrap();
    never.placement = Registry::builtin().placement(&ClusterKind::SLURM);
    let state = fleet(vec![never, fd24()]);
    let advice = advise(&state, &spec(4, "h100"));
    assert_eq!(order(&advice), ["fd24", "new"]);
    assert_eq!((advice[1].verdict, advice[1].reason.as_str()), (Verdict::Unknown, "no snapshot yet"));
}

#[test]
fn ties_are_broken_by_price_and_known_prices_come_first() {
    let unpriced =
        cluster("onprem", "dstack", vec![node("box", NodeState::Idle, vec![slot("h100", 8, 0)], &["fleet-a"])], vec![]);
    let state = fleet(vec![dstack("dear", &[40.0]), unpriced, dstack("cheap", &[22.5])]);
    let advice = advise(&state, &spec(8, "h100"));
    assert_eq!(order(&advice), ["cheap", "dear", "onprem"]);
    assert_eq!(advice.iter().map(|a| a.rank).collect::<Vec<_>>(), [1, 2, 3]);
    // More idle GPUs of the model beat a lower price.
    let state = fleet(vec![dstack("dear", &[40.0, 40.0]), dstack("cheap", &[22.5])]);
    assert_eq!(order(&advise(&state, &spec(8, "h100"))), ["dear", "cheap"]);
}

#[test]
fn kinds_that_cannot_take_the_spec_say_why() {
    let mut ro = fd24();
    ro.capabilities.submit = false;
    let a = &advise(&fleet(vec![ro]), &spec(1, "h100"))[0];
    assert_eq!((a.verdict, a.reason.as_str()), (Verdict::Cannot, "cluster fd24 (slurm) cannot submit"));
    let managed = JobSpec { managed: true, ..spec(1, "h100") };
    let a = &advise(&fleet(vec![fd24()]), &managed)[0];
    assert_eq!(a.reason, "no managed jobs here (only SkyPilot has them)");
    let kind = JobSpec { multi_node: Some("pytorchjob".into()), nodes: Some(2), ..spec(1, "h100") };
    let a = &advise(&fleet(vec![fd24()]), &kind)[0];
    assert_eq!(
        (a.verdict, a.reason.as_str()),
        (Verdict::Cannot, "no workload kind to choose here (only Kubernetes takes `multi_node`)")
    );
    // An image on Slurm: pyxis is not in the snapshot, so it is a caveat, not a refusal.
    let a = &advise(&fleet(vec![fd24()]), &JobSpec { image: Some("img".into()), ..spec(1, "h100") })[0];
    assert_eq!(a.verdict, Verdict::Now);
    assert!(a.caveats[0].contains("pyxis"), "{:?}", a.caveats);
}

#[test]
fn skypilot_launches_new_clusters_unless_one_is_named() {
    let mut train = node("train", NodeState::Idle, vec![slot("h100", 8, 0)], &["train"]);
    train.cost_per_hour = Some(30.0);
    let sky = cluster("sky", "skypilot", vec![train], vec![]);
    let state = fleet(vec![sky]);
    let a = &advise(&state, &spec(8, "h100"))[0];
    assert_eq!((a.verdict, a.partition.as_deref(), a.price_per_hour), (Verdict::Now, Some("train"), Some(30.0)));
    assert!(a.caveats.iter().any(|c| c.contains("name `train` as the cluster")), "{:?}", a.caveats);
    let a = &advise(&state, &spec(16, "h100"))[0];
    assert_eq!(a.verdict, Verdict::Queued);
    assert_eq!(a.reason, "launches a new cluster (capacity and price are the cloud's, not known here)");
    let a = &advise(&state, &JobSpec { partition: Some("fresh".into()), ..spec(1, "h100") })[0];
    assert!(a.reason.starts_with("launches a new cluster `fresh`"), "{}", a.reason);
}

#[test]
fn cpus_and_memory_count_where_nodes_report_them() {
    let state = fleet(vec![fd24()]);
    let big = JobSpec { cpus: Some(128), ..spec(1, "h100") };
    let a = &advise(&state, &big)[0];
    assert_eq!(a.verdict, Verdict::Cannot);
    assert_eq!(a.reason, "no node with 1 h100 also has 128 CPUs");
    let mem = JobSpec { memory: Some("2T".into()), ..spec(1, "h100") };
    assert_eq!(advise(&state, &mem)[0].reason, "no node with 1 h100 also has 2097152 MiB of memory");
    // A CPU-only job fits on any node with room.
    let cpu = JobSpec { gpus: 0, gpu_type: None, cpus: Some(8), ..spec(0, "x") };
    let a = &advise(&state, &cpu)[0];
    assert_eq!(a.verdict, Verdict::Now, "{a:#?}");
}

#[test]
fn advice_round_trips_through_json() {
    let state = fleet(vec![fd24(), k8s_prod(16, 16, None), dstack("cloud", &[24.0])]);
    let advice = advise(&state, &kube_spec(4, Some("team-a")));
    let text = serde_json::to_string(&advice).unwrap();
    let back: Vec<Advice> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, advice);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The queue named is Kubernetes': elsewhere there is no such partition or fleet.
    assert_eq!((v[0]["cluster"].as_str(), v[0]["verdict"].as_str()), (Some("k8s-prod"), Some("queued")));
    assert_eq!(v[1]["reason"], "no fleet `team-a` here (fleets: fleet-a)");
    assert!(v[0].get("reason").is_some() && v[0].get("rank").is_some());
}

#[test]
fn a_live_jobs_fields_make_its_spec() {
    let mut j = Job::new(JobRef::new("fd22", "41"), JobState::Pending);
    j.name = "train\u{1b}[2J".into();
    j.partition = "gpu".into();
    j.gpus_requested = 16;
    j.node_count = 2;
    j.cpus = 32;
    j.gpu_model = Some("h100,a100".into());
    j.time_limit_secs = Some(7200);
    let s = spec_of_job(&j);
    s.validate().unwrap();
    assert_eq!((s.gpus, s.gpu_type.as_deref(), s.nodes, s.cpus), (8, Some("h100"), Some(2), Some(16)));
    assert_eq!((s.partition.as_deref(), s.time_limit_secs()), (Some("gpu"), Some(7200)));
    // Its partition counts on its own cluster only.
    let state = fleet(vec![fd24()]);
    let me = j.job_ref.clone();
    let opts = Options { exclude: Some(&me), partition_on: Some("fd22") };
    let here = JobSpec { nodes: None, gpus: 4, partition: Some("elsewhere".into()), ..s.clone() };
    assert_eq!(advise_with(&state, &here, &opts)[0].verdict, Verdict::Now);
    assert_eq!(advise(&state, &here)[0].verdict, Verdict::Cannot);
    // What the submit form keys its recomputation on leaves the name and command out.
    assert_eq!(placement_key(&spec(4, "h100")), placement_key(&JobSpec { name: "other".into(), ..spec(4, "h100") }));
    assert_ne!(placement_key(&spec(4, "h100")), placement_key(&spec(5, "h100")));
}

#[test]
fn pending_jobs_in_many_partitions_are_counted_right() {
    // 100 partitions (past the few a scan is kept for), two pending jobs each, interleaved.
    let nodes = (0..100)
        .map(|i| node(&format!("n{i}"), NodeState::Allocated, vec![slot("h100", 8, 8)], &[&format!("p{i}")]))
        .collect();
    let jobs = (0..200).map(|i| pending(&i.to_string(), &format!("p{}", i % 100), 8, Some("h100"))).collect();
    let state = fleet(vec![cluster("big", "slurm", nodes, jobs)]);
    for p in ["p0", "p31", "p32", "p57", "p99"] {
        let a = &advise(&state, &JobSpec { partition: Some(p.into()), ..spec(8, "h100") })[0];
        assert_eq!((a.verdict, a.ahead), (Verdict::Queued, 2), "{p}: {a:#?}");
    }
    // Counting once per state and advising many specs over it gives the same answers.
    let pending = PendingIndex::of(&state);
    for s in [spec(8, "h100"), spec(1, "a100"), JobSpec { partition: Some("p3".into()), ..spec(2, "h100") }] {
        assert_eq!(advise_indexed(&state, &pending, &s, &Options::default()), advise(&state, &s));
    }
}

#[test]
fn extreme_counts_do_not_overflow() {
    let huge = || node("n", NodeState::Idle, vec![slot("h100", u32::MAX, 0), slot("h100", u32::MAX, 0)], &["gpu"]);
    let mut c = k8s_prod(i64::MAX / 1000, i64::MAX / 1000, None);
    let mut snap = (**c.snapshot.as_ref().unwrap()).clone();
    snap.nodes = vec![huge(), huge()];
    let mut q = snap.queues.last().unwrap().clone();
    q.quota.push(q.quota[0].clone());
    q.quota[1].nominal_milli = i64::MAX;
    q.quota[1].used_milli = i64::MIN;
    snap.queues.push(q);
    c.snapshot = Some(Arc::new(snap));
    let slurm = cluster(
        "s",
        "slurm",
        vec![huge(), huge()],
        (0..3).map(|i| pending(&i.to_string(), "gpu", u32::MAX, None)).collect(),
    );
    let state = fleet(vec![c, slurm]);
    for s in [
        JobSpec {
            nodes: Some(u32::MAX),
            cpus: Some(u32::MAX),
            tasks_per_node: Some(u32::MAX),
            ..kube_spec(u32::MAX, Some("team-a"))
        },
        kube_spec(1, Some("team-a")),
        JobSpec { gpus: 0, gpu_type: None, ..kube_spec(0, None) },
    ] {
        let advice = advise(&state, &s);
        assert_eq!(advice.len(), 2);
    }
    let a = &advise(&state, &kube_spec(1, None))[1];
    assert_eq!((a.cluster.as_str(), a.idle_gpus), ("s", 4 * u64::from(u32::MAX)));
}
