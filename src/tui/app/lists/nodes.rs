//! The nodes table's state: sort order, filters, cursor and marks.

use std::collections::BTreeSet;

use nucleo::Matcher;

use super::filter::{Fuzzy, filter_rows};
use super::{ClusterKeep, Cursor, node_ref};
use crate::columns::NodeColumn;
use crate::model::NodeRef;
use crate::tui::app::row_cache::RowCache;

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
    pub fn resort(&mut self, data: &RowCache) {
        let mut rows: Vec<u32> = (0..data.nodes.len() as u32).collect();
        let key = self.sort;
        let by = |a: &u32, b: &u32| key.compare(data.node(*a), data.node(*b));
        rows.sort_by(|a, b| if self.reverse { by(b, a) } else { by(a, b) });
        self.sorted = rows;
    }

    pub fn refilter(&mut self, data: &RowCache, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let anchor_row = self.anchor.as_ref().and_then(|r| data.node_index.get(r).copied());
        let fuzzy = Fuzzy::new(&self.fuzzy);
        let source = if narrow { std::mem::take(&mut self.cursor.visible) } else { std::mem::take(&mut self.sorted) };
        let problems = self.problems_only;
        self.cursor.visible = filter_rows(&source, matchers, fuzzy.is_some(), |row, matcher| {
            let r = &data.nodes[row as usize];
            cluster.keeps(r.snap)
                && (!problems || data.is_problem(row))
                && fuzzy.as_ref().is_none_or(|f| f.matches(&r.hay, matcher))
        });
        if !narrow {
            self.sorted = source;
        }
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    pub fn sync_anchor(&mut self, data: &RowCache) {
        self.anchor = self.cursor.current().map(|r| node_ref(data, r));
    }

    pub fn prune(&mut self, data: &RowCache) {
        self.marked.retain(|r| data.node_index.contains_key(r));
    }
}
