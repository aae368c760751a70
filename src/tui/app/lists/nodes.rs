//! The nodes table's state: sort order, filters, cursor and marks.

use std::collections::BTreeSet;

use nucleo::Matcher;

use super::filter::{Fuzzy, filter_rows};
use super::{ClusterKeep, Cursor, node_ref};
use crate::columns::NodeColumn;
use crate::model::NodeRef;
use crate::tui::app::row_cache::RowCache;

/// What decides the nodes table's rows besides the data (the cluster filter is the App's).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    pub sort: NodeColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub problems_only: bool,
}

/// Every node row, by `key` (reversed or not).
pub fn sorted_nodes(data: &RowCache, key: NodeColumn, reverse: bool) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..data.nodes.len() as u32).collect();
    let by = |a: &u32, b: &u32| key.compare(data.node(*a), data.node(*b));
    rows.sort_by(|a, b| if reverse { by(b, a) } else { by(a, b) });
    rows
}

/// The rows of `source` (in its order) that `view`'s filters and `cluster` keep.
pub fn matching_nodes(
    data: &RowCache,
    source: &[u32],
    view: &NodeView,
    cluster: ClusterKeep,
    matchers: &mut Vec<Matcher>,
) -> Vec<u32> {
    let fuzzy = Fuzzy::new(&view.fuzzy);
    let problems = view.problems_only;
    let reads_text = fuzzy.as_ref().is_some_and(Fuzzy::reads_text);
    filter_rows(source, matchers, reads_text, |row, matcher| {
        cluster.keeps(data.nodes[row as usize].snap)
            && (!problems || data.is_problem(row))
            && fuzzy.as_ref().is_none_or(|f| f.matches_row(&data.node_hays, row, matcher))
    })
}

/// The nodes table's state.
pub struct NodeList {
    pub sorted: Vec<u32>,
    pub cursor: Cursor,
    pub sort: NodeColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub problems_only: bool,
    pub marked: BTreeSet<NodeRef>,
    pub anchor: Option<NodeRef>,
}

impl Default for NodeList {
    fn default() -> Self {
        Self {
            sorted: Vec::new(),
            cursor: Cursor::default(),
            sort: NodeColumn::Name,
            reverse: false,
            fuzzy: String::new(),
            problems_only: false,
            marked: BTreeSet::new(),
            anchor: None,
        }
    }
}

impl NodeList {
    /// What decides the rows besides the data.
    pub fn view(&self) -> NodeView {
        NodeView {
            sort: self.sort,
            reverse: self.reverse,
            fuzzy: self.fuzzy.clone(),
            problems_only: self.problems_only,
        }
    }

    pub fn resort(&mut self, data: &RowCache) {
        self.sorted = sorted_nodes(data, self.sort, self.reverse);
    }

    pub fn refilter(&mut self, data: &RowCache, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let source = if narrow { &self.cursor.visible } else { &self.sorted };
        let visible = matching_nodes(data, source, &self.view(), cluster, matchers);
        self.show(data, visible);
    }

    /// Take the rows prepared for this list's view (off the UI thread).
    pub fn adopt(&mut self, data: &RowCache, sorted: Vec<u32>, visible: Vec<u32>) {
        self.sorted = sorted;
        self.show(data, visible);
    }

    /// Show `visible`, the cursor on the anchor's row if it is there.
    fn show(&mut self, data: &RowCache, visible: Vec<u32>) {
        let anchor_row = self.anchor.as_ref().and_then(|r| data.node_row(r));
        self.cursor.visible = visible;
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    pub fn sync_anchor(&mut self, data: &RowCache) {
        self.anchor = self.cursor.current().map(|r| node_ref(data, r));
    }

    pub fn prune(&mut self, data: &RowCache) {
        self.marked.retain(|r| data.node_row(r).is_some());
    }
}
