//! SkyPilot's asynchronous request protocol, in one place.
//!
//! Every operation (`POST /status`, `/launch`, `GET /enabled_clouds` …) answers at once with
//! body `null` and the request's id in the `X-Skypilot-Request-ID` header; the work runs on
//! the server. `GET /api/get?request_id=ID` blocks until it is done (the server sets no
//! bound) and returns the request's record, whose `return_value` and `error` are JSON
//! *strings* (decoded twice here). A failed request is HTTP 500 with `{"detail": record}`;
//! its error's `type` and `message` (ANSI colours stripped) are what the user reads.
//! Pickled fields (`entrypoint`, `request_body`, `error.object`) are never read.
//!
//! Bounds and cancellation:
//! * a call has one deadline (the cluster's timeout), shared by starting it and waiting;
//! * `/api/get` is held at most until the deadline; a record that comes back unfinished
//!   (a proxy cut the long poll) is followed by polling `GET /api/status` until it is
//!   finished or the deadline passes;
//! * a request the caller no longer waits for (deadline passed, or the caller's future
//!   dropped: the fleet bounds a refresh, the cockpit moved on) is cancelled on the server
//!   with `POST /api/cancel` by a guard, so abandoned work does not pile up there.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::backend::BackendError;
use crate::backend::http::{Api, clean_message, status_error};

/// The header that carries a new request's id.
pub const REQUEST_ID_HEADER: &str = "x-skypilot-request-id";
/// How long the guard's `/api/cancel` may take (it runs after its caller has gone).
const CANCEL_BOUND: Duration = Duration::from_secs(3);
/// Polling `/api/status`: first interval, doubled up to the last.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(1);

/// How a request ended on the server, when it did not succeed.
#[derive(Debug, Clone)]
pub enum Failure {
    /// The operation ran and failed: SkyPilot's exception type (`ClusterDoesNotExist`,
    /// `NoCloudAccessError`) and its message, ANSI codes stripped.
    Server { op: String, kind: String, message: String },
    /// Anything else: the server unreachable, a refused token, no answer in time.
    Backend(BackendError),
}

impl PartialEq for Failure {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Failure::Server { op, kind, message }, Failure::Server { op: o, kind: k, message: m }) => {
                (op, kind, message) == (o, k, m)
            }
            // BackendError has no equality; its text is what the user reads.
            (Failure::Backend(a), Failure::Backend(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        Failure::Backend(e)
    }
}

impl Failure {
    /// The error the user reads: the server's own message, naming the operation.
    pub fn into_backend(self) -> BackendError {
        match self {
            Failure::Backend(e) => e,
            Failure::Server { kind, message, .. } if kind == "ClusterDoesNotExist" => BackendError::NotFound(message),
            Failure::Server { op, kind, message } => {
                BackendError::Command { command: op, status: None, stderr: format!("{message} ({kind})") }
            }
        }
    }
}

/// The parts of a request record this client reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Record {
    pub request_id: Option<String>,
    pub name: Option<String>,
    pub status: Option<String>,
    pub return_value: Option<Value>,
    pub error: Option<Value>,
    pub status_msg: Option<String>,
}

impl Record {
    /// Finished, one way or the other.
    pub fn is_finished(&self) -> bool {
        matches!(self.status.as_deref(), Some("SUCCEEDED" | "FAILED" | "CANCELLED"))
    }
}

/// A JSON value sent as a JSON string (`return_value`, `error`): decoded a second time;
/// anything that is not a string is taken as it is.
pub fn decode_twice(value: Option<Value>) -> Value {
    match value {
        Some(Value::String(text)) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        Some(other) => other,
        None => Value::Null,
    }
}

