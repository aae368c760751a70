//! The hub's wire (`flightdeck::wire`): everything the hub sends comes back as it left,
//! through the conversions alone and through prost's bytes too; every action and error
//! crosses as itself; what a peer may send (any bytes at all) never panics a reader.
//!
//! One thing does not cross on purpose: a log handle's owner (whose file a Slurm output path
//! must be). The hub reads logs itself, with the handle it still holds, so a client is never
//! told; a job read back has the same locators and no owners.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use flightdeck::backend::BackendError;
use flightdeck::model::{
    Action, ActionOutcome, ArrayInfo, Capabilities, ExitStatus, GpuAllocation, GpuSlot, Health, Job, JobAction, JobRef,
    JobState, LogHandle, Node, NodeAction, NodeRef, NodeState, Queue, QueueQuota, ReplicaGroup, Snapshot, Verb,
    Workload, WorkloadPod,
};
use flightdeck::spec::JobSpec;
use flightdeck::wire::{self, pb};
use proptest::prelude::*;
use prost::Message;
use tonic::Code;

const CLUSTER: &str = "fd22";

// ----- strategies ----------------------------------------------------------------------

/// Any text: Unicode, control characters, the empty string.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "[a-z0-9_-]{1,10}", Just(String::new()), Just("\u{1b}[2J\u{202e}\0".to_string())]
}

fn time() -> impl Strategy<Value = DateTime<Utc>> {
    prop_oneof![any::<i64>(), Just(i64::MIN), Just(i64::MAX), 1_600_000_000_000_000_000i64..1_900_000_000_000_000_000]
        .prop_map(wire::time_from_ns)
}

/// Any `f64` but NaN (which equals nothing, itself included; its own test is below).
fn money() -> impl Strategy<Value = f64> {
    use prop::num::f64::*;
    NORMAL | SUBNORMAL | ZERO | INFINITE | POSITIVE | NEGATIVE
}

fn count() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()]
}

fn job_state() -> impl Strategy<Value = JobState> {
    prop::sample::select(JobState::ALL.to_vec())
}

fn node_state() -> impl Strategy<Value = NodeState> {
    prop::sample::select(vec![
        NodeState::Idle,
        NodeState::Mixed,
        NodeState::Allocated,
        NodeState::Draining,
        NodeState::Drained,
        NodeState::Down,
        NodeState::Completing,
        NodeState::Reserved,
        NodeState::Maintenance,
        NodeState::Future,
        NodeState::PoweredDown,
        NodeState::Unknown,
    ])
}

fn handle() -> impl Strategy<Value = LogHandle> {
    (text(), prop::option::of(text())).prop_map(|(locator, owner)| match owner {
        Some(owner) => LogHandle::owned_by(locator, owner),
        None => LogHandle::new(locator),
    })
}

fn job() -> impl Strategy<Value = Job> {
    let who = (text(), text(), prop::option::of(text()), text(), job_state(), text(), prop::option::of(text()));
    let gpus = (
        count(),
        count(),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::collection::vec(
            (text(), prop::option::of(text()), count(), prop::collection::vec(any::<u32>(), 0..4))
                .prop_map(|(node, model, count, indices)| GpuAllocation { node, model, count, indices }),
            0..3,
        ),
        prop::collection::vec(text(), 0..3),
        count(),
        count(),
        prop::option::of(any::<u64>()),
    );
    let times = (
        prop::option::of(time()),
        prop::option::of(time()),
        prop::option::of(time()),
        prop::option::of(any::<u64>()),
        prop::option::of(any::<u64>()),
        prop::option::of(
            (any::<i32>(), prop::option::of(any::<i32>())).prop_map(|(code, signal)| ExitStatus { code, signal }),
        ),
    );
    let rest = (
        prop::option::of(handle()),
        prop::option::of(handle()),
        prop::option::of(text()),
        prop::option::of(
            (text(), prop::option::of(any::<u32>()), prop::option::of(text()))
                .prop_map(|(array_id, task_id, pending_tasks)| ArrayInfo { array_id, task_id, pending_tasks }),
        ),
        prop::option::of(money()),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(workload()),
    );
    (text(), who, gpus, times, rest).prop_map(|(id, who, gpus, times, rest)| {
        let (name, user, account, partition, state, native_state, reason) = who;
        let (
            gpus_requested,
            gpus_allocated,
            gpu_model,
            gpu_product,
            gpu_allocations,
            nodes,
            node_count,
            cpus,
            memory_mb,
        ) = gpus;
        let (submit_time, start_time, end_time, time_limit_secs, priority, exit) = times;
        let (stdout, stderr, workdir, array, cost_per_hour, uid, migrated_from, workload) = rest;
        Job {
            job_ref: JobRef::new(CLUSTER, id),
            name,
            user,
            account,
            partition,
            state,
            native_state,
            reason,
            gpus_requested,
            gpus_allocated,
            gpu_model,
            gpu_product,
            gpu_allocations,
            nodes,
            node_count,
            cpus,
            memory_mb,
            submit_time,
            start_time,
            end_time,
            time_limit_secs,
            priority,
            exit,
            stdout,
            stderr,
            workdir,
            array,
            cost_per_hour,
            uid,
            migrated_from,
            workload: workload.map(std::sync::Arc::new),
        }
    })
}

