//! One telemetry loop per cluster, beside its poller and slower than it: read the GPUs
//! (the cluster's Prometheus when configured, else the backend's own reach), join the
//! reading to the last snapshot's jobs, publish the result on the cluster's state.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;

use super::poller::{next_delay, panic_text};
use super::telemetry::{TelemetryMemory, join};
use crate::backend::telemetry::TelemetrySource;
use crate::backend::{Backend, BackendError};
use crate::config::IdleRule;
use crate::model::{FleetState, Snapshot, Telemetry};

pub(crate) struct TelemetryPoller {
    pub index: usize,
    pub backend: Arc<dyn Backend>,
    /// Preferred to the backend when set (Prometheus).
    pub source: Option<Arc<dyn TelemetrySource>>,
    pub every: Duration,
    /// Bound on one whole reading.
    pub timeout: Duration,
    pub rule: IdleRule,
    pub state: watch::Sender<Arc<FleetState>>,
    /// Reads only while open, like the cluster's poller; `None`: always.
    pub gate: Option<super::gate::Gate>,
}

impl TelemetryPoller {
    /// The cluster's last snapshot, once there is one.
    async fn snapshot(&self) -> Option<Arc<Snapshot>> {
        let mut rx = self.state.subscribe();
        let state = rx.wait_for(|s| s.clusters.get(self.index).is_some_and(|c| c.snapshot.is_some())).await.ok()?;
        state.clusters.get(self.index).and_then(|c| c.snapshot.clone())
    }

    /// One reading, bounded, a panic turned into an error; `Ok(None)`: nothing can measure
    /// this cluster's GPUs.
    async fn read(&self, snapshot: &Snapshot) -> Result<Option<Telemetry>, BackendError> {
        let reading = async {
            match &self.source {
                Some(source) => source.read(snapshot).await.map(Some),
                None => self.backend.telemetry(snapshot).await,
            }
        };
        match tokio::time::timeout(self.timeout, AssertUnwindSafe(reading).catch_unwind()).await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(BackendError::Internal(panic_text(panic.as_ref()))),
            Err(_) => Err(BackendError::Timeout { what: "GPU telemetry".into(), secs: self.timeout.as_secs() }),
        }
    }

    pub async fn run(mut self) {
        let mut memory = TelemetryMemory::default();
        let mut failures = 0u32;
        loop {
            if !super::gate::opened(&mut self.gate).await {
                return;
            }
            let Some(snapshot) = self.snapshot().await else { return };
            let index = self.index;
            let mut gate = self.gate.take();
            let read = super::gate::while_open(&mut gate, self.read(&snapshot)).await;
            self.gate = gate;
            let Some(read) = read else { continue };
            match read {
                // A relay (a hub's client) shows the other fleet's telemetry: nothing to
                // read here, and nothing of it to overwrite.
                Ok(None) if self.backend.relayed_telemetry().is_some() => return,
                Ok(None) => {
                    tracing::debug!(cluster = %self.backend.name(), "no GPU telemetry source");
                    self.state.send_modify(|s| {
                        let s = Arc::make_mut(s);
                        if let Some(c) = s.clusters.get_mut(index) {
                            c.telemetry_tried = true;
                        }
                        s.version += 1;
                    });
                    return;
                }
                Ok(Some(reading)) => {
                    failures = 0;
                    let used = Arc::new(join(&snapshot, reading, &mut memory, self.rule));
                    self.state.send_modify(|s| {
                        let s = Arc::make_mut(s);
                        if let Some(c) = s.clusters.get_mut(index) {
                            c.gpu_use = Some(used);
                            c.telemetry_error = None;
                            c.telemetry_tried = true;
                        }
                        s.version += 1;
                    });
                }
                Err(error) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(cluster = %self.backend.name(), %error, failures, "GPU telemetry failed");
                    // The last reading stays (with its time); the error is shown beside it.
                    self.state.send_modify(|s| {
                        let s = Arc::make_mut(s);
                        if let Some(c) = s.clusters.get_mut(index) {
                            c.telemetry_error = Some(error.to_string());
                            c.telemetry_tried = true;
                        }
                        s.version += 1;
                    });
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(next_delay(self.every, failures)) => {}
                _ = self.state.closed() => return,
            }
        }
    }
}
