//! The HTTP side: a listener that can go away and come back on the same port, connections that
//! can be cut, routing, the verbs, and watch streams.

use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::Inner;
use super::patch::{json_patch, merge_patch, strategic_merge};
use super::resources::{self, ResourceDef, events_v1_field, from_wire, to_wire};
use super::selectors::{FieldSelector, LabelSelector};
use super::store::{
    Change, ChangeType, Key, RecordedRequest, State, WatchMsg, default_propagation, meta_mut, now_rfc3339, str_at,
};

// ----- listener and connections ----------------------------------------------------------------

/// The listening socket (absent while "down"), the accept task's waker, and the token that
/// cuts every connection accepted while it was current.
pub(crate) struct Net {
    pub listener: Option<TcpListener>,
    pub waker: Option<Waker>,
    pub conn_token: CancellationToken,
}

fn lock_net(inner: &Inner) -> std::sync::MutexGuard<'_, Net> {
    inner.net.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let sock = TcpSocket::new_v4()?;
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(1024)
}

pub(crate) fn set_down(inner: &Inner, down: bool) {
    let mut net = lock_net(inner);
    if down {
        if net.listener.is_none() {
            return;
        }
        // Dropping the socket closes it now: from here on connections are refused.
        net.listener = None;
        net.conn_token.cancel();
        net.conn_token = CancellationToken::new();
    } else {
        if net.listener.is_some() {
            return;
        }
        let _enter = inner.runtime.enter();
        let mut tries = 0;
        loop {
            match bind(inner.addr) {
                Ok(l) => {
                    net.listener = Some(l);
                    break;
                }
                Err(_) if tries < 150 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("kube_fake: cannot listen on {} again: {e}", inner.addr),
            }
        }
    }
    if let Some(w) = net.waker.take() {
        w.wake();
    }
}

pub(crate) fn is_down(inner: &Inner) -> bool {
    lock_net(inner).listener.is_none()
}

struct FakeListener {
    inner: Arc<Inner>,
}

impl axum::serve::Listener for FakeListener {
    type Io = KillableIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (KillableIo, SocketAddr) {
        loop {
            let inner = &self.inner;
            let res = poll_fn(|cx| {
                let mut net = lock_net(inner);
                net.waker = Some(cx.waker().clone());
                let token = net.conn_token.clone();
                match net.listener.as_ref() {
                    Some(l) => l.poll_accept(cx).map(|r| r.map(|(s, a)| (s, a, token))),
                    None => Poll::Pending,
                }
            })
            .await;
            match res {
                Ok((stream, addr, token)) => {
                    let _ = stream.set_nodelay(true);
                    return (KillableIo::new(stream, token), addr);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.inner.addr)
    }
}

/// A TCP stream that fails every read and write once its token is cancelled, so the server
/// drops the connection (the client sees it closed), whatever it was doing.
pub(crate) struct KillableIo {
    io: TcpStream,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    dead: bool,
}

impl KillableIo {
    fn new(io: TcpStream, token: CancellationToken) -> KillableIo {
        KillableIo { io, cancelled: Box::pin(token.cancelled_owned()), dead: false }
    }

    fn is_dead(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.dead && self.cancelled.as_mut().poll(cx).is_ready() {
            self.dead = true;
        }
        self.dead
    }
}

fn killed() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "kube_fake: the API server went down")
}

impl AsyncRead for KillableIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_dead(cx) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.is_dead(cx) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_dead(cx) {
            return Poll::Ready(Err(killed()));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_dead(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

pub(crate) async fn serve(inner: Arc<Inner>) {
    let router = Router::new().fallback(handle).with_state(inner.clone());
    let _ = axum::serve(FakeListener { inner }, router).await;
}

// ----- requests ----------------------------------------------------------------------------------

/// Decoded query pairs; empty pairs (`?&a=b`, a bare `?`) are skipped.
#[derive(Clone, Debug, Default)]
pub(crate) struct Query(pub Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(raw: &str) -> Query {
        Query(
            raw.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .filter(|(k, _)| !k.is_empty())
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A failure, answered as a Status body.
#[derive(Debug)]
pub(crate) struct ApiError {
    code: u16,
    reason: String,
    message: String,
    details: Option<Value>,
}

pub(crate) fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

impl ApiError {
    fn new(code: u16, message: impl Into<String>) -> ApiError {
        ApiError { code, reason: reason_for(code).to_owned(), message: message.into(), details: None }
    }

    fn reason(mut self, reason: &str) -> ApiError {
        self.reason = reason.to_owned();
        self
    }

    fn details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    fn into_response(self) -> Response {
        json_response(self.code, &status_json(self.code, &self.reason, &self.message, self.details))
    }
}

type Reply = Result<Response, ApiError>;

pub(crate) fn status_json(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut s = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(d) = details {
        s["details"] = d;
    }
    s
}

fn success_status(code: u16, details: Option<Value>) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code});
    if let Some(d) = details {
        s["details"] = d;
    }
    s
}

fn json_response(code: u16, body: &Value) -> Response {
    json_response_typed(code, body, "application/json")
}

fn json_response_typed(code: u16, body: &Value, content_type: &str) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(serde_json::to_vec(body).expect("serialize response")))
        .expect("response")
}