fn workload() -> impl Strategy<Value = Workload> {
    let group = (text(), count(), prop::option::of(count()), count())
        .prop_map(|(name, replicas, ready, gpus_per_replica)| ReplicaGroup { name, replicas, ready, gpus_per_replica });
    let pod = (
        text(),
        prop::option::of(text()),
        job_state(),
        text(),
        prop::option::of(text()),
        count(),
        prop::option::of(text()),
        prop::option::of(handle()),
    )
        .prop_map(|(name, role, state, native_state, node, gpus, reason, log)| WorkloadPod {
            name,
            role,
            state,
            native_state,
            node,
            gpus,
            reason,
            log,
        });
    (
        text(),
        text(),
        count(),
        count(),
        prop::collection::vec(group, 0..3),
        prop::collection::vec(pod, 0..4),
        prop::option::of(text()),
        any::<bool>(),
    )
        .prop_map(|(kind, api_version, replicas_ready, replicas_total, groups, pods, suspend, cancel)| Workload {
            kind,
            api_version,
            replicas_ready,
            replicas_total,
            groups,
            pods,
            suspend,
            cancel,
        })
}

fn gpu_slot() -> impl Strategy<Value = GpuSlot> {
    use prop::num::f32::*;
    (
        text(),
        prop::option::of(text()),
        any::<bool>(),
        count(),
        count(),
        count(),
        prop::option::of(NORMAL | SUBNORMAL | ZERO | INFINITE | POSITIVE | NEGATIVE),
    )
        .prop_map(|(model, gpu_product, shared, total, allocated, unhealthy, utilisation)| GpuSlot {
            model,
            gpu_product,
            shared,
            total,
            allocated,
            unhealthy,
            utilisation,
        })
}

fn node() -> impl Strategy<Value = Node> {
    let head = (
        text(),
        node_state(),
        prop::collection::vec(text(), 0..3),
        text(),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(time()),
    );
    let body = (
        prop::collection::vec(gpu_slot(), 0..3),
        count(),
        count(),
        any::<u64>(),
        any::<u64>(),
        prop::collection::vec(text(), 0..3),
        prop::collection::vec(text(), 0..3),
        prop::option::of(money()),
    );
    (head, body).prop_map(|(head, body)| {
        let (name, state, flags, native_state, reason, reason_user, reason_time) = head;
        let (
            gpus,
            cpus_total,
            cpus_allocated,
            memory_total_mb,
            memory_allocated_mb,
            partitions,
            features,
            cost_per_hour,
        ) = body;
        Node {
            cluster: CLUSTER.into(),
            name,
            state,
            flags,
            native_state,
            reason,
            reason_user,
            reason_time,
            gpus,
            cpus_total,
            cpus_allocated,
            memory_total_mb,
            memory_allocated_mb,
            partitions,
            features,
            cost_per_hour,
        }
    })
}

fn queue() -> impl Strategy<Value = Queue> {
    let quota = (text(), text(), any::<i64>(), prop::option::of(any::<i64>()), any::<i64>(), any::<i64>()).prop_map(
        |(flavor, resource, nominal_milli, borrowing_limit_milli, used_milli, borrowed_milli)| QueueQuota {
            flavor,
            resource,
            nominal_milli,
            borrowing_limit_milli,
            used_milli,
            borrowed_milli,
        },
    );
    (
        (text(), count(), count(), count(), count()),
        prop::collection::btree_map(job_state(), count(), 0..5),
        prop::collection::btree_map(text(), count(), 0..4),
        prop::collection::vec(quota, 0..3),
        prop::option::of(text()),
        count(),
        count(),
    )
        .prop_map(
            |(
                (name, nodes, gpus_total, gpus_allocated, gpus_unavailable),
                jobs_by_state,
                pending_by_reason,
                quota,
                cohort,
                workloads_pending,
                workloads_admitted,
            )| Queue {
                cluster: CLUSTER.into(),
                name,
                nodes,
                gpus_total,
                gpus_allocated,
                gpus_unavailable,
                jobs_by_state,
                pending_by_reason,
                quota,
                cohort,
                workloads_pending,
                workloads_admitted,
            },
        )
}

