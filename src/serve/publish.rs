//! The fleet's state as versioned per-cluster updates, computed once per change and shared
//! by every subscriber.
//!
//! Each cluster has a version, bumped whenever anything of it changes (a refresh always
//! does: its health carries the time). An update holds what changed since the previous
//! version — jobs and nodes added or changed, ids removed, the health, the snapshot's own
//! facts — so a one-job change costs one job on the wire, whatever the cluster's size. The
//! last updates of each cluster are kept, so a client that reconnects with its versions gets
//! only what it missed; older than that, the cluster in full. Subscribers are handed the
//! same `Arc`ed update through a bounded broadcast: one that falls behind is not queued for
//! without end but sent a fresh full state (`resync`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};

use super::auth::Caller;
use super::metrics::Metrics;
use crate::model::{ClusterState, FleetState, Snapshot};
use crate::wire::{self, pb};

/// Updates a subscriber may fall behind by before it is sent a full state instead.
pub const SUBSCRIBER_BACKLOG: usize = 64;

/// Jobs and nodes in one message of a full state: a 100k-job cluster goes out as many
/// small messages, so no stream (hub or client) ever holds a buffer the size of the whole
/// cluster, and an idle subscriber costs little once its first state is through.
pub const FULL_CHUNK: usize = 256;

/// Updates kept per cluster for clients that reconnect with their versions.
const HISTORY_UPDATES: usize = 256;

/// Jobs and nodes kept in one cluster's history, all updates together: a cluster whose
/// refreshes change everything keeps less history rather than a copy per refresh.
const HISTORY_ITEMS: usize = 200_000;

/// One cluster as last published.
struct Track {
    name: String,
    version: u64,
    last: ClusterState,
    /// Deltas, oldest first; each applies on the version before it.
    history: VecDeque<Arc<pb::ClusterUpdate>>,
    history_items: usize,
    /// The cluster in full at `version` (in chunks), built when a subscriber first needs it.
    full: Option<Arc<Vec<pb::ClusterUpdate>>>,
}

struct Tracks {
    clusters: Vec<Track>,
    read_only: bool,
}

pub struct Publisher {
    /// This hub run: versions of another run mean nothing here.
    epoch: u64,
    tracks: Mutex<Tracks>,
    updates: broadcast::Sender<Arc<pb::FleetUpdate>>,
    metrics: Arc<Metrics>,
    /// Set when the hub stops: every subscription then ends, so a graceful shutdown does
    /// not wait for streams that never end.
    closing: watch::Sender<bool>,
}

