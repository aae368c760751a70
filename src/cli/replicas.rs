//! `flightdeck serve --replicas-via kubernetes`: this hub is one of several replicas sharing
//! the configured clusters through Kubernetes Leases (`serve::lease`). Each configured entry's
//! poller (and its actions) runs only while this replica holds that entry's Lease; the other
//! replicas' clusters are relayed from them (`serve::relay`, reached as `serve::peers` says).
//!
//! `flightdeck serve --replicas-via kubernetes [--lease-namespace NS] [--peer-address
//! ADDR] [--replica-id ID] [--peer-token-file F] [--peer-ca-file F]`: a `serve::lease::LeaseKeeper`
//! over every configured entry with the environment's Kubernetes client (in a pod its service
//! account, else the kubeconfig; namespace the client's unless named; peer `--listen`, id the short
//! host name unless named), its flags the fleet's gates; on shutdown the Leases are given back;
//! what it serves is `serve::relay`'s merge (`serve::serve_published`), peers reached with
//! `--peer-token-file` (an operator token of the shared token file) and `--peer-ca-file`.

use std::collections::HashMap;

use clap::ValueEnum;

use super::Failure;
use crate::backend::http::TokenSource;
use crate::config::Config;
use crate::fleet::gate::Gate;
use crate::serve::lease::{Identity, LeaseKeeper, LeaseSettings};
use crate::serve::peers::PeerOptions;

/// How replicas find and share the clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplicasVia {
    /// One `coordination.k8s.io/v1` Lease per cluster in `--lease-namespace`.
    Kubernetes,
}

/// What `serve` was told about its replicas.
pub struct Replicas {
    pub via: ReplicasVia,
    pub namespace: Option<String>,
    pub peer_address: Option<String>,
    pub replica_id: Option<String>,
    /// The token shown to the other replicas.
    pub peer_token_file: Option<std::path::PathBuf>,
    /// The CA of the other replicas' certificates.
    pub peer_ca_file: Option<std::path::PathBuf>,
}

/// How this replica reaches the others: the scheme this hub serves (every replica serves
/// alike), the CA and the token it was given.
pub fn peer_options(ask: Option<&Replicas>, tls: bool) -> Result<PeerOptions, Failure> {
    let Some(ask) = ask else { return Ok(PeerOptions { tls, ..PeerOptions::default() }) };
    let token = TokenSource::from_keys(None, ask.peer_token_file.clone())
        .map_err(|e| Failure(format!("--peer-token-file: {e}")))?;
    Ok(PeerOptions { tls, ca_file: ask.peer_ca_file.clone(), token })
}

/// Starts holding the Leases of every configured entry, with the Kubernetes client the
/// environment gives (in a pod its service account, else the kubeconfig). The namespace is
/// `--lease-namespace`, else the client's; the peer address `--peer-address`, else where the
/// hub listens; the id `--replica-id`, else the host's name (a pod's name).
pub async fn lease_keeper(config: &Config, ask: &Replicas, listen: &str) -> Result<LeaseKeeper, Failure> {
    let ReplicasVia::Kubernetes = ask.via;
    let kube_config = kube::Config::infer()
        .await
        .map_err(|e| Failure(format!("--replicas-via kubernetes: no Kubernetes client configuration: {e}")))?;
    let namespace = ask.namespace.clone().unwrap_or_else(|| kube_config.default_namespace.clone());
    let client = kube::Client::try_from(kube_config)
        .map_err(|e| Failure(format!("--replicas-via kubernetes: cannot build a Kubernetes client: {e}")))?;
    let replica = match &ask.replica_id {
        Some(id) => id.clone(),
        None => crate::system::host::short_hostname(),
    };
    let peer = ask.peer_address.clone().unwrap_or_else(|| listen.to_owned());
    let identity = Identity::new(&replica, &peer).map_err(|e| Failure(format!("--replica-id/--peer-address: {e}")))?;
    let clusters = config.clusters.iter().map(|c| c.name.clone());
    Ok(LeaseKeeper::start(client, LeaseSettings::new(&namespace, identity), clusters))
}

/// Each configured entry's gate: open while this replica holds its Lease.
pub fn gates(keeper: &LeaseKeeper) -> HashMap<String, Gate> {
    keeper.clusters().into_iter().filter_map(|c| keeper.may_poll(&c).map(|rx| (c, rx))).collect()
}
