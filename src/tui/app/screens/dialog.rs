//! The confirmation dialog's keys, and the migration dialog's plan (asked again for another target, running jobs, GPU model).

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use crate::model::{JobRef, Verb};
use crate::tui::action::{Mode, UiAction};
use crate::tui::app::dialog::Dialog;
use crate::tui::app::input::{Edit, plain_char};
use crate::tui::app::{App, Command};

impl App {
    pub(in crate::tui::app) fn dialog_key(&mut self, key: KeyEvent, out: &mut Vec<Command>) {
        if let Some(Dialog::Drain { reason, error, .. }) = &mut self.dialog
            && (plain_char(&key).is_some() || reason.edit(&key) != Edit::Ignored)
        {
            if plain_char(&key).is_some() {
                reason.edit(&key);
            }
            *error = None;
            return;
        }
        match self.resolve(Mode::Dialog, key) {
            Some(UiAction::NextTarget) => self.replan(1, false, out),
            Some(UiAction::PrevTarget) => self.replan(-1, false, out),
            Some(UiAction::ToggleRunning) => self.replan(0, true, out),
            Some(UiAction::CycleGpuType) => self.cycle_gpu_type(out),
            Some(UiAction::Confirm) => self.confirm(out),
            Some(UiAction::Dismiss | UiAction::Back) => self.dialog = None,
            Some(UiAction::Quit) => out.push(Command::Quit),
            _ if key.code == KeyCode::Esc => self.dialog = None,
            _ => {}
        }
    }

    pub(in crate::tui::app) fn confirm(&mut self, out: &mut Vec<Command>) {
        let Some(dialog) = self.dialog.take() else { return };
        match dialog.actions() {
            Ok(actions) => {
                if let Dialog::Jobs { targets, .. } | Dialog::Migrate { sources: targets, .. } = &dialog {
                    for t in targets {
                        self.jobs.marked.remove(t);
                    }
                }
                if let Dialog::Drain { targets, .. } = &dialog {
                    for t in targets {
                        self.nodes.marked.remove(t);
                    }
                }
                out.extend(actions.into_iter().map(Command::Fleet));
            }
            Err(why) => {
                let mut dialog = dialog;
                if let Dialog::Drain { error, .. } = &mut dialog {
                    *error = Some(why);
                }
                self.dialog = Some(dialog);
            }
        }
    }

    /// Clusters a migration of `sources` can go to: they take submissions, and are not the
    /// one cluster every source is on.
    pub(in crate::tui::app) fn migration_targets(&self, sources: &[JobRef]) -> Vec<String> {
        self.rows
            .fleet
            .clusters
            .iter()
            .filter(|c| c.capabilities.allows(Verb::Submit))
            .filter(|c| !sources.iter().all(|j| j.cluster == c.name))
            .map(|c| c.name.clone())
            .collect()
    }

    /// The migration dialog for `sources` (where their clusters can cancel), planned for the
    /// first cluster that can take them; tab moves the plan to the next.
    pub(in crate::tui::app) fn open_migration(&mut self, sources: Vec<JobRef>, out: &mut Vec<Command>) {
        let sources = self.permitted(Verb::Cancel, sources, |j| &j.cluster);
        if sources.is_empty() {
            return;
        }
        let Some(to) = self.migration_targets(&sources).into_iter().next() else {
            self.toast("no other cluster here takes submissions: nowhere to move these jobs".into(), true);
            return;
        };
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: to.clone(),
            running: false,
            gpu_type: None,
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to, running: false, gpu_type: None, plan: None });
    }

    /// Plan the open migration again, for another target (`step`) or with running jobs
    /// moved or not.
    pub(in crate::tui::app) fn replan(&mut self, step: isize, toggle_running: bool, out: &mut Vec<Command>) {
        let Some(Dialog::Migrate { sources, to, running, gpu_type, .. }) = &self.dialog else { return };
        let targets = self.migration_targets(sources);
        let at = targets.iter().position(|t| t == to).unwrap_or(0) as isize;
        let n = targets.len().max(1) as isize;
        let Some(next) = targets.get((at + step).rem_euclid(n) as usize).cloned() else { return };
        // Another target has other models: the choice made for the last one is dropped.
        let gpu_type = if next == *to { gpu_type.clone() } else { None };
        let (sources, running) = (sources.clone(), *running != toggle_running);
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: next.clone(),
            running,
            gpu_type: gpu_type.clone(),
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to: next, running, gpu_type, plan: None });
    }

    /// The GPU model the open migration asks for on its target, one step on: as the source
    /// asked, each model the target's nodes hold, then any model; planned again.
    pub(in crate::tui::app) fn cycle_gpu_type(&mut self, out: &mut Vec<Command>) {
        use crate::fleet::migrate::{GpuChoice, gpu_models};
        let Some(Dialog::Migrate { sources, to, running, gpu_type, .. }) = &self.dialog else { return };
        let models = self.rows.fleet.cluster(to).map(gpu_models).unwrap_or_default();
        let mut choices: Vec<Option<GpuChoice>> = vec![None];
        choices.extend(models.into_iter().map(|m| Some(GpuChoice::Model(m))));
        choices.push(Some(GpuChoice::Any));
        let at = choices.iter().position(|c| c == gpu_type).unwrap_or(0);
        let next = choices[(at + 1) % choices.len()].clone();
        let (sources, to, running) = (sources.clone(), to.clone(), *running);
        let seq = self.plan.issue(());
        out.push(Command::PlanMigration {
            sources: sources.clone(),
            to: to.clone(),
            running,
            gpu_type: next.clone(),
            seq,
        });
        self.dialog = Some(Dialog::Migrate { sources, to, running, gpu_type: next, plan: None });
    }
}
