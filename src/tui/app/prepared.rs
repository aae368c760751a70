//! What a new fleet state costs, done off the UI thread: its row cache, and the lists' rows
//! (sorted, filtered) for the view the App had when the state arrived. The App takes the
//! rows as they are while its view is still that one; else it sorts and filters itself.

use std::sync::Arc;

use super::lists::{self, ClusterKeep, ListView};
use super::row_cache::RowCache;
use crate::fleet::FleetState;

/// A fleet state made ready for the App ([`super::Msg::Prepared`]).
pub struct Prepared {
    pub rows: RowCache,
    pub lists: Option<Lists>,
}

/// The lists' rows for one view of one row cache.
pub struct Lists {
    pub view: ListView,
    /// Every job row in the view's sort order, and those its filters keep.
    pub jobs: (Vec<u32>, Vec<u32>),
    /// Every node row in the view's sort order, and those its filters keep.
    pub nodes: (Vec<u32>, Vec<u32>),
    /// The GPU map's rows.
    pub gpus: Vec<u32>,
}

impl Lists {
    pub fn build(data: &RowCache, view: ListView) -> Lists {
        let keep = ClusterKeep::resolve(data, view.cluster.as_deref());
        let mut matchers = Vec::new();
        let jobs_sorted = lists::sorted_jobs(data, view.jobs.sort, view.jobs.reverse);
        let jobs_matched = lists::matching_jobs(data, &jobs_sorted, &view.jobs, keep, &mut matchers);
        let nodes_sorted = lists::sorted_nodes(data, view.nodes.sort, view.nodes.reverse);
        let nodes_matched = lists::matching_nodes(data, &nodes_sorted, &view.nodes, keep, &mut matchers);
        let gpus = lists::visible_gpus(data, &view.gpus, keep);
        Lists { view, jobs: (jobs_sorted, jobs_matched), nodes: (nodes_sorted, nodes_matched), gpus }
    }
}

impl Prepared {
    /// The row cache for `state`, and the lists' rows for `view` when one is given.
    pub fn new(state: Arc<FleetState>, view: Option<ListView>) -> Prepared {
        let rows = RowCache::new(state);
        let lists = view.map(|v| Lists::build(&rows, v));
        Prepared { rows, lists }
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("rows", &self.rows).field("lists", &self.lists.is_some()).finish()
    }
}