fn health() -> impl Strategy<Value = Health> {
    prop_oneof![
        Just(Health::Connecting),
        time().prop_map(|at| Health::Fresh { at }),
        (time(), text(), prop::option::of(time())).prop_map(|(since, error, last_ok)| Health::Stale {
            since,
            error,
            last_ok
        }),
    ]
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        prop::option::of(time()),
        prop::option::of(text()),
        prop::collection::vec(job(), 0..3),
        prop::collection::vec(node(), 0..3),
        prop::collection::vec(queue(), 0..3),
        prop::collection::vec(text(), 0..3),
    )
        .prop_map(|(taken_at, release, jobs, nodes, queues, notes)| Snapshot {
            cluster: CLUSTER.into(),
            taken_at,
            release,
            jobs,
            nodes,
            queues,
            notes,
        })
}

/// One line of printable text, not blank: what `JobSpec::validate` takes for a name.
fn line() -> impl Strategy<Value = String> {
    "[^\\p{C}\\p{Zl}\\p{Zp}]{1,16}".prop_filter("not blank", |s| !s.trim().is_empty())
}

/// Specs that validate, every field in play.
fn spec() -> impl Strategy<Value = JobSpec> {
    let body = prop_oneof![
        "[^\\x00]{1,30}".prop_filter("not blank", |s| !s.trim().is_empty()).prop_map(|c| (Some(c), None)),
        "[^\\x00]{1,30}".prop_filter("not blank", |s| !s.trim().is_empty()).prop_map(|s| (None, Some(s))),
    ];
    let gpus = prop_oneof![
        Just((0u32, None)),
        (1u32..=8, prop::sample::select(vec!["a100", "h100", "1g.10gb"])).prop_map(|(n, m)| (n, Some(m.to_string()))),
        (1u32..=8).prop_map(|n| (n, None)),
    ];
    let sizes = (
        prop::option::of(1u32..512),
        prop::option::of(prop::sample::select(vec!["64G", "500M", "1T", "4096"]).prop_map(str::to_string)),
        prop::option::of(prop::sample::select(vec!["2h", "90m", "1-00:00:00", "30"]).prop_map(str::to_string)),
        prop::option::of(1u32..64),
        prop::option::of(1u32..8),
        prop::option::of(prop::sample::select(vec!["0-99%10", "1,3,5-7", "0-20:2"]).prop_map(str::to_string)),
    );
    let places = (
        prop::option::of(line()),
        prop::option::of(line()),
        prop::option::of(line()),
        prop::option::of(line()),
        prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", "[^\\x00]{0,12}", 0..4),
        any::<bool>(),
        prop::option::of(line()),
        prop::option::of(
            prop::sample::select(vec!["jobset", "pytorchjob", "mpijob", "volcano"]).prop_map(str::to_string),
        ),
    );
    (line(), body, gpus, sizes, places).prop_map(|(name, (command, script), (gpus, gpu_type), sizes, places)| {
        let (cpus, memory, time_limit, nodes, tasks_per_node, array) = sizes;
        let (partition, account, workdir, image, env, managed, migrated_from, multi_node) = places;
        JobSpec {
            name,
            command,
            script,
            gpus,
            gpu_type,
            cpus,
            memory,
            time_limit,
            partition,
            account,
            workdir,
            image,
            nodes,
            env,
            managed,
            array,
            tasks_per_node,
            migrated_from,
            multi_node,
        }
    })
}

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9._/-]{0,12}"
}

fn action() -> impl Strategy<Value = Action> {
    let job_action = prop::sample::select(vec![
        JobAction::Cancel,
        JobAction::Hold,
        JobAction::Release,
        JobAction::Requeue,
        JobAction::Delete,
    ]);
    let node_action = prop_oneof![
        (text(), any::<bool>()).prop_map(|(reason, force)| NodeAction::Drain { reason, force }),
        Just(NodeAction::Resume),
        Just(NodeAction::Cordon),
        Just(NodeAction::Uncordon),
        Just(NodeAction::Teardown),
    ];
    prop_oneof![
        (name(), spec()).prop_map(|(cluster, spec)| Action::Submit { cluster, spec: Box::new(spec) }),
        (name(), name(), job_action, prop::option::of(text())).prop_map(|(cluster, id, action, uid)| Action::Job {
            job: JobRef::new(cluster, id),
            action,
            uid
        }),
        (name(), name(), node_action)
            .prop_map(|(cluster, name, action)| Action::Node { node: NodeRef { cluster, name }, action }),
        (name(), name(), name(), spec(), prop::option::of(text()), prop::option::of(text())).prop_map(
            |(cluster, id, to, spec, uid, resume)| Action::Migrate {
                source: JobRef::new(cluster, id),
                to,
                spec: Box::new(spec),
                uid,
                resume
            }
        ),
    ]
}

