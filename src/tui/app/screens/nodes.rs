//! The nodes table's keys.

use crate::fleet::Action;
use crate::model::{NodeAction, NodeRef, Verb};
use crate::tui::action::UiAction;
use crate::tui::app::dialog::Dialog;
use crate::tui::app::input::TextInput;
use crate::tui::app::lists::NodeColumn;
use crate::tui::app::{App, Command, Screen, lists};

impl App {
    pub(in crate::tui::app) fn nodes_action(&mut self, action: UiAction, out: &mut Vec<Command>) {
        if Self::move_cursor(&mut self.nodes.cursor, action) {
            self.nodes.sync_anchor(&self.rows);
            return;
        }
        match action {
            UiAction::ToggleSelect => {
                if let Some(node) = self.cursor_node() {
                    if !self.nodes.marked.remove(&node) {
                        self.nodes.marked.insert(node);
                    }
                    self.nodes.cursor.move_by(1);
                    self.nodes.sync_anchor(&self.rows);
                }
            }
            UiAction::SelectAll => {
                let all = self.visible_nodes();
                self.nodes.marked.extend(all);
            }
            UiAction::ClearSelection => self.nodes.marked.clear(),
            UiAction::SortNext | UiAction::SortReverse => {
                if action == UiAction::SortNext {
                    let at = NodeColumn::COCKPIT.iter().position(|c| *c == self.nodes.sort).unwrap_or(0);
                    self.nodes.sort = NodeColumn::COCKPIT[(at + 1) % NodeColumn::COCKPIT.len()];
                } else {
                    self.nodes.reverse = !self.nodes.reverse;
                }
                self.nodes.resort(&self.rows);
                self.refilter_nodes();
            }
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::ProblemNodes => {
                self.nodes.problems_only = !self.nodes.problems_only;
                self.refilter_nodes();
            }
            UiAction::Open => {
                // The node's GPUs on the map.
                if let Some(row) = self.nodes.cursor.current()
                    && let Some(pos) = self.rows.gpu_nodes.iter().position(|g| g.node == row)
                {
                    self.gpus.anchor = Some(lists::node_ref(&self.rows, self.rows.gpu_nodes[pos].node));
                    self.gpus.problems_only = false;
                    let keep = self.cluster_keep();
                    self.gpus.refilter(&self.rows, keep);
                    self.switch(Screen::Gpus);
                }
            }
            UiAction::Drain => {
                let targets = self.node_targets();
                let targets = self.permitted(Verb::Drain, targets, |n| &n.cluster);
                if !targets.is_empty() {
                    // Always a dialog: a drain needs a reason, and it is destructive.
                    self.dialog = Some(Dialog::Drain { targets, reason: TextInput::default(), error: None });
                }
            }
            UiAction::Teardown => {
                let targets = self.node_targets();
                let targets = self.permitted(Verb::Teardown, targets, |n| &n.cluster);
                if !targets.is_empty() {
                    self.dialog = Some(Dialog::Nodes { action: NodeAction::Teardown, targets });
                }
            }
            UiAction::Resume | UiAction::Cordon | UiAction::Uncordon => {
                let act = match action {
                    UiAction::Resume => NodeAction::Resume,
                    UiAction::Cordon => NodeAction::Cordon,
                    _ => NodeAction::Uncordon,
                };
                let targets = self.node_targets();
                for node in self.permitted(act.verb(), targets, |n| &n.cluster) {
                    out.push(Command::Fleet(Action::Node { node, action: act.clone() }));
                }
            }
            _ => {}
        }
    }

    pub(in crate::tui::app) fn node_targets(&self) -> Vec<NodeRef> {
        if self.nodes.marked.is_empty() {
            self.cursor_node().into_iter().collect()
        } else {
            self.nodes.marked.iter().cloned().collect()
        }
    }
}
