//! A job in a backend's own words: what will really be sent when a portable spec is
//! submitted (an sbatch script, a Kubernetes Job manifest …), for previews and, later,
//! `spec convert`.

use serde::{Deserialize, Serialize};

/// The native forms a job can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// A batch script with `#SBATCH` directives, sent to `sbatch` on its standard input.
    Sbatch,
    /// A `batch/v1` Job manifest (YAML).
    KubernetesJob,
    /// A SkyPilot task (YAML), with where it is launched as a leading comment.
    SkyPilotTask,
    /// A dstack run spec (YAML of the JSON sent to `runs/apply`).
    DstackRunSpec,
    /// A `jobset.x-k8s.io` JobSet: replicated Indexed Jobs, one pod per node.
    JobSet,
    /// A Kubeflow `PyTorchJob`: a Master and Workers.
    PyTorchJob,
    /// A Kubeflow `MPIJob` (mpi-operator v2beta1): a launcher and Workers.
    MpiJob,
    /// A KubeRay `RayJob`: an entrypoint on a Ray cluster of a head and worker groups.
    RayJob,
    /// A Volcano `batch.volcano.sh` Job: tasks gang-scheduled together.
    VolcanoJob,
}

impl Dialect {
    pub const ALL: [Dialect; 9] = [
        Dialect::Sbatch,
        Dialect::KubernetesJob,
        Dialect::SkyPilotTask,
        Dialect::DstackRunSpec,
        Dialect::JobSet,
        Dialect::PyTorchJob,
        Dialect::MpiJob,
        Dialect::RayJob,
        Dialect::VolcanoJob,
    ];

    /// The word `--to` / `--from` name it by: a kind's own form by the kind (`slurm`,
    /// `kubernetes`), a Kubernetes workload form by its kind (`pytorchjob`), as the
    /// cluster's `multi_node` setting names them.
    pub fn kind_name(self) -> &'static str {
        match self {
            Dialect::Sbatch => "slurm",
            Dialect::KubernetesJob => "kubernetes",
            Dialect::SkyPilotTask => "skypilot",
            Dialect::DstackRunSpec => "dstack",
            Dialect::JobSet => "jobset",
            Dialect::PyTorchJob => "pytorchjob",
            Dialect::MpiJob => "mpijob",
            Dialect::RayJob => "rayjob",
            Dialect::VolcanoJob => "volcano",
        }
    }

    /// The form as a sentence names one: "an sbatch script", "a Kubernetes Job".
    pub fn described(self) -> &'static str {
        match self {
            Dialect::Sbatch => "an sbatch script",
            Dialect::KubernetesJob => "a Kubernetes Job",
            Dialect::SkyPilotTask => "a SkyPilot task",
            Dialect::DstackRunSpec => "a dstack task",
            Dialect::JobSet => "a JobSet",
            Dialect::PyTorchJob => "a PyTorchJob",
            Dialect::MpiJob => "an MPIJob",
            Dialect::RayJob => "a RayJob",
            Dialect::VolcanoJob => "a Volcano Job",
        }
    }

    /// How a preview is titled.
    pub fn title(self) -> &'static str {
        match self {
            Dialect::Sbatch => "sbatch script",
            Dialect::KubernetesJob => "Kubernetes Job manifest",
            Dialect::SkyPilotTask => "SkyPilot task",
            Dialect::DstackRunSpec => "dstack run spec",
            Dialect::JobSet => "JobSet manifest",
            Dialect::PyTorchJob => "PyTorchJob manifest",
            Dialect::MpiJob => "MPIJob manifest",
            Dialect::RayJob => "RayJob manifest",
            Dialect::VolcanoJob => "Volcano Job manifest",
        }
    }
}

/// A rendered job: its dialect, the text, and what of the spec it could not carry (by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Native {
    pub dialect: Dialect,
    pub text: String,
    /// Spec fields the target ignores or changes, one sentence each, naming the field.
    pub warnings: Vec<String>,
}

/// How a cluster uses the spec fields that mean different things (or nothing) on different
/// kinds: the submit form labels, requires and greys its fields from this, so a new kind
/// says it in its own module instead of the form knowing every kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecFields {
    pub image: FieldUse,
    pub account: FieldUse,
    pub partition: FieldUse,
}

/// How a cluster takes a job's shape, for the submit form's `nodes`, `tasks per node` and
/// `array` fields: offered (optional, with what it becomes there) or not (`Need::Ignored`,
/// its hint saying why; the form refuses a value in it). Apart from [`SpecFields`] so that a
/// kind that says nothing (the default: all three optional) needs no change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeFields {
    pub nodes: FieldUse,
    pub tasks_per_node: FieldUse,
    pub array: FieldUse,
}

impl Default for ShapeFields {
    fn default() -> Self {
        Self {
            nodes: FieldUse::new("nodes", Need::Optional, "machines, all at once"),
            tasks_per_node: FieldUse::new("tasks/node", Need::Optional, "tasks per node"),
            array: FieldUse::new("array", Need::Optional, "0-99%10: one job per index"),
        }
    }
}

/// One field's use on a cluster: what it is called there and whether it is needed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldUse {
    /// The cluster's own word for it (`partition`, `queue`, `namespace`).
    pub label: String,
    pub need: Need,
    /// What it does there, for the form's hint (`a Kueue LocalQueue`).
    pub hint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    Required,
    Optional,
    /// The cluster does nothing with it: shown greyed, left out of the submission's meaning.
    Ignored,
}

impl FieldUse {
    pub fn new(label: &str, need: Need, hint: &str) -> Self {
        Self { label: label.into(), need, hint: hint.into() }
    }
}

impl Default for SpecFields {
    /// Every field optional, under its portable name.
    fn default() -> Self {
        Self {
            image: FieldUse::new("image", Need::Optional, "container image"),
            account: FieldUse::new("account", Need::Optional, ""),
            partition: FieldUse::new("partition", Need::Optional, ""),
        }
    }
}
