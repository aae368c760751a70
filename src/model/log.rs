//! Reading a job's output: which stream, and the pieces that come back.

use serde::{Deserialize, Serialize};

/// Which of a job's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    Stdout,
    Stderr,
}

impl LogStream {
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
        }
    }

    pub fn other(self) -> LogStream {
        match self {
            LogStream::Stdout => LogStream::Stderr,
            LogStream::Stderr => LogStream::Stdout,
        }
    }
}

/// Where one of a job's output streams can be read, in its backend's own terms: a file path
/// on the cluster (Slurm), `pod/NAMESPACE/POD/CONTAINER` (Kubernetes). Front ends show it and
/// hand it back to the fleet; only the backend that made it reads it.
///
/// A file path comes from the job's own user (any user's `--output`), so a backend that
/// reads files also records whose file it must be ([`LogHandle::owner`]): the read refuses a
/// file owned by anyone else. Serialised as the locator alone, as before.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogHandle {
    locator: String,
    owner: Option<String>,
}

impl LogHandle {
    pub fn new(locator: impl Into<String>) -> Self {
        Self { locator: locator.into(), owner: None }
    }

    /// A file that only `owner`'s file may be read through (Slurm's output paths).
    pub fn owned_by(locator: impl Into<String>, owner: impl Into<String>) -> Self {
        Self { locator: locator.into(), owner: Some(owner.into()) }
    }

    pub fn as_str(&self) -> &str {
        &self.locator
    }

    /// The user whose file this must be, where the backend reads files by path.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }
}

impl Serialize for LogHandle {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.locator)
    }
}

impl<'de> Deserialize<'de> for LogHandle {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

impl std::ops::Deref for LogHandle {
    type Target = str;
    fn deref(&self) -> &str {
        &self.locator
    }
}

impl std::fmt::Display for LogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.locator)
    }
}

impl From<String> for LogHandle {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

impl From<&str> for LogHandle {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

/// A piece of a job's output, read from byte `offset - data.len()` up to `offset`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogChunk {
    /// The bytes read, decoded lossily as UTF-8.
    pub data: String,
    /// Where the next read should start (the end of what was read).
    pub offset: u64,
    /// Bytes skipped between the requested start and `data`, because more arrived than the
    /// caller's bound allows (or the file was truncated and read again from its start).
    pub dropped: u64,
}
