//! The hub in-process over real sockets: `flightdeck::serve::serve` over a fleet of in-memory
//! clusters, reached by the real tonic client, by a `kind = "hub"` fleet and by the real
//! binary. What the real Slurm test bed adds (one poller's RPCs for 200 clients) is in
//! `hub_live.rs`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::hub_link::Mirror;
use flightdeck::backend::{Backend, Capabilities, JobAction, LogChunk, Registry};
use flightdeck::config::Config;
use flightdeck::fleet::{Action, AuditLog, Fleet, FleetOptions, Member};
use flightdeck::model::{GpuOwner, GpuSample, Health, Job, JobRef, JobState, LogHandle, Snapshot, Telemetry};
use flightdeck::serve::limits::SubscriberLimits;
use flightdeck::serve::listen::ListenAddr;
use flightdeck::serve::{ServeOptions, auth::sha256_hex};
use flightdeck::spec::JobSpec;
use flightdeck::wire::pb;
use prost::Message;
use tokio::sync::oneshot;

use crate::memory::MemoryCluster;

const OPERATOR_TOKEN: &str = "op-token-0123456789";
const VIEWER_TOKEN: &str = "viewer-token-9876543210";

/// The in-memory cluster the hub serves: `jobs` running jobs of alice's, numbered from 1;
/// actions take effect; its diagnosis and accounting take a while, as on a cluster. Its
/// accounting, as `sacct` would give it: alice used 2 GPUs and bob 1 for an hour each,
/// ended an hour ago. Its GPUs: job 1's idle, job 2's busy, a reading's time moving on. A
/// log read answers with the handle's owner, which proves the hub used its own handle, not
/// the client's text.
fn toy(name: &'static str, jobs: usize) -> Arc<MemoryCluster> {
    let toy = MemoryCluster::new(name)
        .capabilities(Capabilities { submit: true, cancel: true, hold_release: true, ..Capabilities::default() })
        .snapshot_of(Snapshot { release: Some("toy 1.0".into()), ..Snapshot::default() })
        .applying()
        .ids_from(1)
        .import_warnings(vec!["a warning".into()])
        .slow(Duration::from_millis(50))
        .history(move |_| Some(accounting(name)))
        .telemetry(|_| Ok(Some(gpu_reading())))
        .logs(|log| {
            Some(LogChunk { data: format!("{} owned by {:?}", log.as_str(), log.owner()), offset: 10, dropped: 0 })
        });
    let toy = Arc::new(toy);
    for _ in 0..jobs {
        add(&toy, JobState::Running);
    }
    toy
}

fn accounting(cluster: &str) -> flightdeck::model::History {
    let end = chrono::Utc::now() - chrono::TimeDelta::hours(1);
    let records = [("alice", 2), ("bob", 1)]
        .into_iter()
        .enumerate()
        .map(|(i, (user, gpus))| {
            let mut job = Job::new(JobRef::new(cluster, format!("old-{i}").as_str()), JobState::Completed);
            job.user = user.into();
            job.gpus_allocated = gpus;
            job.start_time = Some(end - chrono::TimeDelta::hours(1));
            job.end_time = Some(end);
            flightdeck::model::JobRecord::from_job(job)
        })
        .collect();
    flightdeck::model::History { records, source: "sacct".into(), left_out: 0, notes: vec![] }
}

fn gpu_reading() -> Telemetry {
    let mut gpus = Vec::new();
    for (index, job, util) in [(0, "1", 1.0), (1, "2", 90.0)] {
        let mut g = GpuSample::new("n1", index);
        g.utilisation = Some(util + (chrono::Utc::now().timestamp_subsec_millis() % 3) as f32);
        g.owner = Some(GpuOwner::Job(job.into()));
        g.memory_total_mb = Some(81_559);
        gpus.push(g);
    }
    Telemetry { taken_at: chrono::Utc::now(), source: "toy-smi".into(), gpus, notes: vec![] }
}

fn add(toy: &MemoryCluster, state: JobState) -> JobRef {
    add_for(toy, state, "alice")
}

/// A job of `user`'s, its output in their home.
fn add_for(toy: &MemoryCluster, state: JobState, user: &str) -> JobRef {
    let id = toy.next_id();
    let r = JobRef::new(toy.name(), id.as_str());
    let mut job = Job::new(r.clone(), state);
    job.name = format!("train-{id}");
    job.user = user.into();
    job.partition = "gpu".into();
    job.gpus_requested = 4;
    job.stdout = Some(LogHandle::owned_by(format!("/home/{user}/slurm-{id}.out"), user));
    let spec = JobSpec { name: format!("spec-of-{id}"), command: Some("true".into()), ..JobSpec::default() };
    toy.add(job, spec);
    r
}

/// Change `n` jobs (their priority), so a refresh carries `n` changed jobs.
fn touch(toy: &MemoryCluster, n: usize) {
    toy.edit(|s| {
        for job in s.jobs.iter_mut().take(n) {
            job.priority = Some(job.priority.unwrap_or(0) + 1);
        }
    });
}

/// A running hub over `toy`, stopped on drop.
struct Hub {
    addr: SocketAddr,
    /// Where `/metrics` answers (a port of its own).
    metrics: SocketAddr,
    audit: AuditLog,
    fleet: Arc<Fleet>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<(), String>>>,
    dir: tempfile::TempDir,
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn tokens_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tokens");
    std::fs::write(
        &path,
        format!("# the team\n{} alice operator\n{} bob viewer\n", sha256_hex(OPERATOR_TOKEN), sha256_hex(VIEWER_TOKEN)),
    )
    .unwrap();
    // Owner-only, as the hub insists.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

impl Hub {
    async fn start(toy: &Arc<MemoryCluster>, addr: SocketAddr) -> Hub {
        Hub::start_with(toy, addr, None).await
    }

    /// A hub whose fleet also reads the toy's GPUs every `telemetry` (and flags a job idle
    /// as soon as it is under 5%).
    async fn start_with(toy: &Arc<MemoryCluster>, addr: SocketAddr, telemetry: Option<Duration>) -> Hub {
        Hub::start_limited(toy, addr, telemetry, SubscriberLimits::default()).await
    }

