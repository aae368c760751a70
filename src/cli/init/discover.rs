//! What `flightdeck init` finds on this machine and behind the hosts it is told to probe.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::exec::{KnownHosts, SshTarget, Transport};

/// How long a probe or a local `squeue --version` may take: a login node that does not
/// answer in this long is written commented out, with the reason.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Hosts of `~/.ssh/config` listed at most (a comment, not a config of its own).
const MAX_SSH_HOSTS: usize = 40;

/// The login nodes to probe for Slurm, and how to reach them (the same keys a Slurm cluster
/// takes, written into the clusters found).
#[derive(Debug, Default, Clone)]
pub struct Probe {
    pub hosts: Vec<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_file: Option<PathBuf>,
    pub known_hosts_file: Option<PathBuf>,
}

/// One thing found (or looked for and missing).
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// Slurm's commands on this machine; the release `squeue --version` gave, or why not.
    LocalSlurm { release: Result<String, String> },
    /// A probed login node.
    SlurmLogin {
        host: String,
        user: Option<String>,
        port: Option<u16>,
        identity_file: Option<PathBuf>,
        known_hosts_file: Option<PathBuf>,
        release: Result<String, String>,
    },
    /// A kubeconfig context; the current one is written active.
    Kube { context: String, current: bool },
    /// A dstack CLI project (`~/.dstack/config.yml`); its default is written active.
    Dstack { url: String, project: String, default: bool },
    /// A SkyPilot API server; `answered` when it did on `/api/health`.
    SkyPilot { url: String, answered: bool },
    /// Hosts of `~/.ssh/config` that were not probed.
    SshHosts { file: PathBuf, hosts: Vec<String> },
    /// What was looked for and not found, in words.
    Missing(String),
}

impl Finding {
    pub fn is_cluster(&self) -> bool {
        !matches!(self, Finding::SshHosts { .. } | Finding::Missing(_))
    }

    /// Written as a live `[[cluster]]` rather than commented out.
    pub fn is_active(&self) -> bool {
        match self {
            Finding::LocalSlurm { release } | Finding::SlurmLogin { release, .. } => release.is_ok(),
            Finding::Kube { current, .. } => *current,
            Finding::Dstack { default, .. } => *default,
            Finding::SkyPilot { answered, .. } => *answered,
            Finding::SshHosts { .. } | Finding::Missing(_) => false,
        }
    }
}

/// Every finding, in the order they are written: this machine first, then probed login
/// nodes, Kubernetes, the cloud servers, and the ssh hosts left to probe.
pub async fn look(probe: &Probe, ssh_config: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    match crate::config::find_program("squeue") {
        Some(_) => out.push(Finding::LocalSlurm { release: local_release().await }),
        None => out.push(Finding::Missing("Slurm on this machine (no squeue on PATH)".into())),
    }
    for host in &probe.hosts {
        out.push(probe_login(probe, host).await);
    }
    out.extend(kube_contexts());
    out.extend(dstack_projects());
    out.push(skypilot_server());
    let probed: Vec<&str> = probe.hosts.iter().map(String::as_str).collect();
    let hosts: Vec<String> =
        ssh_hosts(ssh_config).into_iter().filter(|h| !probed.contains(&h.as_str())).take(MAX_SSH_HOSTS).collect();
    if !hosts.is_empty() {
        out.push(Finding::SshHosts { file: ssh_config.to_path_buf(), hosts });
    }
    out
}

/// `slurm 22.05.8` → `22.05.8`.
fn release_of(stdout: &str) -> Result<String, String> {
    // `slurm 24.11.5` upstream, `slurm-wlm 22.05.8` as Debian builds it.
    let line = stdout.lines().next().unwrap_or_default().trim();
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(name), Some(v), None) if name.starts_with("slurm") && v.starts_with(|c: char| c.is_ascii_digit()) => {
            Ok(v.to_string())
        }
        _ => Err(format!("squeue --version printed {:?}, not a Slurm release", crate::safe_text::printable(line))),
    }
}

async fn local_release() -> Result<String, String> {
    run_version(&Transport::local()).await
}

async fn run_version(transport: &Transport) -> Result<String, String> {
    let argv = vec!["squeue".to_string(), "--version".to_string()];
    let out = transport.output(&argv, None, PROBE_TIMEOUT).await.map_err(|e| e.to_string())?;
    let out = out.into_result(&argv).map_err(|e| e.to_string())?;
    release_of(&String::from_utf8_lossy(&out.stdout))
}