// ----- helpers -------------------------------------------------------------------------

/// What a job is once across: the same, but its log handles without owners.
fn without_owners(job: &Job) -> Job {
    let strip = |h: &Option<LogHandle>| h.as_ref().map(|h| LogHandle::new(h.as_str()));
    let workload = job.workload.as_ref().map(|w| {
        let pods = w.pods.iter().map(|p| WorkloadPod { log: strip(&p.log), ..p.clone() }).collect();
        std::sync::Arc::new(Workload { pods, ..(**w).clone() })
    });
    Job { stdout: strip(&job.stdout), stderr: strip(&job.stderr), workload, ..job.clone() }
}

/// `msg` through prost's bytes and back.
fn through_bytes<M: Message + Default>(msg: &M) -> M {
    M::decode(msg.encode_to_vec().as_slice()).expect("prost reads what it wrote")
}

fn snapshot_across(s: &Snapshot, bytes: bool) -> Snapshot {
    let mut meta = wire::meta_to_pb(s);
    let mut jobs: Vec<pb::Job> = s.jobs.iter().map(wire::job_to_pb).collect();
    let mut nodes: Vec<pb::Node> = s.nodes.iter().map(wire::node_to_pb).collect();
    if bytes {
        meta = through_bytes(&meta);
        jobs = jobs.iter().map(through_bytes).collect();
        nodes = nodes.iter().map(through_bytes).collect();
    }
    wire::snapshot_from_pb(
        &s.cluster,
        meta,
        jobs.into_iter().map(|j| wire::job_from_pb(&s.cluster, j)).collect(),
        nodes.into_iter().map(|n| wire::node_from_pb(&s.cluster, n)).collect(),
    )
}

/// Figures as sources report them: finite, sometimes missing.
fn figure() -> impl Strategy<Value = Option<f32>> {
    proptest::option::of(0.0f32..1000.0)
}

fn gpu_reading() -> impl Strategy<Value = flightdeck::model::GpuReading> {
    use flightdeck::model::{GpuOwner, GpuProcess, GpuReading, GpuSample};
    let owner = prop_oneof![
        Just(None),
        text().prop_map(|id| Some(GpuOwner::Job(id))),
        (text(), text()).prop_map(|(namespace, name)| Some(GpuOwner::Pod { namespace, name })),
    ];
    let process = (any::<u32>(), proptest::option::of(text()), text(), proptest::option::of(any::<u64>()))
        .prop_map(|(pid, user, command, memory_mb)| GpuProcess { pid, user, command, memory_mb });
    (
        (text(), 0u32..16, proptest::option::of(text()), proptest::option::of(text()), figure(), figure()),
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            figure(),
            proptest::option::of(any::<u32>()),
        ),
        (proptest::collection::vec(text(), 0..3), owner, proptest::collection::vec(process, 0..3)),
        (proptest::option::of(text()), proptest::collection::vec(0.0f32..100.0, 0..90)),
    )
        .prop_map(
            |(
                (node, index, uuid, product, utilisation, power),
                (used, total, temperature, xid),
                (problems, owner, processes),
                (job, history),
            )| {
                let sample = GpuSample {
                    node,
                    index,
                    uuid,
                    product,
                    utilisation,
                    memory_used_mb: used,
                    memory_total_mb: total,
                    power_watts: power,
                    temperature_c: temperature,
                    last_xid: xid,
                    problems,
                    owner,
                    processes,
                };
                GpuReading { sample, job, history }
            },
        )
}

fn gpu_use() -> impl Strategy<Value = flightdeck::model::GpuUse> {
    use flightdeck::model::{GpuUse, JobGpuUse};
    let job_use = (text(), count(), figure(), proptest::option::of(time()), any::<bool>()).prop_map(
        |(job, gpus, mean_utilisation, below_since, idle)| JobGpuUse { job, gpus, mean_utilisation, below_since, idle },
    );
    (
        time(),
        text(),
        proptest::collection::vec(gpu_reading(), 0..6),
        proptest::collection::vec(job_use, 0..4),
        proptest::collection::vec(text(), 0..2),
    )
        .prop_map(|(taken_at, source, mut gpus, mut jobs, notes)| {
            gpus.sort_by(|a, b| {
                (a.sample.node.as_bytes(), a.sample.index).cmp(&(b.sample.node.as_bytes(), b.sample.index))
            });
            gpus.dedup_by(|a, b| a.sample.node == b.sample.node && a.sample.index == b.sample.index);
            jobs.sort_by(|a, b| a.job.cmp(&b.job));
            GpuUse { taken_at, source, gpus, jobs, notes }
        })
}

