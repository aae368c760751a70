//! Why a job waits, in words, with the evidence the cluster's last snapshot holds.
//!
//! Pure over one snapshot: the reason the backend gives (a Slurm code explained by
//! [`slurm_reasons`], or a Kubernetes scheduler message split into its per-reason node
//! counts), then what the snapshot shows about it: the jobs ahead in the partition, the
//! largest free block of GPUs next to what the job asks for, the nodes that are out and why,
//! what the user already holds. Nothing here asks the controller anything, so `why` costs no
//! RPC beyond the refresh the fleet makes anyway.
//!
//! Why a job waits, pure over its cluster's snapshot: the reason explained
//! (`model::slurm_reasons`, what `squeue` adds after the code kept as `Slurm adds: …`), then
//! evidence per code: `Priority` pending jobs of higher priority in the partition, `Resources` the
//! largest free block of the model against the ask per node and how many nodes fit,
//! `ReqNodeNotAvail`/`NodeDown`/`PartitionDown` the partition's nodes out of service with reasons,
//! GPU and group limits what the user holds in running jobs, `JobHeldUser` the release command; for
//! `Resources`/`ReqNodeNotAvail`/`NodeDown`/`PartitionNodeLimit`/`Nodes_required_for_job_are_DOWN`
//! first the job's size against its partition (`why/size.rs`); a Kubernetes scheduler message split
//! into per-reason node counts (`why/scheduler.rs`), after the size's verdict where no node could
//! ever hold a pod; a waiting Volcano gang as its size (`minAvailable`), each pod's ask and how
//! many of its pods the nodes in service could place now.

use serde::Serialize;

mod scheduler;
mod size;

use scheduler::scheduling_counts;
pub use scheduler::waiting_words;
use size::{SIZE_CODES, larger_than_any_node, size};

use crate::model::StartEstimate;
use crate::model::slurm_reasons::{self, Outlook};
use crate::model::words::{counted, verb};
use crate::model::workload::GangWait;
use crate::model::{Job, JobState, Node, Snapshot};

/// Most nodes named in one line of evidence before "and N more".
const NAMED: usize = 5;

/// One job's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Why {
    /// `CLUSTER/ID`.
    pub job: String,
    pub state: JobState,
    /// The backend's own reason, as given.
    pub reason: Option<String>,
    /// What it means, where it is a known code.
    pub meaning: Option<String>,
    /// `waits`, `limited`, `needs action`, `blocked`, `ended`.
    pub outlook: Option<&'static str>,
    /// What the snapshot shows about it, a line each.
    pub evidence: Vec<String>,
    /// The scheduler's own estimate of its start, where one was asked for and given (Slurm
    /// `squeue --start`): an estimate, which moves as jobs end early or others arrive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<StartEstimate>,
}

impl Why {
    /// Worth asking the backend what it adds about the job's turn: waiting its turn
    /// (`Priority`) or for room (`Resources`), where priority decides who goes first; or
    /// waiting in a Kueue queue, where Kueue's visibility API gives its position.
    pub fn wants_priority(&self) -> bool {
        asks_its_turn(self.state, self.reason.as_deref())
    }

    /// Worth asking the scheduler when it would start: waiting, not held, and the refresh
    /// carried no planned start.
    pub fn wants_estimate(&self) -> bool {
        self.state == JobState::Pending && self.expected_start.is_none()
    }
}

/// A job in `state` waiting for `reason` whose backend can say more about its turn on
/// demand (see [`Why::wants_priority`]); the cockpit's detail asks the same.
pub fn asks_its_turn(state: JobState, reason: Option<&str>) -> bool {
    let reason = reason.map(str::trim);
    state == JobState::Pending
        && (matches!(reason, Some("Priority" | "Resources")) || reason.is_some_and(|r| r.starts_with("Kueue")))
}

