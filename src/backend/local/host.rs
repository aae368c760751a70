//! What the local kind reads of the machine it runs on, gathered in one value so tests
//! (and embedders) can hand it another machine: a `PATH` of stand-in programs, an NVML
//! library that is not there, a `/proc` of their own, a host name.

use std::ffi::OsString;
use std::path::PathBuf;

use super::nvml;

/// The machine the local kind watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// `PATH`-style list of directories where `nvidia-smi` (and Slurm's `squeue`) are looked for.
    pub path: OsString,
    /// The NVML library asked of the dynamic loader ([`nvml::LIBRARY`]).
    pub nvml_library: OsString,
    /// Where `/proc` is: processes' users, command lines and start times, the machine's memory.
    pub proc_root: PathBuf,
    /// The machine's short host name: the one node's name.
    pub hostname: String,
}

impl Host {
    /// This machine, as the process sees it now.
    pub fn this_machine() -> Host {
        Host {
            path: std::env::var_os("PATH").unwrap_or_default(),
            nvml_library: OsString::from(nvml::LIBRARY),
            proc_root: PathBuf::from("/proc"),
            hostname: short_hostname(),
        }
    }
}

/// The host name up to its first dot (`gpu-07.example.org` → `gpu-07`), as Slurm and
/// `hostname -s` name a machine; `localhost` when it has none.
pub fn short_hostname() -> String {
    let full = whoami::hostname()
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_default();
    short(&full)
}

fn short(full: &str) -> String {
    let name = full.trim().split('.').next().unwrap_or_default();
    if name.is_empty() { "localhost".to_string() } else { name.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_name_is_up_to_the_first_dot() {
        assert_eq!(short("gpu-07.example.org\n"), "gpu-07");
        assert_eq!(short("box"), "box");
        assert_eq!(short(""), "localhost");
        assert_eq!(short(".weird"), "localhost");
        assert!(!Host::this_machine().hostname.is_empty());
    }
}
