//! The `flightdeck.v1.Hub` service over one fleet: every call authenticated (the caller is
//! in the request's extensions, put there by `auth::interceptor`), every action carried out
//! by the fleet and audited there under the caller's name, every read checked against the
//! caller (`access`) and audited too.
//!
//! The `flightdeck.v1.Hub` service (in a replica, `Act` and `ReadLog` on clusters
//! another replica holds go there through `forward`; a viewer's change is refused where it asked):
//! Subscribe, Act (a viewer's request refused with `PERMISSION_DENIED` and audited as one refused
//! record, however many actions it carries; an operator's carried out by the fleet as one batch,
//! audited as `USER@hub`), ReadLog (only a handle the hub put on a job, ≤ 4 MiB), Diagnose, Render,
//! JobSpec, EstimateStart, Usage (a viewer's rows their own, the total everyone's; `usage`); every read admitted by `access` and written to the audit log
//! (`Fleet::audit`) before it is answered.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use tokio::sync::broadcast;
use tonic::{Request, Response, Status};

use super::access::{self, Read};
use super::auth::{self, Caller};
use super::diagnose_cache::DiagnoseCache;
use super::forward::{self, Asker, Forwarder, Route};
use super::limits::{Seat, SubscriberLimits, Subscribers};
use super::metrics::{Metrics, SubscriberGuard};
use super::publish::{Messages, Publisher};
use super::usage::UsageCache;
use crate::fleet::Fleet;
use crate::model::{JobRef, LogHandle};
use crate::wire::{self, pb};

/// The most a single `ReadLog` returns, whatever the client asks: the cockpit's tail and
/// `flightdeck logs` ask far less.
pub const LOG_READ_MAX: u64 = 4 * 1024 * 1024;

pub struct HubService {
    fleet: Arc<Fleet>,
    publisher: Arc<Publisher>,
    metrics: Arc<Metrics>,
    subscribers: Arc<Subscribers>,
    diagnoses: DiagnoseCache,
    /// Each cluster's accounting read for `Usage`, shared by every caller a short while.
    usage: UsageCache,
    /// A replica's: calls on clusters another replica holds go there.
    forward: Option<Arc<Forwarder>>,
}

impl HubService {
    /// The service with the default subscription limits.
    pub fn new(fleet: Arc<Fleet>, publisher: Arc<Publisher>, metrics: Arc<Metrics>) -> Self {
        Self::with_limits(fleet, publisher, metrics, SubscriberLimits::default())
    }

    pub fn with_limits(
        fleet: Arc<Fleet>,
        publisher: Arc<Publisher>,
        metrics: Arc<Metrics>,
        limits: SubscriberLimits,
    ) -> Self {
        let subscribers = Subscribers::new(limits);
        Self {
            fleet,
            publisher,
            metrics,
            subscribers,
            diagnoses: DiagnoseCache::default(),
            usage: UsageCache::default(),
            forward: None,
        }
    }

    /// A replica's service: `Act` and `ReadLog` on a cluster another replica holds are
    /// forwarded there, and calls other replicas forward are taken on behalf of their caller.
    pub fn forwarding(self, forward: Option<Arc<Forwarder>>) -> Self {
        Self { forward, ..self }
    }

    /// Who asks: the caller, or for a call another replica forwarded, the caller it names.
    fn asker<T>(&self, request: &Request<T>, caller: Caller) -> Result<Asker, Status> {
        match &self.forward {
            Some(forward) => forward.asker(request, caller),
            None => Ok(Asker { caller, via: None }),
        }
    }

    /// Where a call on `cluster` from `asker` is carried out: a call forwarded once is
    /// carried out here (or refused by the fleet's gate), never forwarded again.
    fn route(&self, asker: &Asker, cluster: &str) -> Route {
        match &self.forward {
            Some(forward) if asker.via.is_none() => forward.route(cluster),
            _ => Route::Here,
        }
    }

