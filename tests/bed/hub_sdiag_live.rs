//! The hub as deployed (`flightdeck serve`, the binary, GPU telemetry through srun on its
//! own schedule) polling fd22 every 5 s with 20 subscribers, each of which also asks for
//! `doctor` every refresh interval: over a minute slurmctld served exactly one
//! `REQUEST_JOB_INFO` (its own counters, `sdiag`) per refresh the hub made (the hub's own
//! counter on `/metrics`). Needs `tests/testbed/up.sh`.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flightdeck::backend::Backend;
use flightdeck::model::{JobRef, JobState};
use flightdeck::spec::JobSpec;
use flightdeck::wire::pb;
use tokio::time::Instant;

use common::*;

const CLUSTER: &str = "fd22";
const CLIENTS: usize = 20;
const REFRESH_SECONDS: u64 = 5;
/// About 60 s of refreshes.
const REFRESHES: u64 = 12;
const TOKEN: &str = "live-sdiag-token-4242";
const WAIT: Duration = Duration::from_secs(90);

/// The hub's process, killed when the test ends however it ends.
struct Hub(Child);

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} is not set: source the test bed's env file"))
}

/// fd22 as the test bed's config has it, refreshed and read for telemetry every 5 s.
fn config() -> String {
    format!(
        r#"[[cluster]]
name = "{CLUSTER}"
kind = "slurm"
host = "127.0.0.1"
port = {port}
user = "root"
identity_file = "{key}"
known_hosts = "strict"
known_hosts_file = "{known}"
refresh_seconds = {REFRESH_SECONDS}
telemetry_seconds = {REFRESH_SECONDS}
nvidia_smi = "/var/lib/flightdeck-testbed/bin/nvidia-smi"
"#,
        port = env("FD22_SSH_PORT"),
        key = env("FD_TESTBED_KEY"),
        known = env("FD_TESTBED_KNOWN_HOSTS"),
    )
}

/// `flightdeck_refreshes_total` of the cluster and whether telemetry has measured it, from
/// the hub's `/metrics`.
async fn hub_counters(http: &reqwest::Client, metrics: std::net::SocketAddr) -> Option<(u64, bool)> {
    let text = http.get(format!("http://{metrics}/metrics")).send().await.ok()?.text().await.ok()?;
    let sample = |name: &str| {
        let prefix = format!("{name}{{cluster=\"{CLUSTER}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
    };
    let refreshes = sample("flightdeck_refreshes_total")?.parse().ok()?;
    Some((refreshes, sample("flightdeck_gpus_measured").is_some_and(|n| n != "0")))
}

/// Wait for the hub to finish its next refresh; return the refreshes counted then. The next
/// one starts a refresh interval later, so `sdiag` read right after sees none half-way.
async fn next_refresh(http: &reqwest::Client, metrics: std::net::SocketAddr) -> u64 {
    let start = hub_counters(http, metrics).await.expect("the hub's /metrics").0;
    let deadline = Instant::now() + WAIT;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some((now, _)) = hub_counters(http, metrics).await.filter(|(n, _)| *n > start) {
            return now;
        }
        assert!(Instant::now() < deadline, "the hub made no refresh in {WAIT:?}");
    }
}

