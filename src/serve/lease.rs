//! Holding one Kubernetes Lease per cluster, so that among the hub's replicas exactly one polls
//! each cluster and the others relay (issue #32). Like client-go's leader election, over kube's
//! `Api<Lease>`: a Lease `flightdeck-hub-<cluster>` in the hub's namespace, its
//! `holderIdentity` the replica (`ID@PEER`), taken when absent or run out, renewed while held,
//! every write conditional on the `resourceVersion` read (a 409 means another replica won).
//!
//! * **Fencing.** Each cluster has a "may poll" flag ([`LeaseKeeper::may_poll`]). It turns true
//!   only after a successful acquire or renew, and false as soon as the last successful one is
//!   `lease_duration - renew_period` old (a timer of its own, not waiting on a hung request):
//!   one renew period before any other replica may take the Lease, so two replicas never poll
//!   one cluster at once (clocks agreeing within that margin).
//! * **Spreading.** A replica takes a free Lease only while it holds fewer than its fair share,
//!   ceil(clusters / live replicas), and gives back those above it. Live replicas are the
//!   distinct unexpired holders seen plus itself; each replica also renews a Lease of its own
//!   (`flightdeck-replica-<id>`) so one that holds no cluster yet is counted too.
//! * **Finding peers.** [`LeaseKeeper::owners`]: each cluster's holder with its peer address,
//!   as last read.

mod rules;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use self::rules::{
    CLUSTER_LEASE_PREFIX, Identity, REPLICA_LEASE_PREFIX, cluster_lease_name, expiry, fair_share, live_holder,
    live_replicas, replica_lease_name,
};

/// How long a Lease lasts after its last renewal (`leaseDurationSeconds`), as client-go's default.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews, and how often the others look for a Lease to take.
pub const DEFAULT_RENEW_PERIOD: Duration = Duration::from_secs(5);
/// A replica's own Lease run out this many lease durations ago is deleted: a Deployment's
/// pods get new names on every restart, and their Leases would otherwise pile up.
const FORGET_AFTER_TERMS: i64 = 10;

/// Who holds what, where, and for how long.
#[derive(Clone, Debug)]
pub struct LeaseSettings {
    namespace: String,
    identity: Identity,
    lease_duration: Duration,
    renew_period: Duration,
}

impl LeaseSettings {
    /// The defaults: 15 s Leases renewed every 5 s (failover within 20 s).
    pub fn new(namespace: &str, identity: Identity) -> LeaseSettings {
        LeaseSettings {
            namespace: namespace.to_owned(),
            identity,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_period: DEFAULT_RENEW_PERIOD,
        }
    }

