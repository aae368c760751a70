//! The words front ends and the fleet exchange about changes: what a user asks for
//! ([`Action`]), its verb, what became of it ([`ActionOutcome`]) and what a cluster can do
//! at all ([`Capabilities`]). Serialisable both ways, so the same words cross a wire (the
//! hub) and come back out of the audit log.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{JobRef, NodeRef};
use crate::spec::JobSpec;

/// Every change flightdeck can ask of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Submit,
    Cancel,
    Hold,
    Release,
    Requeue,
    Drain,
    Resume,
    Cordon,
    Uncordon,
    /// Remove a stopped or finished run's record (dstack).
    Delete,
    /// Delete a whole cloud cluster and its machines (SkyPilot `down`).
    Teardown,
}

impl Verb {
    pub const ALL: [Verb; 11] = [
        Verb::Submit,
        Verb::Cancel,
        Verb::Hold,
        Verb::Release,
        Verb::Requeue,
        Verb::Drain,
        Verb::Resume,
        Verb::Cordon,
        Verb::Uncordon,
        Verb::Delete,
        Verb::Teardown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Submit => "submit",
            Verb::Cancel => "cancel",
            Verb::Hold => "hold",
            Verb::Release => "release",
            Verb::Requeue => "requeue",
            Verb::Drain => "drain",
            Verb::Resume => "resume",
            Verb::Cordon => "cordon",
            Verb::Uncordon => "uncordon",
            Verb::Delete => "delete",
            Verb::Teardown => "tear down",
        }
    }

    /// How a result line starts: `cancelled hpc/12`, `draining hpc/gpu-01`.
    pub fn past_tense(self) -> &'static str {
        match self {
            Verb::Submit => "submitted",
            Verb::Cancel => "cancelled",
            Verb::Hold => "held",
            Verb::Release => "released",
            Verb::Requeue => "requeued",
            // A drain is a process: running work goes on until it ends (or is evicted).
            Verb::Drain => "draining",
            Verb::Resume => "resumed",
            Verb::Cordon => "cordoned",
            Verb::Uncordon => "uncordoned",
            Verb::Delete => "deleted",
            Verb::Teardown => "tearing down",
        }
    }

    /// Loses work or takes capacity away. The one place that decides what confirms first:
    /// the cockpit asks before these, and only these.
    pub fn is_destructive(self) -> bool {
        matches!(self, Verb::Cancel | Verb::Requeue | Verb::Drain | Verb::Delete | Verb::Teardown)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action on one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobAction {
    Cancel,
    Hold,
    Release,
    Requeue,
    /// Remove a stopped run's record (dstack's delete; a run must be stopped first).
    Delete,
}

impl JobAction {
    pub fn verb(self) -> Verb {
        match self {
            JobAction::Cancel => Verb::Cancel,
            JobAction::Hold => Verb::Hold,
            JobAction::Release => Verb::Release,
            JobAction::Requeue => Verb::Requeue,
            JobAction::Delete => Verb::Delete,
        }
    }

    /// See [`Verb::is_destructive`].
    pub fn is_destructive(self) -> bool {
        self.verb().is_destructive()
    }
}

/// An action on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum NodeAction {
    /// Stop scheduling new work (Slurm: running jobs finish; Kubernetes: pods are evicted
    /// as `kubectl drain` does). A reason is required. `force` also evicts pods nothing will
    /// re-create and pods with `emptyDir` data (Kubernetes; Slurm ignores it).
    Drain {
        reason: String,
        #[serde(default)]
        force: bool,
    },
    /// Return a drained or down node to service.
    Resume,
    /// Mark the node unschedulable without touching what runs there (Kubernetes).
    Cordon,
    /// Make a cordoned node schedulable again (Kubernetes).
    Uncordon,
    /// Delete the cloud cluster this node belongs to, with every machine in it (SkyPilot
    /// `down`): what runs there is lost and the disks are gone.
    Teardown,
}

