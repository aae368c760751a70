//! The config file, job specs and their sbatch rendering, through the public API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flightdeck::backend::slurm::script::{SbatchOptions, parse_sbatch_output, render_sbatch, sbatch_argv};
use flightdeck::backend::slurm::{KnownHosts, SlurmConfig, TelemetryVia};
use flightdeck::backend::{BackendError, Registry};
use flightdeck::config::{ClusterKind, Config, ConfigError, ConfigSource};
use flightdeck::spec::{JobSpec, SpecError};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("specs")
}

fn example(name: &str) -> JobSpec {
    JobSpec::load(&examples_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn config_file_round_trip_through_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        r#"read_only = true

[[cluster]]
name = "hpc"
kind = "slurm"
host = "login.example.org"
port = 2222
known_hosts = "accept-new"
refresh_seconds = 20

[[cluster]]
name = "lab"
kind = "slurm"
"#,
    )
    .unwrap();
    let config = Config::load(Some(&path), &Registry::builtin()).unwrap();
    assert!(config.read_only);
    assert_eq!(config.source, ConfigSource::File(path.clone()));
    let hpc = config.cluster("hpc").unwrap();
    assert_eq!(hpc.kind(), ClusterKind::SLURM);
    let ssh = hpc.section::<SlurmConfig>().unwrap();
    assert_eq!(ssh.host.as_deref(), Some("login.example.org"));
    assert_eq!(ssh.port, Some(2222));
    assert_eq!(ssh.known_hosts, KnownHosts::AcceptNew);
    assert_eq!(hpc.refresh, Duration::from_secs(20));
    assert_eq!(hpc.timeout, Duration::from_secs(30));
    let lab = config.cluster("lab").unwrap();
    let lab = lab.section::<SlurmConfig>().unwrap();
    assert!(lab.is_local());
    assert_eq!(lab.known_hosts, KnownHosts::Strict);
}

