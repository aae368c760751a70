//! The pure half of holding leases: who a holder is (`Identity` in `holderIdentity`), when a
//! Lease is free, each replica's fair share, and the Lease names. No I/O and no clock of its
//! own (`now` is an argument), so every rule is tested without a server or a wait.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Every cluster's Lease is named this, then the cluster (`flightdeck-hub-<cluster>`).
pub const CLUSTER_LEASE_PREFIX: &str = "flightdeck-hub-";
/// Every replica also renews a Lease of its own (`flightdeck-replica-<id>`), so a replica that
/// holds no cluster yet still counts when the others work out their fair share. Its prefix
/// differs from the clusters' so no cluster name can collide with it.
pub const REPLICA_LEASE_PREFIX: &str = "flightdeck-replica-";

/// One hub replica as the others see it: its id, and where its peers reach it. Encoded in a
/// Lease's `holderIdentity` as `ID@PEER` (the id may not hold `@`; the peer may).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    replica: String,
    peer: String,
}

impl Identity {
    /// A replica id (letters, digits, `.`, `_`, `-`; at most 63) and a peer address (no blanks
    /// or controls). Errors say which is wrong.
    pub fn new(replica: &str, peer: &str) -> Result<Identity, String> {
        let replica_ok = !replica.is_empty()
            && replica.len() <= 63
            && replica.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !replica_ok {
            return Err(format!(
                "replica id {replica:?} must be 1 to 63 letters, digits, '.', '_' or '-' (it names a Lease)"
            ));
        }
        if peer.is_empty() || peer.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("peer address {peer:?} must be non-empty, without blanks or control characters"));
        }
        Ok(Identity { replica: replica.to_owned(), peer: peer.to_owned() })
    }

    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// What goes in `holderIdentity`.
    pub fn encode(&self) -> String {
        format!("{}@{}", self.replica, self.peer)
    }

    /// A `holderIdentity` read back; anything that is not `ID@PEER` with a valid id and peer is
    /// an error naming it (another program's holder, or a hand edit).
    pub fn parse(holder: &str) -> Result<Identity, String> {
        let (replica, peer) = holder
            .split_once('@')
            .ok_or_else(|| format!("lease holder {holder:?} is not a flightdeck replica (ID@PEER)"))?;
        Identity::new(replica, peer).map_err(|e| format!("lease holder {holder:?} is not a flightdeck replica: {e}"))
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.replica, self.peer)
    }
}

/// The holder of a Lease whose term has not run out, else `None`: no holder, an empty one, or
/// `renewTime` (else `acquireTime`) + `leaseDurationSeconds` before `now`. A Lease missing its
/// times or duration (a hand edit, another program) counts as run out, as client-go reads it.
pub fn live_holder(spec: Option<&LeaseSpec>, now: Timestamp) -> Option<&str> {
    let spec = spec?;
    let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
    let expiry = expiry(spec)?;
    (now <= expiry).then_some(holder)
}

/// When the Lease's current term ends: `renewTime` (else `acquireTime`) plus
/// `leaseDurationSeconds`; `None` when either is missing or the duration is not positive.
pub fn expiry(spec: &LeaseSpec) -> Option<Timestamp> {
    let from = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let secs = spec.lease_duration_seconds.filter(|s| *s > 0)?;
    from.checked_add(SignedDuration::from_secs(i64::from(secs))).ok()
}

/// How many clusters one replica may hold: ceil(clusters / replicas), replicas at least 1.
/// Every replica holding at most this leaves none holding all while another holds nothing.
pub fn fair_share(clusters: usize, replicas: usize) -> usize {
    clusters.div_ceil(replicas.max(1))
}

/// The live replicas: the distinct unexpired holders seen (on cluster and replica Leases) plus
/// this one.
pub fn live_replicas<'a>(holders: impl IntoIterator<Item = &'a str>, me: &str) -> usize {
    let mut seen: BTreeSet<&str> = holders.into_iter().collect();
    seen.insert(me);
    seen.len()
}

/// `flightdeck-hub-<cluster>`: the cluster's Lease.
pub fn cluster_lease_name(cluster: &str) -> String {
    lease_name(CLUSTER_LEASE_PREFIX, cluster)
}

/// `flightdeck-replica-<id>`: the replica's own Lease.
pub fn replica_lease_name(replica: &str) -> String {
    lease_name(REPLICA_LEASE_PREFIX, replica)
}

/// `prefix` + `raw` when that is a valid object name of lowercase letters, digits and `-`
/// (dots left out: they need more rules); otherwise a valid name from `raw` (lowercased, other characters as `-`, shortened)
/// with a stable hash of `raw` appended, so `GPU_A` and `gpu-a` get different Leases.
pub fn lease_name(prefix: &str, raw: &str) -> String {
    let plain = format!("{prefix}{raw}");
    if is_object_name(&plain) {
        return plain;
    }
    let mut cleaned: String = raw
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' }
        })
        .collect();
    cleaned.truncate(200);
    let cleaned = cleaned.trim_matches('-');
    let hash = fnv1a(raw.as_bytes());
    if cleaned.is_empty() { format!("{prefix}{hash:08x}") } else { format!("{prefix}{cleaned}-{hash:08x}") }
}

