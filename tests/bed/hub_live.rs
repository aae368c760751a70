//! The hub against the real Slurm test bed: 200 subscribers cost the controller what one
//! cockpit does (slurmctld's own counters, `sdiag`), and every subscriber ends with the
//! hub's picture. Needs `tests/testbed/up.sh`.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::backend::Backend;
use flightdeck::backend::hub_link::Mirror;
use flightdeck::backend::slurm::SlurmBackend;
use flightdeck::fleet::{Fleet, FleetOptions, Member};
use flightdeck::model::{Job, Node};
use flightdeck::spec::JobSpec;
use flightdeck::wire::pb;

use common::*;

const CLUSTER: &str = "fd24";
const CLIENTS: usize = 200;
const WINDOW: Duration = Duration::from_secs(60);
const REFRESH: Duration = Duration::from_secs(2);
const TOKEN: &str = "live-hub-token-4242";

fn member(backend: Arc<SlurmBackend>) -> Member {
    Member { backend, kind: "slurm".into(), refresh: REFRESH, timeout: Duration::from_secs(20) }
}

fn options() -> FleetOptions {
    FleetOptions { read_only: false, poll: true, audit: None, actor: "tester@live".into() }
}

/// Query RPCs slurmctld served during `WINDOW`, and the refreshes the fleet made in it.
async fn rpcs_over_window(fleet: &Fleet, probe: &SlurmBackend) -> (u64, u64) {
    fleet.wait_for(Duration::from_secs(60), |s| s.clusters.iter().all(|c| c.snapshot.is_some())).await;
    let attempts = |f: &Fleet| f.state().clusters[0].attempts;
    let before = probe.rpc_counts().await.expect("sdiag");
    let refreshes_before = attempts(fleet);
    tokio::time::sleep(WINDOW).await;
    let after = probe.rpc_counts().await.expect("sdiag");
    (after.queries_since(&before), attempts(fleet) - refreshes_before)
}

/// Jobs as they cross the wire: a log handle's owner stays in the hub, by design.
fn sorted_jobs(mut jobs: Vec<Job>) -> serde_json::Value {
    jobs.sort_by(|a, b| a.job_ref.id.cmp(&b.job_ref.id));
    serde_json::to_value(jobs).unwrap()
}

