//! A scheduler's answer to "when would this start?", in the vocabulary so the fleet, the
//! front ends and the hub's wire carry it without naming a backend.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// When a scheduler expects a job to start, as it says when asked (Slurm's `sbatch
/// --test-only`, `squeue --start`): an estimate from its backfill plan, not a promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartEstimate {
    pub at: DateTime<Utc>,
    /// The nodes it would start on, as the scheduler writes them (`gpu-[01-02]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processors: Option<u32>,
}
