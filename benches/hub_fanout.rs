//! The hub's fan-out: one one-job change of a 1,000-job cluster, encoded and sent to 1,000
//! subscribers over real loopback HTTP/2 connections, until every one of them has decoded
//! it (client work included, so the figure is an upper bound on the hub's share). Also
//! printed: the bytes a one-job change costs on the wire and the memory the hub spends on one
//! idle subscriber (its subscribers live in a child process, so only the hub's share counts).
//!
//! `cargo bench --bench hub_fanout`; under `cargo test` a small run checks that every
//! subscriber gets its state and a change, and that a change stays small on the wire.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "support/loopback_hub.rs"]
mod loopback_hub;

use criterion::Criterion;
use flightdeck::model::{ClusterState, FleetState, Health, Job, JobRef, JobState, LogHandle, Snapshot};
use flightdeck::wire::pb;
use prost::Message;
use tokio::sync::Semaphore;

const SUBSCRIBERS: usize = 1000;
/// Set in the child process that holds the subscribers of the memory measurement: the hub's
/// address.
const SUBSCRIBE_TO: &str = "FD_BENCH_HUB_SUBSCRIBE_TO";
const CONNECTIONS: usize = 10;
const JOBS: usize = 1000;
const TOKEN: &str = "bench-token";

fn job(i: usize) -> Job {
    let mut job = Job::new(JobRef::new("hpc", i.to_string()), JobState::Running);
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
    job.memory_mb = Some(256_000);
    job.submit_time = Some(chrono::Utc::now());
    job.start_time = Some(chrono::Utc::now());
    job.time_limit_secs = Some(86_400);
    job.stdout = Some(LogHandle::new(format!("/home/alice/logs/slurm-{i}.out")));
    job
}

fn state(snapshot: Snapshot) -> FleetState {
    let mut cluster = ClusterState::new("hpc", "slurm");
    cluster.health = Health::Fresh { at: chrono::Utc::now() };
    cluster.snapshot = Some(Arc::new(snapshot));
    FleetState { clusters: vec![cluster], read_only: false, version: 1 }
}

/// Live heap bytes, counted by this binary's allocator: what the hub holds, without the
/// pages the C allocator keeps cached after transient buffers (which the resident set adds).
struct Counting;

static LIVE_HEAP: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed straight to the system allocator; only a counter is added.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_HEAP.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_HEAP.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        LIVE_HEAP.fetch_add(new_size, Ordering::Relaxed);
        LIVE_HEAP.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// A hub serving `publisher` on loopback TCP, its address, and what keeps it alive.
struct Hub {
    hub: loopback_hub::LoopbackHub,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Hub {
    type Target = loopback_hub::LoopbackHub;
    fn deref(&self) -> &Self::Target {
        &self.hub
    }
}

async fn hub(snapshot: &Snapshot) -> Hub {
    let dir = tempfile::tempdir().unwrap();
    Hub { hub: loopback_hub::serve(&state(snapshot.clone()), dir.path(), TOKEN, "bench", "viewer").await, _dir: dir }
}

/// What the subscribers report: a permit per subscriber each time its state is whole, and
/// the size of the last change the first one decoded.
#[derive(Clone)]
struct Received {
    whole: Arc<Semaphore>,
    last_change_bytes: Arc<AtomicUsize>,
}

impl Received {
    fn new() -> Self {
        Received { whole: Arc::new(Semaphore::new(0)), last_change_bytes: Arc::default() }
    }

