//! What a hub replica publishes (issue #32): the clusters whose Lease it holds from its own
//! fleet, every other cluster relayed from the replica that holds it, as a hub client
//! mirrors a hub (`backend::hub_link`). A `Subscribe` to any replica gets every cluster.
//!
//! When a cluster's owner changes, the relay follows: while nobody serves it (the owner
//! died, the Lease not yet taken, the new owner's first refresh under way) the last picture
//! stays, marked stale with why; then the new owner's picture, fresh. Subscribers see this
//! as ordinary updates on the stream they hold: nobody reconnects.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{Notify, watch};

use super::lease::{Identity, LeaseView, Owner};
use super::peers::{self, PeerOptions};
use crate::backend::hub_link::{Link, Mirrored};
use crate::model::{ClusterState, FleetState, Health};

/// How often ownership is read again (besides every local change and every relayed update).
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Who owns the clusters, as this replica knows it: the Lease keeper, or a test's stand-in.
pub trait Ownership: Send + Sync + 'static {
    /// This replica.
    fn me(&self) -> &Identity;
    /// Each cluster's holder as last read.
    fn owners(&self) -> BTreeMap<String, Owner>;
    /// Whether this replica may poll `cluster` now (its fencing flag).
    fn holds(&self, cluster: &str) -> bool;
}

impl Ownership for LeaseView {
    fn me(&self) -> &Identity {
        self.identity()
    }

    fn owners(&self) -> BTreeMap<String, Owner> {
        LeaseView::owners(self)
    }

    fn holds(&self, cluster: &str) -> bool {
        LeaseView::holds(self, cluster)
    }
}

/// Where a cluster's picture comes from now.
#[derive(Clone, Debug, PartialEq)]
enum Source {
    /// This replica polls it; the local fleet's state counts once it refreshed more than
    /// `attempts` times since taking over (until then its picture is older than what was shown).
    Local { attempts: u64 },
    /// The replica holding its Lease publishes it.
    Peer(Identity),
    /// Nobody serves it now (why).
    Nobody(String),
}

/// Where a cluster this replica publishes comes from now, as `/metrics` says it.
#[derive(Clone, Debug, PartialEq)]
pub enum Served {
    /// This replica polls it (holds its Lease).
    Here,
    /// Relayed from the replica holding its Lease.
    Relayed(Identity),
    /// Nobody serves it now (why): its last picture stays, stale.
    Nobody(String),
}

/// One published cluster's figures: where it comes from, and how many of its changes were
/// published here while relaying it from another replica.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub served: Served,
    pub relayed_updates: u64,
}

/// What the relay did, per cluster (by name), for `/metrics`.
#[derive(Debug, Default)]
pub struct Figures(Mutex<BTreeMap<String, Figure>>);

