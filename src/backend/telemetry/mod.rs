//! GPU telemetry sources that are not a backend's own: Prometheus (dcgm-exporter, AMD's
//! device-metrics-exporter) for any cluster with a `prometheus_url`, and the `nvidia-smi`
//! output format that the Slurm and local backends read.

pub mod nvidia_smi;
pub mod prometheus;

use async_trait::async_trait;

use super::BackendError;
use crate::model::{Snapshot, Telemetry};

/// A reader of a cluster's GPUs that is not the cluster's backend (Prometheus): the fleet's
/// telemetry loop prefers it, when configured, to `Backend::telemetry`.
#[async_trait]
pub trait TelemetrySource: Send + Sync {
    /// One reading for the cluster whose last snapshot is `snapshot` (its nodes help name
    /// what the source reports).
    async fn read(&self, snapshot: &Snapshot) -> Result<Telemetry, BackendError>;
    /// Requests sent so far, where counted.
    fn requests_sent(&self) -> Option<u64> {
        None
    }
}
