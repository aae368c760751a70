//! Placement advice: where a job spec can start, read from the fleet's published state alone
//! (no backend is asked anything; `flightdeck advise` adds the schedulers' own estimates for
//! the best Slurm clusters afterwards, on demand).
//!
//! Every cluster gets one [`Advice`]: a [`Verdict`] and a reason in words, the partition
//! (queue, fleet, cloud cluster) where the spec fits best, the idle GPUs of its model there,
//! the pending jobs asking for the same model, and a price where the backend reports one.
//!
//! * **now**: enough idle GPUs of the model (canonical names, [`gpu_names`]; no model means
//!   any) on nodes that take work (not drained, down, cordoned … — [`Node::is_unavailable`]),
//!   `gpus` free on each of `nodes` nodes (CPUs and memory too, where the node reports them),
//!   within the partition's nodes and the queue's quota where the snapshot has them.
//! * **queued**: it fits the cluster's hardware but not now: the GPUs are busy, the Kueue
//!   quota is used up, the only nodes that fit are out of service, or (dstack, SkyPilot) new
//!   machines would have to be provisioned, which the snapshot cannot predict.
//! * **cannot**: never, as the cluster stands: no such GPU model, too few per node, too few
//!   nodes, no such partition or fleet, a kind that cannot submit or take the spec.
//! * **unknown**: no snapshot yet.
//!
//! Ranking: verdicts in that order; within one, clusters with fresh data before stale ones
//! (a stale cluster is said so in its reason); among *now*, more idle GPUs of the model
//! first, then cheaper (an unknown price after known ones), among *queued* busy or
//! quota-bound clusters before provisioning ones before out-of-service ones, then fewer
//! pending ahead, then cheaper; the cluster's name last, so the order is stable.
//!
//! Cost: one pass over each cluster's nodes and one over its jobs, with no allocation per
//! job (`benches/advice.rs`: 10,000 nodes and 100,000 jobs).

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::StartEstimate;
use crate::model::{
    ClusterKind, ClusterState, FleetState, Health, Job, JobRef, JobState, Need, Node, Partitions, Queue, Snapshot,
    Verb, gpu_names,
};
use crate::spec::JobSpec;

/// Whether a spec can start on a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It would start as soon as it is submitted.
    Now,
    /// It fits the cluster but would wait (busy GPUs, used-up quota, nodes out of service,
    /// machines to provision).
    Queued,
    /// It never fits as the cluster stands.
    Cannot,
    /// No snapshot to judge from.
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Now => "now",
            Verdict::Queued => "queued",
            Verdict::Cannot => "cannot",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cluster's answer for one spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// 1 for the best place.
    pub rank: usize,
    pub cluster: String,
    pub kind: ClusterKind,
    pub verdict: Verdict,
    /// Why, in words (`6 of 8 h100 idle in partition gpu`); says when the data is stale.
    pub reason: String,
    /// Where it fits best (a Slurm partition, a Kueue queue, a dstack fleet, a SkyPilot
    /// cluster): the value to give the spec's `partition` to land there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// GPUs of the model idle there on nodes that take work, and all GPUs of the model there.
    pub idle_gpus: u64,
    pub total_gpus: u64,
    /// Pending jobs there asking for the same model (held ones are not counted).
    pub ahead: u32,
    /// Dollars per hour for the machines it would run on, where the backend prices them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<f64>,
    /// The cluster's last refresh failed: this is judged from its last good snapshot.
    pub stale: bool,
    /// What the snapshot cannot tell (pyxis for an image, a queue it does not know).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// The scheduler's own estimate, where one was asked for (`flightdeck advise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<StartEstimate>,
    /// Why the estimate could not be had, when it was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_error: Option<String>,
}

impl std::fmt::Display for Advice {
    /// `fd24 (now): 6 of 8 h100 idle in partition gpu`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.cluster, self.verdict, self.reason)
    }
}

/// What to leave aside when advising.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// A live job advised on: it is not "ahead" of itself.
    pub exclude: Option<&'a JobRef>,
    /// The spec's `partition` belongs to this cluster only (a live job's own cluster, the
    /// submit form's target); elsewhere it is left out. `None`: it applies everywhere.
    pub partition_on: Option<&'a str>,
}

/// Every cluster of `state`, best first (see the module comment).
pub fn advise(state: &FleetState, spec: &JobSpec) -> Vec<Advice> {
    advise_with(state, spec, &Options::default())
}

/// [`advise`], leaving out what `opts` says.
pub fn advise_with(state: &FleetState, spec: &JobSpec, opts: &Options<'_>) -> Vec<Advice> {
    advise_indexed(state, &PendingIndex::of(state), spec, opts)
}

