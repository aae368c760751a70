//! Node records: per-node (`scontrol show node --json`, 22.05 `sinfo --json`) and the
//! aggregated `sinfo --json` records of 23.02+, merged into one [`Node`] per name.

use std::collections::HashMap;

use super::flex::{Flex, LStr, Lenient, StrList};
use super::gres::parse_gres;
use super::hostlist::expand_hostlist;
use super::record::lenient_record;
use super::states::node_state_from_slurm;
use crate::model::gpu_names::canonical_model;
use crate::model::{GpuSlot, Node};

lenient_record! {
    /// One node of `scontrol show node --json` or 22.05's `sinfo --json`.
    pub(crate) struct NodeRecord<'a> {
        name: LStr<'a> = b"name",
        hostname: LStr<'a> = b"hostname",
        state: StrList<'a> = b"state",
        state_flags: StrList<'a> = b"state_flags",
        reason: LStr<'a> = b"reason",
        reason_set_by_user: LStr<'a> = b"reason_set_by_user",
        reason_changed_at: Flex = b"reason_changed_at",
        gres: LStr<'a> = b"gres",
        gres_used: LStr<'a> = b"gres_used",
        cpus: Flex = b"cpus",
        alloc_cpus: Flex = b"alloc_cpus",
        real_memory: Flex = b"real_memory",
        alloc_memory: Flex = b"alloc_memory",
        partitions: StrList<'a> = b"partitions",
        features: StrList<'a> = b"features",
    }
}

lenient_record! {
    /// One aggregated record of `sinfo --json` (23.02+): a group of nodes sharing a state and
    /// partition. Per-node values are estimated from the group (see [`NodeMerger::add_sinfo`]).
    pub(crate) struct SinfoRecord<'a> {
        node: Lenient<SinfoNode<'a>> = b"node",
        nodes: Lenient<SinfoNodes<'a>> = b"nodes",
        cpus: Lenient<SinfoCpus> = b"cpus",
        memory: Lenient<SinfoMemory> = b"memory",
        gres: Lenient<SinfoGres<'a>> = b"gres",
        features: Lenient<SinfoFeatures<'a>> = b"features",
        partition: Lenient<SinfoPartition<'a>> = b"partition",
        reason: Lenient<SinfoReason<'a>> = b"reason",
    }
}

lenient_record! {
    struct SinfoNode<'a> {
        state: StrList<'a> = b"state",
    }
}

lenient_record! {
    struct SinfoNodes<'a> {
        nodes: StrList<'a> = b"nodes",
        total: Flex = b"total",
    }
}

lenient_record! {
    struct SinfoCpus {
        allocated: Flex = b"allocated",
        total: Flex = b"total",
        maximum: Flex = b"maximum",
    }
}

lenient_record! {
    struct SinfoMemory {
        maximum: Flex = b"maximum",
        allocated: Flex = b"allocated",
    }
}

lenient_record! {
    struct SinfoGres<'a> {
        total: LStr<'a> = b"total",
        used: LStr<'a> = b"used",
    }
}

lenient_record! {
    struct SinfoFeatures<'a> {
        total: StrList<'a> = b"total",
    }
}

lenient_record! {
    struct SinfoPartition<'a> {
        name: LStr<'a> = b"name",
    }
}

lenient_record! {
    struct SinfoReason<'a> {
        description: LStr<'a> = b"description",
        time: Flex = b"time",
        user: LStr<'a> = b"user",
    }
}

/// GPU slots from a node's `gres` (totals per type) and `gres_used` (allocations per type).
///
/// An untyped total (`gpu:4`) is model `gpu`. An allocation is matched by type; an untyped
/// allocation goes to the only slot (or the untyped one); an allocation of a type the node
/// does not list gets its own slot.
pub(crate) fn gpu_slots(gres: &str, gres_used: &str) -> Vec<GpuSlot> {
    // Slots are keyed by canonical model; the first native type seen is kept as the product.
    let model_of = |t: &Option<String>| t.as_deref().map_or_else(|| "gpu".to_string(), canonical_model);
    let new_slot = |model: String, product: Option<String>, total: u32, allocated: u32| GpuSlot {
        model,
        gpu_product: product,
        shared: false,
        total,
        allocated,
        unhealthy: 0,
        utilisation: None,
    };
    let mut slots: Vec<GpuSlot> = Vec::new();
    for item in parse_gres(gres) {
        let model = model_of(&item.model);
        match slots.iter_mut().find(|s| s.model == model) {
            Some(s) => s.total = s.total.saturating_add(item.count),
            None => slots.push(new_slot(model, item.model, item.count, 0)),
        }
    }
    slots.retain(|s| s.total > 0);
    for item in parse_gres(gres_used) {
        if item.count == 0 {
            continue;
        }
        let model = model_of(&item.model);
        let idx = match &item.model {
            Some(_) => slots.iter().position(|s| s.model == model),
            None if slots.len() == 1 => Some(0),
            None => slots.iter().position(|s| s.model == "gpu"),
        };
        match idx {
            Some(i) => slots[i].allocated = slots[i].allocated.saturating_add(item.count),
            None => slots.push(new_slot(model, item.model, item.count, item.count)),
        }
    }
    slots
}