    async fn every(&self, subscribers: usize) {
        self.whole.acquire_many(subscribers as u32).await.unwrap().forget();
    }
}

/// `subscribers` subscriptions to the hub at `addr`, over `CONNECTIONS` HTTP/2 connections.
async fn subscribe(addr: std::net::SocketAddr, subscribers: usize) -> Received {
    let received = Received::new();
    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS.min(subscribers) {
        channels
            .push(tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap());
    }
    for i in 0..subscribers {
        let mut client =
            pb::hub_client::HubClient::new(channels[i % channels.len()].clone()).max_decoding_message_size(64 << 20);
        let received = received.clone();
        tokio::spawn(async move {
            let mut request = tonic::Request::new(pb::SubscribeRequest::default());
            request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            let mut stream = client.subscribe(request).await.unwrap().into_inner();
            while let Ok(Some(update)) = stream.message().await {
                // A change is an update on a version; chunks of a full state are not.
                let change = !update.full && update.clusters.iter().all(|c| c.base_version < c.version);
                if i == 0 && change {
                    received.last_change_bytes.store(update.encoded_len(), Ordering::Relaxed);
                }
                // Counted once a state is whole: the last chunk of a full state, or a change.
                if update.clusters.iter().all(|c| !c.more) {
                    received.whole.add_permits(1);
                }
            }
        });
    }
    received
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn cluster() -> Snapshot {
    Snapshot { cluster: "hpc".into(), jobs: (0..JOBS).map(job).collect(), ..Snapshot::default() }
}

/// Changes one job's priority each call, as a poll would.
fn change(snapshot: &mut Snapshot, tick: &mut u64) -> FleetState {
    *tick += 1;
    snapshot.jobs[(*tick as usize) % JOBS].priority = Some(*tick);
    state(snapshot.clone())
}

/// The child process of `hub_memory`: subscribes, says `whole` on stdout once every
/// subscriber has its full state and again after each change, and lives until stdin closes.
fn subscribers_process(addr: &str, subscribers: usize) {
    use std::io::{BufRead, Write};
    let rt = runtime();
    let addr = addr.parse().expect("hub address");
    let received = rt.block_on(subscribe(addr, subscribers));
    let reporter = received.clone();
    rt.spawn(async move {
        loop {
            reporter.every(subscribers).await;
            let mut out = std::io::stdout().lock();
            writeln!(out, "whole").and_then(|()| out.flush()).expect("report to the bench");
        }
    });
    // Stdin closing (the bench ending or killing us) ends the process.
    for _ in std::io::stdin().lock().lines() {}
}

/// The hub's own memory per idle subscriber: the subscribers run in a child process (this
/// bench binary again), so the resident-set growth measured here is the hub's alone.
fn hub_memory() {
    use std::io::{BufRead, BufReader};
    let rt = runtime();
    let mut snapshot = cluster();
    let hub = rt.block_on(hub(&snapshot));
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_bytes();
    let heap_before = LIVE_HEAP.load(Ordering::Relaxed);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .env(SUBSCRIBE_TO, hub.addr.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the subscribers' process");
    let mut reports = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut wait_whole = || assert_eq!(reports.next().unwrap().unwrap(), "whole", "the subscribers' report");
    wait_whole();
    let mut tick = 0;
    hub.publisher.publish(&change(&mut snapshot, &mut tick));
    wait_whole();
    std::thread::sleep(Duration::from_millis(500));
    let per = rss_bytes().saturating_sub(before) / SUBSCRIBERS as u64;
    let heap = LIVE_HEAP.load(Ordering::Relaxed).saturating_sub(heap_before) / SUBSCRIBERS;
    eprintln!(
        "hub: {SUBSCRIBERS} idle subscribers after their full state of {JOBS} jobs and one change: \
         {:.1} KiB of live hub heap per subscriber (target < 64 KiB); resident set {:.1} KiB, \
         the allocator's caches included",
        heap as f64 / 1024.0,
        per as f64 / 1024.0
    );
    drop(child.stdin.take());
    child.wait().expect("the subscribers' process ends");
}

fn fanout(c: &mut Criterion) {
    let rt = runtime();
    let mut snapshot = cluster();
    let hub = rt.block_on(hub(&snapshot));
    let received = rt.block_on(async {
        let received = subscribe(hub.addr, SUBSCRIBERS).await;
        received.every(SUBSCRIBERS).await;
        received
    });
    let mut tick = 0;
    let one = change(&mut snapshot, &mut tick);
    rt.block_on(async {
        hub.publisher.publish(&one);
        received.every(SUBSCRIBERS).await;
    });
    let bytes = received.last_change_bytes.load(Ordering::Relaxed);
    // gRPC's 5-byte message prefix and HTTP/2's 9-byte DATA frame header.
    eprintln!("hub: a one-job change is {bytes} B of update, {} B on the wire", bytes + 5 + 9);

    let mut group = c.benchmark_group("hub");
    group.sample_size(20);
    group.bench_function("one_job_change_to_1000_subscribers", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let next = change(&mut snapshot, &mut tick);
                let started = Instant::now();
                rt.block_on(async {
                    hub.publisher.publish(&next);
                    received.every(SUBSCRIBERS).await;
                });
                total += started.elapsed();
            }
            total
        })
    });
    group.bench_function("diff_and_encode_one_job_change_of_1000", |b| {
        let old = snapshot.clone();
        let mut new = old.clone();
        new.jobs[7].priority = Some(99);
        b.iter(|| {
            let mut update = pb::ClusterUpdate::default();
            flightdeck::serve::publish::diff_snapshot(Some(&old), &new, &mut update);
            update.encode_to_vec()
        })
    });
    group.finish();
}

/// Under `cargo test`: a few subscribers each get their full state and one change, and the
/// change is small: properties, not timings.
fn check() {
    const FEW: usize = 20;
    let rt = runtime();
    rt.block_on(async {
        let mut snapshot = cluster();
        let hub = hub(&snapshot).await;
        let received = subscribe(hub.addr, FEW).await;
        received.every(FEW).await;
        let mut tick = 0;
        hub.publisher.publish(&change(&mut snapshot, &mut tick));
        received.every(FEW).await;
        let bytes = received.last_change_bytes.load(Ordering::Relaxed);
        assert!(bytes > 0 && bytes < 600, "a one-job change was {bytes} B of update");
    });
    println!("hub_fanout bench: inputs check out (run `cargo bench --bench hub_fanout` to measure)");
}

fn main() {
    if let Ok(addr) = std::env::var(SUBSCRIBE_TO) {
        return subscribers_process(&addr, SUBSCRIBERS);
    }
    if !std::env::args().any(|a| a == "--bench") {
        return check();
    }
    hub_memory();
    let mut c = Criterion::default().configure_from_args();
    fanout(&mut c);
    c.final_summary();
}
