//! A `flightdeck serve` hub as backends: one per cluster the hub serves, all sharing one
//! connection and one subscription ([`crate::backend::hub_link::Link`]).
//!
//! The hub polls; these only mirror. A cluster's snapshot is the mirror's copy (refreshed
//! whenever an update arrives, through `changes()`), its health the hub's own
//! (`relayed_health`), and every action, preview, log read and diagnosis is a call to the
//! hub, which carries it out and audits it under the caller's name.

pub mod config;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use self::config::{HubConfig, KIND};
use crate::backend::hub_link::{self as link, Link, channel};
use crate::backend::{
    Backend, BackendError, Capabilities, Diagnosis, JobAction, KindEntry, LogChunk, NodeAction, StartEstimate,
};
use crate::config::ClusterConfig;
use crate::model::{Action, Health, JobRef, LogHandle, Native, NodeRef, Snapshot, SpecFields};
use crate::spec::{Imported, JobSpec};
use crate::wire::{self, pb};

/// The registry's line: the config section, and the expansion of one entry into the hub's
/// clusters. Built without the hub (a fleet started without connecting), the entry is
/// one cluster that says why it has nothing.
pub fn kind_entry() -> KindEntry {
    KindEntry {
        config: config::kind_config(),
        build: |cluster| {
            Ok(Arc::new(crate::backend::unreached::Unreached {
                name: cluster.name.clone(),
                why: "a hub's clusters are listed when the fleet connects (Fleet::connect)".into(),
            }))
        },
        capabilities: Capabilities::default(),
        // Each served cluster carries its own kind's, relayed (`HubCluster::relayed_placement`).
        placement: crate::model::Placement::default(),
        dialects: Vec::new(),
        expand: Some(|cluster| Box::pin(expand(cluster.clone()))),
        // A hub is named (`--hub URL`, a config entry), never found on a machine.
        discover: crate::backend::registry::discovery::nothing,
    }
}

/// Connect to the hub of `cluster` and return one backend per cluster it serves (those of
/// `clusters` when the entry names some).
async fn expand(cluster: ClusterConfig) -> Result<Vec<Arc<dyn Backend>>, BackendError> {
    let typed = crate::backend::registry::typed::<HubConfig>(&cluster)?;
    let cfg = &typed.settings;
    let channel = channel::channel(&cfg.url, cfg.ca_file.as_deref(), typed.timeout)
        .map_err(|message| BackendError::Connect { target: cfg.url.to_string(), message })?;
    let link = Link::new(cfg.url.clone(), channel, cfg.token.clone());
    let stream = link.open(typed.timeout).await?;
    let names: Vec<String> = link.lock().order.clone();
    if let Some(missing) = cfg.clusters.iter().find(|n| !names.contains(n)) {
        return Err(BackendError::NotFound(format!(
            "hub {} serves no cluster named `{missing}` (it serves {})",
            cfg.url,
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        )));
    }
    tokio::spawn(link.clone().follow(Some(stream), typed.timeout));
    Ok(names
        .into_iter()
        .filter(|n| cfg.clusters.is_empty() || cfg.clusters.contains(n))
        .map(|name| Arc::new(HubCluster { name, link: link.clone(), timeout: typed.timeout }) as Arc<dyn Backend>)
        .collect())
}

/// One cluster of a hub.
pub struct HubCluster {
    name: String,
    link: Arc<Link>,
    timeout: Duration,
}

impl HubCluster {
    fn client(&self) -> link::Client {
        self.link.client.clone()
    }

