//! What every backend that speaks HTTP to an API server shares (SkyPilot, dstack, later the
//! hub's REST side): one client builder (rustls with the ring provider the Kubernetes client
//! already uses, a whole-request timeout), bearer tokens that never print, JSON calls whose
//! answers are bounded in size, and one mapping from HTTP failures to [`BackendError`] in
//! the words the cockpit shows (`cluster dstack-main: authentication failed (403)`).
//!
//! Tokens come from the environment or an owner-only file, never from config text
//! ([`TokenSource`]); a [`Secret`] redacts itself in `Debug` and `Display`, so it cannot leak
//! into a log line, an error, the audit log or `doctor` by accident.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::BackendError;
use crate::safe_text;

/// The most bytes one answer may have. A listing of 5,000 runs is a few MiB; anything past
/// this is a broken or hostile server, refused rather than buffered.
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// The longest server message kept in an error (the rest is cut with `…`).
const MAX_MESSAGE_CHARS: usize = 500;

/// A credential. Prints as `<redacted>`; [`Secret::expose`] is the one way to the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The token itself, for an `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where a cluster's bearer token is read from: `token_env = "NAME"` or
/// `token_file = "PATH"` in its config section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(PathBuf),
    /// A token already read from a tool's own config file (the dstack CLI's
    /// `~/.dstack/config.yml`, for an embedded default); `from` names that file in messages.
    Given {
        secret: Secret,
        from: String,
    },
}

impl TokenSource {
    /// The source the two config keys name: at most one of them, never both. The message
    /// is what the config error shows beside the file and line.
    pub fn from_keys(token_env: Option<String>, token_file: Option<PathBuf>) -> Result<Option<Self>, String> {
        match (token_env, token_file) {
            (Some(_), Some(_)) => Err("give `token_env` or `token_file`, not both".into()),
            (Some(name), None) if name.is_empty() || name.contains(['=', '\0']) => {
                Err(format!("`token_env` must name an environment variable, not {name:?}"))
            }
            (Some(name), None) => Ok(Some(TokenSource::Env(name))),
            (None, Some(path)) => Ok(Some(TokenSource::File(path))),
            (None, None) => Ok(None),
        }
    }

    /// Read the token now (each refresh may call this: a rotated token takes effect without a
    /// restart). The message names the variable or file and what is wrong, never the token.
    pub fn read(&self) -> Result<Secret, String> {
        let text = match self {
            TokenSource::Env(name) => match std::env::var(name) {
                Ok(value) => value,
                Err(std::env::VarError::NotPresent) => return Err(format!("environment variable {name} is not set")),
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(format!("environment variable {name} is not valid UTF-8"));
                }
            },
            TokenSource::File(path) => read_private_file(path)?,
            TokenSource::Given { secret, .. } => secret.expose().to_string(),
        };
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("{} is empty", self.describe()));
        }
        if token.chars().any(|c| c.is_control()) {
            return Err(format!("{} holds control characters", self.describe()));
        }
        Ok(Secret::new(token))
    }

    /// `environment variable DSTACK_TOKEN`, `token file ~/.dstack/token`: for messages.
    pub fn describe(&self) -> String {
        match self {
            TokenSource::Env(name) => format!("environment variable {name}"),
            TokenSource::File(path) => format!("token file {}", path.display()),
            TokenSource::Given { from, .. } => format!("the token of {from}"),
        }
    }
}

/// A token file's text, if only its owner (this user) can read it.
fn read_private_file(path: &Path) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read token file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("token file {shown} is not a regular file"));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("token file {shown} belongs to uid {}, not to you (uid {me})", meta.uid()));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!("token file {shown} can be read by others (mode {mode:03o}); run chmod 600 on it"));
    }
    if meta.len() > 64 << 10 {
        return Err(format!("token file {shown} is {} bytes; a token is far shorter", meta.len()));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read token file {shown}: {e}"))
}

