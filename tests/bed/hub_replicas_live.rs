//! Three hub replicas in one process over the test bed's two Slurm clusters, sharing them
//! through Leases on the Kubernetes fake (2 s Leases renewed every 500 ms): `sdiag` shows one
//! poller per cluster, and killing the owner of a cluster moves it to a survivor within a
//! Lease and a renew period (plus a refresh), a subscriber of a survivor seeing it stale, then
//! fresh, on the stream it holds; and a replica cut off from the API server stops polling
//! its live cluster before another replica starts. Needs `tests/testbed/up.sh`.

use crate::common;
use crate::kube_fake::FakeApi;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::hub_link::Mirror;
use flightdeck::fleet::{Fleet, FleetOptions, Member, TelemetryOptions};
use flightdeck::model::Health;
use flightdeck::serve::auth::sha256_hex;
use flightdeck::serve::lease::{Identity, LeaseKeeper, LeaseSettings};
use flightdeck::serve::listen::ListenAddr;
use flightdeck::serve::peers::PeerOptions;
use flightdeck::serve::{Replication, ServeOptions, relay};
use flightdeck::wire::pb;
use tokio::sync::oneshot;
use tokio::time::Instant;

use common::*;

const CLUSTERS: [&str; 2] = ["fd22", "fd24"];
const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(500);
const REFRESH: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(60);
const TOKEN: &str = "live-replicas-token-4242";

struct Replica {
    keeper: Option<LeaseKeeper>,
    fleet: Option<Arc<Fleet>>,
    stop: Option<oneshot::Sender<()>>,
    addr: SocketAddr,
}

impl Replica {
    async fn start(id: &str, leases: &FakeApi, dir: &Path) -> Replica {
        Replica::start_with(id, leases.client().await, dir).await
    }

