//! Three hub replicas in one process sharing two clusters through the Kubernetes fake's
//! Leases (2 s Leases renewed every 500 ms), each serving gRPC on loopback: a subscriber to
//! any replica gets every cluster (the ones it does not hold relayed from their owners), and
//! when an owner is killed its cluster goes stale, then fresh again from the new owner, on the
//! stream the subscriber already holds.

use crate::kube_fake::{FakeApi, fixtures};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::hub::link::Mirror;
use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::config::ClusterConfig;
use flightdeck::fleet::AuditLog;
use flightdeck::fleet::{Fleet, FleetOptions, Member, TelemetryOptions};
use flightdeck::model::Health;
use flightdeck::model::{Action, NodeAction, NodeRef};
use flightdeck::serve::auth::sha256_hex;
use flightdeck::serve::forward::Forwarder;
use flightdeck::serve::lease::{Identity, LeaseKeeper, LeaseSettings};
use flightdeck::serve::listen::ListenAddr;
use flightdeck::serve::peers::PeerOptions;
use flightdeck::serve::{Replication, ServeOptions, relay};
use flightdeck::wire::pb;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const NAMESPACE: &str = "hub";
const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(500);
const WAIT: Duration = Duration::from_secs(30);
const CLUSTERS: [&str; 2] = ["gpu-a", "gpu-b"];
const TOKEN: &str = "replicas-share-this-token";
const ALICE: &str = "alice-operator-token";
const BOB: &str = "bob-viewer-token";

/// One replica: its Lease keeper, its gated fleet, and its server.
struct Replica {
    id: String,
    keeper: Option<LeaseKeeper>,
    fleet: Option<Arc<Fleet>>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<Result<(), String>>>,
    addr: SocketAddr,
    audit: AuditLog,
}

impl Replica {
    async fn start(id: &str, leases: &FakeApi, clusters: &[FakeApi], dir: &Path) -> Replica {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let identity = Identity::new(id, &addr.to_string()).unwrap();
        let settings = LeaseSettings::new(NAMESPACE, identity).with_timing(LEASE, RENEW).unwrap();
        let names = CLUSTERS.iter().map(|c| (*c).to_owned());
        let keeper = LeaseKeeper::start(leases.client().await, settings, names);
        let members = CLUSTERS
            .iter()
            .zip(clusters)
            .map(|(name, fake)| {
                let cfg = ClusterConfig::new(*name, KubeConfig::context_of(fake.kubeconfig(dir, name), *name))
                    .with_timeout(Duration::from_secs(5))
                    .with_refresh(Duration::from_millis(200));
                let backend = Arc::new(KubeBackend::new(&cfg));
                Member { backend, kind: "kubernetes".into(), refresh: cfg.refresh, timeout: cfg.timeout }
            })
            .collect();
        let gates = CLUSTERS.iter().map(|c| keeper.may_poll(c)).collect();
        let audit = AuditLog::new(dir.join(id).join("audit.jsonl"));
        let opts =
            FleetOptions { read_only: false, poll: true, audit: Some(audit.clone()), actor: format!("{id}@test") };
        let telemetry = TelemetryOptions { off: true, ..TelemetryOptions::default() };
        let fleet = Arc::new(Fleet::start_gated(members, opts, telemetry, gates));
        let peers = PeerOptions { tls: false, ca_file: None, token: Some(token_file(dir)) };
        let ownership: Arc<dyn relay::Ownership> = Arc::new(keeper.view());
        let replication = Replication {
            published: relay::start(fleet.subscribe(), ownership.clone(), peers.clone()),
            forward: Some(Forwarder::new(ownership, peers)),
        };
        let opts = ServeOptions {
            listen: ListenAddr::Tcp(addr),
            tls: None,
            health_listen: None,
            metrics_listen: None,
            subscribers: Default::default(),
            tokens: Some(tokens(dir)),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(flightdeck::serve::serve_published(fleet.clone(), replication, opts, async move {
            let _ = stopped.await;
        }));
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Replica {
            id: id.into(),
            keeper: Some(keeper),
            fleet: Some(fleet),
            stop: Some(stop),
            served: Some(served),
            addr,
            audit,
        }
    }

    fn holds(&self) -> Vec<String> {
        self.keeper.as_ref().map(LeaseKeeper::held).unwrap_or_default()
    }

    /// Gone without a goodbye: its Leases left to run out, its server and fleet stopped.
    async fn kill(&mut self) {
        drop(self.keeper.take());
        let _ = self.stop.take().map(|s| s.send(()));
        if let Some(served) = self.served.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), served).await;
        }
        drop(self.fleet.take());
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
    }
}

fn tokens(dir: &Path) -> PathBuf {
    let path = dir.join("tokens");
    let lines = format!(
        "{} replicas operator\n{} alice operator\n{} bob viewer\n",
        sha256_hex(TOKEN),
        sha256_hex(ALICE),
        sha256_hex(BOB)
    );
    std::fs::write(&path, lines).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

fn token_file(dir: &Path) -> flightdeck::backend::http::TokenSource {
    let path = dir.join("peer-token");
    std::fs::write(&path, TOKEN).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    flightdeck::backend::http::TokenSource::File(path)
}

/// One cluster's health as a subscriber saw it, every update.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    cluster: String,
    health: Health,
    jobs_or_nodes: usize,
    version: u64,
}

