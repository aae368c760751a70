//! A Kubernetes AI workload (a PyTorchJob, a JobSet, a RayCluster, a Volcano Job, or any
//! object that owns GPU pods) shown as one job: its kind, its replica groups and its pods.
//! Not Kueue's `Workload` object, which only says whether such a thing is admitted.

use serde::{Deserialize, Serialize};

use super::words::counted;
use super::{Job, JobState, LogHandle, Node};

/// What a job that stands for a workload object carries beyond the job's own fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The object's kind as the API names it (`PyTorchJob`, `JobSet`, `StatefulSet`).
    pub kind: String,
    /// `group/version` of that kind (`kubeflow.org/v1`); empty for a kind known only from an
    /// owner reference (then it is as the reference says).
    pub api_version: String,
    /// Pods (or, for LeaderWorkerSet, groups) ready, and how many the object asks for.
    pub replicas_ready: u32,
    pub replicas_total: u32,
    /// The object's replica groups in its own words (`Master`, `Worker`; a Ray worker group).
    pub groups: Vec<ReplicaGroup>,
    /// Its pods, in creation order.
    pub pods: Vec<WorkloadPod>,
    /// How it is held and released here (`spec.suspend`, Volcano's Command `AbortJob`);
    /// `None` when it cannot be.
    pub suspend: Option<String>,
    /// Cancelling deletes the object (with background propagation); `false` for kinds
    /// flightdeck does not manage (a StatefulSet, an unknown owner).
    pub cancel: bool,
}

impl Workload {
    /// The kind as a column shows it: Volcano's `Job` is `VolcanoJob`, so that it does not
    /// read as a batch Job beside one.
    pub fn kind_label(&self) -> &str {
        if self.kind == "Job" && self.api_version.starts_with("batch.volcano.sh/") { "VolcanoJob" } else { &self.kind }
    }
}

/// One replica group of a workload: its name, size and what each replica asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaGroup {
    pub name: String,
    /// Pods in the group (replicas × pods per replica).
    pub replicas: u32,
    /// Ready (or active) ones, when the object's status counts them.
    pub ready: Option<u32>,
    pub gpus_per_replica: u32,
}

/// One pod of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadPod {
    pub name: String,
    /// Its replica group (`Worker`, the JobSet's replicated job), from the pod's labels.
    pub role: Option<String>,
    pub state: JobState,
    pub native_state: String,
    pub node: Option<String>,
    pub gpus: u32,
    pub reason: Option<String>,
    pub log: Option<LogHandle>,
}

/// A gang that waits (a Volcano Job's pod group: its pods start together or not at all): how
/// many pods it needs, what each asks for, and how many of them the nodes in service could
/// place now. The Kubernetes adapter puts [`GangWait::short`] in the job's reason (the jobs
/// screen's REASON column), `why` gives [`GangWait::line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangWait {
    /// Pods the gang needs (Volcano's `minAvailable`, else every replica).
    pub size: u32,
    /// GPUs each unplaced pod asks for, and of which model.
    pub per_pod: u32,
    pub model: Option<String>,
    /// Nodes in service with room for one pod now, and pods the free GPUs could hold.
    pub takers: u32,
    pub room: u32,
    /// Pods still to place.
    pub needed: u32,
}

impl GangWait {
    /// The gang behind a job whose reason carries Volcano's words (`…, 4 minAvailable`), read
    /// against `nodes`; `None` for any other job.
    pub fn of(nodes: &[Node], job: &Job, reason: &str) -> Option<GangWait> {
        let w = job.workload.as_deref()?;
        let says = &reason[reason.find("Volcano")?..];
        if w.pods.is_empty() {
            return None;
        }
        let size = says
            .split([',', ';', ')'])
            .find_map(|part| part.trim().strip_suffix(" minAvailable")?.trim().parse::<u32>().ok())
            .unwrap_or(w.replicas_total)
            .max(1);
        let unplaced: Vec<&WorkloadPod> = w.pods.iter().filter(|p| p.node.is_none()).collect();
        let per_pod = unplaced
            .iter()
            .map(|p| p.gpus)
            .max()
            .or_else(|| w.groups.iter().map(|g| g.gpus_per_replica).max())
            .unwrap_or(0);
        let placed = w.pods.len() as u32 - unplaced.len() as u32;
        let model = job.gpu_model.as_deref();
        let free: Vec<u32> = nodes
            .iter()
            .filter(|n| !n.state.is_unavailable() && n.has_gpu_model(model))
            .map(|n| n.free_gpus_of(model))
            .collect();
        let (takers, room) = if per_pod == 0 {
            (0, 0)
        } else {
            (free.iter().filter(|f| **f >= per_pod).count() as u32, free.iter().map(|f| f / per_pod).sum())
        };
        Some(GangWait {
            size,
            per_pod,
            model: model.map(str::to_string),
            takers,
            room,
            needed: size.saturating_sub(placed),
        })
    }

    /// `gang of 4 pods of 8×h100 waits: 2 nodes can take one`.
    pub fn short(&self) -> String {
        let asks = match (self.per_pod, &self.model) {
            (0, _) => String::new(),
            (n, Some(m)) => format!(" of {n}×{m}"),
            (n, None) => format!(" of {}", counted(n, "GPU", "GPUs")),
        };
        let mut line = format!("gang of {}{asks} waits", counted(self.size, "pod", "pods"));
        if self.per_pod > 0 {
            line.push_str(&format!(": {} can take one", counted(self.takers, "node", "nodes")));
        }
        line
    }

    /// [`GangWait::short`], with the room the free GPUs leave for the pods still to place.
    pub fn line(&self) -> String {
        let mut line = self.short();
        if self.per_pod > 0 {
            line.push_str(&format!(
                ", room for {} of the {} it still needs; it starts only when all fit at once",
                self.room.min(self.needed),
                self.needed
            ));
        }
        line
    }
}
