//! The one-line prompts: the tables' filter and the `:` command line.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::tui::app::command_line::Parsed;
use crate::tui::app::input::Edit;
use crate::tui::app::{App, Command, Input, Screen, command_line, lists};
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;

impl App {
    pub(in crate::tui::app) fn input_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        let Some(input) = &mut self.input else { return };
        match (input, key.code) {
            (Input::Filter { .. }, KeyCode::Enter) => self.input = None,
            (Input::Filter { text, .. }, KeyCode::Esc) => {
                text.clear();
                self.apply_filter_input(false);
                self.input = None;
            }
            (Input::Filter { text, .. }, _) => {
                let old = text.text().to_string();
                if text.edit(&key) == Edit::Changed {
                    let narrow = lists::narrows(&old, text.text());
                    self.apply_filter_input(narrow);
                }
            }
            (Input::Command { .. }, KeyCode::Esc) => self.input = None,
            (Input::Command { text, .. }, KeyCode::Enter) => {
                let line = text.text().to_string();
                self.input = None;
                self.run_command(&line, out);
            }
            (Input::Command { text, candidates }, KeyCode::Tab) => {
                let users = &self.rows.users;
                let (new, found) =
                    command_line::complete(text.text(), &self.rows.cluster_names(), users, Theme::names());
                text.set(new);
                *candidates = found;
            }
            (Input::Command { text, candidates }, _) => {
                // Backspace on an empty command line closes it, as in vim.
                if key.code == KeyCode::Backspace && text.text().is_empty() {
                    self.input = None;
                } else if text.edit(&key) == Edit::Changed {
                    candidates.clear();
                }
            }
        }
    }

    /// Copy the filter prompt's text to its table and re-filter.
    pub(in crate::tui::app) fn apply_filter_input(&mut self, narrow: bool) {
        let Some(Input::Filter { screen, text }) = &self.input else { return };
        let keep = self.cluster_keep();
        match screen {
            Screen::Usage => {
                self.usage.filter = text.text().to_string();
                self.usage.rebuild(&self.rows.usage);
            }
            Screen::Nodes => {
                self.nodes.fuzzy = text.text().to_string();
                self.nodes.refilter(&self.rows, keep, &mut self.matchers, narrow);
            }
            _ => {
                self.jobs.fuzzy = text.text().to_string();
                self.jobs.refilter(&self.rows, keep, &mut self.matchers, narrow);
            }
        }
    }

    pub(in crate::tui::app) fn run_command(&mut self, line: &str, out: &mut Vec<Command>) {
        match command_line::parse(line) {
            Ok(Parsed::Screen(name)) => self.switch(match name {
                "jobs" => Screen::Jobs,
                "nodes" => Screen::Nodes,
                "gpus" => Screen::Gpus,
                _ => Screen::Overview,
            }),
            Ok(Parsed::Cluster(None)) => self.set_cluster(None),
            Ok(Parsed::Cluster(Some(name))) => {
                if self.rows.fleet.cluster(&name).is_some() {
                    self.set_cluster(Some(name));
                } else {
                    let names = self.rows.cluster_names().join(", ");
                    self.toast(format!("no cluster named `{name}` (clusters: {names})"), true);
                }
            }
            Ok(Parsed::User(user)) => {
                self.jobs.user = user;
                self.refilter_jobs();
                if !matches!(self.screen, Screen::Jobs) {
                    self.switch(Screen::Jobs);
                }
            }
            Ok(Parsed::Idle) => {
                self.jobs.idle_only = !self.jobs.idle_only;
                self.refilter_jobs();
                let what = if self.jobs.idle_only { "jobs with idle GPUs only" } else { "every job" };
                self.toast(what.to_string(), false);
                if !matches!(self.screen, Screen::Jobs) {
                    self.switch(Screen::Jobs);
                }
            }
            Ok(Parsed::Theme(name)) => {
                self.set_theme(&name);
            }
            Ok(Parsed::Keymap(name)) => match Keymap::builtin(&name) {
                Some(keymap) => {
                    self.keymap = keymap;
                    self.toast(format!("keymap {name}"), false);
                }
                None => self.toast(format!("no keymap named `{name}` (keymaps: {})", Keymap::names().join(", ")), true),
            },
            Ok(Parsed::History(age)) => self.open_history(age, out),
            Ok(Parsed::Usage(age)) => self.open_usage(age, out),
            Ok(Parsed::Submit) => self.open_form(),
            Ok(Parsed::Help) => self.help = Some(0),
            Ok(Parsed::Quit) => out.push(Command::Quit),
            Err(e) => self.toast(e, true),
        }
    }
}
