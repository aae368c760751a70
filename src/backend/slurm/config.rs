//! A Slurm cluster's section of `[[cluster]]`: how its commands are reached.
//!
//! ```toml
//! [[cluster]]
//! name = "hpc"
//! kind = "slurm"
//! host = "login.example.org"   # ssh destination (an ~/.ssh/config alias works); omit for local commands
//! user = "alice"               # optional
//! port = 22                    # optional
//! identity_file = "~/.ssh/id_ed25519"   # optional, ~ expanded
//! known_hosts = "strict"       # strict (default) | accept-new | off
//! known_hosts_file = "/path"   # optional: use this known_hosts file instead of the user's
//! telemetry_via = "srun"       # srun (default) | ssh: how nvidia-smi reaches the GPU nodes
//! telemetry_max_nodes = 64     # nodes read per telemetry reading (default 64; the rest rotate)
//! nvidia_smi = "nvidia-smi"    # the program on the nodes: a name (found on PATH) or an absolute path
//! ```

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

pub use crate::backend::exec::KnownHosts;
use crate::backend::exec::SshTarget;
use crate::config::{ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

// The kind's name lives in its folder, not in `model` (which names no kind): removing the
// kind removes the constant with it.
impl ClusterKind {
    pub const SLURM: ClusterKind = ClusterKind::from_static("slurm");
}

/// The name of the cluster the embedded default creates for this machine's own Slurm.
pub const LOCAL_CLUSTER_NAME: &str = "local";

/// How to reach one Slurm cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmConfig {
    /// The ssh destination; `None` runs the commands on this machine.
    pub host: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// `~` already expanded.
    pub identity_file: Option<PathBuf>,
    pub known_hosts: KnownHosts,
    /// `~` already expanded.
    pub known_hosts_file: Option<PathBuf>,
    /// How `nvidia-smi` reaches the nodes for GPU telemetry.
    pub telemetry_via: TelemetryVia,
    /// The most nodes one telemetry reading runs `nvidia-smi` on.
    pub telemetry_max_nodes: u32,
    /// `nvidia-smi` as the nodes know it: a program name or an absolute path, checked.
    pub nvidia_smi: String,
}

/// Nodes one telemetry reading reads by default: a few seconds of commands over one link.
pub const DEFAULT_TELEMETRY_MAX_NODES: u32 = 64;

impl Default for SlurmConfig {
    fn default() -> Self {
        Self {
            host: None,
            user: None,
            port: None,
            identity_file: None,
            known_hosts: KnownHosts::default(),
            known_hosts_file: None,
            telemetry_via: TelemetryVia::default(),
            telemetry_max_nodes: DEFAULT_TELEMETRY_MAX_NODES,
            nvidia_smi: "nvidia-smi".to_string(),
        }
    }
}

impl KindSettings for SlurmConfig {
    const KIND: ClusterKind = ClusterKind::SLURM;
}

impl SlurmConfig {
    /// Where the exec transport connects, when the commands are not local: `timeout` is the
    /// cluster's, and the connection gets at most 30 s of it.
    pub fn ssh_target(&self, timeout: std::time::Duration) -> Option<SshTarget> {
        Some(SshTarget {
            host: self.host.clone()?,
            user: self.user.clone(),
            port: self.port,
            identity_file: self.identity_file.clone(),
            known_hosts: self.known_hosts,
            known_hosts_file: self.known_hosts_file.clone(),
            connect_timeout: timeout.min(std::time::Duration::from_secs(30)),
        })
    }