    /// Where `action` is carried out: as [`HubService::route`] says for its cluster, unless it
    /// is a migration between clusters two replicas hold, which is refused here by name.
    fn route_action(&self, asker: &Asker, action: &crate::model::Action) -> Route {
        if let (Some(forward), crate::model::Action::Migrate { source, to, .. }) = (&self.forward, action)
            && let Some(why) = forward.across_replicas(source, to)
        {
            return Route::Refused(why);
        }
        self.route(asker, action.cluster())
    }

    /// The replica a read of `cluster` goes to, with the way there; `None`: answered here.
    fn owner_of(&self, asker: &Asker, cluster: &str) -> Option<(&Forwarder, super::lease::Identity)> {
        match (self.route(asker, cluster), &self.forward) {
            (Route::Owner(owner), Some(forward)) => Some((forward, owner)),
            _ => None,
        }
    }

    /// The caller of an authenticated request, counted.
    fn caller<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        self.metrics.rpc();
        auth::caller(request)
    }

    /// Put a read on the audit log, then let it through or refuse it (`allowed` is the
    /// rule's answer). An allowed read whose record cannot be written is not answered:
    /// nothing leaves the hub that the log does not know of.
    async fn admit(
        &self,
        caller: &Caller,
        read: Read,
        target: &str,
        detail: Option<String>,
        allowed: Result<(), String>,
    ) -> Result<(), Status> {
        self.admit_as(None, caller, read, target, detail, allowed).await
    }

    /// [`HubService::admit`], the record naming `who` when given (a forwarded call's asker).
    async fn admit_as(
        &self,
        who: Option<String>,
        caller: &Caller,
        read: Read,
        target: &str,
        detail: Option<String>,
        allowed: Result<(), String>,
    ) -> Result<(), Status> {
        let refused = allowed.as_ref().err().map(String::as_str);
        let mut record = access::record(caller, read, target, detail, refused);
        if let Some(who) = who {
            record.who = who;
        }
        let written = self.fleet.audit(vec![record]).await;
        if let Err(why) = allowed {
            self.metrics.refusal();
            tracing::warn!(user = %caller.user, read = read.as_str(), target, "refused: {why}");
            if let Err(e) = written {
                tracing::error!("{e}");
            }
            return Err(Status::permission_denied(why));
        }
        written.map_err(|e| Status::unavailable(format!("{e}; the read was not answered")))
    }

    /// [`HubService::admit`] for a read of one job's data, by the rule of `access`.
    async fn admit_job(&self, asker: &Asker, read: Read, job: &JobRef) -> Result<(), Status> {
        let allowed = access::may_read_job(&asker.caller, &self.fleet.state(), job);
        self.admit_as(forwarded_by(asker), &asker.caller, read, &job.to_string(), None, allowed).await
    }
}

/// The one audit record of a refused request of `actions`: every verb it asked (each
/// once), its first target and how many more.
fn refused_request(caller: &Caller, actions: &[crate::model::Action], why: &str) -> crate::fleet::AuditRecord {
    let mut verbs: Vec<&str> = Vec::new();
    for action in actions {
        let verb = action.verb().as_str();
        if !verbs.contains(&verb) {
            verbs.push(verb);
        }
    }
    let target = match actions {
        [] => String::new(),
        [one] => one.target(),
        [first, rest @ ..] => format!("{} and {} more", first.target(), rest.len()),
    };
    crate::fleet::AuditRecord {
        id: String::new(),
        time: chrono::Utc::now(),
        who: actor(caller),
        action: verbs.join(","),
        target,
        detail: (actions.len() > 1).then(|| format!("{} actions in one request", actions.len())),
        outcome: "refused".into(),
        message: why.to_string(),
        spec: None,
    }
}

/// Every action of `actions` failed for `why`, indexed from 0.
fn failed(actions: &[crate::model::Action], why: &str) -> Vec<pb::ActOutcome> {
    actions
        .iter()
        .enumerate()
        .map(|(i, a)| pb::ActOutcome {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            verb: a.verb().as_str().to_string(),
            target: a.target(),
            ok: false,
            message: why.to_string(),
        })
        .collect()
}

