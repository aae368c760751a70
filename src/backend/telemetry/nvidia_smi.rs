//! `nvidia-smi --query-gpu` and `--query-compute-apps` output, read into samples.
//!
//! The Slurm backend runs these queries on a job's nodes over the cluster's link and the
//! local backend runs them on this machine when NVML cannot be loaded; both read the CSV
//! here. The format is the real program's `--format=csv,noheader,nounits`: one line per
//! device, fields in the order asked, figures without units, and a bracketed word
//! (`[N/A]`, `[Not Supported]`, `[Unknown Error]`) where the device has no figure.

use crate::model::{GpuProcess, GpuSample};

/// The device fields read, in this order.
const GPU_FIELDS: &str = "index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu";

/// `nvidia-smi`'s arguments for one line per GPU.
pub const QUERY_GPU: &[&str] = &[
    "--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu",
    "--format=csv,noheader,nounits",
];

/// The process fields read, in this order. `nvidia-smi` names a process's device by UUID
/// only, so the join goes through the UUIDs of [`QUERY_GPU`].
const APP_FIELDS: &str = "gpu_uuid,pid,process_name,used_memory";

/// `nvidia-smi`'s arguments for one line per compute process.
pub const QUERY_APPS: &[&str] =
    &["--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv,noheader,nounits"];

/// One [`GpuSample`] per line of [`QUERY_GPU`]'s output on `node`.
///
/// An error names the line and what is wrong with it: a driver message in place of the CSV
/// (`No devices were found`, `NVIDIA-SMI has failed…`) reads as a wrong field count.
pub fn parse_gpus(node: &str, text: &str) -> Result<Vec<GpuSample>, String> {
    let width = GPU_FIELDS.split(',').count();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(line);
        if f.len() != width {
            return Err(format!(
                "line {}: {} fields, expected {width} ({GPU_FIELDS}): {}",
                n + 1,
                f.len(),
                shorten(line)
            ));
        }
        let index = f[0].parse::<u32>().map_err(|_| format!("line {}: {:?} is not a device index", n + 1, f[0]))?;
        let mut s = GpuSample::new(node, index);
        s.uuid = known(f[1]).map(str::to_string);
        s.product = known(f[2]).map(str::to_string);
        s.utilisation = number(f[3]);
        s.memory_used_mb = number(f[4]).map(|v: f64| v as u64);
        s.memory_total_mb = number(f[5]).map(|v: f64| v as u64);
        s.power_watts = number(f[6]);
        s.temperature_c = number(f[7]);
        out.push(s);
    }
    Ok(out)
}

/// Attaches each line of [`QUERY_APPS`]'s output to the sample whose UUID it names; a
/// process on a device the samples lack is left out (it was not in the same reading).
pub fn attach_processes(samples: &mut [GpuSample], text: &str) -> Result<(), String> {
    let width = APP_FIELDS.split(',').count();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(line);
        // A process name may itself hold commas; the fields around it are fixed.
        if f.len() < width {
            return Err(format!(
                "line {}: {} fields, expected {width} ({APP_FIELDS}): {}",
                n + 1,
                f.len(),
                shorten(line)
            ));
        }
        let uuid = f[0];
        let pid = f[1].parse::<u32>().map_err(|_| format!("line {}: {:?} is not a process id", n + 1, f[1]))?;
        let memory = f[f.len() - 1];
        let command = f[2..f.len() - 1].join(",");
        let Some(sample) = samples.iter_mut().find(|s| s.uuid.as_deref() == Some(uuid)) else { continue };
        sample.processes.push(GpuProcess {
            pid,
            user: None,
            command,
            memory_mb: number(memory).map(|v: f64| v as u64),
        });
    }
    Ok(())
}

fn fields(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

/// A figure, or nothing where the device reports a bracketed word or `N/A`.
fn number<T: std::str::FromStr>(v: &str) -> Option<T> {
    known(v).and_then(|v| v.parse().ok())
}

fn known(v: &str) -> Option<&str> {
    let unknown = v.is_empty() || v.starts_with('[') || v.eq_ignore_ascii_case("n/a");
    (!unknown).then_some(v)
}

fn shorten(line: &str) -> String {
    const MAX: usize = 120;
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(MAX).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
