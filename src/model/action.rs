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
    /// Move a job to another cluster: submit there, then cancel here (see `fleet::migrate`).
    Migrate,
}

impl Verb {
    pub const ALL: [Verb; 12] = [
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
        Verb::Migrate,
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
            Verb::Migrate => "migrate",
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
            Verb::Migrate => "migrated",
        }
    }

    /// Loses work or takes capacity away. The one place that decides what confirms first:
    /// the cockpit asks before these, and only these.
    pub fn is_destructive(self) -> bool {
        matches!(self, Verb::Cancel | Verb::Requeue | Verb::Drain | Verb::Delete | Verb::Teardown | Verb::Migrate)
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
    Submit {
        cluster: String,
        spec: Box<JobSpec>,
    },
    Job {
        job: JobRef,
        action: JobAction,
        /// The job's [`crate::model::Job::uid`] when the user chose it (the cockpit): the
        /// backend acts on that object only, never on a newer one of the same name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<String>,
    },
    Node {
        node: NodeRef,
        action: NodeAction,
    },
    /// Move `source` to cluster `to` as `spec` (the translated spec the user saw in the
    /// plan): submit there, confirm it arrived, only then cancel the source. `resume` names
    /// the audit id of an unfinished migration that this one finishes (`migrate --resume`).
    Migrate {
        source: JobRef,
        to: String,
        spec: Box<JobSpec>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<String>,
    },
}

impl Action {
    pub fn cluster(&self) -> &str {
        match self {
            Action::Submit { cluster, .. } => cluster,
            Action::Job { job, .. } => &job.cluster,
            Action::Node { node, .. } => &node.cluster,
            Action::Migrate { to, .. } => to,
        }
    }

    pub fn verb(&self) -> Verb {
        match self {
            Action::Submit { .. } => Verb::Submit,
            Action::Job { action, .. } => action.verb(),
            Action::Node { action, .. } => action.verb(),
            Action::Migrate { .. } => Verb::Migrate,
        }
    }

    pub fn target(&self) -> String {
        match self {
            Action::Submit { cluster, .. } => cluster.clone(),
            Action::Job { job, .. } => job.to_string(),
            Action::Node { node, .. } => node.to_string(),
            Action::Migrate { source, .. } => source.to_string(),
        }
    }

    /// Input worth keeping in the audit log beside the target.
    pub fn detail(&self) -> Option<String> {
        match self {
            Action::Submit { spec, .. } => Some(format!("name={}", spec.name)),
            Action::Node { action: NodeAction::Drain { reason, .. }, .. } => Some(format!("reason={reason}")),
            Action::Migrate { to, resume: None, .. } => Some(format!("to={to}")),
            Action::Migrate { to, resume: Some(id), .. } => Some(format!("to={to} resume={id}")),
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

/// What became of a confirmed batch (one dialog's worth of actions, or one CLI command's):
/// every action's outcome, in the order they were asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchOutcome {
    pub outcomes: Vec<ActionOutcome>,
}

/// Failures named one by one in a batch summary; the rest are counted.
const SUMMARY_NAMED_FAILURES: usize = 5;

impl BatchOutcome {
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.is_ok()).count()
    }

    /// One line for the whole batch, the way the cockpit shows it: a single action in its
    /// own words (`cancel fd22/41: done`, `cancel fd22/41 failed: Invalid job id`); many as
    /// `cancelled 998 of 1000; 2 failed: fd22/41 (Invalid job id), fd22/42 (…)`.
    pub fn summary(&self) -> String {
        match self.outcomes.as_slice() {
            [] => "nothing was asked".to_string(),
            [one] => match &one.result {
                Ok(m) if m.is_empty() => format!("{} {}: done", one.verb, one.target),
                Ok(m) => format!("{} {}: {m}", one.verb, one.target),
                Err(e) => format!("{} {} failed: {e}", one.verb, one.target),
            },
            many => {
                let n = many.len();
                let failed = self.failed();
                let first = many[0].verb;
                let head = if many.iter().all(|o| o.verb == first) {
                    format!("{} {} of {n}", first.past_tense(), n - failed)
                } else {
                    format!("{} of {n} done", n - failed)
                };
                if failed == 0 {
                    return head;
                }
                let mut named: Vec<String> = many
                    .iter()
                    .filter_map(|o| o.result.as_ref().err().map(|e| format!("{} ({e})", o.target)))
                    .take(SUMMARY_NAMED_FAILURES)
                    .collect();
                if failed > named.len() {
                    named.push(format!("… {} more", failed - named.len()));
                }
                format!("{head}; {failed} failed: {}", named.join(", "))
            }
        }
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
            // What a migration asks of its target; the source's cancel is checked apart.
            Verb::Migrate => self.submit,
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
        assert_eq!(confirming, [Verb::Cancel, Verb::Requeue, Verb::Drain, Verb::Delete, Verb::Teardown, Verb::Migrate]);
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
    fn batch_summaries_count_and_name_failures() {
        let ok =
            |id: u32| ActionOutcome { verb: Verb::Cancel, target: format!("fd22/{id}"), result: Ok(String::new()) };
        let bad = |id: u32| ActionOutcome {
            verb: Verb::Cancel,
            target: format!("fd22/{id}"),
            result: Err("Invalid job id specified".into()),
        };
        let mut outcomes: Vec<ActionOutcome> = (1..=1000).map(ok).collect();
        outcomes[40] = bad(41);
        outcomes[41] = bad(42);
        let batch = BatchOutcome { outcomes };
        assert_eq!(batch.failed(), 2);
        assert_eq!(
            batch.summary(),
            "cancelled 998 of 1000; 2 failed: fd22/41 (Invalid job id specified), fd22/42 (Invalid job id specified)"
        );
        let many_bad = BatchOutcome { outcomes: (1..=9).map(bad).collect() };
        assert!(many_bad.summary().starts_with("cancelled 0 of 9; 9 failed: fd22/1 ("), "{}", many_bad.summary());
        assert!(many_bad.summary().ends_with(", … 4 more"), "{}", many_bad.summary());
        assert_eq!(BatchOutcome { outcomes: vec![ok(7)] }.summary(), "cancel fd22/7: done");
        assert_eq!(BatchOutcome { outcomes: vec![ok(7), ok(8)] }.summary(), "cancelled 2 of 2");
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
