//! One task per cluster: refresh at the configured interval, back off on failure, keep the
//! last good snapshot, and publish every change through the fleet's watch channel.
//!
//! One refresh loop per cluster, bounded above its commands' own timeout
//! (`refresh_bound`); a panicking backend is stale with `internal error: …` and retried;
//! stale-on-error keeps the last good snapshot; a controller rate-limiting this user
//! (`BackendError::RateLimited`) leaves the cluster stale with that reason in words and gets one
//! doubling more than another failure, which neither a refresh key nor a change cuts short
//! (`wait_after`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use chrono::Utc;
use futures_util::FutureExt;
use tokio::sync::{Notify, watch};

use crate::backend::{Backend, BackendError};
use crate::model::FleetState;

/// Watching backends are re-read at most this often, however fast their events arrive.
const MIN_GAP: Duration = Duration::from_millis(200);

/// Back-off after failures: the interval doubles per failure, up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(120);

pub(crate) struct Poller {
    pub index: usize,
    pub backend: Arc<dyn Backend>,
    pub interval: Duration,
    /// Upper bound for one whole refresh (the backend has its own per-command bound).
    pub timeout: Duration,
    pub state: watch::Sender<Arc<FleetState>>,
    /// Wakes the poller early (after an action, or on a user's refresh key).
    pub wake: Arc<Notify>,
    /// Polls only while open (a hub replica holding the cluster's Lease); `None`: always.
    pub gate: Option<super::gate::Gate>,
}

/// The bound on one whole refresh for a cluster whose commands are bounded by `command`:
/// a refresh may run two commands one after the other (the release probe, then the queries),
/// and the transport's own timeout must fire first, since it also resets a dead connection.
pub fn refresh_bound(command: Duration) -> Duration {
    command.saturating_mul(2).saturating_add(Duration::from_secs(5))
}

/// The message a panic carried (`panic!("…")` gives a `&str` or a `String`).
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// How long to wait before the next attempt, and whether a wake (a user's refresh key, an
/// action, a watch's change) may cut that wait short. A controller rate-limiting this user
/// gets one doubling more than another failure and no early asking: every RPC sent while
/// limited is turned away and keeps the user's bucket empty.
pub fn wait_after(interval: Duration, failures: u32, rate_limited: bool) -> (Duration, bool) {
    if rate_limited {
        (next_delay(interval, failures.saturating_add(1)), false)
    } else {
        (next_delay(interval, failures), true)
    }
}

/// How long to wait before the next attempt after `failures` failures in a row.
pub fn next_delay(interval: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return interval;
    }
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    interval.saturating_mul(factor).min(MAX_BACKOFF.max(interval))
}

impl Poller {
    /// One refresh, bounded, with a backend panic turned into an error: the cluster then
    /// shows stale with `internal error: …` and is retried with back-off, instead of the
    /// task dying and the last snapshot passing for fresh forever.
    async fn refresh_once(&self) -> Result<crate::model::Snapshot, BackendError> {
        let guarded = AssertUnwindSafe(self.backend.snapshot()).catch_unwind();
        match tokio::time::timeout(self.timeout, guarded).await {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) => {
                let what = panic_text(panic.as_ref());
                tracing::error!(cluster = %self.backend.name(), panic = %what, "the backend panicked during a refresh");
                Err(BackendError::Internal(what))
            }
            Err(_) => Err(BackendError::Timeout { what: "refresh".into(), secs: self.timeout.as_secs() }),
        }
    }

    pub async fn run(mut self) {
        let mut failures = 0u32;
        // A watching backend says when its picture moved; refresh then rather than waiting
        // for the interval (at most every `MIN_GAP`, so a burst of events costs one refresh).
        let mut changes = self.backend.changes();
        loop {
            if !super::gate::opened(&mut self.gate).await {
                return;
            }
            let started = Instant::now();
            let mut gate = self.gate.take();
            let result = super::gate::while_open(&mut gate, self.refresh_once()).await;
            self.gate = gate;
            // The gate closed under way: another replica polls now; this answer is not ours to show.
            let Some(result) = result else { continue };
            let took = started.elapsed().as_millis() as u64;
            let rate_limited = matches!(result, Err(BackendError::RateLimited { .. }));
            let result = match result {
                Ok(snapshot) => {
                    failures = 0;
                    Ok(Arc::new(snapshot))
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(cluster = %self.backend.name(), error = %e, failures, "refresh failed");
                    Err(e.to_string())
                }
            };
            let index = self.index;
            let relayed = self.backend.relayed_health();
            let telemetry = self.backend.relayed_telemetry();
            self.state.send_modify(|s| {
                let s = Arc::make_mut(s);
                s.record_refresh(index, result, took, Utc::now());
                if let (Some(health), Some(cluster)) = (relayed, s.clusters.get_mut(index)) {
                    cluster.health = health;
                }
                if let (Some(t), Some(cluster)) = (telemetry, s.clusters.get_mut(index)) {
                    cluster.gpu_use = t.gpu_use;
                    cluster.telemetry_error = t.error;
                    cluster.telemetry_tried = t.tried;
                }
            });
            let (delay, may_wake) = wait_after(self.interval, failures, rate_limited);
            // While failing, a change (the watches are back) still cuts the back-off short,
            // but at most once per interval so a half-broken backend cannot spin.
            let gap = if failures == 0 { MIN_GAP } else { self.interval };
            let changed = async {
                match changes.as_mut() {
                    Some(rx) if may_wake => {
                        if rx.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                        tokio::time::sleep(gap).await;
                    }
                    _ => std::future::pending::<()>().await,
                }
            };
            let woken =
                async { if may_wake { self.wake.notified().await } else { std::future::pending::<()>().await } };
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = changed => {}
                _ = woken => {}
                _ = self.state.closed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let i = Duration::from_secs(10);
        assert_eq!(next_delay(i, 0), i);
        assert_eq!(next_delay(i, 1), i);
        assert_eq!(next_delay(i, 2), Duration::from_secs(20));
        assert_eq!(next_delay(i, 3), Duration::from_secs(40));
        assert_eq!(next_delay(i, 30), MAX_BACKOFF);
        assert_eq!(next_delay(Duration::from_secs(600), 5), Duration::from_secs(600));
    }

    #[test]
    fn a_rate_limited_controller_gets_a_longer_wait_that_no_wake_cuts_short() {
        let i = Duration::from_secs(10);
        assert_eq!(wait_after(i, 1, false), (i, true));
        assert_eq!(wait_after(i, 1, true), (Duration::from_secs(20), false));
        assert_eq!(wait_after(i, 3, true), (Duration::from_secs(80), false));
        assert_eq!(wait_after(i, 30, true), (MAX_BACKOFF, false));
        assert_eq!(wait_after(i, 0, false), (i, true));
    }
}
