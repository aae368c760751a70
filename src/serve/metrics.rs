//! What the hub counts, served as Prometheus text on `/metrics` (a port of its own: see `serve`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use std::collections::BTreeMap;

use super::relay::{Figure, Served};
use crate::model::FleetState;

#[derive(Debug, Default)]
pub struct Metrics {
    subscribers: AtomicI64,
    updates_published: AtomicU64,
    updates_sent: AtomicU64,
    resyncs: AtomicU64,
    rpcs: AtomicU64,
    refused: AtomicU64,
}

/// Counts a subscriber for as long as its stream lives.
pub struct SubscriberGuard(Arc<Metrics>);

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        self.0.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    pub fn subscribed(metrics: &Arc<Metrics>) -> SubscriberGuard {
        metrics.subscribers.fetch_add(1, Ordering::Relaxed);
        SubscriberGuard(metrics.clone())
    }

    pub fn subscribers(&self) -> i64 {
        self.subscribers.load(Ordering::Relaxed)
    }

    /// One update computed and broadcast (shared by every subscriber).
    pub fn published(&self) {
        self.updates_published.fetch_add(1, Ordering::Relaxed);
    }

    pub fn sent(&self) {
        self.updates_sent.fetch_add(1, Ordering::Relaxed);
    }

    pub fn updates_sent(&self) -> u64 {
        self.updates_sent.load(Ordering::Relaxed)
    }

    pub fn resynced(&self) {
        self.resyncs.fetch_add(1, Ordering::Relaxed);
    }

    pub fn rpc(&self) {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refusal(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition: the hub's own counters, then per cluster its last
    /// refresh's latency, its refreshes and the requests its backend sent per refresh, all of
    /// this process's own polling (a replica's figures for the clusters it polls or polled;
    /// what it relays is [`replica_text`]'s).
    pub fn render(&self, state: &FleetState, requests: &[(String, Option<u64>)]) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        metric("flightdeck_hub_clients", "gauge", "Subscribers connected now.", self.subscribers().to_string());
        metric(
            "flightdeck_hub_updates_published_total",
            "counter",
            "State updates computed (each shared by every subscriber).",
            self.updates_published.load(Ordering::Relaxed).to_string(),
        );
        metric(
            "flightdeck_hub_deltas_sent_total",
            "counter",
            "Updates sent to subscribers, all subscribers together.",
            self.updates_sent().to_string(),
        );
        metric(
            "flightdeck_hub_resyncs_total",
            "counter",
            "Full states sent to subscribers that fell behind.",
            self.resyncs.load(Ordering::Relaxed).to_string(),
        );
        metric(
            "flightdeck_hub_rpcs_total",
            "counter",
            "Calls answered.",
            self.rpcs.load(Ordering::Relaxed).to_string(),
        );
        metric(
            "flightdeck_hub_refused_total",
            "counter",
            "Actions and reads refused for the caller's role.",
            self.refused.load(Ordering::Relaxed).to_string(),
        );
        let clusters = &state.clusters;
        let _ = writeln!(
            out,
            "# HELP flightdeck_refresh_seconds How long the cluster's last refresh took.\n# TYPE flightdeck_refresh_seconds gauge"
        );
        for c in clusters {
            if let Some(ms) = c.last_refresh_ms {
                let _ = writeln!(
                    out,
                    "flightdeck_refresh_seconds{{cluster=\"{}\"}} {:.3}",
                    label(&c.name),
                    ms as f64 / 1000.0
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP flightdeck_refreshes_total Refreshes of the cluster, good or bad.\n# TYPE flightdeck_refreshes_total counter"
        );
        for c in clusters {
            let _ = writeln!(out, "flightdeck_refreshes_total{{cluster=\"{}\"}} {}", label(&c.name), c.attempts);
        }
        let _ = writeln!(
            out,
            "# HELP flightdeck_backend_requests_per_refresh Requests the backend sent its cluster (commands, HTTP calls) per refresh, since the hub started.\n# TYPE flightdeck_backend_requests_per_refresh gauge"
        );
        for (name, sent) in requests {
            let (Some(sent), Some(c)) = (sent, state.cluster(name)) else { continue };
            if c.attempts > 0 {
                let per = *sent as f64 / c.attempts as f64;
                let _ =
                    writeln!(out, "flightdeck_backend_requests_per_refresh{{cluster=\"{}\"}} {per:.2}", label(name));
            }
        }
        gpu_metrics(&mut out, clusters);
        out
    }
}

/// One figure of a cluster's telemetry, as its sample text.
type GpuFigure<'a> = dyn Fn(&crate::model::GpuUse) -> String + 'a;

/// Per cluster with telemetry: GPUs measured, allocated-but-idle GPUs and jobs, and the age
/// of the reading (what an alert on idle GPUs or a stuck reader wants).
fn gpu_metrics(out: &mut String, clusters: &[crate::model::ClusterState]) {
    let now = chrono::Utc::now();
    let measured: Vec<_> = clusters.iter().filter_map(|c| c.gpu_use.as_deref().map(|u| (c, u))).collect();
    let families: [(&str, &str, &GpuFigure); 4] = [
        ("flightdeck_gpus_measured", "GPUs the last telemetry reading measured.", &|u| u.gpus.len().to_string()),
        ("flightdeck_gpus_idle_allocated", "GPUs held by jobs flagged idle.", &|u| u.idle().1.to_string()),
        ("flightdeck_jobs_idle", "Jobs holding GPUs under the idle threshold for the whole window.", &|u| {
            u.idle().0.to_string()
        }),
        ("flightdeck_telemetry_age_seconds", "Age of the last telemetry reading.", &|u| {
            format!("{:.1}", (now - u.taken_at).num_milliseconds().max(0) as f64 / 1000.0)
        }),
    ];
    for (name, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (c, u) in &measured {
            let _ = writeln!(out, "{name}{{cluster=\"{}\"}} {}", label(&c.name), value(u));
        }
    }
}

/// A replica's account of what it publishes (issue #32): per cluster whether it polls it
/// here, the replica it relays it from (by id and peer address), and how many of its changes
/// it published while relaying it. A cluster with neither a 1 here nor a relay line is
/// served by nobody now (its last picture stays, stale).
pub fn replica_text(figures: &BTreeMap<String, Figure>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP flightdeck_hub_cluster_polled_here Whether this replica polls the cluster now (holds its Lease): 1, else 0 (relayed from another replica, or nobody's now).\n# TYPE flightdeck_hub_cluster_polled_here gauge"
    );
    for (cluster, figure) in figures {
        let here = u8::from(figure.served == Served::Here);
        let _ = writeln!(out, "flightdeck_hub_cluster_polled_here{{cluster=\"{}\"}} {here}", label(cluster));
    }
    let _ = writeln!(
        out,
        "# HELP flightdeck_hub_cluster_relayed_from The replica this one relays the cluster from (its Lease holder).\n# TYPE flightdeck_hub_cluster_relayed_from gauge"
    );
    for (cluster, figure) in figures {
        if let Served::Relayed(owner) = &figure.served {
            let _ = writeln!(
                out,
                "flightdeck_hub_cluster_relayed_from{{cluster=\"{}\",replica=\"{}\",peer=\"{}\"}} 1",
                label(cluster),
                label(owner.replica()),
                label(owner.peer())
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP flightdeck_hub_relayed_updates_total Changes of the cluster published here while relaying it from another replica.\n# TYPE flightdeck_hub_relayed_updates_total counter"
    );
    for (cluster, figure) in figures {
        let _ = writeln!(
            out,
            "flightdeck_hub_relayed_updates_total{{cluster=\"{}\"}} {}",
            label(cluster),
            figure.relayed_updates
        );
    }
    out
}

/// A label value as Prometheus reads it: backslash, quote and newline escaped.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::lease::Identity;

    #[test]
    fn a_replica_says_which_clusters_it_polls_and_which_it_relays_from_whom() {
        let b = Identity::new("hub-b", "10.0.0.2:7443").unwrap();
        let figures = BTreeMap::from([
            ("mine".to_owned(), Figure { served: Served::Here, relayed_updates: 0 }),
            ("theirs".to_owned(), Figure { served: Served::Relayed(b), relayed_updates: 12 }),
            ("lost".to_owned(), Figure { served: Served::Nobody("no replica holds it".into()), relayed_updates: 3 }),
        ]);
        let text = replica_text(&figures);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                r#"flightdeck_hub_cluster_polled_here{cluster="lost"} 0"#,
                r#"flightdeck_hub_cluster_polled_here{cluster="mine"} 1"#,
                r#"flightdeck_hub_cluster_polled_here{cluster="theirs"} 0"#,
                r#"flightdeck_hub_cluster_relayed_from{cluster="theirs",replica="hub-b",peer="10.0.0.2:7443"} 1"#,
                r#"flightdeck_hub_relayed_updates_total{cluster="lost"} 3"#,
                r#"flightdeck_hub_relayed_updates_total{cluster="mine"} 0"#,
                r#"flightdeck_hub_relayed_updates_total{cluster="theirs"} 12"#,
            ]
        );
    }
}
