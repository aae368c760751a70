//! Actions users ask for, carried out against the right backend, audited, and answered.

use serde::Serialize;

use crate::backend::{JobAction, NodeAction};
use crate::model::{JobRef, NodeRef};
use crate::spec::JobSpec;

/// Something a user asks the fleet to change.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Submit { cluster: String, spec: Box<JobSpec> },
    Job { job: JobRef, action: JobAction },
    Node { node: NodeRef, action: NodeAction },
}

impl Action {
    pub fn cluster(&self) -> &str {
        match self {
            Action::Submit { cluster, .. } => cluster,
            Action::Job { job, .. } => &job.cluster,
            Action::Node { node, .. } => &node.cluster,
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Action::Submit { .. } => "submit",
            Action::Job { action, .. } => action.verb(),
            Action::Node { action, .. } => action.verb(),
        }
    }

    pub fn target(&self) -> String {
        match self {
            Action::Submit { cluster, .. } => cluster.clone(),
            Action::Job { job, .. } => job.to_string(),
            Action::Node { node, .. } => node.to_string(),
        }
    }

    /// Input worth keeping in the audit log beside the target.
    pub fn detail(&self) -> Option<String> {
        match self {
            Action::Submit { spec, .. } => Some(format!("name={}", spec.name)),
            Action::Node { action: NodeAction::Drain { reason, .. }, .. } => Some(format!("reason={reason}")),
            _ => None,
        }
    }
}

/// What became of one action.
#[derive(Debug, Clone, Serialize)]
pub struct ActionOutcome {
    pub verb: &'static str,
    pub target: String,
    /// `Ok` carries a message (the new job ref for a submission); `Err` the backend's words.
    pub result: Result<String, String>,
}

impl ActionOutcome {
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }
}
