//! One connection to a hub: the subscription kept alive (reconnecting with the versions it
//! holds, so a reconnect costs only what was missed), the clusters it mirrors, and the
//! calls every cluster of the hub shares.
//!
//! Shared below the kinds: the `hub` kind's clusters read the mirror, and a hub replica
//! (`serve`) relays a peer through the same link, so neither names the other.

pub mod channel;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use self::channel::HubUrl;
use crate::backend::BackendError;
use crate::backend::http::TokenSource;
use crate::model::{Health, Job, Node, Snapshot};
use crate::wire::{self, ClusterInfo, pb};

/// The largest message the client sends or accepts.
pub use crate::wire::MAX_MESSAGE;

/// Reconnect back-off: from the first to the last, doubling.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_LAST: Duration = Duration::from_secs(15);

pub type Client = pb::hub_client::HubClient<InterceptedService<Channel, Bearer>>;

/// A failed call in the user's words: the hub's own message, or for a connection that
/// failed, its whole chain of causes (`tcp connect error: Connection refused`).
pub fn from_status(status: &tonic::Status, hub: &HubUrl) -> BackendError {
    if status.code() == tonic::Code::Unavailable {
        return BackendError::Connect { target: hub.to_string(), message: channel::status_text(status) };
    }
    wire::error_from_status(status, &hub.to_string())
}

/// Puts the bearer token on every call, read afresh each time (a rotated token file is
/// picked up without a restart). The token never appears in an error.
#[derive(Clone)]
pub struct Bearer(Option<TokenSource>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let Some(source) = &self.0 else { return Ok(request) };
        let secret = source
            .read()
            .map_err(|why| tonic::Status::failed_precondition(format!("hub: cannot read the token: {why}")))?;
        let value = format!("Bearer {}", secret.expose()).parse().map_err(|_| {
            tonic::Status::failed_precondition(format!(
                "hub: the token from {} is not a header value",
                source.describe()
            ))
        })?;
        request.metadata_mut().insert("authorization", value);
        Ok(request)
    }
}

/// One cluster as the hub last described it.
#[derive(Debug)]
pub struct Mirrored {
    pub version: u64,
    pub info: ClusterInfo,
    pub health: Health,
    pub meta: Option<pb::SnapshotMeta>,
    pub jobs: BTreeMap<String, Job>,
    pub nodes: BTreeMap<String, Node>,
    /// A full state is arriving in chunks: the cluster is not whole yet.
    pub partial: bool,
    /// The cluster's GPU telemetry as the hub joined it.
    pub telemetry: crate::model::Relayed,
    /// The hub's refresh attempts and the last one's duration (a replica relaying it shows them).
    pub attempts: u64,
    pub last_refresh_ms: Option<u64>,
    /// The snapshot built at `version`, shared until the next change.
    built: Option<(u64, Arc<Snapshot>)>,
}

impl Mirrored {
    fn new() -> Self {
        Mirrored {
            version: 0,
            info: wire::info_from_pb(pb::ClusterInfo::default()),
            health: Health::Connecting,
            meta: None,
            jobs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            partial: false,
            telemetry: crate::model::Relayed::default(),
            attempts: 0,
            last_refresh_ms: None,
            built: None,
        }
    }

    /// The cluster's snapshot, once the hub has one for it.
    pub fn snapshot(&mut self, name: &str) -> Option<Arc<Snapshot>> {
        if self.partial {
            // Half a cluster is no picture: the last whole one until the rest arrives.
            return self.built.as_ref().map(|(_, built)| built.clone());
        }
        let meta = self.meta.clone()?;
        if let Some((version, built)) = &self.built
            && *version == self.version
        {
            return Some(built.clone());
        }
        let jobs = self.jobs.values().cloned().collect();
        let nodes = self.nodes.values().cloned().collect();
        let built = Arc::new(wire::snapshot_from_pb(name, meta, jobs, nodes));
        self.built = Some((self.version, built.clone()));
        Some(built)
    }

    /// Apply one update; `false` when it does not follow the version held (the client then
    /// asks for everything again).
    fn apply(&mut self, name: &str, update: pb::ClusterUpdate) -> bool {
        if !update.replace && update.base_version != self.version {
            return update.version <= self.version;
        }
        if update.replace {
            self.jobs.clear();
            self.nodes.clear();
            self.meta = None;
        }
        if let Some(info) = update.info {
            self.info = wire::info_from_pb(info);
        }
        if let Some(health) = update.health {
            self.health = wire::health_from_pb(health);
        }
        if let Some(meta) = update.meta {
            self.meta = Some(meta);
        }
        if let Some(t) = update.telemetry {
            self.telemetry = wire::telemetry_from_pb(self.telemetry.gpu_use.as_deref(), t);
        }
        for id in update.removed_jobs {
            self.jobs.remove(&id);
        }
        for job in update.jobs {
            let job = wire::job_from_pb(name, job);
            self.jobs.insert(job.job_ref.id.clone(), job);
        }
        for node in update.removed_nodes {
            self.nodes.remove(&node);
        }
        for node in update.nodes {
            let node = wire::node_from_pb(name, node);
            self.nodes.insert(node.name.clone(), node);
        }
        self.attempts = update.attempts;
        self.last_refresh_ms = update.last_refresh_ms;
        self.version = update.version;
        self.partial = update.more;
        true
    }
}

