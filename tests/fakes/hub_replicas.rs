//! Three hub replicas in one process sharing two clusters through the Kubernetes fake's
//! Leases (2 s Leases renewed every 500 ms), each serving gRPC on loopback: a subscriber to
//! any replica gets every cluster (the ones it does not hold relayed from their owners), and
//! when an owner is killed its cluster goes stale, then fresh again from the new owner, on the
//! stream the subscriber already holds.
//!
//! Calls on a cluster (actions and its reads) sent to a replica that does not hold it are
//! answered and audited once, at its owner; a migration between clusters two replicas hold is
//! refused by name; a non-owner's `/metrics` says what it relays and from whom; and the
//! replicas relay and forward to each other over TLS, trusting the `--peer-ca-file` CA.

use crate::kube_fake::{FakeApi, fixtures};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::hub_link::Mirror;
use flightdeck::backend::kube::{KubeBackend, KubeConfig};
use flightdeck::config::ClusterConfig;
use flightdeck::fleet::AuditLog;
use flightdeck::fleet::{Fleet, FleetOptions, Member, TelemetryOptions};
use flightdeck::model::Health;
use flightdeck::model::{Action, NodeAction, NodeRef};
use flightdeck::serve::auth::sha256_hex;
use flightdeck::serve::lease::{Identity, LeaseKeeper, LeaseSettings};
use flightdeck::serve::listen::{ListenAddr, TlsFiles};
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

/// How the replicas of a test serve: TLS (the certificate, and the CA every replica and
/// client trusts), `/metrics`.
#[derive(Clone, Default)]
struct Setup {
    tls: Option<(TlsFiles, PathBuf)>,
    metrics: bool,
    /// Its peers reached without the CA (`--peer-ca-file` left out).
    no_peer_ca: bool,
}

/// One replica: its Lease keeper, its gated fleet, and its server.
struct Replica {
    id: String,
    keeper: Option<LeaseKeeper>,
    fleet: Option<Arc<Fleet>>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<Result<(), String>>>,
    addr: SocketAddr,
    audit: AuditLog,
    /// Where its `/metrics` answers, when asked for.
    metrics: Option<SocketAddr>,
    /// The CA its certificate is trusted through, when it serves TLS.
    ca: Option<PathBuf>,
}

impl Replica {
    async fn start(id: &str, leases: &FakeApi, clusters: &[FakeApi], dir: &Path) -> Replica {
        Replica::start_with(id, leases, clusters, dir, &Setup::default()).await
    }

    async fn start_with(id: &str, leases: &FakeApi, clusters: &[FakeApi], dir: &Path, setup: &Setup) -> Replica {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let metrics = setup.metrics.then(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap());
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
        let ca = setup.tls.as_ref().map(|(_, ca)| ca.clone());
        let peer_ca = ca.clone().filter(|_| !setup.no_peer_ca);
        let peers = PeerOptions { tls: ca.is_some(), ca_file: peer_ca, token: Some(token_file(dir)) };
        let ownership: Arc<dyn relay::Ownership> = Arc::new(keeper.view());
        let replication = Replication::relayed(&fleet, ownership, peers);
        let opts = ServeOptions {
            listen: ListenAddr::Tcp(addr),
            tls: setup.tls.as_ref().map(|(files, _)| files.clone()),
            health_listen: None,
            metrics_listen: metrics,
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
            metrics,
            ca,
        }
    }