/// What a finished record says: its return value, or how it failed.
pub fn outcome(op: &str, record: Record) -> Result<Value, Failure> {
    match record.status.as_deref() {
        Some("SUCCEEDED") => Ok(decode_twice(record.return_value)),
        Some("CANCELLED") => Err(Failure::Server {
            op: op.to_string(),
            kind: "RequestCancelled".into(),
            message: format!("the request was cancelled on the server ({})", record.request_id.unwrap_or_default()),
        }),
        _ => {
            let error = decode_twice(record.error);
            let kind = error.get("type").and_then(Value::as_str).unwrap_or("Error").to_string();
            let message = match error.get("message") {
                Some(Value::String(m)) => clean_message(m),
                _ => match &error {
                    Value::String(s) => clean_message(s),
                    _ => record.status_msg.as_deref().map(clean_message).unwrap_or_else(|| "failed".into()),
                },
            };
            Err(Failure::Server { op: op.to_string(), kind: clean_message(&kind), message })
        }
    }
}

/// The protocol over one API server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Requests {
    pub api: Api,
    /// Every call's deadline (the cluster's timeout).
    pub bound: Duration,
    /// HTTP requests sent, for `doctor`'s requests-per-refresh.
    sent: Arc<AtomicU64>,
}

/// What becomes of a request nobody waits for any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Abandon {
    Cancel,
    Keep,
}

/// A request the server is working on for us: cancelled there when dropped before it was
/// [`Pending::finish`]ed.
struct Pending {
    api: Option<Api>,
    id: String,
    sent: Arc<AtomicU64>,
}

impl Pending {
    fn finish(mut self) {
        self.api = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(api) = self.api.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let id = std::mem::take(&mut self.id);
        let sent = self.sent.clone();
        tracing::debug!(cluster = %api.cluster, request = %id, "cancelling an abandoned SkyPilot request");
        runtime.spawn(async move {
            sent.fetch_add(1, Ordering::Relaxed);
            let body = serde_json::json!({ "request_ids": [id] });
            let _ = tokio::time::timeout(CANCEL_BOUND, api.send(Method::POST, "/api/cancel", Some(&body))).await;
        });
    }
}

impl Requests {
    pub fn new(api: Api, bound: Duration) -> Self {
        Self { api, bound, sent: Arc::default() }
    }

