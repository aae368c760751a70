//! The submit form: typing into its fields, its keys.

use std::path::PathBuf;

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::model::Verb;
use crate::tui::action::UiAction;
use crate::tui::app::dialog::Dialog;
use crate::tui::app::form::Field;
use crate::tui::app::input::{Edit, TextInput, plain_char};
use crate::tui::app::{App, Command, Screen, form};

impl App {
    pub(in crate::tui::app) fn open_form(&mut self) {
        if Screen::MAIN.contains(&self.screen) {
            self.back_to = self.screen;
        }
        if let Some(c) = &self.cluster
            && self.form.value(Field::Cluster).is_empty()
        {
            self.form.input_mut(Field::Cluster).set(c.clone());
        }
        self.form.recheck(&self.rows.fleet);
        self.screen = Screen::Submit;
    }

    /// Typing in the submit form: characters and editing keys go to the focused field (or the
    /// path prompt). Returns false for keys the keymap should see.
    pub(in crate::tui::app) fn form_text_key(&mut self, key: &KeyEvent, out: &mut Vec<Command>) -> bool {
        if let Some(prompt) = &mut self.form.path_prompt {
            match key.code {
                KeyCode::Enter => {
                    let path = prompt.text().trim().to_string();
                    self.form.path_prompt = None;
                    if !path.is_empty() {
                        out.push(Command::LoadSpec(PathBuf::from(path)));
                    }
                }
                KeyCode::Esc => self.form.path_prompt = None,
                _ => {
                    prompt.edit(key);
                }
            }
            return true;
        }
        let field = self.form.focused();
        if field == Field::Command && self.form.script.is_some() {
            if key.code == KeyCode::Backspace {
                self.form.script = None;
                self.form.recheck(&self.rows.fleet);
                return true;
            }
            return plain_char(key).is_some();
        }
        if field == Field::Cluster && matches!(key.code, KeyCode::Left | KeyCode::Right) {
            self.form.cycle_cluster(&self.rows.cluster_names(), if key.code == KeyCode::Left { -1 } else { 1 });
            self.form.recheck(&self.rows.fleet);
            return true;
        }
        match self.form.input_mut(field).edit(key) {
            Edit::Changed => {
                self.form.recheck(&self.rows.fleet);
                true
            }
            Edit::Moved => true,
            Edit::Ignored => false,
        }
    }

    pub(in crate::tui::app) fn form_action(&mut self, action: UiAction) {
        let n = Field::ALL.len();
        match action {
            UiAction::NextField | UiAction::Down => self.form.focus = (self.form.focus + 1) % n,
            UiAction::PrevField | UiAction::Up => self.form.focus = (self.form.focus + n - 1) % n,
            UiAction::LoadSpec => {
                let last = self.form.loaded_from.clone().unwrap_or_default();
                self.form.path_prompt = Some(TextInput::new(last));
            }
            UiAction::SubmitForm => {
                self.form.recheck(&self.rows.fleet);
                match (self.form.wanted.clone(), self.form.problem.clone()) {
                    (Some((cluster, spec)), _) => {
                        if let Some(cluster) = self.permitted(Verb::Submit, vec![cluster], |c| c).pop() {
                            self.dialog = Some(Dialog::Submit { cluster, spec: Box::new(spec) });
                        }
                    }
                    (None, problem) => {
                        let problem =
                            problem.unwrap_or(form::Problem { field: None, message: "the form is empty".into() });
                        if let Some(f) = problem.field {
                            self.form.focus = f as usize;
                        }
                        self.toast(format!("cannot submit: {}", problem.message), true);
                    }
                }
            }
            _ => {}
        }
    }
}