impl NodeAction {
    pub fn verb(&self) -> Verb {
        match self {
            NodeAction::Drain { .. } => Verb::Drain,
            NodeAction::Resume => Verb::Resume,
            NodeAction::Cordon => Verb::Cordon,
            NodeAction::Uncordon => Verb::Uncordon,
            NodeAction::Teardown => Verb::Teardown,
        }
    }
}

/// Something a user asks the fleet to change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

    pub fn verb(&self) -> Verb {
        match self {
            Action::Submit { .. } => Verb::Submit,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionOutcome {
    pub verb: Verb,
    pub target: String,
    /// `Ok` carries a message (the new job ref for a submission, a drain's report); `Err`
    /// the backend's words.
    pub result: Result<String, String>,
}

impl ActionOutcome {
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }
}

/// What a cluster's backend can do beyond reading state. Carried on every cluster's state,
/// so front ends offer only what the cluster can honour and say why when asked for more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    pub submit: bool,
    pub cancel: bool,
    pub hold_release: bool,
    pub requeue: bool,
    pub drain_resume: bool,
    pub cordon_uncordon: bool,
    /// Delete stopped runs (dstack).
    #[serde(default)]
    pub delete: bool,
    /// Tear down whole cloud clusters (SkyPilot).
    #[serde(default)]
    pub teardown: bool,
}

impl Capabilities {
    /// Everything: for backends (and tests) that can do it all.
    pub const ALL: Capabilities = Capabilities {
        submit: true,
        cancel: true,
        hold_release: true,
        requeue: true,
        drain_resume: true,
        cordon_uncordon: true,
        delete: true,
        teardown: true,
    };

    pub fn allows(&self, verb: Verb) -> bool {
        match verb {
            Verb::Submit => self.submit,
            Verb::Cancel => self.cancel,
            Verb::Hold | Verb::Release => self.hold_release,
            Verb::Requeue => self.requeue,
            Verb::Drain | Verb::Resume => self.drain_resume,
            Verb::Cordon | Verb::Uncordon => self.cordon_uncordon,
            Verb::Delete => self.delete,
            Verb::Teardown => self.teardown,
        }
    }

    /// The verbs this cluster can carry out, in [`Verb::ALL`] order.
    pub fn verbs(&self) -> impl Iterator<Item = Verb> + '_ {
        Verb::ALL.into_iter().filter(|v| self.allows(*v))
    }
}

/// Why `cluster` (of `kind`) refuses `verb`, in the words every front end uses:
/// `cluster k8s-prod (kubernetes) cannot requeue`.
pub fn cannot(cluster: &str, kind: &str, verb: Verb) -> String {
    format!("cluster {cluster} ({kind}) cannot {verb}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_verbs_that_lose_work_confirm() {
        let confirming: Vec<Verb> = Verb::ALL.into_iter().filter(|v| v.is_destructive()).collect();
        assert_eq!(confirming, [Verb::Cancel, Verb::Requeue, Verb::Drain, Verb::Delete, Verb::Teardown]);
        assert!(JobAction::Cancel.is_destructive());
        assert!(!JobAction::Hold.is_destructive());
    }

    #[test]
    fn capabilities_map_every_verb() {
        let kube_like = Capabilities { requeue: false, ..Capabilities::ALL };
        assert!(!kube_like.allows(Verb::Requeue));
        assert!(kube_like.allows(Verb::Cordon) && kube_like.allows(Verb::Hold));
        assert_eq!(kube_like.verbs().count(), Verb::ALL.len() - 1);
        assert!(Verb::ALL.into_iter().all(|v| !Capabilities::default().allows(v)));
        assert_eq!(cannot("k8s-prod", "kubernetes", Verb::Requeue), "cluster k8s-prod (kubernetes) cannot requeue");
    }

    #[test]
    fn verbs_read_as_words() {
        assert_eq!(Verb::Cancel.past_tense(), "cancelled");
        assert_eq!(Verb::Drain.past_tense(), "draining");
        assert_eq!(Verb::Uncordon.to_string(), "uncordon");
        let json = serde_json::to_string(&Verb::Requeue).unwrap();
        assert_eq!(json, "\"requeue\"");
    }
}