/// How the audit log names a forwarded call's asker (`alice@hub via hub-b`); `None` for a
/// direct caller, named as usual.
fn forwarded_by(asker: &Asker) -> Option<String> {
    asker.via.is_some().then(|| asker.actor())
}

/// How the audit log names a hub's caller.
pub fn actor(caller: &Caller) -> String {
    format!("{}@hub", caller.user)
}

type Feed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// One subscriber's stream: its first message, then every update; a subscriber that fell
/// more than the backlog behind gets a fresh full state in place of what it missed.
struct Subscription {
    /// The first state's messages, still to send (in chunks) before any update.
    first: Messages,
    updates: broadcast::Receiver<Arc<pb::FleetUpdate>>,
    publisher: Arc<Publisher>,
    caller: Caller,
    metrics: Arc<Metrics>,
    closed: Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    _counted: SubscriberGuard,
    /// Its place among the subscriptions the hub holds, given back when it ends.
    _seat: Seat,
}

impl Subscription {
    async fn next(mut self) -> Option<(Result<pb::FleetUpdate, Status>, Self)> {
        if let Some(first) = self.first.next() {
            self.metrics.sent();
            return Some((Ok(first), self));
        }
        let next = tokio::select! {
            next = self.updates.recv() => next,
            () = &mut self.closed => return None,
        };
        match next {
            Ok(update) => {
                self.metrics.sent();
                Some((Ok((*update).clone()), self))
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let (full, updates) = self.publisher.resync(&self.caller);
                self.updates = updates;
                self.first = full.messages();
                self.metrics.resynced();
                self.metrics.sent();
                let first = self.first.next().unwrap_or_default();
                Some((Ok(first), self))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

#[tonic::async_trait]
impl pb::hub_server::Hub for HubService {
    type SubscribeStream = Feed<pb::FleetUpdate>;
    type ActStream = Feed<pb::ActOutcome>;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let caller = self.caller(&request)?;
        let seat = self.subscribers.admit(&caller.user)?;
        // Every cluster's jobs, as any queue listing shows them: allowed to every caller,
        // and on record like every read.
        self.admit(&caller, Read::Subscribe, "all clusters", None, Ok(())).await?;
        let (first, updates) = self.publisher.subscribe(request.get_ref(), &caller);
        let subscription = Subscription {
            first: first.messages(),
            updates,
            publisher: self.publisher.clone(),
            caller,
            metrics: self.metrics.clone(),
            closed: Box::pin(self.publisher.closed()),
            _counted: Metrics::subscribed(&self.metrics),
            _seat: seat,
        };
        let stream = futures_util::stream::unfold(subscription, Subscription::next);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn act(&self, request: Request<pb::ActRequest>) -> Result<Response<Self::ActStream>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let caller = asker.caller.clone();
        let asked = request.into_inner().actions;
        let mut actions = Vec::with_capacity(asked.len());
        for (i, action) in asked.iter().cloned().enumerate() {
            let action =
                wire::action_from_pb(action).map_err(|e| Status::invalid_argument(format!("action {i}: {e}")))?;
            actions.push(action);
        }
        if !caller.role.may_act() {
            let verb = actions.first().map_or("acting", |a| a.verb().as_str());
            let why =
                format!("permission denied: {} is a {}; {verb} needs the operator role", caller.user, caller.role);
            self.metrics.refusal();
            tracing::warn!(user = %caller.user, actions = actions.len(), "refused: a viewer asked for a change");
            // One record for the request, however many actions it carries: a viewer must
            // not be able to fill the log (and its disk) one refused action at a time.
            let mut record = refused_request(&caller, &actions, &why);
            record.who = asker.actor();
            if let Err(e) = self.fleet.audit(vec![record]).await {
                tracing::error!("{e}");
            }
            return Err(Status::permission_denied(why));
        }
        let groups = forward::split(&actions, |a| self.route_action(&asker, a));
        let outcomes = if groups.iter().all(|(to, _)| *to == Route::Here) {
            let outcome = self.fleet.perform_batch_as(&asker.actor(), actions).await;
            outcome.outcomes.iter().enumerate().map(|(i, o)| wire::outcome_to_pb(i, o)).collect()
        } else {
            self.act_spread(&asker, &asked, actions, groups).await
        };
        let outcomes: Vec<Result<pb::ActOutcome, Status>> = outcomes.into_iter().map(Ok).collect();
        Ok(Response::new(Box::pin(futures_util::stream::iter(outcomes))))
    }

    async fn read_log(&self, request: Request<pb::ReadLogRequest>) -> Result<Response<pb::LogChunk>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let caller = asker.caller.clone();
        let ask = request.into_inner();
        if let Some((forward, owner)) = self.owner_of(&asker, &ask.cluster) {
            // The owner holds the job's picture and its log: it checks, reads and audits.
            let read = forward.call(&owner, &asker, ask, |mut c, r| async move { c.read_log(r).await });
            return read.await.map(Response::new);
        }
        let who = forwarded_by(&asker);
        // Only a handle the hub itself put on a job is read, and with what the hub knows of
        // it (whose file it must be): a client cannot name a path of its own.
        let Some((handle, job)) = self.known_handle(&ask.cluster, &ask.handle) else {
            let why = format!("no job on cluster {} has the log handle {}", ask.cluster, ask.handle);
            let target = format!("{}:{}", ask.cluster, ask.handle);
            let mut record = access::record(&caller, Read::ReadLog, &target, None, Some(&why));
            if let Some(who) = &who {
                record.who = who.clone();
            }
            if let Err(e) = self.fleet.audit(vec![record]).await {
                tracing::error!("{e}");
            }
            return Err(Status::not_found(why));
        };
        let allowed = access::may_read_job(&caller, &self.fleet.state(), &job);
        self.admit_as(who, &caller, Read::ReadLog, &job.to_string(), None, allowed).await?;
        let max = ask.max_bytes.clamp(1, LOG_READ_MAX);
        let chunk =
            self.fleet.read_log(&ask.cluster, &handle, ask.from, max).await.map_err(|e| wire::status_from_error(&e))?;
        Ok(Response::new(wire::log_chunk_to_pb(&chunk)))
    }

    async fn diagnose(&self, request: Request<pb::ClusterRequest>) -> Result<Response<pb::Diagnosis>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let cluster = request.into_inner().cluster;
        if let Some((forward, owner)) = self.owner_of(&asker, &cluster) {
            // Only the holder reaches the cluster: it asks, and audits.
            let ask = pb::ClusterRequest { cluster };
            let answer = forward.call(&owner, &asker, ask, |mut c, r| async move { c.diagnose(r).await });
            return answer.await.map(Response::new);
        }
        let caller = &asker.caller;
        // The cluster's connection and cost facts: no job's data, so any caller's.
        self.admit_as(forwarded_by(&asker), caller, Read::Diagnose, &cluster, None, Ok(())).await?;
        let ask = async {
            let diagnosis = self.fleet.diagnose(&cluster).await.map_err(|e| wire::status_from_error(&e))?;
            Ok(wire::diagnosis_to_pb(&diagnosis))
        };
        // An operator's doctor asks afresh; viewers share one answer per refresh interval
        // (only for clusters the hub serves, so the cache holds one entry per cluster).
        let answer = match self.fleet.refresh_interval(&cluster) {
            Some(every) if !caller.role.may_act() => self.diagnoses.get(&cluster, every, ask).await,
            _ => ask.await,
        };
        Ok(Response::new(answer?))
    }

    async fn render(&self, request: Request<pb::SpecRequest>) -> Result<Response<pb::Native>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let ask = request.into_inner();
        let spec = wire::spec_from_json(&ask.spec_json).map_err(Status::invalid_argument)?;
        if let Some((forward, owner)) = self.owner_of(&asker, &ask.cluster) {
            return forward
                .call(&owner, &asker, ask, |mut c, r| async move { c.render(r).await })
                .await
                .map(Response::new);
        }
        // The caller's own spec in the cluster's dialect: nobody else's data.
        let (who, detail) = (forwarded_by(&asker), Some(spec.name.clone()));
        self.admit_as(who, &asker.caller, Read::Render, &ask.cluster, detail, Ok(())).await?;
        let native = self.fleet.render(&ask.cluster, &spec).await.map_err(|e| wire::status_from_error(&e))?;
        Ok(Response::new(wire::native_to_pb(&native)))
    }

