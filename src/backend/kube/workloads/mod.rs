//! Kubernetes AI workloads as jobs: Volcano Jobs, Kubeflow's PyTorchJob, MPIJob, TFJob,
//! XGBoostJob, PaddleJob, JAXJob and TrainJob, KubeRay's RayJob, RayCluster and RayService,
//! JobSet and LeaderWorkerSet, read as dynamic
//! objects from their own watches, and every GPU pod grouped under its top owner.
//!
//! * [`kinds`]: the custom resources (group, versions, plural, id word, how each suspends);
//! * [`status`]: each family's state, replica groups and reasons from its status;
//! * [`owners`]: pods grouped under their top owner through owner references;
//! * [`volcano`]: PodGroups (the gang's pending reason) and Queues;
//! * [`job`]: a workload as one job of the model, with its pods;
//! * [`cache`]: mapped jobs kept between snapshots while nothing they are built from changed;
//! * [`actions`]: cancel, suspend and resume on the workload object, never pod by pod;
//! * [`submit`]: a multi-node spec as a JobSet, a PyTorchJob, an MPIJob or a Volcano Job;
//! * [`dialect`]: JobSet, PyTorchJob, MPIJob, RayJob and Volcano Job manifests as job forms.

pub mod actions;
pub mod cache;
pub mod dialect;
pub mod job;
pub mod kinds;
pub mod owners;
pub mod status;
pub mod submit;
pub mod volcano;

pub use kinds::{AuxKind, KindDef, WorkloadKind};

/// The one note for every workload kind whose CRD is not served (most clusters lack most of
/// these projects; one line says so, `doctor`'s watch list says which).
pub const ABSENT_NOTE: &str = "AI workload kinds whose CRDs this cluster does not serve (Volcano, Kubeflow, KubeRay, JobSet, LeaderWorkerSet: `doctor` lists which) are grouped from their pods' owner references, without their own status";
