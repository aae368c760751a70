//! NVML, the driver's own library, read through `nvml-wrapper`.
//!
//! The library is opened at run time (`dlopen` of `libnvidia-ml.so.1`, through libloading),
//! never linked: the binary starts on machines without an NVIDIA driver, and this module then
//! says why NVML is not there. Every call here blocks (NVML talks to the driver), so callers
//! run them on a blocking thread.

use std::ffi::OsStr;
use std::fmt;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;

use crate::model::{GpuProcess, GpuSample};

/// The library the driver installs (the unversioned `libnvidia-ml.so` comes only with
/// development packages).
pub const LIBRARY: &str = "libnvidia-ml.so.1";

/// Longest process name asked of NVML, in bytes.
const PROCESS_NAME_LEN: usize = 256;

/// Why NVML cannot be used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The dynamic loader could not open the library (no driver installed).
    NotLoadable { library: String, why: String },
    /// The library opened but NVML did not start (driver not running, no permission).
    NotStarted { library: String, why: String },
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NotLoadable { library, why } => write!(f, "NVML ({library}) not loadable: {why}"),
            Unavailable::NotStarted { library, why } => write!(f, "NVML ({library}) loaded but did not start: {why}"),
        }
    }
}

/// Whether `library` opens, without starting NVML: what the local kind's discovery asks
/// (for `init`, the embedded default and `doctor`), cheaply (starting NVML costs a driver round trip per GPU).
pub fn probe(library: &OsStr) -> Result<(), Unavailable> {
    // SAFETY: opening the library runs its initialisers, which are the NVIDIA driver's own;
    // nvml-wrapper opens the same library the same way. Nothing from it is called here.
    match unsafe { libloading::Library::new(library) } {
        Ok(lib) => {
            drop(lib);
            Ok(())
        }
        Err(e) => Err(Unavailable::NotLoadable { library: library.to_string_lossy().into_owned(), why: e.to_string() }),
    }
}

/// Open the library and start NVML.
pub fn start(library: &OsStr) -> Result<Nvml, Unavailable> {
    let name = || library.to_string_lossy().into_owned();
    Nvml::builder().lib_path(library).init().map_err(|e| match e {
        NvmlError::LibloadingError(e) => Unavailable::NotLoadable { library: name(), why: e.to_string() },
        NvmlError::FailedToLoadSymbol(why) => Unavailable::NotLoadable { library: name(), why },
        other => Unavailable::NotStarted { library: name(), why: other.to_string() },
    })
}

/// The driver's version (`550.54.15`), where NVML says.
pub fn driver_version(nvml: &Nvml) -> Option<String> {
    nvml.sys_driver_version().ok().filter(|v| !v.trim().is_empty())
}

/// One sample per GPU NVML sees, on `node`. A figure the device does not report is left
/// unknown; a GPU that cannot be opened is a sample with the problem in words. Processes
/// carry pid, memory and NVML's process name (users and command lines come from `/proc`).
pub fn read(nvml: &Nvml, node: &str) -> Result<Vec<GpuSample>, NvmlError> {
    let count = nvml.device_count()?;
    let mut samples = Vec::with_capacity(count as usize);
    for index in 0..count {
        let mut sample = GpuSample::new(node, index);
        let device = match nvml.device_by_index(index) {
            Ok(device) => device,
            Err(e) => {
                sample.problems.push(format!("NVML cannot open GPU {index}: {e}"));
                samples.push(sample);
                continue;
            }
        };
        sample.index = device.index().unwrap_or(index);
        sample.uuid = device.uuid().ok();
        sample.product = device.name().ok();
        sample.utilisation = device.utilization_rates().ok().map(|u| u.gpu as f32);
        match device.memory_info() {
            Ok(memory) => {
                sample.memory_used_mb = Some(memory.used >> 20);
                sample.memory_total_mb = Some(memory.total >> 20);
            }
            Err(NvmlError::GpuLost) => sample.problems.push("GPU has fallen off the bus (NVML: GPU lost)".into()),
            Err(_) => {}
        }
        sample.power_watts = device.power_usage().ok().map(|mw| mw as f32 / 1000.0);
        sample.temperature_c = device.temperature(TemperatureSensor::Gpu).ok().map(|c| c as f32);

        // Compute and graphics processes both hold the GPU (nvitop lists both).
        let compute = device.running_compute_processes();
        let graphics = device.running_graphics_processes();
        let mut processes: Vec<ProcessInfo> = Vec::new();
        for list in [compute, graphics].into_iter().flatten() {
            processes.extend(list);
        }
        sample.processes = merge_processes(processes, |pid| nvml.sys_process_name(pid, PROCESS_NAME_LEN).ok());
        samples.push(sample);
    }
    Ok(samples)
}

/// One [`GpuProcess`] per pid (a process may be listed as compute and as graphics), sorted
/// by pid, its memory the larger figure.
fn merge_processes(listed: Vec<ProcessInfo>, name_of: impl Fn(u32) -> Option<String>) -> Vec<GpuProcess> {
    let mut out: Vec<GpuProcess> = Vec::with_capacity(listed.len());
    for p in listed {
        let memory = match p.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => Some(bytes >> 20),
            UsedGpuMemory::Unavailable => None,
        };
        match out.iter_mut().find(|q| q.pid == p.pid) {
            Some(same) => same.memory_mb = same.memory_mb.max(memory),
            None => out.push(GpuProcess { pid: p.pid, user: None, command: String::new(), memory_mb: memory }),
        }
    }
    out.sort_by_key(|p| p.pid);
    for p in &mut out {
        p.command = name_of(p.pid).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32, memory: UsedGpuMemory) -> ProcessInfo {
        ProcessInfo { pid, used_gpu_memory: memory, gpu_instance_id: None, compute_instance_id: None }
    }

    #[test]
    fn a_process_listed_twice_is_one_with_the_larger_memory() {
        let merged = merge_processes(
            vec![
                info(30, UsedGpuMemory::Used(3 << 20)),
                info(10, UsedGpuMemory::Unavailable),
                info(30, UsedGpuMemory::Used(5 << 20)),
            ],
            |pid| (pid == 30).then(|| "python".to_string()),
        );
        assert_eq!(
            merged,
            [
                GpuProcess { pid: 10, user: None, command: String::new(), memory_mb: None },
                GpuProcess { pid: 30, user: None, command: "python".into(), memory_mb: Some(5) },
            ]
        );
    }

    #[test]
    fn an_absent_library_is_named_and_nothing_panics() {
        let lib = OsStr::new("/nonexistent/libnvidia-ml.so.1");
        let probed = probe(lib).unwrap_err();
        let started = start(lib).unwrap_err();
        for e in [probed, started] {
            let shown = e.to_string();
            assert!(shown.starts_with("NVML (/nonexistent/libnvidia-ml.so.1) not loadable: "), "{shown}");
            assert!(matches!(e, Unavailable::NotLoadable { .. }), "{e:?}");
        }
    }
}
