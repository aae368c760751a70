//! GPU telemetry from Prometheus: instant queries on the exporter's metrics, labels discovered.
//!
//! One reading is two requests for the whole cluster, however many nodes it has, each over
//! every dcgm-exporter and AMD device-metrics-exporter metric in a single `{__name__=~"…"}`
//! selector: one naming each GPU with its long labels, one carrying the figures with only
//! the labels that tell GPUs apart ([`metrics::identity_query`]). A server that refuses that
//! selector (some multi-tenant front ends want a metric name) is asked once more with the
//! same metrics as `a or b or …`; nothing else retries, so a reading costs at most three.
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

use self::hosts::Hosts;
use self::metrics::Form;
use self::reading::Reader;
pub use self::reading::{AnswerError, Reading, read_answer, read_answers};
use super::TelemetrySource;
use crate::backend::BackendError;
use crate::backend::http::{TokenSource, status_error};
use crate::model::{Snapshot, Telemetry};

/// A cluster's Prometheus as a [`TelemetrySource`].
#[derive(Debug)]
pub struct PrometheusSource {
    endpoint: query::Endpoint,
    source: String,
}

/// Why one query gave no answer: Prometheus refused it (another form may pass), or
/// anything else (the server, the token), which a second form would not mend.
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
        Ok(PrometheusSource { source: format!("prometheus {}", endpoint.base()), endpoint })
    }

    /// A successful answer, or why there is none.
    async fn ask(&self, promql: &str) -> Result<query::Reply, Failure> {
        let reply = self.endpoint.query(promql).await.map_err(Failure::Other)?;
        if reply.status.is_success() {
            return Ok(reply);
        }
        // 400 (bad_data) and 422 (execution) carry Prometheus's refusal; the rest (401,
        // 403, 404, 503 …) are the server's or a proxy's and say so in their own words.
        let status = reply.status;
        match read_answer(&reply.body, &Snapshot::default()) {
            Err(AnswerError::Refused { error_type, message })
                if matches!(status, StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY) =>
            {
                Err(Failure::Refused { status: status.as_u16(), why: format!("{error_type}: {message}") })
            }
            _ => Err(Failure::Other(status_error(
                self.endpoint.cluster(),
                &self.endpoint.request(),
                status,
                &reply.body,
            ))),
        }
    }

    /// The identity answer, in the first form Prometheus accepts, and the first form's
    /// refusal where the second was needed.
    async fn identity(&self) -> Result<(query::Reply, Form, Option<String>), BackendError> {
        let refused =
            |status: u16, message: String| BackendError::Http { request: self.endpoint.request(), status, message };
        match self.ask(&metrics::identity_query(Form::Selector)).await {
            Ok(reply) => Ok((reply, Form::Selector, None)),
            Err(Failure::Other(error)) => Err(error),
            Err(Failure::Refused { why: first, .. }) => {
                match self.ask(&metrics::identity_query(Form::Alternation)).await {
                    Ok(reply) => Ok((reply, Form::Alternation, Some(first))),
                    Err(Failure::Other(error)) => Err(error),
                    Err(Failure::Refused { status, why }) => {
                        Err(refused(status, format!("{first}; asked as `a or b or …`: {why}")))
                    }
                }
            }
        }
    }

    /// What reading an answer's body found wrong, as the error of the reading.
    fn unreadable(&self, error: AnswerError) -> BackendError {
        match error {
            AnswerError::Refused { error_type, message } => BackendError::Http {
                request: self.endpoint.request(),
                status: 200,
                message: format!("{error_type}: {message}"),
            },
            other => BackendError::Parse { what: self.endpoint.request(), message: other.to_string() },
        }
    }
}

#[async_trait]
impl TelemetrySource for PrometheusSource {
    /// Two requests: the identity query, then the values query keyed by what the first
    /// answer showed (none when it held no GPU); three when the selector form is refused.
    async fn read(&self, snapshot: &Snapshot) -> Result<Telemetry, BackendError> {
        let taken_at = Utc::now();
        let (identity, form, refused_first) = self.identity().await?;
        let hosts = Hosts::new(snapshot);
        // Declared before the reader, which borrows both answers.
        let values: query::Reply;
        let mut reader = Reader::new(&hosts, snapshot);
        reader.read(&identity.body).map_err(|e| self.unreadable(e))?;
        let keys = reader.value_keys();
        if !keys.is_empty() {
            values = match self.ask(&metrics::values_query(form, keys)).await {
                Ok(reply) => reply,
                Err(Failure::Other(error)) => return Err(error),
                Err(Failure::Refused { status, why }) => {
                    return Err(BackendError::Http { request: self.endpoint.request(), status, message: why });
                }
            };
            reader.read(&values.body).map_err(|e| self.unreadable(e))?;
        }
        let reading = reader.finish();
        let mut notes = Vec::with_capacity(reading.notes.len() + 1);
        if let Some(first) = refused_first {
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
