//! GPU telemetry sources that are not a backend's own: Prometheus (dcgm-exporter, AMD's
//! device-metrics-exporter) for any cluster with a `prometheus_url`, and the `nvidia-smi`
//! output format that the Slurm and local backends read.

pub mod nvidia_smi;
pub mod prometheus;
