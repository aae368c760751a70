//! This machine's section of `[[cluster]]`: its GPUs as one cluster.
//!
//! ```toml
//! [[cluster]]
//! name = "gpubox"
//! kind = "local"
//! gpu_source = "auto"          # auto (default): NVML, else nvidia-smi | nvml | nvidia-smi
//! nvidia_smi = "nvidia-smi"    # the program: a name found on PATH (default) or an absolute path
//! ```
//!
//! With no config file, the embedded default adds this machine when a GPU source is found
//! here (NVML's library opens, or `nvidia-smi` is on `PATH`), named after the machine.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::host::Host;
use super::{nvml, smi};
use crate::config::{
    ClusterConfig, ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings, check_cluster_name,
    find_program_in,
};

/// The kind's name in config files.
pub const KIND: ClusterKind = ClusterKind::from_static("local");

/// The embedded default's name for this machine when its host name will not do (not a
/// usable cluster name once cleaned, or already taken, by the local Slurm's `local` say).
pub const FALLBACK_NAME: &str = "this-machine";

/// The program name `nvidia_smi` defaults to.
pub const NVIDIA_SMI: &str = "nvidia-smi";

/// How this machine's GPUs are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalConfig {
    pub gpu_source: GpuSource,
    /// A program name (looked up on `PATH` at each reading) or an absolute path, checked.
    pub nvidia_smi: String,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self { gpu_source: GpuSource::Auto, nvidia_smi: NVIDIA_SMI.to_string() }
    }
}

impl KindSettings for LocalConfig {
    const KIND: ClusterKind = KIND;
}

/// Where GPU figures come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum GpuSource {
    /// NVML when its library opens, else `nvidia-smi` when it is there, else none (a
    /// machine without GPUs is no error).
    #[default]
    Auto,
    /// NVML only: its absence is the cluster's error.
    Nvml,
    /// `nvidia-smi` only: its absence is the cluster's error.
    NvidiaSmi,
}

impl GpuSource {
    /// Every value the config file accepts, as written there.
    pub const ACCEPTED: &'static [&'static str] = &["auto", "nvml", "nvidia-smi"];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuSource::Auto => "auto",
            GpuSource::Nvml => "nvml",
            GpuSource::NvidiaSmi => "nvidia-smi",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(GpuSource::Auto),
            "nvml" => Some(GpuSource::Nvml),
            "nvidia-smi" => Some(GpuSource::NvidiaSmi),
            _ => None,
        }
    }
}

impl LocalConfig {
    /// The keys of the section, as written in the file.
    pub const KEYS: &'static [&'static str] = &["gpu_source", "nvidia_smi"];

    /// Read and check the section.
    pub fn parse(section: &ClusterSection<'_>) -> Result<LocalConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let mut out = LocalConfig::default();
        if let Some(value) = &raw.gpu_source {
            let text = value.get_ref();
            out.gpu_source = GpuSource::parse(text).ok_or_else(|| {
                section.bad_value(
                    "gpu_source",
                    value,
                    format!("{text:?} (expected one of: {})", GpuSource::ACCEPTED.join(", ")),
                )
            })?;
        }
        if let Some(value) = &raw.nvidia_smi {
            out.nvidia_smi =
                check_program(value.get_ref()).map_err(|why| section.bad_value("nvidia_smi", value, why))?;
        }
        Ok(out)
    }

    /// The embedded default: this machine, when it has a GPU source.
    pub fn default_clusters(taken: &[ClusterConfig]) -> Vec<ClusterConfig> {
        default_clusters_on(&Host::this_machine(), taken)
    }
}

/// The config module's view of the kind (its line in the backend registry).
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: KIND,
        keys: LocalConfig::KEYS,
        parse: |section| LocalConfig::parse(section).map(Settings::new),
        defaults: LocalConfig::default_clusters,
    }
}

/// The embedded default on `host`: one cluster for it when NVML's library opens there or
/// `nvidia-smi` is on its `PATH`, named by [`default_name`].
pub fn default_clusters_on(host: &Host, taken: &[ClusterConfig]) -> Vec<ClusterConfig> {
    let found = gpu_sources(host, NVIDIA_SMI);
    if found.nvml.is_err() && found.nvidia_smi.is_none() {
        return Vec::new();
    }
    vec![ClusterConfig::new(default_name(&host.hostname, taken), LocalConfig::default()).erase()]
}

/// This machine's cluster name: its host name made a usable cluster name (other characters
/// become `-`), else [`FALLBACK_NAME`] when that is not usable or `taken` has it.
pub fn default_name(hostname: &str, taken: &[ClusterConfig]) -> String {
    let cleaned: String = hostname
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' })
        .collect();
    let cleaned = cleaned.trim_start_matches(['-', '.']).to_string();
    let usable = !cleaned.is_empty() && check_cluster_name(&cleaned).is_ok();
    if usable && !taken.iter().any(|c| c.name == cleaned) { cleaned } else { FALLBACK_NAME.to_string() }
}

/// The GPU sources `host` offers: whether NVML's library opens (without starting NVML), and
/// where `nvidia_smi` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    pub nvml: Result<(), nvml::Unavailable>,
    pub nvidia_smi: Option<PathBuf>,
}

pub fn gpu_sources(host: &Host, nvidia_smi: &str) -> Sources {
    Sources { nvml: nvml::probe(&host.nvml_library), nvidia_smi: smi::locate(nvidia_smi, &host.path) }
}