/// What the client holds of the hub.
#[derive(Debug, Default)]
pub struct Mirror {
    pub epoch: u64,
    pub role: String,
    pub user: String,
    pub read_only: bool,
    pub clusters: HashMap<String, Mirrored>,
    /// The cluster names in the hub's order.
    pub order: Vec<String>,
    /// Why the link is down (`None` while the subscription runs).
    pub down: Option<String>,
}

impl Mirror {
    /// Fold one message in; `false` when the client must ask for everything again.
    pub fn apply(&mut self, update: pb::FleetUpdate) -> bool {
        if update.full {
            self.epoch = update.epoch;
            self.role = update.role;
            self.user = update.user;
            let listed: Vec<String> = update.clusters.iter().map(|c| c.name.clone()).collect();
            self.clusters.retain(|name, _| listed.contains(name));
            self.order.clear();
            for name in listed {
                if !self.order.contains(&name) {
                    self.order.push(name);
                }
            }
        } else if update.epoch != self.epoch {
            return false;
        }
        self.read_only = update.read_only;
        let mut in_step = true;
        for cluster in update.clusters {
            let name = cluster.name.clone();
            let mirrored = self.clusters.entry(name.clone()).or_insert_with(Mirrored::new);
            in_step &= mirrored.apply(&name, cluster);
        }
        in_step
    }

    /// Whether a full state is still arriving for some cluster.
    pub fn partial(&self) -> bool {
        self.clusters.values().any(|c| c.partial)
    }

    /// What a resubscription asks for: the epoch and each cluster's version.
    pub fn resume(&self) -> pb::SubscribeRequest {
        pb::SubscribeRequest {
            epoch: self.epoch,
            versions: self.clusters.iter().map(|(name, c)| (name.clone(), c.version)).collect(),
        }
    }
}

/// The connection to one hub, shared by every cluster it serves.
pub struct Link {
    pub url: HubUrl,
    pub client: Client,
    pub mirror: Mutex<Mirror>,
    /// Bumped on every update (and when the link goes down or comes back): the clusters'
    /// pollers refresh from the mirror then.
    pub changed: watch::Sender<u64>,
}

impl Link {
    pub fn new(url: HubUrl, channel: Channel, token: Option<TokenSource>) -> Arc<Link> {
        let client = pb::hub_client::HubClient::with_interceptor(channel, Bearer(token))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let (changed, _) = watch::channel(0);
        Arc::new(Link { url, client, mirror: Mutex::new(Mirror::default()), changed })
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Mirror> {
        self.mirror.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Subscribe and wait for the first message (the hub's clusters), within `timeout`;
    /// the stream, to be kept by [`Link::follow`].
    pub async fn open(&self, timeout: Duration) -> Result<tonic::Streaming<pb::FleetUpdate>, BackendError> {
        let resume = self.lock().resume();
        // The first message and, for a full state sent in chunks, the rest of it: the mirror
        // shows a cluster only once whole, so applying as they come is safe.
        let opened = async {
            let mut stream = self.client.clone().subscribe(resume).await?.into_inner();
            let mut in_step = true;
            let mut first = true;
            while first || self.lock().partial() {
                let Some(update) = stream.message().await? else { return Ok(None) };
                in_step &= self.lock().apply(update);
                first = false;
            }
            Ok::<_, tonic::Status>(Some((stream, in_step)))
        };
        let (stream, in_step) = match tokio::time::timeout(timeout, opened).await {
            Err(_) => {
                return Err(BackendError::Timeout {
                    what: format!("subscribing to the hub at {}", self.url),
                    secs: timeout.as_secs(),
                });
            }
            Ok(Err(status)) => return Err(from_status(&status, &self.url)),
            Ok(Ok(None)) => {
                return Err(BackendError::Connect {
                    target: self.url.to_string(),
                    message: "the hub closed the subscription".into(),
                });
            }
            Ok(Ok(Some(opened))) => opened,
        };
        let mut mirror = self.lock();
        if !in_step {
            // Out of step from the first message: ask again from nothing.
            mirror.epoch = 0;
        }
        mirror.down = None;
        drop(mirror);
        self.bump();
        Ok(stream)
    }

    /// Keep the subscription for as long as anyone else holds the link: apply every update,
    /// and after a failure reconnect with back-off, resuming from the versions held.
    pub async fn follow(self: Arc<Self>, mut stream: Option<tonic::Streaming<pb::FleetUpdate>>, timeout: Duration) {
        let mut delay = RETRY_FIRST;
        loop {
            if let Some(mut live) = stream.take() {
                delay = RETRY_FIRST;
                let why = loop {
                    match live.message().await {
                        Ok(Some(_)) if Arc::strong_count(&self) == 1 => return,
                        Ok(Some(update)) => {
                            let in_step = self.lock().apply(update);
                            self.bump();
                            if !in_step {
                                // Resubscribe from nothing: the hub sends everything in full.
                                self.lock().epoch = 0;
                                break "out of step with the hub; asking for everything again".to_string();
                            }
                        }
                        Ok(None) => break "the hub ended the subscription".to_string(),
                        Err(status) => break from_status(&status, &self.url).to_string(),
                    }
                };
                tracing::warn!(hub = %self.url, reason = %why, "hub subscription lost");
                self.lock().down = Some(why);
                self.bump();
            }
            // Nobody else holds the link: its clusters' fleet is gone.
            if Arc::strong_count(&self) == 1 {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(RETRY_LAST);
            match self.open(timeout).await {
                Ok(live) => stream = Some(live),
                Err(e) => {
                    self.lock().down = Some(e.to_string());
                    self.bump();
                }
            }
        }
    }
}
