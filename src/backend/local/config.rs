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
//! here (NVML's library opens, or `nvidia-smi` is on `PATH`), named after the machine
//! (`discover.rs`).

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::host::Host;
use super::{nvml, smi};
use crate::config::{ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

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
}

/// The config module's view of the kind (its line in the backend registry).
pub fn kind_config() -> KindConfig {
    KindConfig { kind: KIND, keys: LocalConfig::KEYS, parse: |section| LocalConfig::parse(section).map(Settings::new) }
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
}