    /// Other timings (tests use short ones). The Lease's duration is whole seconds on the wire,
    /// and must exceed two renew periods: the flag turns false one renew period before the
    /// Lease runs out, and that must still leave room for the next renew.
    pub fn with_timing(self, lease_duration: Duration, renew_period: Duration) -> Result<LeaseSettings, String> {
        if lease_duration.subsec_nanos() != 0 || lease_duration.as_secs() == 0 || lease_duration.as_secs() > 3600 {
            return Err(format!("lease duration {lease_duration:?} must be whole seconds, 1 to 3600"));
        }
        if renew_period.is_zero() || lease_duration <= renew_period * 2 {
            return Err(format!(
                "renew period {renew_period:?} must be above zero and under half the lease duration {lease_duration:?}"
            ));
        }
        Ok(LeaseSettings { lease_duration, renew_period, ..self })
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    pub fn renew_period(&self) -> Duration {
        self.renew_period
    }

    /// How long after a successful renew's request left the flag stays true: the Lease's
    /// duration less one renew period, the margin that covers request time and clock skew.
    pub fn fence_after(&self) -> Duration {
        self.lease_duration - self.renew_period
    }

    fn duration_seconds(&self) -> i32 {
        // Bounded to 3600 by `with_timing`, 15 by default.
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// A cluster's holder as last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Not read yet, or the last read failed (why).
    Unknown(String),
    /// No live holder: the next replica under its share takes it.
    Free,
    /// A flightdeck replica holds it (this one included).
    Replica(Identity),
    /// A live holder that is not a flightdeck replica (why): left alone until it runs out.
    Foreign(String),
}

/// Holds the Leases of a fixed list of clusters for one replica, on two tasks of its own (the
/// renew loop and the fencing timer), until dropped. Dropping it turns every flag false at once
/// and leaves the Leases to run out; [`LeaseKeeper::stop`] gives them back first.
pub struct LeaseKeeper {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

struct Shared {
    settings: LeaseSettings,
    leases: Api<Lease>,
    slots: Vec<Slot>,
    /// Wakes the fencing timer when a deadline moved.
    deadlines_moved: Notify,
}

/// One cluster's Lease as this replica holds it.
struct Slot {
    cluster: String,
    lease_name: String,
    may_poll: watch::Sender<bool>,
    state: Mutex<SlotState>,
}

struct SlotState {
    /// When the flag must be false, if it is true.
    deadline: Option<Instant>,
    owner: Owner,
}

impl Slot {
    fn state(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True until `deadline`, unless that has already passed (a renew answered too late).
    fn grant(&self, deadline: Instant) -> bool {
        let mut state = self.state();
        if deadline <= Instant::now() {
            return false;
        }
        state.deadline = Some(deadline);
        self.may_poll.send_if_modified(|v| !std::mem::replace(v, true))
    }

    /// False now if the deadline has passed (checked and cleared under one lock, so a grant
    /// that just moved it is not lost); the deadline still ahead, if any.
    fn fence(&self, now: Instant) -> (bool, Option<Instant>) {
        let mut state = self.state();
        match state.deadline {
            Some(d) if d <= now => {
                state.deadline = None;
                (self.may_poll.send_if_modified(|v| std::mem::replace(v, false)), None)
            }
            ahead => (false, ahead),
        }
    }

    fn revoke(&self) -> bool {
        self.state().deadline = None;
        self.may_poll.send_if_modified(|v| std::mem::replace(v, false))
    }

    fn set_owner(&self, owner: Owner) {
        self.state().owner = owner;
    }
}

impl LeaseKeeper {
    /// Starts holding the Leases of `clusters` (duplicates ignored) in the settings' namespace.
    /// Call inside a tokio runtime. Every flag starts false.
    pub fn start(client: kube::Client, settings: LeaseSettings, clusters: impl IntoIterator<Item = String>) -> Self {
        let mut names: Vec<String> = clusters.into_iter().collect();
        names.sort();
        names.dedup();
        let slots = names
            .into_iter()
            .map(|cluster| Slot {
                lease_name: cluster_lease_name(&cluster),
                cluster,
                may_poll: watch::channel(false).0,
                state: Mutex::new(SlotState { deadline: None, owner: Owner::Unknown("not read yet".into()) }),
            })
            .collect();
        let shared = Arc::new(Shared {
            leases: Api::namespaced(client, &settings.namespace),
            settings,
            slots,
            deadlines_moved: Notify::new(),
        });
        let tasks = vec![tokio::spawn(shared.clone().renew_loop()), tokio::spawn(shared.clone().fence_loop())];
        LeaseKeeper { shared, tasks }
    }

    pub fn settings(&self) -> &LeaseSettings {
        &self.shared.settings
    }

    /// The clusters this keeper was given, in order.
    pub fn clusters(&self) -> Vec<String> {
        self.shared.slots.iter().map(|s| s.cluster.clone()).collect()
    }

    /// Whether this replica may poll or act on `cluster` now, and every change after; `None`
    /// for a cluster it was not given.
    pub fn may_poll(&self, cluster: &str) -> Option<watch::Receiver<bool>> {
        self.shared.slot(cluster).map(|s| s.may_poll.subscribe())
    }

    /// The clusters whose flag is true now.
    pub fn held(&self) -> Vec<String> {
        self.shared.slots.iter().filter(|s| *s.may_poll.borrow()).map(|s| s.cluster.clone()).collect()
    }

    /// Each cluster's holder as last read (this replica's own holdings as it last wrote them).
    pub fn owners(&self) -> BTreeMap<String, Owner> {
        self.shared.slots.iter().map(|s| (s.cluster.clone(), s.state().owner.clone())).collect()
    }

    /// A handle that reads who holds what, for as long as anyone keeps it (the relay's).
    pub fn view(&self) -> LeaseView {
        LeaseView(self.shared.clone())
    }

    /// Stops holding: every flag false first, then the held Leases given back (holder
    /// cleared) so another replica need not wait for them to run out. Errors are only logged:
    /// a Lease not given back runs out by itself.
    pub async fn stop(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        let shared = self.shared.clone();
        let mine = shared.settings.identity.encode();
        for slot in &shared.slots {
            slot.revoke();
        }
        let Ok(list) = shared.leases.list(&ListParams::default()).await else { return };
        for slot in &shared.slots {
            if let Some(lease) = list.items.iter().find(|l| l.metadata.name.as_deref() == Some(&slot.lease_name))
                && holder_of(lease) == Some(mine.as_str())
            {
                shared.release(slot, lease).await;
            }
        }
    }
}

/// Reads a [`LeaseKeeper`]'s holdings (it holds nothing itself: dropping the keeper still
/// turns every flag false).
#[derive(Clone)]
pub struct LeaseView(Arc<Shared>);

impl LeaseView {
    pub fn identity(&self) -> &Identity {
        &self.0.settings.identity
    }

    /// Each cluster's holder as last read.
    pub fn owners(&self) -> BTreeMap<String, Owner> {
        self.0.slots.iter().map(|s| (s.cluster.clone(), s.state().owner.clone())).collect()
    }

    /// Whether this replica's flag for `cluster` is true now.
    pub fn holds(&self, cluster: &str) -> bool {
        self.0.slot(cluster).is_some_and(|s| *s.may_poll.borrow())
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for slot in &self.shared.slots {
            slot.revoke();
        }
    }
}

fn holder_of(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref()?.holder_identity.as_deref()
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

impl Shared {
    fn slot(&self, cluster: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.cluster == cluster)
    }

    async fn renew_loop(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.settings.renew_period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // A hung API server must not hold the loop; the fencing timer runs regardless.
            if tokio::time::timeout(self.settings.lease_duration, self.round()).await.is_err() {
                tracing::warn!(namespace = %self.settings.namespace, "lease round timed out");
            }
        }
    }

    /// Turns each flag false at its deadline, whatever the renew loop is waiting on.
    async fn fence_loop(self: Arc<Self>) {
        loop {
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            for slot in &self.slots {
                let (stopped, ahead) = slot.fence(now);
                if stopped {
                    tracing::warn!(cluster = %slot.cluster, "lease not renewed in time: polling stops");
                }
                if let Some(d) = ahead {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = self.deadlines_moved.notified() => {}
                    }
                }
                None => self.deadlines_moved.notified().await,
            }
        }
    }

    /// One look at every Lease, then renew what is ours within the share, give back what is
    /// above it, and take free ones while under it.
    async fn round(&self) {
        let listed = match self.leases.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(namespace = %self.settings.namespace, error = %e, "cannot list leases");
                for slot in &self.slots {
                    slot.set_owner(Owner::Unknown(format!("cannot list leases: {e}")));
                }
                return;
            }
        };
        let now = Timestamp::now();
        let mine = self.settings.identity.encode();
        let ours = |l: &Lease| {
            l.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(CLUSTER_LEASE_PREFIX) || n.starts_with(REPLICA_LEASE_PREFIX))
        };
        let holders = listed.iter().filter(|l| ours(l)).filter_map(|l| live_holder(l.spec.as_ref(), now));
        let share = fair_share(self.slots.len(), live_replicas(holders, &mine));

