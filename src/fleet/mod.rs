//! The fleet owns the backends: one poller task per cluster, one action queue, the audit log.
//!
//! Front ends (the CLI today, the cockpit next) read the whole state through a
//! `tokio::sync::watch` channel of `Arc<FleetState>` and send [`Action`]s; they never call a
//! backend themselves.

pub mod audit;
pub mod poller;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{Notify, broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::{Backend, BackendError};
use crate::model::{Diagnosis, LogChunk, LogHandle, Native};
use crate::spec::JobSpec;

pub use self::audit::{AuditLog, AuditRecord};
// The vocabulary lives in `model`; re-exported because front ends meet it here first.
pub use crate::model::{Action, ActionOutcome, ClusterState, FleetState};

/// A backend with the polling settings the fleet needs for it.
pub struct Member {
    pub backend: Arc<dyn Backend>,
    pub kind: String,
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
}

pub struct Fleet {
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
                timeout: m.timeout,
                state: state_tx.clone(),
                wake,
            };
            if opts.poll {
                tasks.push(tokio::spawn(poller.run()));
            }
        }
        let kinds = initial_kinds;
        let runner = Runner { backends: backends.clone(), kinds, wakes: wakes.clone(), opts, outcomes: out_tx.clone() };
        tasks.push(tokio::spawn(runner.run(req_rx)));
        // The state sender lives as long as the pollers; keep one so an empty fleet still has a state.
        tasks.push(tokio::spawn(async move {
            state_tx.closed().await;
        }));
        Fleet { state: state_rx, requests: req_tx, outcomes: out_tx, wakes, backends, tasks }
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
        self.requests.try_send(Request { action, reply: None }).is_ok()
    }

    /// Queue an action and wait for its outcome.
    pub async fn perform(&self, action: Action) -> ActionOutcome {
        let (tx, rx) = oneshot::channel();
        let verb = action.verb();
        let target = action.target();
        let lost = |why: &str| ActionOutcome { verb, target: target.clone(), result: Err(why.to_string()) };
        if self.requests.send(Request { action, reply: Some(tx) }).await.is_err() {
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

struct Runner {
    backends: HashMap<String, Arc<dyn Backend>>,
    kinds: HashMap<String, String>,
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
                let outcome = me.execute(&req.action).await;
                me.audit(&req.action, &outcome).await;
                if let Some(w) = me.wakes.get(req.action.cluster()) {
                    w.notify_one();
                }
                let _ = me.outcomes.send(outcome.clone());
                if let Some(reply) = req.reply {
                    let _ = reply.send(outcome);
                }
            });
        }
    }

    async fn execute(&self, action: &Action) -> ActionOutcome {
        let mut outcome = ActionOutcome { verb: action.verb(), target: action.target(), result: Ok(String::new()) };
        if self.opts.read_only {
            outcome.result = Err(BackendError::ReadOnly.to_string());
            return outcome;
        }
        let Some(backend) = self.backends.get(action.cluster()) else {
            outcome.result = Err(format!("no cluster named `{}` is configured", action.cluster()));
            return outcome;
        };
        // Front ends check too; this is the check that holds whoever asks.
        if !backend.capabilities().allows(action.verb()) {
            let kind = self.kinds.get(action.cluster()).map_or("unknown", String::as_str);
            outcome.result = Err(crate::model::action::cannot(action.cluster(), kind, action.verb()));
            return outcome;
        }
        outcome.result = match action {
            Action::Submit { spec, .. } => backend.submit(spec).await.map(|r| r.to_string()),
            Action::Job { job, action } => backend.job_action(job, *action).await.map(|()| String::new()),
            Action::Node { node, action } => backend.node_action(&node.name, action).await,
        }
        .map_err(|e| e.to_string());
        outcome
    }

    /// Write the record before the outcome is reported (so whoever sees the outcome finds it
    /// in the log), on a blocking thread: the state directory may be on a slow NFS home.
    async fn audit(&self, action: &Action, outcome: &ActionOutcome) {
        let Some(log) = self.opts.audit.clone() else { return };
        let (status, message) = match &outcome.result {
            Ok(m) => ("ok", m.clone()),
            Err(e) if self.opts.read_only => ("refused", e.clone()),
            Err(e) => ("error", e.clone()),
        };
        let record = AuditRecord {
            time: Utc::now(),
            who: self.opts.actor.clone(),
            action: action.verb().as_str().to_string(),
            target: action.target(),
            detail: action.detail(),
            outcome: status.to_string(),
            message,
        };
        let written = tokio::task::spawn_blocking(move || log.append(&record).map_err(|e| (log, e))).await;
        if let Ok(Err((log, e))) = written {
            tracing::error!(path = %log.path().display(), error = %e, "cannot write the audit log");
        }
    }
}
