//! `MemoryCluster`: a cluster held in memory for tests of what sits above a backend (the
//! fleet, the hub, migration, the cockpit's event loop, telemetry sources). Its snapshot is
//! data the test sets (and changes with [`MemoryCluster::edit`]); every action is recorded
//! as a line (`cancel sim/1`, `submit sim/train`) and answered `Ok`. By default an action
//! is not applied, so a test that needs its effect changes the jobs itself; with
//! [`MemoryCluster::applying`] a submit lists the job and a cancel drops it, as a scheduler
//! would. Faults are scripted per verb ([`Fault`]): refused, or taken with the answer lost,
//! optionally taking the link down with it; so are listings. What a test needs beyond that
//! (a reading, a history, a log, how long an action takes) is a hook. Calls are counted, and
//! so are job actions under way at once.
//!
//! A binary that needs it declares `#[path = "../support/memory.rs"] mod memory;`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use flightdeck::backend::{Backend, BackendError, Capabilities, Diagnosis, JobAction, LogChunk, NodeAction};
use flightdeck::model::usage::{Usage, UsageQuery};
use flightdeck::model::{History, HistoryQuery, Job, JobRef, JobState, LogHandle, Native, Snapshot, Telemetry, Verb};
use flightdeck::spec::{Imported, JobSpec};

type TelemetryHook = Box<dyn Fn(&Snapshot) -> Result<Option<Telemetry>, BackendError> + Send + Sync>;
type HistoryHook = Box<dyn Fn(&HistoryQuery) -> Option<History> + Send + Sync>;
/// `None`: the read never answers (a log on a hung filesystem).
type LogHook = Box<dyn Fn(&LogHandle) -> Option<LogChunk> + Send + Sync>;
type UsageHook = Box<dyn Fn(&UsageQuery) -> Result<Option<Usage>, BackendError> + Send + Sync>;
/// How a job action goes, asked before it is recorded as done: it may take a while, never
/// end, fail or panic.
pub type ActionFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), BackendError>> + Send>>;
type ActionHook = Box<dyn Fn(&JobRef, JobAction) -> ActionFuture + Send + Sync>;

/// A scripted failure of one verb (`submit`, `cancel`, `hold` …). `BackendError` is not
/// `Clone`, so the error is made afresh for each call.
#[derive(Clone)]
pub struct Fault {
    error: Arc<dyn Fn() -> BackendError + Send + Sync>,
    /// The action was carried out before the error came back (an answer lost on the way).
    taken: bool,
    /// The link goes down with it: listings fail from then on.
    link_down: bool,
}

impl Fault {
    /// Refused: nothing happens, `error` comes back.
    pub fn refused(error: impl Fn() -> BackendError + Send + Sync + 'static) -> Fault {
        Fault { error: Arc::new(error), taken: false, link_down: false }
    }

    /// Carried out, but `error` comes back instead of the answer (a timeout under load).
    pub fn answer_lost(error: impl Fn() -> BackendError + Send + Sync + 'static) -> Fault {
        Fault { error: Arc::new(error), taken: true, link_down: false }
    }

    /// And the cluster's link goes down with it.
    pub fn then_link_down(self) -> Fault {
        Fault { link_down: true, ..self }
    }
}

pub struct MemoryCluster {
    name: String,
    capabilities: Capabilities,
    snapshot: Mutex<Snapshot>,
    /// The spec of each listed job, what `job_spec` reads back.
    specs: Mutex<HashMap<JobRef, JobSpec>>,
    import_warnings: Vec<String>,
    unreachable: AtomicBool,
    calls: Mutex<Vec<String>>,
    /// Shared with other clusters: every call of all of them, in the order they came.
    journal: Option<Arc<Mutex<Vec<String>>>>,
    faults: Mutex<HashMap<Verb, Fault>>,
    /// A scripted failure of every listing (a controller rate-limiting, a bug that panics).
    listing: Mutex<Option<Fault>>,
    /// Announces changes as a watching backend does.
    changes: Option<tokio::sync::watch::Sender<u64>>,
    action: Option<ActionHook>,
    /// The identities job actions were asked for with (`job_action_if`).
    uids: Mutex<Vec<Option<String>>>,
    /// Job actions answered `Ok`.
    done: AtomicU32,
    /// Job actions under way now, and the most there ever were at once.
    active: AtomicU32,
    most: AtomicU32,
    applying: bool,
    acting_user: Option<String>,
    /// How long diagnoses and accounting reads take.
    slowness: Duration,
    next_id: AtomicU32,
    snapshots: AtomicU32,
    readings: AtomicU32,
    histories: AtomicU32,
    diagnoses: AtomicU32,
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
            specs: Mutex::new(HashMap::new()),
            import_warnings: Vec::new(),
            unreachable: AtomicBool::new(false),
            calls: Mutex::new(Vec::new()),
            journal: None,
            faults: Mutex::new(HashMap::new()),
            listing: Mutex::new(None),
            changes: None,
            action: None,
            uids: Mutex::new(Vec::new()),
            done: AtomicU32::new(0),
            active: AtomicU32::new(0),
            most: AtomicU32::new(0),
            applying: false,
            acting_user: None,
            slowness: Duration::ZERO,
            next_id: AtomicU32::new(1000),
            snapshots: AtomicU32::new(0),
            readings: AtomicU32::new(0),
            histories: AtomicU32::new(0),
            diagnoses: AtomicU32::new(0),
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

