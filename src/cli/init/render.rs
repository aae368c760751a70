//! Findings as a commented config file that reads back as it says.

use std::fmt::Write;

use super::discover::Finding;
use crate::config::check_cluster_name;

/// The file: a header saying where it came from and how to go on, then one `[[cluster]]`
/// per finding (commented out where it did not answer or is not the current one), then
/// what was looked for and missing.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    out.push_str(
        "# flightdeck config, written by `flightdeck init`.\n\
         # Each [[cluster]] below is something this machine found; the ones that did not answer\n\
         # (or are not your current choice) are commented out with the reason. Uncomment, edit,\n\
         # then `flightdeck doctor` checks every cluster. Every key: README.md, \"Configuration\".\n\
         \n\
         read_only = false\n\
         \n\
         # A job whose GPUs stay under below_percent for `minutes` is flagged idle.\n\
         [idle]\n\
         below_percent = 5\n\
         minutes = 20\n",
    );
    let mut names: Vec<String> = Vec::new();
    for f in findings.iter().filter(|f| f.is_cluster()) {
        out.push('\n');
        let (why, lines) = cluster_lines(f);
        let name = unique_name(&mut names, base_name(f));
        let active = f.is_active();
        let _ = writeln!(out, "# {}", comment(&why));
        let prefix = if active { "" } else { "# " };
        let _ = writeln!(out, "{prefix}[[cluster]]");
        let _ = writeln!(out, "{prefix}name = {}", quote(&name));
        for line in lines {
            let _ = writeln!(out, "{prefix}{line}");
        }
    }
    let missing: Vec<&str> = findings
        .iter()
        .filter_map(|f| match f {
            Finding::Missing(what) => Some(what.as_str()),
            _ => None,
        })
        .collect();
    for f in findings {
        if let Finding::SshHosts { file, hosts } = f {
            let _ = write!(
                out,
                "\n# ssh hosts in {} not probed: {}.\n# `flightdeck init --probe HOST` checks one for Slurm and writes it here.\n",
                comment(&file.display().to_string()),
                comment(&hosts.join(", "))
            );
        }
    }
    if !missing.is_empty() {
        out.push_str("\n# Looked for and not found:\n");
        for m in missing {
            let _ = writeln!(out, "#   {}", comment(m));
        }
    }
    out
}

/// Why the cluster is written as it is, and its keys after `name`.
fn cluster_lines(f: &Finding) -> (String, Vec<String>) {
    match f {
        Finding::LocalSlurm { release } => (
            match release {
                Ok(r) => format!("Slurm {r} on this machine"),
                Err(e) => format!("squeue is on PATH but did not answer: {e}"),
            },
            vec!["kind = \"slurm\"".into(), "# host = \"login.example.org\"   # omitted: this machine".into()],
        ),
        Finding::SlurmLogin { host, user, port, identity_file, known_hosts_file, release } => {
            let why = match release {
                Ok(r) => format!("Slurm {r} on {host} (probed over ssh)"),
                Err(e) => format!("{host} did not answer as a Slurm login node: {e}"),
            };
            let mut lines = vec!["kind = \"slurm\"".into(), format!("host = {}", quote(host))];
            if let Some(u) = user {
                lines.push(format!("user = {}", quote(u)));
            }
            if let Some(p) = port {
                lines.push(format!("port = {p}"));
            }
            if let Some(i) = identity_file {
                lines.push(format!("identity_file = {}", quote(&i.display().to_string())));
            }
            if let Some(k) = known_hosts_file {
                lines.push(format!("known_hosts_file = {}", quote(&k.display().to_string())));
            }
            (why, lines)
        }
        Finding::Kube { context, current } => (
            if *current {
                format!("kubeconfig context {context} (the current one)")
            } else {
                format!("kubeconfig context {context} (not the current one)")
            },
            vec!["kind = \"kubernetes\"".into(), format!("context = {}", quote(context))],
        ),
        Finding::Dstack { url, project, default } => (
            format!(
                "dstack project {project} at {url}{}; the token is in ~/.dstack/config.yml: export it as DSTACK_TOKEN",
                if *default { " (the CLI's default)" } else { "" }
            ),
            vec![
                "kind = \"dstack\"".into(),
                format!("url = {}", quote(url)),
                format!("project = {}", quote(project)),
                "token_env = \"DSTACK_TOKEN\"".into(),
            ],
        ),
        Finding::SkyPilot { url, .. } => (
            format!("SkyPilot API server at {url}"),
            vec!["kind = \"skypilot\"".into(), format!("url = {}", quote(url))],
        ),
        Finding::SshHosts { .. } | Finding::Missing(_) => (String::new(), Vec::new()),
    }
}

