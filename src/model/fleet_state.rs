//! The whole picture the fleet publishes: every cluster's last good snapshot and health.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Capabilities, ClusterKind, Health, ShapeFields, Snapshot, SpecFields};

/// One cluster as the front ends see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterState {
    pub name: String,
    pub kind: ClusterKind,
    /// What its backend can do: the front ends offer only these actions.
    pub capabilities: Capabilities,
    /// How its kind uses the spec fields that differ between kinds (the submit form's labels).
    #[serde(default)]
    pub spec_fields: SpecFields,
    /// Which of nodes, tasks per node and array its kind takes (the submit form offers those).
    #[serde(default)]
    pub shape_fields: ShapeFields,
    /// How its kind places jobs (the kind's registry line, or what its hub relays), for advice.
    #[serde(default)]
    pub placement: super::Placement,
    pub health: Health,
    /// The last good snapshot; kept (and shown as stale) when later refreshes fail.
    pub snapshot: Option<Arc<Snapshot>>,
    /// Finished refresh attempts, good or bad.
    pub attempts: u64,
    /// How long the last refresh took.
    pub last_refresh_ms: Option<u64>,
    /// Its GPUs as last measured, joined to its jobs (`None`: no telemetry source, or no
    /// reading yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_use: Option<Arc<super::GpuUse>>,
    /// Why telemetry could not be read the last time, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_error: Option<String>,
    /// A telemetry reading was tried (whatever came of it, including "nothing can measure
    /// this cluster"): what a one-shot command waits for.
    #[serde(default)]
    pub telemetry_tried: bool,
}

impl ClusterState {
    /// A cluster not heard from yet, allowed every action until told otherwise (the fleet
    /// sets the backend's own [`Capabilities`]).
    pub fn new(name: impl Into<String>, kind: impl Into<ClusterKind>) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            capabilities: Capabilities::ALL,
            spec_fields: SpecFields::default(),
            shape_fields: ShapeFields::default(),
            placement: super::Placement::default(),
            health: Health::Connecting,
            snapshot: None,
            attempts: 0,
            last_refresh_ms: None,
            gpu_use: None,
            telemetry_error: None,
            telemetry_tried: false,
        }
    }
}

/// Everything, cheap to clone: snapshots are shared, never copied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetState {
    pub clusters: Vec<ClusterState>,
    pub read_only: bool,
    /// Bumped on every change, so a front end can tell whether anything moved.
    pub version: u64,
}

impl FleetState {
    pub fn cluster(&self, name: &str) -> Option<&ClusterState> {
        self.clusters.iter().find(|c| c.name == name)
    }

    /// Fold one refresh attempt of cluster `index` into the picture: a success replaces the
    /// snapshot and makes the cluster fresh; a failure keeps the last good snapshot and marks
    /// it stale, remembering since when and the latest error.
    pub fn record_refresh(
        &mut self,
        index: usize,
        result: Result<Arc<Snapshot>, String>,
        took_ms: u64,
        now: DateTime<Utc>,
    ) {
        let Some(c) = self.clusters.get_mut(index) else { return };
        match result {
            Ok(snapshot) => {
                c.health = Health::Fresh { at: now };
                c.snapshot = Some(snapshot);
            }
            Err(error) => {
                c.health = match &c.health {
                    Health::Stale { since, last_ok, .. } => Health::Stale { since: *since, error, last_ok: *last_ok },
                    Health::Fresh { at } => Health::Stale { since: now, error, last_ok: Some(*at) },
                    Health::Connecting => Health::Stale { since: now, error, last_ok: None },
                };
            }
        }
        c.last_refresh_ms = Some(took_ms);
        c.attempts += 1;
        self.version += 1;
    }

    /// Whether `verb` may be asked of `cluster`; `Err` says why not, in the words every
    /// front end uses (an unknown cluster is left for the fleet to refuse).
    pub fn check(&self, cluster: &str, verb: super::Verb) -> Result<(), String> {
        match self.cluster(cluster) {
            Some(c) if !c.capabilities.allows(verb) => Err(super::action::cannot(&c.name, c.kind.as_str(), verb)),
            _ => Ok(()),
        }
    }

    /// Every cluster has answered at least once (well or badly).
    pub fn all_attempted(&self) -> bool {
        self.clusters.iter().all(|c| c.attempts > 0)
    }
}
