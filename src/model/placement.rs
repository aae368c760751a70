//! How a cluster's kind places jobs, as placement advice needs to know it: what the spec's
//! `partition` names there, whether the kind gets new machines, its managed queue, and what
//! it cannot promise. Each kind declares one in its registry line; it travels on
//! `ClusterState` (and over the hub's wire) so that advice reads no kind names.

use serde::{Deserialize, Serialize};

/// One kind's way of placing jobs. The default is a kind that says nothing: `partition`
/// names labels on its nodes, nothing is provisioned, no caveats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// What the spec's `partition` names on this kind.
    #[serde(default)]
    pub partition: Partitions,
    /// One job's pods may share a node (the kind packs GPUs, not whole nodes).
    #[serde(default)]
    pub shares_nodes: bool,
    /// When nothing fits now, the kind may get new machines: what it does then, in words
    /// (said as the reason of a `queued` verdict). `None`: it waits for the machines it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisions: Option<String>,
    /// The `partition` a managed job goes to (SkyPilot's jobs controller); `None`: the kind
    /// has no managed jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_queue: Option<String>,
    /// A multi-node job becomes a workload kind the spec may choose (`multi_node`: JobSet,
    /// PyTorchJob…); elsewhere the kind runs several nodes itself and refuses the choice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workload_kinds: bool,
    /// The scheduler says when a job would start (Slurm's `squeue --start` and `sbatch
    /// --test-only`): `flightdeck advise` asks it for the best such clusters.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub start_estimates: bool,
    /// What advice adds when the spec sets a field the snapshot cannot vouch for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<Caveat>,
}

/// What `partition` names on a kind, which decides how advice groups nodes and counts jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Partitions {
    /// Node sets a job stays in (Slurm partitions): a name the snapshot lacks is refused;
    /// none named, each set is weighed on its own.
    NodeSets,
    /// A queue with a quota over the whole cluster (a Kueue LocalQueue): the quota is
    /// checked; an unknown one is a caveat, not a refusal.
    QuotaQueue,
    /// A group of machines (a dstack fleet): a name the snapshot lacks is refused; none
    /// named, every machine counts.
    Fleet,
    /// A cloud cluster, launched when the name is new (SkyPilot): a known one is weighed,
    /// a new or unnamed one is provisioned.
    CloudCluster,
    /// Labels on the nodes, nothing more: a known one narrows the count, an unknown one is
    /// a caveat. Also what a newer peer's word reads as.
    #[default]
    #[serde(other)]
    Labels,
}

/// A caveat said whenever the spec sets `field`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caveat {
    /// The spec field's portable name: `image`, `account` or `partition`.
    pub field: String,
    pub text: String,
}

impl Caveat {
    pub fn new(field: &str, text: &str) -> Caveat {
        Caveat { field: field.into(), text: text.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_peers_word_reads_as_labels_and_missing_fields_as_defaults() {
        let p: Placement = serde_json::from_str(r#"{"partition":"galaxy","future":1}"#).unwrap();
        assert_eq!(p, Placement::default());
        let p: Placement = serde_json::from_str("{}").unwrap();
        assert_eq!(p.partition, Partitions::Labels);
        let full = Placement {
            partition: Partitions::CloudCluster,
            shares_nodes: true,
            workload_kinds: true,
            start_estimates: true,
            provisions: Some("launches one".into()),
            managed_queue: Some("managed".into()),
            caveats: vec![Caveat::new("image", "maybe")],
        };
        let back: Placement = serde_json::from_str(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(back, full);
    }
}
