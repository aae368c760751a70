//! One answer → samples and notes, or the reason it holds none: the pure part of a reading,
//! which the benchmark and the tests drive without a server.

use super::answer;
use super::hosts::Hosts;
use super::samples::Assembler;
use super::scan;
use crate::backend::http::clean_message;
use crate::model::{GpuSample, Snapshot};

/// Most GPUs the tables are sized for in advance, whatever the snapshot claims.
const PRESIZE_LIMIT: usize = 1 << 16;

/// What one answer says about the cluster's GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub gpus: Vec<GpuSample>,
    /// What the reading lacks and why, Prometheus's own warnings included.
    pub notes: Vec<String>,
}

/// Why an answer holds no reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerError {
    /// Prometheus answered `"status": "error"`: it understood the request and refused it.
    Refused { error_type: String, message: String },
    /// Not Prometheus's JSON (an HTML login page, a truncated body, another API).
    NotPrometheus(String),
    /// A range or scalar answer where an instant vector was asked for.
    NotVector(String),
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerError::Refused { error_type, message } => write!(f, "{error_type}: {message}"),
            AnswerError::NotPrometheus(why) => write!(f, "not a Prometheus answer: {why}"),
            AnswerError::NotVector(kind) => write!(f, "the answer is a {kind}, not an instant vector"),
        }
    }
}

/// Read one `/api/v1/query` answer body, naming GPUs after `snapshot`'s nodes.
pub fn read_answer(body: &[u8], snapshot: &Snapshot) -> Result<Reading, AnswerError> {
    let hosts = Hosts::new(snapshot);
    let expected: usize = snapshot.nodes.iter().flat_map(|n| &n.gpus).map(|g| g.total as usize).sum();
    let presize = expected.min(PRESIZE_LIMIT);
    let mut assembler = Assembler::new(&hosts, presize);
    let envelope = match scan::read(body, &mut assembler) {
        Ok(envelope) => envelope,
        // What the scanner is unsure of, serde_json reads from the start, into fresh
        // tables (the scanner may have handed over some series), and explains if it fails.
        Err(scan::Declined) => {
            assembler = Assembler::new(&hosts, presize);
            answer::read(body, &mut assembler).map_err(|e| AnswerError::NotPrometheus(unreadable(&e, body)))?
        }
    };
    match envelope.status.as_deref() {
        Some("success") => {}
        Some("error") => {
            return Err(AnswerError::Refused {
                error_type: clean_message(envelope.error_type.as_deref().unwrap_or("error")),
                message: clean_message(envelope.error.as_deref().unwrap_or("(no message)")),
            });
        }
        Some(other) => return Err(AnswerError::NotPrometheus(format!("`status` is {:?}", clean_message(other)))),
        None => return Err(AnswerError::NotPrometheus("it has no `status`".into())),
    }
    match envelope.result_type.as_deref() {
        Some("vector") => {}
        Some(other) => return Err(AnswerError::NotVector(clean_message(other))),
        None => return Err(AnswerError::NotPrometheus("it has no `data.resultType`".into())),
    }
    let (gpus, mut notes) = assembler.finish();
    notes.extend(envelope.warnings.iter().map(|w| format!("Prometheus warns: {}", clean_message(w))));
    Ok(Reading { gpus, notes })
}

/// serde_json's reason and where, then how the body begins (a proxy's HTML page says more
/// than "expected value at line 1").
fn unreadable(err: &serde_json::Error, body: &[u8]) -> String {
    if body.iter().all(u8::is_ascii_whitespace) {
        return "the body is empty".into();
    }
    const SHOWN: usize = 120;
    let start = String::from_utf8_lossy(&body[..body.len().min(SHOWN)]).into_owned();
    let more = if body.len() > SHOWN { "…" } else { "" };
    format!("{err}; it begins: {}{more}", clean_message(&start))
}
