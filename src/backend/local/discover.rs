//! Whether this machine's GPUs are a cluster: NVML's library opens, or `nvidia-smi` is on
//! `PATH` (the embedded default's rule, and what `init` writes), named after the machine.

use futures_util::future::BoxFuture;

use super::config::{FALLBACK_NAME, LocalConfig, NVIDIA_SMI, gpu_sources};
use super::host::Host;
use super::smi;
use crate::backend::registry::discovery::cluster_name;
use crate::backend::registry::{Discovery, Found, Line, Look};
use crate::config::Settings;

/// The kind's discovery (its `KindEntry::discover`): the loader and `PATH` are asked,
/// nothing is started.
pub fn discover(look: &Look) -> BoxFuture<'static, Discovery> {
    let host = look.host.clone();
    Box::pin(async move { on(&host) })
}

/// This machine's cluster on `host`, when it has a GPU source; what was looked for either way.
pub fn on(host: &Host) -> Discovery {
    let sources = gpu_sources(host, NVIDIA_SMI);
    let library = host.nvml_library.to_string_lossy();
    let mut seen = Vec::new();
    let mut missing = Vec::new();
    match &sources.nvml {
        Ok(()) => seen.push(format!("NVML ({library}) loadable")),
        Err(why) => missing.push(why.to_string()),
    }
    match &sources.nvidia_smi {
        Some(path) => seen.push(format!("nvidia-smi at {}", path.display())),
        None => missing.push(smi::not_found(NVIDIA_SMI)),
    }
    let mut out = Discovery { missing, ..Discovery::default() };
    if !seen.is_empty() {
        out.found.push(Found {
            // Its host name; `this-machine` where that is not usable or another kind (the
            // local Slurm's `local`) has it.
            names: cluster_name(&host.hostname).into_iter().chain([FALLBACK_NAME.to_string()]).collect(),
            why: format!("this machine's GPUs: {}", seen.join("; ")),
            active: true,
            settings: Settings::new(LocalConfig::default()),
            section: vec![Line::Comment("gpu_source = \"auto\"   # NVML, else nvidia-smi".into())],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(path: &std::path::Path, hostname: &str) -> Host {
        Host {
            path: path.as_os_str().to_owned(),
            nvml_library: "/nonexistent/libnvidia-ml.so.1".into(),
            proc_root: "/proc".into(),
            hostname: hostname.into(),
        }
    }

    #[test]
    fn a_gpu_box_is_found_and_named_after_itself() {
        let bin = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        let none = on(&host(empty.path(), "gpu-07"));
        assert!(none.found.is_empty(), "no GPU source, no cluster");
        assert!(
            none.missing[0].starts_with("NVML (/nonexistent/libnvidia-ml.so.1) not loadable: "),
            "{:?}",
            none.missing
        );
        assert_eq!(none.missing[1], smi::not_found(NVIDIA_SMI));
        let exe = bin.path().join("nvidia-smi");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = on(&host(bin.path(), "gpu-07"));
        assert_eq!(found.found.len(), 1);
        let f = &found.found[0];
        assert_eq!(f.names, ["gpu-07", FALLBACK_NAME]);
        assert_eq!(f.why, format!("this machine's GPUs: nvidia-smi at {}", exe.display()));
        assert_eq!(f.settings.get::<LocalConfig>(), Some(&LocalConfig::default()));
        assert_eq!(on(&host(bin.path(), "--")).found[0].names, [FALLBACK_NAME]);
        assert_eq!(on(&host(bin.path(), "gpu box#1")).found[0].names[0], "gpu-box-1");
    }
}
