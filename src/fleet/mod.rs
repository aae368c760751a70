//! The fleet owns the backends: one poller task per cluster, one action queue, the audit log.
//!
//! Front ends (the CLI today, the cockpit next) read the whole state through a
//! `tokio::sync::watch` channel of `Arc<FleetState>` and send [`Action`]s; they never call a
//! backend themselves.
//!
//! `Fleet`: starts pollers and the action runner, publishes `Arc<FleetState>`. Actions
//! arrive as batches (`request_batch`/`perform_batch`; a single action is a batch of one), one
//! queue slot each, carried out whole: refusals (read-only, unknown cluster, a verb the kind cannot
//! do), then per cluster (clusters in parallel) all intents in one fsynced append, the calls (the
//! same job action on many jobs is one `Backend::job_actions`), at most `ACTIONS_PER_CLUSTER` (4)
//! backend calls at once per cluster across every batch, a backend's panic an internal error, all
//! outcomes in one append; one `BatchOutcome` (`summary()`: `cancelled 998 of 1000; 2 failed: …`)
//! per batch on `outcomes()`; `render`, `read_log`, `diagnose` pass through; `history` asks the
//! backend's accounting (`Backend::history`) or, where it keeps none, filters the ended jobs of the
//! latest snapshot (asked once if the fleet has none); `in_flight`/`settle` let quitting wait for
//! actions under way.

pub mod advice;
pub mod audit;
pub mod build;
pub mod follow;
pub mod gate;
pub mod migrate;
pub mod poller;
pub mod telemetry;
mod telemetry_poller;
mod telemetry_sources;
pub mod usage;
pub mod why;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use std::panic::AssertUnwindSafe;

