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
//!
//! AI workloads as jobs (`mod.rs` says which file does what): `kinds` (PyTorchJob,
//! MPIJob, TFJob, XGBoostJob, PaddleJob, JAXJob, TrainJob, RayJob, RayCluster, RayService, JobSet,
//! LeaderWorkerSet, Volcano Job; PodGroup and Queue beside them: group, versions, plural, id word
//! `ns:pytorchjob:name`, how each suspends), `status` (each family's state, replica groups and
//! reasons; a workload read back as a spec: the five forms through `dialect::import_value`, as
//! their files are, the others from their main group's pod), `owners` (every pod under its top
//! owner through controller references, resolved over an index of the watch caches; unknown owners
//! group by kind and name, a ReplicaSet as its Deployment, LeaderWorkerSet pods by the set's
//! label), `volcano` (PodGroup gang reasons, Queue capability/deserved/allocated), `job` (a
//! workload → one `model::Job` with `model::Workload`: groups, pods, what suspend means;
//! `workload_jobs` maps every top-level object through the cache), `cache` (mapped workload jobs
//! kept between snapshots while their fingerprint holds: the object's and pods' uids and
//! resourceVersions, unplaced pods' scheduler messages, their Kueue Workload and PodGroup, node
//! labels and LocalQueues), `actions` (cancel = delete the object with background propagation;
//! hold/release = `spec.suspend`, `spec.runPolicy.suspend` or a Volcano Command; a Kueue-queued one
//! (Job or workload) through its Kueue Workload's `spec.active`), `dialect` (JobSet, PyTorchJob,
//! MPIJob, RayJob and Volcano Job manifests as job forms: detected by group and kind, imported as N
//! nodes of the pod their gang runs (the launcher's command for an MPIJob, the entrypoint for a
//! RayJob), every field and differing group without a portable form warned by path; exported
//! through `submit`'s builders, a RayJob by its own), `submit` (`nodes > 1` → JobSet, PyTorchJob,
//! MPIJob or Volcano Job by `multi_node`, with torch's rendezvous env (`MASTER_ADDR`,
//! `MASTER_PORT`, `WORLD_SIZE`, `NODE_RANK`, torchrun's `PET_*`); a kind whose API the cluster does
//! not serve refused by name before the preview).

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
