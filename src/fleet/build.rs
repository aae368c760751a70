//! A fleet from a configuration: one backend per configured cluster, made by the backend
//! registry. What the CLI, the cockpit and (later) `flightdeck serve` start from.

use std::sync::Arc;

use crate::backend::{Backend, BackendError, Registry};
use crate::config::Config;

use super::{Fleet, FleetOptions, Member};

/// Why a fleet could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A cluster asked for by name is not in the configuration.
    #[error("no cluster named `{name}` in {config}")]
    UnknownCluster { name: String, config: String },
    /// The cluster's kind could not make a backend for it.
    #[error("{cluster}: {error}")]
    Backend { cluster: String, error: BackendError },
}

/// Which clusters of a configuration, built by which registry.
pub struct FleetBuilder<'c> {
    config: &'c Config,
    registry: Registry,
    only: Vec<String>,
}

impl Fleet {
    /// Start a fleet over every configured cluster, with the shipped backend kinds. Needs a
    /// tokio runtime.
    pub fn from_config(config: &Config, opts: FleetOptions) -> Result<Fleet, BuildError> {
        Fleet::builder(config).start(opts)
    }

    /// A fleet over `config`, to restrict to some clusters or build with other kinds first.
    pub fn builder(config: &Config) -> FleetBuilder<'_> {
        FleetBuilder { config, registry: Registry::builtin(), only: Vec::new() }
    }
}

impl FleetBuilder<'_> {
    /// Only the clusters named here (all of them when empty); a name the configuration does
    /// not have is an error at [`FleetBuilder::start`].
    pub fn only(mut self, names: &[String]) -> Self {
        self.only = names.to_vec();
        self
    }

    /// Build backends with this registry (the one the configuration was read with).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// One member per selected cluster, in the configuration's order.
    pub fn members(&self) -> Result<Vec<Member>, BuildError> {
        let config = self.config;
        if let Some(name) = self.only.iter().find(|name| config.cluster(name).is_none()) {
            return Err(BuildError::UnknownCluster { name: name.clone(), config: config.source.to_string() });
        }
        config
            .clusters
            .iter()
            .filter(|c| self.only.is_empty() || self.only.contains(&c.name))
            .map(|c| {
                let backend =
                    self.registry.build(c).map_err(|error| BuildError::Backend { cluster: c.name.clone(), error })?;
                Ok(Member { backend, kind: c.kind(), refresh: c.refresh, timeout: c.timeout })
            })
            .collect()
    }

    /// Start the fleet (see [`Fleet::start`]). Needs a tokio runtime. An entry that
    /// stands for several clusters (a hub) is not connected here: see [`FleetBuilder::connect`].
    pub fn start(self, opts: FleetOptions) -> Result<Fleet, BuildError> {
        Ok(Fleet::start(self.members()?, opts))
    }

    /// Like [`FleetBuilder::start`], but first connect every entry that stands for several
    /// clusters (a hub) and list them, each bounded by its entry's timeout, all at once. A
    /// hub that cannot be reached is one stale cluster named after its entry, saying why.
    /// `only` names may be clusters a hub serves.
    pub async fn connect(self, opts: FleetOptions) -> Result<Fleet, BuildError> {
        let config = self.config;
        let registry = &self.registry;
        let expanding = |c: &&crate::config::ClusterConfig| registry.get(&c.kind()).and_then(|e| e.expand).is_some();
        let asked = |name: &str| self.only.is_empty() || self.only.iter().any(|n| n == name);
        let mut members = Vec::new();
        let hubs: Vec<_> = config.clusters.iter().filter(expanding).collect();
        let expansions = futures_util::future::join_all(hubs.iter().map(|c| async move {
            let expand = registry.get(&c.kind()).and_then(|e| e.expand);
            match expand {
                Some(expand) => (c, expand(c).await),
                None => (c, Ok(Vec::new())),
            }
        }))
        .await;
        let mut served: Vec<(String, String)> = Vec::new();
        let mut unreached: Vec<String> = Vec::new();
        for c in config.clusters.iter() {
            if expanding(&c) {
                let Some((_, result)) = expansions.iter().find(|(h, _)| h.name == c.name) else { continue };
                match result {
                    Ok(backends) => {
                        for backend in backends {
                            if !(asked(backend.name()) || asked(&c.name)) {
                                continue;
                            }
                            served.push((backend.name().to_string(), c.name.clone()));
                            let kind = backend_kind(backend.as_ref());
                            members.push(Member {
                                backend: backend.clone(),
                                kind,
                                refresh: c.refresh,
                                timeout: c.timeout,
                            });
                        }
                    }
                    Err(error) => {
                        tracing::warn!(hub = %c.name, %error, "cannot list the hub's clusters");
                        unreached.push(c.name.clone());
                        let backend: Arc<dyn Backend> = Arc::new(crate::backend::hub::Unreached {
                            name: c.name.clone(),
                            why: format!("hub {}: {error}", c.name),
                        });
                        members.push(Member { backend, kind: c.kind(), refresh: c.refresh, timeout: c.timeout });
                    }
                }
            } else if asked(&c.name) {
                let backend =
                    registry.build(c).map_err(|error| BuildError::Backend { cluster: c.name.clone(), error })?;
                members.push(Member { backend, kind: c.kind(), refresh: c.refresh, timeout: c.timeout });
            }
        }
        // One name, one cluster: a hub's cluster may not shadow a configured one or another hub's.
        let mut seen = std::collections::HashSet::new();
        for m in &members {
            if !seen.insert(m.backend.name().to_string()) {
                let via = served.iter().find(|(n, _)| n == m.backend.name()).map(|(_, h)| h.as_str()).unwrap_or("?");
                return Err(BuildError::Backend {
                    cluster: m.backend.name().to_string(),
                    error: BackendError::Unsupported(format!(
                        "cluster {} is configured twice: hub {via} serves one of that name too",
                        m.backend.name()
                    )),
                });
            }
        }
        let hub_names: Vec<&str> = hubs.iter().map(|c| c.name.as_str()).collect();
        // A name no cluster has, unless an unreachable hub may have it (its error says why).
        let unknown = self.only.iter().find(|n| !seen.contains(n.as_str()) && !hub_names.contains(&n.as_str()));
        if let Some(name) = unknown.filter(|_| unreached.is_empty()) {
            return Err(BuildError::UnknownCluster { name: name.clone(), config: config.source.to_string() });
        }
        Ok(Fleet::start(members, opts))
    }
}

/// The kind a hub's cluster has on the hub (`slurm`, `kubernetes` …), as it says.
fn backend_kind(backend: &dyn Backend) -> crate::model::ClusterKind {
    backend.kind().unwrap_or_else(|| crate::model::ClusterKind::from("unknown"))
}