fn text_response(code: u16, text: String) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(text))
        .expect("response")
}

fn no_such_path() -> ApiError {
    ApiError::new(404, "the server could not find the requested resource").details(json!({}))
}

fn not_found(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::new(404, format!("{} \"{}\" not found", def.qualified(), name))
        .details(json!({"name": name, "group": def.group, "kind": def.plural}))
}

fn method_not_allowed() -> ApiError {
    ApiError::new(405, "the server does not allow this method on the requested resource").details(json!({}))
}

async fn handle(AxState(inner): AxState<Arc<Inner>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 64 << 20).await.unwrap_or_default();
    let raw_query = parts.uri.query().map(str::to_owned);
    let query = Query::parse(raw_query.as_deref().unwrap_or(""));
    let header_text = |h: header::HeaderName| parts.headers.get(h).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (seq, latency, fail) = {
        let mut st = inner.state();
        let seq = st.next_seq;
        st.next_seq += 1;
        st.requests.push(RecordedRequest {
            seq,
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            raw_query: raw_query.clone(),
            query: query.0.clone(),
            content_type: header_text(header::CONTENT_TYPE),
            accept: header_text(header::ACCEPT),
            raw_body: String::from_utf8_lossy(&bytes).into_owned(),
            body: serde_json::from_slice(&bytes).ok(),
            status: 0,
        });
        let fail = (st.fail_next > 0).then(|| {
            st.fail_next -= 1;
            st.fail_status
        });
        (seq, st.latency, fail)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let resp = match fail {
        Some(code) => ApiError::new(code, format!("injected failure: the fake API server answers {code} (fail_next)"))
            .into_response(),
        None => match route(&inner, &parts.method, parts.uri.path(), &query, &parts.headers, &bytes) {
            Ok(r) => r,
            Err(e) => e.into_response(),
        },
    };
    let status = resp.status().as_u16();
    if let Some(r) = inner.state().requests.iter_mut().rev().find(|r| r.seq == seq) {
        r.status = status;
    }
    resp
}

/// Where a resource path points.
struct Target {
    def: ResourceDef,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn resolve(st: &State, group: &str, version: &str, rest: &[&str]) -> Option<Target> {
    let find = |plural: &str| {
        st.resources.iter().find(|d| d.group == group && d.version == version && d.plural == plural).cloned()
    };
    if rest.len() >= 3
        && rest[0] == "namespaces"
        && let Some(def) = find(rest[2]).filter(|d| d.namespaced)
    {
        let tail = &rest[3..];
        if tail.len() > 2 {
            return None;
        }
        return Some(Target {
            def,
            namespace: Some(rest[1].to_owned()),
            name: tail.first().map(|s| (*s).to_owned()),
            sub: tail.get(1).map(|s| (*s).to_owned()),
        });
    }
    let def = find(rest.first()?)?;
    let tail = &rest[1..];
    if tail.len() > 2 || (def.namespaced && !tail.is_empty()) {
        return None;
    }
    Some(Target {
        def,
        namespace: None,
        name: tail.first().map(|s| (*s).to_owned()),
        sub: tail.get(1).map(|s| (*s).to_owned()),
    })
}

fn route(inner: &Arc<Inner>, method: &Method, path: &str, q: &Query, headers: &HeaderMap, body: &[u8]) -> Reply {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let aggregated = accept.contains("as=APIGroupDiscoveryList");
    let mut st = inner.state();
    let visible: Vec<ResourceDef> = st
        .resources
        .iter()
        .filter(|d| st.disabled.get(&(d.api_version(), d.kind.clone())) != Some(&404))
        .cloned()
        .collect();
    let discovery = |doc: Option<Value>| -> Reply {
        if method != Method::GET {
            return Err(method_not_allowed());
        }
        doc.map(|d| json_response(200, &d)).ok_or_else(no_such_path)
    };
    match segs.as_slice() {
        ["version"] => discovery(Some(json!({
            "major": "1", "minor": "32", "gitVersion": "v1.32.0-kube-fake", "gitCommit": "0000000",
            "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.4",
            "compiler": "gc", "platform": "linux/amd64",
        }))),
        ["healthz" | "livez" | "readyz"] => Ok(text_response(200, "ok".into())),
        ["api"] if aggregated && method == Method::GET => {
            Ok(json_response_typed(200, &resources::aggregated(&visible, true), resources::AGGREGATED_CONTENT_TYPE))
        }
        ["apis"] if aggregated && method == Method::GET => {
            Ok(json_response_typed(200, &resources::aggregated(&visible, false), resources::AGGREGATED_CONTENT_TYPE))
        }
        ["api"] => discovery(Some(resources::core_versions(inner.addr))),
        ["apis"] => discovery(Some(resources::group_list(&visible))),
        ["api", v] => discovery(resources::resource_list(&visible, "", v)),
        ["apis", g] => discovery(resources::group(&visible, g)),
        ["apis", g, v] => discovery(resources::resource_list(&visible, g, v)),
        ["api", v, rest @ ..] => {
            let target = resolve(&st, "", v, rest).ok_or_else(no_such_path)?;
            resource(inner, &mut st, target, method, q, headers, body)
        }
        ["apis", g, v, rest @ ..] => {
            let target = resolve(&st, g, v, rest).ok_or_else(no_such_path)?;
            resource(inner, &mut st, target, method, q, headers, body)
        }
        _ => Err(no_such_path()),
    }
}

fn verb(method: &Method, t: &Target, q: &Query) -> &'static str {
    match (method.as_str(), t.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if matches!(q.get("watch"), Some("true" | "1")) => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "get",
    }
}