    /// A hub that holds at most `subscribers` subscriptions open.
    async fn start_limited(
        toy: &Arc<MemoryCluster>,
        addr: SocketAddr,
        telemetry: Option<Duration>,
        subscribers: SubscriberLimits,
    ) -> Hub {
        Hub::start_full(toy, addr, telemetry, subscribers, Duration::from_millis(20)).await
    }

    /// A hub whose fleet refreshes the toy every `refresh`.
    async fn start_full(
        toy: &Arc<MemoryCluster>,
        addr: SocketAddr,
        telemetry: Option<Duration>,
        subscribers: SubscriberLimits,
        refresh: Duration,
    ) -> Hub {
        let dir = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(dir.path().join("state/audit.jsonl"));
        let members =
            vec![Member { backend: toy.clone(), kind: "slurm".into(), refresh, timeout: Duration::from_secs(2) }];
        let opts = FleetOptions { read_only: false, poll: true, audit: Some(audit.clone()), actor: "hub@test".into() };
        let fleet = match telemetry {
            None => Fleet::start(members, opts),
            Some(every) => Fleet::start_with_telemetry(
                members,
                opts,
                flightdeck::fleet::TelemetryOptions {
                    idle: flightdeck::config::IdleRule { below_percent: 5.0, window: Duration::ZERO },
                    sources: Default::default(),
                    every: [(toy.name().to_string(), every)].into_iter().collect(),
                    ..Default::default()
                },
            ),
        };
        let fleet = Arc::new(fleet);
        fleet.wait_for(Duration::from_secs(5), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
        // The same port on another loopback address: no other test's hub can have taken
        // it between a free port being picked and bound.
        let metrics = SocketAddr::new(std::net::Ipv4Addr::new(127, 0, 0, 2).into(), addr.port());
        let opts = ServeOptions {
            listen: ListenAddr::Tcp(addr),
            tls: None,
            health_listen: None,
            metrics_listen: Some(metrics),
            subscribers,
            tokens: Some(tokens_file(dir.path())),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(flightdeck::serve::serve(fleet.clone(), opts, async move {
            let _ = stopped.await;
        }));
        // Until it answers.
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Hub { addr, metrics, audit, fleet, stop: Some(stop), done: Some(done), dir }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn kill(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        if let Some(done) = self.done.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), done).await;
        }
    }

    /// A fleet through this hub (`kind = "hub"`, the operator's token in an owner-only
    /// file), auditing locally to `audit`.
    async fn client_fleet(&self, read_only: bool, audit: Option<AuditLog>) -> Fleet {
        self.client_fleet_as(OPERATOR_TOKEN, read_only, audit).await
    }

