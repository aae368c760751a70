//! What the selected rows' clusters may do: an action keeps only the targets whose cluster
//! can do its verb (a toast names the refusals, in the words the CLI and the fleet use), and
//! the footer and help ask why a key is unavailable here.

use crate::model::Verb;
use crate::tui::action::UiAction;
use crate::tui::app::form::Field;
use crate::tui::app::{App, Screen};

impl App {
    /// The targets whose cluster can do `verb`; for the rest a toast says which cluster
    /// cannot, in the words the CLI and the fleet use.
    pub(in crate::tui::app) fn permitted<T>(
        &mut self,
        verb: Verb,
        targets: Vec<T>,
        cluster_of: impl Fn(&T) -> &str,
    ) -> Vec<T> {
        let state = self.rows.fleet.clone();
        let mut refused: Vec<String> = Vec::new();
        let mut left_out = 0usize;
        let kept: Vec<T> = targets
            .into_iter()
            .filter(|t| match state.check(cluster_of(t), verb) {
                Ok(()) => true,
                Err(why) => {
                    left_out += 1;
                    if !refused.contains(&why) {
                        refused.push(why);
                    }
                    false
                }
            })
            .collect();
        if !refused.is_empty() {
            let text = if kept.is_empty() {
                refused.join("; ")
            } else {
                format!("{}; {left_out} left out", refused.join("; "))
            };
            self.toast(text, true);
        }
        kept
    }

    /// The cluster of the row an action key would act on: the detail's job, or the row under
    /// the cursor on the jobs and nodes screens.
    fn selected_cluster(&self) -> Option<String> {
        match self.screen {
            Screen::Detail => self.detail.as_ref().map(|d| d.job.cluster.clone()),
            Screen::Jobs => self.cursor_job().map(|j| j.cluster.clone()),
            Screen::Nodes => self.cursor_node().map(|n| n.cluster),
            Screen::Submit => Some(self.form.value(Field::Cluster).to_string()).filter(|c| !c.is_empty()),
            _ => None,
        }
    }

    /// Why the selected row's cluster cannot do what `action` asks, if it cannot: the
    /// footer leaves such keys out and the help screen marks them.
    pub fn unavailable(&self, action: UiAction) -> Option<String> {
        if action == UiAction::NextPod {
            let several = self.detail.as_ref().is_some_and(|d| !d.pods_with_logs().is_empty());
            return (!several).then(|| "only a workload of several pods has other logs to read".to_string());
        }
        let verb = action.verb()?;
        let cluster = self.selected_cluster()?;
        self.rows.fleet.check(&cluster, verb).err()
    }
}
