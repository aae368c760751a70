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
            hostname: crate::system::host::short_hostname(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_name() {
        assert!(!Host::this_machine().hostname.is_empty());
    }
}
