//! The custom resources the adapter reads as workloads (the objects that own GPU pods) and
//! beside them (Volcano's PodGroups and Queues): group, versions, plural, and the word a
//! job id uses for each.
//!
//! Versions are newest first, the order the watch tries them in (a 404 moves to the next).

use kube::core::ApiResource;

/// A kind that stands for a job in the cockpit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    PyTorchJob,
    MpiJob,
    TfJob,
    XgBoostJob,
    PaddleJob,
    JaxJob,
    TrainJob,
    RayJob,
    RayCluster,
    RayService,
    JobSet,
    LeaderWorkerSet,
    VolcanoJob,
}

/// A kind read beside the workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuxKind {
    /// `scheduling.volcano.sh` PodGroup: the gang and why it waits.
    PodGroup,
    /// `scheduling.volcano.sh` Queue (cluster-scoped): capability, deserved, allocated.
    VolcanoQueue,
}

/// Everything the adapter needs to watch one kind.
#[derive(Debug, Clone, Copy)]
pub struct KindDef {
    pub kind: &'static str,
    pub group: &'static str,
    pub versions: &'static [&'static str],
    pub plural: &'static str,
    pub namespaced: bool,
    /// The project that brings the CRD, for the note when it is absent.
    pub project: &'static str,
}

impl KindDef {
    pub fn resource(&self, version: &str) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: version.into(),
            api_version: format!("{}/{version}", self.group),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }

    /// `kind (group/version)` for notes.
    pub fn served_as(&self) -> String {
        format!("{}.{}/{}", self.plural, self.group, self.versions[0])
    }
}

pub const VOLCANO_BATCH: &str = "batch.volcano.sh";
pub const VOLCANO_SCHEDULING: &str = "scheduling.volcano.sh";
pub const VOLCANO_BUS: &str = "bus.volcano.sh";
pub const KUBEFLOW: &str = "kubeflow.org";
pub const TRAINER: &str = "trainer.kubeflow.org";
pub const RAY: &str = "ray.io";
pub const JOBSET: &str = "jobset.x-k8s.io";
pub const LWS: &str = "leaderworkerset.x-k8s.io";

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 13] = [
        WorkloadKind::PyTorchJob,
        WorkloadKind::MpiJob,
        WorkloadKind::TfJob,
        WorkloadKind::XgBoostJob,
        WorkloadKind::PaddleJob,
        WorkloadKind::JaxJob,
        WorkloadKind::TrainJob,
        WorkloadKind::RayJob,
        WorkloadKind::RayCluster,
        WorkloadKind::RayService,
        WorkloadKind::JobSet,
        WorkloadKind::LeaderWorkerSet,
        WorkloadKind::VolcanoJob,
    ];

    pub fn def(self) -> KindDef {
        let d = |kind, group, versions, plural, project| KindDef {
            kind,
            group,
            versions,
            plural,
            namespaced: true,
            project,
        };
        match self {
            WorkloadKind::PyTorchJob => {
                d("PyTorchJob", KUBEFLOW, &["v1"], "pytorchjobs", "the Kubeflow Training Operator")
            }
            // mpi-operator serves v2beta1; the Training Operator v1 kept a v1 MPIJob.
            WorkloadKind::MpiJob => d("MPIJob", KUBEFLOW, &["v2beta1", "v1"], "mpijobs", "the MPI Operator"),
            WorkloadKind::TfJob => d("TFJob", KUBEFLOW, &["v1"], "tfjobs", "the Kubeflow Training Operator"),
            WorkloadKind::XgBoostJob => {
                d("XGBoostJob", KUBEFLOW, &["v1"], "xgboostjobs", "the Kubeflow Training Operator")
            }
            WorkloadKind::PaddleJob => {
                d("PaddleJob", KUBEFLOW, &["v1"], "paddlejobs", "the Kubeflow Training Operator")
            }
            WorkloadKind::JaxJob => d("JAXJob", KUBEFLOW, &["v1"], "jaxjobs", "the Kubeflow Training Operator"),
            WorkloadKind::TrainJob => d("TrainJob", TRAINER, &["v1alpha1"], "trainjobs", "Kubeflow Trainer"),
            WorkloadKind::RayJob => d("RayJob", RAY, &["v1"], "rayjobs", "KubeRay"),
            WorkloadKind::RayCluster => d("RayCluster", RAY, &["v1"], "rayclusters", "KubeRay"),
            WorkloadKind::RayService => d("RayService", RAY, &["v1"], "rayservices", "KubeRay"),
            WorkloadKind::JobSet => d("JobSet", JOBSET, &["v1alpha2"], "jobsets", "JobSet"),
            WorkloadKind::LeaderWorkerSet => d("LeaderWorkerSet", LWS, &["v1"], "leaderworkersets", "LeaderWorkerSet"),
            WorkloadKind::VolcanoJob => d("Job", VOLCANO_BATCH, &["v1alpha1"], "jobs", "Volcano"),
        }
    }

    /// The word between namespace and name in a job id: `ml:pytorchjob:train-64`. A
    /// Volcano Job is `vcjob` (Volcano's own short name), apart from batch Jobs (`ml:NAME`).
    pub fn word(self) -> &'static str {
        match self {
            WorkloadKind::PyTorchJob => "pytorchjob",
            WorkloadKind::MpiJob => "mpijob",
            WorkloadKind::TfJob => "tfjob",
            WorkloadKind::XgBoostJob => "xgboostjob",
            WorkloadKind::PaddleJob => "paddlejob",
            WorkloadKind::JaxJob => "jaxjob",
            WorkloadKind::TrainJob => "trainjob",
            WorkloadKind::RayJob => "rayjob",
            WorkloadKind::RayCluster => "raycluster",
            WorkloadKind::RayService => "rayservice",
            WorkloadKind::JobSet => "jobset",
            WorkloadKind::LeaderWorkerSet => "leaderworkerset",
            WorkloadKind::VolcanoJob => "vcjob",
        }
    }

    pub fn from_word(word: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.word() == word)
    }

    /// The kind an owner reference names (`apiVersion` and `kind`), if it is one of these.
    pub fn of_reference(api_version: &str, kind: &str) -> Option<WorkloadKind> {
        let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
        WorkloadKind::ALL.into_iter().find(|k| {
            let d = k.def();
            d.kind == kind && d.group == group
        })
    }

    /// How this kind is held and released here, in words; `None` when it cannot be.
    pub fn suspend_via(self) -> Option<&'static str> {
        match self {
            WorkloadKind::PyTorchJob
            | WorkloadKind::MpiJob
            | WorkloadKind::TfJob
            | WorkloadKind::XgBoostJob
            | WorkloadKind::PaddleJob
            | WorkloadKind::JaxJob => Some("spec.runPolicy.suspend"),
            WorkloadKind::TrainJob | WorkloadKind::RayJob | WorkloadKind::RayCluster | WorkloadKind::JobSet => {
                Some("spec.suspend")
            }
            WorkloadKind::VolcanoJob => Some("a Volcano Command (AbortJob, ResumeJob)"),
            // A RayService serves: it is scaled, not held.
            WorkloadKind::LeaderWorkerSet | WorkloadKind::RayService => None,
        }
    }
}

