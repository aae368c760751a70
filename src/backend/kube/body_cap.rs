//! Byte caps on what the API server sends, as the Slurm adapter caps `squeue`'s stream: a
//! broken or hostile server (or a proxy in front of it) must not grow the cockpit without
//! bound. kube's client reads a list or get answer whole, and a watch line by line, with
//! no limit of its own, so a tower layer wraps every answer's body:
//!
//! * an ordinary answer (get, list page, patch …) stops at [`ANSWER_LIMIT`] bytes. The
//!   watcher lists in pages of 500 objects, a few MiB at most, so this only trips on
//!   something that is not a Kubernetes answer;
//! * a watch stream is long-lived and may carry any number of bytes in all, so there each
//!   event (one JSON line) stops at [`EVENT_LIMIT`]; etcd keeps objects under 1.5 MiB.
//!
//! Past a cap the body ends with [`TooLarge`], whose words name the request and the cap;
//! kube hands it on as the call's error, and the watcher starts again from a fresh list.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use kube::client::{Body, DynBody};
use tower::{BoxError, Layer, Service};

/// The most bytes one ordinary answer may carry.
pub const ANSWER_LIMIT: u64 = 256 * 1024 * 1024;
/// The most bytes one watch event (one line of the stream) may carry.
pub const EVENT_LIMIT: u64 = 32 * 1024 * 1024;

/// The layer, with its two caps.
#[derive(Debug, Clone, Copy)]
pub struct BodyCapLayer {
    pub answer: u64,
    pub event: u64,
}

impl Default for BodyCapLayer {
    fn default() -> Self {
        BodyCapLayer { answer: ANSWER_LIMIT, event: EVENT_LIMIT }
    }
}

impl<S> Layer<S> for BodyCapLayer {
    type Service = BodyCap<S>;
    fn layer(&self, inner: S) -> BodyCap<S> {
        BodyCap { inner, caps: *self }
    }
}

/// The service the layer makes.
#[derive(Debug, Clone)]
pub struct BodyCap<S> {
    inner: S,
    caps: BodyCapLayer,
}

/// A watch request: `?watch=true` (or `1`), as kube's `watch` calls send it.
fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| q.split('&').any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True")))
}

impl<S> Service<Request<Body>> for BodyCap<S>
where
    S: Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let watch = is_watch(request.uri());
        let limit = if watch { self.caps.event } else { self.caps.answer };
        let what = format!("{} {}", request.method(), request.uri().path());
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|inner| {
                Box::new(Capped { inner, seen: 0, limit, per_line: watch, what: Some(what) }) as Box<DynBody>
            }))
        })
    }
}

/// A body that ends with [`TooLarge`] past its cap.
struct Capped {
    inner: Box<DynBody>,
    /// Bytes so far: of the whole answer, or of the current line of a watch.
    seen: u64,
    limit: u64,
    per_line: bool,
    /// The request, for the error (taken when it is raised).
    what: Option<String>,
}

impl Capped {
    /// Counts a chunk; `false` once a cap is passed.
    fn count(&mut self, data: &[u8]) -> bool {
        let len = data.len() as u64;
        if !self.per_line {
            self.seen = self.seen.saturating_add(len);
            return self.seen <= self.limit;
        }
        match (memchr::memchr(b'\n', data), memchr::memrchr(b'\n', data)) {
            (Some(first), Some(last)) => {
                // The line that was open ends at `first`; a new one starts after `last`.
                let closed = self.seen.saturating_add(first as u64);
                self.seen = len - last as u64 - 1;
                closed <= self.limit && self.seen <= self.limit
            }
            _ => {
                self.seen = self.seen.saturating_add(len);
                self.seen <= self.limit
            }
        }
    }
}

