//! `flightdeck init --probe` against a Slurm login node of the real test bed, over the real
//! sshd: the release is probed, the written cluster reads back and refreshes. The rest of
//! `init` needs no test bed (`offline::init`).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use flightdeck::backend::Backend;
use flightdeck::backend::Registry;
use flightdeck::backend::slurm::{SlurmBackend, SlurmConfig};
use flightdeck::config::{ClusterConfig, Config};
use flightdeck::model::ClusterKind;

/// A home of its own with an empty ssh config: no client file of the machine running the
/// test leaks into what init writes.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/config"), "").unwrap();
    home
}

fn init(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .arg("init")
        .args(args)
        .args(["--ssh-config", home.join(".ssh/config").to_str().unwrap()])
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .env_remove("FLIGHTDECK_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("flightdeck init runs")
}

fn text(out: &Output) -> String {
    assert!(out.status.success(), "init failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn read_back(text: &str) -> Config {
    Config::from_toml_str(text, Path::new("init output"), &Registry::builtin())
        .unwrap_or_else(|e| panic!("the written config does not read back: {e}\n{text}"))
}

#[test]
fn a_probed_login_node_of_the_test_bed_is_written_and_works() {
    let bed: ClusterConfig<SlurmConfig> = common::slurm_config("fd22");
    let _read = common::cluster_read("fd22");
    let s = &bed.settings;
    let home = home();
    let port = s.port.unwrap().to_string();
    let mut args = vec!["--print", "--probe", s.host.as_deref().unwrap(), "--port", &port];
    let key = s.identity_file.as_ref().unwrap().display().to_string();
    let known = s.known_hosts_file.as_ref().unwrap().display().to_string();
    args.extend(["--identity-file", &key, "--known-hosts-file", &known]);
    if let Some(u) = &s.user {
        args.extend(["--user", u]);
    }
    // And a login node that is not there: written commented out, with the reason.
    args.extend(["--probe", "nobody.invalid"]);
    let out = text(&init(home.path(), &args));
    let probed = format!("# Slurm 22.05.8 on {} (probed over ssh)", s.host.as_deref().unwrap());
    assert!(out.contains(&probed), "the release, probed:\n{out}");
    assert!(out.contains("# nobody.invalid did not answer as a Slurm login node:"), "{out}");
    let config = read_back(&out);
    let written = config
        .clusters
        .iter()
        .find(|c| c.kind() == ClusterKind::SLURM && c.name != "local")
        .expect("the probed cluster is active");
    let typed: ClusterConfig<SlurmConfig> = written.clone().typed().unwrap();
    assert_eq!((typed.settings.host.as_deref(), typed.settings.port), (s.host.as_deref(), s.port));
    // What init wrote reaches the cluster: one refresh through it.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let snap = rt.block_on(SlurmBackend::new(&typed).snapshot()).expect("the written cluster refreshes");
    assert!(snap.nodes.iter().any(|n| n.name == "h100-01"), "fd22's nodes: {:?}", snap.nodes.len());
}
