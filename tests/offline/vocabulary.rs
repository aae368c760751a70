//! The words the fleet and the front ends exchange survive a trip through JSON: what the hub
//! will send over the wire and the audit log keeps must come back exactly as they left.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use flightdeck::model::{
    Action, ActionOutcome, ArrayInfo, Capabilities, ClusterState, Diagnosis, ExitStatus, FleetState, GpuAllocation,
    GpuSlot, Health, Job, JobAction, JobRef, JobState, LogChunk, LogStream, Node, NodeAction, NodeRef, NodeState,
    Queue, QueueQuota, Snapshot, Verb,
};
use flightdeck::spec::JobSpec;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) -> T {
    let json = serde_json::to_string(value).expect("serialises");
    let back: T = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(&back, value, "{json}");
    back
}

fn busy_snapshot() -> Snapshot {
    let at = Utc.with_ymd_and_hms(2026, 12, 3, 6, 0, 0).unwrap();
    let mut job = Job::new(JobRef::new("fd22", "12_3"), JobState::Running);
    job.name = "train \"llama\" ünïcode".into();
    job.user = "alice".into();
    job.account = Some("ml".into());
    job.partition = "gpu".into();
    job.native_state = "RUNNING".into();
    job.gpus_requested = 4;
    job.gpus_allocated = 4;
    job.gpu_model = Some("a100".into());
    job.gpu_product = Some("NVIDIA-A100-SXM4-40GB".into());
    job.gpu_allocations =
        vec![GpuAllocation { node: "a100-01".into(), model: Some("a100".into()), count: 4, indices: vec![0, 1, 2, 3] }];
    job.nodes = vec!["a100-01".into()];
    job.node_count = 1;
    job.cpus = 8;
    job.memory_mb = Some(u64::MAX);
    job.submit_time = Some(at);
    job.start_time = Some(at);
    job.time_limit_secs = Some(3600);
    job.priority = Some(42);
    job.exit = Some(ExitStatus { code: 0, signal: Some(9) });
    job.stdout = Some("/home/alice/slurm-12_3.out".into());
    job.array = Some(ArrayInfo { array_id: "12".into(), task_id: Some(3), pending_tasks: None });
    let mut pending = Job::new(JobRef::new("fd22", "13"), JobState::Pending);
    pending.reason = Some("Resources".into());

    let mut node = Node::new("fd22", "a100-01", NodeState::Mixed);
    node.flags = vec!["DRAIN".into()];
    node.reason = Some("XID 79".into());
    node.reason_time = Some(at);
    node.gpus = vec![GpuSlot {
        model: "a100".into(),
        gpu_product: Some("NVIDIA-A100-SXM4-40GB".into()),
        shared: true,
        total: 4,
        allocated: 4,
        unhealthy: 0,
        utilisation: Some(87.5),
    }];
    node.partitions = vec!["gpu".into()];
    let queue = Queue {
        cluster: "fd22".into(),
        name: "gpu".into(),
        jobs_by_state: BTreeMap::from([(JobState::Running, 1), (JobState::Pending, 1)]),
        quota: vec![QueueQuota {
            flavor: "h100".into(),
            resource: "nvidia.com/gpu".into(),
            nominal_milli: 16_000,
            borrowing_limit_milli: Some(i64::MAX),
            used_milli: -1,
            borrowed_milli: 0,
        }],
        ..Queue::default()
    };
    Snapshot {
        cluster: "fd22".into(),
        taken_at: Some(at),
        release: Some("22.05.8".into()),
        jobs: vec![job, pending],
        nodes: vec![node],
        queues: vec![queue],
        notes: vec!["text fallback".into()],
    }
}

#[test]
fn a_whole_fleet_state_round_trips() {
    let at = Utc.with_ymd_and_hms(2026, 12, 3, 6, 0, 0).unwrap();
    let state = FleetState {
        clusters: vec![
            ClusterState {
                health: Health::Fresh { at },
                snapshot: Some(Arc::new(busy_snapshot())),
                attempts: 3,
                last_refresh_ms: Some(15),
                ..ClusterState::new("fd22", "slurm")
            },
            ClusterState {
                capabilities: Capabilities { requeue: false, ..Capabilities::ALL },
                health: Health::Stale { since: at, error: "cannot reach: refused".into(), last_ok: None },
                ..ClusterState::new("k8s", "kubernetes")
            },
            ClusterState::new("lab", "slurm"),
        ],
        read_only: true,
        version: 7,
    };
    let back = round_trip(&state);
    assert!(!back.clusters[1].capabilities.allows(Verb::Requeue), "capabilities cross the wire");
}