    /// HTTP requests sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    fn timeout(&self, what: &str) -> Failure {
        Failure::Backend(BackendError::Timeout { what: what.to_string(), secs: self.bound.as_secs().max(1) })
    }

    /// One HTTP exchange, cut at `deadline`.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        deadline: Instant,
        what: &str,
    ) -> Result<crate::backend::http::Reply, Failure> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout_at(deadline, self.api.send(method, path, body)).await {
            Ok(reply) => Ok(reply?),
            Err(_) => Err(self.timeout(what)),
        }
    }

    /// `POST path` with `body` (`GET path` when `body` is `None`), then its result: the
    /// decoded return value, or how it failed. Bounded by [`Requests::bound`] all told.
    pub async fn call(&self, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        self.call_inner(path, body, Abandon::Cancel).await.map(|(_, v)| v)
    }

    /// [`Requests::call`] for work that must go on when nobody waits for it any more (a
    /// launch provisioning machines, a teardown deleting them): past the bound it is left
    /// running on the server, and the timeout says so.
    pub async fn call_detached(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.call_inner(path, Some(body), Abandon::Keep).await.map(|(_, v)| v)
    }

    /// [`Requests::call`], keeping the request's id (its log can then be streamed).
    pub async fn call_keeping_id(&self, path: &str, body: &Value) -> Result<(String, Value), Failure> {
        self.call_inner(path, Some(body), Abandon::Cancel).await
    }

    async fn call_inner(&self, path: &str, body: Option<&Value>, abandon: Abandon) -> Result<(String, Value), Failure> {
        let deadline = Instant::now() + self.bound;
        let method = if body.is_some() { Method::POST } else { Method::GET };
        let what = format!("{method} {path}");
        let id = self.start(method, path, body, deadline, &what).await?;
        let api = (abandon == Abandon::Cancel).then(|| self.api.clone());
        let pending = Pending { api, id: id.clone(), sent: self.sent.clone() };
        let record = self.wait(&id, deadline, &what, abandon).await?;
        // Finished (either way): nothing left to cancel.
        pending.finish();
        outcome(&what, record).map(|v| (id, v))
    }

    /// `GET path` of a synchronous endpoint (`/api/health`): its JSON answer, bounded.
    pub async fn get_now(&self, path: &str) -> Result<Value, BackendError> {
        let what = format!("GET {path}");
        let deadline = Instant::now() + self.bound;
        let reply = self.send(Method::GET, path, None, deadline, &what).await.map_err(Failure::into_backend)?;
        self.api.decode(&what, reply)
    }

    /// `POST path` of a streaming endpoint (`/logs`): the answer's body as text, ANSI
    /// escapes removed, line breaks kept. Bounded by the deadline and the body cap.
    pub async fn post_text(&self, path: &str, body: &Value) -> Result<String, BackendError> {
        let deadline = Instant::now() + self.bound;
        let what = format!("POST {path}");
        let reply = self.send(Method::POST, path, Some(body), deadline, &what).await.map_err(Failure::into_backend)?;
        if !reply.status.is_success() {
            return Err(status_error(&self.api.cluster, &what, reply.status, &reply.body));
        }
        Ok(crate::backend::http::strip_ansi(&String::from_utf8_lossy(&reply.body)))
    }

    /// Send the operation; its request id.
    async fn start(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        deadline: Instant,
        what: &str,
    ) -> Result<String, Failure> {
        let reply = self.send(method, path, body, deadline, what).await?;
        if !reply.status.is_success() {
            return Err(status_error(&self.api.cluster, what, reply.status, &reply.body).into());
        }
        let id = reply.headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::trim);
        match id {
            Some(id) if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
                Ok(id.to_string())
            }
            _ => Err(Failure::Backend(BackendError::Parse {
                what: what.to_string(),
                message: "the answer carries no X-Skypilot-Request-ID: is this a SkyPilot API server?".into(),
            })),
        }
    }

    /// The finished record of request `id`: `/api/get` held until the deadline, then (if it
    /// came back unfinished) `/api/status` polled. Past the deadline: a timeout that says
    /// where the request stood.
    async fn wait(&self, id: &str, deadline: Instant, what: &str, abandon: Abandon) -> Result<Record, Failure> {
        let get = format!("/api/get?request_id={id}");
        let record = match self.send(Method::GET, &get, None, deadline, what).await {
            Ok(reply) => self.record_of(what, reply)?,
            Err(Failure::Backend(BackendError::Timeout { .. })) => return Err(self.timed_out(id, what, abandon).await),
            Err(e) => return Err(e),
        };
        if record.is_finished() {
            return Ok(record);
        }
        let mut interval = POLL_FIRST;
        loop {
            if Instant::now() + interval >= deadline {
                return Err(self.timed_out(id, what, abandon).await);
            }
            tokio::time::sleep(interval).await;
            interval = (interval * 2).min(POLL_MAX);
            match self.poll(id, deadline, what).await {
                Ok(Some(status)) if is_finished(&status) => break,
                Ok(_) => {}
                Err(Failure::Backend(BackendError::Timeout { .. })) => {
                    return Err(self.timed_out(id, what, abandon).await);
                }
                Err(e) => return Err(e),
            }
        }
        let reply = self.send(Method::GET, &get, None, deadline, what).await?;
        self.record_of(what, reply)
    }

    /// `GET /api/status?request_ids=ID`: the request's status, without waiting.
    pub async fn poll(&self, id: &str, deadline: Instant, what: &str) -> Result<Option<String>, Failure> {
        let reply = self
            .send(Method::GET, &format!("/api/status?request_ids={id}&all_status=true"), None, deadline, what)
            .await?;
        if !reply.status.is_success() {
            return Err(status_error(&self.api.cluster, "GET /api/status", reply.status, &reply.body).into());
        }
        let records: Vec<Record> = serde_json::from_slice(&reply.body)
            .map_err(|e| BackendError::Parse { what: "GET /api/status".into(), message: e.to_string() })?;
        Ok(records.into_iter().find(|r| r.request_id.as_deref() == Some(id)).and_then(|r| r.status))
    }

    /// The timeout for a request that did not finish in time, saying where it stood (asked
    /// with one short `/api/status`); the caller's guard cancels it on the server.
    async fn timed_out(&self, id: &str, what: &str, abandon: Abandon) -> Failure {
        let quick = Instant::now() + Duration::from_millis(500).min(self.bound);
        let fate = match abandon {
            Abandon::Cancel => "cancelled",
            Abandon::Keep => "left running there",
        };
        let stood = match self.poll(id, quick, what).await {
            Ok(Some(status)) => format!(" (still {status} on the server: {fate})"),
            _ => format!(" ({fate})"),
        };
        Failure::Backend(BackendError::Timeout {
            what: format!("{what} (request {id}){stood}"),
            secs: self.bound.as_secs().max(1),
        })
    }

    /// A record from `/api/get`'s answer: 200 with the record, 500 with `{"detail": record}`;
    /// anything else (404 for an id the server does not know) is an HTTP error.
    fn record_of(&self, what: &str, reply: crate::backend::http::Reply) -> Result<Record, Failure> {
        let value: Option<Value> = serde_json::from_slice(&reply.body).ok();
        let record = match (reply.status.as_u16(), value) {
            (200, Some(v @ Value::Object(_))) => v,
            (500, Some(Value::Object(mut map))) if map.get("detail").is_some_and(Value::is_object) => {
                map.remove("detail").unwrap_or_default()
            }
            _ => return Err(status_error(&self.api.cluster, what, reply.status, &reply.body).into()),
        };
        serde_json::from_value(record)
            .map_err(|e| Failure::Backend(BackendError::Parse { what: what.to_string(), message: e.to_string() }))
    }
}

