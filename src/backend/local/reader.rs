//! Which GPU source one reading uses, and the reading itself.
//!
//! `gpu_source = "auto"`: NVML when its library opens and starts, else `nvidia-smi` when it
//! is found, else none (the reading is empty and says what was looked for). A forced source
//! that is missing is an error naming it. NVML, once started, is kept for the backend's life
//! (starting it costs a driver round trip per GPU); a failed start is tried again at the
//! next reading, so a driver loaded later is found.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nvml_wrapper::Nvml;

use super::config::{GpuSource, LocalConfig};
use super::host::Host;
use super::procs::{self, ProcInfo};
use super::{nvml, smi};
use crate::backend::BackendError;
use crate::backend::exec::Transport;
use crate::model::GpuSample;

/// Which source a reading came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Used {
    Nvml,
    NvidiaSmi(PathBuf),
}

impl Used {
    /// `Telemetry::source`: `nvml`, `nvidia-smi`.
    pub fn label(&self) -> &'static str {
        match self {
            Used::Nvml => "nvml",
            Used::NvidiaSmi(_) => "nvidia-smi",
        }
    }

    /// In words, for `doctor`.
    pub fn describe(&self, library: &str) -> String {
        match self {
            Used::Nvml => format!("NVML ({library})"),
            Used::NvidiaSmi(path) => format!("nvidia-smi at {}", path.display()),
        }
    }
}

/// One reading of this machine's GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// `None`: no source was found (`gpu_source = "auto"` only); `notes` say what was looked for.
    pub used: Option<Used>,
    /// With processes' users and command lines from `/proc`.
    pub gpus: Vec<GpuSample>,
    pub procs: HashMap<u32, ProcInfo>,
    pub driver: Option<String>,
    pub notes: Vec<String>,
}

enum Choice {
    Nvml(Arc<Nvml>),
    Smi(PathBuf),
    Neither(String),
}

pub struct GpuReader {
    config: LocalConfig,
    host: Host,
    timeout: Duration,
    nvml: Mutex<Option<Arc<Nvml>>>,
    /// `nvidia-smi` runs: bounded output, the timeout, the command's own words on failure.
    transport: Transport,
}

impl GpuReader {
    pub fn new(config: LocalConfig, host: Host, timeout: Duration) -> Self {
        Self { config, host, timeout, nvml: Mutex::new(None), transport: Transport::local() }
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn config(&self) -> &LocalConfig {
        &self.config
    }

    /// Commands run so far (`nvidia-smi` queries).
    pub fn commands_run(&self) -> u64 {
        self.transport.commands_run()
    }

    pub async fn read(&self) -> Result<Reading, BackendError> {
        let (used, mut gpus, driver, notes) = match self.choose().await? {
            Choice::Nvml(nvml) => {
                let (gpus, driver) = self.read_nvml(nvml).await?;
                (Used::Nvml, gpus, driver, Vec::new())
            }
            Choice::Smi(path) => match smi::read(&self.transport, &path, &self.host.hostname, self.timeout).await? {
                smi::Found::Gpus { samples, notes } => (Used::NvidiaSmi(path), samples, None, notes),
                smi::Found::NoDevices(said) => (Used::NvidiaSmi(path), Vec::new(), None, vec![said]),
            },
            Choice::Neither(why) => {
                return Ok(Reading {
                    used: None,
                    gpus: Vec::new(),
                    procs: HashMap::new(),
                    driver: None,
                    notes: vec![why],
                });
            }
        };
        let root = self.host.proc_root.clone();
        let (gpus, procs) = self
            .blocking("reading /proc", move || {
                let procs = procs::enrich(&mut gpus, &root);
                (gpus, procs)
            })
            .await?;
        Ok(Reading { used: Some(used), gpus, procs, driver, notes })
    }

    async fn choose(&self) -> Result<Choice, BackendError> {
        let program = &self.config.nvidia_smi;
        match self.config.gpu_source {
            GpuSource::Nvml => {
                self.nvml().await.map(Choice::Nvml).map_err(|e| BackendError::Unsupported(e.to_string()))
            }
            GpuSource::NvidiaSmi => smi::locate(program, &self.host.path)
                .map(Choice::Smi)
                .ok_or_else(|| BackendError::Unsupported(smi::not_found(program))),
            GpuSource::Auto => match self.nvml().await {
                Ok(nvml) => Ok(Choice::Nvml(nvml)),
                Err(nvml_why) => Ok(match smi::locate(program, &self.host.path) {
                    Some(path) => Choice::Smi(path),
                    None => Choice::Neither(format!("no GPU found: {nvml_why}; {}", smi::not_found(program))),
                }),
            },
        }
    }

    /// NVML, started once and kept.
    async fn nvml(&self) -> Result<Arc<Nvml>, nvml::Unavailable> {
        if let Some(nvml) = self.nvml.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Ok(nvml);
        }
        let library = self.host.nvml_library.clone();
        let started =
            tokio::task::spawn_blocking(move || nvml::start(&library).map(Arc::new)).await.unwrap_or_else(|e| {
                Err(nvml::Unavailable::NotStarted {
                    library: self.host.nvml_library.to_string_lossy().into_owned(),
                    why: format!("internal error: {e}"),
                })
            })?;
        let mut kept = self.nvml.lock().unwrap_or_else(|e| e.into_inner());
        // Two readings may have started it at once: keep the first, the other shuts down.
        Ok(kept.get_or_insert(started).clone())
    }

    async fn read_nvml(&self, nvml: Arc<Nvml>) -> Result<(Vec<GpuSample>, Option<String>), BackendError> {
        let node = self.host.hostname.clone();
        let read = self.blocking("NVML", move || {
            let gpus = nvml::read(&nvml, &node);
            (gpus, nvml::driver_version(&nvml))
        });
        let (gpus, driver) = read.await?;
        let gpus = gpus.map_err(|e| BackendError::Command {
            command: "NVML".into(),
            status: None,
            stderr: format!("cannot list GPUs: {e}"),
        })?;
        Ok((gpus, driver))
    }

    /// `work` on a blocking thread, bounded by the timeout (a driver call that hangs leaves
    /// its thread behind, not the refresh).
    async fn blocking<T: Send + 'static>(
        &self,
        what: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, BackendError> {
        match tokio::time::timeout(self.timeout, tokio::task::spawn_blocking(work)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(BackendError::Internal(format!("{what}: {e}"))),
            Err(_) => Err(BackendError::Timeout { what: what.to_string(), secs: self.timeout.as_secs() }),
        }
    }
}