/// An HTTP client for one cluster: rustls with the ring provider, the system's roots plus
/// `ca_file` when given, every request bounded by `timeout` (connect included).
pub fn client(timeout: Duration, ca_file: Option<&Path>) -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    // A machine without a system store can still talk to loopback servers over plain HTTP
    // or to a server whose CA is given; errors in single certificates are skipped.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read CA file {}: {e}", path.display()))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("CA file {}: {e}", path.display()))?;
            roots.add(cert).map_err(|e| format!("CA file {}: {e}", path.display()))?;
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(timeout)
        .connect_timeout(timeout)
        // Below the keep-alive of the servers behind these APIs (uvicorn closes an idle
        // connection after 5 s): a pooled connection the server has already closed would
        // fail the next POST with "connection closed before message completed".
        .pool_idle_timeout(Duration::from_secs(4))
        .user_agent(concat!("flightdeck/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("HTTP client setup: {e}"))
}

/// One API server as a cluster sees it: where it is, the token to send, and the cluster's
/// name for messages.
#[derive(Debug, Clone)]
pub struct Api {
    pub cluster: String,
    /// `http://127.0.0.1:3000`, without a trailing `/`.
    pub base: String,
    pub client: reqwest::Client,
    pub token: Option<TokenSource>,
    /// The bound the client was built with, for timeout messages.
    pub timeout: Duration,
}

/// An answer: status, headers and a bounded body.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Api {
    pub fn new(
        cluster: impl Into<String>,
        base: &str,
        timeout: Duration,
        token: Option<TokenSource>,
    ) -> Result<Self, String> {
        Ok(Self {
            cluster: cluster.into(),
            base: base.trim_end_matches('/').to_string(),
            client: client(timeout, None)?,
            token,
            timeout,
        })
    }

    /// `POST path` with a JSON body, decoded as `T`; a non-2xx status is an error.
    pub async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, BackendError> {
        let reply = self.send(Method::POST, path, Some(body)).await?;
        self.decode(&format!("POST {path}"), reply)
    }

    /// `GET path` (the query in `path`), decoded as `T`; a non-2xx status is an error.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, BackendError> {
        let reply = self.send::<()>(Method::GET, path, None).await?;
        self.decode(&format!("GET {path}"), reply)
    }

    /// Decode a successful reply, or turn a failed one into the error [`status_error`] says.
    pub fn decode<T: DeserializeOwned>(&self, request: &str, reply: Reply) -> Result<T, BackendError> {
        if !reply.status.is_success() {
            return Err(status_error(&self.cluster, request, reply.status, &reply.body));
        }
        serde_json::from_slice(&reply.body)
            .map_err(|e| BackendError::Parse { what: request.to_string(), message: e.to_string() })
    }

    /// Send one request with the bearer token (read afresh) and read at most
    /// [`MAX_BODY_BYTES`] of its answer, whatever the status.
    pub async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Reply, BackendError> {
        let what = format!("{method} {path}");
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(source) = &self.token {
            let token = source
                .read()
                .map_err(|message| BackendError::Auth { cluster: self.cluster.clone(), detail: message })?;
            request = request.bearer_auth(token.expose());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.transport_error(&what, &e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.transport_error(&what, &e))?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(BackendError::Parse {
                    what,
                    message: format!("the answer is larger than {} MiB", MAX_BODY_BYTES >> 20),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Reply { status, headers, body })
    }

    fn transport_error(&self, what: &str, err: &reqwest::Error) -> BackendError {
        if err.is_timeout() {
            return BackendError::Timeout { what: what.to_string(), secs: self.timeout.as_secs().max(1) };
        }
        // reqwest's text names the URL (never a header, so never the token) and the cause.
        let mut message = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        BackendError::Connect { target: self.base.clone(), message }
    }
}

/// The error for a failed HTTP answer: 401 and 403 are authentication failures naming the
/// cluster; 404 is "not found" with the server's words; anything else carries the status and
/// the server's message ([`server_message`]).
pub fn status_error(cluster: &str, request: &str, status: StatusCode, body: &[u8]) -> BackendError {
    let message = server_message(body);
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            BackendError::Auth { cluster: cluster.to_string(), detail: format!("{}", status.as_u16()) }
        }
        StatusCode::NOT_FOUND => BackendError::NotFound(if message.is_empty() {
            format!("`{request}`: not found (404)")
        } else {
            format!("`{request}`: {message}")
        }),
        _ => BackendError::Http { request: request.to_string(), status: status.as_u16(), message },
    }
}

/// What a server says went wrong, from the JSON error shapes API servers use:
/// `{"detail": "text"}`, `{"detail": [{"msg": "…", "code": "…"}]}` (FastAPI, dstack),
/// `{"error": {"message": "…"}}`, `{"message": "…"}`; else the body's text. ANSI colour codes
/// stripped, control characters neutralised, cut to a readable length.
pub fn server_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => message_of(&value).unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    clean_message(&text)
}

fn message_of(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(message_of).collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        }
        Value::Object(map) => {
            ["detail", "msg", "message", "error"].iter().find_map(|key| map.get(*key).and_then(message_of))
        }
        _ => None,
    }
}

