//! A fleet from a configuration: one backend per configured cluster, made by the backend
//! registry. What the CLI, the cockpit and (later) `flightdeck serve` start from.

use std::sync::Arc;

use crate::backend::{Backend, BackendError, Registry};
use crate::config::Config;

use super::{Fleet, FleetOptions, Member, TelemetryOptions};

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
    /// Read GPU telemetry beside polling (the default).
    telemetry: bool,
    /// Poll each entry only while its gate is open (a hub replica's Leases); `None`: always.
    gates: Option<std::collections::HashMap<String, super::gate::Gate>>,
}

impl Fleet {
    /// Start a fleet over every configured cluster, with the shipped backend kinds. Needs a
    /// tokio runtime.
    pub fn from_config(config: &Config, opts: FleetOptions) -> Result<Fleet, BuildError> {
        Fleet::builder(config).start(opts)
    }

    /// A fleet over `config`, to restrict to some clusters or build with other kinds first.
    pub fn builder(config: &Config) -> FleetBuilder<'_> {
        FleetBuilder { config, registry: Registry::builtin(), only: Vec::new(), telemetry: true, gates: None }
    }
}

impl FleetBuilder<'_> {
    /// Only the clusters named here (all of them when empty); a name the configuration does
    /// not have is an error at [`FleetBuilder::start`].
    pub fn only(mut self, names: &[String]) -> Self {
        self.only = names.to_vec();
        self
    }

    /// Start no GPU telemetry reading: a script that asked for none costs the clusters none.
    pub fn without_telemetry(mut self) -> Self {
        self.telemetry = false;
        self
    }

    /// Poll each configured entry (all the clusters a hub entry stands for) only while its
    /// gate here is open; an entry without one is never polled.
    pub fn gated(mut self, gates: std::collections::HashMap<String, super::gate::Gate>) -> Self {
        self.gates = Some(gates);
        self
    }

    /// The gate of the members of `entry`.
    fn gate_of(&self, entry: &str) -> Option<super::gate::Gate> {
        let gates = self.gates.as_ref()?;
        Some(gates.get(entry).cloned().unwrap_or_else(super::gate::closed))
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
        let members = self.members()?;
        let telemetry = self.telemetry(members.iter().map(|m| (m, m.backend.name())))?;
        let gates = members.iter().map(|m| self.gate_of(m.backend.name())).collect();
        Ok(Fleet::start_registered(members, opts, telemetry, gates, &self.registry))
    }

    /// How the members' GPUs are read: the configuration's idle rule, each entry's cadence
    /// and Prometheus (a hub's clusters take their entry's).
    fn telemetry<'m>(
        &self,
        members: impl Iterator<Item = (&'m Member, &'m str)>,
    ) -> Result<TelemetryOptions, BuildError> {
        let mut options =
            TelemetryOptions { off: !self.telemetry, idle: self.config.idle, ..TelemetryOptions::default() };
        for (member, entry) in members {
            let Some(c) = self.config.cluster(entry) else { continue };
            let name = member.backend.name().to_string();
            options.every.insert(name.clone(), c.telemetry_every);
            if let Some(prometheus) = &c.prometheus {
                let source = super::telemetry_sources::prometheus(&name, prometheus, c.timeout)
                    .map_err(|error| BuildError::Backend { cluster: name.clone(), error })?;
                options.sources.insert(name, source);
            }
        }
        Ok(options)
    }

    /// Like [`FleetBuilder::start`], but first connect every entry that stands for several
    /// clusters (a hub) and list them, all entries at once, each bounded by its timeout. A
    /// hub that cannot be reached is one stale cluster named after its entry, saying why.
    /// `only` names may be an entry's or a cluster a hub serves.
    pub async fn connect(self, opts: FleetOptions) -> Result<Fleet, BuildError> {
        let config = self.config;
        let listed = futures_util::future::join_all(config.clusters.iter().map(|c| self.entry_members(c))).await;
        let asked = |name: &str| self.only.is_empty() || self.only.iter().any(|n| n == name);
        let mut members: Vec<(Member, &str)> = Vec::new();
        let mut unreached = false;
        for (c, listed) in config.clusters.iter().zip(listed) {
            let (listed, reached) = listed?;
            unreached |= !reached;
            let wanted = listed.into_iter().filter(|m| asked(&c.name) || asked(m.backend.name()));
            members.extend(wanted.map(|m| (m, c.name.as_str())));
        }
        // One name, one cluster: a hub's cluster may not shadow a configured one or another hub's.
        let mut seen = std::collections::HashSet::new();
        for (m, entry) in &members {
            let name = m.backend.name();
            if !seen.insert(name) {
                let error = BackendError::Unsupported(format!(
                    "cluster {name} is configured twice (entry {entry} has one too)"
                ));
                return Err(BuildError::Backend { cluster: name.to_string(), error });
            }
        }
        // A name no entry and no cluster has, unless an unreachable hub may serve it (its
        // stand-in says why).
        let unknown = self.only.iter().find(|n| !seen.contains(n.as_str()) && config.cluster(n).is_none());
        if let Some(name) = unknown.filter(|_| !unreached) {
            return Err(BuildError::UnknownCluster { name: name.clone(), config: config.source.to_string() });
        }
        let telemetry = self.telemetry(members.iter().map(|(m, entry)| (m, *entry)))?;
        let gates = members.iter().map(|(_, entry)| self.gate_of(entry)).collect();
        let members = members.into_iter().map(|(m, _)| m).collect();
        Ok(Fleet::start_registered(members, opts, telemetry, gates, &self.registry))
    }

    /// The members one config entry stands for, and whether its clusters could be listed:
    /// one backend for most kinds; for a kind that expands, what it serves, or on failure
    /// its stand-in that shows the reason.
    async fn entry_members(&self, c: &crate::config::ClusterConfig) -> Result<(Vec<Member>, bool), BuildError> {
        let member = |backend: Arc<dyn Backend>| {
            let kind = backend.kind().unwrap_or_else(|| c.kind());
            Member { backend, kind, refresh: c.refresh, timeout: c.timeout }
        };
        let built = |error| BuildError::Backend { cluster: c.name.clone(), error };
        let Some(expand) = self.registry.get(&c.kind()).and_then(|e| e.expand) else {
            return Ok((vec![member(self.registry.build(c).map_err(built)?)], true));
        };
        match expand(c).await {
            Ok(backends) => Ok((backends.into_iter().map(member).collect(), true)),
            Err(error) => {
                tracing::warn!(entry = %c.name, %error, "cannot list the clusters this entry stands for");
                let stand_in: Arc<dyn Backend> = Arc::new(crate::backend::unreached::Unreached {
                    name: c.name.clone(),
                    why: format!("{} {}: {error}", c.kind(), c.name),
                });
                Ok((vec![member(stand_in)], false))
            }
        }
    }
}