impl Figures {
    pub fn now(&self) -> BTreeMap<String, Figure> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// The relay's memory of one cluster.
struct Track {
    source: Source,
    /// What was published last: kept (marked stale) while nobody serves the cluster.
    shown: Option<ClusterState>,
}

/// Merges the local fleet's state with the relayed clusters, on a task of its own, for as long
/// as the returned receiver (or a clone) is held; what it does is counted in `figures`.
pub fn start(
    local: watch::Receiver<Arc<FleetState>>,
    ownership: Arc<dyn Ownership>,
    peers: PeerOptions,
    figures: Arc<Figures>,
) -> watch::Receiver<Arc<FleetState>> {
    let first = local.borrow().clone();
    let (tx, rx) = watch::channel(first);
    tokio::spawn(run(local, ownership, peers, tx, figures));
    rx
}

async fn run(
    mut local: watch::Receiver<Arc<FleetState>>,
    ownership: Arc<dyn Ownership>,
    peers: PeerOptions,
    out: watch::Sender<Arc<FleetState>>,
    figures: Arc<Figures>,
) {
    let mut relay = Relay { ownership, peers, links: HashMap::new(), tracks: HashMap::new(), woken: Arc::default() };
    let mut version = 0u64;
    loop {
        let now = local.borrow_and_update().clone();
        let merged = relay.merge(&now);
        // Only this task sends, so what is shown cannot change between the look and the send.
        let (fits, changed) = {
            let shown = out.borrow();
            let fits = shown.read_only == now.read_only && shown.clusters.len() == merged.len();
            let changed: Vec<bool> =
                merged.iter().enumerate().map(|(i, new)| !fits || !same_state(&shown.clusters[i], new)).collect();
            (fits, changed)
        };
        relay.tally(&merged, &changed, &figures);
        if !fits || changed.contains(&true) {
            version += 1;
            out.send_replace(Arc::new(FleetState { clusters: merged, read_only: now.read_only, version }));
        }
        if out.is_closed() {
            return;
        }
        tokio::select! {
            moved = local.changed() => if moved.is_err() { return },
            () = relay.woken.notified() => {}
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
}

/// Whether two pictures of a cluster publish the same (shared parts compared by identity,
/// as the publisher does).
fn same_state(a: &ClusterState, b: &ClusterState) -> bool {
    a.name == b.name
        && a.health == b.health
        && a.attempts == b.attempts
        && a.last_refresh_ms == b.last_refresh_ms
        && a.kind == b.kind
        && a.capabilities == b.capabilities
        && a.spec_fields == b.spec_fields
        && a.shape_fields == b.shape_fields
        && a.placement == b.placement
        && same_arc(a.snapshot.as_ref(), b.snapshot.as_ref())
        && same_arc(a.gpu_use.as_ref(), b.gpu_use.as_ref())
        && a.telemetry_error == b.telemetry_error
        && a.telemetry_tried == b.telemetry_tried
}

fn same_arc<T>(x: Option<&Arc<T>>, y: Option<&Arc<T>>) -> bool {
    match (x, y) {
        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
        (None, None) => true,
        _ => false,
    }
}

struct Relay {
    ownership: Arc<dyn Ownership>,
    peers: PeerOptions,
    /// One link per peer address some cluster is relayed from.
    links: HashMap<String, Arc<Link>>,
    tracks: HashMap<String, Track>,
    /// Woken by every relayed update.
    woken: Arc<Notify>,
}

impl Relay {
    fn merge(&mut self, local: &FleetState) -> Vec<ClusterState> {
        let owners = self.ownership.owners();
        let me = self.ownership.me().clone();
        let mut merged = Vec::with_capacity(local.clusters.len());
        let mut used: Vec<String> = Vec::new();
        for here in &local.clusters {
            let source = self.source(here, owners.get(&here.name), &me);
            let state = match &source {
                Source::Local { attempts } if here.attempts > *attempts => Ok(here.clone()),
                Source::Local { .. } => {
                    Err("this replica took the cluster over; its first refresh is under way".into())
                }
                Source::Peer(owner) => {
                    used.push(owner.peer().to_owned());
                    self.relayed(here, owner)
                }
                Source::Nobody(why) => Err(why.clone()),
            };
            let track = self.tracks.entry(here.name.clone()).or_insert(Track { source: source.clone(), shown: None });
            track.source = source;
            let shown = match state {
                Ok(fresh) => fresh,
                // Nothing shown yet: the local fleet's picture (connecting) until there is one.
                Err(why) => match &track.shown {
                    Some(last) => stale(last.clone(), &why),
                    None => here.clone(),
                },
            };
            track.shown = Some(shown.clone());
            merged.push(shown);
        }
        // Links no cluster is relayed from any more are let go (their follower ends).
        self.links.retain(|peer, _| used.contains(peer));
        merged
    }

    /// `figures` after publishing `merged` (`changed[i]`: whether cluster `i` changed).
    fn tally(&self, merged: &[ClusterState], changed: &[bool], figures: &Figures) {
        let mut figures = figures.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (cluster, changed) in merged.iter().zip(changed) {
            let Some(track) = self.tracks.get(&cluster.name) else { continue };
            let served = match &track.source {
                Source::Local { .. } => Served::Here,
                Source::Peer(owner) => Served::Relayed(owner.clone()),
                Source::Nobody(why) => Served::Nobody(why.clone()),
            };
            let figure = figures
                .entry(cluster.name.clone())
                .or_insert_with(|| Figure { served: served.clone(), relayed_updates: 0 });
            if *changed && matches!(served, Served::Relayed(_)) {
                figure.relayed_updates += 1;
            }
            figure.served = served;
        }
    }

    /// Where `here`'s picture comes from now.
    fn source(&self, here: &ClusterState, owner: Option<&Owner>, me: &Identity) -> Source {
        let before = self.tracks.get(&here.name).map(|t| &t.source);
        if self.ownership.holds(&here.name) {
            return match before {
                Some(Source::Local { attempts }) => Source::Local { attempts: *attempts },
                // Newly taken: what the local fleet holds is from before (or nothing).
                Some(_) => Source::Local { attempts: here.attempts },
                // Held from the start: nothing older was shown.
                None => Source::Local { attempts: 0 },
            };
        }
        match owner {
            Some(Owner::Replica(id)) if id == me => Source::Nobody("this replica's lease lapsed; renewing it".into()),
            Some(Owner::Replica(id)) => Source::Peer(id.clone()),
            // The API server did not answer: keep relaying from whom we did (it fences itself).
            Some(Owner::Unknown(why)) => match before {
                Some(Source::Peer(id)) => Source::Peer(id.clone()),
                _ => Source::Nobody(format!("no replica known to hold it: {why}")),
            },
            Some(Owner::Free) => Source::Nobody("no replica holds it now; one takes it over shortly".into()),
            Some(Owner::Foreign(holder)) => Source::Nobody(format!("its lease is held by {holder}, not a hub replica")),
            None => Source::Nobody("no lease covers it".into()),
        }
    }

    /// The owner's picture of `here`, or why there is none now.
    fn relayed(&mut self, here: &ClusterState, owner: &Identity) -> Result<ClusterState, String> {
        let link = match self.links.get(owner.peer()) {
            Some(link) => link.clone(),
            None => {
                let link = self.peers.link(owner.peer()).map_err(|e| format!("cannot reach {owner}: {e}"))?;
                watch_link(&link, self.woken.clone());
                peers::follow(&link);
                self.links.insert(owner.peer().to_owned(), link.clone());
                link
            }
        };
        let mut mirror = link.lock();
        if let Some(why) = &mirror.down {
            return Err(format!("relayed from {owner}, which does not answer: {why}"));
        }
        let Some(mirrored) = mirror.clusters.get_mut(&here.name) else {
            return Err(format!("waiting for {owner}'s picture of it"));
        };
        if mirrored.version == 0 || mirrored.partial {
            return Err(format!("waiting for {owner}'s picture of it"));
        }
        Ok(from_mirror(&here.name, mirrored))
    }
}

/// Wakes the relay on every change of `link`'s mirror (the task ends with the link).
fn watch_link(link: &Arc<Link>, woken: Arc<Notify>) {
    let mut changes = link.changed.subscribe();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            woken.notify_one();
        }
    });
}