/// A subscription's mirror, what it saw, and its task (ending only if the stream does).
type Subscriber = (Arc<Mutex<Mirror>>, Arc<Mutex<Vec<Seen>>>, JoinHandle<String>);

/// Subscribes to `addr` once and records every cluster's health after each message.
fn subscriber(addr: SocketAddr) -> Subscriber {
    let mirror = Arc::new(Mutex::new(Mirror::default()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (m, s) = (mirror.clone(), seen.clone());
    let task = tokio::spawn(async move {
        let channel =
            tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
        let mut client = pb::hub_client::HubClient::new(channel);
        let mut request = tonic::Request::new(pb::SubscribeRequest::default());
        request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let mut stream = client.subscribe(request).await.expect("subscribe").into_inner();
        loop {
            match stream.message().await {
                Ok(Some(update)) => {
                    let mut mirror = m.lock().unwrap();
                    assert!(mirror.apply(update), "the subscriber fell out of step");
                    let now = Instant::now();
                    for (name, c) in &mirror.clusters {
                        let record = Seen {
                            at: now,
                            cluster: name.clone(),
                            health: c.health.clone(),
                            jobs_or_nodes: c.jobs.len() + c.nodes.len(),
                            version: c.version,
                        };
                        s.lock().unwrap().push(record);
                    }
                }
                Ok(None) => return "the stream ended".to_owned(),
                Err(status) => return format!("the stream failed: {status}"),
            }
        }
    });
    (mirror, seen, task)
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out after {WAIT:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn all_fresh(mirror: &Mutex<Mirror>) -> bool {
    let mirror = mirror.lock().unwrap();
    CLUSTERS.iter().all(|c| mirror.clusters.get(*c).is_some_and(|m| m.health.is_fresh() && !m.nodes.is_empty()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_serves_every_cluster_and_a_killed_owner_s_cluster_comes_back_fresh_on_the_same_stream() {
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    let clusters = [FakeApi::start().await, FakeApi::start().await];
    for fake in &clusters {
        fake.put_all(fixtures::standard_cluster());
    }
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b", "hub-c"] {
        replicas.push(Replica::start(id, &leases, &clusters, dir.path()).await);
    }
    eventually("each cluster held once, one per replica", || {
        let held: Vec<Vec<String>> = replicas.iter().map(Replica::holds).collect();
        CLUSTERS.iter().all(|c| held.iter().filter(|h| h.iter().any(|x| x == c)).count() == 1)
            && held.iter().all(|h| h.len() <= 1)
    })
    .await;

    // A subscriber on every replica sees both clusters, fresh, whichever it holds.
    let subscribers: Vec<_> = replicas.iter().map(|r| subscriber(r.addr)).collect();
    for (replica, (mirror, _, _)) in replicas.iter().zip(&subscribers) {
        eventually(&format!("both clusters fresh through {}", replica.id), || all_fresh(mirror)).await;
    }

    // Kill gpu-a's owner; watch through a replica that survives.
    let owner = replicas.iter().position(|r| r.holds().contains(&"gpu-a".to_owned())).expect("an owner");
    let watcher = (owner + 1) % replicas.len();
    let (mirror, seen, stream) = &subscribers[watcher];
    let killed_at = Instant::now();
    replicas[owner].kill().await;
    eventually("gpu-a held by a survivor", || {
        replicas.iter().enumerate().any(|(i, r)| i != owner && r.holds().contains(&"gpu-a".to_owned()))
    })
    .await;
    let stale_then_fresh = || {
        let seen = seen.lock().unwrap();
        let after = seen.iter().filter(|s| s.at > killed_at && s.cluster == "gpu-a");
        after.skip_while(|s| !matches!(s.health, Health::Stale { .. })).any(|s| s.health.is_fresh())
    };
    eventually("gpu-a stale, then fresh again through the watcher", stale_then_fresh).await;
    assert!(all_fresh(mirror));
    let after: Vec<Seen> =
        seen.lock().unwrap().iter().filter(|s| s.at > killed_at && s.cluster == "gpu-a").cloned().collect();
    let stale = after.iter().position(|s| matches!(s.health, Health::Stale { .. }));
    let stale = stale.unwrap_or_else(|| panic!("gpu-a never showed stale after its owner died: {after:?}"));
    assert!(after[stale..].iter().any(|s| s.health.is_fresh()), "stale, then fresh: {after:?}");
    assert!(after.iter().all(|s| s.jobs_or_nodes > 0), "the last picture stays while stale: {after:?}");
    assert!(!stream.is_finished(), "the watcher's stream never ended: it did not reconnect");
    // Versions only go up on the stream, across the change of owner.
    let versions: Vec<u64> = after.iter().map(|s| s.version).collect();
    assert!(versions.windows(2).all(|w| w[0] <= w[1]), "versions went back: {versions:?}");
    // A client of the dead replica resuming on a survivor with what it held is sent every
    // cluster in full (another replica's versions mean nothing there), and stays in step.
    let (orphan, _, ended) = &subscribers[owner];
    eventually("the dead replica's subscription ended", || ended.is_finished()).await;
    let resume = orphan.lock().unwrap().resume();
    assert!(resume.epoch != 0 && !resume.versions.is_empty());
    let mut client = raw(replicas[watcher].addr).await;
    let mut stream = client.subscribe(authed(resume, TOKEN)).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(first.full && first.clusters.iter().all(|c| c.replace), "a resume on another replica starts over");
    assert!(orphan.lock().unwrap().apply(first));
    let elapsed = killed_at.elapsed();
    assert!(elapsed < LEASE + RENEW + Duration::from_secs(10), "failover took {elapsed:?}");
    eprintln!("gpu-a fresh again through a surviving replica {elapsed:?} after its owner was killed");
}

async fn raw(addr: SocketAddr) -> pb::hub_client::HubClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    pb::hub_client::HubClient::new(channel)
}

fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

/// The audit records of `replica` for `action`, as (who, outcome), intents left out.
fn audited(replica: &Replica, action: &str) -> Vec<(String, String)> {
    let records = replica.audit.read_all().unwrap_or_default();
    records.into_iter().filter(|r| r.action == action && r.outcome != "intent").map(|r| (r.who, r.outcome)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_and_a_log_read_through_a_replica_that_does_not_hold_the_cluster_are_done_once_at_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    let clusters = [FakeApi::start().await, FakeApi::start().await];
    for fake in &clusters {
        fake.put_all(fixtures::standard_cluster());
    }
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b", "hub-c"] {
        replicas.push(Replica::start(id, &leases, &clusters, dir.path()).await);
    }
    eventually("gpu-a held", || replicas.iter().any(|r| r.holds().contains(&"gpu-a".to_owned()))).await;
    let owner = replicas.iter().position(|r| r.holds().contains(&"gpu-a".to_owned())).unwrap();
    let entry = replicas.iter().position(|r| r.holds().is_empty()).expect("a replica holding nothing");
    let (mirror, _, _) = subscriber(replicas[entry].addr);
    eventually("both clusters fresh through the entry replica", || all_fresh(&mirror)).await;

    let cordon = Action::Node {
        node: NodeRef { cluster: "gpu-a".into(), name: fixtures::NODE_H100_A.into() },
        action: NodeAction::Cordon,
    };
    let path = format!("/api/v1/nodes/{}", fixtures::NODE_H100_A);
    clusters[0].clear_requests();
    let mut client = raw(replicas[entry].addr).await;
    let ask = pb::ActRequest { actions: vec![flightdeck::wire::action_to_pb(&cordon)] };
    let mut outcomes = client.act(authed(ask.clone(), ALICE)).await.unwrap().into_inner();
    let outcome = outcomes.message().await.unwrap().expect("one outcome");
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(outcome.index, 0);
    assert!(outcomes.message().await.unwrap().is_none(), "one outcome for one action");
    assert_eq!(clusters[0].requests_to("PATCH", &path).len(), 1, "carried out once");
    let via = format!("alice@hub via {}", replicas[entry].id);
    assert_eq!(audited(&replicas[owner], "cordon"), vec![(via.clone(), "ok".to_owned())]);
    for (i, r) in replicas.iter().enumerate().filter(|(i, _)| *i != owner) {
        assert!(audited(r, "cordon").is_empty(), "replica {i} audited a cordon it did not carry out");
    }

    // A viewer is refused where it asked, and nothing reaches the owner.
    let refused = client.act(authed(ask, BOB)).await.expect_err("a viewer's cordon");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert_eq!(clusters[0].requests_to("PATCH", &path).len(), 1);

    // A client cannot pass itself off as a forwarding replica.
    let mut forged = authed(pb::ActRequest::default(), ALICE);
    forged.metadata_mut().insert_bin("x-flightdeck-via-bin", tonic::metadata::MetadataValue::from_bytes(b"hub-x"));
    let forged = client.act(forged).await.expect_err("a forged forward");
    assert_eq!(forged.code(), tonic::Code::PermissionDenied, "{forged:?}");

    // A log read of a job on gpu-a, through the entry replica: read and audited at the owner.
    let handle = {
        let mirror = mirror.lock().unwrap();
        let jobs = &mirror.clusters["gpu-a"].jobs;
        jobs.values().find_map(|j| j.stdout.clone()).expect("a job with a log on gpu-a")
    };
    let ask =
        pb::ReadLogRequest { cluster: "gpu-a".into(), handle: handle.as_str().into(), from: None, max_bytes: 4096 };
    let read = client.read_log(authed(ask, ALICE)).await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(audited(&replicas[owner], "read-log"), vec![(via, "allowed".to_owned())]);
    assert!(audited(&replicas[entry], "read-log").is_empty(), "audited at the owner only");
}
