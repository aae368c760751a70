//! What relaying costs a hub replica (issue #32): one one-job change of a 1,000-job cluster,
//! published by the replica that polls it (its owner), carried over loopback HTTP/2 to the
//! replicas that relay it (`serve::relay`: each follows the owner's subscription into a mirror
//! and merges it into what it publishes), until every relaying replica publishes the change.
//! Measured with one relaying replica and with two (a three-replica hub): the figure per
//! replica is the second over two.
//!
//! `cargo bench --bench hub_relay`; under `cargo test` a small run checks that each relaying
//! replica publishes the owner's cluster and then its change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/loopback_hub.rs"]
mod loopback_hub;

use criterion::Criterion;
use flightdeck::backend::http::TokenSource;
use flightdeck::model::{ClusterState, FleetState, Health, Job, JobRef, JobState, Snapshot};
use flightdeck::serve::lease::{Identity, Owner};
use flightdeck::serve::peers::PeerOptions;
use flightdeck::serve::relay::{self, Ownership};
use tokio::sync::watch;

const JOBS: usize = 1000;
const CLUSTER: &str = "hpc";
const TOKEN: &str = "bench-relay-token";

fn job(i: usize) -> Job {
    let mut job = Job::new(JobRef::new(CLUSTER, i.to_string()), JobState::Running);
    job.name = format!("train-llama-{i}");
    job.user = "alice".into();
    job.partition = "gpu".into();
    job.native_state = "RUNNING".into();
    job.gpus_requested = 4;
    job.gpus_allocated = 4;
    job.gpu_model = Some("a100".into());
    job.nodes = vec![format!("gpu-{:03}", i % 100)];
    job.node_count = 1;
    job.cpus = 32;
    job.submit_time = Some(chrono::Utc::now());
    job
}

fn state(snapshot: Snapshot) -> FleetState {
    let mut cluster = ClusterState::new(CLUSTER, "slurm");
    cluster.health = Health::Fresh { at: chrono::Utc::now() };
    cluster.attempts = 1;
    cluster.snapshot = Some(Arc::new(snapshot));
    FleetState { clusters: vec![cluster], read_only: false, version: 1 }
}

/// The owner: a hub serving `publisher` on loopback TCP.
struct Owned {
    hub: loopback_hub::LoopbackHub,
    identity: Identity,
}

async fn owner(snapshot: &Snapshot, dir: &std::path::Path) -> Owned {
    let hub = loopback_hub::serve(&state(snapshot.clone()), dir, TOKEN, "replicas", "operator").await;
    let identity = Identity::new("hub-a", &hub.addr.to_string()).unwrap();
    Owned { hub, identity }
}

/// A relaying replica's view of ownership: the owner holds the cluster, this one nothing.
struct Relaying {
    me: Identity,
    owner: Identity,
}

impl Ownership for Relaying {
    fn me(&self) -> &Identity {
        &self.me
    }
    fn owners(&self) -> BTreeMap<String, Owner> {
        BTreeMap::from([(CLUSTER.to_owned(), Owner::Replica(self.owner.clone()))])
    }
    fn holds(&self, _cluster: &str) -> bool {
        false
    }
}

/// A relaying replica: what it publishes, and its local fleet's state (the cluster, never
/// polled there), kept so the relay runs.
type Relay = (watch::Receiver<Arc<FleetState>>, watch::Sender<Arc<FleetState>>);

/// `count` relaying replicas of `owner`'s cluster.
fn relays(owner: &Identity, count: usize, dir: &std::path::Path) -> Vec<Relay> {
    let token = dir.join("peer-token");
    std::fs::write(&token, TOKEN).unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    (0..count)
        .map(|i| {
            let unpolled = FleetState { clusters: vec![ClusterState::new(CLUSTER, "slurm")], ..FleetState::default() };
            let (local, rx) = watch::channel(Arc::new(unpolled));
            let me = Identity::new(&format!("hub-{i}"), "127.0.0.1:1").unwrap();
            let ownership = Arc::new(Relaying { me, owner: owner.clone() });
            let peers = PeerOptions { tls: false, ca_file: None, token: Some(TokenSource::File(token.clone())) };
            let published = relay::start(rx, ownership, peers, Arc::default());
            (published, local)
        })
        .collect()
}

/// Whether `published` shows job `id` at priority `tick`.
fn shows(published: &FleetState, id: usize, tick: u64) -> bool {
    let Some(c) = published.cluster(CLUSTER) else { return false };
    let Some(snapshot) = &c.snapshot else { return false };
    c.health.is_fresh() && snapshot.jobs.iter().any(|j| j.job_ref.id == id.to_string() && j.priority == Some(tick))
}

/// Publishes a one-job change at the owner and waits until every relay publishes it.
async fn change_through(owner: &Owned, snapshot: &mut Snapshot, tick: &mut u64, relays: &mut [Relay]) {
    *tick += 1;
    let id = (*tick as usize) % JOBS;
    snapshot.jobs[id].priority = Some(*tick);
    owner.hub.publisher.publish(&state(snapshot.clone()));
    let t = *tick;
    for (published, _) in relays.iter_mut() {
        tokio::time::timeout(Duration::from_secs(30), published.wait_for(|s| shows(s, id, t)))
            .await
            .expect("the relay published the change within 30 s")
            .expect("the relay runs");
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn cluster() -> Snapshot {
    Snapshot { cluster: CLUSTER.into(), jobs: (0..JOBS).map(job).collect(), ..Snapshot::default() }
}

fn relay_bench(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = cluster();
    let owned = rt.block_on(owner(&snapshot, dir.path()));
    let mut group = c.benchmark_group("hub_relay");
    group.sample_size(30);
    for count in [1, 2] {
        let mut relays = rt.block_on(async { relays(&owned.identity, count, dir.path()) });
        let mut tick = 0;
        rt.block_on(change_through(&owned, &mut snapshot, &mut tick, &mut relays));
        group.bench_function(format!("one_job_change_of_1000_to_{count}_relaying_replicas"), |b| {
            b.iter_custom(|iters| {
                let started = Instant::now();
                for _ in 0..iters {
                    rt.block_on(change_through(&owned, &mut snapshot, &mut tick, &mut relays));
                }
                started.elapsed()
            })
        });
    }
    group.finish();
}

/// Under `cargo test`: two relaying replicas each publish the owner's cluster, then a change.
fn check() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let mut snapshot = cluster();
        let owned = owner(&snapshot, dir.path()).await;
        let mut relays = relays(&owned.identity, 2, dir.path());
        let mut tick = 0;
        change_through(&owned, &mut snapshot, &mut tick, &mut relays).await;
        change_through(&owned, &mut snapshot, &mut tick, &mut relays).await;
    });
    println!("hub_relay bench: inputs check out (run `cargo bench --bench hub_relay` to measure)");
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return check();
    }
    let mut c = Criterion::default().configure_from_args();
    relay_bench(&mut c);
    c.final_summary();
}