impl Publisher {
    pub fn new(initial: &FleetState, metrics: Arc<Metrics>) -> Arc<Publisher> {
        // Nanoseconds at start: distinct between runs, and never 0 (a client's "none").
        let epoch = u64::try_from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(1)).unwrap_or(1).max(1);
        let clusters = initial
            .clusters
            .iter()
            .map(|c| Track {
                name: c.name.clone(),
                version: 1,
                last: c.clone(),
                history: VecDeque::new(),
                history_items: 0,
                full: None,
            })
            .collect();
        let (updates, _) = broadcast::channel(SUBSCRIBER_BACKLOG);
        Arc::new(Publisher {
            epoch,
            tracks: Mutex::new(Tracks { clusters, read_only: initial.read_only }),
            updates,
            metrics,
            closing: watch::channel(false).0,
        })
    }

    /// End every subscription (the hub is stopping).
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves once [`Publisher::close`] was called.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut closing = self.closing.subscribe();
        async move {
            let _ = closing.wait_for(|closed| *closed).await;
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Publish every change of the fleet's state until the fleet stops.
    pub async fn run(self: Arc<Self>, mut state: watch::Receiver<Arc<FleetState>>) {
        loop {
            let now = state.borrow_and_update().clone();
            self.publish(&now);
            if state.changed().await.is_err() {
                return;
            }
        }
    }

    /// Fold `state` in: every cluster that changed gets a new version and one update, all
    /// of them broadcast as one message.
    pub fn publish(&self, state: &FleetState) {
        let mut tracks = self.lock();
        tracks.read_only = state.read_only;
        let mut changed = Vec::new();
        for (track, now) in tracks.clusters.iter_mut().zip(&state.clusters) {
            if let Some(update) = track.advance(now) {
                changed.push(update);
            }
        }
        if changed.is_empty() {
            return;
        }
        let clusters = changed.iter().map(|u| (**u).clone()).collect();
        let message = pb::FleetUpdate { epoch: self.epoch, read_only: state.read_only, clusters, ..Default::default() };
        // Sent under the lock: a subscriber's first state and the updates after it can
        // neither overlap nor leave a gap.
        // No subscriber yet is no error: the update is in the history for whoever comes.
        let _ = self.updates.send(Arc::new(message));
        self.metrics.published();
    }

    /// A new subscriber: its first state (every cluster, in full or as the deltas since
    /// the versions it holds) and its place in the stream of updates after it.
    pub fn subscribe(
        &self,
        request: &pb::SubscribeRequest,
        caller: &Caller,
    ) -> (First, broadcast::Receiver<Arc<pb::FleetUpdate>>) {
        let mut tracks = self.lock();
        let receiver = self.updates.subscribe();
        let resume = (request.epoch == self.epoch).then_some(&request.versions);
        let first = self.first_state(&mut tracks, resume, caller);
        (first, receiver)
    }

    /// A fresh full state, for a subscriber that fell behind (and after it, the updates
    /// still to come on a new receiver).
    pub fn resync(&self, caller: &Caller) -> (First, broadcast::Receiver<Arc<pb::FleetUpdate>>) {
        let mut tracks = self.lock();
        let receiver = self.updates.subscribe();
        (self.first_state(&mut tracks, None, caller), receiver)
    }

    /// What a first state is made of, taken under the lock as shared pieces only (the
    /// cluster in full is built once per version and then shared by every subscriber):
    /// nothing of the state is copied while every other subscriber and the publisher wait.
    fn first_state(&self, tracks: &mut Tracks, resume: Option<&HashMap<String, u64>>, caller: &Caller) -> First {
        let clusters = tracks
            .clusters
            .iter_mut()
            .map(|track| {
                let held = resume.and_then(|versions| versions.get(&track.name)).copied();
                match held.and_then(|v| track.since(v)) {
                    Some(missed) => missed,
                    None => Part::Full(track.full()),
                }
            })
            .collect();
        First {
            epoch: self.epoch,
            read_only: tracks.read_only,
            role: caller.role.to_string(),
            user: caller.user.clone(),
            clusters,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracks> {
        // A panic while publishing leaves plain data behind; carry on with it.
        self.tracks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A subscriber's first state as the publisher handed it out: shared pieces, turned into
/// messages one at a time as the stream sends them ([`First::messages`]).
pub struct First {
    epoch: u64,
    read_only: bool,
    role: String,
    user: String,
    clusters: Vec<Part>,
}

/// One cluster in a first state.
enum Part {
    /// The client holds the current version: one empty update naming it.
    UpToDate(Box<pb::ClusterUpdate>),
    /// The deltas since the version the client holds.
    Missed(Vec<Arc<pb::ClusterUpdate>>),
    /// The cluster in full, in chunks: the first goes in the first message, each other in
    /// a message of its own.
    Full(Arc<Vec<pb::ClusterUpdate>>),
}

/// The messages of a first state, each built when it is sent.
pub type Messages = Box<dyn Iterator<Item = pb::FleetUpdate> + Send>;

impl First {
    /// The first message (every cluster: what it missed, or its first chunk), then the
    /// rest of each cluster's chunks, one message each. Only the message being sent is
    /// ever a copy; the pieces stay shared.
    pub fn messages(self) -> Messages {
        let First { epoch, read_only, role, user, clusters } = self;
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for part in clusters {
            match part {
                Part::UpToDate(update) => first.push(*update),
                Part::Missed(missed) => first.extend(missed.iter().map(|u| (**u).clone())),
                Part::Full(full) => {
                    first.extend(full.first().cloned());
                    rest.push(full);
                }
            }
        }
        let head = pb::FleetUpdate { epoch, full: true, read_only, role, user, clusters: first };
        let tail = rest.into_iter().flat_map(move |full| {
            (1..full.len()).map(move |i| pb::FleetUpdate {
                epoch,
                read_only,
                clusters: vec![full[i].clone()],
                ..Default::default()
            })
        });
        Box::new(std::iter::once(head).chain(tail))
    }

    /// The full states it shares (each cluster's, where it was sent in full).
    pub fn shared_full_states(&self) -> Vec<&Arc<Vec<pb::ClusterUpdate>>> {
        self.clusters
            .iter()
            .filter_map(|p| match p {
                Part::Full(full) => Some(full),
                _ => None,
            })
            .collect()
    }
}

impl Track {
    /// The update that takes the last published state to `now`, if anything changed.
    fn advance(&mut self, now: &ClusterState) -> Option<Arc<pb::ClusterUpdate>> {
        let mut update = pb::ClusterUpdate {
            name: self.name.clone(),
            base_version: self.version,
            version: self.version + 1,
            attempts: now.attempts,
            last_refresh_ms: now.last_refresh_ms,
            ..Default::default()
        };
        let mut changed = now.attempts != self.last.attempts || now.last_refresh_ms != self.last.last_refresh_ms;
        if now.health != self.last.health {
            update.health = Some(wire::health_to_pb(&now.health));
            changed = true;
        }
        if now.kind != self.last.kind
            || now.capabilities != self.last.capabilities
            || now.spec_fields != self.last.spec_fields
            || now.shape_fields != self.last.shape_fields
            || now.placement != self.last.placement
        {
            update.info = Some(wire::info_to_pb(now));
            changed = true;
        }
        let same_snapshot = match (&self.last.snapshot, &now.snapshot) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_snapshot && let Some(new) = &now.snapshot {
            changed |= diff_snapshot(self.last.snapshot.as_deref(), new, &mut update);
        }
        let same_telemetry = match (&self.last.gpu_use, &now.gpu_use) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_telemetry
            || now.telemetry_error != self.last.telemetry_error
            || now.telemetry_tried != self.last.telemetry_tried
        {
            // A new reading goes out with each GPU's newest point; the client appends it.
            update.telemetry = Some(wire::telemetry_to_pb(now, false));
            changed = true;
        }
        if !changed {
            return None;
        }
        let update = Arc::new(update);
        self.version += 1;
        self.last = now.clone();
        self.full = None;
        self.history_items += items(&update);
        self.history.push_back(update.clone());
        while self.history.len() > HISTORY_UPDATES || (self.history_items > HISTORY_ITEMS && self.history.len() > 1) {
            if let Some(old) = self.history.pop_front() {
                self.history_items -= items(&old);
            }
        }
        Some(update)
    }

    /// The updates after `version` (shared), or `None` when they are no longer all held
    /// (or the version is not one this cluster had). Up to date: one empty update naming it.
    fn since(&self, version: u64) -> Option<Part> {
        if version == self.version {
            return Some(Part::UpToDate(Box::new(pb::ClusterUpdate {
                name: self.name.clone(),
                version,
                base_version: version,
                attempts: self.last.attempts,
                last_refresh_ms: self.last.last_refresh_ms,
                ..Default::default()
            })));
        }
        let start = self.history.iter().position(|u| u.base_version == version)?;
        Some(Part::Missed(self.history.iter().skip(start).cloned().collect()))
    }

    /// The cluster in full at the current version (built once per version): a first
    /// chunk that replaces, then chunks that add to it at the same version.
    fn full(&mut self) -> Arc<Vec<pb::ClusterUpdate>> {
        if let Some(full) = &self.full {
            return full.clone();
        }
        let c = &self.last;
        let mut update = pb::ClusterUpdate {
            name: self.name.clone(),
            version: self.version,
            base_version: self.version,
            replace: true,
            info: Some(wire::info_to_pb(c)),
            health: Some(wire::health_to_pb(&c.health)),
            attempts: c.attempts,
            last_refresh_ms: c.last_refresh_ms,
            telemetry: Some(wire::telemetry_to_pb(c, true)),
            ..Default::default()
        };
        let mut chunks = Vec::new();
        if let Some(s) = &c.snapshot {
            update.meta = Some(wire::meta_to_pb(s));
            let mut jobs = s.jobs.chunks(FULL_CHUNK);
            let mut nodes = s.nodes.chunks(FULL_CHUNK);
            let (mut first_jobs, mut first_nodes) = (jobs.next(), nodes.next());
            update.jobs = first_jobs.take().unwrap_or_default().iter().map(wire::job_to_pb).collect();
            update.nodes = first_nodes.take().unwrap_or_default().iter().map(wire::node_to_pb).collect();
            let more = |jobs: &[crate::model::Job], nodes: &[crate::model::Node]| pb::ClusterUpdate {
                name: self.name.clone(),
                version: self.version,
                base_version: self.version,
                attempts: c.attempts,
                last_refresh_ms: c.last_refresh_ms,
                jobs: jobs.iter().map(wire::job_to_pb).collect(),
                nodes: nodes.iter().map(wire::node_to_pb).collect(),
                ..Default::default()
            };
            chunks.push(update);
            chunks.extend(jobs.map(|j| more(j, &[])));
            chunks.extend(nodes.map(|n| more(&[], n)));
        } else {
            chunks.push(update);
        }
        let last = chunks.len().saturating_sub(1);
        for chunk in &mut chunks[..last] {
            chunk.more = true;
        }
        let full = Arc::new(chunks);
        self.full = Some(full.clone());
        full
    }
}

/// Jobs and nodes an update carries (what its history costs).
fn items(update: &pb::ClusterUpdate) -> usize {
    let gpus = update.telemetry.as_ref().map_or(0, |t| t.gpus.len());
    update.jobs.len() + update.nodes.len() + update.removed_jobs.len() + update.removed_nodes.len() + gpus + 1
}

/// Put into `update` what differs between `old` and `new`; whether anything did.
pub fn diff_snapshot(old: Option<&Snapshot>, new: &Snapshot, update: &mut pb::ClusterUpdate) -> bool {
    let Some(old) = old else {
        update.meta = Some(wire::meta_to_pb(new));
        update.jobs = new.jobs.iter().map(wire::job_to_pb).collect();
        update.nodes = new.nodes.iter().map(wire::node_to_pb).collect();
        return true;
    };
    let mut changed = false;
    if old.taken_at != new.taken_at || old.release != new.release || old.queues != new.queues || old.notes != new.notes
    {
        update.meta = Some(wire::meta_to_pb(new));
        changed = true;
    }
    let (jobs, removed_jobs) = diff_by(&old.jobs, &new.jobs, |j| j.job_ref.id.as_str());
    update.jobs = jobs.into_iter().map(wire::job_to_pb).collect();
    update.removed_jobs = removed_jobs;
    let (nodes, removed_nodes) = diff_by(&old.nodes, &new.nodes, |n| n.name.as_str());
    update.nodes = nodes.into_iter().map(wire::node_to_pb).collect();
    update.removed_nodes = removed_nodes;
    changed
        || !update.jobs.is_empty()
        || !update.removed_jobs.is_empty()
        || !update.nodes.is_empty()
        || !update.removed_nodes.is_empty()
}

/// The items of `new` that are not in `old` as they are, and the keys of `old` that `new`
/// no longer has.
fn diff_by<'a, T: PartialEq>(old: &'a [T], new: &'a [T], key: impl Fn(&T) -> &str) -> (Vec<&'a T>, Vec<String>) {
    let before: HashMap<&str, &T> = old.iter().map(|item| (key(item), item)).collect();
    let mut kept = 0;
    let mut changed = Vec::new();
    for item in new {
        match before.get(key(item)) {
            Some(was) => {
                kept += 1;
                if *was != item {
                    changed.push(item);
                }
            }
            None => changed.push(item),
        }
    }
    // Nothing of the old set is gone when every old key was met again.
    let removed = if kept == before.len() {
        Vec::new()
    } else {
        let now: std::collections::HashSet<&str> = new.iter().map(&key).collect();
        before.keys().filter(|k| !now.contains(*k)).map(|k| k.to_string()).collect()
    };
    (changed, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterState, Job, JobRef, JobState};
    use crate::serve::auth::Role;

    fn state(jobs: usize) -> FleetState {
        let mut c = ClusterState::new("hpc", "slurm");
        let jobs = (0..jobs).map(|i| Job::new(JobRef::new("hpc", i.to_string().as_str()), JobState::Running)).collect();
        c.snapshot = Some(Arc::new(Snapshot { cluster: "hpc".into(), jobs, ..Snapshot::default() }));
        FleetState { clusters: vec![c], read_only: false, version: 1 }
    }

    #[test]
    fn subscribers_share_one_full_state_and_get_their_messages_one_at_a_time() {
        let publisher = Publisher::new(&state(0), Arc::new(Metrics::default()));
        publisher.publish(&state(1000));
        let caller = Caller { user: "bob".into(), role: Role::Viewer };
        let (a, _) = publisher.subscribe(&pb::SubscribeRequest::default(), &caller);
        let (b, _) = publisher.subscribe(&pb::SubscribeRequest::default(), &caller);
        let (shared_a, shared_b) = (a.shared_full_states(), b.shared_full_states());
        assert_eq!(shared_a.len(), 1);
        assert!(Arc::ptr_eq(shared_a[0], shared_b[0]), "each subscriber got a copy of the state");
        let messages: Vec<pb::FleetUpdate> = a.messages().collect();
        assert_eq!(messages.len(), 1000usize.div_ceil(FULL_CHUNK));
        assert!(messages[0].full && messages[0].clusters[0].replace && messages[0].user == "bob");
        let jobs: usize = messages.iter().flat_map(|m| &m.clusters).map(|c| c.jobs.len()).sum();
        assert_eq!(jobs, 1000);
        assert!(messages[1..].iter().all(|m| !m.full && m.clusters.len() == 1));
    }
}