/// The pending jobs of every cluster, counted by partition and GPU model: what "ahead" is
/// made of. Walking 100,000 jobs is most of an advice's cost (each job is its own cache
/// line), and the answer depends on the state alone, so a front end that advises on many
/// specs for one state (the submit form, per keystroke) builds this once per state.
#[derive(Debug, Clone, Default)]
pub struct PendingIndex {
    /// Per cluster, in the state's order: `(partition as the job names it, GPU model, asks
    /// for GPUs) → pending jobs`.
    clusters: Vec<(String, Vec<Bucket>)>,
}

#[derive(Debug, Clone)]
struct Bucket {
    partition: String,
    model: Option<String>,
    gpus: bool,
    count: u32,
}

impl PendingIndex {
    /// One pass over every job of `state`.
    pub fn of(state: &FleetState) -> PendingIndex {
        let clusters = state
            .clusters
            .iter()
            .map(|c| {
                type Key<'j> = (&'j str, Option<&'j str>, bool);
                // Few distinct keys per cluster, often the same one job after job (arrays,
                // sweeps): the last one, then a scan, and a map only past a few dozen.
                let mut counts: Vec<(Key<'_>, u32)> = Vec::new();
                let mut many: HashMap<Key<'_>, usize> = HashMap::new();
                let mut last = usize::MAX;
                for job in c.snapshot.iter().flat_map(|s| s.jobs.iter()) {
                    if job.state != JobState::Pending {
                        continue;
                    }
                    let key = (job.partition.as_str(), job.gpu_model.as_deref(), job.gpus_requested > 0);
                    let at = if counts.get(last).is_some_and(|(k, _)| *k == key) {
                        last
                    } else if counts.len() <= 32 {
                        counts.iter().position(|(k, _)| *k == key).unwrap_or(usize::MAX)
                    } else {
                        many.get(&key).copied().unwrap_or(usize::MAX)
                    };
                    last = if at == usize::MAX {
                        counts.push((key, 0));
                        if counts.len() > 32 {
                            if many.is_empty() {
                                many.extend(counts.iter().enumerate().map(|(i, (k, _))| (*k, i)));
                            } else {
                                many.insert(key, counts.len() - 1);
                            }
                        }
                        counts.len() - 1
                    } else {
                        at
                    };
                    counts[last].1 = counts[last].1.saturating_add(1);
                }
                let buckets = counts
                    .into_iter()
                    .map(|((partition, model, gpus), count)| Bucket {
                        partition: partition.to_string(),
                        model: model.map(str::to_string),
                        gpus,
                        count,
                    })
                    .collect();
                (c.name.clone(), buckets)
            })
            .collect();
        PendingIndex { clusters }
    }

    fn of_cluster(&self, name: &str) -> &[Bucket] {
        self.clusters.iter().find(|(n, _)| n == name).map_or(&[], |(_, b)| b.as_slice())
    }
}

/// [`advise_with`] over pending jobs counted beforehand ([`PendingIndex::of`] of this `state`).
pub fn advise_indexed(state: &FleetState, pending: &PendingIndex, spec: &JobSpec, opts: &Options<'_>) -> Vec<Advice> {
    let want = Want::of(spec);
    let mut scored: Vec<(Key, Advice)> =
        state.clusters.iter().map(|c| assess(c, pending.of_cluster(&c.name), spec, &want, opts)).collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0));
    scored
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut advice))| {
            advice.rank = i + 1;
            advice
        })
        .collect()
}

/// The parts of a spec that placement depends on: two specs with the same key get the same
/// advice (the submit form recomputes only when it changes).
pub fn placement_key(spec: &JobSpec) -> JobSpec {
    JobSpec {
        gpus: spec.gpus,
        gpu_type: spec.gpu_type.clone(),
        cpus: spec.cpus,
        memory: spec.memory.clone(),
        partition: spec.partition.clone(),
        account: spec.account.clone(),
        image: spec.image.clone(),
        nodes: spec.nodes,
        managed: spec.managed,
        multi_node: spec.multi_node.clone(),
        tasks_per_node: spec.tasks_per_node,
        ..JobSpec::default()
    }
}