fn is_finished(status: &str) -> bool {
    matches!(status, "SUCCEEDED" | "FAILED" | "CANCELLED")
}

#[cfg(test)]
mod tests {
    //! The protocol against a scripted stub server (axum): what it answers is SkyPilot
    //! 0.14.1's (tests/fixtures/skypilot/ holds the captured records).

    use std::collections::VecDeque;
    use std::sync::Mutex;

    use axum::Router;
    use axum::extract::{Query, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use serde_json::json;

    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/skypilot");

    fn fixture(name: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()).unwrap()
    }

    /// What `/api/get` does for the next request.
    #[derive(Clone)]
    enum Get {
        /// Answer with this status and body.
        Answer(u16, Value),
        /// Never answer.
        Hang,
    }

    #[derive(Default)]
    struct Stub {
        gets: Mutex<VecDeque<Get>>,
        statuses: Mutex<VecDeque<&'static str>>,
        log: Mutex<Vec<String>>,
        no_header: bool,
    }

    async fn op(State(s): State<Arc<Stub>>, uri: axum::http::Uri) -> Response {
        s.log.lock().unwrap().push(format!("op {}", uri.path()));
        let mut h = HeaderMap::new();
        if !s.no_header {
            h.insert("X-Skypilot-Request-ID", "abc-123".parse().unwrap());
        }
        (StatusCode::OK, h, "null").into_response()
    }

    async fn api_get(
        State(s): State<Arc<Stub>>,
        Query(q): Query<std::collections::HashMap<String, String>>,
    ) -> Response {
        s.log.lock().unwrap().push(format!("get {}", q.get("request_id").cloned().unwrap_or_default()));
        let next = s.gets.lock().unwrap().pop_front();
        match next {
            Some(Get::Answer(code, body)) => (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response(),
            Some(Get::Hang) | None => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                StatusCode::OK.into_response()
            }
        }
    }