/// Collects nodes, merging repeats of one name (one per partition) into one [`Node`].
pub(crate) struct NodeMerger<'c> {
    cluster: &'c str,
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
    /// Device indices in use per node (`gres_used`), for jobs read without `gres_detail`.
    gpu_use: Vec<super::fields::NodeGpuUse>,
}

impl<'c> NodeMerger<'c> {
    pub(crate) fn new(cluster: &'c str) -> Self {
        Self { cluster, nodes: Vec::new(), index: HashMap::new(), gpu_use: Vec::new() }
    }

    pub(crate) fn finish(self) -> Vec<Node> {
        self.nodes
    }

    /// The nodes and the device indices in use on them.
    pub(crate) fn finish_with_use(self) -> (Vec<Node>, Vec<super::fields::NodeGpuUse>) {
        (self.nodes, self.gpu_use)
    }

    /// Add a node, or merge its partitions into the node already seen under that name.
    pub(crate) fn push(&mut self, node: Node) {
        match self.index.get(&node.name) {
            Some(&i) => {
                let seen = &mut self.nodes[i];
                for p in node.partitions {
                    if !seen.partitions.contains(&p) {
                        seen.partitions.push(p);
                    }
                }
            }
            None => {
                self.index.insert(node.name.clone(), self.nodes.len());
                self.nodes.push(node);
            }
        }
    }

    pub(crate) fn add_node(&mut self, rec: NodeRecord<'_>) {
        let name = rec.name.non_empty().or(rec.hostname.non_empty()).map(|s| s.trim().to_string());
        let Some(name) = name else { return };
        let mut tokens: Vec<&str> = rec.state.iter().collect();
        tokens.extend(rec.state_flags.iter());
        let (state, flags) = node_state_from_slurm(&tokens);
        let mut node = Node::new(self.cluster, name, state);
        node.flags = flags;
        node.native_state = tokens.join(",");
        node.reason = rec.reason.non_empty().map(|s| s.trim().to_string());
        node.reason_user = rec.reason_set_by_user.non_empty().map(|s| s.trim().to_string());
        node.reason_time = rec.reason_changed_at.timestamp();
        node.gpus = gpu_slots(rec.gres.as_str(), rec.gres_used.as_str());
        if !self.index.contains_key(&node.name) {
            self.gpu_use.extend(super::fields::node_gpu_use(&node.name, rec.gres_used.as_str()));
        }
        node.cpus_total = rec.cpus.as_u32().unwrap_or(0);
        node.cpus_allocated = rec.alloc_cpus.as_u32().unwrap_or(0);
        node.memory_total_mb = rec.real_memory.as_u64().unwrap_or(0);
        node.memory_allocated_mb = rec.alloc_memory.as_u64().unwrap_or(0);
        node.partitions = rec.partitions.split_commas();
        node.features = rec.features.split_commas();
        self.push(node);
    }