fn spec_of(action: &Action) -> JobSpec {
    match action {
        Action::Submit { spec, .. } => (**spec).clone(),
        other => panic!("not a submission: {other:?}"),
    }
}

#[test]
fn every_action_and_outcome_round_trips() {
    let spec = JobSpec {
        name: "t".into(),
        command: Some("python train.py".into()),
        gpus: 2,
        gpu_type: Some("h100".into()),
        memory: Some("32G".into()),
        time_limit: Some("2h".into()),
        env: BTreeMap::from([("WANDB_MODE".into(), "offline".into())]),
        ..JobSpec::default()
    };
    let job = JobRef::new("fd22", "12_3");
    let node = NodeRef { cluster: "k8s".into(), name: "gpu-1".into() };
    let mut actions = vec![Action::Submit { cluster: "fd22".into(), spec: Box::new(spec) }];
    for a in [JobAction::Cancel, JobAction::Hold, JobAction::Release, JobAction::Requeue] {
        actions.push(Action::Job { job: job.clone(), action: a, uid: None });
    }
    for a in [
        NodeAction::Drain { reason: "XID 79; \u{1b}[31m".into(), force: true },
        NodeAction::Resume,
        NodeAction::Cordon,
        NodeAction::Uncordon,
    ] {
        actions.push(Action::Node { node: node.clone(), action: a });
    }
    actions.push(Action::Job {
        job: job.clone(),
        action: JobAction::Delete,
        uid: Some("8d5b2a3c-0d1e-4f7a-9b6c-2e1f0a9d8c7b".into()),
    });
    actions.push(Action::Node { node: node.clone(), action: NodeAction::Teardown });
    let migrated =
        JobSpec { migrated_from: Some(job.to_string()), array: Some("0-7%2".into()), ..spec_of(&actions[0]) };
    actions.push(Action::Migrate {
        source: job.clone(),
        to: "k8s".into(),
        spec: Box::new(migrated),
        uid: None,
        resume: Some("18f2a-1c-0".into()),
    });
    let verbs: Vec<Verb> = actions.iter().map(|a| round_trip(a).verb()).collect();
    assert_eq!(verbs, Verb::ALL, "one action per verb, each coming back as itself");

    for result in [Ok("fd22/14".to_string()), Ok(String::new()), Err("Invalid job id specified".to_string())] {
        round_trip(&ActionOutcome { verb: Verb::Cancel, target: job.to_string(), result });
    }
    // The verb is a word on the wire, not a number.
    let json = serde_json::to_value(ActionOutcome { verb: Verb::Drain, target: "x".into(), result: Ok(String::new()) })
        .unwrap();
    assert_eq!(json["verb"], "drain");
}

#[test]
fn diagnosis_capabilities_and_log_chunks_round_trip() {
    let mut d = Diagnosis { transport: "ssh root@127.0.0.1:2222".into(), latency_ms: Some(157), ..Default::default() };
    d.release = Some("24.11.5".into());
    d.fact("JSON output", "yes");
    d.fact("refresh runs", "squeue --json");
    d.fact("refresh runs", "sinfo --json");
    d.notes.push("one refresh read 3 jobs".into());
    let back = round_trip(&d);
    assert_eq!(back.get("refresh runs"), Some("squeue --json"));
    assert_eq!(back.facts.len(), 3);

    round_trip(&Capabilities::ALL);
    round_trip(&Capabilities::default());
    round_trip(&LogChunk { data: "line\n\u{fffd}".into(), offset: u64::MAX, dropped: 9 });
    round_trip(&LogStream::Stderr);
    round_trip(&flightdeck::model::LogHandle::new("pod/ml/train-0/main"));
}