fn base_name(f: &Finding) -> String {
    let raw = match f {
        Finding::LocalSlurm { .. } => crate::backend::slurm::config::LOCAL_CLUSTER_NAME.to_string(),
        Finding::SlurmLogin { host, .. } => {
            host.rsplit('@').next().unwrap_or(host).split('.').next().unwrap_or(host).into()
        }
        Finding::Kube { context, .. } => context.clone(),
        Finding::Dstack { project, .. } => format!("dstack-{project}"),
        Finding::SkyPilot { .. } => "sky".into(),
        Finding::SshHosts { .. } | Finding::Missing(_) => "cluster".into(),
    };
    let name: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' }).collect();
    let name = name.trim_start_matches(['-', '.']).to_string();
    if check_cluster_name(&name).is_ok() { name } else { "cluster".into() }
}

/// `name`, or `name-2`, `name-3` … when an earlier cluster took it.
fn unique_name(taken: &mut Vec<String>, base: String) -> String {
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    taken.push(name.clone());
    name
}

/// A TOML string: whatever a context or host is called, it stays one value, and its C1 or
/// bidi controls are escapes, not raw text for the terminal (`--print`) or an editor.
fn quote(text: &str) -> String {
    crate::tomlfile::printable::document(&toml::Value::String(text.to_string()).to_string())
}

/// Text that stays inside its `#` comment: no line breaks, other controls or bidi controls.
fn comment(text: &str) -> String {
    text.chars().map(|c| if crate::safe_text::is_unsafe(c) { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_and_comments_hold_no_raw_c1_or_bidi_control() {
        let hostile = "ctx\u{9b}2J\u{202E}x\u{1b}]0;t\u{7}";
        let quoted = quote(hostile);
        assert!(!quoted.chars().any(crate::safe_text::is_unsafe), "{quoted:?}");
        let back: toml::Table = toml::from_str(&format!("v = {quoted}")).unwrap();
        assert_eq!(back["v"].as_str(), Some(hostile));
        assert_eq!(comment(hostile), "ctx 2J x ]0;t ");
    }

    #[test]
    fn names_are_unique_and_usable() {
        let mut taken = Vec::new();
        assert_eq!(unique_name(&mut taken, "a".into()), "a");
        assert_eq!(unique_name(&mut taken, "a".into()), "a-2");
        assert_eq!(unique_name(&mut taken, "a".into()), "a-3");
        let f = Finding::Kube { context: "arn:aws:eks:us-east-1:1:cluster/prod".into(), current: true };
        assert!(check_cluster_name(&base_name(&f)).is_ok(), "{}", base_name(&f));
        let f = Finding::SlurmLogin {
            host: "alice@login1.hpc.example.org".into(),
            user: None,
            port: None,
            identity_file: None,
            known_hosts_file: None,
            release: Ok("24.11.5".into()),
        };
        assert_eq!(base_name(&f), "login1");
    }

    #[test]
    fn comments_cannot_break_out_of_their_line() {
        assert_eq!(comment("a\nkind = \"x\"\r"), "a kind = \"x\" ");
    }
}