/// A server's message made fit for one line of a terminal: ANSI escapes removed, other
/// control and bidi characters neutralised, whitespace runs collapsed, length capped.
pub fn clean_message(text: &str) -> String {
    let stripped = strip_ansi(text);
    // Line breaks and tabs first become single spaces; what control is left is neutralised.
    let words: Vec<&str> = stripped.split_whitespace().collect();
    let mut out = safe_text::printable(&words.join(" ")).into_owned();
    if out.chars().count() > MAX_MESSAGE_CHARS {
        out = out.chars().take(MAX_MESSAGE_CHARS).collect();
        out.push('…');
    }
    out
}

/// `text` without ANSI escape sequences (colours, cursor moves), as servers that format for
/// a terminal (SkyPilot) send them.
pub fn strip_ansi(text: &str) -> String {
    String::from_utf8_lossy(&strip_ansi_escapes::strip(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s} {s:?}"), "<redacted> <redacted>");
        assert_eq!(s.expose(), "hunter2");
        let api_debug = format!("{:?}", TokenSource::Env("X".into()));
        assert!(!api_debug.contains("hunter2"));
        let given = TokenSource::Given { secret: s.clone(), from: "~/.dstack/config.yml".into() };
        assert!(!format!("{given:?} {}", given.describe()).contains("hunter2"));
        assert_eq!(given.read().unwrap().expose(), "hunter2");
    }

    #[test]
    fn token_keys_are_one_or_none() {
        assert_eq!(TokenSource::from_keys(None, None), Ok(None));
        assert!(TokenSource::from_keys(Some("A".into()), Some("/f".into())).unwrap_err().contains("not both"));
        assert!(TokenSource::from_keys(Some("A=B".into()), None).is_err());
        assert_eq!(TokenSource::from_keys(Some("A".into()), None), Ok(Some(TokenSource::Env("A".into()))));
    }

    #[test]
    fn token_from_the_environment_names_the_variable_when_missing() {
        let missing = TokenSource::Env("FLIGHTDECK_TEST_SURELY_UNSET_TOKEN".into());
        assert_eq!(missing.read().unwrap_err(), "environment variable FLIGHTDECK_TEST_SURELY_UNSET_TOKEN is not set");
    }

    #[test]
    fn token_files_must_be_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let source = TokenSource::File(path.clone());
        let err = source.read().unwrap_err();
        assert!(err.contains("can be read by others (mode 644)"), "{err}");
        assert!(!err.contains("s3cret"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(source.read().unwrap().expose(), "s3cret");
        std::fs::write(&path, "  \n").unwrap();
        assert!(source.read().unwrap_err().ends_with("is empty"));
    }

    #[test]
    fn server_messages_from_every_shape() {
        assert_eq!(server_message(br#"{"detail":"Project not found"}"#), "Project not found");
        assert_eq!(
            server_message(br#"{"detail":[{"msg":"Run is active","code":"error"},{"msg":"second"}]}"#),
            "Run is active; second"
        );
        assert_eq!(server_message(br#"{"error":{"code":"x","message":"no capacity"}}"#), "no capacity");
        assert_eq!(server_message(b"\x1b[31mCloud access\x1b[0m is\n not set up"), "Cloud access is not set up");
        assert_eq!(server_message(b"evil\xe2\x80\xaeright"), "evil\u{FFFD}right");
        assert!(server_message(&vec![b'a'; 5000]).ends_with('…'));
    }

    #[test]
    fn statuses_become_errors_in_the_cockpit_words() {
        let auth = status_error("dstack-main", "POST /api/runs/list", StatusCode::FORBIDDEN, b"{}");
        assert_eq!(auth.to_string(), "cluster dstack-main: authentication failed (403)");
        let bad = status_error(
            "d",
            "POST /api/project/main/runs/delete",
            StatusCode::BAD_REQUEST,
            br#"{"detail":[{"msg":"Cannot delete active runs"}]}"#,
        );
        assert_eq!(
            bad.to_string(),
            "`POST /api/project/main/runs/delete` failed (HTTP 400): Cannot delete active runs"
        );
        let missing = status_error(
            "d",
            "POST /api/project/x/runs/get",
            StatusCode::NOT_FOUND,
            br#"{"detail":"Project not found"}"#,
        );
        assert_eq!(missing.to_string(), "`POST /api/project/x/runs/get`: Project not found");
    }

    #[tokio::test]
    async fn answers_are_bounded_and_timeouts_named() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // A server that accepts and never answers.
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(b"").await;
                held.push(sock);
            }
        });
        let api = Api::new("slow", &format!("http://{addr}/"), Duration::from_millis(300), None).unwrap();
        let started = std::time::Instant::now();
        let err = api.get::<serde_json::Value>("/api/health").await.unwrap_err();
        assert!(matches!(err, BackendError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(api.base, format!("http://{addr}"));
    }
}