    async fn api_status(State(s): State<Arc<Stub>>) -> Response {
        s.log.lock().unwrap().push("status".into());
        let st = s.statuses.lock().unwrap().pop_front().unwrap_or("RUNNING");
        axum::Json(json!([{"request_id": "abc-123", "status": st}])).into_response()
    }

    async fn api_cancel(State(s): State<Arc<Stub>>, body: String) -> Response {
        s.log.lock().unwrap().push(format!("cancel {body}"));
        (StatusCode::OK, "null").into_response()
    }

    async fn serve(stub: Stub) -> (Requests, Arc<Stub>) {
        let stub = Arc::new(stub);
        let app = Router::new()
            .route("/api/get", get(api_get))
            .route("/api/status", get(api_status))
            .route("/api/cancel", post(api_cancel))
            .route("/enabled_clouds", get(op))
            .fallback(post(op))
            .with_state(stub.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let api = Api::new("sky", &format!("http://{addr}"), Duration::from_secs(5), None).unwrap();
        (Requests::new(api, Duration::from_millis(800)), stub)
    }

    fn with_return(value: Value) -> Value {
        let mut r = fixture("get_status_empty.json");
        r["return_value"] = Value::String(value.to_string());
        r
    }

    async fn settle_until(stub: &Stub, what: &str) -> bool {
        for _ in 0..100 {
            if stub.log.lock().unwrap().iter().any(|l| l.starts_with(what)) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_request_is_posted_then_got_and_its_return_value_decoded_twice() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Answer(200, with_return(json!([{"name": "c1"}]))));
        let (req, stub) = serve(stub).await;
        let value = req.call("/status", Some(&json!({"include_handle": false}))).await.unwrap();
        assert_eq!(value, json!([{"name": "c1"}]));
        assert_eq!(*stub.log.lock().unwrap(), ["op /status", "get abc-123"]);
        assert_eq!(req.sent(), 2);
        // The captured empty listing decodes to an empty list.
        assert_eq!(outcome("s", serde_json::from_value(fixture("get_status_empty.json")).unwrap()), Ok(json!([])));
    }

    #[tokio::test]
    async fn a_failed_request_is_the_servers_type_and_message_without_colours() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Answer(500, fixture("get_launch_no_cloud_access.json")));
        stub.gets.lock().unwrap().push_back(Get::Answer(500, fixture("get_cancel_missing_cluster.json")));
        let (req, _) = serve(stub).await;
        let err = req.call("/launch", Some(&json!({}))).await.unwrap_err();
        assert_eq!(
            err,
            Failure::Server {
                op: "POST /launch".into(),
                kind: "NoCloudAccessError".into(),
                message: "Cloud access is not set up. Run: sky check".into()
            }
        );
        assert_eq!(
            err.into_backend().to_string(),
            "`POST /launch` failed: Cloud access is not set up. Run: sky check (NoCloudAccessError)"
        );
        let err = req.call("/cancel", Some(&json!({}))).await.unwrap_err().into_backend();
        assert!(matches!(&err, BackendError::NotFound(m) if m == "Cluster 'nope' does not exist."), "{err}");
    }

    #[tokio::test]
    async fn get_requests_and_unknown_ids() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Answer(200, fixture("get_enabled_clouds_none.json")));
        stub.gets.lock().unwrap().push_back(Get::Answer(404, fixture("get_unknown_request.json")));
        let (req, stub) = serve(stub).await;
        assert_eq!(req.call("/enabled_clouds", None).await.unwrap(), json!([]));
        let err = req.call("/status", Some(&json!({}))).await.unwrap_err().into_backend();
        assert!(err.to_string().contains("Request 'nonexistent' not found"), "{err}");
        assert!(stub.log.lock().unwrap()[0].starts_with("op /enabled_clouds"));
    }

    #[tokio::test]
    async fn a_server_that_is_no_skypilot_is_said_so() {
        let (req, _) = serve(Stub { no_header: true, ..Stub::default() }).await;
        let err = req.call("/status", Some(&json!({}))).await.unwrap_err().into_backend();
        assert!(err.to_string().contains("no X-Skypilot-Request-ID"), "{err}");
    }

    #[tokio::test]
    async fn a_hanging_get_is_bounded_says_where_it_stood_and_is_cancelled() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Hang);
        let (req, stub) = serve(stub).await;
        let t = std::time::Instant::now();
        let err = req.call("/status", Some(&json!({}))).await.unwrap_err().into_backend();
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(3), "{took:?}");
        let shown = err.to_string();
        assert!(shown.contains("timed out") && shown.contains("still RUNNING on the server"), "{shown}");
        assert!(settle_until(&stub, "cancel").await, "{:?}", stub.log.lock().unwrap());
        assert!(stub.log.lock().unwrap().iter().any(|l| l.contains(r#"{"request_ids":["abc-123"]}"#)));
    }

    #[tokio::test]
    async fn an_unfinished_record_is_followed_by_polling_the_status() {
        let stub = Stub::default();
        let mut running = fixture("get_status_empty.json");
        running["status"] = json!("RUNNING");
        stub.gets.lock().unwrap().push_back(Get::Answer(200, running));
        stub.gets.lock().unwrap().push_back(Get::Answer(200, with_return(json!({"ok": 1}))));
        stub.statuses.lock().unwrap().extend(["RUNNING", "SUCCEEDED"]);
        let (req, stub) = serve(stub).await;
        assert_eq!(req.call("/queue", Some(&json!({}))).await.unwrap(), json!({"ok": 1}));
        assert_eq!(*stub.log.lock().unwrap(), ["op /queue", "get abc-123", "status", "status", "get abc-123"]);
    }

    #[tokio::test]
    async fn a_caller_that_stops_waiting_cancels_the_request() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Hang);
        let (req, stub) = serve(stub).await;
        let body = json!({});
        let call = req.call("/launch", Some(&body));
        // The cockpit gives up after 200 ms: the future is dropped mid-wait.
        assert!(tokio::time::timeout(Duration::from_millis(200), call).await.is_err());
        assert!(settle_until(&stub, "cancel").await, "{:?}", stub.log.lock().unwrap());
    }

    #[tokio::test]
    async fn detached_work_is_left_running_when_the_bound_passes() {
        let stub = Stub::default();
        stub.gets.lock().unwrap().push_back(Get::Hang);
        let (req, stub) = serve(stub).await;
        let err = req.call_detached("/launch", &json!({})).await.unwrap_err().into_backend();
        assert!(err.to_string().contains("still RUNNING on the server: left running there"), "{err}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!stub.log.lock().unwrap().iter().any(|l| l.starts_with("cancel")), "{:?}", stub.log.lock().unwrap());
    }

    #[test]
    fn records_decode_leniently() {
        assert_eq!(decode_twice(Some(json!("[1, 2]"))), json!([1, 2]));
        assert_eq!(decode_twice(Some(json!("not json"))), json!("not json"));
        assert_eq!(decode_twice(Some(json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(decode_twice(None), Value::Null);
        let failed: Record = serde_json::from_value(json!({"status": "FAILED", "error": "plain words"})).unwrap();
        assert!(matches!(outcome("x", failed), Err(Failure::Server { message, .. }) if message == "plain words"));
        let failed: Record = serde_json::from_value(json!({"status": "FAILED", "error": "{\"type\": 3}"})).unwrap();
        assert!(matches!(outcome("x", failed), Err(Failure::Server { kind, .. }) if kind == "Error"));
        let cancelled: Record = serde_json::from_value(json!({"status": "CANCELLED", "request_id": "r"})).unwrap();
        assert!(matches!(outcome("x", cancelled), Err(Failure::Server { kind, .. }) if kind == "RequestCancelled"));
    }
}
