//! The hub's fan-out: one one-job change of a 1,000-job cluster, encoded and sent to 1,000
//! subscribers over real loopback HTTP/2 connections, until every one of them has decoded
//! it (client work included, so the figure is an upper bound on the hub's share). Also
//! printed: the bytes a one-job change costs on the wire and the memory one idle subscriber
//! costs (client and server in this one process: again an upper bound).
//!
//! `cargo bench --bench hub_fanout`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use flightdeck::fleet::{Fleet, FleetOptions};
use flightdeck::hub::auth::{self, Auth, sha256_hex};
use flightdeck::hub::metrics::Metrics;
use flightdeck::hub::publish::Publisher;
use flightdeck::hub::service::HubService;
use flightdeck::hub::wire::pb;
use flightdeck::model::{ClusterState, FleetState, Health, Job, JobRef, JobState, LogHandle, Snapshot};
use prost::Message;
use tokio::sync::Semaphore;

const SUBSCRIBERS: usize = 1000;
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

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

struct Bed {
    publisher: Arc<Publisher>,
    snapshot: Snapshot,
    received: Arc<Semaphore>,
    last_bytes: Arc<AtomicUsize>,
    _fleet: Arc<Fleet>,
    _dir: tempfile::TempDir,
}

async fn bed() -> Bed {
    let snapshot = Snapshot { cluster: "hpc".into(), jobs: (0..JOBS).map(job).collect(), ..Snapshot::default() };
    let metrics = Arc::new(Metrics::default());
    let publisher = Publisher::new(&state(snapshot.clone()), metrics.clone());
    let fleet = Arc::new(Fleet::start(
        Vec::new(),
        FleetOptions { read_only: true, poll: false, audit: None, actor: "bench".into() },
    ));
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{} bench viewer\n", sha256_hex(TOKEN))).unwrap();
    let auth = Arc::new(Auth::tokens(&tokens).unwrap());
    let service = pb::hub_server::HubServer::with_interceptor(
        HubService::new(fleet.clone(), publisher.clone(), metrics),
        auth::interceptor(auth),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS {
        channels
            .push(tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap());
    }
    let received = Arc::new(Semaphore::new(0));
    let last_bytes = Arc::new(AtomicUsize::new(0));
    let before = rss_bytes();
    for i in 0..SUBSCRIBERS {
        let mut client =
            pb::hub_client::HubClient::new(channels[i % CONNECTIONS].clone()).max_decoding_message_size(64 << 20);
        let received = received.clone();
        let last_bytes = last_bytes.clone();
        tokio::spawn(async move {
            let mut request = tonic::Request::new(pb::SubscribeRequest::default());
            request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            let mut stream = client.subscribe(request).await.unwrap().into_inner();
            while let Ok(Some(update)) = stream.message().await {
                // A change is an update on a version; chunks of a full state are not.
                let change = !update.full && update.clusters.iter().all(|c| c.base_version < c.version);
                if i == 0 && change {
                    last_bytes.store(update.encoded_len(), Ordering::Relaxed);
                }
                // Counted once a state is whole: the last chunk of a full state, or a change.
                if update.clusters.iter().all(|c| !c.more) {
                    received.add_permits(1);
                }
            }
        });
    }
    // Every subscriber has its full state.
    received.acquire_many(SUBSCRIBERS as u32).await.unwrap().forget();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per = rss_bytes().saturating_sub(before) / SUBSCRIBERS as u64;
    eprintln!(
        "hub: {SUBSCRIBERS} subscribers after their full state of {JOBS} jobs: {:.1} KiB per subscriber (client and server)",
        per as f64 / 1024.0
    );
    Bed { publisher, snapshot, received, last_bytes, _fleet: fleet, _dir: dir }
}

fn fanout(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut bed = rt.block_on(bed());
    let mut tick = 0u64;
    let mut change = |bed: &mut Bed| {
        tick += 1;
        bed.snapshot.jobs[(tick as usize) % JOBS].priority = Some(tick);
        state(bed.snapshot.clone())
    };
    // Idle memory once the first change has gone round too.
    let one = change(&mut bed);
    rt.block_on(async {
        bed.publisher.publish(&one);
        bed.received.acquire_many(SUBSCRIBERS as u32).await.unwrap().forget();
    });
    let bytes = bed.last_bytes.load(Ordering::Relaxed);
    // gRPC's 5-byte message prefix and HTTP/2's 9-byte DATA frame header.
    eprintln!("hub: a one-job change is {bytes} B of update, {} B on the wire", bytes + 5 + 9);

    let mut group = c.benchmark_group("hub");
    group.sample_size(20);
    group.bench_function("one_job_change_to_1000_subscribers", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let next = change(&mut bed);
                let started = Instant::now();
                rt.block_on(async {
                    bed.publisher.publish(&next);
                    bed.received.acquire_many(SUBSCRIBERS as u32).await.unwrap().forget();
                });
                total += started.elapsed();
            }
            total
        })
    });
    group.bench_function("diff_and_encode_one_job_change_of_1000", |b| {
        let old = bed.snapshot.clone();
        let mut new = old.clone();
        new.jobs[7].priority = Some(99);
        b.iter(|| {
            let mut update = pb::ClusterUpdate::default();
            flightdeck::hub::publish::diff_snapshot(Some(&old), &new, &mut update);
            update.encode_to_vec()
        })
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
