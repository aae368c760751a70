//! A Kubernetes AI workload (a PyTorchJob, a JobSet, a RayCluster, a Volcano Job, or any
//! object that owns GPU pods) shown as one job: its kind, its replica groups and its pods.
//! Not Kueue's `Workload` object, which only says whether such a thing is admitted.

use serde::{Deserialize, Serialize};

use super::{JobState, LogHandle};

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