    /// A call bounded by the cluster's timeout, its failure in the user's words.
    async fn call<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, BackendError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(link::from_status(&status, &self.link.url)),
            Err(_) => {
                Err(BackendError::Timeout { what: format!("{what} through the hub"), secs: self.timeout.as_secs() })
            }
        }
    }

    /// Actions carried out by the hub; one result per action, in order.
    async fn act(&self, actions: &[Action]) -> Vec<Result<String, BackendError>> {
        let request = pb::ActRequest { actions: actions.iter().map(wire::action_to_pb).collect() };
        // The hub waits for its cluster, which may take longer than a read: the bound is
        // the hub's own and generous.
        let asked = async {
            let mut stream = self.client().act(request).await?.into_inner();
            let mut outcomes = Vec::new();
            while let Some(outcome) = stream.message().await? {
                outcomes.push(outcome);
            }
            Ok::<_, tonic::Status>(outcomes)
        };
        let failed = |e: BackendError| actions.iter().map(|_| Err(e.clone())).collect();
        let outcomes = match tokio::time::timeout(self.timeout.saturating_mul(4), asked).await {
            Ok(Ok(outcomes)) => outcomes,
            Ok(Err(status)) => return failed(link::from_status(&status, &self.link.url)),
            Err(_) => {
                return failed(BackendError::Timeout {
                    what: "an action through the hub".into(),
                    secs: self.timeout.as_secs() * 4,
                });
            }
        };
        let mut results: Vec<Result<String, BackendError>> = actions
            .iter()
            .map(|_| Err(BackendError::Remote("the hub gave no outcome for this action".into())))
            .collect();
        for outcome in outcomes {
            let index = outcome.index as usize;
            if let Some(slot) = results.get_mut(index) {
                *slot = if outcome.ok { Ok(outcome.message) } else { Err(BackendError::Remote(outcome.message)) };
            }
        }
        results
    }

    async fn act_one(&self, action: Action) -> Result<String, BackendError> {
        self.act(std::slice::from_ref(&action))
            .await
            .pop()
            .unwrap_or_else(|| Err(BackendError::Remote("the hub gave no outcome".into())))
    }
}

