//! What Slurm is on this machine and behind the login nodes `init --probe` names: local
//! `squeue` on `PATH` (asked for its release when [`Look::ask`]), each probed login node
//! over ssh the way the backend would reach it, and the hosts of `~/.ssh/config` left to
//! probe (a note, not a cluster).

use std::path::Path;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::config::LOCAL_CLUSTER_NAME;
use super::config::{SlurmConfig, check_ssh_destination};
use crate::backend::exec::{KnownHosts, SshTarget, Transport};
use crate::backend::registry::discovery::cluster_name;
use crate::backend::registry::{Discovery, Found, Line, Look};
use crate::config::{Settings, find_program_in};

/// How long a probe or a local `squeue --version` may take: a login node that does not
/// answer in this long is written commented out, with the reason.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Hosts of `~/.ssh/config` listed at most (a comment, not a config of its own).
const MAX_SSH_HOSTS: usize = 40;

/// The kind's discovery (its `KindEntry::discover`).
pub fn discover(look: &Look) -> BoxFuture<'static, Discovery> {
    let look = look.clone();
    Box::pin(async move {
        let mut out = Discovery::default();
        match find_program_in("squeue", &look.host.path) {
            Some(squeue) => out.found.push(local(&squeue, look.ask).await),
            None => out.missing.push("Slurm's squeue not found on PATH".into()),
        }
        if look.ask {
            let probes = look.probe.hosts.iter().map(|host| probe_login(&look, host));
            out.found.extend(futures_util::future::join_all(probes).await);
        }
        if let Some(file) = &look.ssh_config {
            let hosts: Vec<String> =
                ssh_hosts(file).into_iter().filter(|h| !look.probe.hosts.contains(h)).take(MAX_SSH_HOSTS).collect();
            if !hosts.is_empty() {
                out.notes.push(format!(
                    "ssh hosts in {} not probed: {}.\n`flightdeck init --probe HOST` checks one for Slurm and writes it here.",
                    file.display(),
                    hosts.join(", ")
                ));
            }
        }
        out
    })
}

/// Slurm's commands on this machine: `squeue` found, and, when asked, its release.
async fn local(squeue: &Path, ask: bool) -> Found {
    let (why, active) = if ask {
        match run_version(&Transport::local(), &squeue.display().to_string()).await {
            Ok(release) => (format!("Slurm {release} on this machine"), true),
            Err(e) => (format!("squeue is on PATH but did not answer: {e}"), false),
        }
    } else {
        (format!("Slurm's squeue at {}", squeue.display()), true)
    };
    Found {
        names: vec![LOCAL_CLUSTER_NAME.to_string()],
        why,
        active,
        settings: Settings::new(SlurmConfig::default()),
        section: vec![Line::Comment("host = \"login.example.org\"   # omitted: this machine".into())],
    }
}

/// `squeue --version` on a login node over ssh, the way the Slurm backend would reach it
/// (host keys checked strictly).
async fn probe_login(look: &Look, host: &str) -> Found {
    let probe = &look.probe;
    let target = SshTarget {
        host: host.to_string(),
        user: probe.user.clone(),
        port: probe.port,
        identity_file: probe.identity_file.clone(),
        known_hosts: KnownHosts::Strict,
        known_hosts_file: probe.known_hosts_file.clone(),
        connect_timeout: PROBE_TIMEOUT,
    };
    let release = run_version(&Transport::ssh(target), "squeue").await;
    let settings = SlurmConfig {
        host: Some(host.to_string()),
        user: probe.user.clone(),
        port: probe.port,
        identity_file: probe.identity_file.clone(),
        known_hosts_file: probe.known_hosts_file.clone(),
        ..SlurmConfig::default()
    };
    let mut section = vec![Line::text("host", host)];
    section.extend(probe.user.as_ref().map(|u| Line::text("user", u)));
    section.extend(probe.port.map(|p| Line::Key("port", toml::Value::Integer(p.into()))));
    section.extend(probe.identity_file.as_ref().map(|i| Line::text("identity_file", i.display().to_string())));
    section.extend(probe.known_hosts_file.as_ref().map(|k| Line::text("known_hosts_file", k.display().to_string())));
    // `alice@login1.hpc.example.org` → `login1`.
    let short = host.rsplit('@').next().unwrap_or(host).split('.').next().unwrap_or(host);
    Found {
        names: cluster_name(short).into_iter().collect(),
        why: match &release {
            Ok(r) => format!("Slurm {r} on {host} (probed over ssh)"),
            Err(e) => format!("{host} did not answer as a Slurm login node: {e}"),
        },
        active: release.is_ok(),
        settings: Settings::new(settings),
        section,
    }
}

async fn run_version(transport: &Transport, squeue: &str) -> Result<String, String> {
    let argv = vec![squeue.to_string(), "--version".to_string()];
    let out = transport.output(&argv, None, PROBE_TIMEOUT).await.map_err(|e| e.to_string())?;
    let out = out.into_result(&argv).map_err(|e| e.to_string())?;
    release_of(&String::from_utf8_lossy(&out.stdout))
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
            if !pattern && check_ssh_destination(host).is_ok() && !out.iter().any(|h| h == host) {
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

    fn look(path: &Path, ask: bool) -> Look {
        let mut look = Look::here();
        look.host.path = path.as_os_str().to_owned();
        look.ask = ask;
        look
    }

    #[tokio::test]
    async fn squeue_on_path_is_this_machine_and_its_release_is_asked_only_by_init() {
        let empty = tempfile::tempdir().unwrap();
        let none = discover(&look(empty.path(), true)).await;
        assert!(none.found.is_empty());
        assert_eq!(none.missing, ["Slurm's squeue not found on PATH"]);

        let bin = tempfile::tempdir().unwrap();
        let squeue = bin.path().join("squeue");
        std::fs::write(&squeue, "#!/bin/sh\necho 'slurm 24.11.5'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&squeue, std::fs::Permissions::from_mode(0o755)).unwrap();
        let quick = discover(&look(bin.path(), false)).await;
        assert_eq!(quick.found.len(), 1);
        assert_eq!(quick.found[0].why, format!("Slurm's squeue at {}", squeue.display()));
        assert!(quick.found[0].active);
        assert_eq!(quick.found[0].settings.get::<SlurmConfig>(), Some(&SlurmConfig::default()));
        assert_eq!(quick.found[0].names, [LOCAL_CLUSTER_NAME]);
        let asked = discover(&look(bin.path(), true)).await;
        assert_eq!(asked.found[0].why, "Slurm 24.11.5 on this machine");
        assert!(asked.found[0].active);
    }
}