    /// An aggregated `sinfo` group, best effort: every node of the group gets the group's
    /// state, reason, partition and features; CPUs and memory are the per-node maximum with
    /// the group's allocation divided evenly; GPU totals come from the group's `gres`, GPU
    /// allocations only when the group is one node (sinfo does not split them per node).
    pub(crate) fn add_sinfo(&mut self, rec: SinfoRecord<'_>) {
        let names: Vec<String> = rec.nodes.0.nodes.iter().flat_map(expand_hostlist).collect();
        if names.is_empty() {
            return;
        }
        let count = names.len() as u64;
        let tokens: Vec<&str> = rec.node.0.state.iter().collect();
        let (state, flags) = node_state_from_slurm(&tokens);
        let native = tokens.join(",");
        let cpus = &rec.cpus.0;
        let cpus_total = cpus.maximum.as_u32().or_else(|| cpus.total.as_u64().map(|t| (t / count) as u32)).unwrap_or(0);
        let cpus_alloc = cpus.allocated.as_u64().map_or(0, |a| (a / count) as u32);
        let mem = &rec.memory.0;
        let single = count == 1 || rec.nodes.0.total.as_u64() == Some(1);
        let gres_used = if single { rec.gres.0.used.as_str() } else { "" };
        let gpus = gpu_slots(rec.gres.0.total.as_str(), gres_used);
        if single && !self.index.contains_key(&names[0]) {
            self.gpu_use.extend(super::fields::node_gpu_use(&names[0], gres_used));
        }
        let partition = rec.partition.0.name.non_empty().map(|s| s.trim().to_string());
        let features = rec.features.0.total.split_commas();
        let reason = &rec.reason.0;
        for name in names {
            let mut node = Node::new(self.cluster, name, state);
            node.flags = flags.clone();
            node.native_state = native.clone();
            node.reason = reason.description.non_empty().map(|s| s.trim().to_string());
            node.reason_user = reason.user.non_empty().map(|s| s.trim().to_string());
            node.reason_time = reason.time.timestamp();
            node.gpus = gpus.clone();
            node.cpus_total = cpus_total;
            node.cpus_allocated = cpus_alloc;
            node.memory_total_mb = mem.maximum.as_u64().unwrap_or(0);
            node.memory_allocated_mb = mem.allocated.as_u64().map_or(0, |a| a / count);
            node.partitions = partition.iter().cloned().collect();
            node.features = features.clone();
            self.push(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeState;

    fn slot(model: &str, total: u32, allocated: u32) -> GpuSlot {
        GpuSlot {
            model: model.into(),
            gpu_product: (model != "gpu").then(|| model.into()),
            shared: false,
            total,
            allocated,
            unhealthy: 0,
            utilisation: None,
        }
    }

    #[test]
    fn gpu_slots_match_by_model() {
        assert_eq!(
            gpu_slots("gpu:h100:2,gpu:h200:4", "gpu:h100:2(IDX:0-1),gpu:h200:4(IDX:2-5)"),
            vec![slot("h100", 2, 2), slot("h200", 4, 4)]
        );
        assert_eq!(
            gpu_slots("gpu:h100:2,gpu:h200:4", "gpu:h100:0(IDX:N/A),gpu:h200:1(IDX:3)"),
            vec![slot("h100", 2, 0), slot("h200", 4, 1)]
        );
        assert_eq!(gpu_slots("gpu:4", "gpu:0"), vec![slot("gpu", 4, 0)]);
        assert_eq!(gpu_slots("gpu:4(S:0-1)", "gpu:2(IDX:0-1)"), vec![slot("gpu", 4, 2)]);
        assert_eq!(gpu_slots("gpu:a100:4", "gpu:3"), vec![slot("a100", 4, 3)]);
        assert_eq!(gpu_slots("", "gpu:0"), vec![]);
    }

    #[test]
    fn gpu_slots_use_the_canonical_model_and_keep_the_gres_type() {
        let slots = gpu_slots("gpu:nvidia_h100_80gb_hbm3:8", "gpu:nvidia_h100_80gb_hbm3:2(IDX:0-1)");
        assert_eq!(slots.len(), 1);
        assert_eq!((slots[0].model.as_str(), slots[0].total, slots[0].allocated), ("h100", 8, 2));
        assert_eq!(slots[0].gpu_product.as_deref(), Some("nvidia_h100_80gb_hbm3"));
        assert!(!slots[0].shared);
        // `A100` and `a100` are one model; an untyped slot has no product.
        let slots = gpu_slots("gpu:A100:2,gpu:a100:2", "gpu:a100:1");
        assert_eq!((slots[0].model.as_str(), slots[0].total, slots[0].allocated), ("a100", 4, 1));
        assert_eq!(slots[0].gpu_product.as_deref(), Some("A100"));
        assert_eq!(gpu_slots("gpu:4", "")[0].gpu_product, None);
        assert_eq!(gpu_slots("(null)", ""), vec![]);
        assert_eq!(gpu_slots("gpu:1g.10gb:7,shard:8", ""), vec![slot("1g.10gb", 7, 0)]);
    }

    #[test]
    fn merger_joins_partitions() {
        let mut m = NodeMerger::new("c");
        let mut a = Node::new("c", "n1", NodeState::Idle);
        a.partitions = vec!["gpu".into()];
        let mut b = Node::new("c", "n1", NodeState::Idle);
        b.partitions = vec!["debug".into(), "gpu".into()];
        m.push(a);
        m.push(b);
        m.push(Node::new("c", "n2", NodeState::Idle));
        let nodes = m.finish();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].partitions, vec!["gpu", "debug"]);
    }
}
