//! Confirmation dialogs. A dialog captures its exact targets when it opens; refreshes while
//! it is open do not touch them, confirming sends exactly those, dismissing sends nothing.

use super::input::TextInput;
use crate::fleet::Action;
use crate::fleet::migrate::{GpuChoice, MigrationPlan};
use crate::model::{JobAction, NodeAction};
use crate::model::{JobRef, NodeRef};
use crate::spec::JobSpec;

#[derive(Debug, Clone)]
pub enum Dialog {
    /// Cancel or requeue these jobs. `uids`: the identity each had when the dialog opened,
    /// where its backend has one (Kubernetes), so confirming acts on those objects only.
    Jobs { action: JobAction, targets: Vec<JobRef>, uids: std::collections::HashMap<JobRef, String> },
    /// Drain these nodes; the reason is typed in the dialog and may not be empty.
    Drain { targets: Vec<NodeRef>, reason: TextInput, error: Option<String> },
    /// Submit this job to this cluster.
    Submit { cluster: String, spec: Box<JobSpec> },
    /// A destructive node action that needs no typed input (tear down a cloud cluster).
    Nodes { action: NodeAction, targets: Vec<NodeRef> },
    /// Move these jobs to cluster `to`: the plan (asked of the fleet, see `App::plan`) is shown
    /// before anything happens, and confirming sends exactly the moves it holds.
    Migrate {
        sources: Vec<JobRef>,
        to: String,
        running: bool,
        /// The GPU model asked for on the target instead of the source's (`g` cycles it).
        gpu_type: Option<GpuChoice>,
        plan: Option<MigrationPlan>,
    },
}

/// Lines of the first move's native form shown in the plan.
const NATIVE_LINES: usize = 12;

impl Dialog {
    pub fn title(&self) -> String {
        match self {
            Dialog::Jobs { action, targets, .. } => {
                let mut v = action.verb().to_string();
                if let Some(first) = v.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                match targets.len() {
                    1 => format!("{v} 1 job?"),
                    n => format!("{v} {n} jobs?"),
                }
            }
            Dialog::Drain { targets, .. } => match targets.len() {
                1 => "Drain 1 node?".to_string(),
                n => format!("Drain {n} nodes?"),
            },
            Dialog::Submit { cluster, .. } => format!("Submit to {cluster}?"),
            Dialog::Migrate { sources, to, gpu_type, .. } => {
                let jobs = match sources.len() {
                    1 => "1 job".to_string(),
                    n => format!("{n} jobs"),
                };
                match gpu_type {
                    None => format!("Migrate {jobs} to {to}?"),
                    Some(GpuChoice::Any) => format!("Migrate {jobs} to {to}, any GPU model?"),
                    Some(GpuChoice::Model(m)) => format!("Migrate {jobs} to {to} as {m}?"),
                }
            }
            Dialog::Nodes { action, targets } => {
                let mut v = action.verb().to_string();
                if let Some(first) = v.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                match targets.len() {
                    1 => format!("{v} 1 cloud cluster?"),
                    n => format!("{v} {n} cloud clusters?"),
                }
            }
        }
    }

