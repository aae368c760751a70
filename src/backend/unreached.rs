//! A stand-in for a config entry whose clusters could not be listed when the fleet started
//! (a hub entry whose hub did not answer): one cluster, named after the entry, stale with
//! the reason. Its clusters appear once flightdeck starts while the source answers. Shared
//! below the kinds so the fleet builds it without naming the kind that expands.

use async_trait::async_trait;

use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, LogChunk, NodeAction};
use crate::model::{JobRef, LogHandle, Snapshot};
use crate::spec::JobSpec;

/// One cluster that answers every call with why it has nothing.
pub struct Unreached {
    pub name: String,
    pub why: String,
}

#[async_trait]
impl Backend for Unreached {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }

    async fn submit(&self, _spec: &JobSpec) -> Result<JobRef, BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }

    async fn job_action(&self, _job: &JobRef, _action: JobAction) -> Result<(), BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }

    async fn node_action(&self, _node: &str, _action: &NodeAction) -> Result<String, BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }

    async fn read_log(&self, _log: &LogHandle, _from: Option<u64>, _max: u64) -> Result<LogChunk, BackendError> {
        Err(BackendError::Remote(self.why.clone()))
    }
}
