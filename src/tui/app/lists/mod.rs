//! The jobs, nodes and GPU-map lists: sort order, filters, cursor and marks, kept as row
//! indices into the row cache and recomputed only when the data, a filter or the sort changes.
//!
//! The lists read the row cache (`super::row_cache`); the cache knows nothing of them. Columns,
//! cell text and sort keys are the core `crate::columns`, shared with the CLI.

pub mod cursor;
pub mod filter;
pub mod gpus;
pub mod jobs;
pub mod nodes;

pub use self::cursor::Cursor;
pub use self::filter::{Fuzzy, filter_rows, narrows};
pub use self::gpus::{GpuList, GpuSort, GpuView, visible_gpus};
pub use self::jobs::{JobList, JobView, matching_jobs, sorted_jobs};
pub use self::nodes::{NodeList, NodeView, matching_nodes, sorted_nodes};
use super::row_cache::RowCache;
pub use crate::columns::{JobColumn, NodeColumn};
use crate::model::{JobState, NodeRef};

/// The cycle of the quick state filter (`None` is "all").
pub const STATE_CYCLE: [JobState; 8] = [
    JobState::Pending,
    JobState::Running,
    JobState::Held,
    JobState::Suspended,
    JobState::Completing,
    JobState::Failed,
    JobState::Completed,
    JobState::Cancelled,
];

/// What decides every list's rows besides the data: each list's sort and filters, and the
/// cluster filter. Rows prepared off the UI thread for one view serve only that view.
#[derive(Debug, Clone, PartialEq)]
pub struct ListView {
    pub cluster: Option<String>,
    pub jobs: JobView,
    pub nodes: NodeView,
    pub gpus: GpuView,
}

/// Which cluster the cluster filter keeps, resolved against the current data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterKeep {
    All,
    /// The named cluster, at this snapshot index (`None`: it has no data yet).
    One(Option<u16>),
}

impl ClusterKeep {
    pub fn resolve(data: &RowCache, name: Option<&str>) -> ClusterKeep {
        match name {
            None => ClusterKeep::All,
            Some(name) => ClusterKeep::One(
                data.snaps.iter().position(|(i, _)| data.fleet.clusters[*i].name == name).map(|p| p as u16),
            ),
        }
    }

    pub fn keeps(self, snap: u16) -> bool {
        match self {
            ClusterKeep::All => true,
            ClusterKeep::One(want) => want == Some(snap),
        }
    }
}

/// The identity of the node at `row` of the row cache.
pub fn node_ref(data: &RowCache, row: u32) -> NodeRef {
    let n = data.node(row);
    NodeRef { cluster: n.cluster.clone(), name: n.name.clone() }
}
