//! Parsers for every Slurm output family flightdeck reads.
//!
//! * `squeue --json` (and `sacct --json`) → [`JobsDoc`]: [`parse_jobs_json`] borrows from a
//!   byte slice, [`parse_jobs_json_reader`] streams from a reader and never holds the
//!   document (each record is turned into a [`Job`] as soon as it is read).
//! * `sinfo --json` (per-node on 21.08/22.05, aggregated from 23.02) and
//!   `scontrol show node --json` (23.02+) → [`NodesDoc`].
//! * `squeue --Format` with only the fields a job is made of ([`fields`]): the job listing
//!   of every refresh, about 20× smaller than `--json`.
//! * The pipe-separated text fallbacks ([`SQUEUE_TEXT_FORMAT`], [`SINFO_TEXT_FORMAT`]).
//! * `sacct`'s finished jobs, as marked text ([`sacct::parse_sacct`]).
//!
//! The four JSON families (see `slurm_release_family`) differ in shapes, not in meaning, so
//! the parsers look at the shape of each value instead of the release: a number may be a
//! plain integer, `null` or `{set, infinite, number}` ([`flex::Flex`]); a state may be a
//! string or an array of strings; an exit code may be a raw wait status or
//! `{status, return_code, signal}`. Unknown fields are skipped, missing ones default, and a
//! value of the wrong type degrades to "unset" instead of failing the document. Only broken
//! JSON (or a document without the expected array) is an error.
//!
//! Throughput: one visitor over the top-level object streams the record array element by
//! element; records name only the fields used and match keys as bytes; strings borrow from
//! a slice; no `serde_json::Value`, no untagged enums. See `benches/slurm_parse.rs`.
//!
//! One file per job: `flex` (lenient value types), `record` (records naming only the fields
//! they use), `doc` (the streaming top level), `meta` (the release), `jobs_json`,
//! `nodes_json`, `text`, `sacct`, `gres`, `states`, `exit`, `stdout_pattern`, `hostlist`.

mod doc;
pub mod exit;
pub mod fields;
pub mod flex;
pub mod gres;
pub mod hostlist;
mod jobs_json;
mod meta;
mod nodes_json;
mod record;
pub mod sacct;
pub mod states;
pub mod stdout_pattern;
pub mod text;

use std::fmt;
use std::io::{BufReader, Read};

use crate::model::{Job, Node};

pub use exit::decode_wait_status;
pub use gres::{GpuRequest, GresItem, gpu_request, parse_gres};
pub use hostlist::expand_hostlist;
pub use states::{job_state_from_slurm, job_state_with_reason, node_state_from_slurm};
pub use stdout_pattern::{PatternFields, expand_stdout_pattern};
pub use text::{
    SINFO_TEXT_FORMAT, SINFO_TEXT_FORMAT_WITH_REASON_META, SQUEUE_TEXT_FORMAT, parse_sinfo_records, parse_sinfo_text,
    parse_squeue_records, parse_squeue_text, record_mark, squeue_text_format,
};

/// Jobs read from one `squeue --json` (or `sacct --json`) document.
#[derive(Debug, Clone, PartialEq)]
pub struct JobsDoc {
    /// `meta.slurm.release` / `meta.Slurm.release` (`22.05.8`), when the document says.
    pub release: Option<String>,
    pub jobs: Vec<Job>,
}

/// Nodes read from one `sinfo --json` or `scontrol show node --json` document.
#[derive(Debug, Clone, PartialEq)]
pub struct NodesDoc {
    pub release: Option<String>,
    pub nodes: Vec<Node>,
    /// Device indices in use per node, where the output lists them (`gres_used`): what
    /// [`fields::allocations_from_nodes`] gives jobs read from the field listing.
    pub gpu_use: Vec<fields::NodeGpuUse>,
}

/// Output that could not be read. `Display` says which output, what was wrong and where
/// (JSON line and column, or the text line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    what: &'static str,
    message: String,
    line: Option<usize>,
    column: Option<usize>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read {}: {}", self.what, self.message)?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " (line {l}, column {c})"),
            (Some(l), None) => write!(f, " (line {l})"),
            _ => Ok(()),
        }
    }
}

impl ParseError {
    pub(crate) fn new(what: &'static str, message: impl Into<String>) -> Self {
        Self { what, message: message.into(), line: None, column: None }
    }

    pub(crate) fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    pub(crate) fn from_json(what: &'static str, e: &serde_json::Error) -> Self {
        // serde_json's message ends with " at line L column C"; keep the position in fields.
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(i) if e.line() > 0 => full[..i].to_string(),
            _ => full,
        };
        let (line, column) = if e.line() > 0 { (Some(e.line()), Some(e.column())) } else { (None, None) };
        Self { what, message, line, column }
    }

    /// Which output this was about (`squeue --json output` …).
    pub fn what(&self) -> &str {
        self.what
    }

    /// What was wrong, without the position.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// 1-based line of the input, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// 1-based column (JSON only), when known.
    pub fn column(&self) -> Option<usize> {
        self.column
    }
}

