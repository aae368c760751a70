//! `flightdeck init`: the binary run in a home of its own (kubeconfig, dstack and SkyPilot
//! client files, an ssh config), its output read back as a config. A login node of the real
//! test bed probed over sshd is in the `bed` binary (`init_probe`).

use std::path::Path;
use std::process::{Command, Output};

use flightdeck::backend::Registry;
use flightdeck::config::Config;
use flightdeck::model::ClusterKind;

const KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
current-context: "prod"
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: prod
  context: {cluster: c, user: u}
- name: "lab\"]\n[[cluster]]"
  context: {cluster: c, user: u}
- name: "arn:aws:eks:us-east-1:1:cluster/ml"
  context: {cluster: c, user: u}
"#;

const DSTACK: &str = "projects:\n- name: main\n  url: http://127.0.0.1:3999\n  token: secret-token\n  default: true\n- name: research\n  url: http://127.0.0.1:3998\n  token: other\n";

const SKY: &str = "api_server:\n  endpoint: http://127.0.0.1:46999\n";

/// A home with every client file, and an ssh config with two concrete hosts and a pattern.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = home.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(".kube/config", KUBECONFIG);
    write(".dstack/config.yml", DSTACK);
    write(".sky/config.yaml", SKY);
    write(".ssh/config", "Host *\n  ServerAliveInterval 30\nHost login1 dgx-login\n  User alice\nHost *.corp\n");
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
fn what_this_machine_has_becomes_a_config_that_reads_back() {
    let home = home();
    let out = text(&init(home.path(), &["--print"]));
    let config = read_back(&out);
    let active: Vec<(&str, ClusterKind)> = config.clusters.iter().map(|c| (c.name.as_str(), c.kind())).collect();
    let mut want = Vec::new();
    if flightdeck::config::find_program("squeue").is_some() {
        want.push(("local", ClusterKind::SLURM));
    }
    // In the registry's order, as the embedded default has them.
    want.extend([
        ("prod", ClusterKind::KUBERNETES),
        ("sky", ClusterKind::from_static("skypilot")),
        ("dstack-main", flightdeck::backend::dstack::config::KIND),
    ]);
    let here = flightdeck::backend::local::Host::this_machine();
    let gpus = flightdeck::backend::local::nvml::probe(&here.nvml_library).is_ok()
        || flightdeck::backend::local::smi::locate("nvidia-smi", &here.path).is_some();
    let local_name;
    if gpus {
        local_name = flightdeck::backend::registry::discovery::cluster_name(&here.hostname)
            .filter(|n| n != "local")
            .unwrap_or_else(|| flightdeck::backend::local::config::FALLBACK_NAME.into());
        want.push((&local_name, flightdeck::backend::local::config::KIND));
    }
    assert_eq!(active, want, "{out}");
    // The other contexts and projects are there to uncomment; a name that would break the
    // file is said, not written.
    assert!(out.contains("# context = \"arn:aws:eks:us-east-1:1:cluster/ml\""), "{out}");
    assert!(out.contains("# project = \"research\""), "{out}");
    assert!(out.contains("left out: its name is empty or holds control characters"), "{out}");
    // The dstack token stays in the CLI's file: the config names an environment variable.
    assert!(!out.contains("secret-token") && out.contains("token_env = \"DSTACK_TOKEN\""), "{out}");
    assert!(out.contains("ssh hosts in") && out.contains("not probed: login1, dgx-login."), "{out}");
    assert!(!out.contains("*.corp"), "patterns are no hosts:\n{out}");
    assert_eq!(config.idle.below_percent, 5.0);
}

#[test]
fn an_empty_home_says_what_was_looked_for() {
    let home = tempfile::tempdir().unwrap();
    let out = text(&init(home.path(), &["--print"]));
    read_back(&out);
    assert!(out.contains("Looked for and not found:"), "{out}");
    for what in ["Kubernetes (no kubeconfig", "dstack (no projects in", "SkyPilot (no api_server in"] {
        assert!(out.contains(what), "{what}:\n{out}");
    }
}

#[test]
fn an_existing_config_is_kept_unless_forced_and_then_backed_up() {
    let home = home();
    let path = home.path().join("cfg/config.toml");
    let p = path.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", p, "init"])
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    read_back(&std::fs::read_to_string(&path).unwrap());

    std::fs::write(&path, "# mine\nread_only = true\n").unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", p, "init"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\nread_only = true\n", "never lost");

    let forced = Command::new(env!("CARGO_BIN_EXE_flightdeck"))
        .args(["--config", p, "init", "--force"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    assert_eq!(std::fs::read_to_string(path.with_file_name("config.toml.bak")).unwrap(), "# mine\nread_only = true\n");
    assert!(std::fs::read_to_string(&path).unwrap().contains("written by `flightdeck init`"));
}

#[test]
fn a_hostile_probe_host_is_refused_by_name() {
    let home = home();
    let out = init(home.path(), &["--print", "--probe=-oProxyCommand=touch"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--probe") && err.contains("option"), "{err}");
}