/// `job` of `snapshot` explained.
pub fn why(snapshot: &Snapshot, job: &Job) -> Why {
    let explained = job.reason.as_deref().and_then(slurm_reasons::explain);
    let reason = job.reason.as_deref().unwrap_or("").trim();
    let code = slurm_reasons::code_of(reason);
    let mut evidence = Vec::new();
    let mut gang_waits = false;
    // The job's size rules out every node (or enough of them) for good.
    let mut never = false;
    if !job.state.is_waiting() {
        evidence.push(format!("it is {}, not waiting", job.state));
    } else if explained.is_some() {
        never = slurm_evidence(snapshot, job, code, &mut evidence);
    } else if let Some(line) = gang(snapshot, job, reason) {
        evidence.push(line);
        gang_waits = true;
    } else if let Some(counts) = scheduling_counts(reason) {
        if let Some(line) = larger_than_any_node(snapshot, job) {
            evidence.push(line);
            never = true;
        }
        evidence.extend(counts);
    } else if let Some(quota) = kueue_quota(reason) {
        evidence.extend(quota);
    }
    let (mut meaning, mut outlook) =
        (explained.as_ref().map(|e| e.words.clone()), explained.map(|e| outlook_word(e.outlook)));
    if meaning.is_none()
        && let Some((words, look, said)) = cloud_capacity(reason, job.state)
    {
        (meaning, outlook) = (Some(words.into()), Some(look));
        evidence.extend(said);
    }
    if never {
        if meaning.is_none() {
            meaning = Some("it asks for more on one node than any node has".into());
        }
        outlook = Some("blocked");
    }
    if meaning.is_none() && gang_waits {
        meaning = Some("its pods are a gang: the scheduler starts all of them together or none".into());
        outlook = Some("waits");
    }
    Why {
        job: job.job_ref.to_string(),
        state: job.state,
        reason: job.reason.clone(),
        meaning,
        outlook,
        evidence,
        expected_start: planned_start(snapshot, job),
    }
}

/// The job's size against the nodes that could hold it, in one line, where that is the
/// question (a Slurm code of [`size::SIZE_CODES`], or a Kubernetes scheduler message): the
/// line `why` gives first, for the cockpit's detail, which shows it beside the reason.
pub fn size_line(snapshot: &Snapshot, job: &Job) -> Option<String> {
    if !job.state.is_waiting() {
        return None;
    }
    let reason = job.reason.as_deref()?.trim();
    if slurm_reasons::explain(reason).is_some() {
        SIZE_CODES.contains(&slurm_reasons::code_of(reason)).then(|| size(snapshot, job)).flatten().map(|s| s.line)
    } else if scheduling_counts(reason).is_some() && gang(snapshot, job, reason).is_none() {
        larger_than_any_node(snapshot, job)
    } else {
        None
    }
}

/// The start the refresh already carries for a pending job: Slurm's job record holds the
/// backfill plan's time as the pending job's start (what `squeue --start` prints), so the
/// estimate costs no RPC of its own. Only a time after the snapshot counts; nothing for a
/// job the scheduler has not planned.
fn planned_start(snapshot: &Snapshot, job: &Job) -> Option<StartEstimate> {
    let at = job.start_time?;
    let taken = snapshot.taken_at?;
    (job.state == JobState::Pending && at > taken).then(|| StartEstimate {
        at,
        nodes: None,
        partition: (!job.partition.is_empty()).then(|| job.partition.clone()),
        processors: (job.cpus > 0).then_some(job.cpus),
    })
}

fn outlook_word(outlook: Outlook) -> &'static str {
    match outlook {
        Outlook::Waits => "waits",
        Outlook::Limited => "limited",
        Outlook::NeedsAction => "needs action",
        Outlook::Blocked => "blocked",
        Outlook::Ended => "ended",
    }
}