    /// The keys of the section, as written in the file.
    pub const KEYS: &'static [&'static str] = &[
        "host",
        "user",
        "port",
        "identity_file",
        "known_hosts",
        "known_hosts_file",
        "telemetry_via",
        "telemetry_max_nodes",
        "nvidia_smi",
    ];

    /// Commands over ssh to `host`, every other setting at its default.
    pub fn over_ssh(host: impl Into<String>) -> Self {
        Self { host: Some(host.into()), ..Self::default() }
    }

    /// Commands run on this machine rather than over ssh.
    pub fn is_local(&self) -> bool {
        self.host.is_none()
    }

    /// Read and check the section.
    pub fn parse(section: &ClusterSection<'_>) -> Result<SlurmConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let mut out = SlurmConfig::default();

        // host, user: handed to ssh as arguments; refuse what ssh would read as an option.
        for (key, value, slot) in [("host", &raw.host, &mut out.host), ("user", &raw.user, &mut out.user)] {
            if let Some(value) = value {
                check_ssh_destination(value.get_ref()).map_err(|why| section.bad_value(key, value, why))?;
                *slot = Some(value.get_ref().clone());
            }
        }
        if let Some(port) = &raw.port {
            if *port.get_ref() == 0 {
                return Err(section.bad_value("port", port, "0 is not a port (use 1–65535)"));
            }
            out.port = Some(*port.get_ref());
        }
        for (key, value, slot) in [
            ("identity_file", &raw.identity_file, &mut out.identity_file),
            ("known_hosts_file", &raw.known_hosts_file, &mut out.known_hosts_file),
        ] {
            if let Some(value) = value {
                *slot = Some(section.file_path(key, value)?);
            }
        }
        if let Some(value) = &raw.known_hosts {
            let text = value.get_ref();
            out.known_hosts = KnownHosts::parse(text).ok_or_else(|| {
                section.bad_value(
                    "known_hosts",
                    value,
                    format!("{text:?} (expected one of: {})", KnownHosts::ACCEPTED.join(", ")),
                )
            })?;
        }
        if let Some(value) = &raw.telemetry_via {
            let text = value.get_ref();
            out.telemetry_via = TelemetryVia::parse(text).ok_or_else(|| {
                section.bad_value(
                    "telemetry_via",
                    value,
                    format!("{text:?} (expected one of: {})", TelemetryVia::ACCEPTED.join(", ")),
                )
            })?;
        }
        if let Some(value) = &raw.telemetry_max_nodes {
            if *value.get_ref() == 0 {
                return Err(section.bad_value("telemetry_max_nodes", value, "0 nodes (use at least 1)"));
            }
            out.telemetry_max_nodes = *value.get_ref();
        }
        if let Some(value) = &raw.nvidia_smi {
            check_program(value.get_ref()).map_err(|why| section.bad_value("nvidia_smi", value, why))?;
            out.nvidia_smi = value.get_ref().clone();
        }
        Ok(out)
    }
}

/// The config module's view of the kind (its line in the backend registry).
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: ClusterKind::SLURM,
        keys: SlurmConfig::KEYS,
        parse: |section| SlurmConfig::parse(section).map(Settings::new),
    }
}

/// How telemetry runs `nvidia-smi` on a GPU node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TelemetryVia {
    /// `srun --overlap --jobid=…` from the login node: inside each job's allocation, so it
    /// needs no SSH to the nodes (and, where devices are constrained, sees only the job's GPUs).
    #[default]
    Srun,
    /// `ssh NODE nvidia-smi …` from the login node: every GPU of the node, where the login
    /// node can reach the nodes without a password.
    Ssh,
}

impl TelemetryVia {
    /// Every value the config file accepts, as written there.
    pub const ACCEPTED: &'static [&'static str] = &["srun", "ssh"];

    pub fn as_str(self) -> &'static str {
        match self {
            TelemetryVia::Srun => "srun",
            TelemetryVia::Ssh => "ssh",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "srun" => Some(TelemetryVia::Srun),
            "ssh" => Some(TelemetryVia::Ssh),
            _ => None,
        }
    }
}

/// The section as written (shared keys are read by the config module).
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    host: Option<Spanned<String>>,
    #[serde(default)]
    user: Option<Spanned<String>>,
    #[serde(default)]
    port: Option<Spanned<u16>>,
    #[serde(default)]
    identity_file: Option<Spanned<String>>,
    #[serde(default)]
    known_hosts: Option<Spanned<String>>,
    #[serde(default)]
    known_hosts_file: Option<Spanned<String>>,
    #[serde(default)]
    telemetry_via: Option<Spanned<String>>,
    #[serde(default)]
    telemetry_max_nodes: Option<Spanned<u32>>,
    #[serde(default)]
    nvidia_smi: Option<Spanned<String>>,
}

