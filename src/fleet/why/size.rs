//! The job's size against its partition's nodes: how many could ever hold one of its nodes'
//! share (enough GPUs of its model, enough memory), how many of those are out of service,
//! how many could take it now. One line that says whether it waits for room, waits for a
//! node to return, or can never start as asked; and for a Kubernetes pod, whether it is
//! larger than any node.

use crate::model::words::{and_list, counted, how_many};
use crate::model::{Job, Node, NodeState, Snapshot};

use super::{NAMED, in_partition};
use crate::model::gpu_model_matches as model_matches;

/// The Slurm codes where the job's size is the question: it waits for room or for nodes.
pub(super) const SIZE_CODES: &[&str] =
    &["Resources", "ReqNodeNotAvail", "NodeDown", "PartitionNodeLimit", "Nodes_required_for_job_are_DOWN"];

/// The answer: its line, and whether the job can never start as asked.
pub(super) struct Size {
    pub line: String,
    pub never: bool,
}

/// What one of the job's nodes must hold, and how many such nodes it needs.
struct Ask<'a> {
    nodes: u32,
    gpus: u32,
    model: Option<&'a str>,
    memory_mb: Option<u64>,
}

impl Ask<'_> {
    fn of(job: &Job) -> Ask<'_> {
        let nodes = job.node_count.max(1);
        Ask {
            nodes,
            gpus: job.gpus_requested.div_ceil(nodes),
            model: job.gpu_model.as_deref().filter(|m| !m.is_empty()),
            // Slurm's record holds memory per node, or per CPU times the job's CPUs: spread
            // over its nodes it is never more than one node's share, so a node is ruled out
            // by memory only where it is short for certain.
            memory_mb: job.memory_mb.filter(|m| *m > 0).map(|m| m.div_ceil(u64::from(nodes))),
        }
    }

    fn has_gpus(&self, node: &Node) -> bool {
        self.gpus == 0 || gpus_of(node, self.model) >= self.gpus
    }

    fn has_memory(&self, node: &Node) -> bool {
        self.memory_mb.is_none_or(|m| node.memory_total_mb == 0 || node.memory_total_mb >= m)
    }

    /// The node could hold its share, were it empty and in service.
    fn ever(&self, node: &Node) -> bool {
        self.has_gpus(node) && self.has_memory(node)
    }

    /// The node could take its share now: in service, with the GPUs, memory and a CPU free.
    fn now(&self, node: &Node) -> bool {
        let gpus = self.gpus == 0 || node.free_gpus_of(self.model) >= self.gpus;
        let memory = self.memory_mb.is_none_or(|m| {
            node.memory_total_mb == 0 || node.memory_total_mb.saturating_sub(node.memory_allocated_mb) >= m
        });
        let cpu = node.cpus_total == 0 || node.cpus_allocated < node.cpus_total;
        self.ever(node) && !node.is_unavailable() && node.state != NodeState::Reserved && gpus && memory && cpu
    }

    /// `3 nodes with 8 h100 each`, `1 node with 4 GPUs and 64 GB of memory`, `3 nodes`.
    fn words(&self, memory_matters: bool) -> String {
        let mut each = Vec::new();
        if self.gpus > 0 {
            each.push(match self.model {
                Some(m) => format!("{} {}", self.gpus, m.replace(',', " or ")),
                None => counted(self.gpus, "GPU", "GPUs"),
            });
        }
        if let Some(mb) = self.memory_mb.filter(|_| memory_matters) {
            each.push(format!("{} of memory", memory_words(mb)));
        }
        let nodes = counted(self.nodes, "node", "nodes");
        match (each.is_empty(), self.nodes) {
            (true, _) => nodes,
            (false, 1) => format!("{nodes} with {}", each.join(" and ")),
            (false, _) => format!("{nodes} with {} each", each.join(" and ")),
        }
    }
}

/// GPUs of `model` (any, when `None`) the node has in all.
fn gpus_of(node: &Node, model: Option<&str>) -> u32 {
    node.gpus.iter().filter(|g| model_matches(&g.model, model)).map(|g| g.total).sum()
}

fn memory_words(mb: u64) -> String {
    match mb {
        mb if mb % 1024 == 0 => format!("{} GB", mb / 1024),
        mb if mb >= 1024 => format!("{:.1} GB", mb as f64 / 1024.0),
        mb => format!("{mb} MB"),
    }
}

/// Why a node that could hold the job takes no work, in a word.
fn out_word(node: &Node) -> &'static str {
    match node.state {
        NodeState::Drained | NodeState::Draining => "drained",
        NodeState::Maintenance => "in maintenance",
        NodeState::PoweredDown | NodeState::Future => "powered down",
        _ if node.has_flag("DRAIN") => "drained",
        _ if node.has_flag("CORDONED") => "cordoned",
        _ if node.has_flag("MAINTENANCE") => "in maintenance",
        _ => "down",
    }
}