/// Lowercase letters, digits and `-`, alphanumeric at both ends, at most 253: a name the API
/// server takes for a Lease (a strict subset of an RFC 1123 subdomain).
fn is_object_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let end_ok = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    name.len() <= 253
        && end_ok(bytes.first())
        && end_ok(bytes.last())
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// FNV-1a, 32 bits: stable across releases and machines (std's hasher is not promised to be),
/// so every replica derives the same Lease name.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn spec(holder: Option<&str>, renewed: Option<i64>, duration: Option<i32>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            renew_time: renewed.map(|s| MicroTime(at(s))),
            lease_duration_seconds: duration,
            ..Default::default()
        }
    }

    #[test]
    fn identity_round_trips_and_the_peer_may_hold_at_signs() {
        let id = Identity::new("hub-0", "user@10.0.0.7:7443").unwrap();
        assert_eq!(id.encode(), "hub-0@user@10.0.0.7:7443");
        assert_eq!(Identity::parse(&id.encode()).unwrap(), id);
        assert_eq!(id.peer(), "user@10.0.0.7:7443");
    }

    #[test]
    fn bad_identities_are_errors_not_panics() {
        for (replica, peer) in [("", "a:1"), ("a@b", "a:1"), ("hub 0", "a:1"), ("hub-0", ""), ("hub-0", "a b")] {
            assert!(Identity::new(replica, peer).is_err(), "{replica:?} {peer:?}");
        }
        assert!(Identity::new(&"x".repeat(64), "a:1").is_err());
        for holder in ["", "no-at-sign", "@peer", "id@", "id@bad peer", "\u{0}@x"] {
            let err = Identity::parse(holder).unwrap_err();
            assert!(err.contains("not a flightdeck replica"), "{err}");
        }
    }

    #[test]
    fn a_lease_is_live_until_renew_plus_duration() {
        let s = spec(Some("a@p"), Some(0), Some(15));
        assert_eq!(live_holder(Some(&s), at(0)), Some("a@p"));
        assert_eq!(live_holder(Some(&s), at(15)), Some("a@p"), "the last second still counts");
        assert_eq!(live_holder(Some(&s), at(16)), None);
        assert_eq!(expiry(&s), Some(at(15)));
    }

    #[test]
    fn acquire_time_stands_in_for_a_missing_renew_time() {
        let mut s = spec(Some("a@p"), None, Some(15));
        s.acquire_time = Some(MicroTime(at(0)));
        assert_eq!(live_holder(Some(&s), at(10)), Some("a@p"));
        assert_eq!(live_holder(Some(&s), at(20)), None);
    }

    #[test]
    fn malformed_or_empty_leases_are_free() {
        assert_eq!(live_holder(None, at(0)), None);
        for s in [
            spec(None, Some(0), Some(15)),
            spec(Some(""), Some(0), Some(15)),
            spec(Some("a@p"), None, Some(15)),
            spec(Some("a@p"), Some(0), None),
            spec(Some("a@p"), Some(0), Some(0)),
            spec(Some("a@p"), Some(0), Some(-5)),
        ] {
            assert_eq!(live_holder(Some(&s), at(1)), None, "{s:?}");
        }
    }

    #[test]
    fn fair_share_is_the_ceiling_and_never_divides_by_zero() {
        assert_eq!(fair_share(2, 1), 2);
        assert_eq!(fair_share(2, 2), 1);
        assert_eq!(fair_share(2, 3), 1);
        assert_eq!(fair_share(5, 2), 3);
        assert_eq!(fair_share(0, 3), 0);
        assert_eq!(fair_share(4, 0), 4);
    }

    #[test]
    fn live_replicas_counts_distinct_holders_and_me() {
        assert_eq!(live_replicas([], "me"), 1);
        assert_eq!(live_replicas(["a", "a", "b"], "me"), 3);
        assert_eq!(live_replicas(["me", "a"], "me"), 2);
    }

    #[test]
    fn lease_names_are_valid_and_distinct() {
        assert_eq!(cluster_lease_name("gpu-a"), "flightdeck-hub-gpu-a");
        assert_eq!(replica_lease_name("hub-0"), "flightdeck-replica-hub-0");
        let odd = ["GPU_A", "gpu_a", "Gpu-A", "", "-", "a b", &"x".repeat(300), "é", "a.-b", "a.b"];
        let mut seen = BTreeSet::new();
        for raw in odd {
            let name = cluster_lease_name(raw);
            assert!(is_object_name(&name), "{raw:?} → {name:?}");
            assert!(name.starts_with(CLUSTER_LEASE_PREFIX));
            assert!(seen.insert(name.clone()), "{raw:?} collides: {name}");
        }
        assert_ne!(cluster_lease_name("GPU_A"), cluster_lease_name("gpu-a"));
        assert_eq!(cluster_lease_name("GPU_A"), cluster_lease_name("GPU_A"), "stable");
    }
}