    async fn job_spec(&self, request: Request<pb::JobRequest>) -> Result<Response<pb::ImportedSpec>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let ask = request.into_inner();
        if let Some((forward, owner)) = self.owner_of(&asker, &ask.cluster) {
            // The owner's picture says whose the job is: it checks, reads and audits.
            let read = forward.call(&owner, &asker, ask, |mut c, r| async move { c.job_spec(r).await });
            return read.await.map(Response::new);
        }
        let job = JobRef { cluster: ask.cluster, id: ask.id };
        self.admit_job(&asker, Read::JobSpec, &job).await?;
        let imported = self.fleet.job_spec(&job).await.map_err(|e| wire::status_from_error(&e))?;
        Ok(Response::new(wire::imported_to_pb(&imported)))
    }

    async fn estimate_start(
        &self,
        request: Request<pb::EstimateRequest>,
    ) -> Result<Response<pb::EstimateReply>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let ask = request.into_inner();
        if let Some((forward, owner)) = self.owner_of(&asker, &ask.cluster) {
            let answer = forward.call(&owner, &asker, ask, |mut c, r| async move { c.estimate_start(r).await });
            return answer.await.map(Response::new);
        }
        let estimate = match ask.what {
            Some(pb::estimate_request::What::SpecJson(text)) => {
                let spec = wire::spec_from_json(&text).map_err(Status::invalid_argument)?;
                // A spec of the caller's own: anyone may ask when it would start.
                let (who, detail) = (forwarded_by(&asker), Some(spec.name.clone()));
                self.admit_as(who, &asker.caller, Read::EstimateStart, &ask.cluster, detail, Ok(())).await?;
                self.fleet.estimate_start(&ask.cluster, &spec).await
            }
            Some(pb::estimate_request::What::JobId(id)) => {
                let job = JobRef { cluster: ask.cluster, id };
                self.admit_job(&asker, Read::EstimateStart, &job).await?;
                self.fleet.estimate_job_start(&job).await
            }
            None => return Err(Status::invalid_argument("an estimate needs a spec or a job id")),
        };
        let estimate = estimate.map_err(|e| wire::status_from_error(&e))?;
        Ok(Response::new(wire::estimate_to_pb(estimate.as_ref())))
    }

    async fn usage(&self, request: Request<pb::UsageRequest>) -> Result<Response<pb::UsageReply>, Status> {
        let caller = self.caller(&request)?;
        let asker = self.asker(&request, caller)?;
        let ask = request.into_inner();
        let (cluster, query) = wire::usage_request_from_pb(&ask).map_err(Status::invalid_argument)?;
        if let Some((forward, owner)) = self.owner_of(&asker, &cluster) {
            // The holder reads the cluster's accounting, once for all its callers.
            let answer = forward.call(&owner, &asker, ask, |mut c, r| async move { c.usage(r).await });
            return answer.await.map(Response::new);
        }
        if self.fleet.state().cluster(&cluster).is_none() {
            return Err(Status::not_found(format!("the hub serves no cluster named `{cluster}`")));
        }
        let caller = &asker.caller;
        // Everyone's rows for an operator; a viewer's own, beside everyone's total.
        let user = (caller.role != auth::Role::Operator).then(|| caller.user.clone());
        let detail = Some(format!("by {}", query.by.as_str()));
        self.admit_as(forwarded_by(&asker), caller, Read::Usage, &cluster, detail, Ok(())).await?;
        let fleet = &self.fleet;
        let reads = self
            .usage
            .get(&cluster, query.since, super::usage::MAX_AGE, |since| {
                fleet.usage_reads(&cluster, since, Some(super::usage::READ_BOUND))
            })
            .await;
        let state = crate::fleet::usage::only(&fleet.state(), std::slice::from_ref(&cluster));
        let idle = fleet.idle_below_percent();
        // Up to a window limit of records: summed off the async threads.
        let usage = tokio::task::spawn_blocking(move || {
            crate::fleet::usage::usage_of(&state, std::slice::from_ref(&*reads), &query, idle, user.as_deref())
        })
        .await
        .map_err(|e| Status::internal(format!("the sum failed: {e}")))?;
        Ok(Response::new(wire::usage_to_pb(&usage)))
    }
}