fn authorised<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_clients_of_a_hub_cost_one_job_query_per_refresh() {
    let _ = testbed_config();
    let _lock = cluster_lock(CLUSTER);
    let _quiet = cluster_quiet(CLUSTER);
    let probe = backend(CLUSTER);

    // A running array task holding one of a node's four GPUs: telemetry steps into it with
    // srun, after looking up its numeric id and its device indices (the field listing
    // indexes a node's GPUs only where one job holds them all), each once.
    let spec = JobSpec {
        name: format!("fd-hub-sdiag-{}", std::process::id()),
        script: Some("#!/bin/bash\n#SBATCH --array=0-0\nsleep 600\n".into()),
        workdir: Some("/tmp".into()),
        time_limit: Some("15m".into()),
        gpus: 1,
        ..JobSpec::default()
    };
    let _cancel = CancelByName { cluster: CLUSTER, name: spec.name.clone() };
    let array = probe.submit(&spec).await.expect("submit");
    wait_snapshot(&probe, WAIT, "the array task to run", |s| {
        s.jobs.iter().any(|j| {
            j.array.as_ref().is_some_and(|a| a.array_id == array.id)
                && j.state == JobState::Running
                && j.gpus_allocated > 0
        })
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("flightdeck.toml");
    std::fs::write(&cfg, config()).unwrap();
    let tokens = tokens_file(dir.path(), &[(TOKEN, "tester operator")]);
    let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (addr, metrics) = (free(), free());
    let _hub = Hub(Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .env("XDG_STATE_HOME", dir.path())
        .env_remove("FLIGHTDECK_CONFIG")
        .arg("--config")
        .arg(&cfg)
        .args(["serve", "--listen", &addr.to_string(), "--metrics-listen", &metrics.to_string()])
        .arg("--tokens")
        .arg(&tokens)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("flightdeck serve"));

    // Twenty cockpits, each on a connection of its own, counting the updates they get.
    let mut channels = Vec::new();
    let deadline = Instant::now() + WAIT;
    while channels.len() < CLIENTS {
        match tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await {
            Ok(c) => channels.push(c),
            Err(e) => {
                assert!(Instant::now() < deadline, "the hub does not answer on {addr}: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let updates: Vec<Arc<AtomicU64>> = (0..CLIENTS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut followers = Vec::new();
    for (channel, seen) in channels.iter().zip(&updates) {
        let mut client = pb::hub_client::HubClient::new(channel.clone()).max_decoding_message_size(256 << 20);
        let seen = seen.clone();
        followers.push(tokio::spawn(async move {
            let mut stream = client.subscribe(authorised(pb::SubscribeRequest::default())).await.expect("subscribe");
            while let Ok(Some(_)) = stream.get_mut().message().await {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Each also on its doctor screen: one Diagnose per client every refresh interval.
    let doctors = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    for channel in &channels {
        let mut client = pb::hub_client::HubClient::new(channel.clone());
        let doctors = doctors.clone();
        followers.push(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(REFRESH_SECONDS)).await;
                let asked = authorised(pb::ClusterRequest { cluster: CLUSTER.into() });
                if let Ok(d) = client.diagnose(asked).await {
                    let d = flightdeck::wire::diagnosis_from_pb(d.into_inner());
                    if let (Some(rpcs), Some(telemetry)) =
                        (d.get("controller RPCs per refresh"), d.get("GPU telemetry controller cost"))
                    {
                        doctors.lock().unwrap().push((rpcs.to_string(), telemetry.to_string()));
                    }
                }
            }
        }));
    }

    // Telemetry has read the task (its lookups done) before the count starts.
    let http = flightdeck::backend::http::client(Duration::from_secs(5), None).expect("an HTTP client");
    let deadline = Instant::now() + WAIT;
    while !hub_counters(&http, metrics).await.is_some_and(|(n, measured)| n >= 2 && measured) {
        assert!(Instant::now() < deadline, "the hub neither refreshed twice nor measured the GPUs in {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let from = next_refresh(&http, metrics).await;
    let before = probe.rpc_counts().await.expect("sdiag");
    let seen_before: Vec<u64> = updates.iter().map(|u| u.load(Ordering::Relaxed)).collect();
    let mut to = from;
    while to < from + REFRESHES {
        to = next_refresh(&http, metrics).await;
    }
    let after = probe.rpc_counts().await.expect("sdiag");
    let made = to - from;
    let job_queries = after.count_since(&before, "REQUEST_JOB_INFO");
    let by_type: Vec<(String, u64)> = after
        .by_type
        .iter()
        .map(|(k, v)| (k.clone(), v - before.by_type.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect();
    eprintln!("{CLUSTER}: {job_queries} REQUEST_JOB_INFO for {made} hub refreshes with {CLIENTS} clients; {by_type:?}");
    assert!(after.queries_since(&before) >= made, "sdiag counted fewer query RPCs than refreshes: is it counting?");
    assert_eq!(job_queries, made, "{CLUSTER}: one job query per hub refresh, whatever the clients do");
    for (i, (u, b)) in updates.iter().zip(&seen_before).enumerate() {
        assert!(u.load(Ordering::Relaxed) > *b, "client {i} got no update while the hub refreshed {made} times");
    }
    let doctors = doctors.lock().unwrap().clone();
    assert!(doctors.len() >= CLIENTS, "the clients' doctors answered {} times", doctors.len());
    let measured: Vec<&String> =
        doctors.iter().map(|(rpcs, _)| rpcs).filter(|d| !d.starts_with("measured from the next doctor")).collect();
    assert!(!measured.is_empty(), "no doctor measured the RPCs per refresh: {doctors:?}");
    assert!(measured.iter().all(|d| d.contains("(1 job queries;")), "doctor through the hub: {measured:?}");
    // Telemetry's own job queries (the task's numeric id, its device indices) are its own
    // line, each asked once.
    let (_, telemetry) = doctors.last().unwrap();
    // One or two: the device lookup is skipped where the field listing already indexes the
    // node's GPUs (one job holding them all), which depends on what else runs there.
    assert!(
        ["no job query per reading; 1 job query so far", "no job query per reading; 2 job queries so far"]
            .iter()
            .any(|line| telemetry.contains(line)),
        "telemetry's cost through the hub: {telemetry}"
    );

    for f in followers {
        f.abort();
    }
    let _ = probe
        .job_action(&JobRef::new(CLUSTER, format!("{}_[*]", array.id)), flightdeck::backend::JobAction::Cancel)
        .await;
    let _ = probe.job_action(&array, flightdeck::backend::JobAction::Cancel).await;
}
