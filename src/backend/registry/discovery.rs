//! What each kind finds on this machine, as plain data: one answer to "what is here?" for
//! `flightdeck init` (which writes it as a config), the embedded default (which watches the
//! active clusters when there is no config file) and `doctor` (which says what was looked
//! for when nothing was found).
//!
//! Each kind's `KindEntry::discover` looks in its own way (Slurm: `squeue` on `PATH` and the
//! login nodes it is told to probe; Kubernetes: the kubeconfig's contexts; the cloud kinds:
//! their clients' files and servers; local: this machine's GPU sources) and returns a
//! [`Discovery`]: the clusters it found, each with why and its section, and what it looked
//! for and did not find. No front end matches on a kind to read it.
//!
//! [`Look`] says how far to go: the embedded default and `doctor` only read files and `PATH`
//! (and SkyPilot's bounded local probe); `init` also asks what answers (`squeue --version`,
//! login nodes over ssh).

use std::path::PathBuf;

use futures_util::future::BoxFuture;

use crate::backend::local::Host;
use crate::config::{ClusterConfig, ClusterKind, Settings, check_cluster_name};

/// A kind's discovery: what it finds on this machine, as [`Look`] allows.
pub type Discover = fn(&Look) -> BoxFuture<'static, Discovery>;

/// Where discovery looks and how far it goes.
#[derive(Debug, Clone)]
pub struct Look {
    /// This machine: its `PATH` (Slurm's `squeue`, `nvidia-smi`), NVML library and host name.
    pub host: Host,
    /// Ask what answers (`squeue --version` here, the [`Probe`] hosts over ssh): `init` does;
    /// the embedded default and `doctor` read only files and `PATH`, so starting is quick.
    pub ask: bool,
    /// Login nodes to probe over ssh (`init --probe HOST`), and how to reach them.
    pub probe: Probe,
    /// The ssh client config whose hosts `init` lists as worth probing; `None`: not read.
    pub ssh_config: Option<PathBuf>,
}

impl Look {
    /// Files and `PATH` of this machine, nothing asked: the embedded default and `doctor`.
    pub fn here() -> Look {
        Look { host: Host::this_machine(), ask: false, probe: Probe::default(), ssh_config: None }
    }
}

/// The login nodes to probe, and how to reach them: the same keys an ssh-reached cluster
/// takes, written into the clusters found.
#[derive(Debug, Default, Clone)]
pub struct Probe {
    pub hosts: Vec<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_file: Option<PathBuf>,
    pub known_hosts_file: Option<PathBuf>,
}

/// What one kind found, in the order it wants them written.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub found: Vec<Found>,
    /// What was looked for and is not there (or was left out), in words, each naming the
    /// file, command or address it looked at.
    pub missing: Vec<String>,
    /// Words for whoever reads `init`'s file: what else is worth a look (ssh hosts to probe).
    pub notes: Vec<String>,
}

/// One cluster found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The names it would take, best first; the first usable one no earlier cluster has is
    /// used, else the first with `-2`, `-3` … (see [`Names`]).
    pub names: Vec<String>,
    /// What found it: the file, command or answer, in one line.
    pub why: String,
    /// Watched (the embedded default) and written live (`init`); otherwise it did not
    /// answer or is not the current choice, and `init` writes it commented out.
    pub active: bool,
    /// The kind's section as the embedded default watches it.
    pub settings: Settings,
    /// The section as `init` writes it after `name` and `kind`. It says the same cluster as
    /// `settings`, except where a file cannot hold what the machine has (dstack's token stays
    /// in its CLI's file: the section names a variable and `why` says so).
    pub section: Vec<Line>,
}

/// One line of a section `init` writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `key = value`.
    Key(&'static str, toml::Value),
    /// A line written commented out (`host = "login.example.org"   # omitted: this machine`).
    Comment(String),
}

impl Line {
    /// `key = "text"`.
    pub fn text(key: &'static str, value: impl Into<String>) -> Line {
        Line::Key(key, toml::Value::String(value.into()))
    }
}

impl Found {
    /// The kind of the cluster found.
    pub fn kind(&self) -> ClusterKind {
        self.settings.kind()
    }
}

/// A kind's discovery and the kind it is of, in the registry's order.
#[derive(Debug, Clone)]
pub struct KindDiscovery {
    pub kind: ClusterKind,
    pub discovery: Discovery,
}

/// For a kind with nothing to find on a machine (a hub is named, never found).
pub fn nothing(_look: &Look) -> BoxFuture<'static, Discovery> {
    Box::pin(async { Discovery::default() })
}

/// `raw` made a usable cluster name: other characters become `-`, leading `-` and `.` go;
/// `None` when nothing usable is left.
pub fn cluster_name(raw: &str) -> Option<String> {
    let name: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' }).collect();
    let name = name.trim_start_matches(['-', '.']).to_string();
    check_cluster_name(&name).is_ok().then_some(name)
}

/// Names handed out one cluster at a time, never twice.
#[derive(Debug, Default)]
pub struct Names {
    taken: Vec<String>,
}

impl Names {
    /// The first of `wanted` that is usable and free, else the first usable one with `-2`,
    /// `-3` … (`cluster` when none is usable).
    pub fn pick(&mut self, wanted: &[String]) -> String {
        let usable: Vec<&String> = wanted.iter().filter(|n| check_cluster_name(n).is_ok()).collect();
        let name = match usable.iter().find(|n| !self.taken.contains(n)) {
            Some(free) => (*free).clone(),
            None => {
                let base = usable.first().map_or("cluster", |n| n.as_str());
                let mut n = 2;
                let mut name = if self.taken.iter().any(|t| t == base) { format!("{base}-{n}") } else { base.into() };
                while self.taken.contains(&name) {
                    n += 1;
                    name = format!("{base}-{n}");
                }
                name
            }
        };
        self.taken.push(name.clone());
        name
    }
}

/// The clusters a cockpit without a config watches: every active one found, named in turn.
pub fn embedded(discoveries: &[KindDiscovery]) -> Vec<ClusterConfig> {
    let mut names = Names::default();
    discoveries
        .iter()
        .flat_map(|d| d.discovery.found.iter())
        .filter(|f| f.active)
        .map(|f| ClusterConfig::new(names.pick(&f.names), f.settings.clone()))
        .collect()
}

/// What was looked for, one item per source, in the registry's order: what was found, and
/// what was missing.
pub fn looked_for(discoveries: &[KindDiscovery]) -> Vec<String> {
    discoveries
        .iter()
        .flat_map(|d| d.discovery.found.iter().map(|f| f.why.clone()).chain(d.discovery.missing.iter().cloned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_are_unique_and_usable() {
        let mut taken = Names::default();
        assert_eq!(taken.pick(&names(&["a"])), "a");
        assert_eq!(taken.pick(&names(&["a"])), "a-2");
        assert_eq!(taken.pick(&names(&["a"])), "a-3");
        assert_eq!(taken.pick(&names(&["a", "b"])), "b", "the next choice before a number");
        assert_eq!(taken.pick(&names(&["-bad", "a"])), "a-4", "unusable names are passed over");
        assert_eq!(taken.pick(&[]), "cluster");
        assert_eq!(
            cluster_name("arn:aws:eks:us-east-1:1:cluster/prod").as_deref(),
            Some("arn-aws-eks-us-east-1-1-cluster-prod")
        );
        assert_eq!(cluster_name("gpu box#1").as_deref(), Some("gpu-box-1"));
        assert_eq!(cluster_name("--"), None);
        assert_eq!(cluster_name(".."), None);
    }
}