    /// Actions take effect: a submit lists a pending job (of the acting user, with its
    /// spec's name and origin tag), a cancel drops the job.
    pub fn applying(mut self) -> Self {
        self.applying = true;
        self
    }

    /// The user it acts as (`acting_user`), who owns what is submitted to it.
    pub fn acting_as(mut self, user: &str) -> Self {
        self.acting_user = Some(user.to_string());
        self
    }

    /// The ids it hands out start at `first` (1000 unless set).
    pub fn ids_from(self, first: u32) -> Self {
        self.next_id.store(first, Ordering::SeqCst);
        self
    }

    /// What `job_spec` warns of, whatever the job.
    pub fn import_warnings(mut self, warnings: Vec<String>) -> Self {
        self.import_warnings = warnings;
        self
    }

    /// Diagnoses and accounting reads take `slowness`, as commands on a cluster do.
    pub fn slow(mut self, slowness: Duration) -> Self {
        self.slowness = slowness;
        self
    }

    /// Its calls also go to `journal`, shared with other clusters, to see their order.
    pub fn journal(mut self, journal: Arc<Mutex<Vec<String>>>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// It announces changes on `changes`, as a watching backend does.
    pub fn announcing(mut self, changes: tokio::sync::watch::Sender<u64>) -> Self {
        self.changes = Some(changes);
        self
    }

    /// Each job action first goes as `hook` says (a delay, a hang, an error, a panic).
    pub fn acts_with(mut self, hook: impl Fn(&JobRef, JobAction) -> ActionFuture + Send + Sync + 'static) -> Self {
        self.action = Some(Box::new(hook));
        self
    }

    /// From now on every listing fails as `fault` says (`None`: listings work again).
    pub fn fail_listing(&self, fault: Option<Fault>) {
        *self.listing.lock().unwrap() = fault;
    }

    /// Job actions that answered `Ok`.
    pub fn done(&self) -> u32 {
        self.done.load(Ordering::SeqCst)
    }

    /// The most job actions there ever were under way at once.
    pub fn most_at_once(&self) -> u32 {
        self.most.load(Ordering::SeqCst)
    }

    /// The identities job actions were asked for with, in order.
    pub fn uids(&self) -> Vec<Option<String>> {
        self.uids.lock().unwrap().clone()
    }

    /// The next id it hands out.
    pub fn next_id(&self) -> String {
        self.next_id.fetch_add(1, Ordering::SeqCst).to_string()
    }

    /// Lists `job`, with `spec` as what `job_spec` reads back of it.
    pub fn add(&self, job: Job, spec: JobSpec) {
        self.specs.lock().unwrap().insert(job.job_ref.clone(), spec);
        self.snapshot.lock().unwrap().jobs.push(job);
    }

    /// Changes its snapshot in place (jobs gone, jobs changed, nodes added).
    pub fn edit<R>(&self, change: impl FnOnce(&mut Snapshot) -> R) -> R {
        change(&mut self.snapshot.lock().unwrap())
    }

    /// Whether a job with this id is listed.
    pub fn has(&self, id: &str) -> bool {
        self.snapshot.lock().unwrap().jobs.iter().any(|j| j.job_ref.id == id)
    }

    /// From now on `verb` fails as `fault` says (`None`: it works again).
    pub fn fail(&self, verb: Verb, fault: Option<Fault>) {
        let mut faults = self.faults.lock().unwrap();
        match fault {
            Some(fault) => faults.insert(verb, fault),
            None => faults.remove(&verb),
        };
    }

    /// Takes its link down (`true`: every snapshot fails to connect) or brings it back.
    pub fn set_unreachable(&self, down: bool) {
        self.unreachable.store(down, Ordering::SeqCst);
    }

    /// Every action asked of it, in order: `cancel sim/1`, `drain n1`, `submit sim/NAME`.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    pub fn diagnoses(&self) -> u32 {
        self.diagnoses.load(Ordering::SeqCst)
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
        if let Some(journal) = &self.journal {
            journal.lock().unwrap().push(call.clone());
        }
        self.calls.lock().unwrap().push(call);
    }

