//! The columns of a nodes table.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::Shape;
use super::format::{cost, gib};
use super::natural::natural_cmp;
use crate::model::Node;

/// A column of a nodes table, and the sort key it stands for.
///
/// The cockpit's columns come first, in their order, so that a cockpit column's index in
/// [`NodeColumn::COCKPIT`] is its discriminant; the CLI-only columns follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeColumn {
    Cluster,
    Name,
    State,
    /// `a100 3/4, h100 0/8`: allocated of total, per model.
    Gpus,
    Unhealthy,
    Cpu,
    Memory,
    Reason,
    /// Dollars per hour, where the backend says (cloud instances); see [`Shape::optional`].
    Cost,
    /// `cluster/name`, as the CLI's action commands take it.
    Ref,
    /// `3/4`: allocated of total, every model together.
    GpuCount,
    GpuType,
    Partitions,
}

impl NodeColumn {
    /// The cockpit's nodes table, left to right; also the cycle of its sort key.
    pub const COCKPIT: [NodeColumn; 9] = [
        NodeColumn::Cluster,
        NodeColumn::Name,
        NodeColumn::State,
        NodeColumn::Gpus,
        NodeColumn::Unhealthy,
        NodeColumn::Cpu,
        NodeColumn::Memory,
        NodeColumn::Reason,
        NodeColumn::Cost,
    ];

    /// The shapes of [`NodeColumn::COCKPIT`], in its order (what table fitting reads).
    pub const COCKPIT_SHAPES: [Shape; 9] = {
        let mut out = [Shape::new("", 0, 0, 0); 9];
        let mut i = 0;
        while i < out.len() {
            out[i] = NodeColumn::COCKPIT[i].shape();
            i += 1;
        }
        out
    };

    /// `flightdeck nodes`, left to right.
    pub const CLI: [NodeColumn; 8] = [
        NodeColumn::Ref,
        NodeColumn::State,
        NodeColumn::GpuCount,
        NodeColumn::GpuType,
        NodeColumn::Cpu,
        NodeColumn::Partitions,
        NodeColumn::Reason,
        NodeColumn::Cost,
    ];

    pub const fn title(self) -> &'static str {
        match self {
            NodeColumn::Cluster => "CLUSTER",
            NodeColumn::Name | NodeColumn::Ref => "NODE",
            NodeColumn::State => "STATE",
            NodeColumn::Gpus | NodeColumn::GpuCount => "GPUS",
            NodeColumn::Unhealthy => "BAD",
            NodeColumn::Cpu => "CPU",
            NodeColumn::Memory => "MEM",
            NodeColumn::Reason => "REASON",
            NodeColumn::GpuType => "GPU_TYPE",
            NodeColumn::Partitions => "PARTITIONS",
            NodeColumn::Cost => "$/H",
        }
    }

    /// How the column fits a narrow terminal.
    pub const fn shape(self) -> Shape {
        let t = self.title();
        match self {
            NodeColumn::Cluster => Shape::new(t, 7, 12, 2),
            NodeColumn::Name => Shape::new(t, 8, 24, 0).content_first(),
            NodeColumn::State => Shape::new(t, 10, 30, 0),
            NodeColumn::Gpus => Shape::new(t, 8, 30, 0),
            NodeColumn::Unhealthy => Shape::new(t, 3, 4, 1).right(),
            NodeColumn::Cpu => Shape::new(t, 7, 9, 4).right(),
            NodeColumn::Memory => Shape::new(t, 9, 13, 5).right(),
            NodeColumn::Reason => Shape::new(t, 12, 70, 1),
            NodeColumn::Ref => Shape::new(t, 10, 40, 0).content_first(),
            NodeColumn::GpuCount => Shape::new(t, 5, 9, 0).right(),
            NodeColumn::GpuType => Shape::new(t, 4, 20, 1),
            NodeColumn::Partitions => Shape::new(t, 6, 30, 3),
            NodeColumn::Cost => Shape::new(t, 4, 8, 6).right().optional(),
        }
    }

    /// The cell's text for `node`.
    pub fn cell(self, node: &Node) -> Cow<'_, str> {
        match self {
            NodeColumn::Cluster => Cow::Borrowed(&node.cluster),
            NodeColumn::Name => Cow::Borrowed(&node.name),
            NodeColumn::State => Cow::Owned(state_cell(node)),
            NodeColumn::Gpus => Cow::Owned(gpus_cell(node)),
            NodeColumn::Unhealthy => match node.gpus_unhealthy() {
                0 => Cow::Borrowed("-"),
                bad => Cow::Owned(bad.to_string()),
            },
            NodeColumn::Cpu => Cow::Owned(format!("{}/{}", node.cpus_allocated, node.cpus_total)),
            NodeColumn::Memory => {
                Cow::Owned(format!("{}/{}", gib(node.memory_allocated_mb), gib(node.memory_total_mb)))
            }
            NodeColumn::Reason => Cow::Owned(reason_cell(node)),
            NodeColumn::Ref => Cow::Owned(format!("{}/{}", node.cluster, node.name)),
            NodeColumn::Cost => node.cost_per_hour.map_or(Cow::Borrowed(""), |c| Cow::Owned(cost(c))),
            NodeColumn::GpuCount => Cow::Owned(format!("{}/{}", node.gpus_allocated(), node.gpus_total())),
            NodeColumn::GpuType => node.gpu_model().map_or(Cow::Borrowed("-"), Cow::Owned),
            NodeColumn::Partitions => Cow::Owned(node.partitions.join(",")),
        }
    }

    /// Order `a` before or after `b` by this column, then by cluster and (natural) name;
    /// sorted by name, the name comes before the cluster (`gpu-01` of every cluster first).
    pub fn compare(self, a: &Node, b: &Node) -> Ordering {
        let pct = |used: u64, total: u64| (used * 1000).checked_div(total).unwrap_or(0);
        let free = |n: &Node| n.gpus_total() - n.gpus_allocated().min(n.gpus_total());
        let primary = match self {
            NodeColumn::Cluster | NodeColumn::Name | NodeColumn::Ref => Ordering::Equal,
            NodeColumn::State => a.state.cmp(&b.state).then_with(|| a.flags.cmp(&b.flags)),
            NodeColumn::Gpus | NodeColumn::GpuCount => {
                free(a).cmp(&free(b)).then_with(|| a.gpus_total().cmp(&b.gpus_total()))
            }
            NodeColumn::Unhealthy => a.gpus_unhealthy().cmp(&b.gpus_unhealthy()),
            NodeColumn::Cpu => pct(u64::from(a.cpus_allocated), u64::from(a.cpus_total))
                .cmp(&pct(u64::from(b.cpus_allocated), u64::from(b.cpus_total))),
            NodeColumn::Memory => {
                pct(a.memory_allocated_mb, a.memory_total_mb).cmp(&pct(b.memory_allocated_mb, b.memory_total_mb))
            }
            NodeColumn::Reason => a.reason.cmp(&b.reason),
            NodeColumn::GpuType => a.gpu_model().cmp(&b.gpu_model()),
            NodeColumn::Partitions => a.partitions.cmp(&b.partitions),
            NodeColumn::Cost => a.cost_per_hour.unwrap_or(-1.0).total_cmp(&b.cost_per_hour.unwrap_or(-1.0)),
        };
        let name = if self == NodeColumn::Name {
            natural_cmp(&a.name, &b.name).then_with(|| a.cluster.cmp(&b.cluster))
        } else {
            a.cluster.cmp(&b.cluster).then_with(|| natural_cmp(&a.name, &b.name))
        };
        primary.then(name)
    }
}

