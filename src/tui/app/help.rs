//! The `?` help: every binding of the effective keymap, grouped by screen.

use crate::tui::action::{Mode, UiAction};
use crate::tui::keymap::Keymap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpEntry {
    /// Every key that does it in this section, as the keymap spells them (`k, up`).
    pub keys: String,
    pub action: Option<UiAction>,
    pub text: &'static str,
    /// Why the selected row's cluster cannot do this (`cluster k8s (kubernetes) cannot
    /// requeue`): the entry is shown greyed with the reason.
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpSection {
    pub title: &'static str,
    pub entries: Vec<HelpEntry>,
}

pub fn mode_title(mode: Mode) -> &'static str {
    match mode {
        Mode::Global => "Everywhere",
        Mode::Overview => "Overview",
        Mode::Jobs => "Jobs",
        Mode::Nodes => "Nodes",
        Mode::Gpus => "GPU map",
        Mode::Usage => "Usage",
        Mode::History => "History",
        Mode::Detail => "Job detail",
        Mode::Submit => "Submit form",
        Mode::Dialog => "Dialogs",
    }
}

/// One section per mode (its own table; `Everywhere` holds the global one), then the keys the
/// cockpit handles itself.
pub fn sections(keymap: &Keymap) -> Vec<HelpSection> {
    let mut out = Vec::new();
    for mode in Mode::ALL {
        let mut entries: Vec<HelpEntry> = Vec::new();
        for (key, action) in keymap.bindings(mode) {
            match entries.last_mut() {
                Some(last) if last.action == Some(action) => {
                    last.keys.push_str(", ");
                    last.keys.push_str(&key);
                }
                _ => {
                    entries.push(HelpEntry { keys: key, action: Some(action), text: action.help(), unavailable: None })
                }
            }
        }
        if !entries.is_empty() {
            out.push(HelpSection { title: mode_title(mode), entries });
        }
    }
    out.push(HelpSection {
        title: "Built in",
        entries: vec![
            HelpEntry {
                keys: "ctrl+z".into(),
                action: None,
                text: "suspend to the shell (`fg` returns)",
                unavailable: None,
            },
            HelpEntry {
                keys: "ctrl+c".into(),
                action: None,
                text: "quit, whatever the keymap says",
                unavailable: None,
            },
            HelpEntry {
                keys: "enter / esc".into(),
                action: None,
                text: "in a text field: keep / clear and close",
                unavailable: None,
            },
            HelpEntry { keys: "tab".into(), action: None, text: "on the command line: complete", unavailable: None },
        ],
    });
    out
}