/// The evidence for a Slurm code; true where the job's size means it can never start as asked.
fn slurm_evidence(snapshot: &Snapshot, job: &Job, code: &str, evidence: &mut Vec<String>) -> bool {
    let mut never = false;
    if SIZE_CODES.contains(&code)
        && let Some(size) = size(snapshot, job)
    {
        never = size.never;
        evidence.push(size.line);
    }
    // What Slurm adds after the code follows the size's verdict, which concludes it.
    if let Some(details) = job.reason.as_deref().and_then(slurm_reasons::details) {
        evidence.push(format!("Slurm adds: {details}"));
    }
    let partition =
        if job.partition.is_empty() { "its partition".to_string() } else { format!("partition {}", job.partition) };
    match code {
        "Priority" => {
            let waiting: Vec<&Job> = snapshot
                .jobs
                .iter()
                .filter(|j| j.state.is_waiting() && j.partition == job.partition && j.job_ref != job.job_ref)
                .collect();
            match job.priority {
                Some(mine) => {
                    let ahead = waiting.iter().filter(|j| j.priority.is_some_and(|p| p > mine)).count();
                    let (ahead, have) =
                        (counted(ahead as u64, "pending job", "pending jobs"), verb(ahead, "has", "have"));
                    evidence.push(format!("{ahead} in {partition} {have} a higher priority than its {mine}"));
                }
                None => evidence.push(format!(
                    "{} {} pending in {partition}",
                    counted(waiting.len() as u64, "other job", "other jobs"),
                    verb(waiting.len(), "is", "are")
                )),
            }
        }
        "Resources" | "Constraints" => {
            let per_node = job.gpus_requested.div_ceil(job.node_count.max(1));
            if per_node > 0 {
                let model = job.gpu_model.as_deref();
                let asks = match model {
                    Some(m) => format!("{per_node}×{m}"),
                    None => counted(per_node, "GPU", "GPUs"),
                };
                let nodes = job.node_count.max(1);
                let on = if nodes == 1 { "on one node".to_string() } else { format!("on each of {nodes} nodes") };
                let blocks: Vec<(u32, &str)> = snapshot
                    .nodes
                    .iter()
                    .filter(|n| in_partition(n, job) && !n.state.is_unavailable() && n.has_gpu_model(model))
                    .map(|n| (n.free_gpus_of(model), n.name.as_str()))
                    .collect();
                let fitting = blocks.iter().filter(|(free, _)| *free >= per_node).count();
                match blocks.iter().max_by_key(|(free, name)| (*free, std::cmp::Reverse(*name))) {
                    Some((largest, node)) => evidence.push(format!(
                        "it needs {asks} {on}; the largest free block in {partition} is {largest} on {node}, and \
                         {} room for it",
                        counted(fitting as u64, "node has", "nodes have")
                    )),
                    None => {
                        evidence.push(format!("it needs {asks} {on}; {partition} has no node in service with them"))
                    }
                }
            }
            out_of_service(snapshot, job, &partition, evidence);
        }
        "ReqNodeNotAvail" | "NodeDown" | "PartitionDown" | "PartitionInactive" => {
            out_of_service(snapshot, job, &partition, evidence);
        }
        "JobHeldUser" => evidence.push(format!("`flightdeck release {}` lets it run", job.job_ref)),
        _ if code.contains("GRES") || code.contains("Grp") || code.contains("PerUser") => {
            let running: Vec<&Job> =
                snapshot.jobs.iter().filter(|j| j.user == job.user && j.state == JobState::Running).collect();
            let gpus: u32 = running.iter().map(|j| j.gpus_allocated).sum();
            evidence.push(format!(
                "{} holds {} in {} on this cluster",
                if job.user.is_empty() { "its user" } else { &job.user },
                counted(gpus, "GPU", "GPUs"),
                counted(running.len() as u64, "running job", "running jobs")
            ));
        }
        _ => {}
    }
    never
}

/// A gang that waits: see [`crate::model::workload::GangWait`].
fn gang(snapshot: &Snapshot, job: &Job, reason: &str) -> Option<String> {
    GangWait::of(&snapshot.nodes, job, reason).map(|g| g.line())
}

/// The node serves the job's partition (any node, when the job names none).
fn in_partition(node: &Node, job: &Job) -> bool {
    job.partition.is_empty() || node.partitions.iter().any(|p| p == &job.partition)
}

/// The partition's nodes that take no work, with their reasons.
fn out_of_service(snapshot: &Snapshot, job: &Job, partition: &str, evidence: &mut Vec<String>) {
    let out: Vec<String> = snapshot
        .nodes
        .iter()
        .filter(|n| in_partition(n, job) && n.state.is_unavailable())
        .map(|n| match &n.reason {
            Some(reason) => format!("{} ({}: {reason})", n.name, n.state),
            None => format!("{} ({})", n.name, n.state),
        })
        .collect();
    if out.is_empty() {
        return;
    }
    let more = out.len().saturating_sub(NAMED);
    let mut line = format!(
        "{} of {partition} {} no work: {}",
        counted(out.len() as u64, "node", "nodes"),
        verb(out.len(), "takes", "take"),
        out[..out.len().min(NAMED)].join(", ")
    );
    if more > 0 {
        line.push_str(&format!(" and {more} more"));
    }
    evidence.push(line);
}

/// A cloud's "no capacity" (dstack: `no capacity: No matching fleet found…`, `retrying: …`
/// while it tries again; SkyPilot: `ResourcesUnavailableError`, `Failed to provision all
/// possible launchable resources`): what it means, the outlook (waits while the run
/// retries, ended once it gave up), and the cloud's own words.
fn cloud_capacity(reason: &str, state: JobState) -> Option<(&'static str, &'static str, Option<String>)> {
    let lower = reason.to_ascii_lowercase();
    let dstack = lower.contains("no capacity") || lower.contains("no matching fleet") || lower.contains("no offers");
    let skypilot = lower.contains("resourcesunavailable")
        || lower.contains("failed to provision")
        || lower.contains("no resource satisfying");
    if !dstack && !skypilot {
        return None;
    }
    let words = "no cloud, region or fleet it may use offered the machines it asks for";
    let outlook = if state.is_finished() { "ended" } else { "waits" };
    let detail = reason.split_once(": ").map(|(_, rest)| rest).unwrap_or(reason).trim();
    let said = (!detail.is_empty()).then(|| format!("the cloud says: {detail}"));
    Some((words, outlook, said))
}