fn disabled_error(def: &ResourceDef, t: &Target, status: u16, verb: &str) -> ApiError {
    match status {
        404 => no_such_path(),
        403 => {
            let scope = match &t.namespace {
                Some(ns) => format!("in the namespace \"{ns}\""),
                None => "at the cluster scope".to_owned(),
            };
            let what = match &t.name {
                Some(n) => format!("{} \"{}\"", def.qualified(), n),
                None => def.qualified(),
            };
            ApiError::new(
                403,
                format!(
                    "{what} is forbidden: User \"system:anonymous\" cannot {verb} resource \"{}\" in API group \"{}\" {scope}",
                    def.plural, def.group
                ),
            )
            .details(json!({"group": def.group, "kind": def.plural}))
        }
        other => ApiError::new(other, format!("{} is unavailable (disable_kind {other})", def.qualified())),
    }
}

fn resource(
    inner: &Arc<Inner>,
    st: &mut State,
    t: Target,
    method: &Method,
    q: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Reply {
    let def = t.def.clone();
    let verb = verb(method, &t, q);
    if let Some(&status) = st.disabled.get(&(def.api_version(), def.kind.clone())) {
        return Err(disabled_error(&def, &t, status, verb));
    }
    if let Some(sub) = &t.sub {
        if !def.has_sub(sub) {
            return Err(no_such_path());
        }
        if sub == "eviction"
            && let Some(&status) = st.disabled.get(&("policy/v1".to_owned(), "Eviction".to_owned()))
        {
            return Err(disabled_error(&def, &t, status, "create"));
        }
    }
    let ns = t.namespace.as_deref();
    let tx = &inner.tx;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    match (method.as_str(), t.name.as_deref(), t.sub.as_deref()) {
        ("GET", None, None) if verb == "watch" => watch(inner, st, &def, ns, q),
        ("GET", None, None) => list(st, &def, ns, q),
        ("GET", Some(name), None | Some("status")) => get(st, &def, ns, name),
        ("GET", Some(name), Some("log")) => logs(st, ns.unwrap_or(""), name, q),
        ("GET", Some(name), Some("pendingworkloads")) => pending_workloads(st, name),
        ("POST", None, None) if def.namespaced && ns.is_none() => Err(method_not_allowed()),
        ("POST", None, None) => create(st, tx, &def, ns, q, body),
        ("POST", Some(name), Some("eviction")) => evict(st, tx, ns.unwrap_or(""), name, body),
        ("PUT", Some(name), None | Some("status")) => replace(st, tx, &def, ns, name, t.sub.as_deref(), q, body),
        ("PATCH", Some(name), None | Some("status")) => {
            patch(st, tx, &def, ns, name, t.sub.as_deref(), q, content_type, body)
        }
        ("DELETE", Some(name), None) => delete(st, tx, &def, ns, name, q, body),
        ("DELETE", None, None) => delete_collection(st, tx, &def, ns, q, body),
        _ => Err(method_not_allowed()),
    }
}

fn obj_key(def: &ResourceDef, ns: Option<&str>, name: &str) -> Key {
    let (av, kind) = def.storage();
    (av, kind, if def.namespaced { ns.unwrap_or("").to_owned() } else { String::new() }, name.to_owned())
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded as JSON: {e}")))
}

fn selectors(def: &ResourceDef, q: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let mut fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    if def.is_events_v1() {
        fields = fields.map_paths(events_v1_field);
    }
    Ok((labels, fields))
}

fn dry_run(q: &Query) -> bool {
    q.get("dryRun") == Some("All")
}

// ----- list and get ------------------------------------------------------------------------------

fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    format!("{rv}\n{ns}\n{name}").bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(u64, String, String)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..token.len()).step_by(2).map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok()).collect();
    let text = String::from_utf8(bytes?).ok()?;
    let mut parts = text.splitn(3, '\n');
    let rv = parts.next()?.parse().ok()?;
    Some((rv, parts.next()?.to_owned(), parts.next()?.to_owned()))
}