/// The Slurm JSON families (see the module notes): they differ in value shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// 21.08 and 22.05 (openapi v0.0.37/38): plain ints, string states, raw wait statuses,
    /// per-node `sinfo --json`.
    A,
    /// 23.02 (data_parser v0.0.39): `{set, infinite, number}` counters, aggregated `sinfo --json`.
    B,
    /// 23.11 – 24.11 (v0.0.40–42): flex timestamps, state arrays, structured exit codes.
    C,
    /// 25.05 and later (v0.0.43+): as C, plus `stdout_expanded`.
    D,
}

/// The family of a release string such as `22.05.8`, `23.02.8`, `24.11.5-1`, `25.11.0`.
///
/// Releases before 23.02 (20.x, 21.08) count as [`Family::A`]; a string that does not start
/// with `MAJOR.MINOR` is assumed to be the newest family ([`Family::D`]).
pub fn slurm_release_family(release: &str) -> Family {
    let mut parts = release.trim().trim_start_matches(['v', 'V']).split(['.', '-', ' ']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok()).unwrap_or(0);
    match major {
        None => Family::D,
        Some(m) if m < 23 => Family::A,
        Some(23) if minor < 11 => Family::B,
        Some(23) | Some(24) => Family::C,
        Some(_) => Family::D,
    }
}

const JOBS_WHAT: &str = "Slurm job JSON";
const NODES_WHAT: &str = "Slurm node JSON";

/// `squeue --json` of any family (also `sacct --json`), read from a byte slice.
///
/// Strings are borrowed from `input` while a record is read; only what ends up in a [`Job`]
/// is copied. A record without a job id, or that is not an object, is skipped; anything
/// after the top-level object is ignored.
pub fn parse_jobs_json(cluster: &str, input: &[u8]) -> Result<JobsDoc, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(input);
    doc::read_jobs(cluster, &mut de).map_err(|e| ParseError::from_json(JOBS_WHAT, &e))?.into_jobs_doc()
}

/// `squeue --json` of any family, streamed from a reader: each job record becomes a [`Job`]
/// as soon as it has been read, so memory holds the jobs, never the document. The reader
/// is buffered here; passing a `BufReader` costs nothing extra.
pub fn parse_jobs_json_reader<R: Read>(cluster: &str, input: R) -> Result<JobsDoc, ParseError> {
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, input));
    doc::read_jobs(cluster, &mut de).map_err(|e| ParseError::from_json(JOBS_WHAT, &e))?.into_jobs_doc()
}

/// `sinfo --json` (22.05 per-node records under `nodes`; 23.02+ aggregated records under
/// `sinfo`, read best effort) or `scontrol show node --json` (23.02+, `nodes`).
///
/// A node listed several times (once per partition in aggregated `sinfo`) becomes one
/// [`Node`] with all its partitions.
pub fn parse_nodes_json(cluster: &str, input: &[u8]) -> Result<NodesDoc, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(input);
    doc::read_nodes(cluster, &mut de).map_err(|e| ParseError::from_json(NODES_WHAT, &e))?.into_nodes_doc()
}

/// [`parse_nodes_json`] streamed from a reader.
pub fn parse_nodes_json_reader<R: Read>(cluster: &str, input: R) -> Result<NodesDoc, ParseError> {
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, input));
    doc::read_nodes(cluster, &mut de).map_err(|e| ParseError::from_json(NODES_WHAT, &e))?.into_nodes_doc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_families() {
        assert_eq!(slurm_release_family("21.08.8-2"), Family::A);
        assert_eq!(slurm_release_family("22.05.8"), Family::A);
        assert_eq!(slurm_release_family("23.02.8"), Family::B);
        assert_eq!(slurm_release_family("23.11.10"), Family::C);
        assert_eq!(slurm_release_family("24.05.3"), Family::C);
        assert_eq!(slurm_release_family("24.11.5"), Family::C);
        assert_eq!(slurm_release_family("25.05.4"), Family::D);
        assert_eq!(slurm_release_family("25.11.0"), Family::D);
        assert_eq!(slurm_release_family("garbage"), Family::D);
        assert_eq!(slurm_release_family(""), Family::D);
    }

    #[test]
    fn error_display_names_what_and_where() {
        let e = parse_jobs_json("c", b"{\"jobs\": [1,\n 2,,]}").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.column().is_some());
        let shown = e.to_string();
        assert!(shown.starts_with("cannot read Slurm job JSON: "), "{shown}");
        assert!(shown.contains("(line 2, column"), "{shown}");
    }
}
