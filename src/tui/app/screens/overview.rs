//! The overview's keys.

use crate::tui::action::UiAction;
use crate::tui::app::{App, Screen};

impl App {
    pub(in crate::tui::app) fn overview_action(&mut self, action: UiAction) {
        match action {
            UiAction::Up => self.overview_scroll = self.overview_scroll.saturating_sub(1),
            UiAction::Down => self.overview_scroll += 1,
            UiAction::PageUp => self.overview_scroll = self.overview_scroll.saturating_sub(10),
            UiAction::PageDown => self.overview_scroll += 10,
            UiAction::Top => self.overview_scroll = 0,
            UiAction::FilterCluster => self.cycle_cluster(),
            UiAction::Open => self.switch(Screen::Jobs),
            _ => {}
        }
    }
}