// ----- properties ----------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn jobs_round_trip_without_log_owners(job in job()) {
        let wire_job = wire::job_to_pb(&job);
        let back = wire::job_from_pb(CLUSTER, wire_job.clone());
        prop_assert_eq!(&back, &without_owners(&job));
        prop_assert_eq!(back.stdout.as_deref(), job.stdout.as_deref(), "same locator");
        prop_assert!(back.stdout.iter().chain(&back.stderr).all(|h| h.owner().is_none()));
        prop_assert_eq!(wire::job_from_pb(CLUSTER, through_bytes(&wire_job)), without_owners(&job));
    }

    #[test]
    fn telemetry_round_trips_whole_and_as_a_newest_point_appended(
        used in gpu_use(),
        error in proptest::option::of(text()),
        tried in any::<bool>(),
    ) {
        use std::sync::Arc;
        let mut c = flightdeck::model::ClusterState::new(CLUSTER, "slurm");
        c.gpu_use = Some(Arc::new(used.clone()));
        c.telemetry_error = error.clone();
        c.telemetry_tried = tried;
        let whole = wire::telemetry_from_pb(None, through_bytes(&wire::telemetry_to_pb(&c, true)));
        prop_assert_eq!(whole.gpu_use.as_deref(), Some(&used));
        prop_assert_eq!((&whole.error, whole.tried), (&error, tried));
        // The next reading as a delta: each GPU's held history gains the newest point.
        let mut next = used.clone();
        for g in &mut next.gpus {
            g.history.push(42.0);
        }
        c.gpu_use = Some(Arc::new(next.clone()));
        let delta = wire::telemetry_to_pb(&c, false);
        prop_assert!(delta.gpus.iter().all(|g| g.history == [42.0]));
        let applied = wire::telemetry_from_pb(whole.gpu_use.as_deref(), through_bytes(&delta)).gpu_use.unwrap();
        for (got, want) in applied.gpus.iter().zip(&next.gpus) {
            let keep = want.history.len().min(90);
            prop_assert_eq!(&got.history[..], &want.history[want.history.len() - keep..]);
            prop_assert_eq!(&got.sample, &want.sample);
        }
        // No telemetry at all crosses as none.
        c.gpu_use = None;
        prop_assert!(wire::telemetry_from_pb(Some(&used), wire::telemetry_to_pb(&c, false)).gpu_use.is_none());
    }

    #[test]
    fn nodes_round_trip(node in node()) {
        let wire_node = wire::node_to_pb(&node);
        prop_assert_eq!(&wire::node_from_pb(CLUSTER, wire_node.clone()), &node);
        prop_assert_eq!(&wire::node_from_pb(CLUSTER, through_bytes(&wire_node)), &node);
    }

    #[test]
    fn queues_round_trip(q in queue()) {
        let wire_q = wire::queue_to_pb(&q);
        prop_assert_eq!(&wire::queue_from_pb(CLUSTER, wire_q.clone()), &q);
        prop_assert_eq!(&wire::queue_from_pb(CLUSTER, through_bytes(&wire_q)), &q);
    }

    #[test]
    fn health_round_trips(h in health()) {
        prop_assert_eq!(&wire::health_from_pb(wire::health_to_pb(&h)), &h);
        prop_assert_eq!(&wire::health_from_pb(through_bytes(&wire::health_to_pb(&h))), &h);
    }

    #[test]
    fn snapshots_round_trip(s in snapshot()) {
        let expected = Snapshot { jobs: s.jobs.iter().map(without_owners).collect(), ..s.clone() };
        prop_assert_eq!(&snapshot_across(&s, false), &expected);
        prop_assert_eq!(&snapshot_across(&s, true), &expected);
    }

    #[test]
    fn actions_round_trip(a in action()) {
        let wire_a = wire::action_to_pb(&a);
        prop_assert_eq!(&wire::action_from_pb(wire_a.clone()), &Ok(a.clone()));
        prop_assert_eq!(&wire::action_from_pb(through_bytes(&wire_a)), &Ok(a));
    }

    #[test]
    fn outcomes_round_trip(verb in prop::sample::select(Verb::ALL.to_vec()), target in text(), ok in any::<bool>(), message in text(), index in any::<u32>()) {
        let o = ActionOutcome { verb, target, result: if ok { Ok(message) } else { Err(message) } };
        let wire_o = through_bytes(&wire::outcome_to_pb(index as usize, &o));
        prop_assert_eq!(wire_o.index, index);
        prop_assert_eq!(wire::outcome_from_pb(wire_o), Ok(o));
    }

    #[test]
    fn unknown_verbs_are_refused_by_name(verb in "[a-z ]{0,10}") {
        prop_assume!(!Verb::ALL.iter().any(|v| v.as_str() == verb) && verb != "teardown");
        let asked = pb::Action { action: Some(pb::action::Action::Job(pb::JobAction {
            cluster: "hpc".into(), id: "1".into(), verb: verb.clone(), uid: None,
        })) };
        let e = wire::action_from_pb(asked).expect_err("refused");
        prop_assert!(e.contains(&format!("`{verb}` is not a job action")), "{}", e);
    }

    /// Whatever bytes a peer sends, each reader either refuses them (prost) or reads them;
    /// no conversion panics.
    #[test]
    fn no_bytes_panic_a_reader(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(j) = pb::Job::decode(bytes.as_slice()) { let _ = wire::job_from_pb(CLUSTER, j); }
        if let Ok(n) = pb::Node::decode(bytes.as_slice()) { let _ = wire::node_from_pb(CLUSTER, n); }
        if let Ok(q) = pb::Queue::decode(bytes.as_slice()) { let _ = wire::queue_from_pb(CLUSTER, q); }
        if let Ok(m) = pb::SnapshotMeta::decode(bytes.as_slice()) { let _ = wire::snapshot_from_pb(CLUSTER, m, vec![], vec![]); }
        if let Ok(h) = pb::Health::decode(bytes.as_slice()) { let _ = wire::health_from_pb(h); }
        if let Ok(i) = pb::ClusterInfo::decode(bytes.as_slice()) { let _ = wire::info_from_pb(i); }
        if let Ok(a) = pb::Action::decode(bytes.as_slice()) { let _ = wire::action_from_pb(a); }
        if let Ok(o) = pb::ActOutcome::decode(bytes.as_slice()) { let _ = wire::outcome_from_pb(o); }
        if let Ok(n) = pb::Native::decode(bytes.as_slice()) { let _ = wire::native_from_pb(n); }
        if let Ok(i) = pb::ImportedSpec::decode(bytes.as_slice()) { let _ = wire::imported_from_pb(i); }
        if let Ok(r) = pb::EstimateReply::decode(bytes.as_slice()) { let _ = wire::estimate_from_pb(r); }
        if let Ok(d) = pb::Diagnosis::decode(bytes.as_slice()) { let _ = wire::diagnosis_from_pb(d); }
        if let Ok(c) = pb::LogChunk::decode(bytes.as_slice()) { let _ = wire::log_chunk_from_pb(c); }
    }
}