/// The spec a live job asks for, from its snapshot fields: GPUs per node, model, nodes,
/// partition, CPUs per node and time limit. It runs nothing (`command = "true"`): it is for
/// advice and start estimates only.
pub fn spec_of_job(job: &Job) -> JobSpec {
    let nodes = job.node_count.max(1);
    let per_node = |n: u32| n.div_ceil(nodes);
    // A job may name several models or partitions (`a100,h100`, `gpu,debug`).
    let model = job.gpu_model.as_deref().and_then(|m| m.split(',').map(str::trim).find(|m| !m.is_empty()));
    let gpus = per_node(job.gpus_requested.max(job.gpus_allocated));
    let name = if job.name.trim().is_empty() { format!("advise-{}", job.job_ref.id) } else { job.name.clone() };
    JobSpec {
        name: crate::safe_text::printable(&name).lines().next().unwrap_or("advise").to_string(),
        command: Some("true".into()),
        gpus,
        gpu_type: model.filter(|_| gpus > 0).map(str::to_string),
        cpus: (job.cpus > 0).then(|| per_node(job.cpus)),
        partition: (!job.partition.trim().is_empty()).then(|| job.partition.clone()),
        nodes: (nodes > 1).then_some(nodes),
        // Slurm counts whole minutes: a limit under one is none worth writing.
        time_limit: job.time_limit_secs.filter(|s| *s >= 60).map(|s| (s / 60).to_string()),
        ..JobSpec::default()
    }
}

/// What the spec asks of one node.
struct Want {
    model: Option<String>,
    gpus: u32,
    nodes: u32,
    cpus: Option<u32>,
    memory_mb: Option<u64>,
}

impl Want {
    fn of(spec: &JobSpec) -> Want {
        let tasks = spec.tasks_per_node.unwrap_or(1).max(1);
        Want {
            model: spec.gpu_type.as_deref().filter(|_| spec.gpus > 0).map(gpu_names::canonical_model),
            gpus: spec.gpus,
            nodes: spec.nodes.unwrap_or(1).max(1),
            cpus: spec.cpus.map(|c| c.saturating_mul(tasks)),
            memory_mb: spec.memory_mb(),
        }
    }

    /// `h100`, or `GPUs` when any model will do.
    fn model_text(&self) -> &str {
        self.model.as_deref().unwrap_or("GPUs")
    }

    /// Pending jobs asking for `gpus` of `model` compete for the same GPUs.
    fn competes(&self, model: Option<&str>, gpus: bool) -> bool {
        if self.gpus == 0 {
            return true;
        }
        gpus && match (&self.model, model) {
            (Some(want), Some(theirs)) => theirs.split(',').any(|m| m.trim() == want),
            // A job for any GPU (or a spec for any) takes what we would.
            _ => true,
        }
    }
}

/// Which nodes and jobs count.
enum Scope<'s> {
    /// Every node, as one group; jobs counted where their partition is `queue` (all when `None`).
    Whole { queue: Option<&'s str> },
    /// One group per name: nodes and jobs by their partition lists.
    Parts(Vec<&'s str>),
}

/// One partition's (or the whole cluster's) tally.
#[derive(Default)]
struct Group<'s> {
    name: Option<&'s str>,
    nodes: u64,
    idle: u64,
    total: u64,
    /// Nodes (Kubernetes: pods' worth of room) that fit now, ever, ever and in service, and
    /// on GPUs alone (CPUs and memory left aside).
    now: u64,
    ever: u64,
    ever_up: u64,
    gpu_ever: u64,
    largest: u64,
    largest_on: Option<&'s str>,
    now_prices: Vec<f64>,
    ever_price: Option<f64>,
    down: Vec<&'s Node>,
    ahead: u32,
    models: Vec<&'s str>,
}

/// Why it waits, for the order among queued clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Wait {
    Busy,
    Provision,
    OutOfService,
}

/// Sort key: verdict, stale, wait class, more idle first, fewer ahead, cheaper, name.
#[derive(Debug, PartialEq)]
struct Key {
    verdict: Verdict,
    stale: bool,
    wait: Option<Wait>,
    idle: Reverse<u64>,
    ahead: u32,
    price: Option<f64>,
    name: String,
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.verdict, self.stale, self.wait)
            .cmp(&(other.verdict, other.stale, other.wait))
            .then_with(|| self.idle.cmp(&other.idle))
            .then_with(|| self.ahead.cmp(&other.ahead))
            .then_with(|| price_order(self.price, other.price))
            .then_with(|| self.name.cmp(&other.name))
    }
}

/// One cluster's advice, being built.
struct Draft {
    verdict: Verdict,
    wait: Option<Wait>,
    reason: String,
    partition: Option<String>,
    idle: u64,
    total: u64,
    ahead: u32,
    price: Option<f64>,
    caveats: Vec<String>,
}

impl Draft {
    fn new(verdict: Verdict, reason: impl Into<String>) -> Draft {
        Draft {
            verdict,
            wait: None,
            reason: reason.into(),
            partition: None,
            idle: 0,
            total: 0,
            ahead: 0,
            price: None,
            caveats: Vec::new(),
        }
    }
}

