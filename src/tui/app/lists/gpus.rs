//! The GPU map's state: a cursor over the nodes that have GPUs, and a cell within the node.

use super::{ClusterKeep, Cursor, node_ref};
use crate::columns::natural_cmp;
use crate::model::NodeRef;
use crate::tui::app::row_cache::{Cell as GpuCell, RowCache};

/// Sort keys of the GPU map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSort {
    Node,
    Free,
    Allocated,
    Unavailable,
}

impl GpuSort {
    pub const ALL: [GpuSort; 4] = [GpuSort::Node, GpuSort::Free, GpuSort::Allocated, GpuSort::Unavailable];

    pub fn title(self) -> &'static str {
        match self {
            GpuSort::Node => "node",
            GpuSort::Free => "free",
            GpuSort::Allocated => "allocated",
            GpuSort::Unavailable => "unavailable",
        }
    }
}

/// What decides the GPU map's rows besides the data (the cluster filter is the App's).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuView {
    pub sort: GpuSort,
    pub reverse: bool,
    pub problems_only: bool,
}

/// The GPU map's rows (indices into `RowCache::gpu_nodes`) that `view` and `cluster` keep,
/// grouped by cluster; within it, by the sort key (most first), then the node name.
pub fn visible_gpus(data: &RowCache, view: &GpuView, cluster: ClusterKeep) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..data.gpu_nodes.len() as u32)
        .filter(|&i| {
            let g = &data.gpu_nodes[i as usize];
            cluster.keeps(data.nodes[g.node as usize].snap)
                && (!view.problems_only || data.is_problem(g.node) || g.cells.contains(&GpuCell::Unavailable))
        })
        .collect();
    let count = |i: u32, want: GpuCell| data.gpu_nodes[i as usize].count(want);
    let key = |i: u32| -> usize {
        match view.sort {
            GpuSort::Node => 0,
            GpuSort::Free => count(i, GpuCell::Free),
            GpuSort::Allocated => count(i, GpuCell::Allocated(None)),
            GpuSort::Unavailable => count(i, GpuCell::Unavailable),
        }
    };
    rows.sort_by(|&a, &b| {
        let (ra, rb) = (
            &data.nodes[data.gpu_nodes[a as usize].node as usize],
            &data.nodes[data.gpu_nodes[b as usize].node as usize],
        );
        let (na, nb) = (data.node(data.gpu_nodes[a as usize].node), data.node(data.gpu_nodes[b as usize].node));
        let within = key(b).cmp(&key(a)).then_with(|| natural_cmp(&na.name, &nb.name));
        ra.snap.cmp(&rb.snap).then(if view.reverse { within.reverse() } else { within })
    });
    rows
}

/// The GPU map's state: a cursor over nodes (indices into `RowCache::gpu_nodes`) and a cell.
pub struct GpuList {
    pub cursor: Cursor,
    pub cell: usize,
    pub sort: GpuSort,
    pub reverse: bool,
    pub problems_only: bool,
    pub anchor: Option<NodeRef>,
}

impl Default for GpuList {
    fn default() -> Self {
        Self {
            cursor: Cursor::default(),
            cell: 0,
            sort: GpuSort::Node,
            reverse: false,
            problems_only: false,
            anchor: None,
        }
    }
}

impl GpuList {
    /// What decides the rows besides the data.
    pub fn view(&self) -> GpuView {
        GpuView { sort: self.sort, reverse: self.reverse, problems_only: self.problems_only }
    }

    pub fn refilter(&mut self, data: &RowCache, cluster: ClusterKeep) {
        let rows = visible_gpus(data, &self.view(), cluster);
        self.adopt(data, rows);
    }

    /// Show `rows` (see [`visible_gpus`]), the cursor on the anchor's node if it is there.
    pub fn adopt(&mut self, data: &RowCache, rows: Vec<u32>) {
        let anchor_row = self.anchor.as_ref().and_then(|r| {
            let node_row = data.node_row(r)?;
            data.gpu_nodes.iter().position(|g| g.node == node_row).map(|p| p as u32)
        });
        self.cursor.visible = rows;
        self.cursor.place(anchor_row);
        self.sync(data);
    }

    pub fn sync(&mut self, data: &RowCache) {
        self.anchor = self.cursor.current().map(|i| node_ref(data, data.gpu_nodes[i as usize].node));
        let cells = self.cursor.current().map_or(0, |i| data.gpu_nodes[i as usize].cells.len());
        self.cell = self.cell.min(cells.saturating_sub(1));
    }
}