// ----- examples ------------------------------------------------------------------------

/// What a typical Slurm job looks like while it runs.
fn slurm_running_job() -> Job {
    let submit = Utc.with_ymd_and_hms(2026, 12, 3, 5, 58, 11).unwrap();
    let mut job = Job::new(JobRef::new("hpc", "4851123"), JobState::Running);
    job.name = "train-llama-7b".into();
    job.user = "alice".into();
    job.account = Some("ml".into());
    job.partition = "gpu".into();
    job.native_state = "RUNNING".into();
    job.gpus_requested = 4;
    job.gpus_allocated = 4;
    job.gpu_model = Some("a100".into());
    job.gpu_allocations =
        vec![GpuAllocation { node: "gpu-017".into(), model: Some("a100".into()), count: 4, indices: vec![0, 1, 2, 3] }];
    job.nodes = vec!["gpu-017".into()];
    job.node_count = 1;
    job.cpus = 32;
    job.memory_mb = Some(256_000);
    job.submit_time = Some(submit);
    job.start_time = Some(submit + chrono::Duration::seconds(42));
    job.time_limit_secs = Some(48 * 3600);
    job.priority = Some(4_294_901_760);
    job.stdout = Some(LogHandle::owned_by("/home/alice/runs/llama/slurm-4851123.out", "alice"));
    job.workdir = Some("/home/alice/runs/llama".into());
    job
}

#[test]
fn a_running_slurm_job_is_small_on_the_wire() {
    let job = slurm_running_job();
    let bytes = wire::job_to_pb(&job).encode_to_vec();
    eprintln!("a running Slurm job (4 GPUs on one node): {} bytes on the wire", bytes.len());
    assert!(bytes.len() < 250, "{} bytes", bytes.len());
    let back = wire::job_from_pb("hpc", pb::Job::decode(bytes.as_slice()).unwrap());
    assert_eq!(back, without_owners(&job));
}

