//! `nvidia-smi` on this machine, when NVML cannot be loaded (or `gpu_source = "nvidia-smi"`):
//! the two queries of the shared reader (`backend::telemetry::nvidia_smi`), each an argument
//! vector run without a shell, bounded by the cluster's timeout and in its output.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::BackendError;
use crate::backend::exec::{CmdOutput, Transport, display_argv};
use crate::backend::telemetry::nvidia_smi;
use crate::config::find_program_in;
use crate::model::GpuSample;

/// `nvidia-smi`'s exit status when it finds no GPU ("No devices were found").
const NO_DEVICES: i32 = 6;

/// Where `program` is: an absolute path as written (if a file is there), else the first
/// executable of that name on `path_var`.
pub fn locate(program: &str, path_var: &OsStr) -> Option<PathBuf> {
    if program.starts_with('/') {
        let path = Path::new(program);
        return path.is_file().then(|| path.to_path_buf());
    }
    find_program_in(program, path_var)
}

/// What was looked for, in words, when [`locate`] found nothing.
pub fn not_found(program: &str) -> String {
    if program.starts_with('/') {
        format!("nvidia-smi not found at {program}")
    } else {
        format!("{program} not found on PATH")
    }
}

/// What one run of the two queries found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// The GPUs, with their processes attached; `notes` say what the reading lacks (the
    /// process query failed: the GPUs' figures still stand).
    Gpus { samples: Vec<GpuSample>, notes: Vec<String> },
    /// `nvidia-smi` ran and found no GPU (its exit status 6): nothing to show, no failure.
    NoDevices(String),
}

/// One reading of this machine's GPUs through `program`.
pub async fn read(transport: &Transport, program: &Path, node: &str, timeout: Duration) -> Result<Found, BackendError> {
    let argv = |query: &[&str]| {
        let mut v = vec![program.to_string_lossy().into_owned()];
        v.extend(query.iter().map(|s| s.to_string()));
        v
    };
    let (gpus_argv, apps_argv) = (argv(nvidia_smi::QUERY_GPU), argv(nvidia_smi::QUERY_APPS));
    let (gpus, apps) =
        tokio::join!(transport.output(&gpus_argv, None, timeout), transport.output(&apps_argv, None, timeout));
    let gpus = gpus?;
    if gpus.status == Some(NO_DEVICES) {
        return Ok(Found::NoDevices(no_devices(&gpus)));
    }
    let gpus = gpus.into_result(&gpus_argv)?;
    let mut samples = nvidia_smi::parse_gpus(node, &String::from_utf8_lossy(&gpus.stdout))
        .map_err(|message| BackendError::Parse { what: display_argv(&gpus_argv), message })?;
    let attached = apps.and_then(|out| out.into_result(&apps_argv)).and_then(|out| {
        nvidia_smi::attach_processes(&mut samples, &String::from_utf8_lossy(&out.stdout))
            .map_err(|message| BackendError::Parse { what: display_argv(&apps_argv), message })
    });
    let notes = match attached {
        Ok(()) => Vec::new(),
        Err(e) => {
            // Half a list would read as the whole one; none, with the note, says what is missing.
            samples.iter_mut().for_each(|s| s.processes.clear());
            vec![format!("GPU processes unknown: {e}")]
        }
    };
    Ok(Found::Gpus { samples, notes })
}

/// `nvidia-smi found no GPU: No devices were found (exit 6)`.
fn no_devices(out: &CmdOutput) -> String {
    let said = [String::from_utf8_lossy(&out.stdout).trim().to_string(), out.stderr.trim().to_string()]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "no output".into());
    let said: String = said.lines().next().unwrap_or_default().chars().take(200).collect();
    format!("nvidia-smi found no GPU: {said} (exit {NO_DEVICES})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_a_path_or_a_name_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nvidia-smi");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate("nvidia-smi", dir.path().as_os_str()), Some(exe.clone()));
        assert_eq!(locate(&exe.to_string_lossy(), OsStr::new("")), Some(exe.clone()));
        assert_eq!(locate("nvidia-smi", OsStr::new("")), None);
        assert_eq!(locate("/nonexistent/nvidia-smi", dir.path().as_os_str()), None);
        assert_eq!(not_found("nvidia-smi"), "nvidia-smi not found on PATH");
        assert_eq!(not_found("/opt/nv/nvidia-smi"), "nvidia-smi not found at /opt/nv/nvidia-smi");
    }
}