        self.renew_presence(&listed, &mine).await;
        self.forget_departed(&listed, now).await;

        let lease_of = |slot: &Slot| listed.iter().find(|l| l.metadata.name.as_deref() == Some(&slot.lease_name));
        let mut held = Vec::new();
        let mut free = Vec::new();
        for slot in &self.slots {
            let lease = lease_of(slot);
            match lease.and_then(|l| live_holder(l.spec.as_ref(), now)) {
                Some(h) if h == mine => held.push((slot, lease)),
                Some(h) => {
                    if slot.revoke() {
                        tracing::warn!(cluster = %slot.cluster, holder = h, "lease held by another replica: polling stops");
                    }
                    slot.set_owner(Identity::parse(h).map_or_else(Owner::Foreign, Owner::Replica));
                }
                None => {
                    slot.set_owner(Owner::Free);
                    free.push((slot, lease));
                }
            }
        }
        let mut count = 0;
        for (i, (slot, lease)) in held.into_iter().enumerate() {
            let Some(lease) = lease else { continue };
            if i < share {
                if self.renew(slot, lease).await {
                    count += 1;
                }
            } else {
                self.release(slot, lease).await;
            }
        }
        for (slot, lease) in free {
            if count >= share {
                break;
            }
            if self.acquire(slot, lease).await {
                count += 1;
            }
        }
    }

    /// A successful write whose request left at `sent` keeps the flag true until then plus
    /// `fence_after`.
    fn granted(&self, slot: &Slot, sent: Instant) -> bool {
        let granted = slot.grant(sent + self.settings.fence_after());
        self.deadlines_moved.notify_one();
        granted
    }

    fn spec_now(&self, previous: Option<&LeaseSpec>, now: Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.settings.identity.encode()),
            lease_duration_seconds: Some(self.settings.duration_seconds()),
            renew_time: Some(MicroTime(now)),
            ..previous.cloned().unwrap_or_default()
        }
    }

    async fn renew(&self, slot: &Slot, lease: &Lease) -> bool {
        let sent = Instant::now();
        let mut next = lease.clone();
        next.spec = Some(self.spec_now(lease.spec.as_ref(), Timestamp::now()));
        match self.leases.replace(&slot.lease_name, &PostParams::default(), &next).await {
            Ok(_) => {
                if self.granted(slot, sent) {
                    tracing::info!(cluster = %slot.cluster, "lease renewed after a gap: polling resumes");
                }
                slot.set_owner(Owner::Replica(self.settings.identity.clone()));
                true
            }
            Err(e) if is_conflict(&e) => {
                // Someone wrote it since we read it: it may be theirs now. Stop, read again.
                slot.revoke();
                tracing::warn!(cluster = %slot.cluster, "lease changed under us: polling stops until it is read again");
                false
            }
            Err(e) => {
                // The fencing timer stops polling if this goes on.
                tracing::warn!(cluster = %slot.cluster, error = %e, "cannot renew lease");
                false
            }
        }
    }

    /// Takes a free Lease: creates it when absent, else replaces it conditionally (one more
    /// `leaseTransitions` when it passes from another holder, as client-go counts).
    async fn acquire(&self, slot: &Slot, lease: Option<&Lease>) -> bool {
        let sent = Instant::now();
        let now = Timestamp::now();
        let mine = self.settings.identity.encode();
        let written = match lease {
            None => {
                let fresh = Lease {
                    metadata: ObjectMeta {
                        name: Some(slot.lease_name.clone()),
                        labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), "flightdeck".into())])),
                        annotations: Some(BTreeMap::from([("flightdeck.dev/cluster".into(), slot.cluster.clone())])),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        acquire_time: Some(MicroTime(now)),
                        lease_transitions: Some(0),
                        ..self.spec_now(None, now)
                    }),
                };
                self.leases.create(&PostParams::default(), &fresh).await
            }
            Some(old) => {
                let previous = old.spec.as_ref();
                let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
                let taken_over = previous.and_then(|s| s.holder_identity.as_deref()) != Some(mine.as_str());
                let mut next = old.clone();
                next.spec = Some(LeaseSpec {
                    acquire_time: Some(MicroTime(now)),
                    lease_transitions: Some(if taken_over { transitions.saturating_add(1) } else { transitions }),
                    ..self.spec_now(previous, now)
                });
                self.leases.replace(&slot.lease_name, &PostParams::default(), &next).await
            }
        };
        match written {
            Ok(_) => {
                if self.granted(slot, sent) {
                    tracing::info!(cluster = %slot.cluster, "lease acquired: polling starts");
                }
                slot.set_owner(Owner::Replica(self.settings.identity.clone()));
                true
            }
            Err(e) if is_conflict(&e) => false, // another replica won: read again next round
            Err(e) => {
                tracing::warn!(cluster = %slot.cluster, error = %e, "cannot acquire lease");
                false
            }
        }
    }

    /// Gives a Lease back: the flag false first, then the holder cleared (conditionally), so
    /// another replica can take it at its next look.
    async fn release(&self, slot: &Slot, lease: &Lease) {
        slot.revoke();
        let mut next = lease.clone();
        if let Some(spec) = next.spec.as_mut() {
            spec.holder_identity = None;
        }
        match self.leases.replace(&slot.lease_name, &PostParams::default(), &next).await {
            Ok(_) => {
                tracing::info!(cluster = %slot.cluster, "lease given back for another replica");
                slot.set_owner(Owner::Free);
            }
            Err(e) => tracing::warn!(cluster = %slot.cluster, error = %e, "cannot give lease back; it runs out"),
        }
    }

    /// Deletes other replicas' own Leases long run out (conditionally: one renewed meanwhile
    /// stays). Failures are left for the next round; another replica may have deleted it.
    async fn forget_departed(&self, listed: &[Lease], now: Timestamp) {
        let own = replica_lease_name(self.settings.identity.replica());
        let grace = SignedDuration::from_secs(i64::from(self.settings.duration_seconds()) * FORGET_AFTER_TERMS);
        for lease in listed {
            let Some(name) = lease.metadata.name.as_deref() else { continue };
            if !name.starts_with(REPLICA_LEASE_PREFIX) || name == own {
                continue;
            }
            let departed = lease
                .spec
                .as_ref()
                .and_then(expiry)
                .and_then(|e| e.checked_add(grace).ok())
                .is_some_and(|forget_at| forget_at < now);
            if !departed {
                continue;
            }
            let preconditions = Preconditions { resource_version: lease.metadata.resource_version.clone(), uid: None };
            let params = DeleteParams { preconditions: Some(preconditions), ..DeleteParams::default() };
            match self.leases.delete(name, &params).await {
                Ok(_) => tracing::info!(lease = name, "deleted a departed replica's lease"),
                Err(e) => tracing::debug!(lease = name, error = %e, "cannot delete a departed replica's lease"),
            }
        }
    }

    /// This replica's own Lease, renewed every round whatever it holds, so the others count it.
    async fn renew_presence(&self, listed: &[Lease], mine: &str) {
        let name = replica_lease_name(self.settings.identity.replica());
        let now = Timestamp::now();
        let result = match listed.iter().find(|l| l.metadata.name.as_deref() == Some(&name)) {
            Some(old) => {
                let mut next = old.clone();
                next.spec = Some(self.spec_now(old.spec.as_ref(), now));
                self.leases.replace(&name, &PostParams::default(), &next).await
            }
            None => {
                let fresh = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), "flightdeck".into())])),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec { acquire_time: Some(MicroTime(now)), ..self.spec_now(None, now) }),
                };
                self.leases.create(&PostParams::default(), &fresh).await
            }
        };
        if let Err(e) = result {
            tracing::warn!(lease = %name, holder = mine, error = %e, "cannot renew this replica's lease");
        }
    }
}