fn list(st: &State, def: &ResourceDef, ns: Option<&str>, q: &Query) -> Reply {
    let (labels, fields) = selectors(def, q)?;
    let limit = match q.get("limit").filter(|s| !s.is_empty()) {
        Some(s) => s.parse::<usize>().map_err(|_| ApiError::bad_request(format!("invalid limit {s:?}")))?,
        None => 0,
    };
    let (snapshot_rv, after) = match q.get("continue").filter(|s| !s.is_empty()) {
        Some(token) => {
            let (rv, cns, cname) =
                decode_continue(token).ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
            if rv < st.compacted_rv {
                return Err(ApiError::new(
                    410,
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            (rv, Some((cns, cname)))
        }
        None => (st.rv, None),
    };
    let (av, kind) = def.storage();
    let mut matching: Vec<(&Key, Value)> = st
        .range(&av, &kind)
        .filter(|(k, _)| ns.is_none_or(|n| k.2 == n))
        .filter(|(k, _)| after.as_ref().is_none_or(|(cns, cname)| (&k.2, &k.3) > (cns, cname)))
        .map(|(k, o)| (k, to_wire(def, o, true)))
        .filter(|(_, w)| labels.matches(w) && fields.matches(w))
        .collect();
    let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
    if limit > 0 && matching.len() > limit {
        let remaining = matching.len() - limit;
        matching.truncate(limit);
        let last = matching.last().expect("a page").0;
        metadata["continue"] = json!(encode_continue(snapshot_rv, &last.2, &last.3));
        metadata["remainingItemCount"] = json!(remaining);
    }
    let items: Vec<Value> = matching
        .into_iter()
        .map(|(_, mut w)| {
            if def.builtin
                && let Some(m) = w.as_object_mut()
            {
                m.remove("apiVersion");
                m.remove("kind");
            }
            w
        })
        .collect();
    Ok(json_response(
        200,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": metadata, "items": items}),
    ))
}

fn get(st: &State, def: &ResourceDef, ns: Option<&str>, name: &str) -> Reply {
    let key = obj_key(def, ns, name);
    let obj = st.objects.get(&key).ok_or_else(|| not_found(def, name))?;
    Ok(json_response(200, &to_wire(def, obj, true)))
}

/// Kueue's visibility API: the ClusterQueue's pending (not admitted) Workloads, reached
/// through the LocalQueues that point at it, highest priority first, then oldest, as Kueue
/// orders its heap; positions 0-based.
fn pending_workloads(st: &State, cluster_queue: &str) -> Reply {
    let local_queues: Vec<(String, String)> = st
        .all_of("kueue.x-k8s.io/v1beta2", "LocalQueue")
        .iter()
        .filter(|lq| str_at(lq, "/spec/clusterQueue") == cluster_queue)
        .map(|lq| (str_at(lq, "/metadata/namespace"), str_at(lq, "/metadata/name")))
        .collect();
    let admitted = |w: &Value| {
        w.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| str_at(c, "/type") == "Admitted" && str_at(c, "/status") == "True"))
    };
    let mut pending: Vec<Value> = st
        .all_of("kueue.x-k8s.io/v1beta2", "Workload")
        .into_iter()
        .filter(|w| !admitted(w))
        .filter(|w| local_queues.contains(&(str_at(w, "/metadata/namespace"), str_at(w, "/spec/queueName"))))
        .collect();
    let priority = |w: &Value| w.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0);
    pending.sort_by(|a, b| {
        priority(b)
            .cmp(&priority(a))
            .then_with(|| str_at(a, "/metadata/creationTimestamp").cmp(&str_at(b, "/metadata/creationTimestamp")))
            .then_with(|| str_at(a, "/metadata/name").cmp(&str_at(b, "/metadata/name")))
    });
    let mut in_local: std::collections::HashMap<(String, String), u64> = std::collections::HashMap::new();
    let items: Vec<Value> = pending
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let key = (str_at(w, "/metadata/namespace"), str_at(w, "/spec/queueName"));
            let at = in_local.entry(key.clone()).or_insert(0);
            let item = json!({
                "metadata": {"name": str_at(w, "/metadata/name"), "namespace": key.0,
                    "creationTimestamp": str_at(w, "/metadata/creationTimestamp"),
                    "ownerReferences": w.pointer("/metadata/ownerReferences").cloned().unwrap_or(Value::Null)},
                "priority": priority(w),
                "localQueueName": key.1,
                "positionInClusterQueue": i,
                "positionInLocalQueue": *at,
            });
            *at += 1;
            item
        })
        .collect();
    Ok(json_response(
        200,
        &json!({"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta1",
            "metadata": {"name": cluster_queue}, "items": items}),
    ))
}

fn logs(st: &State, ns: &str, name: &str, q: &Query) -> Reply {
    let key: Key = ("v1".into(), "Pod".into(), ns.to_owned(), name.to_owned());
    let pod = st.objects.get(&key).ok_or_else(|| {
        ApiError::new(404, format!("pods \"{name}\" not found")).details(json!({"name": name, "kind": "pods"}))
    })?;
    let names = |field: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(|c| str_at(c, "/name")).collect())
            .unwrap_or_default()
    };
    let containers = names("containers");
    let container = match q.get("container").filter(|s| !s.is_empty()) {
        Some(c) => c.to_owned(),
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    if !containers.contains(&container) && !names("initContainers").contains(&container) {
        return Err(ApiError::bad_request(format!("container {container} is not valid for pod {name}")));
    }
    let text = st
        .logs
        .get(&(ns.to_owned(), name.to_owned(), container.clone()))
        .or_else(|| st.logs.get(&(ns.to_owned(), name.to_owned(), String::new())))
        .cloned()
        .unwrap_or_default();
    let text = match q.get("tailLines").and_then(|s| s.parse::<usize>().ok()) {
        Some(n) => {
            let lines: Vec<&str> = text.lines().collect();
            let mut tail = lines[lines.len().saturating_sub(n)..].join("\n");
            if !tail.is_empty() {
                tail.push('\n');
            }
            tail
        }
        None => text,
    };
    Ok(text_response(200, text))
}