/// The Slurm job's size against its partition (see the module's comment); `None` where it
/// asks for no GPUs on one node, names several partitions, or the snapshot holds none of
/// its partition's nodes (nothing to compare with).
pub(super) fn size(snapshot: &Snapshot, job: &Job) -> Option<Size> {
    let ask = Ask::of(job);
    if job.partition.contains(',') || (ask.gpus == 0 && ask.nodes == 1) {
        return None;
    }
    let members: Vec<&Node> = snapshot.nodes.iter().filter(|n| in_partition(n, job)).collect();
    if members.is_empty() {
        return None;
    }
    let memory_matters = members.iter().any(|n| ask.has_gpus(n) && !ask.has_memory(n));
    let ever: Vec<&Node> = members.iter().copied().filter(|n| ask.ever(n)).collect();
    let out: Vec<&Node> = ever.iter().copied().filter(|n| n.is_unavailable()).collect();
    let free = ever.iter().filter(|n| ask.now(n)).count() as u32;
    let (total, healthy) = (ever.len() as u32, (ever.len() - out.len()) as u32);
    let such = if ask.gpus == 0 && !memory_matters { "" } else { "such " };
    let mut line = format!("needs {}; the partition has ", ask.words(memory_matters));
    if total < ask.nodes {
        match total {
            0 => line.push_str(&format!("no {such}node: it can never start as asked")),
            n => line.push_str(&format!(
                "only {}: it can never start as asked",
                counted(n, &format!("{such}node"), &format!("{such}nodes"))
            )),
        }
        return Some(Size { line, never: true });
    }
    line.push_str(&counted(total, &format!("{such}node"), &format!("{such}nodes")));
    if !out.is_empty() {
        line.push_str(&format!(", {}", out_clause(&out)));
    }
    if healthy < ask.nodes {
        let need = (ask.nodes - healthy) as usize;
        let names: Vec<&str> = out.iter().map(|n| n.name.as_str()).collect();
        let returns = match need {
            n if n == out.len() && n == 1 => format!("{} returns", names[0]),
            n if n == out.len() && n <= NAMED => format!("{} return", and_list(&names)),
            n if n == out.len() => format!("all {n} return"),
            1 => "one of them returns".into(),
            n => format!("{n} of them return"),
        };
        line.push_str(&format!(": it cannot start until {returns}"));
    } else if free >= ask.nodes {
        line.push_str(&format!(", {free} free now: room enough for its size, so another of its asks holds it"));
    } else {
        let (now, more) = if free == 0 { ("none".to_string(), "") } else { (free.to_string(), " more") };
        let wanted = how_many(u64::from(ask.nodes - free));
        line.push_str(&format!(", {now} free now: it waits for {wanted}{more} to free up"));
    }
    Some(Size { line, never: false })
}

/// `one of them (ghost01) down`, `2 of them (a, b) drained`, `2 of them out of service
/// (a down, b drained)`.
fn out_clause(out: &[&Node]) -> String {
    let shown = &out[..out.len().min(NAMED)];
    let more = match out.len() - shown.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let word = out_word(out[0]);
    let count = if out.len() == 1 { "one".to_string() } else { out.len().to_string() };
    if out.iter().all(|n| out_word(n) == word) {
        let names: Vec<&str> = shown.iter().map(|n| n.name.as_str()).collect();
        format!("{count} of them ({}{more}) {word}", names.join(", "))
    } else {
        let named: Vec<String> = shown.iter().map(|n| format!("{} {}", n.name, out_word(n))).collect();
        format!("{count} of them out of service ({}{more})", named.join(", "))
    }
}

/// A pod (or each pod of a workload) that asks for more GPUs of its model than any node
/// has: `needs 8 GPUs on one node: larger than any node (largest: 4 × h200)`. `None` where
/// it asks for none, the snapshot lists no nodes, or some node is large enough.
pub(super) fn larger_than_any_node(snapshot: &Snapshot, job: &Job) -> Option<String> {
    let per_pod = job
        .workload
        .as_deref()
        .and_then(|w| w.pods.iter().filter(|p| p.node.is_none()).map(|p| p.gpus).max())
        .unwrap_or_else(|| job.gpus_requested.div_ceil(job.node_count.max(1)));
    // No nodes in the snapshot (a user who may not list them): nothing to compare with.
    if per_pod == 0 || snapshot.nodes.is_empty() {
        return None;
    }
    let model = job.gpu_model.as_deref().filter(|m| !m.is_empty());
    // A GPU slot shared by time-slicing counts replicas, not GPUs: it holds no whole one.
    let slots = || snapshot.nodes.iter().flat_map(|n| &n.gpus).filter(|g| !g.shared && g.total > 0);
    let largest = |of_model: bool| {
        slots().filter(|g| !of_model || model_matches(&g.model, model)).max_by_key(|g| g.total).map(|g| (g.total, g))
    };
    let asks = match model {
        Some(m) => format!("{per_pod} {}", m.replace(',', " or ")),
        None => counted(per_pod, "GPU", "GPUs"),
    };
    let head = format!("needs {asks} on one node");
    match (largest(true), largest(false)) {
        (Some((most, _)), _) if most >= per_pod => None,
        (Some((most, g)), _) => Some(format!("{head}: larger than any node (largest: {most} × {})", g.model)),
        (None, Some((most, g))) => Some(format!("{head}: no node has that model (largest: {most} × {})", g.model)),
        (None, None) => Some(format!("{head}: no node has GPUs")),
    }
}