#[test]
fn config_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nhostt = \"x\"\n",
            4,
            "hostt",
            "unknown key `hostt` in [[cluster]] \"hpc\"",
        ),
        ("[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n\nport = 0\n", 5, "port", "0 is not a port"),
        ("[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nrefresh_seconds = 0\n", 4, "refresh_seconds", "at least 1"),
        ("[[cluster]]\nname = \"a/b\"\nkind = \"slurm\"\n", 2, "name", "'/'"),
        ("[[cluster]]\nname = \"hpc\"\nkind = \"pbs\"\n", 3, "kind", "accepted kinds: slurm"),
        (
            "[[cluster]]\nname = \"x\"\nkind = \"slurm\"\n[[cluster]]\nname = \"x\"\nkind = \"slurm\"\n",
            5,
            "name",
            "duplicate",
        ),
        ("read_only = 1\n", 1, "read_only", "expected true or false"),
        ("[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nuser = \n", 4, "user", "TOML syntax error"),
        (
            "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nprometheus_url = \"ftp://prom\"\n",
            4,
            "prometheus_url",
            "not an http:// or https:// URL",
        ),
        (
            "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nprometheus_url = \"https://u:pw@prom\"\n",
            4,
            "prometheus_url",
            "credentials do not belong in the URL",
        ),
        (
            "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\nprometheus_token_env = \"PROM\"\n",
            4,
            "prometheus_token_env",
            "needs `prometheus_url`",
        ),
        (
            "[[cluster]]\nname = \"k\"\nkind = \"kubernetes\"\nprometheus_url = \"http://p:9090\"\nprometheus_ca_file = \"/nonexistent/ca.pem\"\n",
            5,
            "prometheus_ca_file",
            "no file at /nonexistent/ca.pem",
        ),
        (
            "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\ntelemetry_seconds = 0\n",
            4,
            "telemetry_seconds",
            "at least 1",
        ),
        ("[idle]\nbelow_percent = 0\n", 2, "below_percent", "above 0 and at most 100"),
        ("[idle]\nbelow_percent = 5\nminutes = 0\n", 3, "minutes", "at least 1"),
    ];
    for (text, line, key, words) in cases {
        std::fs::write(&path, text).unwrap();
        let err = Config::load(Some(&path), &Registry::builtin()).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{}:{line}: ", path.display())), "{shown}");
        assert!(shown.contains(&format!("`{key}`")), "{shown}");
        assert!(shown.contains(words), "{shown}");
        match err {
            ConfigError::Invalid { line: l, key: k, .. } => {
                assert_eq!(l, *line);
                assert_eq!(k.as_deref(), Some(*key));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn telemetry_keys_and_the_idle_rule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        r#"[idle]
below_percent = 10
minutes = 45

[[cluster]]
name = "hpc"
kind = "slurm"
telemetry_seconds = 60
prometheus_url = "https://prom.example.org:9090/"
prometheus_token_env = "PROM_TOKEN"

[[cluster]]
name = "lab"
kind = "slurm"
"#,
    )
    .unwrap();
    let config = Config::load(Some(&path), &Registry::builtin()).unwrap();
    assert_eq!(config.idle.below_percent, 10.0);
    assert_eq!(config.idle.window, Duration::from_secs(45 * 60));
    let hpc = config.cluster("hpc").unwrap();
    assert_eq!(hpc.telemetry_every, Duration::from_secs(60));
    let prometheus = hpc.prometheus.as_ref().unwrap();
    assert_eq!(prometheus.url, "https://prom.example.org:9090", "the trailing slash is dropped");
    assert_eq!(prometheus.token_env.as_deref(), Some("PROM_TOKEN"));
    let lab = config.cluster("lab").unwrap();
    assert_eq!((lab.telemetry_every, lab.prometheus.as_ref()), (flightdeck::config::DEFAULT_TELEMETRY, None));
    // Without `[idle]`: 5 % for 20 minutes.
    std::fs::write(&path, "").unwrap();
    let config = Config::load(Some(&path), &Registry::builtin()).unwrap();
    assert_eq!((config.idle.below_percent, config.idle.window), (5.0, Duration::from_secs(20 * 60)));
}

#[test]
fn slurm_telemetry_keys_load_and_their_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\ntelemetry_via = \"ssh\"\ntelemetry_max_nodes = 16\n\
         nvidia_smi = \"/usr/local/nvidia/bin/nvidia-smi\"\n\n[[cluster]]\nname = \"lab\"\nkind = \"slurm\"\n",
    )
    .unwrap();
    let config = Config::load(Some(&path), &Registry::builtin()).unwrap();
    let hpc = config.cluster("hpc").unwrap().section::<SlurmConfig>().unwrap();
    assert_eq!(hpc.telemetry_via, TelemetryVia::Ssh);
    assert_eq!((hpc.telemetry_max_nodes, hpc.nvidia_smi.as_str()), (16, "/usr/local/nvidia/bin/nvidia-smi"));
    let lab = config.cluster("lab").unwrap().section::<SlurmConfig>().unwrap();
    assert_eq!(
        (lab.telemetry_via, lab.telemetry_max_nodes, lab.nvidia_smi.as_str()),
        (TelemetryVia::Srun, 64, "nvidia-smi")
    );

    let cases: &[(&str, &str, &str)] = &[
        ("telemetry_via = \"pdsh\"", "telemetry_via", "expected one of: srun, ssh"),
        ("telemetry_max_nodes = 0", "telemetry_max_nodes", "use at least 1"),
        ("telemetry_max_nodes = 1.5", "telemetry_max_nodes", "telemetry_max_nodes"),
        ("nvidia_smi = \"-q\"", "nvidia_smi", "option"),
        ("nvidia_smi = \"bin/nvidia-smi\"", "nvidia_smi", "relative path"),
        ("nvidia_smi = \"nvidia-smi; reboot\"", "nvidia_smi", "whitespace"),
        ("nvidia_smi = \"$HOME/nvidia-smi\"", "nvidia_smi", "expand"),
    ];
    for (line, key, words) in cases {
        std::fs::write(&path, format!("[[cluster]]\nname = \"hpc\"\nkind = \"slurm\"\n\n{line}\n")).unwrap();
        let err = Config::load(Some(&path), &Registry::builtin()).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{}:5: ", path.display())), "{shown}");
        assert!(shown.contains(&format!("`{key}`")) && shown.contains(words), "{line}: {shown}");
        match err {
            ConfigError::Invalid { line: 5, key: Some(k), .. } => assert_eq!(k, *key),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn missing_explicit_config_is_an_error() {
    let err = Config::load(Some(Path::new("/nonexistent/flightdeck.toml")), &Registry::builtin()).unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }));
    assert_eq!(err.to_string(), "/nonexistent/flightdeck.toml: no such config file");
}