fn sorted_nodes(mut nodes: Vec<Node>) -> Vec<Node> {
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_subscribers_cost_the_controller_one_poller() {
    let _ = testbed_config();
    let _lock = cluster_lock(CLUSTER);
    let _quiet = cluster_quiet(CLUSTER);
    let probe = backend(CLUSTER);

    // One cockpit's worth: a fleet polling the cluster itself.
    let (alone, alone_refreshes) = {
        let fleet = Fleet::start(vec![member(backend(CLUSTER))], options());
        rpcs_over_window(&fleet, &probe).await
    };
    let per_refresh = alone.div_ceil(alone_refreshes.max(1));
    eprintln!("one poller: {alone} query RPCs in {}s ({alone_refreshes} refreshes)", WINDOW.as_secs());

    // The hub with 200 subscribers.
    let dir = tempfile::tempdir().unwrap();
    let fleet = Arc::new(Fleet::start(vec![member(backend(CLUSTER))], options()));
    let hub = LoopbackHub::start(fleet.clone(), tokens_file(dir.path(), &[(TOKEN, "tester operator")])).await;
    // Subscribers over a handful of connections, as cockpits behind a few login nodes.
    let mut channels = Vec::new();
    for _ in 0..8 {
        channels.push(tonic::transport::Endpoint::from_shared(hub.url()).unwrap().connect().await.unwrap());
    }
    let mirrors: Vec<Arc<Mutex<Mirror>>> = (0..CLIENTS).map(|_| Arc::new(Mutex::new(Mirror::default()))).collect();
    let mut followers = Vec::new();
    for (i, mirror) in mirrors.iter().enumerate() {
        let mut client =
            pb::hub_client::HubClient::new(channels[i % channels.len()].clone()).max_decoding_message_size(256 << 20);
        let mirror = mirror.clone();
        followers.push(tokio::spawn(async move {
            let mut request = tonic::Request::new(pb::SubscribeRequest::default());
            request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
            let mut stream = client.subscribe(request).await.expect("subscribe").into_inner();
            while let Ok(Some(update)) = stream.message().await {
                assert!(mirror.lock().unwrap().apply(update), "subscriber {i} out of step");
            }
        }));
    }
    let (hubbed, hub_refreshes) = rpcs_over_window(&fleet, &probe).await;
    eprintln!(
        "hub with {CLIENTS} subscribers: {hubbed} query RPCs in {}s ({hub_refreshes} refreshes); one poller: {alone}",
        WINDOW.as_secs()
    );
    assert!(alone >= alone_refreshes, "sdiag counted {alone} RPCs for {alone_refreshes} refreshes: is it counting?");
    assert!(
        hubbed.abs_diff(alone) <= per_refresh,
        "{CLIENTS} subscribers cost {hubbed} RPCs, one poller {alone} (one refresh is {per_refresh})"
    );

    // A change reaches everyone, and everyone ends with the hub's picture.
    let spec = JobSpec {
        name: format!("fd-hub-live-{}", std::process::id()),
        command: Some("sleep 300".into()),
        workdir: Some("/tmp".into()),
        ..JobSpec::default()
    };
    let held = probe.submit(&spec).await.expect("submit");
    let everyone_has_it = || {
        mirrors.iter().all(|m| m.lock().unwrap().clusters.get(CLUSTER).is_some_and(|c| c.jobs.contains_key(&held.id)))
    };
    let mut equal = false;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if !everyone_has_it() {
            continue;
        }
        let hub = fleet.state();
        let hub_snapshot = hub.cluster(CLUSTER).unwrap().snapshot.clone().unwrap();
        let want_jobs = sorted_jobs(hub_snapshot.jobs.clone());
        let want_nodes = sorted_nodes(hub_snapshot.nodes.clone());
        equal = mirrors.iter().all(|m| {
            let mut m = m.lock().unwrap();
            let snapshot = m.clusters.get_mut(CLUSTER).unwrap().snapshot(CLUSTER).unwrap();
            sorted_jobs(snapshot.jobs.clone()) == want_jobs && sorted_nodes(snapshot.nodes.clone()) == want_nodes
        });
        if equal {
            break;
        }
    }
    assert!(everyone_has_it(), "not every subscriber saw the new job");
    assert!(equal, "a subscriber's picture differs from the hub's");
    let job = fleet
        .state()
        .cluster(CLUSTER)
        .unwrap()
        .snapshot
        .as_ref()
        .unwrap()
        .jobs
        .iter()
        .find(|j| j.job_ref == held)
        .cloned();
    assert!(job.is_some_and(|j| !j.state.is_finished()), "the new job is live on the hub");

    // One subscriber leaves and comes back with its versions: only what it missed.
    let resume = mirrors[0].lock().unwrap().resume();
    let _ = probe.job_action(&held, flightdeck::backend::JobAction::Cancel).await;
    tokio::time::sleep(REFRESH * 3).await;
    let mut client = pb::hub_client::HubClient::new(channels[0].clone()).max_decoding_message_size(256 << 20);
    let mut request = tonic::Request::new(resume);
    request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let first = client.subscribe(request).await.unwrap().into_inner().message().await.unwrap().unwrap();
    assert!(first.clusters.iter().all(|c| !c.replace), "a resumed subscriber got a full cluster");
    let sent: usize = first.clusters.iter().map(|c| c.jobs.len()).sum();
    let total = fleet.state().cluster(CLUSTER).unwrap().snapshot.as_ref().unwrap().jobs.len();
    assert!(sent < total.max(2), "{sent} jobs resent of {total}");

    let _ = tokio::time::timeout(Duration::from_secs(10), hub.stop()).await;
    for f in followers {
        f.abort();
    }
}
