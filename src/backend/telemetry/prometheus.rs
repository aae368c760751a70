//! GPU telemetry from Prometheus: instant queries on the exporter's metrics, labels discovered.
//!
//! One reading is one request for the whole cluster, however many nodes it has: every
//! dcgm-exporter and AMD device-metrics-exporter metric in a single `{__name__=~"…"}`
//! selector, inside `max by (…)` keeping only the labels read. A server that refuses that selector (some multi-tenant front ends want a metric
//! name) is asked once more with the same metrics as `a or b or …`; nothing else retries,
//! so a reading costs at most two requests.
//!
//! * [`answer`]: the answer's JSON, streamed series by series;
//! * [`scan`]: the same, fast, for answers of the usual shape (serde_json reads the rest);
//! * [`labels`]: the label spellings of both exporters and their versions;
//! * [`metrics`]: the metric names and what each measures;
//! * [`hosts`]: exporter host names → the snapshot's node names;
//! * [`samples`]: series → one sample per GPU (MIG instances folded, owners, problems);
//! * [`xid`]: XID codes in words;
//! * [`query`]: the HTTP request (token, bound, counter);
//! * [`reading`]: one answer → samples and notes, without a server.

mod answer;
mod hosts;
mod labels;
mod metrics;
mod query;
mod reading;
mod samples;
mod scan;
mod xid;

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use reqwest::StatusCode;

pub use self::reading::{AnswerError, Reading, read_answer};
use super::TelemetrySource;
use crate::backend::BackendError;
use crate::backend::http::{TokenSource, status_error};
use crate::model::{Snapshot, Telemetry};

/// A cluster's Prometheus as a [`TelemetrySource`].
#[derive(Debug)]
pub struct PrometheusSource {
    endpoint: query::Endpoint,
    source: String,
    selector: String,
    alternation: String,
}

/// Why one query gave no reading: Prometheus refused it (another form may pass), or
/// anything else (the server, the token, the answer), which a second form would not mend.
enum Failure {
    Refused { status: u16, why: String },
    Other(BackendError),
}

impl PrometheusSource {
    /// `url` is the server's base (`https://prom.example:9090`, or a proxy path before
    /// `/api/v1/query`); `token` is sent as a bearer token, read afresh per request; every
    /// request is bounded by `timeout`.
    pub fn new(
        cluster: &str,
        url: &str,
        token: Option<TokenSource>,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, BackendError> {
        let endpoint = query::Endpoint::new(cluster, url, token, ca_file, timeout)
            .map_err(|why| BackendError::Unsupported(format!("cluster {cluster}: Prometheus: {why}")))?;
        Ok(PrometheusSource {
            source: format!("prometheus {}", endpoint.base()),
            endpoint,
            selector: metrics::selector_query(),
            alternation: metrics::alternation_query(),
        })
    }

    async fn ask(&self, promql: &str, snapshot: &Snapshot) -> Result<Reading, Failure> {
        let reply = self.endpoint.query(promql).await.map_err(Failure::Other)?;
        let request = self.endpoint.request();
        let read = read_answer(&reply.body, snapshot);
        if !reply.status.is_success() {
            // 400 (bad_data) and 422 (execution) carry Prometheus's refusal; the rest (401,
            // 403, 404, 503 …) are the server's or a proxy's and say so in their own words.
            return Err(match read {
                Err(AnswerError::Refused { error_type, message })
                    if matches!(reply.status, StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY) =>
                {
                    Failure::Refused { status: reply.status.as_u16(), why: format!("{error_type}: {message}") }
                }
                _ => Failure::Other(status_error(self.endpoint.cluster(), &request, reply.status, &reply.body)),
            });
        }
        read.map_err(|e| match e {
            AnswerError::Refused { error_type, message } => {
                Failure::Refused { status: reply.status.as_u16(), why: format!("{error_type}: {message}") }
            }
            other => Failure::Other(BackendError::Parse { what: request, message: other.to_string() }),
        })
    }
}

#[async_trait]
impl TelemetrySource for PrometheusSource {
    async fn read(&self, snapshot: &Snapshot) -> Result<Telemetry, BackendError> {
        let taken_at = Utc::now();
        let refused =
            |status: u16, message: String| BackendError::Http { request: self.endpoint.request(), status, message };
        let (reading, fallback) = match self.ask(&self.selector, snapshot).await {
            Ok(reading) => (reading, None),
            Err(Failure::Other(error)) => return Err(error),
            Err(Failure::Refused { why: first, .. }) => match self.ask(&self.alternation, snapshot).await {
                Ok(reading) => (reading, Some(first)),
                Err(Failure::Other(error)) => return Err(error),
                Err(Failure::Refused { status, why }) => {
                    return Err(refused(status, format!("{first}; asked as `a or b or …`: {why}")));
                }
            },
        };
        let mut notes = Vec::with_capacity(reading.notes.len() + 1);
        if let Some(first) = fallback {
            notes.push(format!("Prometheus refused the `{{__name__=~…}}` selector ({first}); asked as `a or b or …`"));
        }
        notes.extend(reading.notes);
        Ok(Telemetry { taken_at, source: self.source.clone(), gpus: reading.gpus, notes })
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.endpoint.sent())
    }
}

#[cfg(test)]
mod tests;