/// What was looked for on `host` for this kind, one item per source: the GPU sources and
/// local Slurm's `squeue` (the registry's `looked_for_items` adds the other kinds' own).
pub fn looked_for_items(host: &Host) -> Vec<String> {
    let found = gpu_sources(host, NVIDIA_SMI);
    let library = host.nvml_library.to_string_lossy();
    vec![
        match &found.nvml {
            Ok(()) => format!("NVML ({library}) loadable"),
            Err(why) => why.to_string(),
        },
        match &found.nvidia_smi {
            Some(path) => format!("nvidia-smi at {}", path.display()),
            None => smi::not_found(NVIDIA_SMI),
        },
        match find_program_in("squeue", &host.path) {
            Some(path) => format!("Slurm's squeue at {}", path.display()),
            None => "Slurm's squeue not found on PATH".to_string(),
        },
    ]
}

/// `nvidia_smi`: run without a shell, so only what `execve` would misread is refused: an
/// empty value, control characters, a leading `-`, a relative path (a name is looked up on
/// `PATH`; `~/` is expanded).
fn check_program(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err("the value is empty".into());
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(format!("{value:?} contains a control character ({c:?})"));
    }
    if value.starts_with('-') {
        return Err(format!("{value:?} starts with '-'; use a program name or an absolute path"));
    }
    let expanded = if value.starts_with("~/") {
        crate::config::expand_tilde(value).to_string_lossy().into_owned()
    } else {
        value.to_string()
    };
    if expanded.contains('/') && !expanded.starts_with('/') {
        return Err(format!("{value:?} is a relative path (use a program name or an absolute path)"));
    }
    Ok(expanded)
}

/// The section as written (shared keys are read by the config module).
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    gpu_source: Option<Spanned<String>>,
    #[serde(default)]
    nvidia_smi: Option<Spanned<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::registry::testing::{FILE, parse, refused_naming_key as refused};

    /// Another kind's section, made up here: a kind's tests name no other kind's folder.
    #[derive(Debug, Clone, PartialEq)]
    struct OtherKind;

    impl crate::config::KindSettings for OtherKind {
        const KIND: crate::config::ClusterKind = crate::config::ClusterKind::from_static("slurm");
    }

    const BASE: &str = "[[cluster]]\nname = \"box\"\nkind = \"local\"\n";

    fn local(text: &str) -> LocalConfig {
        parse(text).unwrap().clusters[0].section::<LocalConfig>().expect("a local cluster").clone()
    }

    #[test]
    fn keys_are_read_and_defaulted() {
        assert_eq!(local(BASE), LocalConfig::default());
        for (text, want) in [("auto", GpuSource::Auto), ("nvml", GpuSource::Nvml), ("nvidia-smi", GpuSource::NvidiaSmi)]
        {
            assert_eq!(local(&format!("{BASE}gpu_source = {text:?}\n")).gpu_source, want);
            assert_eq!(want.as_str(), text);
        }
        let c = local(&format!("{BASE}nvidia_smi = \"/opt/nvidia/bin/nvidia-smi\"\n"));
        assert_eq!(c.nvidia_smi, "/opt/nvidia/bin/nvidia-smi");
        assert_eq!(local(&format!("{BASE}nvidia_smi = \"nvidia-smi-550\"\n")).nvidia_smi, "nvidia-smi-550");
        assert!(local(&format!("{BASE}nvidia_smi = \"~/bin/nvidia-smi\"\n")).nvidia_smi.ends_with("/bin/nvidia-smi"));
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        let shown = refused(&format!("{BASE}gpu_source = \"cuda\"\n"), 4, "gpu_source");
        assert_eq!(
            shown,
            format!(
                "{FILE}:4: bad value for `gpu_source` in [[cluster]] \"box\": \"cuda\" (expected one of: auto, nvml, nvidia-smi)"
            )
        );
        let shown = refused(&format!("{BASE}\ngpu_source = 1\n"), 5, "gpu_source");
        assert!(shown.contains("expected a string"), "{shown}");
        for (value, why) in [
            ("", "empty"),
            ("bin/nvidia-smi", "relative path"),
            ("-x", "starts with '-'"),
            ("nvidia\\u0007smi", "control character"),
        ] {
            let shown = refused(&format!("{BASE}nvidia_smi = \"{value}\"\n"), 4, "nvidia_smi");
            assert!(shown.contains(why), "{value}: {shown}");
        }
        let shown = refused(&format!("{BASE}host = \"login\"\n"), 4, "host");
        assert!(shown.contains("`host` does not apply to a local cluster"), "{shown}");
        assert!(
            shown.contains("keys for kind = \"local\": name, kind, gpu_source, nvidia_smi, refresh_seconds"),
            "{shown}"
        );
    }

    fn host(path: &std::path::Path, hostname: &str) -> Host {
        Host {
            path: path.as_os_str().to_owned(),
            nvml_library: "/nonexistent/libnvidia-ml.so.1".into(),
            proc_root: "/proc".into(),
            hostname: hostname.into(),
        }
    }

    #[test]
    fn the_embedded_default_names_a_gpu_box_after_itself() {
        let bin = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        assert!(default_clusters_on(&host(empty.path(), "gpu-07"), &[]).is_empty(), "no GPU source, no cluster");
        let exe = bin.path().join("nvidia-smi");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = default_clusters_on(&host(bin.path(), "gpu-07"), &[]);
        assert_eq!(found, vec![ClusterConfig::new("gpu-07", LocalConfig::default()).erase()]);
        let slurm_local = ClusterConfig::new("local", OtherKind).erase();
        let found = default_clusters_on(&host(bin.path(), "local"), std::slice::from_ref(&slurm_local));
        assert_eq!(found[0].name, FALLBACK_NAME, "the local Slurm has the name");
        assert_eq!(default_name("gpu box#1", &[]), "gpu-box-1");
        assert_eq!(default_name("--", &[]), FALLBACK_NAME);
        assert_eq!(default_name("..", &[]), FALLBACK_NAME);
    }
}