// ----- writes ------------------------------------------------------------------------------------

fn check_type(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let av = str_at(obj, "/apiVersion");
    let kind = str_at(obj, "/kind");
    if !av.is_empty() && av != def.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            def.api_version()
        )));
    }
    if !kind.is_empty() && kind != def.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            def.kind
        )));
    }
    Ok(())
}

/// The client's object in the stored shape, with the stored apiVersion/kind.
fn incoming(def: &ResourceDef, mut obj: Value) -> Result<Value, ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request("the body of the request must be a JSON object"));
    }
    check_type(def, &obj)?;
    obj["apiVersion"] = json!(def.api_version());
    obj["kind"] = json!(def.kind);
    let mut obj = from_wire(def, obj);
    let (av, kind) = def.storage();
    obj["apiVersion"] = json!(av);
    obj["kind"] = json!(kind);
    Ok(obj)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn create(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    ns: Option<&str>,
    q: &Query,
    body: &[u8],
) -> Reply {
    let mut obj = incoming(def, parse_body(body)?)?;
    let body_ns = str_at(&obj, "/metadata/namespace");
    if def.namespaced && !body_ns.is_empty() && Some(body_ns.as_str()) != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let mut name = str_at(&obj, "/metadata/name");
    if name.is_empty() {
        let prefix = str_at(&obj, "/metadata/generateName");
        if prefix.is_empty() {
            return Err(ApiError::new(
                422,
                format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    def.kind
                ),
            ));
        }
        loop {
            name = format!("{prefix}{}", st.name_suffix());
            if !st.objects.contains_key(&obj_key(def, ns, &name)) {
                break;
            }
        }
    }
    if !valid_name(&name) {
        return Err(ApiError::new(
            422,
            format!(
                "{} \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                def.kind
            ),
        ));
    }
    if st.objects.contains_key(&obj_key(def, ns, &name)) {
        return Err(ApiError::new(409, format!("{} \"{name}\" already exists", def.qualified()))
            .reason("AlreadyExists")
            .details(json!({"name": name, "group": def.group, "kind": def.plural})));
    }
    {
        let meta = meta_mut(&mut obj);
        meta.insert("name".into(), json!(name));
        for server_owned in
            ["resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation", "managedFields"]
        {
            meta.remove(server_owned);
        }
    }
    if def.group.is_empty() && def.kind == "Pod" && obj.get("status").is_none_or(Value::is_null) {
        obj["status"] = json!({"phase": "Pending"});
    }
    st.stamp_new(def, &mut obj, ns);
    if dry_run(q) {
        return Ok(json_response(201, &to_wire(def, &obj, true)));
    }
    let stored = st.commit(tx, obj);
    Ok(json_response(201, &to_wire(def, &stored, true)))
}

fn same_ignoring_rv(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        v
    };
    strip(a) == strip(b)
}

/// Applies what the server owns to an update (`new` replaces `old`) and stores it; a no-op
/// update is not stored (no new resourceVersion, no event).
fn store_update(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    sub: Option<&str>,
    old: &Value,
    mut new: Value,
    dry: bool,
) -> Value {
    if sub == Some("status") {
        let mut merged = old.clone();
        match new.get("status") {
            Some(s) => merged["status"] = s.clone(),
            None => {
                merged.as_object_mut().map(|m| m.remove("status"));
            }
        }
        new = merged;
    } else if def.has_sub("status") {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                new.as_object_mut().map(|m| m.remove("status"));
            }
        }
    }
    new["apiVersion"] = old["apiVersion"].clone();
    new["kind"] = old["kind"].clone();
    {
        let meta = meta_mut(&mut new);
        for owned in
            ["name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"]
        {
            match old.pointer(&format!("/metadata/{owned}")) {
                Some(v) => meta.insert(owned.into(), v.clone()),
                None => meta.remove(owned),
            };
        }
        let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        let bumped = if old.get("spec") != new.get("spec") { generation + 1 } else { generation };
        meta_mut(&mut new).insert("generation".into(), json!(bumped));
    }
    if same_ignoring_rv(old, &new) || dry {
        return if dry { new } else { old.clone() };
    }
    st.commit(tx, new)
}

fn conflict(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::new(
        409,
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            def.qualified()
        ),
    )
    .details(json!({"name": name, "group": def.group, "kind": def.plural}))
}