    /// [`Hub::client_fleet`] with `token`'s user and role.
    async fn client_fleet_as(&self, token_text: &str, read_only: bool, audit: Option<AuditLog>) -> Fleet {
        use std::os::unix::fs::OpenOptionsExt;
        let token = self.dir.path().join("client-token");
        let mut file =
            std::fs::OpenOptions::new().create(true).write(true).truncate(true).mode(0o600).open(&token).unwrap();
        std::io::Write::write_all(&mut file, token_text.as_bytes()).unwrap();
        let path = self.dir.path().join("client.toml");
        std::fs::write(
            &path,
            format!(
                "[[cluster]]\nname = \"team\"\nkind = \"hub\"\nurl = \"{}\"\ntoken_file = \"{}\"\ntimeout_seconds = 5\nrefresh_seconds = 1\n",
                self.url(),
                token.display()
            ),
        )
        .unwrap();
        let config = Config::load(Some(&path), &Registry::builtin()).unwrap();
        let opts = FleetOptions { read_only, poll: true, audit, actor: "alice@laptop".into() };
        Fleet::builder(&config).connect(opts).await.unwrap()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
    }
}

type Raw = pb::hub_client::HubClient<tonic::transport::Channel>;

async fn raw(hub: &Hub) -> Raw {
    let channel = tonic::transport::Endpoint::from_shared(hub.url()).unwrap().connect().await.unwrap();
    pb::hub_client::HubClient::new(channel).max_decoding_message_size(64 << 20)
}

fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

/// The next update that carries at least one job (refreshes alone carry only health).
async fn next_with_jobs(stream: &mut tonic::Streaming<pb::FleetUpdate>, mirror: &mut Mirror) -> pb::FleetUpdate {
    loop {
        let update = tokio::time::timeout(Duration::from_secs(10), stream.message()).await.unwrap().unwrap().unwrap();
        assert!(mirror.apply(update.clone()), "an update out of step: {update:?}");
        if update.clusters.iter().any(|c| !c.jobs.is_empty() || !c.removed_jobs.is_empty()) {
            return update;
        }
    }
}

/// Jobs as they cross the wire (a log handle's owner stays in the hub, by design).
fn wire_view(jobs: &[Job]) -> serde_json::Value {
    serde_json::to_value(jobs).unwrap()
}

fn ids(jobs: &[Job]) -> Vec<String> {
    let mut ids: Vec<String> = jobs.iter().map(|j| j.job_ref.id.clone()).collect();
    ids.sort();
    ids
}

fn mirrored_jobs(mirror: &mut Mirror, cluster: &str) -> Vec<Job> {
    let mut jobs: Vec<Job> = mirror.clusters.get_mut(cluster).unwrap().snapshot(cluster).unwrap().jobs.to_vec();
    jobs.sort_by(|a, b| a.job_ref.id.cmp(&b.job_ref.id));
    jobs
}

async fn toy_jobs(toy: &MemoryCluster) -> Vec<Job> {
    let mut jobs = toy.snapshot().await.unwrap().jobs;
    jobs.sort_by(|a, b| a.job_ref.id.cmp(&b.job_ref.id));
    jobs
}

#[tokio::test]
async fn a_subscriber_gets_the_whole_state_then_one_job_per_one_job_change() {
    let toy = toy("hpc", 50);
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let mut stream =
        client.subscribe(authed(pb::SubscribeRequest::default(), OPERATOR_TOKEN)).await.unwrap().into_inner();
    let mut mirror = Mirror::default();
    let first = stream.message().await.unwrap().unwrap();
    assert!(first.full);
    assert_eq!(first.role, "operator");
    assert_eq!(first.user, "alice");
    assert_eq!(first.clusters.len(), 1);
    assert!(first.clusters[0].replace);
    assert_eq!(first.clusters[0].jobs.len(), 50);
    assert_eq!(first.clusters[0].info.as_ref().unwrap().kind, "slurm");
    assert!(mirror.apply(first));

    let added = add(&toy, JobState::Pending);
    let update = next_with_jobs(&mut stream, &mut mirror).await;
    let cluster = &update.clusters[0];
    assert!(!cluster.replace && !update.full);
    assert_eq!(cluster.jobs.len(), 1, "one job changed, one job sent");
    assert_eq!(cluster.jobs[0].id, added.id);
    let bytes = cluster.encoded_len();
    eprintln!("a one-job change: {bytes} bytes of update");
    assert!(bytes < 300, "{bytes} bytes for a one-job change");
    assert!(
        wire_view(&mirrored_jobs(&mut mirror, "hpc")) == wire_view(&toy_jobs(&toy).await),
        "the mirror differs from the hub"
    );

    // A removal is an id, not a job.
    let gone = toy.edit(|s| s.jobs.remove(0)).job_ref.id;
    let update = next_with_jobs(&mut stream, &mut mirror).await;
    assert_eq!(update.clusters[0].removed_jobs, vec![gone]);
    assert!(update.clusters[0].jobs.is_empty());
    assert!(
        wire_view(&mirrored_jobs(&mut mirror, "hpc")) == wire_view(&toy_jobs(&toy).await),
        "the mirror differs from the hub"
    );
}

#[tokio::test]
async fn a_client_that_reconnects_with_its_versions_receives_only_what_it_missed() {
    let toy = toy("hpc", 200);
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let mut mirror = Mirror::default();
    {
        let mut stream =
            client.subscribe(authed(pb::SubscribeRequest::default(), OPERATOR_TOKEN)).await.unwrap().into_inner();
        assert!(mirror.apply(stream.message().await.unwrap().unwrap()));
    }
    // Away for a while: two jobs change, one goes.
    touch(&toy, 2);
    let gone = toy.edit(|s| s.jobs.pop()).unwrap().job_ref.id;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut stream = client.subscribe(authed(mirror.resume(), OPERATOR_TOKEN)).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(first.full);
    assert!(first.clusters.iter().all(|c| !c.replace), "resumed, not replaced");
    let jobs: usize = first.clusters.iter().map(|c| c.jobs.len()).sum();
    let removed: Vec<&String> = first.clusters.iter().flat_map(|c| &c.removed_jobs).collect();
    assert_eq!(jobs, 2, "only the two changed jobs");
    assert_eq!(removed, vec![&gone]);
    assert!(mirror.apply(first));
    assert!(
        wire_view(&mirrored_jobs(&mut mirror, "hpc")) == wire_view(&toy_jobs(&toy).await),
        "the mirror differs from the hub"
    );

    // Versions of another hub run (or none) bring everything.
    let stale = pb::SubscribeRequest { epoch: 12345, ..mirror.resume() };
    let mut stream = client.subscribe(authed(stale, OPERATOR_TOKEN)).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(first.clusters[0].replace);
    assert_eq!(first.clusters[0].jobs.len(), 199);
}

#[tokio::test]
async fn a_subscriber_too_slow_to_keep_up_is_sent_a_full_state_not_a_queue() {
    let toy = toy("hpc", 400);
    let hub = Hub::start(&toy, free_port()).await;
    // A small window, so the connection stops taking updates after a few.
    let channel = tonic::transport::Endpoint::from_shared(hub.url())
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .unwrap();
    let mut client = pb::hub_client::HubClient::new(channel);
    let mut stream =
        client.subscribe(authed(pb::SubscribeRequest::default(), OPERATOR_TOKEN)).await.unwrap().into_inner();
    let mut mirror = Mirror::default();
    assert!(mirror.apply(stream.message().await.unwrap().unwrap()));
    // 400 changed jobs per refresh, every 20 ms, while the client reads nothing: the
    // connection's window fills and the hub's backlog for it overflows.
    let churn = {
        let toy = toy.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                touch(&toy, 400);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    churn.await.unwrap();
    let mut resynced = false;
    for _ in 0..400 {
        let update = tokio::time::timeout(Duration::from_secs(10), stream.message()).await.unwrap().unwrap().unwrap();
        if update.full {
            resynced = true;
            assert!(update.clusters[0].replace);
        }
        assert!(mirror.apply(update));
        if resynced {
            break;
        }
    }
    assert!(resynced, "the slow subscriber was never sent a fresh full state");
    // And it is in step again afterwards.
    touch(&toy, 1);
    let update = tokio::time::timeout(Duration::from_secs(20), next_with_jobs(&mut stream, &mut mirror)).await.unwrap();
    assert!(!update.full);
}

#[tokio::test]
async fn a_fleet_through_the_hub_shows_its_clusters_and_acts_through_it_audited_by_caller() {
    let toy = toy("hpc", 5);
    let hub = Hub::start(&toy, free_port()).await;
    let dir = tempfile::tempdir().unwrap();
    let fleet = hub.client_fleet(false, Some(AuditLog::new(dir.path().join("audit.jsonl")))).await;
    let state = fleet.wait_for(Duration::from_secs(10), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    assert_eq!(state.clusters.len(), 1);
    let hpc = &state.clusters[0];
    assert_eq!(hpc.name, "hpc", "the hub's cluster under its own name");
    assert_eq!(hpc.kind.as_str(), "slurm");
    assert!(hpc.capabilities.cancel && !hpc.capabilities.drain_resume);
    // The kind's placement crosses the wire, so advice through a hub reads as it does here.
    let slurm = flightdeck::backend::Registry::builtin().placement(&"slurm".into());
    assert_eq!(hpc.placement, slurm);
    assert_eq!(hpc.placement.partition, flightdeck::model::Partitions::NodeSets);
    assert!(matches!(hpc.health, Health::Fresh { .. }));
    assert_eq!(ids(&hpc.snapshot.as_ref().unwrap().jobs), ids(&toy_jobs(&toy).await));

    // A cancel goes through the hub, which audits it under the caller's name.
    let victim = JobRef::new("hpc", "3");
    let outcome = fleet.perform(Action::Job { job: victim.clone(), action: JobAction::Cancel, uid: None }).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(toy.calls(), vec!["cancel hpc/3".to_string()]);
    let records = hub.audit.read_all().unwrap();
    assert!(records.iter().any(|r| r.who == "alice@hub" && r.target == "hpc/3" && r.outcome == "ok"), "{records:?}");
    fleet
        .wait_for(Duration::from_secs(5), |s| {
            s.cluster("hpc")
                .and_then(|c| c.snapshot.as_ref())
                .is_some_and(|s| s.jobs.iter().all(|j| j.job_ref != victim))
        })
        .await;

    // Submit, preview, spec, log and diagnosis all through the hub.
    let spec = JobSpec { name: "through-hub".into(), command: Some("true".into()), ..JobSpec::default() };
    let submitted = fleet.perform(Action::Submit { cluster: "hpc".into(), spec: Box::new(spec.clone()) }).await;
    let new_ref: JobRef = submitted.result.clone().unwrap().parse().unwrap();
    assert_eq!(new_ref.cluster, "hpc");
    let native = fleet.render("hpc", &spec).await.unwrap();
    assert_eq!(native.text, "#SBATCH --job-name=through-hub\n");
    let imported = fleet.job_spec(&JobRef::new("hpc", "2")).await.unwrap();
    assert_eq!(imported.spec.name, "spec-of-2");
    assert_eq!(imported.warnings, vec!["a warning".to_string()]);
    let log = fleet.read_log("hpc", &LogHandle::new("/home/alice/slurm-2.out"), None, 1000).await.unwrap();
    assert_eq!(log.data, "/home/alice/slurm-2.out owned by Some(\"alice\")");
    let refused = fleet.read_log("hpc", &LogHandle::new("/etc/shadow"), None, 1000).await.unwrap_err();
    assert!(refused.to_string().contains("no job on cluster hpc has the log handle /etc/shadow"), "{refused}");
    let diagnosis = fleet.diagnose("hpc").await.unwrap();
    assert!(diagnosis.transport.starts_with("hub http://127.0.0.1:"), "{}", diagnosis.transport);
    assert_eq!(diagnosis.get("hub user"), Some("alice (operator)"));
}

#[tokio::test]
async fn a_viewers_cancel_is_refused_in_the_hub_and_audited_as_refused() {
    let toy = toy("hpc", 3);
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let cancel = pb::ActRequest {
        actions: vec![pb::Action {
            action: Some(pb::action::Action::Job(pb::JobAction {
                cluster: "hpc".into(),
                id: "1".into(),
                verb: "cancel".into(),
                uid: None,
            })),
        }],
    };
    let status = client.act(authed(cancel.clone(), VIEWER_TOKEN)).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert!(status.message().contains("bob is a viewer"), "{}", status.message());
    assert!(toy.calls().is_empty(), "nothing reached the cluster");
    let records = hub.audit.read_all().unwrap();
    assert!(records.iter().any(|r| r.who == "bob@hub" && r.outcome == "refused" && r.target == "hpc/1"), "{records:?}");
    // The viewer still reads.
    let mut stream =
        client.subscribe(authed(pb::SubscribeRequest::default(), VIEWER_TOKEN)).await.unwrap().into_inner();
    assert_eq!(stream.message().await.unwrap().unwrap().role, "viewer");
    // Wrong and missing tokens are refused before anything.
    for request in [authed(cancel.clone(), "not-a-token"), tonic::Request::new(cancel)] {
        let status = client.act(request).await.expect_err("unauthenticated");
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(!status.message().contains("not-a-token"));
    }
}

#[tokio::test]
async fn a_viewer_reads_only_their_own_jobs_and_every_read_is_audited() {
    // Jobs 1 and 2 are alice's, job 3 is bob's (bob is a viewer, alice an operator).
    let toy = toy("hpc", 2);
    let bobs = add_for(&toy, JobState::Pending, "bob");
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let log = |user: &str, id: &str| pb::ReadLogRequest {
        cluster: "hpc".into(),
        handle: format!("/home/{user}/slurm-{id}.out"),
        from: None,
        max_bytes: 1000,
    };
    let job = |id: &str| pb::JobRequest { cluster: "hpc".into(), id: id.into() };
    let estimate = |id: &str| pb::EstimateRequest {
        cluster: "hpc".into(),
        what: Some(pb::estimate_request::What::JobId(id.into())),
    };

    // bob reads nothing of alice's: her output, her script, her start estimate.
    let denied = [
        client.read_log(authed(log("alice", "1"), VIEWER_TOKEN)).await.expect_err("alice's log"),
        client.job_spec(authed(job("1"), VIEWER_TOKEN)).await.expect_err("alice's script"),
        client.estimate_start(authed(estimate("2"), VIEWER_TOKEN)).await.expect_err("alice's estimate"),
    ];
    for (status, id) in denied.iter().zip(["hpc/1", "hpc/1", "hpc/2"]) {
        assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
        assert!(status.message().contains(&format!("job {id}")), "{}", status.message());
        assert!(status.message().contains("viewers read only their own jobs"), "{}", status.message());
    }
    // A job the hub does not list is nobody's that a viewer may read.
    let unknown = client.job_spec(authed(job("404"), VIEWER_TOKEN)).await.expect_err("unknown job");
    assert_eq!(unknown.code(), tonic::Code::PermissionDenied);
    assert!(unknown.message().contains("job hpc/404 is not in the hub's current picture"), "{}", unknown.message());

    // bob reads his own job; alice, an operator, reads anyone's.
    let own = client.read_log(authed(log("bob", &bobs.id), VIEWER_TOKEN)).await.unwrap().into_inner();
    assert_eq!(own.data, format!("/home/bob/slurm-{}.out owned by Some(\"bob\")", bobs.id));
    let spec = client.job_spec(authed(job(&bobs.id), VIEWER_TOKEN)).await.unwrap().into_inner();
    assert!(spec.spec_json.contains(&format!("spec-of-{}", bobs.id)), "{}", spec.spec_json);
    client.read_log(authed(log("bob", &bobs.id), OPERATOR_TOKEN)).await.unwrap();
    client.job_spec(authed(job("1"), OPERATOR_TOKEN)).await.unwrap();
    client.estimate_start(authed(estimate("2"), OPERATOR_TOKEN)).await.unwrap();
    // What holds no other user's data stays open to a viewer, and is on record too.
    client.diagnose(authed(pb::ClusterRequest { cluster: "hpc".into() }, VIEWER_TOKEN)).await.unwrap();
    let spec_json =
        serde_json::to_string(&JobSpec { name: "bobs-try".into(), command: Some("true".into()), ..JobSpec::default() })
            .unwrap();
    client.render(authed(pb::SpecRequest { cluster: "hpc".into(), spec_json }, VIEWER_TOKEN)).await.unwrap();

    let records = hub.audit.read_all().unwrap();
    let seen = |who: &str, what: &str, target: &str, outcome: &str| {
        records.iter().any(|r| r.who == who && r.action == what && r.target == target && r.outcome == outcome)
    };
    let bobs_job = bobs.to_string();
    for (who, what, target, outcome) in [
        ("bob@hub", "read-log", "hpc/1", "refused"),
        ("bob@hub", "job-spec", "hpc/1", "refused"),
        ("bob@hub", "estimate-start", "hpc/2", "refused"),
        ("bob@hub", "job-spec", "hpc/404", "refused"),
        ("bob@hub", "read-log", bobs_job.as_str(), "allowed"),
        ("bob@hub", "job-spec", bobs_job.as_str(), "allowed"),
        ("alice@hub", "read-log", bobs_job.as_str(), "allowed"),
        ("alice@hub", "job-spec", "hpc/1", "allowed"),
        ("alice@hub", "estimate-start", "hpc/2", "allowed"),
        ("bob@hub", "diagnose", "hpc", "allowed"),
        ("bob@hub", "render", "hpc", "allowed"),
    ] {
        assert!(seen(who, what, target, outcome), "no {who} {what} {target} {outcome} in {records:#?}");
    }
    let refused = records.iter().filter(|r| r.outcome == "refused").count();
    assert_eq!(refused, 4, "{records:#?}");
}

#[tokio::test]
async fn subscriptions_are_limited_per_user_and_in_all() {
    let toy = toy("hpc", 3);
    let limits = SubscriberLimits { per_caller: 2, total: 3 };
    let hub = Hub::start_limited(&toy, free_port(), None, limits).await;
    let mut client = raw(&hub).await;
    let subscribe = |token: &'static str| {
        let mut client = client.clone();
        async move { client.subscribe(authed(pb::SubscribeRequest::default(), token)).await }
    };
    let alice_first = subscribe(OPERATOR_TOKEN).await.unwrap().into_inner();
    let _alice_second = subscribe(OPERATOR_TOKEN).await.unwrap().into_inner();
    let refused = subscribe(OPERATOR_TOKEN).await.expect_err("a third for alice");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    assert!(refused.message().contains("alice already has 2 subscriptions open"), "{}", refused.message());
    let _bob = subscribe(VIEWER_TOKEN).await.unwrap().into_inner();
    let refused = subscribe(VIEWER_TOKEN).await.expect_err("a fourth in all");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    assert!(refused.message().contains("the hub already serves 3 subscriptions"), "{}", refused.message());
    // A subscription that ends gives its place back.
    drop(alice_first);
    let mut again = Err(tonic::Status::unknown("not tried"));
    for _ in 0..100 {
        again = subscribe(VIEWER_TOKEN).await;
        if again.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(again.is_ok(), "{again:?}");
    // Other calls are not subscriptions.
    client.diagnose(authed(pb::ClusterRequest { cluster: "hpc".into() }, OPERATOR_TOKEN)).await.unwrap();
}

#[tokio::test]
async fn viewers_share_one_diagnosis_per_refresh_and_operators_ask_afresh() {
    let toy = toy("hpc", 1);
    // Viewers share an answer for one refresh interval: one long enough that ten calls
    // under any load fall into it (at 20 ms a loaded machine saw three diagnoses).
    let hub = Hub::start_full(&toy, free_port(), None, SubscriberLimits::default(), Duration::from_secs(30)).await;
    let client = raw(&hub).await;
    let ask = |token: &'static str| {
        let mut client = client.clone();
        async move { client.diagnose(authed(pb::ClusterRequest { cluster: "hpc".into() }, token)).await }
    };
    let answers = futures_util::future::join_all((0..10).map(|_| ask(VIEWER_TOKEN))).await;
    for answer in answers {
        assert_eq!(answer.unwrap().into_inner().transport, "memory");
    }
    assert_eq!(toy.diagnoses(), 1, "ten viewers at once, one diagnosis");
    ask(OPERATOR_TOKEN).await.unwrap();
    assert_eq!(toy.diagnoses(), 2, "an operator's doctor asks the cluster");
    // A cluster the hub does not serve is no entry in any cache.
    let unknown = client
        .clone()
        .diagnose(authed(pb::ClusterRequest { cluster: "nowhere".into() }, VIEWER_TOKEN))
        .await
        .expect_err("no such cluster");
    assert_eq!(unknown.code(), tonic::Code::NotFound);
}

#[tokio::test]
async fn a_viewers_refused_request_is_one_audit_record_with_its_fields_capped() {
    let toy = toy("hpc", 3);
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let long_id = "9".repeat(5000);
    let actions = (0..500)
        .map(|i| pb::Action {
            action: Some(pb::action::Action::Job(pb::JobAction {
                cluster: "hpc".into(),
                id: if i == 0 { long_id.clone() } else { i.to_string() },
                verb: "cancel".into(),
                uid: None,
            })),
        })
        .collect();
    let status = client.act(authed(pb::ActRequest { actions }, VIEWER_TOKEN)).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    let records = hub.audit.read_all().unwrap();
    let refused: Vec<_> = records.iter().filter(|r| r.outcome == "refused").collect();
    assert_eq!(refused.len(), 1, "one record for the request, not one per action: {}", refused.len());
    let record = refused[0];
    assert_eq!((record.who.as_str(), record.action.as_str()), ("bob@hub", "cancel"));
    assert_eq!(record.detail.as_deref(), Some("500 actions in one request"));
    assert!(record.target.starts_with("hpc/999"), "{}", record.target);
    assert!(record.target.ends_with("more bytes]"), "{}", record.target);
    assert!(record.target.len() < 1100, "{} bytes of target", record.target.len());
    assert!(toy.calls().is_empty(), "nothing reached the cluster");
}

#[tokio::test]
async fn messages_are_bounded_both_ways() {
    let toy = toy("hpc", 1);
    let hub = Hub::start(&toy, free_port()).await;
    let limit = flightdeck::wire::MAX_MESSAGE;
    let big = JobSpec { name: "big".into(), command: Some("x".repeat(limit + 1024)), ..JobSpec::default() };
    // A client that would send anything: the hub refuses to read it.
    let mut client = raw(&hub).await;
    let spec_json = serde_json::to_string(&big).unwrap();
    // (Refused mid-stream: the hub resets the stream while the client still sends.)
    client
        .render(authed(pb::SpecRequest { cluster: "hpc".into(), spec_json }, OPERATOR_TOKEN))
        .await
        .expect_err("too large for the hub");
    // Under the bound is read, past tonic's default of 4 MiB.
    let medium = JobSpec { name: "medium".into(), command: Some("x".repeat(8 << 20)), ..JobSpec::default() };
    let spec_json = serde_json::to_string(&medium).unwrap();
    let native = client
        .render(authed(pb::SpecRequest { cluster: "hpc".into(), spec_json }, OPERATOR_TOKEN))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(native.text, "#SBATCH --job-name=medium\n");
    // Through flightdeck's own client (which stops at the bound too): refused, and the
    // connection serves on.
    let fleet = hub.client_fleet(true, None).await;
    fleet.wait_for(Duration::from_secs(10), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    fleet.render("hpc", &big).await.expect_err("too large to send");
    // Within the bound, all is as before.
    let small = JobSpec { name: "small".into(), command: Some("true".into()), ..JobSpec::default() };
    assert_eq!(fleet.render("hpc", &small).await.unwrap().text, "#SBATCH --job-name=small\n");
}

#[test]
fn the_cli_sends_no_token_in_clear_text_to_another_machine_without_insecure() {
    let state = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"));
        // 192.0.2.0/24 is TEST-NET-1: nobody answers there.
        cmd.args(["--hub", "http://192.0.2.1:50051"])
            .args(extra)
            .args(["jobs", "--output", "json"])
            .env("FLIGHTDECK_HUB_TOKEN", "s3cret-token")
            .env("XDG_STATE_HOME", state.path());
        cmd.output().unwrap()
    };
    let refused = run(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("clear text") && stderr.contains("--insecure"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_through_a_hub_lists_jobs_and_says_when_the_token_is_wrong() {
    let toy = toy("hpc", 4);
    let hub = Hub::start(&toy, free_port()).await;
    let run = |token: &str| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"));
        cmd.args(["--hub", &hub.url(), "jobs", "--output", "json"])
            .env("FLIGHTDECK_HUB_TOKEN", token)
            .env("XDG_STATE_HOME", hub.dir.path().join("cli-state"));
        cmd
    };
    let ok = tokio::task::spawn_blocking({
        let mut cmd = run(OPERATOR_TOKEN);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 4, "{stdout}");
    let bad = tokio::task::spawn_blocking({
        let mut cmd = run("wrong");
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(stderr.contains("hub: authentication failed"), "{stderr}");
    assert!(!stderr.contains("wrong"), "the token is never printed: {stderr}");
}

#[tokio::test]
async fn a_killed_hub_restarts_and_its_clients_reconnect_by_themselves() {
    let toy = toy("hpc", 10);
    let addr = free_port();
    // The first hub's folder (the client's token file) outlives its stop.
    let mut first = Hub::start(&toy, addr).await;
    let fleet = first.client_fleet(true, None).await;
    fleet.wait_for(Duration::from_secs(10), |s| s.clusters.iter().all(|c| c.health.is_fresh())).await;
    first.kill().await;
    let down = fleet.wait_for(Duration::from_secs(30), |s| !s.clusters[0].health.is_fresh()).await;
    let Health::Stale { error, .. } = &down.clusters[0].health else { panic!("{:?}", down.clusters[0].health) };
    assert!(error.contains("hub"), "{error}");
    assert!(down.clusters[0].snapshot.is_some(), "the last picture is kept while the hub is away");

    add(&toy, JobState::Pending);
    let hub = Hub::start(&toy, addr).await;
    let back = fleet
        .wait_for(Duration::from_secs(30), |s| {
            s.clusters[0].health.is_fresh() && s.clusters[0].snapshot.as_ref().is_some_and(|s| s.jobs.len() == 11)
        })
        .await;
    assert!(back.clusters[0].health.is_fresh(), "{:?}", back.clusters[0].health);
    assert_eq!(ids(&back.clusters[0].snapshot.as_ref().unwrap().jobs), ids(&toy_jobs(&toy).await));
    drop((hub, first));
}

#[tokio::test]
async fn health_answers_beside_the_service_and_metrics_on_a_port_of_its_own() {
    let toy = toy("hpc", 2);
    let hub = Hub::start(&toy, free_port()).await;
    let channel = tonic::transport::Endpoint::from_shared(hub.url()).unwrap().connect().await.unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let answer = health
        .check(tonic_health::pb::HealthCheckRequest { service: "flightdeck.v1.Hub".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.status(), tonic_health::pb::health_check_response::ServingStatus::Serving);
    let mut client = raw(&hub).await;
    let _stream = client.subscribe(authed(pb::SubscribeRequest::default(), VIEWER_TOKEN)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let http = flightdeck::backend::http::client(Duration::from_secs(5), None).unwrap();
    let text = http.get(format!("http://{}/metrics", hub.metrics)).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("flightdeck_hub_clients 1"), "{text}");
    // The service's port, which callers reach with tokens, no longer tells anyone without
    // one what the hub serves: it speaks gRPC (HTTP/2) alone.
    let main = http.get(format!("{}/metrics", hub.url())).send().await;
    let leaked = match main {
        Ok(answer) => answer.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    assert!(!leaked.contains("flightdeck_"), "/metrics answered on the service's port: {leaked}");
    assert!(text.contains("flightdeck_refreshes_total{cluster=\"hpc\"}"), "{text}");
    assert!(text.contains("flightdeck_hub_deltas_sent_total"), "{text}");
}

#[tokio::test]
async fn a_large_cluster_arrives_in_chunks_and_is_shown_only_whole() {
    let toy = toy("hpc", 1000);
    let hub = Hub::start(&toy, free_port()).await;
    let mut client = raw(&hub).await;
    let mut stream =
        client.subscribe(authed(pb::SubscribeRequest::default(), OPERATOR_TOKEN)).await.unwrap().into_inner();
    let mut mirror = Mirror::default();
    let first = stream.message().await.unwrap().unwrap();
    let chunk = flightdeck::serve::publish::FULL_CHUNK;
    assert!(first.full && first.clusters[0].replace && first.clusters[0].more);
    assert_eq!(first.clusters[0].jobs.len(), chunk);
    assert!(mirror.apply(first));
    assert!(mirror.partial());
    assert!(mirror.clusters.get_mut("hpc").unwrap().snapshot("hpc").is_none(), "half a cluster is no picture");
    let mut messages = 1;
    while mirror.partial() {
        let next = stream.message().await.unwrap().unwrap();
        assert!(!next.full);
        assert!(next.clusters.iter().all(|c| c.jobs.len() <= chunk));
        assert!(mirror.apply(next));
        messages += 1;
    }
    assert_eq!(messages, 1000usize.div_ceil(chunk));
    assert!(wire_view(&mirrored_jobs(&mut mirror, "hpc")) == wire_view(&toy_jobs(&toy).await));

    // A fleet through the hub shows all of it from its first picture on.
    let fleet = hub.client_fleet(true, None).await;
    let state = fleet.wait_for(Duration::from_secs(10), |s| s.clusters[0].snapshot.is_some()).await;
    assert_eq!(state.clusters[0].snapshot.as_ref().unwrap().jobs.len(), 1000);
}

#[tokio::test]
async fn gpu_telemetry_joined_in_the_hub_reaches_its_clients_with_idle_flags_and_histories() {
    let toy = toy("hpc", 3);
    toy.edit(|s| s.jobs.iter_mut().for_each(|job| job.gpus_allocated = 1));
    let hub = Hub::start_with(&toy, free_port(), Some(Duration::from_millis(50))).await;
    let hub_use = |min: usize| {
        let fleet = hub.fleet.clone();
        async move {
            let s = fleet
                .wait_for(Duration::from_secs(10), |s| {
                    s.clusters[0].gpu_use.as_ref().is_some_and(|u| u.gpus.iter().all(|g| g.history.len() >= min))
                })
                .await;
            s.clusters[0].gpu_use.clone().expect("the hub reads the toy's GPUs")
        }
    };
    // A client that connects once the hub has several readings gets their history at once.
    let before = hub_use(4).await;
    let fleet = hub.client_fleet(false, None).await;
    let state =
        fleet.wait_for(Duration::from_secs(10), |s| s.clusters.first().is_some_and(|c| c.gpu_use.is_some())).await;
    let first = state.clusters[0].gpu_use.clone().expect("telemetry through the hub");
    assert!(first.gpus.iter().all(|g| g.history.len() >= before.gpus[0].history.len()), "{first:?}");
    assert!(state.clusters[0].telemetry_tried);
    assert_eq!(first.source, "toy-smi");
    let idle = first.job("1").expect("job 1 measured");
    assert!(idle.idle && idle.below_since.is_some(), "idle as the hub decided: {idle:?}");
    assert!(!first.job("2").unwrap().idle);
    assert_eq!(first.gpus[0].job.as_deref(), Some("1"));

    // Later readings arrive as deltas (the newest point per GPU) and the client's picture,
    // histories included, is the hub's at the same reading.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut rx = hub.fleet.subscribe();
    let record = seen.clone();
    let watcher = tokio::spawn(async move {
        loop {
            if let Some(u) = rx.borrow_and_update().clusters[0].gpu_use.clone() {
                record.lock().unwrap().push(u);
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
    let later = hub_use(10).await;
    let mine = fleet
        .wait_for(Duration::from_secs(10), |s| {
            s.clusters[0].gpu_use.as_ref().is_some_and(|u| u.taken_at >= later.taken_at)
        })
        .await;
    let mine = mine.clusters[0].gpu_use.clone().unwrap();
    let hubs = seen.lock().unwrap().iter().find(|u| u.taken_at == mine.taken_at).cloned();
    watcher.abort();
    assert_eq!(
        mine,
        hubs.expect("the hub published the reading the client holds"),
        "the client's telemetry is the hub's"
    );
    // The hub's /metrics counts the idle-allocated GPUs for alerts.
    let http = flightdeck::backend::http::client(Duration::from_secs(5), None).unwrap();
    let text = http.get(format!("http://{}/metrics", hub.metrics)).send().await.unwrap().text().await.unwrap();
    for line in [
        "flightdeck_gpus_measured{cluster=\"hpc\"} 2",
        "flightdeck_gpus_idle_allocated{cluster=\"hpc\"} 1",
        "flightdeck_jobs_idle{cluster=\"hpc\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    assert!(text.contains("flightdeck_telemetry_age_seconds{cluster=\"hpc\"}"), "{text}");
    assert!(mine.gpus[0].history.len() >= 10, "{:?}", mine.gpus[0].history);
}

/// The toy's running jobs hold GPUs: alice's two 4 each, bob's one 2, since two hours ago.
fn holding(toy: &MemoryCluster) {
    toy.edit(|s| {
        for job in s.jobs.iter_mut() {
            job.gpus_allocated = if job.user == "bob" { 2 } else { 4 };
            job.start_time = Some(chrono::Utc::now() - chrono::TimeDelta::hours(2));
        }
    });
}

fn usage_request(by: &str) -> pb::UsageRequest {
    let since = chrono::Utc::now() - chrono::TimeDelta::days(1);
    pb::UsageRequest {
        cluster: "hpc".into(),
        by: by.into(),
        since_ns: Some(flightdeck::wire::time_to_ns(since)),
        until_ns: None,
    }
}

/// A hub over a cluster where jobs 1 and 2 are alice's (an operator) and job 3 bob's (a
/// viewer), all three holding GPUs once the hub has refreshed.
async fn alices_two_jobs_and_bobs_one() -> (Arc<MemoryCluster>, Hub) {
    let toy = toy("hpc", 2);
    add_for(&toy, JobState::Running, "bob");
    holding(&toy);
    let hub = Hub::start(&toy, free_port()).await;
    hub.fleet
        .wait_for(Duration::from_secs(5), |s| {
            s.clusters[0].snapshot.as_ref().is_some_and(|s| s.jobs.iter().all(|j| j.gpus_allocated > 0))
        })
        .await;
    (toy, hub)
}

#[tokio::test]
async fn usage_through_the_hub_gives_a_viewer_their_own_rows_and_the_true_total_an_operator_everyones() {
    // Jobs 1 and 2 are alice's (an operator), job 3 bob's (a viewer).
    let (toy, hub) = alices_two_jobs_and_bobs_one().await;
    let client = raw(&hub).await;
    let ask = |token: &'static str, by: &'static str| {
        let mut client = client.clone();
        async move {
            let reply = client.usage(authed(usage_request(by), token)).await.unwrap().into_inner();
            flightdeck::wire::usage_from_pb(&reply).unwrap()
        }
    };
    // Ten viewers and an operator at once: one accounting read for them all.
    let mut calls: Vec<_> = (0..10).map(|_| ask(VIEWER_TOKEN, "user")).collect();
    calls.push(ask(OPERATOR_TOKEN, "user"));
    let mut answers = futures_util::future::join_all(calls).await;
    assert_eq!(toy.histories(), 1, "eleven callers at once, one sacct");
    let operator = answers.pop().unwrap();
    let viewer = answers.pop().unwrap();
    let held =
        |u: &flightdeck::model::usage::Usage| u.rows.iter().map(|r| (r.key.clone(), r.gpus_now)).collect::<Vec<_>>();
    assert!(answers.iter().all(|a| held(a) == held(&viewer)), "every viewer is answered alike");

    let rows = |u: &flightdeck::model::usage::Usage| {
        u.rows.iter().map(|r| (r.key.clone(), r.gpus_now, r.gpu_hours.map(|h| h.round() as i64))).collect::<Vec<_>>()
    };
    // alice: 8 GPUs now, 2 × 2 h running + 2 GPU-h finished; bob: 2 now, 2 × 2 h + 1.
    assert_eq!(rows(&operator), vec![("alice".to_string(), 8, Some(18)), ("bob".to_string(), 2, Some(5))]);
    assert_eq!(operator.rows_of, None);
    assert_eq!(rows(&viewer), vec![("bob".to_string(), 2, Some(5))], "a viewer's own row alone");
    assert_eq!(viewer.rows_of.as_deref(), Some("bob"));
    // The total is everyone's for both: computed before the rows were kept to bob's.
    assert_eq!((viewer.total.gpus_now, viewer.total.jobs_now), (10, 3));
    assert_eq!(viewer.total.gpu_hours.map(|h| h.round() as i64), Some(23));
    assert_eq!(
        (viewer.total.gpus_now, viewer.total.models.clone()),
        (operator.total.gpus_now, operator.total.models.clone())
    );
    assert!(viewer.total.gpu_hours_complete, "the hub read its accounting: {:?}", viewer.not_known);

    // By account or model, a viewer's rows count only their jobs too.
    let by_model = ask(VIEWER_TOKEN, "model").await;
    assert_eq!(by_model.rows.iter().map(|r| r.gpus_now).sum::<u32>(), 2);
    assert_eq!(by_model.total.gpus_now, 10);
    // A question the hub cannot answer is refused in words.
    let mut c = client.clone();
    let bad = c.usage(authed(usage_request("team"), VIEWER_TOKEN)).await.expect_err("no such rows");
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert!(bad.message().contains("user, account, cluster, model"), "{}", bad.message());
    let unknown = pb::UsageRequest { cluster: "nowhere".into(), ..usage_request("user") };
    assert_eq!(c.usage(authed(unknown, VIEWER_TOKEN)).await.expect_err("no cluster").code(), tonic::Code::NotFound);
    // Every read on record, under its caller.
    let records = hub.audit.read_all().unwrap();
    let count = |who: &str| records.iter().filter(|r| r.who == who && r.action == "usage" && r.target == "hpc").count();
    assert_eq!((count("bob@hub"), count("alice@hub")), (11, 1), "{records:#?}");
}

#[tokio::test]
async fn the_cli_fleet_through_a_hub_takes_the_hubs_usage_for_a_viewer_and_an_operator() {
    let (toy, hub) = alices_two_jobs_and_bobs_one().await;
    let query = flightdeck::model::usage::UsageQuery {
        by: flightdeck::model::usage::UsageBy::User,
        since: Some(chrono::Utc::now() - chrono::TimeDelta::days(1)),
        until: None,
    };
    let viewer = hub.client_fleet_as(VIEWER_TOKEN, true, None).await;
    let answer = viewer.usage(&query, None).await;
    assert!(!answer.failed, "{:?}", answer.usage.not_known);
    let keys: Vec<&str> = answer.usage.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["bob"]);
    assert_eq!(answer.usage.total.gpus_now, 10);
    // From the hub's accounting, not the client's picture of current jobs.
    assert!(answer.usage.total.gpu_hours_complete && answer.usage.not_known.is_empty(), "{:?}", answer.usage.not_known);
    let operator = hub.client_fleet(true, None).await;
    let answer = operator.usage(&query, None).await;
    let keys: Vec<&str> = answer.usage.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["alice", "bob"]);
    assert_eq!(toy.histories(), 1, "the operator's read came from the viewer's, a moment old");
}
