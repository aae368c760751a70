//! Forwarding between replicas (issue #32): an `Act`, or a read of one cluster (`ReadLog`,
//! `Diagnose`, `Render`, `JobSpec`, `EstimateStart`), on a cluster this replica does not hold
//! goes to the replica holding its Lease, which answers it and audits it once, naming the
//! caller and the replica it came through (`alice@hub via hub-b`). Only the holder polls the
//! cluster, so only its picture can say whose a job is, and only it may reach the cluster.
//!
//! A migration whose source and target two different replicas hold is refused where it was
//! asked, by name ([`Forwarder::across_replicas`]): its steps (intent, submit, confirm,
//! cancel) are one story in one audit log, which `migrate --resume` reads back, and a cancel
//! sent to another replica between them would split that story over two logs.
//!
//! The forwarded call carries the caller (user and role) in metadata, and the replicas' shared
//! token as its bearer token; the owner believes the metadata only with that token, so no
//! client can claim another name. A forwarded call is never forwarded again: an owner that no
//! longer holds the cluster refuses it through its fleet's gate.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

use super::auth::{Caller, Role};
use super::lease::{Identity, Owner};
use super::peers::PeerOptions;
use super::relay::Ownership;
use crate::backend::hub_link::Client;
use crate::model::JobRef;
use crate::wire::pb;

/// The caller's user name, role, and the replica the call came through (binary metadata:
/// any user name crosses unharmed).
const CALLER: &str = "x-flightdeck-caller-bin";
const ROLE: &str = "x-flightdeck-role-bin";
const VIA: &str = "x-flightdeck-via-bin";

/// Where a call on a cluster is carried out.
#[derive(Debug, PartialEq)]
pub enum Route {
    /// Here: this replica holds it, or no other replica is known to (the fleet decides).
    Here,
    /// At the replica holding its Lease.
    Owner(Identity),
    /// Nowhere: refused where it was asked, for this reason (a migration across replicas).
    Refused(String),
}

/// Who asked a call, as the serving replica knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Asker {
    pub caller: Caller,
    /// The replica the call came through, when another replica forwarded it.
    pub via: Option<String>,
}

impl Asker {
    /// How the audit log names it: `alice@hub`, or `alice@hub via hub-b`.
    pub fn actor(&self) -> String {
        let here = super::service::actor(&self.caller);
        match &self.via {
            Some(via) => format!("{here} via {via}"),
            None => here,
        }
    }
}

pub struct Forwarder {
    ownership: Arc<dyn Ownership>,
    peers: PeerOptions,
    clients: Mutex<HashMap<String, Client>>,
}

impl Forwarder {
    pub fn new(ownership: Arc<dyn Ownership>, peers: PeerOptions) -> Arc<Forwarder> {
        Arc::new(Forwarder { ownership, peers, clients: Mutex::new(HashMap::new()) })
    }

    /// Where a call on `cluster` goes.
    pub fn route(&self, cluster: &str) -> Route {
        if self.ownership.holds(cluster) {
            return Route::Here;
        }
        match self.ownership.owners().get(cluster) {
            Some(Owner::Replica(owner)) if owner != self.ownership.me() => Route::Owner(owner.clone()),
            _ => Route::Here,
        }
    }

    /// Why a migration of `source` to `to` is refused here, unless one replica is known to
    /// hold both clusters (this one, or the one it goes to); `None` when one does.
    pub fn across_replicas(&self, source: &JobRef, to: &str) -> Option<String> {
        let (from, into) = (self.route(&source.cluster), self.route(to));
        let here = self.ownership.holds(&source.cluster) && self.ownership.holds(to);
        if here || matches!((&from, &into), (Route::Owner(a), Route::Owner(b)) if a == b) {
            return None;
        }
        let owners = self.ownership.owners();
        let held = |cluster: &str| -> String {
            if self.ownership.holds(cluster) {
                return format!("this replica ({})", self.ownership.me().replica());
            }
            match owners.get(cluster) {
                Some(Owner::Replica(id)) => id.replica().to_owned(),
                Some(Owner::Foreign(holder)) => format!("{holder}, not a hub replica"),
                Some(Owner::Free | Owner::Unknown(_)) | None => "no replica now".to_owned(),
            }
        };
        Some(format!(
            "cannot migrate {source} to {to} through this hub now: {} is held by {} and {to} by {}, and a \
             migration runs where one replica holds both, so that its steps (submit, confirm, cancel) stay \
             in one audit log; nothing was done and {source} is left as it was (try again once one replica \
             holds both: Leases move as replicas come and go)",
            source.cluster,
            held(&source.cluster),
            held(to),
        ))
    }

