//! How long a hub replica's cluster goes unpolled when its owner dies (issue #32): three
//! Lease keepers (`serve::lease::LeaseKeeper`) share two clusters through the Kubernetes
//! fake's Leases; 20 times over, the holder of one cluster is killed (dropped: its Leases left
//! to run out, as a crashed pod's are) and the time until a survivor may poll it is taken,
//! then a fresh replica joins so three are alive again. Printed: the distribution (min,
//! p50, p90, max), in seconds and as a share of the bound the design promises (one lease
//! duration plus one renew period).
//!
//! A measurement, not an assertion: the Leases here last 2 s renewed every 500 ms (the
//! tests' timings; the defaults, 15 s and 5 s, scale it), so 20 kills take about a minute.
//!
//! `cargo bench --bench hub_failover`; under `cargo test` two kills check that the cluster
//! passes each time.

#[path = "../tests/kube_fake/mod.rs"]
mod kube_fake;

use std::time::Duration;

use flightdeck::serve::lease::{Identity, LeaseKeeper, LeaseSettings};
use kube_fake::FakeApi;
use tokio::time::Instant;

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(500);
const CLUSTERS: [&str; 2] = ["gpu-a", "gpu-b"];
const KILLED: &str = "gpu-a";
const WAIT: Duration = Duration::from_secs(30);

async fn keeper(fake: &FakeApi, id: &str) -> LeaseKeeper {
    let identity = Identity::new(id, &format!("{id}.hub.svc:7443")).unwrap();
    let settings = LeaseSettings::new("hub", identity).with_timing(LEASE, RENEW).unwrap();
    LeaseKeeper::start(fake.client().await, settings, CLUSTERS.iter().map(|c| (*c).to_owned()))
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) -> Instant {
    let deadline = Instant::now() + WAIT;
    loop {
        if ok() {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "waited {WAIT:?} for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn settled(keepers: &[LeaseKeeper]) -> bool {
    let held: Vec<Vec<String>> = keepers.iter().map(LeaseKeeper::held).collect();
    CLUSTERS.iter().all(|c| held.iter().filter(|h| h.iter().any(|x| x == c)).count() == 1)
        && held.iter().all(|h| h.len() <= 1)
}

/// `kills` failovers: the time from each kill until a survivor may poll the cluster.
async fn failovers(kills: usize) -> Vec<Duration> {
    let fake = FakeApi::start().await;
    let mut keepers = Vec::new();
    for id in ["hub-0", "hub-1", "hub-2"] {
        keepers.push(keeper(&fake, id).await);
    }
    let mut took = Vec::with_capacity(kills);
    for round in 0..kills {
        until("three replicas settled", || settled(&keepers)).await;
        let owner = keepers.iter().position(|k| k.held().iter().any(|c| c == KILLED)).expect("an owner");
        let killed = Instant::now();
        drop(keepers.remove(owner));
        let taken =
            until("a survivor takes the cluster", || keepers.iter().any(|k| k.held().iter().any(|c| c == KILLED)))
                .await;
        took.push(taken - killed);
        keepers.push(keeper(&fake, &format!("hub-{}", round + 3)).await);
    }
    took
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let kills = if measuring { 20 } else { 2 };
    let mut took = runtime().block_on(failovers(kills));
    assert_eq!(took.len(), kills);
    if !measuring {
        println!(
            "hub_failover bench: the cluster passed on both kills (run `cargo bench --bench hub_failover` to measure)"
        );
        return;
    }
    took.sort();
    let bound = LEASE + RENEW;
    let line = |name: &str, d: Duration| {
        format!("{name} {:.3} s ({:.0}% of the bound)", d.as_secs_f64(), 100.0 * d.as_secs_f64() / bound.as_secs_f64())
    };
    println!(
        "hub_failover: {kills} kills, lease {:?} renewed every {:?} (bound {:?}): {}; {}; {}; {}",
        LEASE,
        RENEW,
        bound,
        line("min", took[0]),
        line("p50", percentile(&took, 50.0)),
        line("p90", percentile(&took, 90.0)),
        line("max", took[kills - 1]),
    );
}
