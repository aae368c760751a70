//! What `flightdeck doctor` learns about one cluster: the facts every backend has
//! (transport, latency, release, notes) plus a list of facts only its kind has.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// How the backend is reached (`ssh root@login:22`, `local`, `kube API via …`).
    pub transport: String,
    /// Time to the first answer (connect plus one round trip), in milliseconds.
    pub latency_ms: Option<u64>,
    /// The remote system's release (`22.05.8`, `v1.31.0`).
    pub release: Option<String>,
    /// Kind-specific facts, in the order they are shown (`JSON output` = `yes`,
    /// `refresh runs` = `squeue --json …`, `controller RPCs per refresh` = `3`).
    pub facts: Vec<Fact>,
    /// Anything else worth telling, one sentence each.
    pub notes: Vec<String>,
}

/// One labelled fact of a [`Diagnosis`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub key: String,
    pub value: String,
}

impl Diagnosis {
    /// Add a fact (keys may repeat: one `refresh runs` line per command).
    pub fn fact(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.facts.push(Fact { key: key.into(), value: value.into() });
    }

    /// The first fact with this key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.facts.iter().find(|f| f.key == key).map(|f| f.value.as_str())
    }
}
