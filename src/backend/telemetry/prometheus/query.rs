//! The HTTP side: `GET /api/v1/query?query=…` with the bearer token read afresh, the answer
//! bounded in size, every request counted. Errors name the endpoint without the query
//! (hundreds of characters of metric names would bury the reason) and never the token.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};

use crate::backend::BackendError;
use crate::backend::http::{MAX_BODY_BYTES, TokenSource, client};

/// One Prometheus, as a cluster reaches it (`Debug` shows no token: [`TokenSource`] names
/// only where it is read from).
#[derive(Debug)]
pub(super) struct Endpoint {
    cluster: String,
    /// As configured (without a trailing `/`), for messages.
    base: String,
    /// `base` + `/api/v1/query`.
    query_url: Url,
    client: reqwest::Client,
    token: Option<TokenSource>,
    timeout: Duration,
    sent: AtomicU64,
}

/// An answer: its status and bounded body.
pub(super) struct Reply {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl Endpoint {
    /// The message says what is wrong with `url` or the CA file.
    pub(super) fn new(
        cluster: &str,
        url: &str,
        token: Option<TokenSource>,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let base = url.trim_end_matches('/');
        let mut query_url = Url::parse(base).map_err(|e| format!("`{base}` is not a URL: {e}"))?;
        if !matches!(query_url.scheme(), "http" | "https") {
            return Err(format!("`{base}` is not an http:// or https:// URL"));
        }
        if query_url.host_str().is_none_or(str::is_empty) {
            return Err(format!("`{base}` names no host"));
        }
        if !query_url.username().is_empty() || query_url.password().is_some() {
            return Err("credentials do not belong in the URL; use `prometheus_token_env`".into());
        }
        let path = format!("{}/api/v1/query", query_url.path().trim_end_matches('/'));
        query_url.set_path(&path);
        query_url.set_query(None);
        query_url.set_fragment(None);
        Ok(Endpoint {
            cluster: cluster.to_string(),
            base: base.to_string(),
            query_url,
            client: client(timeout, ca_file)?,
            token,
            timeout,
            sent: AtomicU64::new(0),
        })
    }

    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// `GET http://prom:9090/api/v1/query`: the request, for messages.
    pub(super) fn request(&self) -> String {
        format!("GET {}", self.query_url)
    }

    pub(super) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub(super) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// One instant query; any status comes back as a [`Reply`], transport failures and an
    /// unreadable token as errors.
    pub(super) async fn query(&self, promql: &str) -> Result<Reply, BackendError> {
        let mut url = self.query_url.clone();
        url.query_pairs_mut().append_pair("query", promql);
        let mut request = self.client.get(url).header(ACCEPT, "application/json");
        if let Some(source) = &self.token {
            let token = source.read().map_err(|detail| BackendError::Auth { cluster: self.cluster.clone(), detail })?;
            request = request.bearer_auth(token.expose());
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let too_large = || BackendError::Parse {
            what: self.request(),
            message: format!("the answer is larger than {} MiB", MAX_BODY_BYTES >> 20),
        };
        let expected = response.content_length().unwrap_or(0);
        if expected > MAX_BODY_BYTES as u64 {
            return Err(too_large());
        }
        // Sized from the announced length: a 30 MB answer is not copied as it grows.
        let mut body = Vec::with_capacity(expected as usize);
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.transport_error(e))?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Reply { status, body })
    }

    fn transport_error(&self, err: reqwest::Error) -> BackendError {
        if err.is_timeout() {
            return BackendError::Timeout { what: self.request(), secs: self.timeout.as_secs().max(1) };
        }
        // Without the URL: it holds the whole query; the target says where.
        let err = err.without_url();
        let mut message = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        BackendError::Connect { target: self.base.clone(), message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str) -> Result<Endpoint, String> {
        Endpoint::new("c", url, None, None, Duration::from_secs(1))
    }

    #[test]
    fn the_query_path_goes_under_the_base_and_bad_urls_are_named() {
        let e = endpoint("http://prom:9090/").unwrap();
        assert_eq!(e.request(), "GET http://prom:9090/api/v1/query");
        assert_eq!(e.base(), "http://prom:9090");
        let proxied = endpoint("https://grafana.example/api/datasources/proxy/uid/prom").unwrap();
        assert_eq!(proxied.request(), "GET https://grafana.example/api/datasources/proxy/uid/prom/api/v1/query");
        assert!(endpoint("prom:9090").unwrap_err().contains("not an http:// or https:// URL"));
        assert!(endpoint("not a url").unwrap_err().contains("is not a URL"));
        assert!(endpoint("ftp://prom").unwrap_err().contains("not an http:// or https:// URL"));
        assert!(endpoint("http://me:pw@prom").unwrap_err().contains("credentials"));
    }
}