impl HttpBody for Capped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.what.is_none() {
            // The cap was passed: nothing more is read.
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !this.count(data)
                {
                    let what = this.what.take().unwrap_or_default();
                    return Poll::Ready(Some(Err(Box::new(TooLarge {
                        what,
                        limit: this.limit,
                        per_line: this.per_line,
                    }))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.what.is_none() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer (or one watch event) past its cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// `GET /api/v1/pods`.
    pub what: String,
    pub limit: u64,
    pub per_line: bool,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.limit / (1024 * 1024);
        let size = if mib > 0 { format!("{mib} MiB") } else { format!("{} bytes", self.limit) };
        if self.per_line {
            write!(
                f,
                "one event of the API server's watch ({}) passed {size}; flightdeck stopped reading it",
                self.what
            )
        } else {
            write!(f, "the API server's answer to {} passed {size}; flightdeck stopped reading it", self.what)
        }
    }
}

impl std::error::Error for TooLarge {}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    /// A service answering every request with `chunks` as the body.
    fn serving(
        chunks: Vec<&'static [u8]>,
    ) -> impl Service<
        Request<Body>,
        Response = Response<Box<DynBody>>,
        Error = BoxError,
        Future = impl Future<Output = Result<Response<Box<DynBody>>, BoxError>> + Send + 'static,
    > + Clone {
        tower::service_fn(move |_req: Request<Body>| {
            let frames = chunks.clone().into_iter().map(|c| Ok::<_, BoxError>(Frame::data(Bytes::from_static(c))));
            let body: Box<DynBody> = Box::new(StreamBody::new(futures_util::stream::iter(frames)));
            std::future::ready(Ok::<_, BoxError>(Response::new(body)))
        })
    }

    async fn read(
        svc: &mut impl Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
        uri: &str,
    ) -> Result<Bytes, String> {
        let request = Request::get(uri).body(Body::empty()).unwrap();
        let response = svc.call(request).await.map_err(|e| e.to_string())?;
        response.into_body().collect().await.map(|c| c.to_bytes()).map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn an_answer_past_its_cap_ends_with_words_naming_the_request() {
        let caps = BodyCapLayer { answer: 10, event: 4 };
        let mut svc = caps.layer(serving(vec![b"0123", b"4567", b"89"]));
        assert_eq!(read(&mut svc, "/api/v1/pods?limit=500").await.unwrap(), "0123456789", "at the cap: whole");
        let mut svc = caps.layer(serving(vec![b"0123", b"4567", b"89a"]));
        let err = read(&mut svc, "/api/v1/pods?limit=500").await.unwrap_err();
        assert_eq!(err, "the API server's answer to GET /api/v1/pods passed 10 bytes; flightdeck stopped reading it");
    }

    #[tokio::test]
    async fn a_watch_is_capped_per_event_not_in_all() {
        let caps = BodyCapLayer { answer: 10, event: 4 };
        // 3 events of 4 bytes, split across frames anyhow: 15 bytes in all, past `answer`.
        let mut svc = caps.layer(serving(vec![b"abcd\nef", b"gh\nij", b"kl\n"]));
        assert_eq!(read(&mut svc, "/api/v1/pods?watch=true&resourceVersion=1").await.unwrap(), "abcd\nefgh\nijkl\n");
        // One event of 5 bytes, split over two frames.
        let mut svc = caps.layer(serving(vec![b"abcd\nef", b"ghi\n"]));
        let err = read(&mut svc, "/api/v1/pods?watch=1").await.unwrap_err();
        assert!(err.starts_with("one event of the API server's watch (GET /api/v1/pods) passed 4 bytes"), "{err}");
        // The line still open at the end of a frame counts too.
        let mut svc = caps.layer(serving(vec![b"ab\ncdefg"]));
        assert!(read(&mut svc, "/api/v1/pods?watch=true").await.is_err());
    }

    #[test]
    fn watch_requests_are_told_by_their_query() {
        for (uri, watch) in [
            ("/api/v1/pods?watch=true&resourceVersion=5", true),
            ("/api/v1/pods?resourceVersion=5&watch=1", true),
            ("/api/v1/pods?limit=500", false),
            ("/api/v1/namespaces/watch=true/pods", false),
        ] {
            assert_eq!(is_watch(&uri.parse().unwrap()), watch, "{uri}");
        }
    }
}
