//! The hub's replicas sharing clusters through Leases (`serve::lease::LeaseKeeper`) against the
//! Kubernetes fake, with short timings (2 s Leases renewed every 500 ms): one holder per
//! cluster, holdings spread, failover after a stop, fencing before takeover when a replica
//! loses the API server, and conditional writes.
//!
//! Last, a fleet gated by such flags polls and acts on a cluster only while its flag is true.
//!
//! Every keeper's "may poll" flags are recorded as they change; each test ends by checking that
//! no two keepers ever had the flag of one cluster true at once. Waits are bounded and bounds
//! generous: the machines running these are busy.

use crate::kube_fake::{FakeApi, fixtures};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::Registry;
use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::config::{ClusterConfig, Config};
use flightdeck::fleet::gate::Gate;
use flightdeck::fleet::{Fleet, FleetOptions, Member, TelemetryOptions};
use flightdeck::model::{Action, NodeAction, NodeRef};
use flightdeck::serve::lease::{Identity, LeaseKeeper, LeaseSettings, Owner, cluster_lease_name};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

const NAMESPACE: &str = "hub";
const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(500);
/// How long any wait may take before the test fails: several lease terms on a busy machine.
const WAIT: Duration = Duration::from_secs(20);
const CLUSTERS: [&str; 2] = ["gpu-a", "gpu-b"];

fn settings(replica: &str) -> LeaseSettings {
    let identity = Identity::new(replica, &format!("{replica}.hub.svc:7443")).unwrap();
    LeaseSettings::new(NAMESPACE, identity).with_timing(LEASE, RENEW).unwrap()
}

/// One change of one keeper's flag for one cluster.
#[derive(Clone, Debug)]
struct Flip {
    at: Instant,
    replica: String,
    cluster: String,
    may_poll: bool,
}

/// Every flag change of every keeper it was shown.
#[derive(Clone, Default)]
struct Recorder {
    flips: Arc<Mutex<Vec<Flip>>>,
}

impl Recorder {
    fn watch(&self, replica: &str, keeper: &LeaseKeeper) {
        for cluster in keeper.clusters() {
            let mut rx = keeper.may_poll(&cluster).expect("a flag per cluster");
            let flips = self.flips.clone();
            let replica = replica.to_owned();
            tokio::spawn(async move {
                loop {
                    let may_poll = *rx.borrow_and_update();
                    let flip =
                        Flip { at: Instant::now(), replica: replica.clone(), cluster: cluster.clone(), may_poll };
                    flips.lock().unwrap().push(flip);
                    if rx.changed().await.is_err() {
                        return;
                    }
                }
            });
        }
    }

    fn flips(&self) -> Vec<Flip> {
        let mut flips = self.flips.lock().unwrap().clone();
        flips.sort_by_key(|f| f.at);
        flips
    }

    /// The first instant `replica`'s flag for `cluster` was `may_poll` at or after `from`.
    fn first(&self, replica: &str, cluster: &str, may_poll: bool, from: Instant) -> Option<Instant> {
        self.flips()
            .into_iter()
            .find(|f| f.replica == replica && f.cluster == cluster && f.may_poll == may_poll && f.at >= from)
            .map(|f| f.at)
    }

    /// Replays every flip: at no moment two replicas may poll one cluster.
    fn assert_never_two_at_once(&self) {
        let mut polling: BTreeMap<String, BTreeMap<String, bool>> = BTreeMap::new();
        for f in self.flips() {
            polling.entry(f.cluster.clone()).or_default().insert(f.replica.clone(), f.may_poll);
            let now: Vec<&String> =
                polling[&f.cluster].iter().filter(|(_, on)| **on).map(|(replica, _)| replica).collect();
            assert!(now.len() <= 1, "{} polled by {now:?} at once ({f:?})", f.cluster);
        }
    }
}

fn clusters() -> Vec<String> {
    CLUSTERS.iter().map(|c| (*c).to_owned()).collect()
}

