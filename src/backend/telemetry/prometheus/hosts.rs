//! Exporter host names → the cluster's node names.
//!
//! Exporters and scrape configurations name a machine in their own ways: `Hostname="dgx01"`
//! (dcgm-exporter), `hostname` (AMD), `kubernetes_node`/`node` (relabelling), or only the
//! scrape target `instance="10.0.0.5:9400"`; sometimes fully qualified (`dgx01.cluster.local`)
//! where the scheduler says `dgx01`, or the other way round. The join to jobs needs the
//! backend's own names, so each value is matched to a snapshot node: exactly, then without
//! a port, then by its first DNS label, then an IPv4 address by the `ip-10-0-0-5` names
//! cloud providers give nodes. The index is built once per reading.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use crate::model::Snapshot;

/// The snapshot's node names, indexed for the lookups above.
pub(super) struct Hosts<'s> {
    names: Vec<&'s str>,
    exact: HashMap<&'s str, usize>,
    /// First DNS label, lower-cased → node; `None` where two nodes share it (then only an
    /// exact name can pick one).
    short: HashMap<String, Option<usize>>,
}

impl<'s> Hosts<'s> {
    pub(super) fn new(snapshot: &'s Snapshot) -> Self {
        let names: Vec<&str> = snapshot.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut exact = HashMap::with_capacity(names.len());
        let mut short: HashMap<String, Option<usize>> = HashMap::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            exact.entry(*name).or_insert(i);
            short
                .entry(first_label(name).to_ascii_lowercase())
                .and_modify(|slot| {
                    if *slot != Some(i) {
                        *slot = None;
                    }
                })
                .or_insert(Some(i));
        }
        Hosts { names, exact, short }
    }

    /// No nodes to match against (a backend that lists none): names are kept as reported.
    pub(super) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    pub(super) fn name(&self, node: usize) -> &'s str {
        self.names[node]
    }

    /// The node `value` names, if any.
    pub(super) fn resolve(&self, value: &str) -> Option<usize> {
        if let Some(&i) = self.exact.get(value) {
            return Some(i);
        }
        let host = without_port(value);
        if let Some(&i) = self.exact.get(host) {
            return Some(i);
        }
        if let Ok(ip) = host.parse::<Ipv4Addr>() {
            let [a, b, c, d] = ip.octets();
            return self.short.get(&format!("ip-{a}-{b}-{c}-{d}")).copied().flatten();
        }
        self.short.get(&first_label(host).to_ascii_lowercase()).copied().flatten()
    }
}

/// `dgx01` of `dgx01:9400`, `10.0.0.5` of `10.0.0.5:9400`, `::1` of `[::1]:9400`; a bare IPv6
/// address is left whole.
pub(super) fn without_port(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match value.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => value,
    }
}

/// `dgx01` of `dgx01.cluster.local`.
fn first_label(host: &str) -> &str {
    host.split('.').next().unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, NodeState};

    fn snapshot(names: &[&str]) -> Snapshot {
        Snapshot { nodes: names.iter().map(|n| Node::new("c", *n, NodeState::Idle)).collect(), ..Snapshot::default() }
    }

    #[test]
    fn exporter_names_find_the_schedulers_nodes() {
        let snap = snapshot(&["dgx01", "dgx02.cluster.local", "ip-10-0-0-7.ec2.internal", "GPU-A"]);
        let hosts = Hosts::new(&snap);
        let found = |v: &str| hosts.resolve(v).map(|i| hosts.name(i));
        assert_eq!(found("dgx01"), Some("dgx01"));
        assert_eq!(found("dgx01:9400"), Some("dgx01"));
        assert_eq!(found("dgx01.cluster.local"), Some("dgx01"), "a qualified name, a short node");
        assert_eq!(found("dgx02"), Some("dgx02.cluster.local"), "a short name, a qualified node");
        assert_eq!(found("DGX02.other:9400"), Some("dgx02.cluster.local"));
        assert_eq!(found("10.0.0.7:9400"), Some("ip-10-0-0-7.ec2.internal"));
        assert_eq!(found("gpu-a"), Some("GPU-A"));
        assert_eq!(found("10.0.0.8:9400"), None);
        assert_eq!(found("dgx03"), None);
        assert_eq!(found(""), None);
    }

    #[test]
    fn a_short_name_two_nodes_share_picks_neither() {
        let snap = snapshot(&["n1.a.example", "n1.b.example"]);
        let hosts = Hosts::new(&snap);
        assert_eq!(hosts.resolve("n1"), None);
        assert_eq!(hosts.resolve("n1.b.example").map(|i| hosts.name(i)), Some("n1.b.example"));
    }

    #[test]
    fn ports_come_off_only_where_there_is_one() {
        assert_eq!(without_port("10.0.0.5:9400"), "10.0.0.5");
        assert_eq!(without_port("[fd00::5]:9400"), "fd00::5");
        assert_eq!(without_port("fd00::5"), "fd00::5");
        assert_eq!(without_port("host:"), "host:");
        assert_eq!(without_port("host:http"), "host:http");
        assert_eq!(without_port("["), "");
    }
}
