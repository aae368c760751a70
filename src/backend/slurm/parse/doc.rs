//! The top level of a Slurm JSON document, read as a stream.
//!
//! One visitor walks the top-level object: `meta` gives the release, `errors` are kept for
//! the error message, and the record array (`jobs`, `nodes`, `sinfo`) is read element by
//! element, each element converted at once, so a reader never holds more than one record
//! of JSON. Everything else is skipped without being built.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::flex::{LStr, LenientVec, MaybeObject, drain_seq, ignore_shapes};
use super::jobs_json::JobRecord;
use super::meta::Meta;
use super::nodes_json::{NodeMerger, NodeRecord, SinfoRecord};
use super::record::lenient_record;
use super::{JobsDoc, NodesDoc, ParseError};
use crate::model::Job;

/// What one document gave before it is judged.
pub(crate) struct DocParts<T> {
    release: Option<String>,
    items: T,
    /// Whether the expected record array was present.
    found: bool,
    errors: Vec<String>,
    not_object: bool,
}

impl DocParts<Vec<Job>> {
    pub(crate) fn into_jobs_doc(self) -> Result<JobsDoc, ParseError> {
        let release = self.release.clone();
        self.check("Slurm job JSON", "jobs").map(|jobs| JobsDoc { release, jobs })
    }
}

impl DocParts<NodeMerger<'_>> {
    pub(crate) fn into_nodes_doc(self) -> Result<NodesDoc, ParseError> {
        let release = self.release.clone();
        self.check("Slurm node JSON", "nodes").map(|m| {
            let (nodes, gpu_use) = m.finish_with_use();
            NodesDoc { release, nodes, gpu_use }
        })
    }
}

impl<T> DocParts<T> {
    fn check(self, what: &'static str, key: &str) -> Result<T, ParseError> {
        if self.not_object {
            return Err(ParseError::new(what, "the document is not a JSON object"));
        }
        if !self.found {
            let mut msg = format!("no `{key}` array in the document");
            if !self.errors.is_empty() {
                msg.push_str("; Slurm reported: ");
                msg.push_str(&self.errors.join("; "));
            }
            return Err(ParseError::new(what, msg));
        }
        Ok(self.items)
    }
}

/// Read a jobs document (`squeue --json`, `sacct --json`).
pub(crate) fn read_jobs<'de, D: Deserializer<'de, Error = serde_json::Error>>(
    cluster: &str,
    de: D,
) -> Result<DocParts<Vec<Job>>, serde_json::Error> {
    de.deserialize_any(DocVisitor { sink: JobSink { cluster, jobs: Vec::new() }, _de: PhantomData })
}

/// Read a nodes document (`sinfo --json`, `scontrol show node --json`).
pub(crate) fn read_nodes<'de, D: Deserializer<'de, Error = serde_json::Error>>(
    cluster: &str,
    de: D,
) -> Result<DocParts<NodeMerger<'_>>, serde_json::Error> {
    de.deserialize_any(DocVisitor { sink: NodeSink { merger: NodeMerger::new(cluster) }, _de: PhantomData })
}

/// Where the records of one document go.
trait Sink<'de>: Sized {
    type Out;
    /// Read the value of `key` when it names a record array of this document: `Some(true)`
    /// when it was an array, `Some(false)` when it held something else (consumed either way);
    /// `None` when the key is not one (the caller skips the value).
    fn record_array<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<Option<bool>, A::Error>;
    fn finish(self) -> Self::Out;
}

struct JobSink<'c> {
    cluster: &'c str,
    jobs: Vec<Job>,
}

impl<'de> Sink<'de> for JobSink<'_> {
    type Out = Vec<Job>;

    fn record_array<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<Option<bool>, A::Error> {
        if key != "jobs" {
            return Ok(None);
        }
        let cluster = self.cluster;
        let jobs = &mut self.jobs;
        let found = map.next_value_seed(RecordsSeed {
            each: |rec: JobRecord<'de>| {
                if let Some(job) = rec.into_job(cluster) {
                    jobs.push(job);
                }
            },
            _rec: PhantomData,
        })?;
        Ok(Some(found))
    }

    fn finish(self) -> Vec<Job> {
        self.jobs
    }
}

struct NodeSink<'c> {
    merger: NodeMerger<'c>,
}

impl<'de, 'c> Sink<'de> for NodeSink<'c> {
    type Out = NodeMerger<'c>;

    fn record_array<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<Option<bool>, A::Error> {
        let merger = &mut self.merger;
        match key {
            "nodes" => map
                .next_value_seed(RecordsSeed { each: |rec: NodeRecord<'de>| merger.add_node(rec), _rec: PhantomData })
                .map(Some),
            "sinfo" => map
                .next_value_seed(RecordsSeed { each: |rec: SinfoRecord<'de>| merger.add_sinfo(rec), _rec: PhantomData })
                .map(Some),
            _ => Ok(None),
        }
    }

    fn finish(self) -> NodeMerger<'c> {
        self.merger
    }
}

/// Reads an array of records, handing each object to `each` as soon as it is read.
/// Elements that are not objects are skipped. Gives `false` when the value is not an array.
struct RecordsSeed<F, R> {
    each: F,
    _rec: PhantomData<R>,
}

impl<'de, F: FnMut(R), R: Deserialize<'de>> DeserializeSeed<'de> for RecordsSeed<F, R> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(R), R: Deserialize<'de>> Visitor<'de> for RecordsSeed<F, R> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of records")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
        while let Some(MaybeObject(rec)) = seq.next_element::<MaybeObject<R>>()? {
            if let Some(rec) = rec {
                (self.each)(rec);
            }
        }
        Ok(true)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
    ignore_shapes!('de, bool = false; scalars, map);
}

lenient_record! {
    /// One entry of `errors`: `{description, error, error_number, source}`.
    struct ErrorEntry<'a> {
        description: LStr<'a> = b"description",
        error: LStr<'a> = b"error",
    }
}

enum TopKey {
    Meta,
    Errors,
    Other,
}

struct DocVisitor<'de, S> {
    sink: S,
    _de: PhantomData<&'de ()>,
}

impl<'de, S: Sink<'de>> Visitor<'de> for DocVisitor<'de, S> {
    type Value = DocParts<S::Out>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Slurm JSON document (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut release = None;
        let mut found = false;
        let mut errors = Vec::new();
        while let Some(key) = map.next_key::<LStr>()? {
            let kind = match key.as_str() {
                "meta" => TopKey::Meta,
                "errors" => TopKey::Errors,
                _ => TopKey::Other,
            };
            match kind {
                TopKey::Meta => release = map.next_value::<Meta>()?.release().or(release),
                TopKey::Errors => {
                    let entries: LenientVec<ErrorEntry<'_>> = map.next_value()?;
                    for e in entries.0 {
                        let text = e.description.non_empty().or(e.error.non_empty()).map(str::to_string);
                        errors.extend(text);
                    }
                }
                TopKey::Other => match self.sink.record_array(key.as_str(), &mut map)? {
                    Some(was_array) => found |= was_array,
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                },
            }
        }
        Ok(DocParts { release, items: self.sink.finish(), found, errors, not_object: false })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(self.not_object())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.not_object())
    }
}

impl<'de, S: Sink<'de>> DocVisitor<'de, S> {
    fn not_object(self) -> DocParts<S::Out> {
        DocParts { release: None, items: self.sink.finish(), found: false, errors: Vec::new(), not_object: true }
    }
}