#[allow(clippy::too_many_arguments)]
fn replace(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    q: &Query,
    body: &[u8],
) -> Reply {
    let new = incoming(def, parse_body(body)?)?;
    let body_name = str_at(&new, "/metadata/name");
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let key = obj_key(def, ns, name);
    let old = st.objects.get(&key).cloned().ok_or_else(|| not_found(def, name))?;
    let body_rv = str_at(&new, "/metadata/resourceVersion");
    if !body_rv.is_empty() && body_rv != str_at(&old, "/metadata/resourceVersion") {
        return Err(conflict(def, name));
    }
    let stored = store_update(st, tx, def, sub, &old, new, dry_run(q));
    Ok(json_response(200, &to_wire(def, &stored, true)))
}

#[allow(clippy::too_many_arguments)]
fn patch(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    q: &Query,
    content_type: &str,
    body: &[u8],
) -> Reply {
    let media = content_type.split(';').next().unwrap_or("").trim();
    let doc = parse_body(body)?;
    let key = obj_key(def, ns, name);
    let apply = media == "application/apply-patch+yaml";
    if apply && q.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let Some(old) = st.objects.get(&key).cloned() else {
        if apply {
            let mut obj = doc.clone();
            if str_at(&obj, "/metadata/name").is_empty() {
                meta_mut(&mut obj).insert("name".into(), json!(name));
            }
            let body = serde_json::to_vec(&obj).expect("serialize");
            return create(st, tx, def, ns, q, &body);
        }
        return Err(not_found(def, name));
    };
    let mut new = to_wire(def, &old, true);
    match media {
        "application/merge-patch+json" => merge_patch(&mut new, &doc),
        "application/strategic-merge-patch+json" if !def.builtin => {
            return Err(ApiError::new(
                415,
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        "application/strategic-merge-patch+json" => strategic_merge(&mut new, &doc),
        "application/json-patch+json" => json_patch(&mut new, &doc).map_err(|e| ApiError::new(422, e))?,
        "application/apply-patch+yaml" => {
            check_type(def, &doc)?;
            merge_patch(&mut new, &doc);
        }
        other => {
            return Err(ApiError::new(
                415,
                format!(
                    "the body of the request was in an unknown format ({other:?}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
                ),
            ));
        }
    }
    let patch_rv = doc.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
    if !patch_rv.is_empty() && patch_rv != str_at(&old, "/metadata/resourceVersion") {
        return Err(conflict(def, name));
    }
    let new = incoming(def, new)?;
    let stored = store_update(st, tx, def, sub, &old, new, dry_run(q));
    Ok(json_response(200, &to_wire(def, &stored, true)))
}

/// DeleteOptions from the body (JSON) and the query.
fn delete_options(def: &ResourceDef, q: &Query, body: &[u8]) -> Result<(Value, String), ApiError> {
    let opts = if body.iter().all(u8::is_ascii_whitespace) { json!({}) } else { parse_body(body)? };
    let policy = opts
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or_else(|| q.get("propagationPolicy"))
        .map(str::to_owned)
        .or_else(|| {
            let orphan = opts
                .get("orphanDependents")
                .and_then(Value::as_bool)
                .or_else(|| q.get("orphanDependents").map(|v| v == "true"));
            orphan.map(|o| if o { "Orphan".to_owned() } else { "Background".to_owned() })
        })
        .unwrap_or_else(|| default_propagation(def).to_owned());
    if !matches!(policy.as_str(), "Background" | "Foreground" | "Orphan") {
        return Err(ApiError::bad_request(format!("invalid propagationPolicy {policy:?}")));
    }
    Ok((opts, policy))
}

fn delete(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    q: &Query,
    body: &[u8],
) -> Reply {
    let (opts, policy) = delete_options(def, q, body)?;
    let key = obj_key(def, ns, name);
    let obj = st.objects.get(&key).cloned().ok_or_else(|| not_found(def, name))?;
    let uid = str_at(&obj, "/metadata/uid");
    if let Some(want) = opts.pointer("/preconditions/uid").and_then(Value::as_str)
        && want != uid
    {
        return Err(ApiError::new(
            409,
            format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(want) = opts.pointer("/preconditions/resourceVersion").and_then(Value::as_str)
        && want != str_at(&obj, "/metadata/resourceVersion")
    {
        return Err(ApiError::new(
            409,
            format!(
                "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}",
                str_at(&obj, "/metadata/resourceVersion")
            ),
        ));
    }
    let dry = dry_run(q) || opts.get("dryRun").and_then(Value::as_array).is_some_and(|d| d.iter().any(|v| v == "All"));
    let result = if dry { Some(obj.clone()) } else { st.delete_cascading(tx, &key, &policy) };
    let result = result.unwrap_or(obj);
    let still_there = st.objects.contains_key(&key);
    if def.group.is_empty() && def.kind == "Pod" {
        let mut pod = to_wire(def, &result, true);
        let grace = opts.get("gracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
        meta_mut(&mut pod).entry("deletionTimestamp").or_insert_with(|| json!(now_rfc3339()));
        meta_mut(&mut pod).insert("deletionGracePeriodSeconds".into(), json!(grace));
        return Ok(json_response(200, &pod));
    }
    if still_there {
        return Ok(json_response(200, &to_wire(def, &result, true)));
    }
    Ok(json_response(
        200,
        &success_status(200, Some(json!({"name": name, "group": def.group, "kind": def.plural, "uid": uid}))),
    ))
}

fn delete_collection(
    st: &mut State,
    tx: &broadcast::Sender<WatchMsg>,
    def: &ResourceDef,
    ns: Option<&str>,
    q: &Query,
    body: &[u8],
) -> Reply {
    let (_, policy) = delete_options(def, q, body)?;
    let (labels, fields) = selectors(def, q)?;
    let (av, kind) = def.storage();
    let keys: Vec<Key> = st
        .range(&av, &kind)
        .filter(|(k, _)| ns.is_none_or(|n| k.2 == n))
        .filter(|(_, o)| {
            let w = to_wire(def, o, true);
            labels.matches(&w) && fields.matches(&w)
        })
        .map(|(k, _)| k.clone())
        .collect();
    let mut items = Vec::new();
    for key in keys {
        if dry_run(q) {
            items.extend(st.objects.get(&key).map(|o| to_wire(def, o, false)));
        } else if let Some(o) = st.delete_cascading(tx, &key, &policy) {
            items.push(to_wire(def, &o, false));
        }
    }
    Ok(json_response(
        200,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
    ))
}

fn too_many_requests(cause: String) -> ApiError {
    ApiError::new(429, "Cannot evict pod as it would violate the pod's disruption budget.")
        .details(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]}))
}

fn evict(st: &mut State, tx: &broadcast::Sender<WatchMsg>, ns: &str, name: &str, body: &[u8]) -> Reply {
    let key: Key = ("v1".into(), "Pod".into(), ns.to_owned(), name.to_owned());
    let pod = st.objects.get(&key).cloned().ok_or_else(|| {
        ApiError::new(404, format!("pods \"{name}\" not found")).details(json!({"name": name, "kind": "pods"}))
    })?;
    // Lenient: kube sends `delete_options` in snake_case and no apiVersion/kind.
    let body: Value = serde_json::from_slice(body).unwrap_or_else(|_| json!({}));
    let opts = body.get("deleteOptions").or_else(|| body.get("delete_options")).cloned().unwrap_or(Value::Null);
    let dry = opts.get("dryRun").and_then(Value::as_array).is_some_and(|d| d.iter().any(|v| v == "All"));

    let pod_key = (ns.to_owned(), name.to_owned());
    if let Some(times) = st.blocked_evictions.get_mut(&pod_key) {
        if let Some(n) = times {
            *n -= 1;
            if *n == 0 {
                st.blocked_evictions.remove(&pod_key);
            }
        }
        return Err(too_many_requests(format!(
            "The disruption budget {name}-pdb needs 1 healthy pods and has 1 currently"
        )));
    }
    let phase = str_at(&pod, "/status/phase");
    let terminal = phase == "Succeeded" || phase == "Failed";
    let mut allowed_pdbs = Vec::new();
    if !terminal {
        for (k, pdb) in st.range("policy/v1", "PodDisruptionBudget") {
            if k.2 != ns {
                continue;
            }
            let Some(sel) = pdb.pointer("/spec/selector") else { continue };
            if !LabelSelector::from_object(sel).matches(&pod) {
                continue;
            }
            let pdb_name = &k.3;
            match pdb.pointer("/status/disruptionsAllowed").and_then(Value::as_i64) {
                None => {
                    return Err(too_many_requests(format!(
                        "The disruption budget {pdb_name} is still being processed by the server."
                    )));
                }
                Some(n) if n <= 0 => {
                    let desired = pdb.pointer("/status/desiredHealthy").and_then(Value::as_i64).unwrap_or(0);
                    let current = pdb.pointer("/status/currentHealthy").and_then(Value::as_i64).unwrap_or(0);
                    return Err(too_many_requests(format!(
                        "The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"
                    )));
                }
                Some(_) => allowed_pdbs.push(k.clone()),
            }
        }
    }
    if !dry {
        for k in allowed_pdbs {
            let mut pdb = st.objects[&k].clone();
            let n = pdb.pointer("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(1);
            pdb["status"]["disruptionsAllowed"] = json!(n - 1);
            st.commit(tx, pdb);
        }
        st.delete_cascading(tx, &key, "Background");
    }
    Ok(json_response(201, &success_status(201, None)))
}

// ----- watch -------------------------------------------------------------------------------------

struct WatchFilter {
    def: ResourceDef,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

/// One watch event line, `{"type":…,"object":…}` in that order, as a real server writes it.
fn line(ty: &str, object: &Value) -> Bytes {
    let object = serde_json::to_string(object).expect("serialize event object");
    Bytes::from(format!("{{\"type\":\"{ty}\",\"object\":{object}}}\n"))
}

impl WatchFilter {
    fn wire_if_matches(&self, obj: &Value) -> Option<Value> {
        if let Some(ns) = &self.namespace
            && str_at(obj, "/metadata/namespace") != *ns
        {
            return None;
        }
        let wire = to_wire(&self.def, obj, true);
        (self.labels.matches(&wire) && self.fields.matches(&wire)).then_some(wire)
    }

    /// The event line a watcher with this filter gets for a change, if any. An object that
    /// moves into the selection is ADDED, one that moves out DELETED.
    fn event_line(&self, c: &Change) -> Option<Bytes> {
        let (av, kind) = self.def.storage();
        if c.api_version != av || c.kind != kind {
            return None;
        }
        let now = self.wire_if_matches(&c.object);
        let ty = match c.ty {
            ChangeType::Added => now.is_some().then_some("ADDED"),
            ChangeType::Deleted => now.is_some().then_some("DELETED"),
            ChangeType::Modified => {
                let before = c.previous.as_ref().and_then(|p| self.wire_if_matches(p)).is_some();
                match (before, now.is_some()) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
        }?;
        let obj = now.unwrap_or_else(|| to_wire(&self.def, &c.object, true));
        Some(line(ty, &obj))
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line("BOOKMARK", &json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": meta}))
    }
}

fn error_line(code: u16, message: &str) -> Bytes {
    line("ERROR", &status_json(code, reason_for(code), message, None))
}

/// Decrements the open-watch count when a stream ends.
struct OpenWatch(Arc<Inner>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.state().open_watches -= 1;
    }
}

fn watch(inner: &Arc<Inner>, st: &mut State, def: &ResourceDef, ns: Option<&str>, q: &Query) -> Reply {
    let (labels, fields) = selectors(def, q)?;
    let filter = WatchFilter { def: def.clone(), namespace: ns.map(str::to_owned), labels, fields };
    let bookmarks = q.get("allowWatchBookmarks") == Some("true");
    let send_initial = q.get("sendInitialEvents") == Some("true");
    if send_initial && !bookmarks {
        return Err(ApiError::new(422, "sendInitialEvents is forbidden for watch unless allowWatchBookmarks=true"));
    }
    let timeout =
        q.get("timeoutSeconds").and_then(|s| s.parse::<u64>().ok()).filter(|&t| t > 0).map(Duration::from_secs);
    let rv_param = q.get("resourceVersion").unwrap_or("");
    let (av, kind) = def.storage();
    let current = |st: &State| -> Vec<Bytes> {
        st.range(&av, &kind).filter_map(|(_, o)| filter.wire_if_matches(o)).map(|w| line("ADDED", &w)).collect()
    };
    let mut initial = Vec::new();
    let mut live = true;
    if send_initial {
        initial = current(st);
        initial.push(filter.bookmark(st.rv, true));
    } else if rv_param.is_empty() || rv_param == "0" {
        initial = current(st);
    } else {
        let from: u64 = rv_param
            .parse()
            .map_err(|_| ApiError::bad_request(format!("resourceVersion: Invalid value: {rv_param:?}")))?;
        if from < st.compacted_rv {
            initial.push(error_line(410, &format!("too old resource version: {from} ({})", st.compacted_rv)));
            live = false;
        } else {
            initial.extend(st.history.iter().filter(|c| c.rv > from).filter_map(|c| filter.event_line(c)));
        }
    }
    // Subscribed while the state is locked: nothing is missed, nothing comes twice.
    let rx = live.then(|| inner.tx.subscribe());
    let guard = live.then(|| {
        st.open_watches += 1;
        OpenWatch(inner.clone())
    });
    let start_rv = st.rv;
    let period = st.bookmark_interval.max(Duration::from_millis(10));
    let (out, out_rx) = mpsc::channel::<Result<Bytes, io::Error>>(256);
    tokio::spawn(async move {
        let _guard = guard;
        for l in initial {
            if out.send(Ok(l)).await.is_err() {
                return;
            }
        }
        let Some(mut rx) = rx else { return };
        let mut last_rv = start_rv;
        let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let sleep = tokio::time::sleep_until(deadline.unwrap_or(far));
        tokio::pin!(sleep);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = out.closed() => return,
                msg = rx.recv() => match msg {
                    Ok(WatchMsg::Change(c)) => {
                        last_rv = last_rv.max(c.rv);
                        if let Some(l) = filter.event_line(&c)
                            && out.send(Ok(l)).await.is_err()
                        {
                            return;
                        }
                    }
                    Ok(WatchMsg::Drop) => {
                        let _ = out
                            .send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, "kube_fake: watch dropped (drop_watches)")))
                            .await;
                        return;
                    }
                    Ok(WatchMsg::Expire { rv }) => {
                        let _ = out.send(Ok(error_line(410, &format!("too old resource version: {last_rv} ({rv})")))).await;
                        return;
                    }
                    Err(_) => return,
                },
                _ = tick.tick(), if bookmarks => {
                    if out.send(Ok(filter.bookmark(last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = &mut sleep, if deadline.is_some() => {
                    if bookmarks {
                        let _ = out.send(Ok(filter.bookmark(last_rv, false))).await;
                    }
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(out_rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Ok(Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .expect("watch response"))
}