async fn start(fake: &FakeApi, recorder: &Recorder, replica: &str) -> LeaseKeeper {
    let keeper = LeaseKeeper::start(fake.client().await, settings(replica), clusters());
    recorder.watch(replica, &keeper);
    keeper
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) -> Instant {
    let deadline = Instant::now() + WAIT;
    loop {
        if ok() {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "timed out after {WAIT:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each cluster held by exactly one of `keepers`, and no keeper holding more than `most`.
fn settled(keepers: &[&LeaseKeeper], most: usize) -> bool {
    let held: Vec<Vec<String>> = keepers.iter().map(|k| k.held()).collect();
    let each_once = CLUSTERS.iter().all(|c| held.iter().filter(|h| h.iter().any(|x| x == c)).count() == 1);
    each_once && held.iter().all(|h| h.len() <= most)
}

fn holder_on_server(fake: &FakeApi, cluster: &str) -> Option<String> {
    let lease = fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), &cluster_lease_name(cluster))?;
    lease.pointer("/spec/holderIdentity").and_then(|v| v.as_str()).map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_keepers_over_two_clusters_hold_one_each_and_see_each_other() {
    let fake = FakeApi::start().await;
    let recorder = Recorder::default();
    let a = start(&fake, &recorder, "hub-a").await;
    let b = start(&fake, &recorder, "hub-b").await;
    eventually("one cluster each", || settled(&[&a, &b], 1) && a.held().len() == 1).await;

    // Stable over several renewals, and the server agrees with the flags.
    tokio::time::sleep(LEASE).await;
    assert!(settled(&[&a, &b], 1), "a: {:?}, b: {:?}", a.held(), b.held());
    let (a_cluster, b_cluster) = (a.held()[0].clone(), b.held()[0].clone());
    assert_eq!(holder_on_server(&fake, &a_cluster).as_deref(), Some("hub-a@hub-a.hub.svc:7443"));
    assert_eq!(holder_on_server(&fake, &b_cluster).as_deref(), Some("hub-b@hub-b.hub.svc:7443"));

    // Each finds the other's peer address through the Lease of the cluster it does not hold.
    eventually("a sees b's cluster owner", || {
        a.owners().get(&b_cluster) == Some(&Owner::Replica(settings("hub-b").identity().clone()))
    })
    .await;
    let owner = &a.owners()[&b_cluster];
    assert!(matches!(owner, Owner::Replica(id) if id.peer() == "hub-b.hub.svc:7443"), "{owner:?}");
    assert_eq!(b.owners()[&b_cluster], Owner::Replica(settings("hub-b").identity().clone()));
    recorder.assert_never_two_at_once();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_keepers_over_two_clusters_spread_one_each_at_most() {
    let fake = FakeApi::start().await;
    let recorder = Recorder::default();
    let a = start(&fake, &recorder, "hub-a").await;
    let b = start(&fake, &recorder, "hub-b").await;
    let c = start(&fake, &recorder, "hub-c").await;
    eventually("each cluster once, nobody with both", || settled(&[&a, &b, &c], 1)).await;
    tokio::time::sleep(LEASE).await;
    assert!(settled(&[&a, &b, &c], 1), "a: {:?}, b: {:?}, c: {:?}", a.held(), b.held(), c.held());
    recorder.assert_never_two_at_once();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_keeper_s_cluster_passes_within_a_lease_and_a_renew_period() {
    let fake = FakeApi::start().await;
    let recorder = Recorder::default();
    let a = start(&fake, &recorder, "hub-a").await;
    let b = start(&fake, &recorder, "hub-b").await;
    eventually("one cluster each", || settled(&[&a, &b], 1) && a.held().len() == 1).await;
    let orphan = a.held()[0].clone();
    let transitions_before = transitions(&fake, &orphan);

    let dropped = Instant::now();
    drop(a);
    let taken = eventually("b takes both", || b.held().len() == 2).await;
    let took = taken - dropped;
    // Lease (2 s) + renew period (0.5 s), plus slack for a busy machine.
    assert!(took <= LEASE + RENEW + Duration::from_secs(3), "took {took:?}");
    assert!(took >= LEASE - RENEW, "taken before the dropped keeper's lease could have run out: {took:?}");
    assert_eq!(transitions(&fake, &orphan), transitions_before + 1, "one more transition");
    assert_eq!(holder_on_server(&fake, &orphan).as_deref(), Some("hub-b@hub-b.hub.svc:7443"));
    recorder.assert_never_two_at_once();
}

fn transitions(fake: &FakeApi, cluster: &str) -> i64 {
    fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), &cluster_lease_name(cluster))
        .and_then(|l| l.pointer("/spec/leaseTransitions").and_then(|v| v.as_i64()))
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keeper_cut_off_from_the_api_stops_polling_before_another_takes_over() {
    let fake = FakeApi::start().await;
    let recorder = Recorder::default();
    let (client, cut) = fake.cuttable_client().await;
    let a = LeaseKeeper::start(client, settings("hub-a"), clusters());
    recorder.watch("hub-a", &a);
    let b = start(&fake, &recorder, "hub-b").await;
    eventually("one cluster each", || settled(&[&a, &b], 1) && a.held().len() == 1).await;
    let lost = a.held()[0].clone();

    let cut_at = Instant::now();
    cut.cancel();
    // The recorder notes a flag's flip from its own task, a moment after the flip: wait for
    // the note, not only for b's answer (a loaded machine ran the check in between).
    eventually("b takes a's cluster", || b.held().len() == 2 && recorder.first("hub-b", &lost, true, cut_at).is_some())
        .await;
    let stopped = recorder.first("hub-a", &lost, false, cut_at).expect("a stopped polling");
    let taken = recorder.first("hub-b", &lost, true, cut_at).expect("b started polling");
    assert!(stopped < taken, "a stopped at {:?}, b took over at {:?} after the cut", stopped - cut_at, taken - cut_at);
    // a stops within its lease less a renew period of its last renew, itself at most a renew
    // period before the cut; slack for a busy machine.
    assert!(stopped - cut_at <= LEASE + Duration::from_secs(2), "a stopped {:?} after the cut", stopped - cut_at);
    assert!(a.held().is_empty(), "a cut off holds nothing: {:?}", a.held());
    recorder.assert_never_two_at_once();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_resource_version_is_refused_and_the_holder_keeps_its_lease() {
    let fake = FakeApi::start().await;
    let recorder = Recorder::default();
    let keeper = LeaseKeeper::start(fake.client().await, settings("hub-a"), vec!["gpu-a".to_owned()]);
    recorder.watch("hub-a", &keeper);
    eventually("the keeper holds gpu-a", || keeper.held() == ["gpu-a"]).await;

    // An intruder read the Lease, the keeper renewed it since, the intruder's write is stale.
    let leases: Api<Lease> = Api::namespaced(fake.client().await, NAMESPACE);
    let name = cluster_lease_name("gpu-a");
    let stale = leases.get(&name).await.unwrap();
    let rv = stale.metadata.resource_version.clone();
    eventually("a renewal", || {
        fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), &name)
            .and_then(|l| l.pointer("/metadata/resourceVersion").and_then(|v| v.as_str()).map(str::to_owned))
            != rv
    })
    .await;
    let mut intruding = stale.clone();
    if let Some(spec) = intruding.spec.as_mut() {
        spec.holder_identity = Some("intruder@10.9.9.9:1".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
    }
    match leases.replace(&name, &PostParams::default(), &intruding).await {
        Err(kube::Error::Api(s)) => assert_eq!((s.code, s.reason.as_str()), (409, "Conflict")),
        other => panic!("expected 409 Conflict, got {other:?}"),
    }
    tokio::time::sleep(RENEW * 2).await;
    assert_eq!(keeper.held(), ["gpu-a"], "the holder keeps its lease");
    assert_eq!(holder_on_server(&fake, "gpu-a").as_deref(), Some("hub-a@hub-a.hub.svc:7443"));

    // A write on the current version wins (retried while it races a renewal): the keeper sees
    // another holder, stops, and leaves the Lease alone while it is live.
    let mut tries = 0;
    loop {
        let mut current = leases.get(&name).await.unwrap();
        if let Some(spec) = current.spec.as_mut() {
            spec.holder_identity = Some("intruder@10.9.9.9:1".into());
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            spec.lease_duration_seconds = Some(3600);
        }
        match leases.replace(&name, &PostParams::default(), &current).await {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.code == 409 && tries < 10 => tries += 1,
            Err(e) => panic!("the intruder's write on the current version: {e:?}"),
        }
    }
    eventually("the keeper stops", || keeper.held().is_empty()).await;
    let intruder = Owner::Replica(Identity::new("intruder", "10.9.9.9:1").unwrap());
    eventually("the owner is the intruder", || keeper.owners()["gpu-a"] == intruder).await;
    tokio::time::sleep(RENEW * 2).await;
    assert!(keeper.held().is_empty(), "a live foreign holder is left alone");
    assert_eq!(holder_on_server(&fake, "gpu-a").as_deref(), Some("intruder@10.9.9.9:1"));
    recorder.assert_never_two_at_once();
}

/// Two Kubernetes clusters (a fake each) in a fleet whose gates the test holds.
fn gated_fleet(dir: &std::path::Path, fakes: &[FakeApi], gates: Vec<Option<Gate>>) -> Fleet {
    let members = CLUSTERS
        .iter()
        .zip(fakes)
        .map(|(name, fake)| {
            let cfg = ClusterConfig::new(*name, KubeConfig::context_of(fake.kubeconfig(dir, name), *name))
                .with_timeout(Duration::from_secs(5))
                .with_refresh(Duration::from_millis(100));
            let backend = Arc::new(KubeBackend::new(&cfg));
            Member { backend, kind: "kubernetes".into(), refresh: cfg.refresh, timeout: cfg.timeout }
        })
        .collect();
    let opts = FleetOptions { read_only: false, poll: true, audit: None, actor: "tester".into() };
    Fleet::start_gated(members, opts, TelemetryOptions { off: true, ..TelemetryOptions::default() }, gates)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_fleet_polls_and_acts_only_while_its_gate_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let fakes = [FakeApi::start().await, FakeApi::start().await];
    for fake in &fakes {
        fake.put_all(fixtures::standard_cluster());
    }
    let (open_a, gate_a) = watch::channel(true);
    let (open_b, gate_b) = watch::channel(false);
    let fleet = gated_fleet(dir.path(), &fakes, vec![Some(gate_a), Some(gate_b)]);

    let st = fleet.wait_for(WAIT, |st| st.clusters[0].attempts >= 3).await;
    assert!(st.clusters[0].health.is_fresh(), "{:?}", st.clusters[0].health);
    assert_eq!(st.clusters[1].attempts, 0, "a closed gate: never refreshed");
    assert!(fakes[1].requests().is_empty(), "a closed gate: its API server never asked");
    let cordon = |cluster: &str| Action::Node {
        node: NodeRef { cluster: cluster.into(), name: fixtures::NODE_H100_A.into() },
        action: NodeAction::Cordon,
    };
    let refused = fleet.perform(cordon("gpu-b")).await;
    let why = refused.result.expect_err("acting on a cluster not held is refused");
    assert!(why.contains("held by another hub replica"), "{why}");
    assert!(fakes[1].requests().is_empty(), "the refused action reached nobody");

    // The gate opens: polled; it closes: no more refreshes.
    open_b.send_replace(true);
    let st = fleet.wait_for(WAIT, |st| st.clusters[1].health.is_fresh()).await;
    assert!(st.clusters[1].health.is_fresh(), "{:?}", st.clusters[1].health);
    assert!(fleet.perform(cordon("gpu-b")).await.is_ok(), "held: the action is carried out");
    open_a.send_replace(false);
    // A refresh under way when it closed is dropped; give it a moment, then count.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = fleet.state().clusters[0].attempts;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fleet.state().clusters[0].attempts, before, "a closed gate stops refreshes at once");
    assert!(fleet.state().clusters[1].attempts > 0);
    drop(open_a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_built_gated_polls_only_the_entries_given_an_open_gate() {
    let dir = tempfile::tempdir().unwrap();
    let fakes = [FakeApi::start().await, FakeApi::start().await];
    let mut text = String::new();
    for (name, fake) in CLUSTERS.iter().zip(&fakes) {
        fake.put_all(fixtures::standard_cluster());
        let kubeconfig = fake.kubeconfig(dir.path(), name);
        text.push_str(&format!(
            "[[cluster]]\nname = \"{name}\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"{name}\"\n\
             refresh_seconds = 1\ntimeout_seconds = 5\n",
            kubeconfig.display()
        ));
    }
    let config = Config::from_toml_str(&text, Path::new("/test/config.toml"), &Registry::builtin()).unwrap();
    // What `serve --replicas-via` does: one gate per configured entry; gpu-b has none here.
    let (_open, gate) = watch::channel(true);
    let opts = FleetOptions { read_only: false, poll: true, audit: None, actor: "tester".into() };
    let fleet = Fleet::builder(&config)
        .without_telemetry()
        .gated(HashMap::from([("gpu-a".to_owned(), gate)]))
        .connect(opts)
        .await
        .unwrap();
    let st = fleet.wait_for(WAIT, |st| st.clusters[0].health.is_fresh()).await;
    assert!(st.clusters[0].health.is_fresh(), "{:?}", st.clusters[0].health);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fleet.state().clusters[1].attempts, 0, "an entry without a gate is never polled");
    assert!(fakes[1].requests().is_empty(), "its API server never asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_departed_replica_s_own_lease_is_deleted_long_after_it_ran_out() {
    let fake = FakeApi::start().await;
    let lease = |name: &str, renewed: &str| {
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"holderIdentity": "old@10.0.0.1:1", "leaseDurationSeconds": 2, "renewTime": renewed},
        })
    };
    fake.put(lease("flightdeck-replica-departed", "2020-01-01T00:00:00.000000Z"));
    let recent = Timestamp::now().to_string();
    fake.put(lease("flightdeck-replica-recent", &recent));
    let keeper = LeaseKeeper::start(fake.client().await, settings("hub-a"), clusters());
    eventually("the departed replica's lease deleted", || {
        fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), "flightdeck-replica-departed").is_none()
    })
    .await;
    assert!(
        fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), "flightdeck-replica-recent").is_some(),
        "a lease run out only just now is kept"
    );
    assert!(fake.get("coordination.k8s.io/v1", "Lease", Some(NAMESPACE), "flightdeck-replica-hub-a").is_some());
    drop(keeper);
}