    /// A channel to it, as a client reaches it (https with its CA when it serves TLS).
    fn channel(&self) -> tonic::transport::Channel {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", self.addr).parse().unwrap();
        flightdeck::backend::hub_link::channel::channel(&url, self.ca.as_deref(), Duration::from_secs(5)).unwrap()
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
    write_once(&path, &lines);
    path
}

fn token_file(dir: &Path) -> flightdeck::backend::http::TokenSource {
    let path = dir.join("peer-token");
    write_once(&path, TOKEN);
    flightdeck::backend::http::TokenSource::File(path)
}

/// Writes a private file the replicas of a test share, once and whole (written aside, then
/// renamed into place): a replica already serving re-reads its token file when it changes,
/// and must never find it half written.
fn write_once(path: &Path, text: &str) {
    if path.exists() {
        return;
    }
    let aside = path.with_extension("new");
    std::fs::write(&aside, text).unwrap();
    std::fs::set_permissions(&aside, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::rename(&aside, path).unwrap();
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

/// Subscribes to `replica` once and records every cluster's health after each message.
fn subscriber(replica: &Replica) -> Subscriber {
    let channel = replica.channel();
    let mirror = Arc::new(Mutex::new(Mirror::default()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (m, s) = (mirror.clone(), seen.clone());
    let task = tokio::spawn(async move {
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

/// The two clusters the replicas share (`CLUSTERS`), each a fake serving the standard fixture.
async fn two_standard_clusters() -> [FakeApi; 2] {
    let clusters = [FakeApi::start().await, FakeApi::start().await];
    for fake in &clusters {
        fake.put_all(fixtures::standard_cluster());
    }
    clusters
}

fn all_fresh(mirror: &Mutex<Mirror>) -> bool {
    let mirror = mirror.lock().unwrap();
    CLUSTERS.iter().all(|c| mirror.clusters.get(*c).is_some_and(|m| m.health.is_fresh() && !m.nodes.is_empty()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_serves_every_cluster_and_a_killed_owner_s_cluster_comes_back_fresh_on_the_same_stream() {
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    let clusters = two_standard_clusters().await;
    let mut replicas = three_settled(&leases, &clusters, dir.path(), &Setup::default()).await;

    // A subscriber on every replica sees both clusters, fresh, whichever it holds.
    let subscribers: Vec<_> = replicas.iter().map(subscriber).collect();
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
    let mut client = raw(&replicas[watcher]);
    let mut stream = client.subscribe(authed(resume, TOKEN)).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(first.full && first.clusters.iter().all(|c| c.replace), "a resume on another replica starts over");
    assert!(orphan.lock().unwrap().apply(first));
    let elapsed = killed_at.elapsed();
    assert!(elapsed < LEASE + RENEW + Duration::from_secs(10), "failover took {elapsed:?}");
    eprintln!("gpu-a fresh again through a surviving replica {elapsed:?} after its owner was killed");
}

fn raw(replica: &Replica) -> pb::hub_client::HubClient<tonic::transport::Channel> {
    pb::hub_client::HubClient::new(replica.channel())
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
    let clusters = two_standard_clusters().await;
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b", "hub-c"] {
        replicas.push(Replica::start(id, &leases, &clusters, dir.path()).await);
    }
    eventually("gpu-a held", || replicas.iter().any(|r| r.holds().contains(&"gpu-a".to_owned()))).await;
    let owner = replicas.iter().position(|r| r.holds().contains(&"gpu-a".to_owned())).unwrap();
    let entry = replicas.iter().position(|r| r.holds().is_empty()).expect("a replica holding nothing");
    let (mirror, _, _) = subscriber(&replicas[entry]);
    eventually("both clusters fresh through the entry replica", || all_fresh(&mirror)).await;

    let cordon = Action::Node {
        node: NodeRef { cluster: "gpu-a".into(), name: fixtures::NODE_H100_A.into() },
        action: NodeAction::Cordon,
    };
    let path = format!("/api/v1/nodes/{}", fixtures::NODE_H100_A);
    clusters[0].clear_requests();
    let mut client = raw(&replicas[entry]);
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

/// Three replicas over the two clusters, settled: each cluster held once, no replica holding
/// two (so one holds nothing).
async fn three_settled(leases: &FakeApi, clusters: &[FakeApi], dir: &Path, setup: &Setup) -> Vec<Replica> {
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b", "hub-c"] {
        replicas.push(Replica::start_with(id, leases, clusters, dir, setup).await);
    }
    eventually("each cluster held once, one per replica", || settled(&replicas)).await;
    replicas
}

fn settled(replicas: &[Replica]) -> bool {
    let held: Vec<Vec<String>> = replicas.iter().map(Replica::holds).collect();
    CLUSTERS.iter().all(|c| held.iter().filter(|h| h.iter().any(|x| x == c)).count() == 1)
        && held.iter().all(|h| h.len() <= 1)
}

fn holder(replicas: &[Replica], cluster: &str) -> usize {
    replicas.iter().position(|r| r.holds().iter().any(|c| c == cluster)).expect("a holder")
}

/// A call's answer, comparable: the message, or the status's code and words.
type Answer<T> = Result<T, (tonic::Code, String)>;

fn answer<T>(reply: Result<tonic::Response<T>, tonic::Status>) -> Answer<T> {
    reply.map(tonic::Response::into_inner).map_err(|s| (s.code(), s.message().to_owned()))
}

fn probe_spec() -> String {
    let spec = flightdeck::spec::JobSpec {
        name: "probe".into(),
        command: Some("nvidia-smi".into()),
        image: Some("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04".into()),
        ..Default::default()
    };
    flightdeck::wire::spec_to_json(&spec)
}

async fn metrics_text(replica: &Replica) -> String {
    let http = flightdeck::backend::http::client(Duration::from_secs(5), None).unwrap();
    let url = format!("http://{}/metrics", replica.metrics.expect("a metrics port"));
    http.get(url).send().await.unwrap().text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_through_a_replica_that_does_not_hold_the_cluster_are_answered_and_audited_at_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    let clusters = two_standard_clusters().await;
    let setup = Setup { metrics: true, ..Setup::default() };
    // A Job whose spec reads back: its container names the program it runs.
    let mut pretrain = fixtures::job_llm_pretrain();
    pretrain["spec"]["template"]["spec"]["containers"][0]["command"] = serde_json::json!(["python", "train.py"]);
    clusters[0].put(pretrain);
    let replicas = three_settled(&leases, &clusters, dir.path(), &setup).await;
    let owner = holder(&replicas, "gpu-a");
    let entry = replicas.iter().position(|r| r.holds().is_empty()).expect("a replica holding nothing");
    let (mirror, _, _) = subscriber(&replicas[entry]);
    eventually("both clusters fresh through the entry replica", || all_fresh(&mirror)).await;
    // The batch Job: a kind flightdeck reads a spec back from (a Deployment it only shows).
    let job = {
        let mirror = mirror.lock().unwrap();
        mirror.clusters["gpu-a"]
            .jobs
            .keys()
            .find(|id| id.contains("llm-pretrain"))
            .cloned()
            .expect("the batch Job on gpu-a")
    };
    let (mut through, mut direct) = (raw(&replicas[entry]), raw(&replicas[owner]));

    // Each read through the entry replica gets what the owner itself answers.
    let ask = pb::ClusterRequest { cluster: "gpu-a".into() };
    // (A diagnosis measures latency afresh: the same facts, not the same figures.)
    let forwarded = answer(through.diagnose(authed(ask.clone(), ALICE)).await);
    let asked = answer(direct.diagnose(authed(ask, ALICE)).await);
    assert!(forwarded.is_ok() && asked.is_ok(), "{forwarded:?} {asked:?}");
    assert_eq!(forwarded.unwrap().transport, asked.unwrap().transport);
    let ask = pb::SpecRequest { cluster: "gpu-a".into(), spec_json: probe_spec() };
    let forwarded = answer(through.render(authed(ask.clone(), ALICE)).await);
    assert!(forwarded.as_ref().is_ok_and(|n| !n.text.is_empty()), "{forwarded:?}");
    assert_eq!(forwarded, answer(direct.render(authed(ask, ALICE)).await));
    let ask = pb::JobRequest { cluster: "gpu-a".into(), id: job.clone() };
    let forwarded = answer(through.job_spec(authed(ask.clone(), ALICE)).await);
    assert!(forwarded.is_ok(), "the spec of gpu-a/{job}: {forwarded:?}");
    assert_eq!(forwarded, answer(direct.job_spec(authed(ask, ALICE)).await));
    let what = Some(pb::estimate_request::What::SpecJson(probe_spec()));
    let ask = pb::EstimateRequest { cluster: "gpu-a".into(), what };
    let forwarded = answer(through.estimate_start(authed(ask.clone(), ALICE)).await);
    assert_eq!(forwarded, answer(direct.estimate_start(authed(ask, ALICE)).await));

    // Audited once each, at the owner, naming the caller and the replica it came through.
    let via = format!("alice@hub via {}", replicas[entry].id);
    for read in ["diagnose", "render", "job-spec", "estimate-start"] {
        let at_owner = audited(&replicas[owner], read);
        let expected = vec![(via.clone(), "allowed".to_owned()), ("alice@hub".to_owned(), "allowed".to_owned())];
        assert_eq!(at_owner, expected, "{read} at the owner");
        assert!(audited(&replicas[entry], read).is_empty(), "{read} audited at the entry replica too");
    }

    // A viewer's read of a job that is not theirs is refused by the owner, which knows whose it is.
    let ask = pb::JobRequest { cluster: "gpu-a".into(), id: job };
    let refused = through.job_spec(authed(ask, BOB)).await.expect_err("a viewer's read of another's job");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert_eq!(
        audited(&replicas[owner], "job-spec").last(),
        Some(&(format!("bob@hub via {}", replicas[entry].id), "refused".to_owned()))
    );

    // The entry replica's /metrics: it polls neither cluster, and relays each from its owner.
    let text = metrics_text(&replicas[entry]).await;
    for cluster in CLUSTERS {
        let from = &replicas[holder(&replicas, cluster)];
        assert!(text.contains(&format!("flightdeck_hub_cluster_polled_here{{cluster=\"{cluster}\"}} 0")), "{text}");
        let line = format!(
            "flightdeck_hub_cluster_relayed_from{{cluster=\"{cluster}\",replica=\"{}\",peer=\"{}\"}} 1",
            from.id, from.addr
        );
        assert!(text.contains(&line), "{line} in {text}");
        let relayed = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("flightdeck_hub_relayed_updates_total{{cluster=\"{cluster}\"}} ")))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(relayed.is_some_and(|n| n > 0), "relayed updates of {cluster}: {text}");
    }
    // The owner's: it polls gpu-a itself and relays only gpu-b (its relay follows gpu-b's
    // holder once it looks, every 200 ms: wait for that look rather than race it).
    let mut text = metrics_text(&replicas[owner]).await;
    let deadline = Instant::now() + WAIT;
    while !text.contains("flightdeck_hub_cluster_relayed_from{cluster=\"gpu-b\"") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        text = metrics_text(&replicas[owner]).await;
    }
    assert!(text.contains("flightdeck_hub_cluster_polled_here{cluster=\"gpu-a\"} 1"), "{text}");
    assert!(!text.contains("flightdeck_hub_cluster_relayed_from{cluster=\"gpu-a\""), "{text}");
    assert!(text.contains("flightdeck_hub_cluster_relayed_from{cluster=\"gpu-b\""), "{text}");
    assert!(text.contains("flightdeck_hub_relayed_updates_total{cluster=\"gpu-a\"} 0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_between_clusters_two_replicas_hold_is_refused_by_name_wherever_it_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let leases = FakeApi::start().await;
    let clusters = two_standard_clusters().await;
    let replicas = three_settled(&leases, &clusters, dir.path(), &Setup::default()).await;
    let (from, into) = (holder(&replicas, "gpu-a"), holder(&replicas, "gpu-b"));
    // Every replica has read both Leases (a replica names the holders it last read).
    let knows = |r: &Replica, cluster: &str, owner: &Replica| {
        let owners = r.keeper.as_ref().unwrap().owners();
        matches!(owners.get(cluster), Some(flightdeck::serve::lease::Owner::Replica(id)) if id.replica() == owner.id)
    };
    eventually("every replica knows both holders", || {
        replicas.iter().all(|r| knows(r, "gpu-a", &replicas[from]) && knows(r, "gpu-b", &replicas[into]))
    })
    .await;
    let entry = replicas.iter().position(|r| r.holds().is_empty()).expect("a replica holding nothing");
    let (mirror, _, _) = subscriber(&replicas[entry]);
    eventually("both clusters fresh through the entry replica", || all_fresh(&mirror)).await;
    let job = mirror.lock().unwrap().clusters["gpu-a"].jobs.keys().next().cloned().expect("a job on gpu-a");
    let source = flightdeck::model::JobRef { cluster: "gpu-a".into(), id: job };
    let spec = flightdeck::spec::JobSpec { name: "moved".into(), command: Some("true".into()), ..Default::default() };
    let migrate =
        Action::Migrate { source: source.clone(), to: "gpu-b".into(), spec: Box::new(spec), uid: None, resume: None };
    let ask = pb::ActRequest { actions: vec![flightdeck::wire::action_to_pb(&migrate)] };
    for fake in &clusters {
        fake.clear_requests();
    }
    for sent_to in [entry, from, into] {
        let mut client = raw(&replicas[sent_to]);
        let mut outcomes = client.act(authed(ask.clone(), ALICE)).await.unwrap().into_inner();
        let outcome = outcomes.message().await.unwrap().expect("one outcome");
        assert!(!outcome.ok, "{outcome:?}");
        let words = &outcome.message;
        assert!(words.starts_with(&format!("cannot migrate {source} to gpu-b")), "{words}");
        assert!(words.contains(&replicas[from].id) && words.contains(&replicas[into].id), "{words}");
        assert!(words.contains(&format!("nothing was done and {source} is left as it was")), "{words}");
        assert_eq!(audited(&replicas[sent_to], "migrate"), vec![("alice@hub".to_owned(), "refused".to_owned())]);
    }
    for fake in &clusters {
        let changes: Vec<String> = fake
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert!(changes.is_empty(), "a refused migration changed a cluster: {changes:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_relay_and_forward_over_tls_trusting_the_peer_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let files = TlsFiles { cert: dir.path().join("hub.crt"), key: dir.path().join("hub.key") };
    std::fs::write(&files.cert, generated.cert.pem()).unwrap();
    std::fs::write(&files.key, generated.signing_key.serialize_pem()).unwrap();
    std::fs::set_permissions(&files.key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let setup = Setup { tls: Some((files.clone(), files.cert.clone())), ..Setup::default() };
    let leases = FakeApi::start().await;
    let clusters = two_standard_clusters().await;
    let mut replicas = Vec::new();
    for id in ["hub-a", "hub-b"] {
        replicas.push(Replica::start_with(id, &leases, &clusters, dir.path(), &setup).await);
    }
    eventually("one cluster each", || replicas.iter().all(|r| r.holds().len() == 1)).await;
    // Each replica relays the other's cluster over TLS: both fresh through either.
    let subscribers: Vec<_> = replicas.iter().map(subscriber).collect();
    for (replica, (mirror, _, _)) in replicas.iter().zip(&subscribers) {
        eventually(&format!("both clusters fresh through {} over TLS", replica.id), || all_fresh(mirror)).await;
    }
    // An action forwarded over TLS is carried out at the owner.
    let owner = holder(&replicas, "gpu-a");
    let entry = 1 - owner;
    let cordon = Action::Node {
        node: NodeRef { cluster: "gpu-a".into(), name: fixtures::NODE_H100_A.into() },
        action: NodeAction::Cordon,
    };
    let ask = pb::ActRequest { actions: vec![flightdeck::wire::action_to_pb(&cordon)] };
    let mut outcomes = raw(&replicas[entry]).act(authed(ask, ALICE)).await.unwrap().into_inner();
    let outcome = outcomes.message().await.unwrap().expect("one outcome");
    assert!(outcome.ok, "{outcome:?}");
    let via = format!("alice@hub via {}", replicas[entry].id);
    assert_eq!(audited(&replicas[owner], "cordon"), vec![(via, "ok".to_owned())]);

    // A replica not given the CA cannot reach its peers: a forwarded read fails, in words,
    // and the owner never hears of it.
    let stranger = Setup { no_peer_ca: true, ..setup };
    let third = Replica::start_with("hub-c", &leases, &clusters, dir.path(), &stranger).await;
    eventually("hub-c knows who holds gpu-a", || {
        matches!(
            third.keeper.as_ref().unwrap().owners().get("gpu-a"),
            Some(flightdeck::serve::lease::Owner::Replica(_))
        )
    })
    .await;
    let ask = pb::ClusterRequest { cluster: "gpu-a".into() };
    let failed = raw(&third).diagnose(authed(ask, ALICE)).await.expect_err("no CA, no peer");
    assert_eq!(failed.code(), tonic::Code::Unavailable, "{failed:?}");
    let words = failed.message();
    assert!(words.contains(&format!("cannot reach {}", replicas[owner].id)), "{words}");
    assert!(words.contains("certificate") || words.contains("system CA"), "{words}");
    assert!(audited(&replicas[owner], "diagnose").is_empty());
}