#[test]
fn every_example_spec_loads_and_renders() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        seen += 1;
        let spec = JobSpec::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let script = render_sbatch(&spec, &SbatchOptions { pyxis: true }).unwrap_or_else(|e| panic!("{e}"));
        assert!(script.starts_with("#!"), "{}", path.display());
        // The TOML written back reads as the same spec.
        let again = JobSpec::from_toml_str(&spec.to_toml().unwrap(), &path).unwrap();
        assert_eq!(again, spec, "{}", path.display());
    }
    assert!(seen >= 4, "examples/specs holds {seen} specs");
}

#[test]
fn train_example_renders_exactly() {
    let script = render_sbatch(&example("train.toml"), &SbatchOptions::default()).unwrap();
    assert_eq!(
        script,
        r#"#!/bin/bash
#SBATCH --job-name=train-llm
#SBATCH --partition=gpu
#SBATCH --account=ml-team
#SBATCH --cpus-per-task=32
#SBATCH --gres=gpu:a100:4
#SBATCH --mem=131072M
#SBATCH --time=1-12:00:00
#SBATCH --chdir=/scratch/alice/llm
export HF_HOME='/scratch/alice/hf cache'
export OMP_NUM_THREADS='8'
export WANDB_MODE='offline'
python train.py --config configs/base.yaml --epochs 3
"#
    );
    assert_eq!(sbatch_argv(&example("train.toml")), vec!["--job-name=train-llm".to_string()]);
}

#[test]
fn script_example_keeps_its_own_directives_readable() {
    let script = render_sbatch(&example("script.toml"), &SbatchOptions::default()).unwrap();
    assert_eq!(
        script,
        r#"#!/bin/bash
#SBATCH --job-name=preprocess
#SBATCH --cpus-per-task=8
#SBATCH --mem=16384M
#SBATCH --time=02:00:00
#SBATCH --mail-type=END
export PYTHONUNBUFFERED='1'
set -euo pipefail
for shard in data/raw/*.jsonl; do
  python preprocess.py "$shard" --out data/clean/
done
"#
    );
}

#[test]
fn container_example_needs_pyxis() {
    let spec = example("container.toml");
    match render_sbatch(&spec, &SbatchOptions { pyxis: false }) {
        Err(BackendError::Unsupported(message)) => assert!(message.contains("pyxis"), "{message}"),
        other => panic!("{other:?}"),
    }
    let script = render_sbatch(&spec, &SbatchOptions { pyxis: true }).unwrap();
    assert!(script.contains("\n#SBATCH --container-image=\"nvcr.io\\#nvidia/pytorch:24.01-py3\"\n"), "{script}");
}

#[test]
fn spec_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.toml");
    std::fs::write(&path, "name = \"a\"\ncommand = \"b\"\n\ntime_limit = \"forever\"\n").unwrap();
    let err = JobSpec::load(&path).unwrap_err();
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{}:4: `time_limit`: ", path.display())), "{shown}");
    assert!(matches!(err, SpecError::File { line: 4, .. }));
}

#[test]
fn sbatch_output_forms() {
    assert_eq!(parse_sbatch_output("Submitted batch job 4242\n").as_deref(), Some("4242"));
    assert_eq!(parse_sbatch_output("4242;hpc\n").as_deref(), Some("4242"));
    assert_eq!(parse_sbatch_output("4242\n").as_deref(), Some("4242"));
    assert_eq!(parse_sbatch_output("sbatch: error: Batch job submission failed\n"), None);
}

// One text per unit in the spec (`spec::memory_text`, `spec::duration_text`), whatever kind
// read the value: every amount reads back as itself.
mod unit_texts {
    use flightdeck::spec::{duration_text, memory_text, parse_memory_mb, parse_time_limit_secs};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn memory_and_time_limit_texts_read_back_as_themselves(
            mib in prop_oneof![1u64..=1 << 24, (1u64..=1 << 30).prop_map(|g| g * 1024), 1u64..=u64::MAX],
            secs in prop_oneof![1u64..=1 << 24, (1u64..=1 << 24).prop_map(|m| m * 60), 1u64..=u64::MAX],
        ) {
            let memory = memory_text(mib);
            prop_assert_eq!(parse_memory_mb(&memory), Ok(mib), "{}", memory);
            let limit = duration_text(secs);
            prop_assert_eq!(parse_time_limit_secs(&limit), Ok(secs), "{}", limit);
        }
    }
}