fn assess(c: &ClusterState, pending: &[Bucket], spec: &JobSpec, want: &Want, opts: &Options<'_>) -> (Key, Advice) {
    let stale_since = match &c.health {
        Health::Stale { since, .. } => Some(*since),
        _ => None,
    };
    let mut draft = judge(c, pending, spec, want, opts);
    if let Some(since) = stale_since {
        draft.reason.push_str(&stale_text(since));
    }
    let key = Key {
        verdict: draft.verdict,
        stale: stale_since.is_some(),
        wait: draft.wait,
        idle: Reverse(if draft.verdict == Verdict::Now { draft.idle } else { 0 }),
        ahead: if draft.verdict == Verdict::Queued { draft.ahead } else { 0 },
        price: draft.price,
        name: c.name.clone(),
    };
    let advice = Advice {
        rank: 0,
        cluster: c.name.clone(),
        kind: c.kind.clone(),
        verdict: draft.verdict,
        reason: draft.reason,
        partition: draft.partition,
        idle_gpus: draft.idle,
        total_gpus: draft.total,
        ahead: draft.ahead,
        price_per_hour: draft.price,
        stale: stale_since.is_some(),
        caveats: draft.caveats,
        estimate: None,
        estimate_error: None,
    };
    (key, advice)
}

fn stale_text(since: DateTime<Utc>) -> String {
    format!(" (stale since {} UTC)", since.format("%H:%M"))
}

/// The verdict and its reason, before staleness is said.
fn judge(c: &ClusterState, pending: &[Bucket], spec: &JobSpec, want: &Want, opts: &Options<'_>) -> Draft {
    let placement = &c.placement;
    if !c.capabilities.allows(Verb::Submit) {
        return Draft::new(Verdict::Cannot, crate::model::action::cannot(&c.name, c.kind.as_str(), Verb::Submit));
    }
    if spec.managed && placement.managed_queue.is_none() {
        return Draft::new(Verdict::Cannot, "no managed jobs here (only SkyPilot has them)");
    }
    if spec.multi_node.is_some() && !placement.workload_kinds {
        // Its submit would refuse the spec by name (`JobSpec::refuse_multi_node`).
        return Draft::new(Verdict::Cannot, "no workload kind to choose here (only Kubernetes takes `multi_node`)");
    }
    let partition = spec.partition.as_deref().filter(|_| opts.partition_on.is_none_or(|on| on == c.name));
    let fields = &c.spec_fields;
    for (usage, value) in [
        (&fields.image, spec.image.as_deref()),
        (&fields.account, spec.account.as_deref()),
        (&fields.partition, partition),
    ] {
        if usage.need == Need::Required && value.is_none_or(|v| v.trim().is_empty()) {
            let hint = if usage.hint.is_empty() { String::new() } else { format!(" ({})", usage.hint) };
            return Draft::new(Verdict::Cannot, format!("needs `{}`{hint}", usage.label));
        }
    }
    let Some(snap) = c.snapshot.as_deref() else {
        return match &c.health {
            Health::Stale { error, .. } => {
                Draft::new(Verdict::Unknown, format!("no snapshot: {}", crate::safe_text::printable(error)))
            }
            _ => Draft::new(Verdict::Unknown, "no snapshot yet"),
        };
    };
    let mut caveats: Vec<String> = placement
        .caveats
        .iter()
        .filter(|caveat| sets(spec, partition, &caveat.field))
        .map(|caveat| caveat.text.clone())
        .collect();
    let managed_queue = placement.managed_queue.as_deref();
    let cloud = placement.partition == Partitions::CloudCluster;
    let label = fields.partition.label.as_str();
    let known = |name: &str| snap.queues.iter().any(|q| q.name == name);
    let queue_names = || -> Vec<&str> { snap.queues.iter().map(|q| q.name.as_str()).collect() };
    // What the cluster does when nothing fits now, for kinds that can get new machines.
    let mut provision: Option<String> = None;
    let mut quota: Option<&Queue> = None;
    let named: Vec<&str> =
        partition.map(|p| p.split(',').map(str::trim).filter(|p| !p.is_empty()).collect()).unwrap_or_default();
    let scope = match placement.partition {
        Partitions::NodeSets | Partitions::Fleet => {
            if named.is_empty() {
                if placement.partition == Partitions::NodeSets && !snap.queues.is_empty() {
                    Scope::Parts(queue_names())
                } else {
                    Scope::Whole { queue: None }
                }
            } else {
                let found: Vec<&str> = named.iter().copied().filter(|p| known(p)).collect();
                if found.is_empty() {
                    return no_such(label, &named, &queue_names());
                }
                Scope::Parts(found)
            }
        }
        Partitions::QuotaQueue => match partition {
            Some(q) => match snap.queues.iter().find(|x| x.name == q && !x.quota.is_empty()) {
                Some(queue) => {
                    quota = Some(queue);
                    Scope::Whole { queue: Some(queue.name.as_str()) }
                }
                None => {
                    caveats.push(format!(
                        "`{q}` is no Kueue queue the snapshot knows: the cluster's own queue applies, its quota not checked"
                    ));
                    Scope::Whole { queue: None }
                }
            },
            None => {
                if snap.queues.iter().any(|q| !q.quota.is_empty()) {
                    caveats.push("no queue named: the cluster's own queue applies, its quota not checked".into());
                }
                Scope::Whole { queue: None }
            }
        },
        Partitions::CloudCluster => match partition {
            Some(p) if Some(p) == managed_queue => {
                return Draft {
                    wait: Some(Wait::Provision),
                    caveats,
                    partition: Some(p.to_string()),
                    ..Draft::new(
                        Verdict::Queued,
                        "a managed job: the jobs controller finds the machines (capacity and price are the cloud's, not known here)",
                    )
                };
            }
            Some(p) if known(p) => Scope::Parts(vec![p]),
            Some(p) => {
                return Draft {
                    wait: Some(Wait::Provision),
                    caveats,
                    partition: Some(p.to_string()),
                    ..Draft::new(
                        Verdict::Queued,
                        format!("launches a new cluster `{p}` (capacity and price are the cloud's, not known here)"),
                    )
                };
            }
            None => {
                provision = placement.provisions.clone();
                Scope::Parts(queue_names().into_iter().filter(|q| Some(*q) != managed_queue).collect())
            }
        },
        Partitions::Labels => match partition {
            Some(p) if known(p) => Scope::Parts(vec![p]),
            Some(p) => {
                caveats.push(format!("`{p}` is no {label} the snapshot knows: all nodes counted"));
                Scope::Whole { queue: None }
            }
            None => Scope::Whole { queue: None },
        },
    };
    if !cloud {
        // A cloud cluster is provisioned only when none is named (above); other kinds that
        // provision may do it wherever the job goes.
        provision = placement.provisions.clone();
    }
    let share = placement.shares_nodes;
    // A live job advised on is not ahead of itself.
    let me = opts.exclude.filter(|r| r.cluster == c.name).and_then(|r| snap.jobs.iter().find(|j| j.job_ref.id == r.id));
    let groups = tally(snap, pending, &scope, want, share, me);
    let mut draft = decide(&groups, want, label, matches!(scope, Scope::Parts(_)));
    if let Some(queue) = quota {
        apply_quota(&mut draft, queue, want);
        draft.partition = Some(queue.name.clone());
    }
    if let Some(how) = provision
        && draft.verdict != Verdict::Now
    {
        // The snapshot shows only the machines there are now; the kind may get others.
        // A new cloud cluster is all there is to say; elsewhere the machines there are now come first.
        draft.reason = if cloud { how } else { format!("{}; {how}", draft.reason) };
        draft.verdict = Verdict::Queued;
        draft.wait = Some(Wait::Provision);
        if cloud {
            draft.partition = None;
            draft.price = None;
        }
    }
    if cloud
        && partition.is_none()
        && draft.verdict == Verdict::Now
        && let Some(p) = &draft.partition
    {
        caveats.push(format!("name `{p}` as the cluster to run there: without one a new cluster is launched"));
    }
    draft.caveats.splice(0..0, caveats);
    draft
}

