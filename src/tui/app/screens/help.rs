//! The help overlay: its sections and its keys.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::action::UiAction;
use crate::tui::app::{App, Command, help};

impl App {
    /// The help screen's content: the keymap's bindings grouped by screen, this screen's
    /// own first.
    pub fn help_sections(&self) -> Vec<help::HelpSection> {
        let mut sections = help::sections(&self.keymap);
        for entry in sections.iter_mut().flat_map(|s| s.entries.iter_mut()) {
            entry.unavailable = entry.action.and_then(|a| self.unavailable(a));
        }
        let own = help::mode_title(self.screen.mode());
        if let Some(i) = sections.iter().position(|s| s.title == own) {
            let s = sections.remove(i);
            sections.insert(0, s);
        }
        sections
    }

    pub(in crate::tui::app) fn help_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        let scroll = self.help.unwrap_or(0);
        let page = usize::from(self.size.1.saturating_sub(6)).max(1);
        self.help = match self.resolve(self.screen.mode(), key) {
            Some(UiAction::Up) => Some(scroll.saturating_sub(1)),
            Some(UiAction::Down) => Some(scroll + 1),
            Some(UiAction::PageUp) => Some(scroll.saturating_sub(page)),
            Some(UiAction::PageDown) => Some(scroll + page),
            Some(UiAction::Top) => Some(0),
            Some(UiAction::Bottom) => Some(usize::MAX / 2),
            Some(UiAction::Help | UiAction::Back | UiAction::Dismiss) => None,
            Some(UiAction::Quit) => {
                out.push(Command::Quit);
                None
            }
            _ if key.code == KeyCode::Esc => None,
            _ => Some(scroll),
        };
    }
}