/// Kueue's admission message (the Workload's `QuotaReserved` condition, as the backend puts
/// it in the reason: `Kueue Pending: couldn't assign flavors to pod set main: insufficient
/// unused quota for nvidia.com/gpu in flavor h100, 4 more needed`) as one line per resource
/// and flavor short: what the ClusterQueue lacks now, or that the ask exceeds what it can
/// ever lend.
fn kueue_quota(reason: &str) -> Option<Vec<String>> {
    let message = reason.strip_prefix("Kueue")?;
    let mut lines = Vec::new();
    for clause in message.split(';').flat_map(|c| c.split("insufficient ").skip(1)) {
        let clause = clause.trim().trim_end_matches([',', '.']);
        if let Some(rest) = clause.strip_prefix("unused quota for ") {
            let (what, more) = rest.split_once(", ").unwrap_or((rest, ""));
            let (resource, flavor) = what.split_once(" in flavor ").unwrap_or((what, "?"));
            let needed = more.trim_end_matches(" more needed").trim();
            lines.push(format!(
                "its ClusterQueue has {needed} {resource} too few free in flavor {flavor}: it waits for others to end"
            ));
        } else if let Some(rest) = clause.strip_prefix("quota for ") {
            let what = rest.split(", ").next().unwrap_or(rest);
            let (resource, flavor) = what.split_once(" in flavor ").unwrap_or((what, "?"));
            lines.push(format!(
                "it asks for more {resource} than its ClusterQueue can ever give in flavor {flavor}: ask for less or another queue"
            ));
        }
    }
    if lines.is_empty() {
        lines.push(format!("Kueue says: {}", message.trim_start_matches(':').trim()));
    }
    Some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSlot, JobRef, NodeState};

    fn node(name: &str, state: NodeState, total: u32, allocated: u32) -> Node {
        let mut n = Node::new("hpc", name, state);
        n.partitions = vec!["gpu".into()];
        n.gpus = vec![GpuSlot {
            model: "h100".into(),
            gpu_product: None,
            shared: false,
            total,
            allocated,
            unhealthy: 0,
            utilisation: None,
        }];
        n
    }

    fn pending(id: &str, reason: &str, priority: Option<u64>, gpus: u32) -> Job {
        let mut j = Job::new(JobRef::new("hpc", id), JobState::Pending);
        j.partition = "gpu".into();
        j.reason = Some(reason.into());
        j.priority = priority;
        j.gpus_requested = gpus;
        j.gpu_model = Some("h100".into());
        j.node_count = 1;
        j.user = "alice".into();
        j
    }

    fn snapshot(jobs: Vec<Job>, nodes: Vec<Node>) -> Snapshot {
        Snapshot { cluster: "hpc".into(), jobs, nodes, ..Snapshot::default() }
    }

    #[test]
    fn the_planned_start_the_record_carries_is_the_estimate_and_spares_the_question() {
        let taken = chrono::DateTime::from_timestamp(1_796_400_000, 0).unwrap();
        let mut me = pending("10", "Resources", None, 1);
        me.start_time = Some(taken + chrono::TimeDelta::minutes(30));
        let mut snap = snapshot(vec![me.clone()], vec![]);
        snap.taken_at = Some(taken);
        let w = why(&snap, &me);
        assert_eq!(
            w.expected_start.as_ref().map(|e| (e.at, e.partition.as_deref())),
            Some((me.start_time.unwrap(), Some("gpu")))
        );
        assert!(!w.wants_estimate(), "no squeue --start when the plan came with the refresh");
        // No plan (or a time already past): ask.
        me.start_time = Some(taken - chrono::TimeDelta::minutes(1));
        let w = why(&snapshot(vec![me.clone()], vec![]), &me);
        assert!(w.expected_start.is_none() && w.wants_estimate());
        me.start_time = None;
        let mut snap = snapshot(vec![me.clone()], vec![]);
        snap.taken_at = Some(taken);
        assert!(why(&snap, &me).wants_estimate());
    }

    #[test]
    fn priority_counts_the_jobs_ahead_in_the_partition() {
        let me = pending("10", "Priority", Some(100), 1);
        let mut other_partition = pending("13", "Priority", Some(900), 1);
        other_partition.partition = "cpu".into();
        let snap = snapshot(
            vec![
                me.clone(),
                pending("11", "Priority", Some(200), 1),
                pending("12", "Resources", Some(50), 1),
                other_partition,
            ],
            vec![],
        );
        let w = why(&snap, &me);
        assert_eq!(w.meaning.as_deref(), Some("jobs of higher priority are ahead of it in the partition"));
        assert_eq!(w.outlook, Some("waits"));
        assert_eq!(w.evidence, ["1 pending job in partition gpu has a higher priority than its 100"]);
    }

    #[test]
    fn resources_compares_the_ask_with_the_largest_free_block() {
        let me = pending("10", "Resources", None, 8);
        let snap = snapshot(
            vec![me.clone()],
            vec![
                node("dgx01", NodeState::Mixed, 8, 2),
                node("dgx02", NodeState::Mixed, 8, 4),
                Node {
                    gpus: vec![GpuSlot { model: "a100".into(), ..node("a1", NodeState::Idle, 8, 0).gpus[0].clone() }],
                    ..node("a1", NodeState::Idle, 8, 0)
                },
                node("dgx03", NodeState::Drained, 8, 0),
            ],
        );
        let mut drained = snap.nodes[3].clone();
        drained.reason = Some("bad GPU".into());
        let snap = Snapshot {
            nodes: vec![snap.nodes[0].clone(), snap.nodes[1].clone(), snap.nodes[2].clone(), drained],
            ..snap
        };
        let w = why(&snap, &me);
        assert_eq!(
            w.evidence,
            [
                "needs 1 node with 8 h100; the partition has 3 such nodes, one of them (dgx03) drained, none free now: it \
                 waits for one to free up",
                "it needs 8×h100 on one node; the largest free block in partition gpu is 6 on dgx01, and 0 nodes have room for it",
                "1 node of partition gpu takes no work: dgx03 (drained: bad GPU)",
            ]
        );
    }

    #[test]
    fn a_gpu_limit_says_what_the_user_holds() {
        let me = pending("10", "QOSMaxGRESPerUser", None, 4);
        let mut running = Job::new(JobRef::new("hpc", "9"), JobState::Running);
        running.user = "alice".into();
        running.gpus_allocated = 16;
        let w = why(&snapshot(vec![me.clone(), running], vec![]), &me);
        assert_eq!(w.outlook, Some("limited"));
        assert_eq!(w.evidence, ["alice holds 16 GPUs in 1 running job on this cluster"]);
    }

    #[test]
    fn kueue_quota_messages_say_what_the_cluster_queue_lacks() {
        let mut wl = Job::new(JobRef::new("k8s", "ml:train"), JobState::Pending);
        wl.reason = Some(
            "Kueue Pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in \
             flavor h100, 4 more needed"
                .into(),
        );
        assert_eq!(
            why(&snapshot(vec![], vec![]), &wl).evidence,
            ["its ClusterQueue has 4 nvidia.com/gpu too few free in flavor h100: it waits for others to end"]
        );
        wl.reason = Some(
            "Kueue Pending: couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor \
             a100, request > maximum capacity (16 > 8)"
                .into(),
        );
        let evidence = why(&snapshot(vec![], vec![]), &wl).evidence;
        assert_eq!(
            evidence,
            [
                "it asks for more nvidia.com/gpu than its ClusterQueue can ever give in flavor a100: ask for less or another queue"
            ]
        );
        wl.reason = Some("Kueue: waiting for admission checks".into());
        assert_eq!(why(&snapshot(vec![], vec![]), &wl).evidence, ["Kueue says: waiting for admission checks"]);
    }

    #[test]
    fn a_clouds_no_capacity_is_said_in_words() {
        let mut run = Job::new(JobRef::new("dstack", "train"), JobState::Pending);
        run.reason = Some("retrying: no capacity: No matching fleet found. Possible reasons: …".into());
        let w = why(&snapshot(vec![], vec![]), &run);
        assert_eq!(w.meaning.as_deref(), Some("no cloud, region or fleet it may use offered the machines it asks for"));
        assert_eq!(
            (w.outlook, w.evidence[0].as_str()),
            (Some("waits"), "the cloud says: no capacity: No matching fleet found. Possible reasons: …")
        );
        let mut sky = Job::new(JobRef::new("sky", "7"), JobState::Failed);
        sky.reason = Some("ResourcesUnavailableError: Failed to provision all possible launchable resources.".into());
        let w = why(&snapshot(vec![], vec![]), &sky);
        assert_eq!(w.outlook, Some("ended"));
        assert!(
            w.evidence.iter().any(|l| l == "the cloud says: Failed to provision all possible launchable resources."),
            "{w:?}"
        );
        run.reason = Some("waiting for a node".into());
        assert_eq!(why(&snapshot(vec![], vec![]), &run).meaning, None);
    }

    #[test]
    fn held_and_running_jobs() {
        let mut held = pending("10", "JobHeldUser", None, 1);
        held.state = JobState::Held;
        assert_eq!(why(&snapshot(vec![], vec![]), &held).evidence, ["`flightdeck release hpc/10` lets it run"]);
        let running = Job::new(JobRef::new("hpc", "9"), JobState::Running);
        assert_eq!(why(&snapshot(vec![], vec![]), &running).evidence, ["it is running, not waiting"]);
    }

    #[test]
    fn a_gang_says_how_many_pods_it_needs_and_how_many_fit() {
        use crate::model::{Workload, WorkloadPod};
        let mut vc = Job::new(JobRef::new("k8s", "research:vcjob:dist-train"), JobState::Pending);
        vc.gpu_model = Some("h100".into());
        vc.reason = Some(
            "Volcano NotEnoughResources: 4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, \
             4 minAvailable; Pending: 4 Unschedulable"
                .into(),
        );
        let pod = |i: u32| WorkloadPod {
            name: format!("dist-train-worker-{i}"),
            role: None,
            state: JobState::Pending,
            native_state: "Pending".into(),
            node: None,
            gpus: 8,
            reason: None,
            log: None,
        };
        vc.workload = Some(std::sync::Arc::new(Workload {
            kind: "Job".into(),
            replicas_total: 4,
            pods: (0..4).map(pod).collect(),
            ..Workload::default()
        }));
        let h100 = |name: &str, state: NodeState, allocated: u32| node(name, state, 8, allocated);
        let nodes = vec![
            h100("a", NodeState::Idle, 0),
            h100("b", NodeState::Idle, 0),
            h100("c", NodeState::Mixed, 4),
            h100("d", NodeState::Down, 0),
        ];
        let w = why(&snapshot(vec![vc.clone()], nodes.clone()), &vc);
        assert_eq!(
            w.evidence,
            ["gang of 4 pods of 8×h100 waits: 2 nodes can take one, room for 2 of the 4 it still needs; it starts \
              only when all fit at once"]
        );
        assert_eq!(w.outlook, Some("waits"));
        assert!(w.meaning.unwrap().contains("gang"));
        // One node with room: the words stay singular.
        let w = why(&snapshot(vec![vc.clone()], nodes[1..].to_vec()), &vc);
        assert!(w.evidence[0].contains(": 1 node can take one, room for 1 of the 4"), "{:?}", w.evidence);
        // The adapter's reason (short words, Volcano's after them) reads the same.
        let gang = crate::model::workload::GangWait::of(&nodes, &vc, vc.reason.as_deref().unwrap()).unwrap();
        assert_eq!(gang.short(), "gang of 4 pods of 8×h100 waits: 2 nodes can take one");
        let mut worded = vc.clone();
        worded.reason = Some(format!("{} ({})", gang.short(), vc.reason.as_deref().unwrap()));
        let w2 = why(&snapshot(vec![worded.clone()], nodes.clone()), &worded);
        assert_eq!(w2.evidence[0], why(&snapshot(vec![vc.clone()], nodes.clone()), &vc).evidence[0]);
    }

    #[test]
    fn a_kubernetes_message_is_split_into_counts() {
        let mut pod = Job::new(JobRef::new("k8s", "ml:train"), JobState::Pending);
        pod.reason = Some(
            "0/12 nodes are available: 8 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint \
             {nvidia.com/gpu: present, team: a}. preemption: 0/12 nodes are available: 12 No preemption victims found."
                .into(),
        );
        let w = why(&snapshot(vec![], vec![]), &pod);
        assert_eq!(w.meaning, None);
        assert_eq!(
            w.evidence,
            [
                "0 of 12 nodes can take it",
                "8 nodes: Insufficient nvidia.com/gpu",
                "4 nodes: had untolerated taint {nvidia.com/gpu: present, team: a}",
            ]
        );
        pod.reason = Some("Unschedulable".into());
        assert!(why(&snapshot(vec![], vec![]), &pod).evidence.is_empty());
    }

    /// The message shapes kube-scheduler writes (1.25 to 1.31), as the Kubernetes adapter
    /// passes them on (`REASON: message`, the preemption clause cut).
    #[test]
    fn every_scheduler_message_shape_splits() {
        let cases: [(&str, &[&str]); 4] = [
            (
                "Unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient nvidia.com/gpu",
                &[
                    "0 of 3 nodes can take it",
                    "1 node: had untolerated taint {node-role.kubernetes.io/control-plane: }",
                    "2 nodes: Insufficient nvidia.com/gpu",
                ],
            ),
            (
                "Unschedulable: 0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector",
                &["0 of 5 nodes can take it", "5 nodes: didn't match Pod's node affinity/selector"],
            ),
            (
                "Unschedulable: 0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims",
                &["0 of 1 node can take it", "1 node: pod has unbound immediate PersistentVolumeClaims"],
            ),
            (
                "0/4 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
                &["0 of 4 nodes can take it", "2 nodes: Insufficient cpu", "2 nodes: Insufficient memory"],
            ),
        ];
        for (message, lines) in cases {
            let mut pod = Job::new(JobRef::new("k8s", "ml:p"), JobState::Pending);
            pod.reason = Some(message.into());
            assert_eq!(why(&snapshot(vec![], vec![]), &pod).evidence, lines, "{message}");
        }
    }

    /// A partition of `h100` nodes with 8 GPUs each, `names` of them, every one idle.
    fn partition(names: &[&str]) -> Vec<Node> {
        names.iter().map(|n| node(n, NodeState::Idle, 8, 0)).collect()
    }

    /// A job of `nodes` nodes asking 8 h100 on each.
    fn wide(reason: &str, nodes: u32) -> Job {
        let mut j = pending("20", reason, None, 8 * nodes);
        j.node_count = nodes;
        j
    }

    #[test]
    fn a_job_larger_than_its_partition_can_never_start() {
        let me = wide("PartitionNodeLimit", 3);
        let mut nodes = partition(&["dgx01", "dgx02"]);
        nodes.push(node("small01", NodeState::Idle, 4, 0));
        let w = why(&snapshot(vec![me.clone()], nodes), &me);
        assert_eq!(
            w.evidence[0],
            "needs 3 nodes with 8 h100 each; the partition has only 2 such nodes: it can never start as asked"
        );
        assert_eq!(w.outlook, Some("blocked"));
        // No node of the model at all.
        let mut a100 = me.clone();
        a100.gpu_model = Some("a100".into());
        let w = why(&snapshot(vec![], partition(&["dgx01"])), &a100);
        assert_eq!(
            w.evidence[0],
            "needs 3 nodes with 8 a100 each; the partition has no such node: it can never start as asked"
        );
        // Memory rules a node out where the GPUs alone would not: 64 GB on each of 2 nodes.
        let mut big = wide("Resources", 2);
        big.memory_mb = Some(128 * 1024);
        let mut nodes = partition(&["fat01", "thin01"]);
        nodes[0].memory_total_mb = 256 * 1024;
        nodes[1].memory_total_mb = 32 * 1024;
        let w = why(&snapshot(vec![], nodes), &big);
        assert_eq!(
            w.evidence[0],
            "needs 2 nodes with 8 h100 and 64 GB of memory each; the partition has only 1 such node: it can never \
             start as asked"
        );
    }

    #[test]
    fn a_job_that_needs_a_node_out_of_service_waits_for_it_to_return() {
        let me = wide("ReqNodeNotAvail, UnavailableNodes:ghost01", 3);
        let mut nodes = partition(&["dgx01", "dgx02"]);
        nodes.push(node("ghost01", NodeState::Down, 8, 0));
        let w = why(&snapshot(vec![me.clone()], nodes.clone()), &me);
        assert_eq!(
            w.evidence[0],
            "needs 3 nodes with 8 h100 each; the partition has 3 such nodes, one of them (ghost01) down: it cannot \
             start until ghost01 returns"
        );
        assert_eq!(w.outlook, Some("needs action"), "it can start once the node is back");
        assert_eq!(size_line(&snapshot(vec![], nodes.clone()), &me).as_deref(), Some(w.evidence[0].as_str()));
        let mut running = me.clone();
        running.state = JobState::Running;
        assert_eq!(size_line(&snapshot(vec![], nodes.clone()), &running), None, "only a waiting job");
        // Two out, of different kinds, and it needs both; then only one of them.
        let mut drained = node("dgx03", NodeState::Idle, 8, 0);
        drained.flags = vec!["DRAIN".into()];
        nodes.push(drained);
        let four = wide("ReqNodeNotAvail", 4);
        assert_eq!(
            why(&snapshot(vec![], nodes.clone()), &four).evidence[0],
            "needs 4 nodes with 8 h100 each; the partition has 4 such nodes, 2 of them out of service (ghost01 down, \
             dgx03 drained): it cannot start until ghost01 and dgx03 return"
        );
        assert_eq!(
            why(&snapshot(vec![], nodes), &me).evidence[0],
            "needs 3 nodes with 8 h100 each; the partition has 4 such nodes, 2 of them out of service (ghost01 down, \
             dgx03 drained): it cannot start until one of them returns"
        );
    }

    #[test]
    fn a_job_that_fits_the_partition_waits_for_enough_nodes_to_free_up() {
        let me = wide("Resources", 3);
        let mut nodes = partition(&["dgx01", "dgx02", "dgx03", "dgx04"]);
        nodes[1].gpus[0].allocated = 1;
        nodes[2].gpus[0].allocated = 8;
        nodes[3].state = NodeState::Mixed;
        nodes[3].gpus[0].allocated = 2;
        let w = why(&snapshot(vec![me.clone()], nodes.clone()), &me);
        assert_eq!(
            w.evidence[0],
            "needs 3 nodes with 8 h100 each; the partition has 4 such nodes, 1 free now: it waits for 2 more to free up"
        );
        assert_eq!(w.outlook, Some("waits"));
        nodes[1].gpus[0].allocated = 0;
        assert!(
            why(&snapshot(vec![], nodes.clone()), &me).evidence[0]
                .ends_with("2 free now: it waits for one more to free up")
        );
        nodes[2].gpus[0].allocated = 0;
        assert!(
            why(&snapshot(vec![], nodes), &me).evidence[0]
                .ends_with("3 free now: room enough for its size, so another of its asks holds it")
        );
        // A job on one node asking for no GPUs has no size worth a line.
        let cpu = pending("21", "Resources", None, 0);
        assert!(why(&snapshot(vec![], partition(&["dgx01"])), &cpu).evidence.is_empty());
    }

    #[test]
    fn a_pod_larger_than_any_node_is_told_so() {
        let mut pod = Job::new(JobRef::new("k8s", "ml:pod:big"), JobState::Pending);
        pod.gpus_requested = 8;
        pod.node_count = 1;
        pod.reason = Some(
            "Unschedulable: 0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu"
                .into(),
        );
        let h200 = |name: &str| {
            let mut n = node(name, NodeState::Idle, 4, 0);
            n.gpus[0].model = "h200".into();
            n.partitions.clear();
            n
        };
        let nodes = vec![h200("k1"), h200("k2"), h200("k3")];
        let w = why(&snapshot(vec![pod.clone()], nodes.clone()), &pod);
        assert_eq!(
            w.evidence,
            [
                "needs 8 GPUs on one node: larger than any node (largest: 4 × h200)",
                "0 of 3 nodes can take it",
                "1 node: were unschedulable",
                "2 nodes: Insufficient nvidia.com/gpu",
            ]
        );
        assert_eq!(
            (w.meaning.as_deref(), w.outlook),
            (Some("it asks for more on one node than any node has"), Some("blocked"))
        );
        // A model no node has.
        pod.gpu_model = Some("h100".into());
        assert_eq!(
            why(&snapshot(vec![], nodes.clone()), &pod).evidence[0],
            "needs 8 h100 on one node: no node has that model (largest: 4 × h200)"
        );
        assert_eq!(
            size_line(&snapshot(vec![], nodes.clone()), &pod).as_deref(),
            Some("needs 8 h100 on one node: no node has that model (largest: 4 × h200)"),
            "the detail's line is why's first"
        );
        // No nodes listed (RBAC may forbid them): the scheduler's counts alone, no verdict.
        let w = why(&snapshot(vec![], vec![]), &pod);
        assert_eq!((w.evidence[0].as_str(), w.outlook), ("0 of 3 nodes can take it", None));
        // One node large enough: the scheduler's counts alone.
        pod.gpu_model = None;
        let mut nodes = nodes;
        nodes[0].gpus[0].total = 8;
        let w = why(&snapshot(vec![], nodes), &pod);
        assert_eq!((w.evidence[0].as_str(), w.outlook), ("0 of 3 nodes can take it", None));
    }
}