impl HubService {
    /// A batch whose actions go to more than one replica: each part carried out where its
    /// cluster is held, at once, the outcomes put back in the order asked. A part whose
    /// owner cannot be reached fails whole, in words.
    async fn act_spread(
        &self,
        asker: &Asker,
        asked: &[pb::Action],
        actions: Vec<crate::model::Action>,
        groups: Vec<(Route, Vec<usize>)>,
    ) -> Vec<pb::ActOutcome> {
        let parts = groups.into_iter().map(|(to, places)| {
            let mine: Vec<crate::model::Action> = places.iter().map(|&i| actions[i].clone()).collect();
            let theirs: Vec<pb::Action> = places.iter().map(|&i| asked[i].clone()).collect();
            async move {
                let outcomes = match &to {
                    Route::Here => {
                        let outcome = self.fleet.perform_batch_as(&asker.actor(), mine).await;
                        outcome.outcomes.iter().enumerate().map(|(i, o)| wire::outcome_to_pb(i, o)).collect()
                    }
                    Route::Owner(owner) => match &self.forward {
                        Some(forward) => match forward.act(owner, asker, theirs).await {
                            Ok(outcomes) => outcomes,
                            Err(status) => failed(&mine, status.message()),
                        },
                        None => failed(&mine, "no replica to forward to"),
                    },
                    // Refused here, and on record as refused.
                    Route::Refused(why) => {
                        let outcome = self.fleet.refuse_batch_as(&asker.actor(), mine, why).await;
                        outcome.outcomes.iter().enumerate().map(|(i, o)| wire::outcome_to_pb(i, o)).collect()
                    }
                };
                (places, outcomes)
            }
        });
        let mut all: Vec<Option<pb::ActOutcome>> = vec![None; actions.len()];
        for (places, outcomes) in futures_util::future::join_all(parts).await {
            for mut outcome in outcomes {
                let Some(&place) = usize::try_from(outcome.index).ok().and_then(|j| places.get(j)) else { continue };
                outcome.index = u32::try_from(place).unwrap_or(u32::MAX);
                all[place] = Some(outcome);
            }
        }
        all.into_iter()
            .enumerate()
            .map(|(i, o)| {
                o.unwrap_or_else(|| {
                    let mut missing = failed(&actions[i..=i], "the owning replica gave no outcome").remove(0);
                    missing.index = u32::try_from(i).unwrap_or(u32::MAX);
                    missing
                })
            })
            .collect()
    }

    /// The handle with locator `locator` on one of `cluster`'s jobs, as the hub holds it,
    /// and the job it is on (whose reader it must be).
    fn known_handle(&self, cluster: &str, locator: &str) -> Option<(LogHandle, JobRef)> {
        let state = self.fleet.state();
        let snapshot = state.cluster(cluster)?.snapshot.clone()?;
        snapshot.jobs.iter().find_map(|j| {
            [j.stdout.as_ref(), j.stderr.as_ref()]
                .into_iter()
                .flatten()
                .find(|h| h.as_str() == locator)
                .map(|h| (h.clone(), j.job_ref.clone()))
        })
    }
}
