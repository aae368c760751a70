//! `MemoryCluster`: a cluster held in memory for tests of what sits above a backend (the
//! fleet, the cockpit's event loop, telemetry sources). Its snapshot is data the test sets;
//! every action is recorded as a line (`cancel sim/1`, `submit train`) and answered `Ok`,
//! not applied, so a test that needs an action's effect changes the jobs itself. What a
//! test needs beyond that (a reading, a history, a log) is a hook. Calls are counted.
//!
//! A binary that needs it declares `#[path = "../support/memory.rs"] mod memory;`.
#![allow(dead_code)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use async_trait::async_trait;
use flightdeck::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, LogChunk, NodeAction};
use flightdeck::model::usage::{Usage, UsageQuery};
use flightdeck::model::{History, HistoryQuery, Job, JobRef, LogHandle, Snapshot, Telemetry};
use flightdeck::spec::JobSpec;

type TelemetryHook = Box<dyn Fn(&Snapshot) -> Result<Option<Telemetry>, BackendError> + Send + Sync>;
type HistoryHook = Box<dyn Fn(&HistoryQuery) -> Option<History> + Send + Sync>;
/// `None`: the read never answers (a log on a hung filesystem).
type LogHook = Box<dyn Fn(&LogHandle) -> Option<LogChunk> + Send + Sync>;
type UsageHook = Box<dyn Fn(&UsageQuery) -> Result<Option<Usage>, BackendError> + Send + Sync>;

pub struct MemoryCluster {
    name: String,
    capabilities: Capabilities,
    snapshot: Mutex<Snapshot>,
    unreachable: AtomicBool,
    calls: Mutex<Vec<String>>,
    next_id: AtomicU32,
    snapshots: AtomicU32,
    readings: AtomicU32,
    histories: AtomicU32,
    telemetry: Option<TelemetryHook>,
    history: Option<HistoryHook>,
    log: Option<LogHook>,
    usage: Option<UsageHook>,
}

impl MemoryCluster {
    /// An empty cluster named `name`, able to do nothing (`Capabilities::default()`).
    pub fn new(name: &str) -> MemoryCluster {
        MemoryCluster {
            name: name.to_string(),
            capabilities: Capabilities::default(),
            snapshot: Mutex::new(Snapshot { cluster: name.into(), ..Snapshot::default() }),
            unreachable: AtomicBool::new(false),
            calls: Mutex::new(Vec::new()),
            next_id: AtomicU32::new(1000),
            snapshots: AtomicU32::new(0),
            readings: AtomicU32::new(0),
            histories: AtomicU32::new(0),
            telemetry: None,
            history: None,
            log: None,
            usage: None,
        }
    }

    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The snapshot it answers with (its cluster name set to this cluster's).
    pub fn snapshot_of(self, snapshot: Snapshot) -> Self {
        *self.snapshot.lock().unwrap() = Snapshot { cluster: self.name.clone(), ..snapshot };
        self
    }

    /// These jobs, and nothing else, in its snapshot.
    pub fn jobs(self, jobs: Vec<Job>) -> Self {
        let name = self.name.clone();
        self.snapshot_of(Snapshot { cluster: name, jobs, ..Snapshot::default() })
    }

    /// Its telemetry answers with `hook` (without one: `Ok(None)`, the kind measures nothing).
    pub fn telemetry(
        mut self,
        hook: impl Fn(&Snapshot) -> Result<Option<Telemetry>, BackendError> + Send + Sync + 'static,
    ) -> Self {
        self.telemetry = Some(Box::new(hook));
        self
    }

    /// Its accounting answers with `hook` (without one: none, as the trait's default).
    pub fn history(mut self, hook: impl Fn(&HistoryQuery) -> Option<History> + Send + Sync + 'static) -> Self {
        self.history = Some(Box::new(hook));
        self
    }

    /// It computes its own usage with `hook`, as a hub does (without one: `Ok(None)`).
    pub fn usage(
        mut self,
        hook: impl Fn(&UsageQuery) -> Result<Option<Usage>, BackendError> + Send + Sync + 'static,
    ) -> Self {
        self.usage = Some(Box::new(hook));
        self
    }

    /// Log reads answer with `hook`; `None` from it is a read that never answers.
    pub fn logs(mut self, hook: impl Fn(&LogHandle) -> Option<LogChunk> + Send + Sync + 'static) -> Self {
        self.log = Some(Box::new(hook));
        self
    }

    /// Takes its link down (`true`: every snapshot fails to connect) or brings it back.
    pub fn set_unreachable(&self, down: bool) {
        self.unreachable.store(down, Ordering::SeqCst);
    }

    /// Every action asked of it, in order: `cancel sim/1`, `drain n1`, `submit NAME`.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    pub fn snapshots(&self) -> u32 {
        self.snapshots.load(Ordering::SeqCst)
    }

    pub fn readings(&self) -> u32 {
        self.readings.load(Ordering::SeqCst)
    }

    pub fn histories(&self) -> u32 {
        self.histories.load(Ordering::SeqCst)
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl Backend for MemoryCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        self.snapshots.fetch_add(1, Ordering::SeqCst);
        if self.unreachable.load(Ordering::SeqCst) {
            return Err(BackendError::Connect { target: self.name.clone(), message: "link down".into() });
        }
        Ok(self.snapshot.lock().unwrap().clone())
    }

    async fn telemetry(&self, snapshot: &Snapshot) -> Result<Option<Telemetry>, BackendError> {
        self.readings.fetch_add(1, Ordering::SeqCst);
        self.telemetry.as_ref().map_or(Ok(None), |hook| hook(snapshot))
    }

    async fn history(&self, query: &HistoryQuery) -> Result<Option<History>, BackendError> {
        self.histories.fetch_add(1, Ordering::SeqCst);
        Ok(self.history.as_ref().and_then(|hook| hook(query)))
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Option<Usage>, BackendError> {
        self.usage.as_ref().map_or(Ok(None), |hook| hook(query))
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        self.record(format!("submit {}", spec.name));
        if !self.capabilities.submit {
            return Err(BackendError::Unsupported(format!("{} takes no jobs", self.name)));
        }
        Ok(JobRef::new(self.name.as_str(), self.next_id.fetch_add(1, Ordering::SeqCst).to_string()))
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        self.record(format!("{} {job}", action.verb()));
        Ok(())
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        self.record(format!("{} {node}", action.verb()));
        Ok(String::new())
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        Ok(Diagnosis::default())
    }

    async fn read_log(&self, log: &LogHandle, _from: Option<u64>, _max_bytes: u64) -> Result<LogChunk, BackendError> {
        match &self.log {
            None => Ok(LogChunk::default()),
            Some(hook) => match hook(log) {
                Some(chunk) => Ok(chunk),
                None => std::future::pending().await,
            },
        }
    }
}
