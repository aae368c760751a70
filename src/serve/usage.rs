//! The hub's `Usage` call: who holds one cluster's GPUs, computed here from the hub's
//! picture and telemetry, with the window's GPU-hours from one accounting read per cluster
//! (one `sacct`, one `sshare`) that every caller shares for [`MAX_AGE`]: a hundred cockpits
//! opening screen 5 at once cost the cluster one read. A viewer's rows count their own
//! jobs only; the total is computed before that, so it is everyone's.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::fleet::usage::UsageReads;

/// How long one accounting read answers every caller.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// The longest the hub waits for one cluster's accounting.
pub const READ_BOUND: Duration = Duration::from_secs(120);

#[derive(Default)]
pub struct UsageCache {
    /// One slot per cluster, locked while it is being filled: callers that come meanwhile
    /// wait for that read instead of starting another.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Cached>>>>>,
}

struct Cached {
    at: Instant,
    /// The window's start it read from (`None`: nothing was read).
    since: Option<DateTime<Utc>>,
    reads: Arc<UsageReads>,
}

/// Whether a read from `held` serves a window from `asked`: one that reaches as far back
/// (records before the asked start are clipped away by the sum), or starts at most `slack`
/// later. Callers asking for "the last day" a moment apart compute starts a moment apart, and
/// reach the cache in any order; a read that is up to `slack` old at its end may as well be
/// up to `slack` short at its start.
fn covers(held: Option<DateTime<Utc>>, asked: Option<DateTime<Utc>>, slack: Duration) -> bool {
    let slack = chrono::TimeDelta::from_std(slack).unwrap_or(chrono::TimeDelta::zero());
    match (held, asked) {
        (_, None) => true,
        (Some(held), Some(asked)) => held <= asked + slack,
        (None, Some(_)) => false,
    }
}

impl UsageCache {
    /// `cluster`'s reads for a window from `since`: a held read younger than `max_age` that
    /// reaches as far back, else `read(since)`'s, kept (a failed read too: a cluster whose
    /// accounting fails is not asked again by every caller). Only clusters the hub serves
    /// should be asked for, so the cache holds at most one entry per served cluster.
    pub async fn get<F, Fut>(
        &self,
        cluster: &str,
        since: Option<DateTime<Utc>>,
        max_age: Duration,
        read: F,
    ) -> Arc<UsageReads>
    where
        F: FnOnce(Option<DateTime<Utc>>) -> Fut,
        Fut: Future<Output = UsageReads>,
    {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(cluster.to_string()).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some(cached) = held.as_ref().filter(|c| c.at.elapsed() < max_age && covers(c.since, since, max_age)) {
            return cached.reads.clone();
        }
        let reads = Arc::new(read(since).await);
        *held = Some(Cached { at: Instant::now(), since, reads: reads.clone() });
        reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::History;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[tokio::test]
    async fn many_callers_at_once_cost_one_read_and_a_longer_window_reads_again() {
        let cache = Arc::new(UsageCache::default());
        let asked = Arc::new(AtomicU32::new(0));
        let read = |asked: Arc<AtomicU32>| {
            move |_since| async move {
                asked.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                UsageReads { cluster: "hpc".into(), history: Ok(History::default()), fair_share: Ok(None) }
            }
        };
        let week = Some(at("2026-12-01T00:00:00Z"));
        let calls = (0..20).map(|_| {
            let (cache, asked) = (cache.clone(), asked.clone());
            async move { cache.get("hpc", week, MAX_AGE, read(asked)).await }
        });
        futures_util::future::join_all(calls).await;
        assert_eq!(asked.load(Ordering::SeqCst), 1, "twenty callers at once, one read");
        // A shorter window, or none, is served by the week's read.
        cache.get("hpc", Some(at("2026-12-06T00:00:00Z")), MAX_AGE, read(asked.clone())).await;
        cache.get("hpc", None, MAX_AGE, read(asked.clone())).await;
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // The same "last day" asked a moment later first, then a moment earlier: one read.
        let moment = cache.get("lab", Some(at("2026-12-06T00:00:01Z")), MAX_AGE, read(asked.clone())).await;
        let before = cache.get("lab", Some(at("2026-12-06T00:00:00Z")), MAX_AGE, read(asked.clone())).await;
        assert!(Arc::ptr_eq(&moment, &before), "a start a second earlier is served by the held read");
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        // A longer one is not, nor a read older than the bound.
        cache.get("hpc", Some(at("2026-11-01T00:00:00Z")), MAX_AGE, read(asked.clone())).await;
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        cache.get("hpc", week, Duration::ZERO, read(asked.clone())).await;
        assert_eq!(asked.load(Ordering::SeqCst), 4);
    }
}
