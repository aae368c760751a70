//! Errors across the wire: a `BackendError` becomes a gRPC status whose message is the text
//! the user would have read locally, and a status becomes the `BackendError` the client's
//! callers already handle. The code says what kind of failure it was, so a client can tell
//! "the hub is unreachable" from "the cluster refused" without reading the words.

use tonic::{Code, Status};

use crate::backend::BackendError;

/// The longest message put into (or taken from) a status, in bytes: it travels as an HTTP/2
/// header, which proxies and the peer's header limits do not let grow without bound.
pub const MAX_STATUS_MESSAGE: usize = 4096;

/// `text` cut to at most [`MAX_STATUS_MESSAGE`] bytes on a character boundary, ending in `…`
/// when cut.
fn clamp(text: String) -> String {
    if text.len() <= MAX_STATUS_MESSAGE {
        return text;
    }
    let mut end = MAX_STATUS_MESSAGE - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = text;
    cut.truncate(end);
    cut.push('…');
    cut
}

/// The status the server answers for `e`; the message is `e`'s `Display` text.
pub fn status_from_error(e: &BackendError) -> Status {
    let code = match e {
        BackendError::Connect { .. } => Code::Unavailable,
        BackendError::NotFound(_) => Code::NotFound,
        BackendError::InvalidSpec(_) => Code::InvalidArgument,
        BackendError::ReadOnly => Code::PermissionDenied,
        BackendError::Timeout { .. } => Code::DeadlineExceeded,
        BackendError::Unsupported(_) => Code::Unimplemented,
        BackendError::Internal(_) => Code::Internal,
        BackendError::Remote(_) => Code::Unknown,
        BackendError::RateLimited { .. } => Code::ResourceExhausted,
        // The cluster (not the hub, not the request) is in a state that fails the call.
        BackendError::Command { .. }
        | BackendError::Parse { .. }
        | BackendError::Http { .. }
        | BackendError::Auth { .. } => Code::FailedPrecondition,
    };
    Status::new(code, clamp(e.to_string()))
}

/// What a client reports for a status from the hub at `hub` (its URL). The hub's words are
/// kept as they are; only where the hub itself refused (authentication, permission) or
/// cannot be reached does the error say so.
pub fn error_from_status(status: &Status, hub: &str) -> BackendError {
    let message = clamp(status.message().to_string());
    // A status without words (a proxy's, a transport's) still says what happened.
    let or_code = |m: String| if m.is_empty() { format!("hub: {}", status.code().description()) } else { m };
    match status.code() {
        Code::Unauthenticated => BackendError::Remote("hub: authentication failed".to_string()),
        Code::PermissionDenied => BackendError::Remote(format!("hub: {}", or_code(message))),
        Code::NotFound => BackendError::NotFound(or_code(message)),
        Code::Unavailable => BackendError::Connect { target: hub.to_string(), message: or_code(message) },
        // The hub's own words for a backend's timeout (`\`squeue\` timed out after 30 s`),
        // or the deadline of the call itself.
        Code::DeadlineExceeded if message.is_empty() => BackendError::Remote(format!("hub {hub}: timed out")),
        _ => BackendError::Remote(or_code(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let short = "x".repeat(MAX_STATUS_MESSAGE);
        assert_eq!(clamp(short.clone()), short, "at the limit: untouched");
        // 'é' is two bytes: a cut at an odd byte must step back.
        for text in ["é".repeat(3000), format!("a{}", "é".repeat(3000)), "€".repeat(2000)] {
            let cut = clamp(text.clone());
            assert!(cut.len() <= MAX_STATUS_MESSAGE, "{}", cut.len());
            assert!(cut.len() > MAX_STATUS_MESSAGE - 8, "{}", cut.len());
            assert!(cut.ends_with('…'));
            assert!(text.starts_with(cut.trim_end_matches('…')));
        }
        let status = status_from_error(&BackendError::Remote("y".repeat(100_000)));
        assert!(status.message().len() <= MAX_STATUS_MESSAGE);
    }

    #[test]
    fn wordless_statuses_still_say_what_happened() {
        let e = error_from_status(&Status::new(Code::Unavailable, ""), "https://hub:7443");
        assert_eq!(e.to_string(), "cannot reach https://hub:7443: hub: The service is currently unavailable");
        let e = error_from_status(&Status::new(Code::DeadlineExceeded, ""), "https://hub:7443");
        assert_eq!(e.to_string(), "hub https://hub:7443: timed out");
        let e = error_from_status(&Status::new(Code::Aborted, ""), "h");
        assert!(e.to_string().starts_with("hub: "), "{e}");
    }
}
