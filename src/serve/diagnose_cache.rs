//! Viewers' diagnoses, answered from a cache: a diagnosis runs commands on the cluster
//! (Slurm's costs two `sdiag` calls and a refresh), so however many viewers ask, each
//! cluster is diagnosed at most once per refresh interval for them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::{Code, Status};

use crate::wire::pb;

#[derive(Default)]
pub struct DiagnoseCache {
    /// One slot per cluster, locked while it is being filled: callers that come meanwhile
    /// wait for that answer instead of asking the cluster again.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Cached>>>>>,
}

struct Cached {
    at: Instant,
    /// A failure is kept too: a cluster that cannot be diagnosed is not asked again and
    /// again.
    answer: Result<pb::Diagnosis, (Code, String)>,
}

impl DiagnoseCache {
    /// `cluster`'s diagnosis if one younger than `max_age` is held, else `ask`'s, kept.
    /// Only clusters the hub serves should be asked for (the caller checks), so the cache
    /// holds at most one entry per served cluster.
    pub async fn get<F>(&self, cluster: &str, max_age: Duration, ask: F) -> Result<pb::Diagnosis, Status>
    where
        F: Future<Output = Result<pb::Diagnosis, Status>>,
    {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(cluster.to_string()).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some(cached) = held.as_ref().filter(|c| c.at.elapsed() < max_age) {
            return cached.answer.clone().map_err(|(code, message)| Status::new(code, message));
        }
        let answer = ask.await.map_err(|s| (s.code(), s.message().to_string()));
        *held = Some(Cached { at: Instant::now(), answer: answer.clone() });
        answer.map_err(|(code, message)| Status::new(code, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn many_callers_at_once_cost_one_diagnosis_per_interval() {
        let cache = Arc::new(DiagnoseCache::default());
        let asked = Arc::new(AtomicU32::new(0));
        let ask = |asked: Arc<AtomicU32>| async move {
            asked.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(pb::Diagnosis { transport: "toy".into(), ..Default::default() })
        };
        let calls = (0..10).map(|_| {
            let (cache, asked) = (cache.clone(), asked.clone());
            async move { cache.get("hpc", Duration::from_secs(60), ask(asked)).await }
        });
        for answer in futures_util::future::join_all(calls).await {
            assert_eq!(answer.unwrap().transport, "toy");
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // Older than the interval: asked again.
        cache.get("hpc", Duration::ZERO, ask(asked.clone())).await.unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }
}