#[async_trait]
impl Backend for HubCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> Option<crate::model::ClusterKind> {
        self.link.lock().clusters.get(&self.name).map(|c| c.info.kind.clone())
    }

    fn capabilities(&self) -> Capabilities {
        self.link.lock().clusters.get(&self.name).map(|c| c.info.capabilities).unwrap_or_default()
    }

    fn spec_fields(&self) -> SpecFields {
        self.link.lock().clusters.get(&self.name).map(|c| c.info.spec_fields.clone()).unwrap_or_default()
    }

    fn shape_fields(&self) -> crate::model::ShapeFields {
        self.link.lock().clusters.get(&self.name).map(|c| c.info.shape_fields.clone()).unwrap_or_default()
    }

    async fn snapshot(&self) -> Result<Snapshot, BackendError> {
        let mut mirror = self.link.lock();
        if let Some(why) = &mirror.down {
            return Err(BackendError::Connect { target: format!("hub {}", self.link.url), message: why.clone() });
        }
        let Some(cluster) = mirror.clusters.get_mut(&self.name) else {
            return Err(BackendError::Remote(format!("hub {} no longer serves cluster {}", self.link.url, self.name)));
        };
        match cluster.snapshot(&self.name) {
            Some(snapshot) => Ok(Arc::unwrap_or_clone(snapshot)),
            None => Err(BackendError::Remote(match &cluster.health {
                Health::Stale { error, .. } => error.clone(),
                _ => format!("the hub has no picture of {} yet", self.name),
            })),
        }
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.link.changed.subscribe())
    }

    fn relayed_health(&self) -> Option<Health> {
        let mirror = self.link.lock();
        if mirror.down.is_some() {
            return None;
        }
        mirror.clusters.get(&self.name).map(|c| c.health.clone())
    }

    fn relayed_placement(&self) -> Option<crate::model::Placement> {
        self.link.lock().clusters.get(&self.name).and_then(|c| c.info.placement.clone())
    }

    fn relayed_telemetry(&self) -> Option<crate::model::Relayed> {
        self.link.lock().clusters.get(&self.name).map(|c| c.telemetry.clone())
    }

    async fn submit(&self, spec: &JobSpec) -> Result<JobRef, BackendError> {
        let message = self.act_one(Action::Submit { cluster: self.name.clone(), spec: Box::new(spec.clone()) }).await?;
        message
            .parse::<JobRef>()
            .map_err(|_| BackendError::Remote(format!("the hub answered the submission with {message:?}, not a job")))
    }

    async fn render(&self, spec: &JobSpec) -> Result<Native, BackendError> {
        let request = pb::SpecRequest { cluster: self.name.clone(), spec_json: wire::spec_to_json(spec) };
        let native = self.call("a preview", self.client().render(request)).await?;
        let mut native = wire::native_from_pb(native).map_err(BackendError::Remote)?;
        // An older hub sends the dialect's name alone: this build's own words for it, if known.
        if native.dialect.title() == native.dialect.name()
            && let Some(known) = crate::backend::Registry::builtin().dialect_by_name(native.dialect.name())
        {
            native.dialect = known.dialect.clone();
        }
        Ok(native)
    }

    async fn job_spec(&self, job: &JobRef) -> Result<Imported, BackendError> {
        let request = pb::JobRequest { cluster: job.cluster.clone(), id: job.id.clone() };
        let imported = self.call("reading a job's spec", self.client().job_spec(request)).await?;
        wire::imported_from_pb(imported).map_err(BackendError::Remote)
    }

    async fn estimate_start(&self, spec: &JobSpec) -> Result<Option<StartEstimate>, BackendError> {
        let what = pb::estimate_request::What::SpecJson(wire::spec_to_json(spec));
        let request = pb::EstimateRequest { cluster: self.name.clone(), what: Some(what) };
        Ok(wire::estimate_from_pb(self.call("a start estimate", self.client().estimate_start(request)).await?))
    }

    async fn estimate_job_start(&self, job: &JobRef) -> Result<Option<StartEstimate>, BackendError> {
        let what = pb::estimate_request::What::JobId(job.id.clone());
        let request = pb::EstimateRequest { cluster: job.cluster.clone(), what: Some(what) };
        Ok(wire::estimate_from_pb(self.call("a start estimate", self.client().estimate_start(request)).await?))
    }

    async fn usage(
        &self,
        query: &crate::model::usage::UsageQuery,
    ) -> Result<Option<crate::model::usage::Usage>, BackendError> {
        let request = wire::usage_request_to_pb(&self.name, query);
        // The hub may read its accounting first (one `sacct`): as long as a history read.
        match tokio::time::timeout(self.timeout.saturating_mul(4), self.client().usage(request)).await {
            Ok(Ok(reply)) => wire::usage_from_pb(reply.get_ref()).map(Some).map_err(BackendError::Remote),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => Err(BackendError::Unsupported(format!(
                "the hub at {} is older and has no Usage call: counted here from what it lists",
                self.link.url
            ))),
            Ok(Err(status)) => Err(link::from_status(&status, &self.link.url)),
            Err(_) => Err(BackendError::Timeout {
                what: "usage through the hub".into(),
                secs: self.timeout.saturating_mul(4).as_secs(),
            }),
        }
    }

    async fn job_action(&self, job: &JobRef, action: JobAction) -> Result<(), BackendError> {
        self.job_action_if(job, action, None).await
    }

    async fn job_action_if(&self, job: &JobRef, action: JobAction, uid: Option<&str>) -> Result<(), BackendError> {
        let asked = Action::Job { job: job.clone(), action, uid: uid.map(str::to_string) };
        self.act_one(asked).await.map(|_| ())
    }

    /// A batch is one call: the hub carries it out as one batch of its own.
    async fn job_actions(&self, jobs: &[JobRef], action: JobAction) -> Vec<Result<(), BackendError>> {
        let actions: Vec<Action> = jobs.iter().map(|job| Action::Job { job: job.clone(), action, uid: None }).collect();
        self.act(&actions).await.into_iter().map(|r| r.map(|_| ())).collect()
    }

    async fn node_action(&self, node: &str, action: &NodeAction) -> Result<String, BackendError> {
        let node = NodeRef { cluster: self.name.clone(), name: node.to_string() };
        self.act_one(Action::Node { node, action: action.clone() }).await
    }

    async fn diagnose(&self) -> Result<Diagnosis, BackendError> {
        let request = pb::ClusterRequest { cluster: self.name.clone() };
        let mut diagnosis = wire::diagnosis_from_pb(self.call("a diagnosis", self.client().diagnose(request)).await?);
        diagnosis.transport = format!("hub {} → {}", self.link.url, diagnosis.transport);
        let mirror = self.link.lock();
        diagnosis.fact("hub user", format!("{} ({})", mirror.user, mirror.role));
        Ok(diagnosis)
    }

    async fn read_log(&self, log: &LogHandle, from: Option<u64>, max_bytes: u64) -> Result<LogChunk, BackendError> {
        let request =
            pb::ReadLogRequest { cluster: self.name.clone(), handle: log.as_str().to_string(), from, max_bytes };
        Ok(wire::log_chunk_from_pb(self.call("reading a log", self.client().read_log(request)).await?))
    }
}
