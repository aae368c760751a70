//! Everything a key can do in the cockpit. The keymap files name these (snake_case), the
//! help screen and footer describe them, and `App::update` carries them out: one list, so
//! the three can never disagree.

use serde::{Deserialize, Serialize};

use crate::model::{JobAction, Verb};

/// Where a binding applies. `Global` bindings work everywhere unless a screen's own table
/// binds the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Global,
    Overview,
    Jobs,
    Nodes,
    Gpus,
    Usage,
    History,
    Detail,
    Submit,
    Dialog,
}

impl Mode {
    pub const ALL: [Mode; 10] = [
        Mode::Global,
        Mode::Overview,
        Mode::Jobs,
        Mode::Nodes,
        Mode::Gpus,
        Mode::Usage,
        Mode::History,
        Mode::Detail,
        Mode::Submit,
        Mode::Dialog,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::Overview => "overview",
            Mode::Jobs => "jobs",
            Mode::Nodes => "nodes",
            Mode::Gpus => "gpus",
            Mode::Usage => "usage",
            Mode::History => "history",
            Mode::Detail => "detail",
            Mode::Submit => "submit",
            Mode::Dialog => "dialog",
        }
    }
}

macro_rules! ui_actions {
    ($($variant:ident => $name:literal, $help:literal, $destructive:literal;)*) => {
        /// A thing a key does.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum UiAction { $($variant),* }

        impl UiAction {
            pub const ALL: &'static [UiAction] = &[$(UiAction::$variant),*];

            /// The name used in keymap files.
            pub fn name(self) -> &'static str {
                match self { $(UiAction::$variant => $name),* }
            }

            /// One line for the help screen and footer.
            pub fn help(self) -> &'static str {
                match self { $(UiAction::$variant => $help),* }
            }

            /// Changes or kills work: must never sit on a bare Ctrl chord that tmux or a
            /// shell uses. (Whether it asks for confirmation first is the verb's call:
            /// [`crate::model::Verb::is_destructive`].)
            pub fn changes_work(self) -> bool {
                match self { $(UiAction::$variant => $destructive),* }
            }

            pub fn from_name(name: &str) -> Option<UiAction> {
                match name { $($name => Some(UiAction::$variant),)* _ => None }
            }
        }
    };
}

ui_actions! {
    Quit => "quit", "quit flightdeck", false;
    Help => "help", "show every key binding", false;
    CommandMode => "command_mode", "enter a :command", false;
    Filter => "filter", "fuzzy-filter the table", false;
    Back => "back", "close, clear, or go back", false;
    Refresh => "refresh", "refresh every cluster now", false;
    ScreenOverview => "screen_overview", "overview screen", false;
    ScreenJobs => "screen_jobs", "jobs screen", false;
    ScreenNodes => "screen_nodes", "nodes screen", false;
    ScreenGpus => "screen_gpus", "GPU map screen", false;
    ScreenUsage => "screen_usage", "usage screen: who holds the GPUs, now and over 7 d", false;
    ScreenHistory => "screen_history", "finished jobs of the last 24 h (sacct)", false;
    ReloadHistory => "reload_history", "read the finished jobs again (one call per cluster)", false;
    NextScreen => "next_screen", "next screen", false;
    PrevScreen => "prev_screen", "previous screen", false;
    CycleTheme => "cycle_theme", "switch to the next theme", false;
    Up => "up", "move up", false;
    Down => "down", "move down", false;
    Left => "left", "move left", false;
    Right => "right", "move right", false;
    PageUp => "page_up", "page up", false;
    PageDown => "page_down", "page down", false;
    Top => "top", "go to the first row", false;
    Bottom => "bottom", "go to the last row", false;
    Open => "open", "open the detail of the selected row", false;
    ToggleSelect => "toggle_select", "select or unselect the row", false;
    SelectAll => "select_all", "select every visible row", false;
    ClearSelection => "clear_selection", "clear the selection", false;
    ToggleFold => "toggle_fold", "fold or unfold the job array under the cursor", false;
    SortNext => "sort_next", "sort by the next column", false;
    SortReverse => "sort_reverse", "reverse the sort order", false;
    FilterMine => "filter_mine", "show only my jobs", false;
    FilterState => "filter_state", "cycle the state filter", false;
    FilterCluster => "filter_cluster", "cycle the cluster filter", false;
    HideFinished => "hide_finished", "hide or show finished jobs", false;
    ProblemNodes => "problem_nodes", "show only problem nodes", false;
    Cancel => "cancel", "cancel the job(s)", true;
    Hold => "hold", "hold the job(s)", false;
    Release => "release", "release the job(s)", false;
    Requeue => "requeue", "requeue the job(s)", true;
    Drain => "drain", "drain the node (asks for a reason)", true;
    Resume => "resume", "resume the node", false;
    Cordon => "cordon", "cordon the node (no new work)", false;
    Uncordon => "uncordon", "uncordon the node", false;
    Delete => "delete", "delete the stopped run(s)", true;
    Teardown => "teardown", "tear down the node's cloud cluster", true;
    Migrate => "migrate", "move the job(s) to another cluster (shows the plan first)", true;
    Watch => "watch", "tell me when the job(s) change state (again: stop)", false;
    NextTarget => "next_target", "migration: plan for the next cluster", false;
    PrevTarget => "prev_target", "migration: plan for the previous cluster", false;
    ToggleRunning => "toggle_running", "migration: move running jobs too (they restart)", false;
    CycleGpuType => "cycle_gpu_type", "migration: ask for another GPU model (the target's, then any)", false;
    NewJob => "new_job", "open the submit form", false;
    Follow => "follow", "follow the log as it grows", false;
    SwitchLog => "switch_log", "switch between stdout and stderr", false;
    NextPod => "next_pod", "read the next pod's log (a workload of several pods)", false;
    NextField => "next_field", "next field", false;
    PrevField => "prev_field", "previous field", false;
    SubmitForm => "submit_form", "submit the job", true;
    LoadSpec => "load_spec", "load a spec file into the form", false;
    Confirm => "confirm", "confirm", true;
    Dismiss => "dismiss", "dismiss", false;
}

impl UiAction {
    /// The change this key asks a cluster for, if it asks for one: what capabilities are
    /// checked against and what decides whether it confirms first.
    pub fn verb(self) -> Option<Verb> {
        Some(match self {
            UiAction::Cancel => Verb::Cancel,
            UiAction::Hold => Verb::Hold,
            UiAction::Release => Verb::Release,
            UiAction::Requeue => Verb::Requeue,
            UiAction::Drain => Verb::Drain,
            UiAction::Resume => Verb::Resume,
            UiAction::Cordon => Verb::Cordon,
            UiAction::Uncordon => Verb::Uncordon,
            UiAction::Delete => Verb::Delete,
            UiAction::Teardown => Verb::Teardown,
            UiAction::SubmitForm | UiAction::NewJob => Verb::Submit,
            _ => return None,
        })
    }

    /// The job action this key asks for.
    pub fn job_action(self) -> Option<JobAction> {
        Some(match self {
            UiAction::Cancel => JobAction::Cancel,
            UiAction::Hold => JobAction::Hold,
            UiAction::Release => JobAction::Release,
            UiAction::Requeue => JobAction::Requeue,
            UiAction::Delete => JobAction::Delete,
            _ => return None,
        })
    }
}

impl std::fmt::Display for UiAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for a in UiAction::ALL {
            assert_eq!(UiAction::from_name(a.name()), Some(*a));
            assert!(seen.insert(a.name()), "duplicate {}", a.name());
        }
    }
}