/// Kept under its old name for `init`'s probes until the discover step moves them here.
pub use crate::backend::exec::check_ssh_destination;

/// The program telemetry runs on the nodes: srun hands it to `execve`, ssh to the node's
/// login shell (quoted, but a csh still expands some characters inside quotes). So: a plain
/// program name (found on the node's `PATH`) or an absolute path, without whitespace,
/// control characters or what a shell could expand, and never something read as an option.
fn check_program(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.starts_with('-') {
        return Err(format!("{value:?} starts with '-', which srun or ssh would read as an option"));
    }
    if let Some(c) = value.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{value:?} contains whitespace or a control character ({c:?})"));
    }
    if let Some(c) = value.chars().find(|c| "`$!\\\"'*?[]{}~;&|<>()#".contains(*c)) {
        return Err(format!("{value:?} contains {c:?}, which a shell on the node could expand"));
    }
    if value.contains('/') && !value.starts_with('/') {
        return Err(format!("{value:?} is a relative path (use a program name or an absolute path)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::backend::registry::testing::{FILE, parse, refused_naming_key as refused};

    const BASE: &str = "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n";

    fn slurm(text: &str) -> SlurmConfig {
        parse(text).unwrap().clusters[0].section::<SlurmConfig>().expect("a slurm cluster").clone()
    }

    #[test]
    fn every_key_is_read() {
        let text = format!(
            "{BASE}host = \"login.example.org\"\nuser = \"alice\"\nport = 2222\nidentity_file = \"/keys/id\"\n\
             known_hosts = \"accept-new\"\nknown_hosts_file = \"/etc/fd/known_hosts\"\nrefresh_seconds = 5\n"
        );
        let config = parse(&text).unwrap();
        let hpc = &config.clusters[0];
        assert_eq!(hpc.kind(), ClusterKind::SLURM);
        assert_eq!(hpc.refresh, Duration::from_secs(5));
        assert_eq!(
            hpc.section::<SlurmConfig>(),
            Some(&SlurmConfig {
                host: Some("login.example.org".into()),
                user: Some("alice".into()),
                port: Some(2222),
                identity_file: Some(PathBuf::from("/keys/id")),
                known_hosts: KnownHosts::AcceptNew,
                known_hosts_file: Some(PathBuf::from("/etc/fd/known_hosts")),
                telemetry_via: TelemetryVia::Srun,
                telemetry_max_nodes: DEFAULT_TELEMETRY_MAX_NODES,
                nvidia_smi: "nvidia-smi".into(),
            })
        );
        let local = slurm(BASE);
        assert!(local.is_local());
        assert_eq!(local, SlurmConfig::default());
        assert!(!SlurmConfig::over_ssh("login").is_local());
    }

    #[test]
    fn wrong_type_names_the_key() {
        let shown = refused(&format!("{BASE}port = \"22\"\n"), 4, "port");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: bad value for `port` in [[cluster]] \"hpc\": expected an integer from 1 to 65535, found string \"22\""
            )
        );
    }

    #[test]
    fn port_out_of_range_and_zero() {
        let shown = refused(&format!("{BASE}port = 70000\n"), 4, "port");
        assert!(shown.contains("70000"), "{shown}");
        let shown = refused(&format!("{BASE}port = -1\n"), 4, "port");
        assert!(shown.contains("-1"), "{shown}");
        let shown = refused(&format!("{BASE}port = 0\n"), 4, "port");
        assert!(shown.contains("0 is not a port"), "{shown}");
    }

    #[test]
    fn known_hosts_values() {
        for (text, want) in
            [("strict", KnownHosts::Strict), ("accept-new", KnownHosts::AcceptNew), ("off", KnownHosts::Off)]
        {
            assert_eq!(slurm(&format!("{BASE}known_hosts = {text:?}\n")).known_hosts, want);
            assert_eq!(want.as_str(), text);
        }
        let shown = refused(&format!("{BASE}known_hosts = \"yes\"\n"), 4, "known_hosts");
        assert!(shown.contains("expected one of: strict, accept-new, off"), "{shown}");
        assert_eq!(KnownHosts::default().ssh_option_value(), "yes");
        assert_eq!(KnownHosts::AcceptNew.ssh_option_value(), "accept-new");
        assert_eq!(KnownHosts::Off.ssh_option_value(), "no");
    }

    #[test]
    fn host_and_user_that_ssh_would_misread() {
        let shown = refused(&format!("{BASE}host = \"-oProxyCommand=x\"\n"), 4, "host");
        assert!(shown.contains("option"), "{shown}");
        refused(&format!("{BASE}host = \"\"\n"), 4, "host");
        refused(&format!("{BASE}host = \"a b\"\n"), 4, "host");
        refused(&format!("{BASE}user = \"al\\nice\"\n"), 4, "user");
        let ok = slurm(&format!("{BASE}host = \"alice@login\"\nuser = \"a@corp\"\n"));
        assert_eq!(ok.host.as_deref(), Some("alice@login"));
    }

    #[test]
    fn file_paths_are_checked_and_expanded() {
        refused(&format!("{BASE}identity_file = \"\"\n"), 4, "identity_file");
        let shown = refused(&format!("{BASE}known_hosts_file = \" \"\n"), 4, "known_hosts_file");
        assert!(shown.contains("expected a file path"), "{shown}");
        let path = slurm(&format!("{BASE}identity_file = \"~/.ssh/k\"\n")).identity_file.unwrap();
        assert!(path.ends_with(".ssh/k"), "{path:?}");
        if directories::BaseDirs::new().is_some() {
            assert!(!path.starts_with("~"), "{path:?}");
        }
    }

    #[test]
    fn telemetry_keys_are_read() {
        let text = format!(
            "{BASE}telemetry_via = \"ssh\"\ntelemetry_max_nodes = 1\nnvidia_smi = \"/opt/nvidia/bin/nvidia-smi\"\n"
        );
        let s = slurm(&text);
        assert_eq!(
            (s.telemetry_via, s.telemetry_max_nodes, s.nvidia_smi.as_str()),
            (TelemetryVia::Ssh, 1, "/opt/nvidia/bin/nvidia-smi")
        );
        let s = slurm(&format!("{BASE}telemetry_via = \"srun\"\nnvidia_smi = \"nvidia-smi-550\"\n"));
        assert_eq!((s.telemetry_via, s.nvidia_smi.as_str()), (TelemetryVia::Srun, "nvidia-smi-550"));
        for (text, want) in [("srun", TelemetryVia::Srun), ("ssh", TelemetryVia::Ssh)] {
            assert_eq!(TelemetryVia::parse(text), Some(want));
            assert_eq!(want.as_str(), text);
        }
        let d = SlurmConfig::default();
        assert_eq!(
            (d.telemetry_via, d.telemetry_max_nodes, d.nvidia_smi.as_str()),
            (TelemetryVia::Srun, 64, "nvidia-smi")
        );
    }

    #[test]
    fn telemetry_keys_are_checked() {
        let shown = refused(&format!("{BASE}telemetry_via = \"pdsh\"\n"), 4, "telemetry_via");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: bad value for `telemetry_via` in [[cluster]] \"hpc\": \"pdsh\" (expected one of: srun, ssh)"
            )
        );
        let shown = refused(&format!("{BASE}telemetry_max_nodes = 0\n"), 4, "telemetry_max_nodes");
        assert!(shown.contains("use at least 1"), "{shown}");
        refused(&format!("{BASE}telemetry_max_nodes = -3\n"), 4, "telemetry_max_nodes");
        refused(&format!("{BASE}telemetry_max_nodes = \"8\"\n"), 4, "telemetry_max_nodes");
        for (bad, why) in [
            ("", "empty"),
            ("-L", "option"),
            ("bin/nvidia-smi", "relative path"),
            ("/opt/my tools/nvidia-smi", "whitespace"),
            ("/usr/bin/nvidia-smi\\n", "control character"),
            ("nvidia-smi;reboot", "expand"),
            ("$(id)", "expand"),
            ("/opt/`id`/nvidia-smi", "expand"),
        ] {
            let shown = refused(&format!("{BASE}nvidia_smi = {:?}\n", bad.replace("\\n", "\n")), 4, "nvidia_smi");
            assert!(shown.contains(why), "{bad:?}: {shown}");
        }
    }
}