/// `squeue --version` on a login node over ssh, the way the Slurm backend would reach it
/// (host keys checked strictly).
async fn probe_login(probe: &Probe, host: &str) -> Finding {
    let target = SshTarget {
        host: host.to_string(),
        user: probe.user.clone(),
        port: probe.port,
        identity_file: probe.identity_file.clone(),
        known_hosts: KnownHosts::Strict,
        known_hosts_file: probe.known_hosts_file.clone(),
        connect_timeout: PROBE_TIMEOUT,
    };
    let release = run_version(&Transport::ssh(target)).await;
    Finding::SlurmLogin {
        host: host.to_string(),
        user: probe.user.clone(),
        port: probe.port,
        identity_file: probe.identity_file.clone(),
        known_hosts_file: probe.known_hosts_file.clone(),
        release,
    }
}

fn kube_contexts() -> Vec<Finding> {
    match ::kube::config::Kubeconfig::read() {
        Ok(k) if !k.contexts.is_empty() => {
            let current = k.current_context.clone().unwrap_or_default();
            k.contexts
                .iter()
                .map(|c| {
                    // A name the config would refuse is said, not written.
                    if c.name.is_empty() || c.name.chars().any(char::is_control) {
                        Finding::Missing(format!(
                            "Kubernetes context {:?} left out: its name is empty or holds control characters",
                            c.name
                        ))
                    } else {
                        Finding::Kube { context: c.name.clone(), current: c.name == current }
                    }
                })
                .collect()
        }
        Ok(_) => vec![Finding::Missing("Kubernetes (the kubeconfig names no context)".into())],
        Err(e) => vec![Finding::Missing(format!("Kubernetes (no kubeconfig: {e})"))],
    }
}

fn dstack_projects() -> Vec<Finding> {
    let path = crate::config::expand_tilde("~/.dstack/config.yml");
    match crate::backend::dstack::config::cli_projects(&path) {
        Some(projects) if !projects.is_empty() => {
            let chosen = projects.iter().position(|p| p.default).unwrap_or(0);
            projects
                .iter()
                .enumerate()
                .filter(|(_, p)| crate::backend::dstack::config::check_url(&p.url).is_ok())
                .map(|(i, p)| Finding::Dstack { url: p.url.clone(), project: p.name.clone(), default: i == chosen })
                .collect()
        }
        _ => vec![Finding::Missing(format!("dstack (no projects in {})", path.display()))],
    }
}

fn skypilot_server() -> Finding {
    use crate::backend::skypilot::config::{endpoint_in, probe_local};
    let path = crate::config::expand_tilde("~/.sky/config.yaml");
    if let Some(url) = endpoint_in(&path) {
        return Finding::SkyPilot { url, answered: true };
    }
    if probe_local(46580) {
        return Finding::SkyPilot { url: "http://127.0.0.1:46580".into(), answered: true };
    }
    Finding::Missing(format!("SkyPilot (no api_server in {}, nothing on 127.0.0.1:46580)", path.display()))
}

/// The concrete host names of an ssh client config (`Host` lines; patterns and negations
/// are left out, since they name no one host to probe).
fn ssh_hosts(path: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::metadata(path) else { return Vec::new() };
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    parse_ssh_hosts(&text)
}

/// `Host a b` / `Host=a` lines, keyword in any case, `#` comments ignored.
pub fn parse_ssh_hosts(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        let (keyword, rest) = match line.find(|c: char| c.is_whitespace() || c == '=') {
            Some(i) => (&line[..i], line[i..].trim_start_matches(|c: char| c.is_whitespace() || c == '=')),
            None => continue,
        };
        if !keyword.eq_ignore_ascii_case("host") {
            continue;
        }
        for host in rest.split_whitespace() {
            let host = host.trim_matches('"');
            let pattern = host.contains(['*', '?', '!']);
            if !pattern
                && crate::backend::slurm::config::check_ssh_destination(host).is_ok()
                && !out.iter().any(|h| h == host)
            {
                out.push(host.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_config_hosts_without_patterns() {
        let text = "Host *\n  ServerAliveInterval 30\nHost login1 login2 # two\nhost=dgx\nHost !bad *.corp gpu?\nMatch host x\nHost login1\n";
        assert_eq!(parse_ssh_hosts(text), ["login1", "login2", "dgx"]);
        assert!(parse_ssh_hosts("Host -oProxyCommand=x\n").is_empty(), "never an option");
    }

    #[test]
    fn the_release_is_read_from_squeue_version() {
        assert_eq!(release_of("slurm 22.05.8\n").unwrap(), "22.05.8");
        assert_eq!(release_of("slurm 24.11.5\n").unwrap(), "24.11.5");
        assert_eq!(release_of("slurm-wlm 22.05.8\n").unwrap(), "22.05.8");
        let err = release_of("bash: squeue: command not found\n").unwrap_err();
        assert!(err.contains("not a Slurm release"), "{err}");
    }
}
