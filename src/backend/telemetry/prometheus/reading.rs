//! One answer → samples and notes, or the reason it holds none: the pure part of a reading,
//! which the benchmark and the tests drive without a server.

use super::answer;
use super::hosts::Hosts;
use super::labels::KeyLabels;
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
    read_answers(&[body], snapshot)
}

/// Read the answers of one reading in turn (the identity query's, then the values query's:
/// see [`super::metrics`]) into one set of samples.
pub fn read_answers(bodies: &[&[u8]], snapshot: &Snapshot) -> Result<Reading, AnswerError> {
    let hosts = Hosts::new(snapshot);
    let mut reader = Reader::new(&hosts, snapshot);
    for body in bodies {
        reader.read(body)?;
    }
    Ok(reader.finish())
}

/// One reading's answers as they arrive, into one [`Assembler`]: the values query is written
/// from what the identity answer held ([`Reader::value_keys`]).
pub(super) struct Reader<'de, 's> {
    hosts: &'s Hosts<'s>,
    presize: usize,
    assembler: Assembler<'de, 's>,
    /// The answers read so far, and whether the scanner read each: replayed the same way
    /// into fresh tables when the scanner declines a later one part-way.
    read: Vec<(&'de [u8], bool)>,
    warnings: Vec<String>,
}

impl<'de, 's> Reader<'de, 's> {
    pub(super) fn new(hosts: &'s Hosts<'s>, snapshot: &Snapshot) -> Self {
        let expected: usize = snapshot.nodes.iter().flat_map(|n| &n.gpus).map(|g| g.total as usize).sum();
        let presize = expected.min(PRESIZE_LIMIT);
        Reader { hosts, presize, assembler: Assembler::new(hosts, presize), read: Vec::new(), warnings: Vec::new() }
    }

    /// Add one answer's series, or say why it holds none.
    pub(super) fn read(&mut self, body: &'de [u8]) -> Result<(), AnswerError> {
        let (envelope, scanned) = match scan::read(body, &mut self.assembler) {
            Ok(envelope) => (envelope, true),
            // What the scanner is unsure of, serde_json reads from the start, into fresh
            // tables (the scanner may have handed over some series), and explains if it fails.
            Err(scan::Declined) => {
                self.assembler = Assembler::new(self.hosts, self.presize);
                for (earlier, scanned) in &self.read {
                    let replayed = if *scanned {
                        scan::read(earlier, &mut self.assembler).map(drop).is_ok()
                    } else {
                        answer::read(earlier, &mut self.assembler).is_ok()
                    };
                    debug_assert!(replayed, "an answer read once reads again");
                }
                let envelope = answer::read(body, &mut self.assembler)
                    .map_err(|e| AnswerError::NotPrometheus(unreadable(&e, body)))?;
                (envelope, false)
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
        self.read.push((body, scanned));
        for warning in envelope.warnings.iter().map(|w| format!("Prometheus warns: {}", clean_message(w))) {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
        Ok(())
    }

    /// The labels a values query keeps so that its series land on the GPUs read so far.
    pub(super) fn value_keys(&self) -> KeyLabels {
        self.assembler.value_keys()
    }

    pub(super) fn finish(self) -> Reading {
        let (gpus, mut notes) = self.assembler.finish();
        notes.extend(self.warnings);
        Reading { gpus, notes }
    }
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