#[test]
fn a_handle_owner_stays_on_the_hub() {
    let job = slurm_running_job();
    let back = wire::job_from_pb("hpc", wire::job_to_pb(&job));
    assert_eq!(job.stdout.as_ref().and_then(|h| h.owner()), Some("alice"));
    let handle = back.stdout.as_ref().expect("the handle crosses");
    assert_eq!(handle.as_str(), "/home/alice/runs/llama/slurm-4851123.out");
    assert_eq!(handle.owner(), None, "the owner is not sent");
    assert_ne!(back, job, "so the job differs from the hub's by exactly that");
    assert_eq!(back, without_owners(&job));
}

#[test]
fn the_cluster_name_is_not_sent() {
    let job = slurm_running_job();
    let bytes = wire::job_to_pb(&job).encode_to_vec();
    // `hpc` occurs inside no other field of this job; the update names the cluster once.
    assert!(!bytes.windows(3).any(|w| w == b"hpc"));
    assert_eq!(wire::job_from_pb("elsewhere", pb::Job::decode(bytes.as_slice()).unwrap()).job_ref.cluster, "elsewhere");
}

#[test]
fn nan_costs_and_utilisation_cross_bit_for_bit() {
    let mut node = Node::new(CLUSTER, "n1", NodeState::Idle);
    node.cost_per_hour = Some(f64::NAN);
    node.gpus = vec![GpuSlot {
        model: "h100".into(),
        gpu_product: None,
        shared: false,
        total: 8,
        allocated: 0,
        unhealthy: 0,
        utilisation: Some(f32::NAN),
    }];
    let back = wire::node_from_pb(CLUSTER, through_bytes(&wire::node_to_pb(&node)));
    assert_eq!(back.cost_per_hour.map(f64::to_bits), Some(f64::NAN.to_bits()));
    assert_eq!(back.gpus[0].utilisation.map(f32::to_bits), Some(f32::NAN.to_bits()));
}

#[test]
fn every_action_variant_and_verb_round_trips() {
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
    let mut actions = vec![Action::Submit { cluster: "fd22".into(), spec: Box::new(spec.clone()) }];
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
    actions.push(Action::Job { job: job.clone(), action: JobAction::Delete, uid: Some("8d5b2a3c".into()) });
    actions.push(Action::Node { node: node.clone(), action: NodeAction::Teardown });
    actions.push(Action::Migrate {
        source: job.clone(),
        to: "k8s".into(),
        spec: Box::new(JobSpec { migrated_from: Some(job.to_string()), array: Some("0-7%2".into()), ..spec }),
        uid: Some("u-1".into()),
        resume: Some("18f2a-1c-0".into()),
    });
    let mut verbs = Vec::new();
    for a in &actions {
        let back = wire::action_from_pb(through_bytes(&wire::action_to_pb(a))).expect("an action we sent reads back");
        assert_eq!(&back, a);
        verbs.push(back.verb());
    }
    assert_eq!(verbs, Verb::ALL, "one action per verb, each coming back as itself");
}

#[test]
fn bad_actions_are_refused_with_a_clear_message() {
    use pb::action::Action as Kind;
    let e = wire::action_from_pb(pb::Action { action: None }).unwrap_err();
    assert_eq!(e, "empty action: none of submit, job, node or migrate is set");
    let e = wire::action_from_pb(pb::Action {
        action: Some(Kind::Node(pb::NodeAction {
            cluster: "k8s".into(),
            node: "gpu-1".into(),
            verb: "reboot".into(),
            ..Default::default()
        })),
    })
    .unwrap_err();
    assert_eq!(e, "k8s/gpu-1: `reboot` is not a node action (one of: drain, resume, cordon, uncordon, teardown)");
    let e = wire::action_from_pb(pb::Action {
        action: Some(Kind::Submit(pb::SubmitAction {
            cluster: "hpc".into(),
            spec_json: r#"{"name": "t", "command": "x", "gpu_type": "a100"}"#.into(),
        })),
    })
    .unwrap_err();
    assert_eq!(e, "submit to hpc: invalid job spec: `gpu_type`: a GPU type needs `gpus` of 1 or more");
    let e = wire::action_from_pb(pb::Action {
        action: Some(Kind::Submit(pb::SubmitAction { cluster: "hpc".into(), spec_json: "[]".into() })),
    })
    .unwrap_err();
    assert!(e.starts_with("submit to hpc: cannot read the job spec JSON: expected an object"), "{e}");
    let e = wire::action_from_pb(pb::Action {
        action: Some(Kind::Submit(pb::SubmitAction { cluster: "hpc".into(), spec_json: "{\"name\": 3}".into() })),
    })
    .unwrap_err();
    assert!(e.starts_with("submit to hpc: cannot read the job spec JSON: invalid type: integer `3`"), "{e}");
}