/// Whether the spec sets the field a placement caveat is about (`partition` as it applies
/// to this cluster).
fn sets(spec: &JobSpec, partition: Option<&str>, field: &str) -> bool {
    match field {
        "image" => spec.image.is_some(),
        "account" => spec.account.is_some(),
        "partition" => partition.is_some(),
        _ => false,
    }
}

/// `no partition `x` here (partitions: gpu, debug)`.
fn no_such(label: &str, named: &[&str], there: &[&str]) -> Draft {
    let names: Vec<String> = named.iter().map(|n| format!("`{n}`")).collect();
    let listed = if there.is_empty() { "none".to_string() } else { there.join(", ") };
    Draft::new(Verdict::Cannot, format!("no {label} {} here ({label}s: {listed})", names.join(" or ")))
}

/// One pass over the nodes, then the pending jobs' buckets.
fn tally<'s>(
    snap: &'s Snapshot,
    pending: &[Bucket],
    scope: &Scope<'s>,
    want: &Want,
    share: bool,
    me: Option<&Job>,
) -> Vec<Group<'s>> {
    let mut groups: Vec<Group<'s>> = match scope {
        Scope::Whole { .. } => vec![Group::default()],
        Scope::Parts(names) => names.iter().map(|n| Group { name: Some(n), ..Group::default() }).collect(),
    };
    // A cluster has a handful of partitions: a scan beats hashing each name.
    let index = |name: &str| -> Option<usize> {
        match scope {
            Scope::Whole { .. } => None,
            Scope::Parts(names) => names.iter().position(|n| *n == name),
        }
    };
    for node in &snap.nodes {
        let fit = NodeFit::of(node, want, share);
        match scope {
            Scope::Whole { .. } => groups[0].add(node, &fit),
            Scope::Parts(_) => {
                for p in &node.partitions {
                    if let Some(i) = index(p) {
                        groups[i].add(node, &fit);
                    }
                }
            }
        }
    }
    let mut count = |partition: &str, n: u32, add: bool| {
        let bump = |g: &mut Group<'_>| {
            g.ahead = if add { g.ahead.saturating_add(n) } else { g.ahead.saturating_sub(n) };
        };
        match scope {
            Scope::Whole { queue: None } => bump(&mut groups[0]),
            Scope::Whole { queue: Some(q) } => {
                if partition.split(',').any(|p| p == *q) {
                    bump(&mut groups[0]);
                }
            }
            // A job pending in `gpu,debug` waits in both.
            Scope::Parts(_) => {
                for p in partition.split(',') {
                    if let Some(i) = index(p) {
                        bump(&mut groups[i]);
                    }
                }
            }
        }
    };
    for b in pending.iter().filter(|b| want.competes(b.model.as_deref(), b.gpus)) {
        count(&b.partition, b.count, true);
    }
    if let Some(job) =
        me.filter(|j| j.state == JobState::Pending && want.competes(j.gpu_model.as_deref(), j.gpus_requested > 0))
    {
        count(&job.partition, 1, false);
    }
    groups
}