use chrono::Utc;
use futures_util::FutureExt;
use tokio::sync::{Notify, Semaphore, broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::{Backend, BackendError};
use crate::model::{
    ClusterKind, Diagnosis, History, HistoryQuery, JobRecord, JobRef, LogChunk, LogHandle, Native, StartEstimate, Verb,
};
use crate::spec::{Imported, JobSpec};

pub use self::audit::{AuditLog, AuditRecord};
// The vocabulary lives in `model`; re-exported because front ends meet it here first.
pub use crate::model::{Action, ActionOutcome, BatchOutcome, ClusterState, FleetState};

pub use self::build::{BuildError, FleetBuilder};

/// A backend with the polling settings the fleet needs for it.
pub struct Member {
    pub backend: Arc<dyn Backend>,
    pub kind: ClusterKind,
    pub refresh: Duration,
    pub timeout: Duration,
}

pub struct FleetOptions {
    /// Refuse every change, whoever asks.
    pub read_only: bool,
    /// Start the pollers. One-shot commands that only act (`cancel`) leave them off, so
    /// they cost the controller nothing but the action itself.
    pub poll: bool,
    pub audit: Option<AuditLog>,
    /// Who the audit log says acted.
    pub actor: String,
}

/// How the fleet reads its clusters' GPUs: one idle rule, and per cluster (by name) a
/// source other than its backend (Prometheus) and a cadence; a cluster without either is
/// read through its backend every [`DEFAULT_TELEMETRY`](crate::config::DEFAULT_TELEMETRY).
#[derive(Clone, Default)]
pub struct TelemetryOptions {
    /// Read no telemetry at all (`jobs --no-telemetry`): no reading is started.
    pub off: bool,
    pub idle: crate::config::IdleRule,
    pub sources: HashMap<String, Arc<dyn crate::backend::telemetry::TelemetrySource>>,
    pub every: HashMap<String, Duration>,
}

/// Backend calls at once per cluster, whoever asks: a batch of a thousand cancels on one
/// cluster is a few chunked commands in turn, and other people's actions still get a turn.
pub const ACTIONS_PER_CLUSTER: usize = 4;

/// One confirmed batch (a single action is a batch of one): the fleet carries it out
/// completely, whatever its size.
struct Request {
    actions: Vec<Action>,
    reply: Option<oneshot::Sender<BatchOutcome>>,
    /// Their entries in the fleet's in-flight list, cleared when the batch is done.
    ids: Vec<u64>,
    /// Who asks, when not the fleet's own actor (a hub acts for its callers).
    actor: Option<String>,
    /// Refuse every action with this reason, recorded as refused (a hub's viewer asking).
    refusal: Option<String>,
}

tokio::task_local! {
    /// The actor of the batch being carried out: the audit records of every step of it
    /// (migrations included) name who asked without threading it through each call.
    static ACTOR: String;
}

pub struct Fleet {
    in_flight: Arc<InFlight>,
    state: watch::Receiver<Arc<FleetState>>,
    requests: mpsc::Sender<Request>,
    outcomes: broadcast::Sender<Arc<BatchOutcome>>,
    wakes: HashMap<String, Arc<Notify>>,
    backends: HashMap<String, Arc<dyn Backend>>,
    tasks: Vec<JoinHandle<()>>,
    /// The runner's audit log, for records that are no action (a hub's reads).
    audit: Option<AuditLog>,
    /// Each cluster's refresh interval.
    intervals: HashMap<String, Duration>,
    /// Under this mean utilisation a job's GPUs read idle (`[idle]`), for `usage`.
    idle_below_percent: f32,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Fleet {
    /// Start one poller per member and the action runner. Needs a tokio runtime.
    pub fn start(members: Vec<Member>, opts: FleetOptions) -> Fleet {
        Self::start_with_telemetry(members, opts, TelemetryOptions::default())
    }

    /// [`Fleet::start`], with GPU telemetry read as `telemetry` says (beside each poller,
    /// when polling).
    pub fn start_with_telemetry(members: Vec<Member>, opts: FleetOptions, telemetry: TelemetryOptions) -> Fleet {
        let gates = members.iter().map(|_| None).collect();
        Self::start_gated(members, opts, telemetry, gates)
    }

    /// [`Fleet::start_with_telemetry`], each member polled (and its GPUs read) only while its
    /// gate is open (`gates[i]` for `members[i]`; `None` or a missing one: always).
    pub fn start_gated(
        members: Vec<Member>,
        opts: FleetOptions,
        telemetry: TelemetryOptions,
        gates: Vec<Option<gate::Gate>>,
    ) -> Fleet {
        Self::start_registered(members, opts, telemetry, gates, &crate::backend::Registry::builtin())
    }

    /// [`Fleet::start_gated`], each cluster's placement taken from its kind's line in
    /// `registry` (unless its backend relays one).
    pub fn start_registered(
        members: Vec<Member>,
        opts: FleetOptions,
        telemetry: TelemetryOptions,
        mut gates: Vec<Option<gate::Gate>>,
        registry: &crate::backend::Registry,
    ) -> Fleet {
        gates.resize_with(members.len(), || None);
        let idle_below_percent = telemetry.idle.below_percent;
        let initial = FleetState {
            clusters: members
                .iter()
                .map(|m| ClusterState {
                    capabilities: m.backend.capabilities(),
                    spec_fields: m.backend.spec_fields(),
                    shape_fields: m.backend.shape_fields(),
                    placement: m.backend.relayed_placement().unwrap_or_else(|| registry.placement(&m.kind)),
                    ..ClusterState::new(m.backend.name(), m.kind.clone())
                })
                .collect(),
            read_only: opts.read_only,
            version: 0,
        };
        let initial_kinds = initial.clusters.iter().map(|c| (c.name.clone(), c.kind.clone())).collect();
        let (state_tx, state_rx) = watch::channel(Arc::new(initial));
        let (req_tx, req_rx) = mpsc::channel(256);
        let (out_tx, _) = broadcast::channel(256);
        let mut wakes = HashMap::new();
        let mut backends = HashMap::new();
        let mut limits = HashMap::new();
        let mut intervals = HashMap::new();
        let mut tasks = Vec::new();
        let mut action_gates = HashMap::new();
        for (index, (m, gate)) in members.into_iter().zip(gates).enumerate() {
            if let Some(g) = &gate {
                action_gates.insert(m.backend.name().to_string(), g.clone());
            }
            limits.insert(m.backend.name().to_string(), Arc::new(Semaphore::new(ACTIONS_PER_CLUSTER)));
            intervals.insert(m.backend.name().to_string(), m.refresh);
            let wake = Arc::new(Notify::new());
            wakes.insert(m.backend.name().to_string(), wake.clone());
            backends.insert(m.backend.name().to_string(), m.backend.clone());
            let name = m.backend.name().to_string();
            let every = telemetry.every.get(&name).copied().unwrap_or(crate::config::DEFAULT_TELEMETRY);
            let telemetry_poller = telemetry_poller::TelemetryPoller {
                index,
                backend: m.backend.clone(),
                source: telemetry.sources.get(&name).cloned(),
                every,
                // A reading may fan out over many nodes, a few at a time, each bounded by
                // the cluster's timeout: give it the longer of a refresh's bound and a few
                // cadences.
                timeout: poller::refresh_bound(m.timeout).max(every.saturating_mul(4)),
                rule: telemetry.idle,
                state: state_tx.clone(),
                gate: gate.clone(),
            };
            let poller = poller::Poller {
                index,
                backend: m.backend,
                interval: m.refresh,
                timeout: poller::refresh_bound(m.timeout),
                state: state_tx.clone(),
                wake,
                gate,
            };
            if opts.poll {
                tasks.push(tokio::spawn(poller.run()));
                if !telemetry.off {
                    tasks.push(tokio::spawn(telemetry_poller.run()));
                }
            }
        }
        let kinds = initial_kinds;
        let audit = opts.audit.clone();
        let in_flight = Arc::new(InFlight::default());
        let runner = Runner {
            in_flight: in_flight.clone(),
            backends: backends.clone(),
            kinds,
            limits,
            wakes: wakes.clone(),
            opts,
            outcomes: out_tx.clone(),
            state: state_rx.clone(),
            gates: action_gates,
        };
        tasks.push(tokio::spawn(runner.run(req_rx)));
        // The state sender lives as long as the pollers; keep one so an empty fleet still has a state.
        tasks.push(tokio::spawn(async move {
            state_tx.closed().await;
        }));
        Fleet {
            in_flight,
            state: state_rx,
            requests: req_tx,
            outcomes: out_tx,
            wakes,
            backends,
            tasks,
            audit,
            intervals,
            idle_below_percent,
        }
    }

    pub fn state(&self) -> Arc<FleetState> {
        self.state.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Arc<FleetState>> {
        self.state.clone()
    }

    /// Every batch's outcome when it is done (the cockpit shows each as one toast).
    pub fn outcomes(&self) -> broadcast::Receiver<Arc<BatchOutcome>> {
        self.outcomes.subscribe()
    }

    /// Queue an action; its outcome arrives on [`Fleet::outcomes`].
    pub fn request(&self, action: Action) -> bool {
        self.request_batch(vec![action])
    }

    /// Queue a confirmed batch as one request (never split, never partly dropped); its
    /// outcome arrives on [`Fleet::outcomes`] once every action in it has one. `false` when
    /// the queue is full, and then nothing of it was queued.
    pub fn request_batch(&self, actions: Vec<Action>) -> bool {
        let ids = actions.iter().map(|a| self.in_flight.add(a)).collect::<Vec<_>>();
        match self.requests.try_send(Request { actions, reply: None, ids, actor: None, refusal: None }) {
            Ok(()) => true,
            Err(e) => {
                let Request { ids, .. } = e.into_inner();
                ids.into_iter().for_each(|id| self.in_flight.done(id));
                false
            }
        }
    }

    /// The actions asked for and not answered yet (`cancel hpc/12`, …).
    pub fn in_flight(&self) -> Vec<String> {
        self.in_flight.pending()
    }

    /// Wait until every action asked for has its outcome, or `limit` passes; returns those
    /// still unanswered (their outcome is unknown: the audit log has their intent).
    pub async fn settle(&self, limit: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let settled = self.in_flight.settled.notified();
            let left = self.in_flight.pending();
            if left.is_empty() || tokio::time::Instant::now() >= deadline {
                return left;
            }
            let _ = tokio::time::timeout_at(deadline, settled).await;
        }
    }

    /// Queue an action and wait for its outcome.
    pub async fn perform(&self, action: Action) -> ActionOutcome {
        let (verb, target) = (action.verb(), action.target());
        let mut batch = self.perform_batch(vec![action]).await;
        batch.outcomes.pop().unwrap_or(ActionOutcome { verb, target, result: Err("the fleet lost the action".into()) })
    }

    /// Queue a batch and wait until every action in it has its outcome.
    pub async fn perform_batch(&self, actions: Vec<Action>) -> BatchOutcome {
        self.submit_request(actions, None, None).await
    }

    /// [`Fleet::perform_batch`] on behalf of `actor` (a hub's caller): the audit log names
    /// them instead of the fleet's own actor.
    pub async fn perform_batch_as(&self, actor: &str, actions: Vec<Action>) -> BatchOutcome {
        self.submit_request(actions, Some(actor.to_string()), None).await
    }

    /// Refuse `actions` asked by `actor` for `why` (a hub's viewer may not act): nothing is
    /// tried, every action is recorded in the audit log as refused with the reason.
    pub async fn refuse_batch_as(&self, actor: &str, actions: Vec<Action>, why: &str) -> BatchOutcome {
        self.submit_request(actions, Some(actor.to_string()), Some(why.to_string())).await
    }

    async fn submit_request(
        &self,
        actions: Vec<Action>,
        actor: Option<String>,
        refusal: Option<String>,
    ) -> BatchOutcome {
        let (tx, rx) = oneshot::channel();
        let lost = |actions: &[Action], why: &str| BatchOutcome {
            outcomes: actions
                .iter()
                .map(|a| ActionOutcome { verb: a.verb(), target: a.target(), result: Err(why.to_string()) })
                .collect(),
        };
        let asked = actions.clone();
        let ids = actions.iter().map(|a| self.in_flight.add(a)).collect::<Vec<_>>();
        if let Err(e) = self.requests.send(Request { actions, reply: Some(tx), ids, actor, refusal }).await {
            e.0.ids.into_iter().for_each(|id| self.in_flight.done(id));
            return lost(&asked, "the fleet has stopped");
        }
        rx.await.unwrap_or_else(|_| lost(&asked, "the fleet dropped the action"))
    }

    /// Append `records` to the audit log (one fsync, on a blocking thread): what is no action
    /// but must still be on record, like a hub's reads and their refusals. A fleet without a
    /// log records nothing and succeeds; the error is the sentence the user reads.
    pub async fn audit(&self, records: Vec<AuditRecord>) -> Result<(), String> {
        let Some(log) = self.audit.clone() else { return Ok(()) };
        let path = log.path().to_path_buf();
        match tokio::task::spawn_blocking(move || log.append_all(&records)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("cannot write the audit log ({}: {e})", path.display())),
            Err(e) => Err(format!("cannot write the audit log ({}: {e})", path.display())),
        }
    }

    /// How often `cluster` is refreshed, if the fleet has it.
    pub fn refresh_interval(&self, cluster: &str) -> Option<Duration> {
        self.intervals.get(cluster).copied()
    }

    /// Every cluster's count of requests sent so far, where its backend counts them.
    pub fn requests_sent(&self) -> Vec<(String, Option<u64>)> {
        self.backends.iter().map(|(name, b)| (name.clone(), b.requests_sent())).collect()
    }

    /// Connection, release and cost facts about one cluster (`flightdeck doctor`).
    pub async fn diagnose(&self, cluster: &str) -> Result<Diagnosis, BackendError> {
        match self.backends.get(cluster) {
            Some(b) => b.diagnose().await,
            None => Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured"))),
        }
    }

    /// The native form `cluster` would submit `spec` as (see [`Backend::render`]): a read,
    /// not an action; allowed read-only.
    pub async fn render(&self, cluster: &str, spec: &JobSpec) -> Result<Native, BackendError> {
        match self.backends.get(cluster) {
            Some(b) => b.render(spec).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured"))),
        }
    }

    /// When `spec` would start on `cluster` (see [`Backend::estimate_start`]): a read, asked
    /// on demand only; `None` where the backend has no estimate.
    pub async fn estimate_start(&self, cluster: &str, spec: &JobSpec) -> Result<Option<StartEstimate>, BackendError> {
        match self.backends.get(cluster) {
            Some(b) => b.estimate_start(spec).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured"))),
        }
    }

    /// When the pending `job` is expected to start (see [`Backend::estimate_job_start`]).
    pub async fn estimate_job_start(&self, job: &JobRef) -> Result<Option<StartEstimate>, BackendError> {
        match self.backends.get(&job.cluster) {
            Some(b) => b.estimate_job_start(job).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{}` is configured", job.cluster))),
        }
    }

    /// What `job`'s backend adds about its priority (see [`Backend::priority_details`]).
    pub async fn priority_details(&self, job: &crate::model::Job) -> Result<Vec<String>, BackendError> {
        match self.backends.get(&job.job_ref.cluster) {
            Some(b) => b.priority_details(job).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{}` is configured", job.job_ref.cluster))),
        }
    }

    /// The clusters, in the fleet's order.
    pub fn cluster_names(&self) -> Vec<String> {
        self.state().clusters.iter().map(|c| c.name.clone()).collect()
    }

    /// The jobs of `cluster` that ended since `query.since` (see [`Backend::history`]): its
    /// accounting where it keeps one (one `sacct` call), else the ended jobs of the fleet's
    /// latest snapshot of it. A read on demand, never part of a refresh.
    pub async fn history(&self, cluster: &str, query: &HistoryQuery) -> Result<History, BackendError> {
        let Some(backend) = self.backends.get(cluster) else {
            return Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured")));
        };
        if let Some(history) = backend.history(query).await? {
            return Ok(history);
        }
        // The fleet's latest snapshot, or one asked now (a CLI run's fleet does not poll).
        let state = self.state();
        let known = state.clusters.iter().find(|c| c.name == cluster).and_then(|c| c.snapshot.clone());
        let snapshot = match known {
            Some(snapshot) => snapshot,
            None => Arc::new(backend.snapshot().await?),
        };
        let records = snapshot
            .jobs
            .iter()
            .filter(|j| query.wants(j.state))
            .filter(|j| j.end_time.is_none_or(|end| end >= query.since))
            .filter(|j| query.user.as_ref().is_none_or(|u| &j.user == u))
            .map(|j| JobRecord::from_job(j.clone()))
            .collect();
        Ok(History::newest("the cluster's current jobs", records, query.limit))
    }

    /// A cluster's fair share (see [`Backend::fair_share`]); `None` where it has none.
    pub async fn fair_share(&self, cluster: &str) -> Result<Option<Vec<crate::model::usage::FairShare>>, BackendError> {
        let Some(backend) = self.backends.get(cluster) else {
            return Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured")));
        };
        backend.fair_share().await
    }

    /// Who holds `cluster`'s GPUs as its backend computes it (see [`Backend::usage`]);
    /// `None` where the fleet computes it.
    pub async fn remote_usage(
        &self,
        cluster: &str,
        query: &crate::model::usage::UsageQuery,
    ) -> Result<Option<crate::model::usage::Usage>, BackendError> {
        let Some(backend) = self.backends.get(cluster) else {
            return Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured")));
        };
        backend.usage(query).await
    }

    /// Under this mean utilisation a job's GPUs read idle (the configuration's `[idle]`).
    pub fn idle_below_percent(&self) -> f32 {
        self.idle_below_percent
    }

    /// The portable spec of a live job, read from its backend (see [`Backend::job_spec`]):
    /// a read, not an action; allowed read-only.
    pub async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        match self.backends.get(&job.cluster) {
            Some(b) => b.job_spec(job).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{}` is configured", job.cluster))),
        }
    }

    /// Read one of a job's output streams by its handle, on the cluster that made the handle
    /// (see [`Backend::read_log`]), at most `max_bytes`. A read, not an action: not audited
    /// here (a hub audits its callers' reads with [`Fleet::audit`]), allowed read-only.
    pub async fn read_log(
        &self,
        cluster: &str,
        log: &LogHandle,
        from: Option<u64>,
        max_bytes: u64,
    ) -> Result<LogChunk, BackendError> {
        match self.backends.get(cluster) {
            Some(b) => b.read_log(log, from, max_bytes).await,
            None => Err(BackendError::NotFound(format!("no cluster named `{cluster}` is configured"))),
        }
    }

    /// Refresh one cluster (or all) now instead of at the next interval.
    pub fn refresh_now(&self, cluster: Option<&str>) {
        for (name, wake) in &self.wakes {
            if cluster.is_none_or(|c| c == name) {
                wake.notify_one();
            }
        }
    }

    /// Wait until `done` holds for the published state, or `timeout` passes; returns the
    /// state either way.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&FleetState) -> bool) -> Arc<FleetState> {
        let mut rx = self.state.clone();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|s| done(s))).await;
        self.state()
    }
}

/// Actions asked for and not answered yet, so that quitting can wait for them.
#[derive(Default)]
struct InFlight {
    actions: std::sync::Mutex<(u64, std::collections::BTreeMap<u64, String>)>,
    settled: Notify,
}

impl InFlight {
    fn add(&self, action: &Action) -> u64 {
        let mut g = self.actions.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        let id = g.0;
        g.1.insert(id, format!("{} {}", action.verb(), action.target()));
        id
    }

    fn done(&self, id: u64) {
        self.actions.lock().unwrap_or_else(|e| e.into_inner()).1.remove(&id);
        self.settled.notify_waiters();
    }

    fn pending(&self) -> Vec<String> {
        self.actions.lock().unwrap_or_else(|e| e.into_inner()).1.values().cloned().collect()
    }
}

struct Runner {
    in_flight: Arc<InFlight>,
    backends: HashMap<String, Arc<dyn Backend>>,
    kinds: HashMap<String, ClusterKind>,
    /// [`ACTIONS_PER_CLUSTER`] backend calls at once per cluster, across every batch.
    limits: HashMap<String, Arc<Semaphore>>,
    wakes: HashMap<String, Arc<Notify>>,
    opts: FleetOptions,
    outcomes: broadcast::Sender<Arc<BatchOutcome>>,
    /// The published picture: a migration waits in it for the target to list its job.
    state: watch::Receiver<Arc<FleetState>>,
    /// Clusters acted on only while their gate is open (a hub replica's Leases).
    gates: HashMap<String, gate::Gate>,
}

/// One backend call of a batch: the indices (into the batch) of the actions it carries out.
enum Call {
    /// The same job action on many jobs: one [`Backend::job_actions`].
    Jobs(crate::model::JobAction, Vec<usize>),
    /// Anything else, one at a time.
    One(usize),
}

impl Runner {
    async fn run(self, mut requests: mpsc::Receiver<Request>) {
        let me = Arc::new(self);
        while let Some(req) = requests.recv().await {
            // Each batch runs on its own task: a hung cluster must not hold up the others.
            let me = me.clone();
            tokio::spawn(async move {
                let actor = req.actor.clone().unwrap_or_else(|| me.opts.actor.clone());
                let outcome = ACTOR.scope(actor, me.carry_out(&req.actions, req.refusal.as_deref())).await;
                let outcome = Arc::new(outcome);
                let _ = me.outcomes.send(outcome.clone());
                if let Some(reply) = req.reply {
                    let _ = reply.send(Arc::unwrap_or_clone(outcome));
                }
                for id in req.ids {
                    me.in_flight.done(id);
                }
            });
        }
    }

    /// Refuse what may not happen; carry out the rest cluster by cluster (clusters at the
    /// same time), recording every intent on disk before the cluster is asked anything and
    /// every outcome after.
    async fn carry_out(&self, actions: &[Action], refuse_all: Option<&str>) -> BatchOutcome {
        let mut results: Vec<Option<Result<String, String>>> = vec![None; actions.len()];
        let mut refused = Vec::new();
        let mut by_cluster: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        let mut migrations = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let refusal = match refuse_all {
                Some(why) => Err(why.to_string()),
                None => self.refusal(action),
            };
            match refusal {
                Err(why) => {
                    refused.push(self.record(action, "", "refused", &why));
                    results[i] = Some(Err(why));
                }
                Ok(()) if matches!(action, Action::Migrate { .. }) => migrations.push(i),
                Ok(()) => by_cluster.entry(action.cluster()).or_default().push(i),
            }
        }
        // A refusal that cannot be recorded is still a refusal; nothing was done.
        self.write(refused).await.ok();
        let clusters = by_cluster.into_iter().map(|(cluster, indices)| self.carry_out_on(cluster, actions, indices));
        let moves = futures_util::future::join_all(
            migrations.into_iter().map(|i| async move { (i, self.migrate_recorded(&actions[i]).await) }),
        );
        let (done, moved) = futures_util::future::join(futures_util::future::join_all(clusters), moves).await;
        for done in done {
            for (i, result) in done {
                results[i] = Some(result);
            }
        }
        for (i, result) in moved {
            results[i] = Some(result);
        }
        BatchOutcome {
            outcomes: actions
                .iter()
                .zip(results)
                .map(|(action, result)| ActionOutcome {
                    verb: action.verb(),
                    target: action.target(),
                    result: result.unwrap_or_else(|| Err("the fleet lost this action".into())),
                })
                .collect(),
        }
    }

    /// The actions at `indices`, all on `cluster`: intents, calls, outcomes.
    async fn carry_out_on(
        &self,
        cluster: &str,
        actions: &[Action],
        indices: Vec<usize>,
    ) -> Vec<(usize, Result<String, String>)> {
        let ids: Vec<String> = indices.iter().map(|_| audit::new_id()).collect();
        let intents = indices.iter().zip(&ids).map(|(&i, id)| self.record(&actions[i], id, "intent", "")).collect();
        if let Err(e) = self.write(intents).await {
            return indices.into_iter().map(|i| (i, Err(e.clone()))).collect();
        }
        let mut calls: Vec<Call> = Vec::new();
        for &i in &indices {
            match &actions[i] {
                // An action tied to one object's identity goes on its own (it carries a
                // precondition); the rest of a kind go in one call.
                Action::Job { action, uid: None, .. } => {
                    match calls.iter_mut().find(|c| matches!(c, Call::Jobs(a, _) if a == action)) {
                        Some(Call::Jobs(_, group)) => group.push(i),
                        _ => calls.push(Call::Jobs(*action, vec![i])),
                    }
                }
                _ => calls.push(Call::One(i)),
            }
        }
        let done =
            futures_util::future::join_all(calls.into_iter().map(|call| self.call(cluster, actions, call))).await;
        let mut done: HashMap<usize, Result<String, String>> = done.into_iter().flatten().collect();
        let mut out = Vec::with_capacity(indices.len());
        let mut outcomes = Vec::with_capacity(indices.len());
        for (&i, id) in indices.iter().zip(&ids) {
            let result = done.remove(&i).unwrap_or_else(|| Err("the fleet lost this action".into()));
            let (status, message) = match &result {
                Ok(m) => ("ok", m.as_str()),
                Err(e) => ("error", e.as_str()),
            };
            outcomes.push(self.record(&actions[i], id, status, message));
            out.push((i, result));
        }
        if let Err(e) = self.write(outcomes).await {
            // Done, but the log does not say how it ended: the user must know.
            let note = format!("(done, but {e})");
            for (_, result) in &mut out {
                match result {
                    Ok(m) if m.is_empty() => *m = note.clone(),
                    Ok(m) | Err(m) => *m = format!("{m} {note}"),
                }
            }
        }
        if let Some(w) = self.wakes.get(cluster) {
            w.notify_one();
        }
        out
    }

    /// One backend call, in its turn on the cluster; a panic in the backend is an internal
    /// error for every action of the call, never a lost answer.
    async fn call(&self, cluster: &str, actions: &[Action], call: Call) -> Vec<(usize, Result<String, String>)> {
        let Some(backend) = self.backends.get(cluster) else {
            let why = format!("no cluster named `{cluster}` is configured");
            return match call {
                Call::Jobs(_, group) => group.into_iter().map(|i| (i, Err(why.clone()))).collect(),
                Call::One(i) => vec![(i, Err(why))],
            };
        };
        // The semaphore is never closed; without a permit the call would only lose its turn.
        let _turn = match self.limits.get(cluster) {
            Some(limit) => limit.clone().acquire_owned().await.ok(),
            None => None,
        };
        match call {
            Call::Jobs(action, group) => {
                let jobs: Vec<crate::model::JobRef> = group
                    .iter()
                    .filter_map(|&i| match &actions[i] {
                        Action::Job { job, .. } => Some(job.clone()),
                        _ => None,
                    })
                    .collect();
                let asked = AssertUnwindSafe(backend.job_actions(&jobs, action)).catch_unwind().await;
                match asked {
                    Ok(results) if results.len() == group.len() => group
                        .into_iter()
                        .zip(results)
                        .map(|(i, r)| (i, r.map(|()| String::new()).map_err(|e| e.to_string())))
                        .collect(),
                    Ok(results) => {
                        let why = BackendError::Internal(format!(
                            "{} for {} from the backend",
                            crate::model::words::counted(results.len() as u64, "result", "results"),
                            crate::model::words::counted(group.len() as u64, "job", "jobs")
                        ))
                        .to_string();
                        group.into_iter().map(|i| (i, Err(why.clone()))).collect()
                    }
                    Err(panic) => {
                        let why = BackendError::Internal(poller::panic_text(panic.as_ref())).to_string();
                        group.into_iter().map(|i| (i, Err(why.clone()))).collect()
                    }
                }
            }
            Call::One(i) => {
                let asked = async {
                    match &actions[i] {
                        Action::Submit { spec, .. } => backend.submit(spec).await.map(|r| r.to_string()),
                        Action::Job { job, action, uid } => {
                            backend.job_action_if(job, *action, uid.as_deref()).await.map(|()| String::new())
                        }
                        Action::Node { node, action } => backend.node_action(&node.name, action).await,
                        // Carried out apart (`migrate_recorded`), never grouped per cluster.
                        Action::Migrate { .. } => {
                            Err(BackendError::Internal("a migration reached the per-cluster path".into()))
                        }
                    }
                };
                let result = match AssertUnwindSafe(asked).catch_unwind().await {
                    Ok(result) => result.map_err(|e| e.to_string()),
                    Err(panic) => Err(BackendError::Internal(poller::panic_text(panic.as_ref())).to_string()),
                };
                vec![(i, result)]
            }
        }
    }

    /// One migration: its intent (with the spec) on disk first under a new id (a resumed
    /// one keeps its first id), then [`Runner::migrate`], then its outcome. A panic is an
    /// internal error, and the log then says how far it got.
    async fn migrate_recorded(&self, action: &Action) -> Result<String, String> {
        let id = match action {
            Action::Migrate { resume: Some(id), .. } => id.clone(),
            _ => audit::new_id(),
        };
        // A new migration's id goes into the origin tag of what it submits, so its copy is
        // told from any other job tagged with the same source (a resumed one keeps its spec).
        let tagged;
        let action = match action {
            Action::Migrate { source, to, spec, uid, resume: None } => {
                let mut spec = spec.clone();
                spec.migrated_from = Some(crate::model::migration_tag(&source.to_string(), &id));
                tagged =
                    Action::Migrate { source: source.clone(), to: to.clone(), spec, uid: uid.clone(), resume: None };
                &tagged
            }
            other => other,
        };
        self.write(vec![self.record(action, &id, "intent", "")]).await?;
        let result = match AssertUnwindSafe(self.migrate(action, &id)).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => Err(BackendError::Internal(poller::panic_text(panic.as_ref())).to_string().into()),
        };
        let (status, message) = match &result {
            Ok(m) => ("ok", m.as_str()),
            Err(stop) if stop.interrupted => (migrate::INTERRUPTED, stop.message.as_str()),
            Err(stop) => ("error", stop.message.as_str()),
        };
        let mut outcome = self.record(action, &id, status, message);
        outcome.spec = None;
        let result = result.map_err(|stop| stop.message);
        match self.write(vec![outcome]).await {
            Ok(()) => result,
            Err(e) => result.map(|m| format!("{m} (done, but {e})")).map_err(|m| format!("{m} ({e})")),
        }
    }

    /// Why the fleet will not try `action` at all.
    fn refusal(&self, action: &Action) -> Result<(), String> {
        if self.opts.read_only {
            return Err(BackendError::ReadOnly.to_string());
        }
        if let Action::Migrate { source, .. } = action {
            let Some(origin) = self.backends.get(&source.cluster) else {
                return Err(format!("no cluster named `{}` is configured", source.cluster));
            };
            if !origin.capabilities().allows(Verb::Cancel) {
                let kind = self.kinds.get(&source.cluster).map_or("unknown", ClusterKind::as_str);
                return Err(crate::model::action::cannot(&source.cluster, kind, Verb::Cancel));
            }
        }
        let Some(backend) = self.backends.get(action.cluster()) else {
            return Err(format!("no cluster named `{}` is configured", action.cluster()));
        };
        let touched = match action {
            Action::Migrate { source, .. } => vec![source.cluster.as_str(), action.cluster()],
            _ => vec![action.cluster()],
        };
        // A hub replica acts only on the clusters whose Lease it holds (fencing, `serve::lease`).
        if let Some(other) = touched.into_iter().find(|c| self.gates.get(*c).is_some_and(|g| !*g.borrow())) {
            return Err(format!(
                "cluster {other} is held by another hub replica now (this one does not hold its Lease)"
            ));
        }
        // Front ends check too; this is the check that holds whoever asks.
        if !backend.capabilities().allows(action.verb()) {
            let kind = self.kinds.get(action.cluster()).map_or("unknown", ClusterKind::as_str);
            return Err(crate::model::action::cannot(action.cluster(), kind, action.verb()));
        }
        Ok(())
    }

    fn record(&self, action: &Action, id: &str, outcome: &str, message: &str) -> AuditRecord {
        AuditRecord {
            id: id.to_string(),
            time: Utc::now(),
            who: ACTOR.try_with(Clone::clone).unwrap_or_else(|_| self.opts.actor.clone()),
            action: action.verb().as_str().to_string(),
            target: action.target(),
            detail: action.detail(),
            outcome: outcome.to_string(),
            message: message.to_string(),
            spec: match action {
                Action::Migrate { spec, .. } if outcome == "intent" => Some(spec.clone()),
                _ => None,
            },
        }
    }

    /// Append `records` (one fsync) on a blocking thread (the state directory may be on a
    /// slow NFS home); the error is the sentence the user reads.
    async fn write(&self, records: Vec<AuditRecord>) -> Result<(), String> {
        let Some(log) = self.opts.audit.clone() else { return Ok(()) };
        if records.is_empty() {
            return Ok(());
        }
        let intent = records.iter().all(|r| r.outcome == "intent");
        let path = log.path().to_path_buf();
        let written = tokio::task::spawn_blocking(move || log.append_all(&records)).await;
        let failed = match written {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        tracing::error!(path = %path.display(), error = %failed, intent, "cannot write the audit log");
        Err(if intent {
            format!("cannot write the audit log ({}: {failed}); nothing was done", path.display())
        } else {
            format!("cannot write the audit log ({}: {failed})", path.display())
        })
    }
}