impl AuxKind {
    pub const ALL: [AuxKind; 2] = [AuxKind::PodGroup, AuxKind::VolcanoQueue];

    pub fn def(self) -> KindDef {
        match self {
            AuxKind::PodGroup => KindDef {
                kind: "PodGroup",
                group: VOLCANO_SCHEDULING,
                versions: &["v1beta1"],
                plural: "podgroups",
                namespaced: true,
                project: "Volcano",
            },
            AuxKind::VolcanoQueue => KindDef {
                kind: "Queue",
                group: VOLCANO_SCHEDULING,
                versions: &["v1beta1"],
                plural: "queues",
                namespaced: false,
                project: "Volcano",
            },
        }
    }
}

/// The Volcano Command that suspends or resumes a Volcano Job.
pub fn volcano_command() -> ApiResource {
    ApiResource {
        group: VOLCANO_BUS.into(),
        version: "v1alpha1".into(),
        api_version: format!("{VOLCANO_BUS}/v1alpha1"),
        kind: "Command".into(),
        plural: "commands".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_unique_and_read_back() {
        let mut words: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.word()).collect();
        words.sort();
        words.dedup();
        assert_eq!(words.len(), WorkloadKind::ALL.len());
        for k in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::from_word(k.word()), Some(k));
            assert_ne!(k.word(), "pod", "`pod` names a bare pod");
        }
    }

    #[test]
    fn an_owner_reference_is_matched_by_group_and_kind() {
        assert_eq!(WorkloadKind::of_reference("batch.volcano.sh/v1alpha1", "Job"), Some(WorkloadKind::VolcanoJob));
        assert_eq!(WorkloadKind::of_reference("batch/v1", "Job"), None);
        assert_eq!(WorkloadKind::of_reference("kubeflow.org/v1", "PyTorchJob"), Some(WorkloadKind::PyTorchJob));
        assert_eq!(WorkloadKind::of_reference("kubeflow.org/v2beta1", "MPIJob"), Some(WorkloadKind::MpiJob));
        assert_eq!(WorkloadKind::of_reference("apps/v1", "StatefulSet"), None);
    }
}