#[test]
fn capabilities_round_trip_for_every_combination() {
    for bits in 0u16..256 {
        let on = |i: u16| bits & (1 << i) != 0;
        let c = Capabilities {
            submit: on(0),
            cancel: on(1),
            hold_release: on(2),
            requeue: on(3),
            drain_resume: on(4),
            cordon_uncordon: on(5),
            delete: on(6),
            teardown: on(7),
        };
        let verbs = wire::capabilities_to_verbs(c);
        let expected: Vec<String> = Verb::ALL.into_iter().filter(|v| c.allows(*v)).map(|v| v.as_str().into()).collect();
        assert_eq!(verbs, expected, "{c:?}");
        assert_eq!(wire::capabilities_from_verbs(&verbs), c, "{verbs:?}");
    }
    let everything = wire::capabilities_to_verbs(Capabilities::ALL);
    assert_eq!(everything.len(), Verb::ALL.len());
    assert_eq!(
        wire::capabilities_from_verbs(&["submit".into(), "warp".into()]),
        Capabilities { submit: true, ..Capabilities::default() }
    );
}

fn every_error() -> Vec<(BackendError, Code)> {
    vec![
        (BackendError::Connect { target: "login:22".into(), message: "refused".into() }, Code::Unavailable),
        (
            BackendError::Command { command: "scancel 12".into(), status: Some(1), stderr: "Invalid job id".into() },
            Code::FailedPrecondition,
        ),
        (BackendError::Parse { what: "squeue --json".into(), message: "eof".into() }, Code::FailedPrecondition),
        (BackendError::Timeout { what: "squeue".into(), secs: 30 }, Code::DeadlineExceeded),
        (BackendError::Unsupported("cluster k8s cannot requeue".into()), Code::Unimplemented),
        (BackendError::InvalidSpec("`memory`: not a size".into()), Code::InvalidArgument),
        (BackendError::ReadOnly, Code::PermissionDenied),
        (BackendError::NotFound("no job hpc/12".into()), Code::NotFound),
        (BackendError::Auth { cluster: "k8s".into(), detail: "HTTP 401".into() }, Code::FailedPrecondition),
        (
            BackendError::Http { request: "GET /api/runs".into(), status: 500, message: "boom".into() },
            Code::FailedPrecondition,
        ),
        (BackendError::Internal("panicked".into()), Code::Internal),
        (BackendError::Remote("hub: the cluster is gone".into()), Code::Unknown),
    ]
}

#[test]
fn every_backend_error_maps_to_its_status() {
    const HUB: &str = "https://hub.example:7443";
    for (error, code) in every_error() {
        let status = wire::status_from_error(&error);
        assert_eq!(status.code(), code, "{error:?}");
        assert_eq!(status.message(), error.to_string(), "the user's words, unchanged");
        let back = wire::error_from_status(&status, HUB);
        let shown = back.to_string();
        match code {
            Code::PermissionDenied => assert_eq!(shown, format!("hub: {error}")),
            Code::NotFound => assert!(matches!(back, BackendError::NotFound(ref m) if *m == error.to_string())),
            Code::Unavailable => {
                assert!(matches!(back, BackendError::Connect { ref target, .. } if target == HUB));
                assert_eq!(shown, format!("cannot reach {HUB}: {error}"));
            }
            _ => {
                assert!(matches!(back, BackendError::Remote(_)), "{back:?}");
                assert_eq!(shown, error.to_string(), "the hub's words, as the user would read them locally");
            }
        }
    }
    // The hub refused the caller's token: said so, without the hub's details.
    let refused = tonic::Status::unauthenticated("token 3f9c… unknown");
    let back = wire::error_from_status(&refused, HUB);
    assert!(matches!(back, BackendError::Remote(ref m) if m == "hub: authentication failed"), "{back:?}");
}

#[test]
fn no_status_carries_more_than_4_kib() {
    let long = BackendError::Command { command: "sbatch".into(), status: Some(1), stderr: "é".repeat(10_000) };
    let status = wire::status_from_error(&long);
    assert!(status.message().len() <= wire::MAX_STATUS_MESSAGE, "{}", status.message().len());
    assert!(status.message().ends_with('…'));
    assert!(long.to_string().starts_with(status.message().trim_end_matches('…')));
    let back = wire::error_from_status(&tonic::Status::internal("x".repeat(1 << 20)), "h");
    assert!(back.to_string().len() <= wire::MAX_STATUS_MESSAGE);
}
