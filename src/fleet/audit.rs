//! The append-only audit log: one JSON line per action, whatever its outcome.
//!
//! Each record is written with a single `write` on a file opened with `O_APPEND`, so lines
//! from several flightdeck processes never interleave.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub time: DateTime<Utc>,
    /// `user@host` of the person at the keyboard.
    pub who: String,
    /// `submit`, `cancel`, `hold`, `release`, `requeue`, `drain`, `resume`.
    pub action: String,
    /// `cluster/id`, `cluster/node` or, for a submission, the cluster.
    pub target: String,
    /// Extra input that shaped the action: the drain reason, the submitted job's name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
    /// `ok`, `error` or `refused`.
    pub outcome: String,
    /// The result (a new job ref) or the backend's error text.
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&self, record: &AuditRecord) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = OpenOptions::new().create(true).append(true).open(&self.path)?;
        f.write_all(&line)
    }

    /// Every record, oldest first; lines that do not parse are skipped.
    pub fn read_all(&self) -> std::io::Result<Vec<AuditRecord>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
    }
}

/// The login name of whoever runs flightdeck: the account of the process's user id (what
/// Slurm sees), else `$USER`, since a stripped environment (cron, tmux, sudo) may lack it.
pub fn current_user() -> String {
    whoami::username()
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// `user@host` for audit records.
pub fn current_actor() -> String {
    let user = current_user();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string());
    format!("{user}@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_known_without_an_environment() {
        // The tests run as some real account; its name comes from the user id, not $USER.
        let user = current_user();
        assert!(!user.is_empty() && user != "unknown", "{user}");
    }

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("sub/audit.jsonl"));
        for i in 0..3 {
            log.append(&AuditRecord {
                time: Utc::now(),
                who: "a@b".into(),
                action: "cancel".into(),
                target: format!("hpc/{i}"),
                detail: None,
                outcome: "ok".into(),
                message: String::new(),
            })
            .unwrap();
        }
        let recs = log.read_all().unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2].target, "hpc/2");
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 3);
    }
}