/// `drained+drain+not_responding`: the base state, then the flags that add to it.
pub fn state_cell(node: &Node) -> String {
    let mut s = node.state.as_str().to_string();
    for f in &node.flags {
        let f = f.to_ascii_lowercase();
        // `drained` already says `drain`.
        if !s.split('+').any(|part| part == f || part.starts_with(&f)) {
            s.push('+');
            s.push_str(&f);
        }
    }
    s
}

/// `a100 3/4, h100 0/8`: allocated of total, per model.
pub fn gpus_cell(node: &Node) -> String {
    if node.gpus.is_empty() {
        return "-".into();
    }
    node.gpus.iter().map(|g| format!("{} {}/{}", g.model, g.allocated, g.total)).collect::<Vec<_>>().join(", ")
}

/// `why · by root 05-01 12:00`
pub fn reason_cell(node: &Node) -> String {
    let Some(reason) = &node.reason else { return String::new() };
    let mut s = reason.clone();
    if node.reason_user.is_some() || node.reason_time.is_some() {
        s.push_str(" ·");
        if let Some(u) = &node.reason_user {
            s.push_str(" by ");
            s.push_str(u);
        }
        if let Some(t) = node.reason_time {
            s.push_str(&t.format(" %m-%d %H:%M").to_string());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSlot, NodeState};

    #[test]
    fn cockpit_columns_are_indexed_by_their_discriminant() {
        for (i, c) in NodeColumn::COCKPIT.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
            assert_eq!(c.shape().title, c.title());
        }
    }

    #[test]
    fn cells() {
        let mut n = Node::new("c", "gpu-01", NodeState::Drained);
        n.flags = vec!["DRAIN".into(), "NOT_RESPONDING".into()];
        n.gpus = vec![GpuSlot {
            model: "a100".into(),
            total: 4,
            allocated: 3,
            unhealthy: 1,
            utilisation: None,
            gpu_product: None,
            shared: false,
        }];
        assert_eq!(NodeColumn::State.cell(&n), "drained+not_responding");
        assert_eq!(NodeColumn::Gpus.cell(&n), "a100 3/4");
        assert_eq!(NodeColumn::GpuCount.cell(&n), "3/4");
        assert_eq!(NodeColumn::Unhealthy.cell(&n), "1");
        assert_eq!(NodeColumn::Ref.cell(&n), "c/gpu-01");
        assert_eq!(NodeColumn::Reason.cell(&n), "");
    }

    #[test]
    fn names_sort_naturally() {
        let a = Node::new("c", "gpu-2", NodeState::Idle);
        let b = Node::new("c", "gpu-10", NodeState::Idle);
        assert_eq!(NodeColumn::Name.compare(&a, &b), Ordering::Less);
        assert_eq!(NodeColumn::Cpu.compare(&b, &a), Ordering::Greater);
    }
}