    /// What confirming will destroy, said before it is confirmed.
    pub fn warning(&self) -> Option<&'static str> {
        match self {
            Dialog::Nodes { action: NodeAction::Teardown, .. } => {
                Some("deletes each cloud cluster named here, with every machine and disk in it")
            }
            Dialog::Jobs { action: JobAction::Delete, .. } => Some("removes each run's record for good"),
            Dialog::Migrate { running: true, .. } => {
                Some("submits each job there, then cancels it here; running jobs are killed and start from scratch")
            }
            Dialog::Migrate { .. } => {
                Some("submits each job there first, and cancels it here once the target lists it")
            }
            _ => None,
        }
    }

    /// What the dialog acts on, one line each, exactly as captured.
    pub fn targets(&self) -> Vec<String> {
        match self {
            Dialog::Jobs { targets, .. } => targets.iter().map(ToString::to_string).collect(),
            Dialog::Drain { targets, .. } => targets.iter().map(ToString::to_string).collect(),
            Dialog::Submit { cluster, spec } => vec![format!("{} on {cluster}", spec.name)],
            Dialog::Nodes { targets, .. } => targets.iter().map(ToString::to_string).collect(),
            Dialog::Migrate { plan: None, sources, to, .. } => {
                let mut lines = vec![format!("planning the move to {to}…")];
                lines.extend(sources.iter().map(ToString::to_string));
                lines
            }
            Dialog::Migrate { plan: Some(plan), .. } => plan_lines(plan),
        }
    }

    pub fn reason(&self) -> Option<&TextInput> {
        match self {
            Dialog::Drain { reason, .. } => Some(reason),
            _ => None,
        }
    }

    pub fn error(&self) -> Option<&str> {
        match self {
            Dialog::Drain { error, .. } => error.as_deref(),
            _ => None,
        }
    }

    /// The actions confirming sends, or why the dialog cannot be confirmed yet.
    pub fn actions(&self) -> Result<Vec<Action>, String> {
        match self {
            Dialog::Jobs { action, targets, uids } => Ok(targets
                .iter()
                .map(|job| Action::Job { job: job.clone(), action: *action, uid: uids.get(job).cloned() })
                .collect()),
            Dialog::Drain { targets, reason, .. } => {
                let reason = reason.text().trim();
                if reason.is_empty() {
                    return Err("a drain needs a reason: type one, then confirm".to_string());
                }
                crate::safe_text::check_typed("drain reason", reason)?;
                Ok(targets
                    .iter()
                    .map(|node| Action::Node {
                        node: node.clone(),
                        action: NodeAction::Drain { reason: reason.to_string(), force: false },
                    })
                    .collect())
            }
            Dialog::Submit { cluster, spec } => {
                Ok(vec![Action::Submit { cluster: cluster.clone(), spec: spec.clone() }])
            }
            Dialog::Nodes { action, targets } => {
                Ok(targets.iter().map(|node| Action::Node { node: node.clone(), action: action.clone() }).collect())
            }
            Dialog::Migrate { plan: None, .. } => Err("the plan is not ready yet".to_string()),
            Dialog::Migrate { plan: Some(plan), .. } => {
                let actions = plan.actions();
                if actions.is_empty() {
                    return Err(format!("nothing can be moved: all {} refused", plan.moves.len()));
                }
                Ok(actions)
            }
        }
    }

    pub fn is_migration(&self) -> bool {
        matches!(self, Dialog::Migrate { .. })
    }
}

/// The plan, as the dialog lists it: per job its move or why not, every warning, and the
/// first movable job's native form on the target.
fn plan_lines(plan: &MigrationPlan) -> Vec<String> {
    let movable = plan.moves.len() - plan.refused();
    let mut lines = vec![format!("{movable} of {} can move", plan.moves.len())];
    for m in &plan.moves {
        match &m.refused {
            Some(why) => lines.push(format!("✗ {}: {why}", m.source)),
            None => lines.push(format!("{} ({}) → {}", m.source, m.source_state, m.to)),
        }
        if let Some(a) = m.advice.as_ref().filter(|_| m.refused.is_none()) {
            lines.push(format!("    placement: {} ({})", a.verdict, a.reason));
        }
        lines.extend(m.warnings.iter().map(|w| format!("    warning: {w}")));
    }
    if let Some((m, native)) =
        plan.moves.iter().find_map(|m| Some((m, m.native.as_ref().filter(|_| m.refused.is_none())?)))
    {
        lines.push(format!("{} of {}:", native.dialect.title(), m.source));
        let text: Vec<&str> = native.text.lines().collect();
        lines.extend(text.iter().take(NATIVE_LINES).map(|l| format!("    {l}")));
        if text.len() > NATIVE_LINES {
            lines.push(format!("    … {} more lines", text.len() - NATIVE_LINES));
        }
    }
    lines
}