/// The placement a peer published, or (an older peer said none) this build's own for the kind.
fn relayed_placement(info: &crate::wire::ClusterInfo) -> crate::model::Placement {
    info.placement.clone().unwrap_or_else(|| crate::backend::Registry::builtin().placement(&info.kind))
}

/// A cluster as its owner published it.
fn from_mirror(name: &str, m: &mut Mirrored) -> ClusterState {
    let mut c = ClusterState::new(name, m.info.kind.clone());
    c.capabilities = m.info.capabilities;
    c.spec_fields = m.info.spec_fields.clone();
    c.shape_fields = m.info.shape_fields.clone();
    c.placement = relayed_placement(&m.info);
    c.health = m.health.clone();
    c.snapshot = m.snapshot(name);
    c.attempts = m.attempts;
    c.last_refresh_ms = m.last_refresh_ms;
    c.gpu_use = m.telemetry.gpu_use.clone();
    c.telemetry_error = m.telemetry.error.clone();
    c.telemetry_tried = m.telemetry.tried;
    c
}

/// `last`, marked stale for `why` (since when it first went stale), its snapshot kept.
fn stale(mut last: ClusterState, why: &str) -> ClusterState {
    let error = why.to_owned();
    last.health = match last.health {
        Health::Stale { since, last_ok, .. } => Health::Stale { since, error, last_ok },
        Health::Fresh { at } => Health::Stale { since: Utc::now(), error, last_ok: Some(at) },
        Health::Connecting => Health::Stale { since: Utc::now(), error, last_ok: None },
    };
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Fixed {
        me: Identity,
        owners: Mutex<BTreeMap<String, Owner>>,
        held: Mutex<Vec<String>>,
    }

    impl Ownership for Fixed {
        fn me(&self) -> &Identity {
            &self.me
        }
        fn owners(&self) -> BTreeMap<String, Owner> {
            self.owners.lock().unwrap().clone()
        }
        fn holds(&self, cluster: &str) -> bool {
            self.held.lock().unwrap().iter().any(|c| c == cluster)
        }
    }

    fn relay(ownership: Arc<Fixed>) -> Relay {
        Relay {
            ownership,
            peers: PeerOptions::default(),
            links: HashMap::new(),
            tracks: HashMap::new(),
            woken: Arc::default(),
        }
    }

    fn fresh(name: &str, attempts: u64) -> ClusterState {
        let mut c = ClusterState::new(name, "slurm");
        c.health = Health::Fresh { at: Utc::now() };
        c.snapshot = Some(Arc::new(crate::model::Snapshot { cluster: name.into(), ..Default::default() }));
        c.attempts = attempts;
        c
    }

    #[tokio::test]
    async fn a_cluster_taken_over_shows_the_last_picture_stale_until_its_first_refresh_here() {
        let me = Identity::new("a", "127.0.0.1:1").unwrap();
        let ownership = Arc::new(Fixed {
            me: me.clone(),
            owners: Mutex::new(BTreeMap::from([("hpc".into(), Owner::Replica(me.clone()))])),
            held: Mutex::new(vec!["hpc".into()]),
        });
        let mut relay = relay(ownership.clone());
        let first = relay.merge(&FleetState { clusters: vec![fresh("hpc", 3)], read_only: false, version: 1 });
        assert!(first[0].health.is_fresh(), "held from the start: the local picture");

        // Lost, then nobody holds it: the last picture, stale, with why.
        ownership.held.lock().unwrap().clear();
        ownership.owners.lock().unwrap().insert("hpc".into(), Owner::Free);
        let lost = relay.merge(&FleetState { clusters: vec![fresh("hpc", 3)], read_only: false, version: 2 });
        assert!(matches!(&lost[0].health, Health::Stale { error, .. } if error.contains("no replica holds it")));
        assert!(Arc::ptr_eq(lost[0].snapshot.as_ref().unwrap(), first[0].snapshot.as_ref().unwrap()));

        // Taken back: stale until the local fleet refreshed once more, then fresh.
        ownership.held.lock().unwrap().push("hpc".into());
        let taken = relay.merge(&FleetState { clusters: vec![fresh("hpc", 3)], read_only: false, version: 3 });
        assert!(matches!(&taken[0].health, Health::Stale { error, .. } if error.contains("first refresh")));
        let refreshed = relay.merge(&FleetState { clusters: vec![fresh("hpc", 4)], read_only: false, version: 4 });
        assert!(refreshed[0].health.is_fresh());
        assert_eq!(refreshed[0].attempts, 4);
    }
}
