//! The dstack server's REST API: every call a `POST` with a JSON body and the bearer token
//! (through [`crate::backend::http::Api`], which bounds answers and names the cluster in
//! authentication failures), listings paged by their cursor fields, a count of requests so
//! `doctor` can say what a refresh costs.
//!
//! Listings are read as JSON values first and each record on its own
//! ([`super::map::records`]), so one odd record is left out rather than failing the
//! refresh.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};

use super::map::{self, Fleet, Instance, Run};
use crate::backend::BackendError;
use crate::backend::http::Api;

/// Runs per `runs/list` page (the server's maximum).
pub const RUNS_PAGE: usize = 100;
/// The most runs one refresh reads: the newest first, older history left out with a note.
pub const MAX_RUNS: usize = 10_000;
/// Instances per `instances/list` page, fleets per `fleets/list` page.
pub const INSTANCES_PAGE: usize = 1000;
pub const FLEETS_PAGE: usize = 100;
/// Log events per `logs/poll` request (the server's maximum).
pub const LOG_PAGE: usize = 1000;

/// A listing as read: the records, how many were unreadable, how many requests it took,
/// and whether it stopped at its bound.
#[derive(Debug, Default)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub unreadable: usize,
    pub requests: u64,
    pub truncated: bool,
}

/// `logs/poll`'s answer (schema `JobSubmissionLogs`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Logs {
    pub logs: Vec<LogEvent>,
    pub next_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LogEvent {
    pub timestamp: Option<String>,
    pub log_source: Option<String>,
    /// Base64 of the line's bytes (dstack sends log text base64-encoded).
    pub message: String,
}

/// One project on one server.
#[derive(Debug)]
pub struct DstackApi {
    pub http: Api,
    pub project: String,
    requests: AtomicU64,
}

impl DstackApi {
    pub fn new(http: Api, project: &str) -> Self {
        Self { http, project: project.to_string(), requests: AtomicU64::new(0) }
    }

    /// Requests sent so far (every call counts, failed ones too).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// `POST path body`, counted.
    pub async fn call<T: serde::de::DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, BackendError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.http.post(path, body).await
    }

    fn project_path(&self, rest: &str) -> String {
        format!("/api/project/{}/{rest}", self.project)
    }

    /// The server's release (`0.22.5`), from `server/get_info`.
    pub async fn server_version(&self) -> Result<Option<String>, BackendError> {
        let info: Value = self.call("/api/server/get_info", &json!({})).await?;
        Ok(info.get("server_version").and_then(Value::as_str).map(str::to_string))
    }

    /// The project's configured backends (`projects/{p}/get`).
    pub async fn backends(&self) -> Result<Vec<String>, BackendError> {
        let project: Value = self.call(&format!("/api/projects/{}/get", self.project), &json!({})).await?;
        Ok(project
            .get("backends")
            .and_then(Value::as_array)
            .map(|bs| bs.iter().filter_map(|b| b.get("name").and_then(Value::as_str)).map(str::to_string).collect())
            .unwrap_or_default())
    }

    /// Every run of the project, newest first, soft-deleted ones included (the mapping
    /// leaves them out): pages of [`RUNS_PAGE`] through `prev_submitted_at` + `prev_run_id`,
    /// at most [`MAX_RUNS`].
    pub async fn list_runs(&self) -> Result<Listing<Run>, BackendError> {
        let base = json!({
            "project_name": self.project,
            "include_jobs": true,
            "job_submissions_limit": 1,
            "limit": RUNS_PAGE,
            "ascending": false,
        });
        self.paged(
            "/api/runs/list",
            base,
            RUNS_PAGE,
            MAX_RUNS,
            ("submitted_at", "id"),
            ("prev_submitted_at", "prev_run_id"),
        )
        .await
    }

    /// The project's active fleets.
    pub async fn list_fleets(&self) -> Result<Listing<Fleet>, BackendError> {
        let base = json!({"project_name": self.project, "only_active": true, "limit": FLEETS_PAGE});
        self.paged(
            "/api/fleets/list",
            base,
            FLEETS_PAGE,
            MAX_RUNS,
            ("created_at", "id"),
            ("prev_created_at", "prev_id"),
        )
        .await
    }

    /// The project's active instances.
    pub async fn list_instances(&self) -> Result<Listing<Instance>, BackendError> {
        let base = json!({"project_names": [self.project], "only_active": true, "limit": INSTANCES_PAGE});
        self.paged(
            "/api/instances/list",
            base,
            INSTANCES_PAGE,
            MAX_RUNS,
            ("created", "id"),
            ("prev_created_at", "prev_id"),
        )
        .await
    }

    /// A listing in pages: each next page starts after the last record of the one before
    /// (its `cursor` fields sent back as `keys`). Stops at a short page, at `max` records, or
    /// when the cursor does not move (a server that ignores it).
    async fn paged<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        base: Value,
        page: usize,
        max: usize,
        cursor: (&str, &str),
        keys: (&str, &str),
    ) -> Result<Listing<T>, BackendError> {
        let mut out = Listing { items: Vec::new(), unreadable: 0, requests: 0, truncated: false };
        let mut body = base;
        let mut last: Option<(Value, Value)> = None;
        loop {
            let values: Vec<Value> = self.call(path, &body).await?;
            out.requests += 1;
            let n = values.len();
            let next = values.last().map(|v| (v.get(cursor.0).cloned(), v.get(cursor.1).cloned()));
            let (items, bad) = map::records::<T>(values);
            out.items.extend(items);
            out.unreadable += bad;
            if n < page {
                break;
            }
            if out.items.len() + out.unreadable >= max {
                out.truncated = true;
                break;
            }
            let Some((Some(at), Some(id))) = next else { break };
            if last.as_ref() == Some(&(at.clone(), id.clone())) {
                break;
            }
            body[keys.0] = at.clone();
            body[keys.1] = id.clone();
            last = Some((at, id));
        }
        Ok(out)
    }

    /// One run by name.
    pub async fn get_run(&self, run_name: &str) -> Result<Run, BackendError> {
        self.call(&self.project_path("runs/get"), &json!({"run_name": run_name})).await
    }

    /// Submit a run spec; returns the run as the server accepted it.
    pub async fn apply(&self, body: &Value) -> Result<Run, BackendError> {
        self.call(&self.project_path("runs/apply"), body).await
    }

    /// Stop runs (gracefully: the server lets them shut down).
    pub async fn stop(&self, run_name: &str) -> Result<(), BackendError> {
        let _: Value =
            self.call(&self.project_path("runs/stop"), &json!({"runs_names": [run_name], "abort": false})).await?;
        Ok(())
    }

    /// Delete a finished or stopped run (the server refuses an active one).
    pub async fn delete(&self, run_name: &str) -> Result<(), BackendError> {
        let _: Value = self.call(&self.project_path("runs/delete"), &json!({"runs_names": [run_name]})).await?;
        Ok(())
    }

    /// One page of a job submission's log from line `next_token` on.
    pub async fn poll_logs(&self, run: &str, submission: &str, next_token: Option<&str>) -> Result<Logs, BackendError> {
        let mut body =
            json!({"run_name": run, "job_submission_id": submission, "limit": LOG_PAGE, "descending": false});
        if let Some(token) = next_token {
            body["next_token"] = json!(token);
        }
        self.call(&self.project_path("logs/poll"), &body).await
    }
}

/// Standard base64 (with or without padding) → bytes; `None` if it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_of_log_lines() {
        assert_eq!(decode_base64("aGVsbG8K").unwrap(), b"hello\n");
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("not base64!").is_none());
    }
}
