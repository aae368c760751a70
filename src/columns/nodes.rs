//! The columns of a nodes table.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::Shape;
use super::format::{Gib, cost};
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
        let mut text = String::new();
        match self.cell_into(node, &mut text) {
            Some(own) => Cow::Borrowed(own),
            None => Cow::Owned(text),
        }
    }

    /// The cell's text: the node's own (`Some`), or else written into `out` (cleared first),
    /// as [`super::JobColumn::cell_into`]: a pass over every node allocates nothing per cell.
    pub fn cell_into<'n>(self, node: &'n Node, out: &mut String) -> Option<&'n str> {
        use std::fmt::Write;
        out.clear();
        // Writing to a String cannot fail.
        let mut put = |args: std::fmt::Arguments<'_>| {
            let _ = out.write_fmt(args);
            None
        };
        match self {
            NodeColumn::Cluster => Some(&node.cluster),
            NodeColumn::Name => Some(&node.name),
            NodeColumn::State if node.flags.is_empty() => Some(node.state.as_str()),
            NodeColumn::State => {
                write_state(node, out);
                None
            }
            NodeColumn::Gpus if node.gpus.is_empty() => Some("-"),
            NodeColumn::Gpus => {
                for (i, g) in node.gpus.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let _ = write!(out, "{sep}{} {}/{}", g.model, g.allocated, g.total);
                }
                None
            }
            NodeColumn::Unhealthy => match node.gpus_unhealthy() {
                0 => Some("-"),
                bad => put(format_args!("{bad}")),
            },
            NodeColumn::Cpu => put(format_args!("{}/{}", node.cpus_allocated, node.cpus_total)),
            NodeColumn::Memory => put(format_args!("{}/{}", Gib(node.memory_allocated_mb), Gib(node.memory_total_mb))),
            NodeColumn::Reason => match &node.reason {
                None => Some(""),
                Some(reason) if node.reason_user.is_none() && node.reason_time.is_none() => Some(reason),
                Some(_) => {
                    write_reason(node, out);
                    None
                }
            },
            NodeColumn::Ref => put(format_args!("{}/{}", node.cluster, node.name)),
            NodeColumn::Cost => match node.cost_per_hour {
                Some(c) => put(format_args!("{}", cost(c))),
                None => Some(""),
            },
            NodeColumn::GpuCount => put(format_args!("{}/{}", node.gpus_allocated(), node.gpus_total())),
            NodeColumn::GpuType => match node.gpu_model() {
                Some(model) => put(format_args!("{model}")),
                None => Some("-"),
            },
            NodeColumn::Partitions => {
                for (i, p) in node.partitions.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(p);
                }
                None
            }
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
    let mut s = String::new();
    write_state(node, &mut s);
    s
}

/// [`state_cell`] written into `out`, the flags lowered without a copy of each.
fn write_state(node: &Node, out: &mut String) {
    out.push_str(node.state.as_str());
    for f in &node.flags {
        // `drained` already says `drain`; every part written so far is lower case.
        let said = out
            .split('+')
            .any(|part| part.len() >= f.len() && part.as_bytes()[..f.len()].eq_ignore_ascii_case(f.as_bytes()));
        if !said {
            out.push('+');
            out.extend(f.chars().map(|c| c.to_ascii_lowercase()));
        }
    }
}

/// `a100 3/4, h100 0/8`: allocated of total, per model.
pub fn gpus_cell(node: &Node) -> String {
    NodeColumn::Gpus.cell(node).into_owned()
}

/// `why · by root 05-01 12:00`
pub fn reason_cell(node: &Node) -> String {
    NodeColumn::Reason.cell(node).into_owned()
}

/// [`reason_cell`] written into `out`.
fn write_reason(node: &Node, out: &mut String) {
    use std::fmt::Write;
    let Some(reason) = &node.reason else { return };
    out.push_str(reason);
    if node.reason_user.is_some() || node.reason_time.is_some() {
        out.push_str(" ·");
        if let Some(u) = &node.reason_user {
            out.push_str(" by ");
            out.push_str(u);
        }
        if let Some(t) = node.reason_time {
            let _ = write!(out, "{}", t.format(" %m-%d %H:%M"));
        }
    }
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
    fn cells_written_into_one_buffer_read_as_their_own() {
        let mut n = Node::new("c", "gpu-01", NodeState::Drained);
        n.flags = vec!["Drain".into(), "MAINT".into()];
        n.reason = Some("bad psu".into());
        n.reason_user = Some("root".into());
        (n.memory_allocated_mb, n.memory_total_mb) = (3584, 512 * 1024);
        n.partitions = vec!["gpu".into(), "debug".into()];
        let mut buf = String::from("left over");
        let mut cell = |c: NodeColumn| c.cell_into(&n, &mut buf).map_or_else(|| buf.clone(), str::to_string);
        assert_eq!(cell(NodeColumn::State), "drained+maint");
        assert_eq!(cell(NodeColumn::Reason), "bad psu · by root");
        assert_eq!(cell(NodeColumn::Memory), "3.5G/512G");
        assert_eq!(cell(NodeColumn::Gpus), "-");
        assert_eq!(cell(NodeColumn::Partitions), "gpu,debug");
        assert_eq!(cell(NodeColumn::Cluster), "c");
    }

    #[test]
    fn names_sort_naturally() {
        let a = Node::new("c", "gpu-2", NodeState::Idle);
        let b = Node::new("c", "gpu-10", NodeState::Idle);
        assert_eq!(NodeColumn::Name.compare(&a, &b), Ordering::Less);
        assert_eq!(NodeColumn::Cpu.compare(&b, &a), Ordering::Greater);
    }
}