    /// Who really asks `request`: its authenticated caller, or, for a call another replica
    /// forwarded (it names one, with the replicas' token), the caller it names.
    pub fn asker<T>(&self, request: &Request<T>, caller: Caller) -> Result<Asker, Status> {
        let meta = request.metadata();
        let Some(via) = meta.get_bin(VIA) else { return Ok(Asker { caller, via: None }) };
        if !self.shows_peer_token(request) {
            return Err(Status::permission_denied(
                "permission denied: only another replica of this hub, with the replicas' token, may forward a call",
            ));
        }
        let text = |key: &str| -> Result<String, Status> {
            let value =
                meta.get_bin(key).ok_or_else(|| Status::invalid_argument(format!("a forwarded call without {key}")))?;
            let bytes = value.to_bytes().map_err(|_| Status::invalid_argument(format!("{key} is not base64")))?;
            String::from_utf8(bytes.to_vec()).map_err(|_| Status::invalid_argument(format!("{key} is not UTF-8")))
        };
        let via_text = String::from_utf8(
            via.to_bytes().map_err(|_| Status::invalid_argument("the via metadata is not base64"))?.to_vec(),
        )
        .map_err(|_| Status::invalid_argument("the via metadata is not UTF-8"))?;
        let role: Role = text(ROLE)?.parse().map_err(|e: String| Status::invalid_argument(e))?;
        Ok(Asker { caller: Caller { user: text(CALLER)?, role }, via: Some(via_text) })
    }

    fn shows_peer_token<T>(&self, request: &Request<T>) -> bool {
        let Some(source) = &self.peers.token else { return false };
        let Ok(secret) = source.read() else { return false };
        let shown = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
        let Some(shown) = shown.and_then(|v| v.strip_prefix("Bearer ")) else { return false };
        // Compared by digest: equal lengths, and no early exit on the first differing byte.
        super::auth::sha256_hex(shown) == super::auth::sha256_hex(secret.expose())
    }

    fn client(&self, owner: &Identity) -> Result<Client, Status> {
        let mut clients = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.get(owner.peer()) {
            return Ok(client.clone());
        }
        let link = self
            .peers
            .link(owner.peer())
            .map_err(|e| Status::unavailable(format!("cannot reach {owner}, which holds the cluster: {e}")))?;
        clients.insert(owner.peer().to_owned(), link.client.clone());
        Ok(link.client.clone())
    }

    /// `message` as a call on behalf of `asker`, through this replica.
    fn on_behalf<T>(&self, message: T, asker: &Asker) -> Request<T> {
        let mut request = Request::new(message);
        let meta = request.metadata_mut();
        meta.insert_bin(CALLER, MetadataValue::from_bytes(asker.caller.user.as_bytes()));
        meta.insert_bin(ROLE, MetadataValue::from_bytes(asker.caller.role.to_string().as_bytes()));
        meta.insert_bin(VIA, MetadataValue::from_bytes(self.ownership.me().replica().as_bytes()));
        request
    }

