//! The cluster filter (show one cluster only): setting or cycling it refilters every list,
//! and the lists ask it which cluster it keeps.

use crate::tui::app::App;
use crate::tui::app::lists::ClusterKeep;

impl App {
    pub(in crate::tui::app) fn cluster_keep(&self) -> ClusterKeep {
        ClusterKeep::resolve(&self.rows, self.cluster.as_deref())
    }

    pub(in crate::tui::app) fn refilter_jobs(&mut self) {
        let keep = self.cluster_keep();
        self.jobs.refilter(&self.rows, keep, &mut self.matchers, false);
    }

    pub(in crate::tui::app) fn refilter_nodes(&mut self) {
        let keep = self.cluster_keep();
        self.nodes.refilter(&self.rows, keep, &mut self.matchers, false);
    }

    fn refilter_all(&mut self) {
        self.refilter_jobs();
        self.refilter_nodes();
        self.history.refilter(self.cluster.as_deref(), None);
        let keep = self.cluster_keep();
        self.gpus.refilter(&self.rows, keep);
    }

    pub(in crate::tui::app) fn set_cluster(&mut self, cluster: Option<String>) {
        self.cluster = cluster;
        self.refilter_all();
    }

    /// The next cluster filter: all → first → … → last → all.
    pub(in crate::tui::app) fn cycle_cluster(&mut self) {
        let names = self.rows.cluster_names();
        let next = match self.cluster.as_ref().and_then(|c| names.iter().position(|n| n == c)) {
            None => names.first().cloned(),
            Some(i) => names.get(i + 1).cloned(),
        };
        self.set_cluster(next);
    }
}