/// What one node offers the spec.
struct NodeFit {
    total: u64,
    free: u64,
    available: bool,
    /// How many of the spec's nodes (Kubernetes: pods) it holds now, ever, and ever on GPUs alone.
    now: u64,
    ever: u64,
    gpu_ever: u64,
}

impl NodeFit {
    fn of(node: &Node, want: &Want, share: bool) -> NodeFit {
        let (mut total, mut free) = (0u64, 0u64);
        for slot in node.gpus.iter().filter(|s| !s.shared) {
            if want.model.as_deref().is_some_and(|m| m != slot.model) {
                continue;
            }
            let allocated = slot.allocated.min(slot.total);
            let left = slot.total - allocated;
            total += u64::from(slot.total);
            free += u64::from(left - slot.unhealthy.min(left));
        }
        let available = !node.is_unavailable();
        let cpus_free = node.cpus_total.saturating_sub(node.cpus_allocated);
        let mem_free = node.memory_total_mb.saturating_sub(node.memory_allocated_mb);
        // A node that does not report CPUs or memory (0) is not held to them.
        let cpu_ok = |have: u32| node.cpus_total == 0 || want.cpus.is_none_or(|c| have >= c);
        let mem_ok = |have: u64| node.memory_total_mb == 0 || want.memory_mb.is_none_or(|m| have >= m);
        let count = |gpus: u64| -> u64 {
            match (want.gpus, share) {
                (0, _) => 1,
                (g, true) => gpus / u64::from(g),
                (g, false) => u64::from(gpus >= u64::from(g)),
            }
        };
        let gpu_ever = count(total);
        let ever = if cpu_ok(node.cpus_total) && mem_ok(node.memory_total_mb) { gpu_ever } else { 0 };
        let now = if available && cpu_ok(cpus_free) && mem_ok(mem_free) { count(free) } else { 0 };
        NodeFit { total, free: if available { free } else { 0 }, available, now, ever, gpu_ever }
    }
}

impl<'s> Group<'s> {
    fn add(&mut self, node: &'s Node, fit: &NodeFit) {
        // Few models per cluster: a list beats a set.
        for slot in node.gpus.iter().filter(|s| !s.shared) {
            if !self.models.contains(&slot.model.as_str()) {
                self.models.push(slot.model.as_str());
            }
        }
        self.nodes += 1;
        self.idle += fit.free;
        self.total += fit.total;
        self.now = self.now.saturating_add(fit.now);
        self.ever = self.ever.saturating_add(fit.ever);
        self.gpu_ever = self.gpu_ever.saturating_add(fit.gpu_ever);
        if fit.available {
            self.ever_up = self.ever_up.saturating_add(fit.ever);
        } else if fit.ever > 0 && self.down.len() < 3 {
            self.down.push(node);
        }
        if fit.total > self.largest || self.largest_on.is_none() && fit.total > 0 {
            self.largest = fit.total;
            self.largest_on = Some(node.name.as_str());
        }
        if let Some(price) = node.cost_per_hour.filter(|p| p.is_finite() && *p >= 0.0) {
            if fit.now > 0 {
                self.now_prices.push(price);
            }
            if fit.ever > 0 {
                self.ever_price = Some(self.ever_price.map_or(price, |p| p.min(price)));
            }
        }
    }