    /// A replica whose Lease keeper reaches the API server with `client`.
    async fn start_with(id: &str, client: kube::Client, dir: &Path) -> Replica {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let settings =
            LeaseSettings::new("hub", Identity::new(id, &addr.to_string()).unwrap()).with_timing(LEASE, RENEW).unwrap();
        let keeper = LeaseKeeper::start(client, settings, CLUSTERS.iter().map(|c| (*c).to_owned()));
        let members = CLUSTERS
            .iter()
            .map(|c| Member {
                backend: backend(c),
                kind: "slurm".into(),
                refresh: REFRESH,
                timeout: Duration::from_secs(20),
            })
            .collect();
        let gates = CLUSTERS.iter().map(|c| keeper.may_poll(c)).collect();
        let opts = FleetOptions { read_only: false, poll: true, audit: None, actor: format!("{id}@live") };
        let telemetry = TelemetryOptions { off: true, ..TelemetryOptions::default() };
        let fleet = Arc::new(Fleet::start_gated(members, opts, telemetry, gates));
        let token = dir.join(format!("{id}-peer-token"));
        std::fs::write(&token, TOKEN).unwrap();
        std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let peers =
            PeerOptions { tls: false, ca_file: None, token: Some(flightdeck::backend::http::TokenSource::File(token)) };
        let ownership: Arc<dyn relay::Ownership> = Arc::new(keeper.view());
        let replication = Replication::relayed(&fleet, ownership, peers);
        let tokens = dir.join(format!("{id}-tokens"));
        std::fs::write(&tokens, format!("{} replicas operator\n", sha256_hex(TOKEN))).unwrap();
        std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let opts = ServeOptions {
            listen: ListenAddr::Tcp(addr),
            tls: None,
            health_listen: None,
            metrics_listen: None,
            subscribers: Default::default(),
            tokens: Some(tokens),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(flightdeck::serve::serve_published(fleet.clone(), replication, opts, async move {
            let _ = stopped.await;
        }));
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Replica { keeper: Some(keeper), fleet: Some(fleet), stop: Some(stop), addr }
    }

    fn holds(&self, cluster: &str) -> bool {
        self.keeper.as_ref().is_some_and(|k| k.held().iter().any(|c| c == cluster))
    }

    fn attempts(&self, cluster: &str) -> u64 {
        let Some(fleet) = &self.fleet else { return 0 };
        fleet.state().cluster(cluster).map_or(0, |c| c.attempts)
    }

    async fn kill(&mut self) {
        drop(self.keeper.take());
        let _ = self.stop.take().map(|s| s.send(()));
        drop(self.fleet.take());
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
    }
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out after {WAIT:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every (time, cluster, health) a subscriber saw.
type Seen = Arc<Mutex<Vec<(Instant, String, Health)>>>;

/// What a subscriber of `addr` sees on one stream, and its task.
fn subscribe(addr: SocketAddr) -> (Seen, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let task = tokio::spawn(async move {
        let channel =
            tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
        let mut client = pb::hub_client::HubClient::new(channel).max_decoding_message_size(64 << 20);
        let mut request = tonic::Request::new(pb::SubscribeRequest::default());
        request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let mut stream = client.subscribe(request).await.expect("subscribe").into_inner();
        let mut mirror = Mirror::default();
        while let Ok(Some(update)) = stream.message().await {
            assert!(mirror.apply(update), "out of step");
            let now = Instant::now();
            for (name, c) in &mirror.clusters {
                s.lock().unwrap().push((now, name.clone(), c.health.clone()));
            }
        }
    });
    (seen, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_poll_each_cluster_once_and_a_killed_owner_s_cluster_is_fresh_again_through_a_survivor() {
    let _ = testbed_config();
    let _locks: Vec<_> = CLUSTERS.iter().flat_map(|c| [cluster_lock(c), cluster_quiet(c)]).collect();
    let probe = backend("fd24");
    let dir = tempfile::tempdir().unwrap();

    // One poller's cost over the window, for comparison.
    let alone = {
        let member = Member {
            backend: backend("fd24"),
            kind: "slurm".into(),
            refresh: REFRESH,
            timeout: Duration::from_secs(20),
        };
        let fleet =
            Fleet::start(vec![member], FleetOptions { read_only: false, poll: true, audit: None, actor: "t".into() });
        fleet.wait_for(WAIT, |s| s.clusters[0].snapshot.is_some()).await;
        let (before, tries) = (probe.rpc_counts().await.expect("sdiag"), fleet.state().clusters[0].attempts);
        tokio::time::sleep(WINDOW).await;
        let rpcs = probe.rpc_counts().await.expect("sdiag").queries_since(&before);
        (rpcs, fleet.state().clusters[0].attempts - tries)
    };
    let per_refresh = alone.0.div_ceil(alone.1.max(1));

    let leases = FakeApi::start().await;
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b", "hub-c"] {
        replicas.push(Replica::start(id, &leases, dir.path()).await);
    }
    eventually("each cluster held once", || {
        CLUSTERS.iter().all(|c| replicas.iter().filter(|r| r.holds(c)).count() == 1)
    })
    .await;
    for c in CLUSTERS {
        eventually("a first refresh", || replicas.iter().any(|r| r.holds(c) && r.attempts(c) > 0)).await;
    }

    // sdiag: the three replicas cost fd24 what one poller does.
    let attempts_before: Vec<u64> = replicas.iter().map(|r| r.attempts("fd24")).collect();
    let before = probe.rpc_counts().await.expect("sdiag");
    tokio::time::sleep(WINDOW).await;
    let rpcs = probe.rpc_counts().await.expect("sdiag").queries_since(&before);
    let grew: Vec<u64> = replicas.iter().zip(&attempts_before).map(|(r, b)| r.attempts("fd24") - b).collect();
    eprintln!(
        "three replicas: {rpcs} query RPCs on fd24 in {WINDOW:?} (refreshes per replica {grew:?}); one poller: {} in {} refreshes",
        alone.0, alone.1
    );
    assert_eq!(grew.iter().filter(|g| **g > 0).count(), 1, "one replica polls fd24: {grew:?}");
    assert!(rpcs.abs_diff(alone.0) <= per_refresh * 2, "three replicas cost {rpcs} RPCs, one poller {}", alone.0);

    // Kill fd24's owner; a subscriber of a survivor sees it stale, then fresh.
    let owner = replicas.iter().position(|r| r.holds("fd24")).unwrap();
    let survivor = (owner + 1) % 3;
    let (seen, stream) = subscribe(replicas[survivor].addr);
    eventually("fd24 fresh through the survivor", || {
        seen.lock().unwrap().iter().any(|(_, c, h)| c == "fd24" && h.is_fresh())
    })
    .await;
    let killed = Instant::now();
    replicas[owner].kill().await;
    eventually("fd24 stale, then fresh", || {
        let seen = seen.lock().unwrap();
        let after = seen.iter().filter(|(at, c, _)| *at > killed && c == "fd24");
        after.skip_while(|(_, _, h)| !matches!(h, Health::Stale { .. })).any(|(_, _, h)| h.is_fresh())
    })
    .await;
    let took = killed.elapsed();
    eprintln!("fd24 fresh again through a survivor {took:?} after its owner was killed");
    assert!(took < LEASE + RENEW + REFRESH + Duration::from_secs(10), "took {took:?}");
    assert!(!stream.is_finished(), "the subscriber never reconnected");
    assert_eq!(CLUSTERS.iter().filter(|c| replicas.iter().any(|r| r.holds(c))).count(), 2, "both clusters held");
}

/// Every change of a replica's "may poll" flag for a cluster: (time, replica, cluster, flag).
type Flips = Arc<Mutex<Vec<(Instant, String, String, bool)>>>;

fn record_flips(flips: &Flips, name: &str, replica: &Replica) {
    let keeper = replica.keeper.as_ref().expect("a live replica");
    for cluster in CLUSTERS {
        let mut rx = keeper.may_poll(cluster).expect("a flag per cluster");
        let (flips, name) = (flips.clone(), name.to_owned());
        tokio::spawn(async move {
            loop {
                let flag = *rx.borrow_and_update();
                flips.lock().unwrap().push((Instant::now(), name.clone(), cluster.to_owned(), flag));
                if rx.changed().await.is_err() {
                    return;
                }
            }
        });
    }
}

fn first_flip(flips: &Flips, name: &str, cluster: &str, flag: bool, after: Instant) -> Option<Instant> {
    let flips = flips.lock().unwrap();
    flips.iter().find(|(at, r, c, f)| *at > after && r == name && c == cluster && *f == flag).map(|(at, ..)| *at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_from_the_api_server_stops_polling_its_slurm_cluster_before_another_starts() {
    let _ = testbed_config();
    let _read = clusters_read();
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    // hub-a reaches the API server through a link that can be cut; hub-b directly.
    let (client, cut) = leases.cuttable_client().await;
    let a = Replica::start_with("hub-a", client, dir.path()).await;
    let b = Replica::start("hub-b", &leases, dir.path()).await;
    let flips: Flips = Arc::default();
    record_flips(&flips, "hub-a", &a);
    record_flips(&flips, "hub-b", &b);
    eventually("one cluster each", || {
        CLUSTERS.iter().all(|c| a.holds(c) != b.holds(c)) && CLUSTERS.iter().any(|c| a.holds(c))
    })
    .await;
    let lost = *CLUSTERS.iter().find(|c| a.holds(c)).unwrap();
    eventually("hub-a polls its cluster on the test bed", || a.attempts(lost) > 0).await;

    let cut_at = Instant::now();
    cut.cancel();
    eventually("hub-b takes hub-a's cluster", || b.holds(lost)).await;
    let stopped = first_flip(&flips, "hub-a", lost, false, cut_at).expect("hub-a stopped polling");
    let started = first_flip(&flips, "hub-b", lost, true, cut_at).expect("hub-b started polling");
    eprintln!(
        "{lost}: hub-a stopped {:?} after the cut, hub-b started {:?} after it",
        stopped - cut_at,
        started - cut_at
    );
    assert!(stopped < started, "hub-a stopped at {:?}, hub-b started at {:?}", stopped - cut_at, started - cut_at);
    // Within its lease (less a renew period) of its last renewal, itself before the cut; slack for a busy machine.
    assert!(stopped - cut_at <= LEASE + Duration::from_secs(2), "hub-a stopped {:?} after the cut", stopped - cut_at);

    // On the live side: hub-b refreshes the cluster, hub-a no more (a refresh under way when
    // its flag fell is dropped unrecorded).
    let a_then = a.attempts(lost);
    let b_then = b.attempts(lost);
    eventually("hub-b refreshes the cluster twice", || b.attempts(lost) >= b_then + 2).await;
    assert_eq!(a.attempts(lost), a_then, "hub-a refreshed {lost} after losing it");
    assert!(!a.holds(lost), "hub-a, cut off, holds {lost}");
}
