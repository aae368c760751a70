//! The telemetry sources a configuration names, built for the fleet.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::BackendError;
use crate::backend::telemetry::TelemetrySource;
use crate::config::PrometheusConfig;

/// The cluster's Prometheus.
pub fn prometheus(
    cluster: &str,
    config: &PrometheusConfig,
    timeout: Duration,
) -> Result<Arc<dyn TelemetrySource>, BackendError> {
    let _ = (cluster, config, timeout);
    Err(BackendError::Unsupported(format!("cluster {cluster}: Prometheus telemetry is not built in yet")))
}
