//! Confirmation dialogs. A dialog captures its exact targets when it opens; refreshes while
//! it is open do not touch them, confirming sends exactly those, dismissing sends nothing.

use super::input::TextInput;
use crate::fleet::Action;
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
}

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
        }
    }
}