    /// The owner's outcomes of `actions`, each with its index in the owner's request.
    pub async fn act(
        &self,
        owner: &Identity,
        asker: &Asker,
        actions: Vec<pb::Action>,
    ) -> Result<Vec<pb::ActOutcome>, Status> {
        let mut client = self.client(owner)?;
        let request = self.on_behalf(pb::ActRequest { actions }, asker);
        let mut stream = client.act(request).await.map_err(|s| from_owner(owner, s))?.into_inner();
        let mut outcomes = Vec::new();
        while let Some(outcome) = stream.message().await.map_err(|s| from_owner(owner, s))? {
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// One unary call (`call` on the owner's client) on behalf of `asker`: the owner checks,
    /// answers and audits it.
    pub async fn call<Q, A, F, Fut>(&self, owner: &Identity, asker: &Asker, ask: Q, call: F) -> Result<A, Status>
    where
        F: FnOnce(Client, Request<Q>) -> Fut,
        Fut: Future<Output = Result<Response<A>, Status>>,
    {
        let client = self.client(owner)?;
        let request = self.on_behalf(ask, asker);
        Ok(call(client, request).await.map_err(|s| from_owner(owner, s))?.into_inner())
    }
}

/// The owner's answer as it gave it; a connection that failed, said as such.
fn from_owner(owner: &Identity, status: Status) -> Status {
    if status.code() == tonic::Code::Unavailable {
        let why = crate::backend::hub_link::channel::status_text(&status);
        return Status::unavailable(format!("cannot reach {owner}, which holds the cluster: {why}"));
    }
    status
}

/// Actions split by where they are carried out, each with its place in the request.
pub fn split<A>(actions: &[A], route: impl Fn(&A) -> Route) -> Vec<(Route, Vec<usize>)> {
    let mut groups: Vec<(Route, Vec<usize>)> = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        let to = route(action);
        match groups.iter_mut().find(|(r, _)| *r == to) {
            Some((_, places)) => places.push(i),
            None => groups.push((to, vec![i])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn actions_split_by_where_they_go_keep_their_places() {
        let owner = Identity::new("hub-b", "10.0.0.2:7443").unwrap();
        let route = |c: &&str| if *c == "far" { Route::Owner(owner.clone()) } else { Route::Here };
        let actions = ["near", "far", "near", "far"];
        let groups = split(&actions, route);
        assert_eq!(groups, vec![(Route::Here, vec![0, 2]), (Route::Owner(owner.clone()), vec![1, 3])]);
    }

    struct Fixed {
        me: Identity,
        owners: BTreeMap<String, Owner>,
    }

    impl Ownership for Fixed {
        fn me(&self) -> &Identity {
            &self.me
        }
        fn owners(&self) -> BTreeMap<String, Owner> {
            self.owners.clone()
        }
        fn holds(&self, cluster: &str) -> bool {
            self.owners.get(cluster) == Some(&Owner::Replica(self.me.clone()))
        }
    }

    #[test]
    fn a_migration_is_refused_by_name_only_when_two_places_would_carry_out_its_halves() {
        let a = Identity::new("hub-a", "10.0.0.1:7443").unwrap();
        let b = Identity::new("hub-b", "10.0.0.2:7443").unwrap();
        let owners = BTreeMap::from([
            ("near".to_owned(), Owner::Replica(a.clone())),
            ("far".to_owned(), Owner::Replica(b.clone())),
            ("also-far".to_owned(), Owner::Replica(b.clone())),
            ("loose".to_owned(), Owner::Free),
        ]);
        let forwarder = Forwarder::new(Arc::new(Fixed { me: a, owners }), PeerOptions::default());
        let job = |cluster: &str| JobRef { cluster: cluster.into(), id: "7".into() };
        assert_eq!(forwarder.across_replicas(&job("far"), "also-far"), None, "both at hub-b");
        assert_eq!(forwarder.across_replicas(&job("near"), "near"), None, "both here");
        let why = forwarder.across_replicas(&job("near"), "far").expect("here and hub-b");
        assert!(why.starts_with("cannot migrate near/7 to far through this hub now: near is held by this replica (hub-a) and far by hub-b"), "{why}");
        let why = forwarder.across_replicas(&job("loose"), "far").expect("nobody and hub-b");
        assert!(why.contains("loose is held by no replica now and far by hub-b"), "{why}");
    }

    #[test]
    fn a_forwarded_call_is_audited_naming_the_caller_and_the_replica() {
        let asker = Asker { caller: Caller { user: "alice".into(), role: Role::Operator }, via: Some("hub-b".into()) };
        assert_eq!(asker.actor(), "alice@hub via hub-b");
        let direct = Asker { via: None, ..asker };
        assert_eq!(direct.actor(), "alice@hub");
    }
}
