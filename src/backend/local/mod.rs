//! This machine's GPUs as one cluster (`kind = "local"`).
//!
//! A refresh reads the GPUs ([`reader`]: NVML through `nvml-wrapper`, loaded at run time,
//! else `nvidia-smi`, else none) and maps them ([`map`]) to one node, the machine, with a
//! job per GPU process: id = pid, name = its command, its user, the GPUs it holds. So the
//! jobs table lists what nvitop lists, the GPU map shows which process holds which GPU, and
//! idle detection flags a process that holds a GPU without using it. Telemetry is the same
//! reading with each GPU's owner set ([`map::set_owners`]).
//!
//! Nothing is changed here: no submit, no cancel (killing someone's process is not a
//! scheduler's cancel), no node actions.

pub mod config;
pub mod discover;
pub mod host;
pub mod map;
pub mod nvml;
pub mod procs;
pub mod reader;
pub mod smi;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use chrono::Utc;

use crate::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction};
use crate::config::ClusterConfig;
use crate::model::{JobRef, LogHandle, Snapshot, Telemetry};
use crate::spec::JobSpec;

pub use self::config::{GpuSource, LocalConfig};
pub use self::host::Host;
use self::map::Machine;
use self::reader::{GpuReader, Reading};

/// What this machine's cluster can do beyond reading it: nothing.
pub const CAPABILITIES: Capabilities = Capabilities {
    submit: false,
    cancel: false,
    hold_release: false,
    requeue: false,
    drain_resume: false,
    cordon_uncordon: false,
    delete: false,
    teardown: false,
};

/// The kind's line in the backend registry.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            let cluster = crate::backend::registry::typed::<LocalConfig>(cluster)?;
            Ok(Arc::new(LocalBackend::new(&cluster, Host::this_machine())))
        },
        capabilities: CAPABILITIES,
        placement: crate::model::Placement::default(),
        dialects: Vec::new(),
        expand: None,
        discover: discover::discover,
    }
}

/// This machine.
pub struct LocalBackend {
    name: String,
    reader: GpuReader,
    cpus: u32,
    memory_mb: u64,
}

impl LocalBackend {
    /// The cluster on `host` (tests hand it stand-in programs, `/proc` and libraries).
    pub fn new(cfg: &ClusterConfig<LocalConfig>, host: Host) -> Self {
        let (cpus, memory_mb) = procs::machine(&host.proc_root);
        Self {
            name: cfg.name.clone(),
            reader: GpuReader::new(cfg.settings.clone(), host, cfg.timeout),
            cpus,
            memory_mb,
        }
    }

    fn machine(&self) -> Machine {
        Machine {
            cluster: self.name.clone(),
            node: self.reader.host().hostname.clone(),
            cpus: self.cpus,
            memory_mb: self.memory_mb,
        }
    }

    fn snapshot_of(&self, reading: Reading) -> Snapshot {
        map::snapshot(&self.machine(), &reading.gpus, &reading.procs, reading.driver, reading.notes, Utc::now())
    }

    fn refuse(&self, what: &str) -> BackendError {
        BackendError::Unsupported(format!(
            "cluster {} (local) lists this machine's GPU processes and cannot {what}",
            self.name
        ))
    }
}

#[async_trait]
impl Backend for LocalBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.reader.commands_run())
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        Ok(self.snapshot_of(self.reader.read().await?))
    }

    async fn telemetry(&self, _snapshot: &Snapshot) -> Result<Option<Telemetry>, BackendError> {
        let reading = self.reader.read().await?;
        let Some(used) = reading.used else { return Ok(None) };
        let mut gpus = reading.gpus;
        map::set_owners(&mut gpus);
        Ok(Some(Telemetry { taken_at: Utc::now(), source: used.label().to_string(), gpus, notes: reading.notes }))
    }

    async fn submit(&self, _spec: &JobSpec) -> Result<JobRef, BackendError> {
        Err(self.refuse("take jobs"))
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        Err(self.refuse(&format!("{} process {}", action.verb(), job.id)))
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        Err(self.refuse(&format!("{} {node}", action.verb())))
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let host = self.reader.host();
        let library = host.nvml_library.to_string_lossy().into_owned();
        let started = Instant::now();
        let reading = self.reader.read().await?;
        let mut d = Diagnosis {
            transport: format!("this machine ({})", host.hostname),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            release: reading.driver.as_ref().map(|v| format!("driver {v}")),
            ..Diagnosis::default()
        };
        d.fact("gpu_source", self.reader.config().gpu_source.as_str());
        d.fact(
            "reads",
            reading.used.as_ref().map_or_else(|| "nothing (no GPU found)".into(), |u| u.describe(&library)),
        );
        let processes = reading.procs.len();
        d.fact("GPUs", reading.gpus.len().to_string());
        d.fact("GPU processes", processes.to_string());
        // Without a source its one note says what was looked for and why neither answered.
        d.notes.extend(reading.notes);
        Ok(d)
    }

    async fn read_log(&self, log: &LogHandle, _from: Option<u64>, _max_bytes: u64) -> Result<LogChunk, BackendError> {
        Err(BackendError::NotFound(format!("`{log}`: this machine's GPU processes have no logs flightdeck can read")))
    }
}
