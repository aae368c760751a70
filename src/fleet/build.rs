//! A fleet from a configuration: one backend per configured cluster, made by the backend
//! registry. What the CLI, the cockpit and (later) `flightdeck serve` start from.

use crate::backend::{BackendError, Registry};
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

    /// Start the fleet (see [`Fleet::start`]). Needs a tokio runtime.
    pub fn start(self, opts: FleetOptions) -> Result<Fleet, BuildError> {
        Ok(Fleet::start(self.members()?, opts))
    }
}
