//! The fleet owns the backends: one poller task per cluster, one action queue, the audit log.
//!
//! Front ends (the CLI today, the cockpit next) read the whole state through a
//! `tokio::sync::watch` channel of `Arc<FleetState>` and send [`Action`]s; they never call a
//! backend themselves.

pub mod audit;
pub mod build;
pub mod poller;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use std::panic::AssertUnwindSafe;

use chrono::Utc;
use futures_util::FutureExt;
use tokio::sync::{Notify, broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::{Backend, BackendError};
use crate::model::{ClusterKind, Diagnosis, LogChunk, LogHandle, Native};
use crate::spec::JobSpec;

pub use self::audit::{AuditLog, AuditRecord};
// The vocabulary lives in `model`; re-exported because front ends meet it here first.
pub use crate::model::{Action, ActionOutcome, ClusterState, FleetState};

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

struct Request {
    action: Action,
    reply: Option<oneshot::Sender<ActionOutcome>>,
    /// Its entry in the fleet's in-flight list, cleared when the outcome is out.
    id: u64,
}

pub struct Fleet {
    in_flight: Arc<InFlight>,
    state: watch::Receiver<Arc<FleetState>>,
    requests: mpsc::Sender<Request>,
    outcomes: broadcast::Sender<ActionOutcome>,
    wakes: HashMap<String, Arc<Notify>>,
    backends: HashMap<String, Arc<dyn Backend>>,
    tasks: Vec<JoinHandle<()>>,
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
        let initial = FleetState {
            clusters: members
                .iter()
                .map(|m| ClusterState {
                    capabilities: m.backend.capabilities(),
                    spec_fields: m.backend.spec_fields(),
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
        let mut tasks = Vec::new();
        for (index, m) in members.into_iter().enumerate() {
            let wake = Arc::new(Notify::new());
            wakes.insert(m.backend.name().to_string(), wake.clone());
            backends.insert(m.backend.name().to_string(), m.backend.clone());
            let poller = poller::Poller {
                index,
                backend: m.backend,
                interval: m.refresh,
                timeout: poller::refresh_bound(m.timeout),
                state: state_tx.clone(),
                wake,
            };
            if opts.poll {
                tasks.push(tokio::spawn(poller.run()));
            }
        }
        let kinds = initial_kinds;
        let in_flight = Arc::new(InFlight::default());
        let runner = Runner {
            in_flight: in_flight.clone(),
            backends: backends.clone(),
            kinds,
            wakes: wakes.clone(),
            opts,
            outcomes: out_tx.clone(),
        };
        tasks.push(tokio::spawn(runner.run(req_rx)));
        // The state sender lives as long as the pollers; keep one so an empty fleet still has a state.
        tasks.push(tokio::spawn(async move {
            state_tx.closed().await;
        }));
        Fleet { in_flight, state: state_rx, requests: req_tx, outcomes: out_tx, wakes, backends, tasks }
    }

    pub fn state(&self) -> Arc<FleetState> {
        self.state.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Arc<FleetState>> {
        self.state.clone()
    }

    /// Every action's outcome, as it happens (the cockpit shows them as toasts).
    pub fn outcomes(&self) -> broadcast::Receiver<ActionOutcome> {
        self.outcomes.subscribe()
    }

    /// Queue an action; its outcome arrives on [`Fleet::outcomes`].
    pub fn request(&self, action: Action) -> bool {
        let id = self.in_flight.add(&action);
        let sent = self.requests.try_send(Request { action, reply: None, id }).is_ok();
        if !sent {
            self.in_flight.done(id);
        }
        sent
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
        let (tx, rx) = oneshot::channel();
        let verb = action.verb();
        let target = action.target();
        let lost = |why: &str| ActionOutcome { verb, target: target.clone(), result: Err(why.to_string()) };
        let id = self.in_flight.add(&action);
        if self.requests.send(Request { action, reply: Some(tx), id }).await.is_err() {
            self.in_flight.done(id);
            return lost("the fleet has stopped");
        }
        rx.await.unwrap_or_else(|_| lost("the fleet dropped the action"))
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

    /// Read one of a job's output streams by its handle, on the cluster that made the handle
    /// (see [`Backend::read_log`]), at most `max_bytes`. A read, not an action: not audited,
    /// allowed read-only.
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
    wakes: HashMap<String, Arc<Notify>>,
    opts: FleetOptions,
    outcomes: broadcast::Sender<ActionOutcome>,
}

impl Runner {
    async fn run(self, mut requests: mpsc::Receiver<Request>) {
        let me = Arc::new(self);
        while let Some(req) = requests.recv().await {
            // Each action runs on its own task: a hung cluster must not hold up the others.
            let me = me.clone();
            tokio::spawn(async move {
                let outcome = me.carry_out(&req.action).await;
                if let Some(w) = me.wakes.get(req.action.cluster()) {
                    w.notify_one();
                }
                let _ = me.outcomes.send(outcome.clone());
                if let Some(reply) = req.reply {
                    let _ = reply.send(outcome);
                }
                me.in_flight.done(req.id);
            });
        }
    }

    /// Refuse what may not happen; else record the intent (on disk before anything is
    /// asked of the cluster), act, and record the outcome.
    async fn carry_out(&self, action: &Action) -> ActionOutcome {
        let outcome = |result| ActionOutcome { verb: action.verb(), target: action.target(), result };
        if let Err(why) = self.refusal(action) {
            self.audit(action, "", "refused", &why).await.ok();
            return outcome(Err(why));
        }
        let id = audit::new_id();
        if let Err(e) = self.audit(action, &id, "intent", "").await {
            return outcome(Err(e));
        }
        let mut result = self.execute(action).await;
        let (status, message) = match &result {
            Ok(m) => ("ok", m.clone()),
            Err(e) => ("error", e.clone()),
        };
        if let Err(e) = self.audit(action, &id, status, &message).await {
            // Done, but the log does not say how it ended: the user must know.
            let note = format!("(done, but {e})");
            match &mut result {
                Ok(m) if m.is_empty() => *m = note,
                Ok(m) | Err(m) => *m = format!("{m} {note}"),
            }
        }
        outcome(result)
    }

    /// Why the fleet will not try `action` at all.
    fn refusal(&self, action: &Action) -> Result<(), String> {
        if self.opts.read_only {
            return Err(BackendError::ReadOnly.to_string());
        }
        let Some(backend) = self.backends.get(action.cluster()) else {
            return Err(format!("no cluster named `{}` is configured", action.cluster()));
        };
        // Front ends check too; this is the check that holds whoever asks.
        if !backend.capabilities().allows(action.verb()) {
            let kind = self.kinds.get(action.cluster()).map_or("unknown", ClusterKind::as_str);
            return Err(crate::model::action::cannot(action.cluster(), kind, action.verb()));
        }
        Ok(())
    }

    /// Ask the backend; a panic in it is an internal error, never a lost answer.
    async fn execute(&self, action: &Action) -> Result<String, String> {
        let Some(backend) = self.backends.get(action.cluster()) else {
            return Err(format!("no cluster named `{}` is configured", action.cluster()));
        };
        let asked = async {
            match action {
                Action::Submit { spec, .. } => backend.submit(spec).await.map(|r| r.to_string()),
                Action::Job { job, action } => backend.job_action(job, *action).await.map(|()| String::new()),
                Action::Node { node, action } => backend.node_action(&node.name, action).await,
            }
        };
        match AssertUnwindSafe(asked).catch_unwind().await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(panic) => Err(BackendError::Internal(poller::panic_text(panic.as_ref())).to_string()),
        }
    }

    /// Append one record on a blocking thread (the state directory may be on a slow NFS
    /// home); the error is the sentence the user reads.
    async fn audit(&self, action: &Action, id: &str, outcome: &str, message: &str) -> Result<(), String> {
        let Some(log) = self.opts.audit.clone() else { return Ok(()) };
        let record = AuditRecord {
            id: id.to_string(),
            time: Utc::now(),
            who: self.opts.actor.clone(),
            action: action.verb().as_str().to_string(),
            target: action.target(),
            detail: action.detail(),
            outcome: outcome.to_string(),
            message: message.to_string(),
        };
        let path = log.path().to_path_buf();
        let written = tokio::task::spawn_blocking(move || log.append(&record)).await;
        let failed = match written {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        tracing::error!(path = %path.display(), error = %failed, outcome, "cannot write the audit log");
        Err(if outcome == "intent" {
            format!("cannot write the audit log ({}: {failed}); nothing was done", path.display())
        } else {
            format!("cannot write the audit log ({}: {failed})", path.display())
        })
    }
}
