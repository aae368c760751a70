//! GPUs added up per canonical model: over one cluster (the overview's per-cluster bars, the
//! CLI's per-cluster table) or over the whole fleet (the fleet line both overviews start
//! with). One function, so the cockpit and the CLI count alike.
//!
//! Per slot: allocated GPUs are capped at the slot's total; on a node that cannot take work
//! ([`Node::is_unavailable`]: drained, down, cordoned …) every GPU not held is unavailable;
//! elsewhere the unhealthy ones are, capped at those not held. Idle is what is left. Sums
//! saturate. Time-sliced shares are kept apart from whole GPUs of the same model.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::gpu_names;
use super::{ClusterId, GpuSlot, Node, Snapshot};

/// The GPUs of one model (whole or shared) over some clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuTotals {
    pub model: String,
    pub shared: bool,
    pub total: u64,
    pub allocated: u64,
    pub unavailable: u64,
    /// The clusters that have this model, in the order they were given.
    pub clusters: Vec<ClusterId>,
}

impl GpuTotals {
    pub fn idle(&self) -> u64 {
        self.total.saturating_sub(self.allocated.saturating_add(self.unavailable))
    }

    /// `h100`, or `t4 (shared)` for time-sliced shares.
    pub fn label(&self) -> Cow<'_, str> {
        gpu_names::label(&self.model, self.shared)
    }

    /// `26 total · 8 allocated · 10 idle · 8 unavailable`.
    pub fn counts_text(&self) -> String {
        format!(
            "{} total · {} allocated · {} idle · {} unavailable",
            self.total,
            self.allocated,
            self.idle(),
            self.unavailable
        )
    }

    fn add(&mut self, node: &Node, slot: &GpuSlot) {
        let allocated = slot.allocated.min(slot.total);
        let free = slot.total - allocated;
        let unavailable = if node.is_unavailable() { free } else { slot.unhealthy.min(free) };
        self.total = self.total.saturating_add(u64::from(slot.total));
        self.allocated = self.allocated.saturating_add(u64::from(allocated));
        self.unavailable = self.unavailable.saturating_add(u64::from(unavailable));
    }
}

/// GPU totals per model over `snapshots`, sorted by model (whole GPUs before shares).
pub fn gpu_totals<'a>(snapshots: impl IntoIterator<Item = &'a Snapshot>) -> Vec<GpuTotals> {
    let mut by_model: BTreeMap<(&str, bool), GpuTotals> = BTreeMap::new();
    for snap in snapshots {
        for node in &snap.nodes {
            for slot in &node.gpus {
                let t = by_model.entry((slot.model.as_str(), slot.shared)).or_insert_with(|| GpuTotals {
                    model: slot.model.clone(),
                    shared: slot.shared,
                    ..GpuTotals::default()
                });
                t.add(node, slot);
                if !t.clusters.contains(&snap.cluster) {
                    t.clusters.push(snap.cluster.clone());
                }
            }
        }
    }
    by_model.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeState;

    fn slot(model: &str, total: u32, allocated: u32, unhealthy: u32) -> GpuSlot {
        GpuSlot {
            model: model.into(),
            gpu_product: None,
            shared: false,
            total,
            allocated,
            unhealthy,
            utilisation: None,
        }
    }

    fn node(cluster: &str, state: NodeState, flags: &[&str], gpus: Vec<GpuSlot>) -> Node {
        let mut n = Node::new(cluster, format!("n{}", gpus.len()), state);
        n.flags = flags.iter().map(|f| f.to_string()).collect();
        n.gpus = gpus;
        n
    }

    fn snap(cluster: &str, nodes: Vec<Node>) -> Snapshot {
        Snapshot { cluster: cluster.into(), nodes, ..Snapshot::default() }
    }

    fn counts(t: &GpuTotals) -> (u64, u64, u64, u64) {
        (t.total, t.allocated, t.idle(), t.unavailable)
    }

    #[test]
    fn one_model_across_three_clusters() {
        let fd22 = snap(
            "fd22",
            vec![
                node("fd22", NodeState::Mixed, &[], vec![slot("h100", 8, 5, 0)]),
                // Drained: every GPU not held is unavailable.
                node("fd22", NodeState::Drained, &["DRAIN"], vec![slot("h100", 8, 0, 0)]),
            ],
        );
        let lab =
            snap("lab", vec![node("lab", NodeState::Idle, &[], vec![slot("h100", 2, 0, 0), slot("l40s", 4, 1, 0)])]);
        // One unhealthy GPU on a healthy node; a cordoned node whose held GPUs stay allocated.
        let k8s = snap(
            "k8s-prod",
            vec![
                node("k8s-prod", NodeState::Mixed, &[], vec![slot("h100", 4, 2, 1)]),
                node("k8s-prod", NodeState::Mixed, &["CORDONED"], vec![slot("h100", 4, 1, 0)]),
            ],
        );
        let totals = gpu_totals([&fd22, &lab, &k8s]);
        assert_eq!(totals.len(), 2);
        let h100 = &totals[0];
        assert_eq!(h100.label(), "h100");
        assert_eq!(counts(h100), (26, 8, 6, 12));
        assert_eq!(h100.clusters, vec!["fd22", "lab", "k8s-prod"]);
        assert_eq!(h100.counts_text(), "26 total · 8 allocated · 6 idle · 12 unavailable");
        assert_eq!((totals[1].model.as_str(), counts(&totals[1])), ("l40s", (4, 1, 3, 0)));
        assert_eq!(totals[1].clusters, vec!["lab"]);
    }

    #[test]
    fn shares_are_kept_apart_and_counts_are_capped() {
        let mut shared = slot("t4", 4, 1, 0);
        shared.shared = true;
        let s = snap(
            "k",
            vec![
                node("k", NodeState::Mixed, &[], vec![slot("t4", 1, 0, 0), shared]),
                // More held than the node has (a shrinking device plugin), more unhealthy than free.
                node("k", NodeState::Allocated, &[], vec![slot("t4", 2, 5, 3)]),
                node("k", NodeState::Mixed, &[], vec![slot("t4", 4, 2, 3)]),
            ],
        );
        let totals = gpu_totals([&s]);
        let labels: Vec<_> = totals.iter().map(|t| t.label().into_owned()).collect();
        assert_eq!(labels, vec!["t4", "t4 (shared)"]);
        assert_eq!(counts(&totals[0]), (7, 4, 1, 2));
        assert_eq!(counts(&totals[1]), (4, 1, 3, 0));
        assert_eq!(totals[0].clusters, vec!["k"], "a cluster is named once");
    }

    #[test]
    fn large_counts_do_not_overflow() {
        let big = || node("c", NodeState::Drained, &[], vec![slot("h100", u32::MAX, 0, u32::MAX)]);
        let snaps: Vec<Snapshot> = (0..3).map(|_| snap("c", vec![big(), big()])).collect();
        let t = &gpu_totals(snaps.iter())[0];
        assert_eq!(t.total, 6 * u64::from(u32::MAX));
        assert_eq!(t.idle(), 0);
        let mut huge = t.clone();
        huge.total = u64::MAX;
        huge.allocated = u64::MAX;
        huge.unavailable = u64::MAX;
        assert_eq!(huge.idle(), 0);
    }

    #[test]
    fn no_gpus_no_lines() {
        assert!(gpu_totals([&snap("c", vec![node("c", NodeState::Idle, &[], vec![])])]).is_empty());
        assert!(gpu_totals(std::iter::empty::<&Snapshot>()).is_empty());
    }
}
