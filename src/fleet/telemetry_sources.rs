//! The telemetry sources a configuration names, built for the fleet.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::BackendError;
use crate::backend::http::TokenSource;
use crate::backend::telemetry::TelemetrySource;
use crate::backend::telemetry::prometheus::PrometheusSource;
use crate::config::PrometheusConfig;

/// The cluster's Prometheus, each request bounded by the cluster's timeout.
pub fn prometheus(
    cluster: &str,
    config: &PrometheusConfig,
    timeout: Duration,
) -> Result<Arc<dyn TelemetrySource>, BackendError> {
    let token = config.token_env.clone().map(TokenSource::Env);
    let source = PrometheusSource::new(cluster, &config.url, token, config.ca_file.as_deref(), timeout)?;
    Ok(Arc::new(source))
}