    /// `Some`: the answer to a call of `verb` that is not carried out; `None`: carry it out,
    /// then answer with [`MemoryCluster::after`].
    fn before(&self, verb: Verb) -> Option<BackendError> {
        // Out of the lock first: a scripted error may panic, which must not poison it.
        let fault = self.faults.lock().unwrap().get(&verb).filter(|f| !f.taken).cloned();
        fault.map(|f| (f.error)())
    }

    /// The answer to a call of `verb` that was carried out.
    fn after(&self, verb: Verb) -> Result<(), BackendError> {
        let fault = self.faults.lock().unwrap().get(&verb).cloned();
        match fault {
            None => Ok(()),
            Some(fault) => {
                if fault.link_down {
                    self.set_unreachable(true);
                }
                Err((fault.error)())
            }
        }
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
        let listing = self.listing.lock().unwrap().clone();
        if let Some(fault) = listing {
            return Err((fault.error)());
        }
        let mut snapshot = self.snapshot.lock().unwrap().clone();
        if snapshot.queues.is_empty() {
            // As a Slurm backend does, unless the test set its own.
            snapshot.derive_queues();
        }
        Ok(snapshot)
    }

    async fn telemetry(&self, snapshot: &Snapshot) -> Result<Option<Telemetry>, BackendError> {
        self.readings.fetch_add(1, Ordering::SeqCst);
        self.telemetry.as_ref().map_or(Ok(None), |hook| hook(snapshot))
    }

    async fn history(&self, query: &HistoryQuery) -> Result<Option<History>, BackendError> {
        self.histories.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.slowness).await;
        Ok(self.history.as_ref().and_then(|hook| hook(query)))
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Option<Usage>, BackendError> {
        self.usage.as_ref().map_or(Ok(None), |hook| hook(query))
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        self.record(format!("submit {}/{}", self.name, spec.name));
        if !self.capabilities.submit {
            return Err(BackendError::Unsupported(format!("{} takes no jobs", self.name)));
        }
        if let Some(refused) = self.before(Verb::Submit) {
            return Err(refused);
        }
        let job_ref = JobRef::new(self.name.as_str(), self.next_id());
        if self.applying {
            let mut job = Job::new(job_ref.clone(), JobState::Pending);
            job.name = spec.name.clone();
            job.user = self.acting_user.clone().unwrap_or_default();
            job.submit_time = Some(chrono::Utc::now());
            job.migrated_from = spec.migrated_from.clone();
            self.add(job, spec.clone());
        }
        self.after(Verb::Submit)?;
        Ok(job_ref)
    }

    /// Its own native form: one `#SBATCH` line naming the job.
    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        Ok(Native {
            dialect: flightdeck::backend::slurm::dialect::SBATCH,
            text: format!("#SBATCH --job-name={}\n", spec.name),
            warnings: Vec::new(),
        })
    }

    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        let spec = self.specs.lock().unwrap().get(job).cloned();
        let spec = spec.ok_or_else(|| BackendError::NotFound(job.to_string()))?;
        Ok(Imported { spec, warnings: self.import_warnings.clone() })
    }

    async fn acting_user(&self) -> Result<Option<String>, BackendError> {
        Ok(self.acting_user.clone())
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        self.record(format!("{} {job}", action.verb()));
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let _leave = Leave(&self.active);
        if let Some(hook) = &self.action {
            hook(job, action).await?;
        }
        if let Some(refused) = self.before(action.verb()) {
            return Err(refused);
        }
        if self.applying && action == JobAction::Cancel {
            self.snapshot.lock().unwrap().jobs.retain(|j| &j.job_ref != job);
        }
        self.after(action.verb())?;
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn job_action_if(&self, job: &JobRef, action: JobAction, uid: Option<&str>) -> Result<(), BackendError> {
        self.uids.lock().unwrap().push(uid.map(str::to_string));
        self.job_action(job, action).await
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.changes.as_ref().map(|tx| tx.subscribe())
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        self.record(format!("{} {node}", action.verb()));
        Ok(String::new())
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        self.diagnoses.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.slowness).await;
        Ok(Diagnosis { transport: "memory".into(), ..Diagnosis::default() })
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

/// Counts a job action out when it ends, however it ends (a panic, a dropped future).
struct Leave<'a>(&'a AtomicU32);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
