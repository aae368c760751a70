//! Workload jobs kept from one snapshot to the next. Mapping a workload (its status, its
//! pods' states, GPUs, nodes and logs) is most of a snapshot's cost at scale (about 0.4 ms
//! for 20 pods), while a pod event changes one workload. So each mapped job is kept with a
//! fingerprint of everything it was built from (the object's and its pods' uids and
//! `resourceVersion`s, the scheduler's message for each unplaced pod, its Kueue Workload and
//! Volcano PodGroup as read, and the node labels and queues the lookups read), and built
//! again only when the fingerprint changes.
//!
//! An object or pod without a `resourceVersion` (never from a real API server) is never kept:
//! nothing would tell that it changed.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Mutex;

// foldhash, not std's SipHash: every workload's key is looked up and stored at each snapshot.
use foldhash::{HashMap, HashMapExt};

use k8s_openapi::api::core::v1::Pod;
use kube::core::DynamicObject;

use super::super::map::Lookup;
use super::job::Beside;
use crate::model::Job;

/// Jobs of the last snapshot by object uid, with their fingerprints.
#[derive(Debug, Default)]
pub struct JobCache(Mutex<HashMap<String, (u64, Job)>>);

/// One snapshot's use of the cache: what was kept and is still current is taken, every job
/// of this snapshot is kept for the next when the round ends (what was not asked for goes).
pub struct Round<'a> {
    cache: &'a JobCache,
    last: HashMap<String, (u64, Job)>,
    next: HashMap<String, (u64, Job)>,
    /// Jobs built, and jobs taken from the cache, in this round.
    pub built: usize,
    pub kept: usize,
}

impl JobCache {
    pub fn round(&self) -> Round<'_> {
        let last = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        Round { cache: self, next: HashMap::with_capacity(last.len()), last, built: 0, kept: 0 }
    }
}

impl Round<'_> {
    /// Room for `n` more jobs in this round: a cold cache starts empty, and
    /// growing its table job by job was a visible part of a first snapshot.
    pub fn reserve(&mut self, n: usize) {
        self.next.reserve(n);
    }

    /// The job for `key` as kept when its fingerprint is still `print`, else `build()`'s.
    /// `print: None` (something without a version) always builds and keeps nothing.
    pub fn job(&mut self, key: String, print: Option<u64>, build: impl FnOnce() -> Job) -> Job {
        let Some(print) = print else {
            self.built += 1;
            return build();
        };
        let job = match self.last.remove(&key) {
            Some((kept, job)) if kept == print => {
                self.kept += 1;
                job
            }
            _ => {
                self.built += 1;
                build()
            }
        };
        self.next.insert(key, (print, job.clone()));
        job
    }
}

impl Drop for Round<'_> {
    fn drop(&mut self) {
        *self.cache.0.lock().unwrap_or_else(|e| e.into_inner()) = std::mem::take(&mut self.next);
    }
}

/// What a workload's job is built from, as one number; `None` when a version is missing.
/// `context` stands for what the lookups read beside the pods (node labels, LocalQueues).
pub fn fingerprint(
    obj: &DynamicObject,
    pods: &[&Pod],
    beside: Beside<'_>,
    lookup: &dyn Lookup,
    context: u64,
) -> Option<u64> {
    let mut h = foldhash::quality::FixedState::default().build_hasher();
    context.hash(&mut h);
    obj.metadata.uid.hash(&mut h);
    obj.metadata.resource_version.as_deref()?.hash(&mut h);
    for pod in pods {
        pod.metadata.uid.hash(&mut h);
        pod.metadata.resource_version.as_deref()?.hash(&mut h);
        let placed = pod.spec.as_ref().is_some_and(|s| s.node_name.is_some());
        if !placed {
            let ns = pod.metadata.namespace.as_deref().unwrap_or("");
            let name = pod.metadata.name.as_deref().unwrap_or("");
            lookup.failed_scheduling(ns, name).hash(&mut h);
        }
    }
    beside.kueue.hash(&mut h);
    beside.pod_group.hash(&mut h);
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobRef, JobState};

    #[test]
    fn a_job_is_kept_while_its_fingerprint_holds_and_dropped_when_unasked() {
        let cache = JobCache::default();
        let make = |id: &str| Job::new(JobRef::new("k8s", id), JobState::Running);
        {
            let mut r = cache.round();
            r.job("a".into(), Some(1), || make("a"));
            r.job("b".into(), Some(2), || make("b"));
            r.job("c".into(), None, || make("c"));
            assert_eq!((r.built, r.kept), (3, 0));
        }
        {
            let mut r = cache.round();
            let mut built = Vec::new();
            r.job("a".into(), Some(1), || {
                built.push("a");
                make("a")
            });
            r.job("b".into(), Some(3), || {
                built.push("b");
                make("b")
            });
            r.job("c".into(), None, || {
                built.push("c");
                make("c")
            });
            assert_eq!(built, ["b", "c"], "a kept; b changed; c has no version");
        }
        let mut r = cache.round();
        r.job("a".into(), Some(1), || make("a"));
        assert_eq!(r.kept, 1);
        drop(r);
        let r = cache.round();
        assert!(r.last.len() == 1 && r.last.contains_key("a"), "b was not asked for in the last round: dropped");
    }
}
