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
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LogHandle(String);

impl LogHandle {
    pub fn new(locator: impl Into<String>) -> Self {
        Self(locator.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for LogHandle {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for LogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for LogHandle {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for LogHandle {
    fn from(s: &str) -> Self {
        Self(s.to_string())
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