    /// ` in partition gpu`, or nothing for the whole cluster.
    fn place(&self, label: &str) -> String {
        self.name.map(|n| format!(" in {label} {n}")).unwrap_or_default()
    }
}

/// The sum of the `n` lowest prices, where there are at least `n`.
fn cheapest(prices: &[f64], n: u32) -> Option<f64> {
    let n = n as usize;
    if prices.len() < n {
        return None;
    }
    let mut sorted = prices.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted[..n].iter().sum())
}

/// Known prices before unknown ones, cheaper first.
fn price_order(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// `; 3 pending jobs ask for h100`, or nothing.
fn ahead_text(ahead: u32, model: &str) -> String {
    match ahead {
        0 => String::new(),
        1 => format!("; 1 pending job asks for {model}"),
        k => format!("; {k} pending jobs ask for {model}"),
    }
}

/// The best group and what it says.
fn decide(groups: &[Group<'_>], want: &Want, label: &str, parts: bool) -> Draft {
    let n = u64::from(want.nodes);
    let model = want.model_text();
    let ratio = |g: &Group<'_>| {
        if want.gpus == 0 {
            format!("room on {}", crate::model::words::counted(g.now, "node", "nodes"))
        } else {
            format!("{} of {} {model} idle", g.idle, g.total)
        }
    };
    // Now: the group with the most idle GPUs of the model, then the cheapest.
    let now = groups.iter().filter(|g| g.now >= n).min_by(|a, b| {
        b.idle
            .cmp(&a.idle)
            .then_with(|| price_order(cheapest(&a.now_prices, want.nodes), cheapest(&b.now_prices, want.nodes)))
    });
    if let Some(g) = now {
        let mut reason = format!("{}{}", ratio(g), g.place(label));
        if n > 1 {
            let fit = crate::model::words::counted(g.now, "node fits", "nodes fit");
            reason.push_str(&format!(", {fit} (it needs {n})"));
        }
        reason.push_str(&ahead_text(g.ahead, model));
        return Draft {
            partition: g.name.map(str::to_string),
            idle: g.idle,
            total: g.total,
            ahead: g.ahead,
            price: cheapest(&g.now_prices, want.nodes),
            ..Draft::new(Verdict::Now, reason)
        };
    }
    // Queued: it fits the hardware of some group; busy before out of service, fewer ahead.
    let queued = groups.iter().filter(|g| g.ever >= n).min_by_key(|g| (g.ever_up < n, g.ahead, Reverse(g.idle)));
    if let Some(g) = queued {
        let need = if want.gpus == 0 {
            "a node with room".to_string()
        } else if n > 1 {
            format!("{} free on each of {n} nodes", want.gpus)
        } else {
            format!("{} free on one node", want.gpus)
        };
        let (wait, mut reason) = if g.ever_up >= n {
            (Wait::Busy, format!("busy: {}{}, needs {need}", ratio(g), g.place(label)))
        } else {
            let down: Vec<String> = g.down.iter().map(|node| format!("{} {}", node.name, condition(node))).collect();
            let what = if want.gpus == 0 {
                "the nodes that fit".to_string()
            } else {
                format!("the nodes with {} {model}", want.gpus)
            };
            (Wait::OutOfService, format!("{what}{} are out of service ({})", g.place(label), down.join(", ")))
        };
        reason.push_str(&ahead_text(g.ahead, model));
        return Draft {
            wait: Some(wait),
            partition: g.name.map(str::to_string),
            idle: g.idle,
            total: g.total,
            ahead: g.ahead,
            price: g.ever_price,
            ..Draft::new(Verdict::Queued, reason)
        };
    }
    // Cannot: say what is missing, over the whole scope.
    let total: u64 = groups.iter().map(|g| g.total).sum();
    let place = if parts && groups.len() == 1 { groups[0].place(label) } else { String::new() };
    let reason = if groups.iter().all(|g| g.nodes == 0) {
        format!("no nodes{place}")
    } else if want.gpus > 0 && total == 0 {
        let models: BTreeSet<&str> = groups.iter().flat_map(|g| g.models.iter().copied()).collect();
        let models: Vec<&str> = models.into_iter().collect();
        let there = if models.is_empty() { "no GPUs".to_string() } else { format!("models: {}", models.join(", ")) };
        format!("no node{place} has {model} ({there})")
    } else if want.gpus > 0 && groups.iter().all(|g| g.gpu_ever < n) {
        let most = groups.iter().map(|g| g.gpu_ever).max().unwrap_or(0);
        if most == 0 {
            let largest = groups.iter().filter(|g| g.largest_on.is_some()).max_by_key(|g| g.largest);
            let largest = largest
                .and_then(|g| g.largest_on.map(|on| format!(" (largest: {} on {on})", g.largest)))
                .unwrap_or_default();
            format!("no node{place} has {} {model}{largest}", want.gpus)
        } else {
            let have = if most == 1 { "has them" } else { "have them" };
            format!("needs {n} nodes with {} {model}{place}; only {most} {have}", want.gpus)
        }
    } else {
        let mut needs = Vec::new();
        if let Some(c) = want.cpus {
            needs.push(format!("{c} CPUs"));
        }
        if let Some(m) = want.memory_mb {
            needs.push(format!("{m} MiB of memory"));
        }
        let with = if want.gpus > 0 { format!(" with {} {model}", want.gpus) } else { String::new() };
        let needs = needs.join(" and ");
        if n > 1 {
            format!("fewer than {n} nodes{with}{place} also have {needs}")
        } else {
            format!("no node{with}{place} also has {needs}")
        }
    };
    Draft { total, ..Draft::new(Verdict::Cannot, reason) }
}

/// `drained`, `down`, `cordoned`: why a node takes no work.
fn condition(node: &Node) -> String {
    if node.state.is_unavailable() {
        return node.state.as_str().to_string();
    }
    ["DRAIN", "NOT_RESPONDING", "INVALID_REG", "INVALID", "FAIL", "CORDONED", "MAINTENANCE"]
        .iter()
        .find(|f| node.has_flag(f))
        .map(|f| f.to_ascii_lowercase().replace('_', " "))
        .unwrap_or_else(|| "unavailable".into())
}

/// GPU resources a Kueue quota can name (time-sliced shares are not whole GPUs).
fn gpu_resource_model(resource: &str) -> Option<Option<&str>> {
    if let Some(profile) = resource.strip_prefix("nvidia.com/mig-") {
        return Some(Some(profile));
    }
    (resource == "nvidia.com/gpu" || resource == "amd.com/gpu" || resource.starts_with("gpu.intel.com/"))
        .then_some(None)
}

/// Hold the verdict to the Kueue queue's GPU quota: `gpus × nodes` must fit what is left.
fn apply_quota(draft: &mut Draft, queue: &Queue, want: &Want) {
    if want.gpus == 0 || draft.verdict == Verdict::Cannot {
        return;
    }
    let mig = want.model.as_deref().filter(|m| gpu_names::is_mig_profile(m));
    let relevant: Vec<_> = queue
        .quota
        .iter()
        .filter(|q| match gpu_resource_model(&q.resource) {
            Some(Some(profile)) => mig == Some(profile),
            Some(None) => mig.is_none(),
            None => false,
        })
        .collect();
    // Flavors named after a model (`h100`) hold that model's quota; others could hold any.
    let by_model: Vec<_> = match &want.model {
        Some(m) => relevant.iter().copied().filter(|q| gpu_names::canonical_model(&q.flavor) == *m).collect(),
        None => Vec::new(),
    };
    let relevant = if by_model.is_empty() { relevant } else { by_model };
    let resource = relevant.first().map(|q| q.resource.clone());
    let Some(resource) = resource else {
        draft.verdict = Verdict::Cannot;
        draft.wait = None;
        draft.reason = format!("queue {} has no quota for {} GPUs", queue.name, want.model_text());
        return;
    };
    let whole = |milli: i64| milli.max(0) / 1000;
    // Backend numbers can claim anything: sums saturate.
    let nominal = relevant.iter().fold(0i64, |n, q| n.saturating_add(whole(q.nominal_milli)));
    let used = relevant.iter().fold(0i64, |n, q| n.saturating_add(whole(q.used_milli)));
    let need = i64::from(want.gpus) * i64::from(want.nodes);
    let free = (nominal - used).max(0);
    if free >= need {
        return;
    }
    let can_borrow = queue.cohort.is_some() && relevant.iter().any(|q| q.borrowing_limit_milli.is_none_or(|b| b > 0));
    if nominal < need && !can_borrow {
        draft.verdict = Verdict::Cannot;
        draft.wait = None;
        draft.reason = format!("queue {} quota is {nominal} {resource}; the job needs {need}", queue.name);
        return;
    }
    let mut reason = if free == 0 {
        format!("queue {} quota exhausted ({used}/{nominal} {resource})", queue.name)
    } else {
        format!(
            "queue {} has {free} {resource} of quota left ({used}/{nominal} used); the job needs {need}",
            queue.name
        )
    };
    if let Some(cohort) = queue.cohort.as_deref().filter(|_| can_borrow) {
        reason.push_str(&format!(", unless it borrows within cohort {cohort}"));
    }
    reason.push_str(&ahead_text(draft.ahead, want.model_text()));
    draft.verdict = Verdict::Queued;
    draft.wait = Some(Wait::Busy);
    draft.reason = reason;
    draft.price = None;
}
