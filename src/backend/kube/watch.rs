//! One kube-runtime `watcher` + reflector store per kind (and per namespace when the config
//! names namespaces), their health, and the notes the adapter shows when a kind cannot be
//! read.
//!
//! * A kind the server does not have (404: an absent CRD) or the user may not list (403)
//!   is switched off with a note and tried again later; it never fails the cluster. Pods
//!   and Jobs that cannot be listed in all namespaces fall back to the context's namespace.
//! * Any other error marks the watch failing; the backend's `snapshot` turns failing
//!   watches into an error once they have failed for a short while, so the fleet shows the
//!   cluster stale. The watcher retries with its own short back-off (the client never
//!   retries by itself: `default_retry` is off), and recovers by itself, re-listing on a
//!   410.
//! * Every event bumps the backend's change counter so the fleet re-reads promptly.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::kube::Resource;
use ::kube::api::Api;
use ::kube::runtime::reflector::store::{Store, Writer};
use ::kube::runtime::{WatchStreamExt, watcher};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::gpu::{Ledger, pod_key};
use super::trim::Trim;

/// How long a switched-off kind (absent CRD, no permission) waits before it is tried again.
pub const RETRY_DISABLED: Duration = Duration::from_secs(300);
const BACKOFF_MIN: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The health of one watch.
#[derive(Debug, Clone, Default)]
pub struct WatchHealth {
    /// Its failure makes the cluster stale (nodes, pods, jobs); others only add a note.
    pub required: bool,
    /// Listed completely at least once since it (re)started.
    pub synced: bool,
    pub failing_since: Option<Instant>,
    pub last_error: Option<String>,
    /// Switched off (absent kind or no permission).
    pub disabled: bool,
    pub events: u64,
}

/// The reflector stores of one kind, one per watch (per namespace, or one for all).
pub struct Registry<K: 'static + ::kube::runtime::reflector::Lookup + Clone>
where
    K::DynamicType: Eq + Hash + Clone,
{
    stores: Mutex<BTreeMap<String, Store<K>>>,
}

impl<K> Default for Registry<K>
where
    K: 'static + ::kube::runtime::reflector::Lookup + Clone,
    K::DynamicType: Eq + Hash + Clone,
{
    fn default() -> Self {
        Self { stores: Mutex::new(BTreeMap::new()) }
    }
}

impl<K> Registry<K>
where
    K: 'static + ::kube::runtime::reflector::Lookup + Clone,
    K::DynamicType: Eq + Hash + Clone,
{
    fn set(&self, label: &str, store: Option<Store<K>>) {
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        match store {
            Some(s) => stores.insert(label.to_string(), s),
            None => stores.remove(label),
        };
    }

    /// Every object of every store.
    pub fn all(&self) -> Vec<Arc<K>> {
        let stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for s in stores.values() {
            out.extend(s.state());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.stores.lock().unwrap_or_else(|e| e.into_inner()).values().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the watches share with the backend.
pub struct Shared {
    pub cluster: String,
    changes: watch::Sender<u64>,
    health: Mutex<BTreeMap<String, WatchHealth>>,
    notes: Mutex<BTreeMap<String, String>>,
    pub ledger: Mutex<Ledger>,
    last_event: Mutex<Option<Instant>>,
}

impl Shared {
    pub fn new(cluster: &str) -> Arc<Shared> {
        Arc::new(Shared {
            cluster: cluster.to_string(),
            changes: watch::channel(0).0,
            health: Mutex::new(BTreeMap::new()),
            notes: Mutex::new(BTreeMap::new()),
            ledger: Mutex::new(Ledger::default()),
            last_event: Mutex::new(None),
        })
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn bump(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn with_health<R>(&self, label: &str, f: impl FnOnce(&mut WatchHealth) -> R) -> R {
        let mut h = self.health.lock().unwrap_or_else(|e| e.into_inner());
        f(h.entry(label.to_string()).or_default())
    }

    pub fn register(&self, label: &str, required: bool) {
        self.with_health(label, |h| {
            *h = WatchHealth { required, events: h.events, ..WatchHealth::default() };
        });
    }

    fn ok(&self, label: &str, synced: bool) {
        self.with_health(label, |h| {
            h.failing_since = None;
            h.last_error = None;
            h.disabled = false;
            h.synced |= synced;
            h.events += 1;
        });
        *self.last_event.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    fn failing(&self, label: &str, error: String) {
        self.with_health(label, |h| {
            h.failing_since.get_or_insert_with(Instant::now);
            h.last_error = Some(error);
        });
    }

    fn disable(&self, label: &str) {
        self.with_health(label, |h| {
            h.disabled = true;
            h.required = false;
            h.failing_since = None;
            h.synced = false;
        });
    }

    /// Forget a watch (replaced by another, e.g. a namespace fallback).
    pub fn forget(&self, label: &str) {
        self.health.lock().unwrap_or_else(|e| e.into_inner()).remove(label);
    }

    pub fn set_note(&self, key: &str, note: Option<String>) {
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        let changed = match note {
            Some(n) => {
                if notes.get(key) != Some(&n) {
                    tracing::warn!(cluster = %self.cluster, note = %n, "kubernetes: reduced view");
                }
                notes.insert(key.to_string(), n.clone()).as_ref() != Some(&n)
            }
            None => notes.remove(key).is_some(),
        };
        drop(notes);
        if changed {
            self.bump();
        }
    }

    /// What the view lacks and why (absent kinds, missing permissions, failing watches).
    pub fn notes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for note in self.notes.lock().unwrap_or_else(|e| e.into_inner()).values() {
            if !out.contains(note) {
                out.push(note.clone());
            }
        }
        let health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        for (label, h) in health.iter() {
            if let (Some(since), Some(err)) = (h.failing_since, &h.last_error) {
                out.push(format!("watch of {label} failing for {} s: {err}", since.elapsed().as_secs()));
            }
        }
        out
    }

    pub fn health(&self) -> BTreeMap<String, WatchHealth> {
        self.health.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every required watch has listed its objects once.
    pub fn synced(&self) -> bool {
        let h = self.health.lock().unwrap_or_else(|e| e.into_inner());
        !h.is_empty() && h.values().filter(|h| h.required).all(|h| h.synced)
    }

    /// A required watch that has been failing for longer than `grace` (its error), or —
    /// with `grace` zero — any required watch failing at all.
    pub fn failure(&self, grace: Duration) -> Option<String> {
        let h = self.health.lock().unwrap_or_else(|e| e.into_inner());
        h.iter()
            .filter(|(_, h)| h.required)
            .filter_map(|(label, h)| Some((label, h.failing_since?, h.last_error.as_deref()?)))
            .find(|(_, since, _)| since.elapsed() >= grace)
            .map(|(label, since, err)| format!("watch of {label} failing for {} s: {err}", since.elapsed().as_secs()))
    }

    /// When any watch last heard from the server.
    pub fn last_event(&self) -> Option<Instant> {
        *self.last_event.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn mark_alive(&self) {
        *self.last_event.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

/// How one watch ended: the server says the kind is absent (404) or forbidden (403).
#[derive(Debug, Clone)]
pub struct Disabled {
    pub code: u16,
    pub message: String,
}

impl Disabled {
    pub fn describe(&self, what: &str) -> String {
        match self.code {
            404 => format!("{what}: not served by this cluster (404 {})", self.message),
            403 => format!("{what}: no permission to list (403 {})", self.message),
            c => format!("{what}: refused ({c} {})", self.message),
        }
    }
}

fn denied(err: &watcher::Error) -> Option<Disabled> {
    let client_err = match err {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            e
        }
        watcher::Error::WatchError(status) => {
            return matches!(status.code, 403 | 404)
                .then(|| Disabled { code: status.code, message: status.message.clone() });
        }
        watcher::Error::NoResourceVersion => return None,
    };
    match client_err {
        ::kube::Error::Api(status) if matches!(status.code, 403 | 404) => {
            Some(Disabled { code: status.code, message: status.message.clone() })
        }
        _ => None,
    }
}

/// A hook called with every event after the store applied it.
pub type Hook<K> = Box<dyn FnMut(&watcher::Event<K>) + Send>;

/// Makes the hook of one watch scope (`None`: all namespaces).
pub type HookFactory<K> = fn(Arc<Shared>, Option<String>) -> Hook<K>;

/// Run one watch until the server says the kind is absent or forbidden (it never ends
/// otherwise).
#[allow(clippy::too_many_arguments)]
pub async fn run<K>(
    shared: Arc<Shared>,
    label: String,
    required: bool,
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    registry: Arc<Registry<K>>,
    mut hook: Option<Hook<K>>,
) -> Disabled
where
    K: Resource + Trim + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let mut writer: Writer<K> = Writer::new(dyntype);
    registry.set(&label, Some(writer.as_reader()));
    shared.register(&label, required);
    let mut backoff = BACKOFF_MIN;
    loop {
        // A fresh watcher after every error: it lists again, and its `InitDone` says the
        // server is back (a resumed watch on a quiet kind would say nothing at all).
        // Only what the adapter reads enters the store (see `trim`): managedFields, env,
        // volumes and the like are most of a real object and never shown.
        let stream = watcher::watcher(api.clone(), config.clone()).modify(Trim::trim);
        futures_util::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    if let Some(h) = hook.as_mut() {
                        h(&event);
                    }
                    match event {
                        // Emitted before the list request: proves nothing yet.
                        watcher::Event::Init => {}
                        watcher::Event::InitApply(_) => shared.ok(&label, false),
                        watcher::Event::InitDone => {
                            backoff = BACKOFF_MIN;
                            shared.ok(&label, true);
                            shared.set_note(&label, None);
                            shared.bump();
                        }
                        watcher::Event::Apply(_) | watcher::Event::Delete(_) => {
                            shared.ok(&label, false);
                            shared.bump();
                        }
                    }
                }
                Err(err) => {
                    if let Some(d) = denied(&err) {
                        registry.set(&label, None);
                        shared.disable(&label);
                        shared.bump();
                        return d;
                    }
                    tracing::debug!(cluster = %shared.cluster, watch = %label, error = %err, "watch failed; retrying");
                    shared.failing(&label, short_error(&err));
                    shared.bump();
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    break;
                }
            }
        }
    }
}

/// A watcher error in a few words (kube's own texts repeat the status twice).
pub fn short_error(err: &watcher::Error) -> String {
    let client = match err {
        watcher::Error::InitialListFailed(e) => ("list", e),
        watcher::Error::WatchStartFailed(e) => ("watch", e),
        watcher::Error::WatchFailed(e) => ("watch stream", e),
        watcher::Error::WatchError(s) => {
            return format!("watch: {} {} {}", s.code, s.reason, s.message).trim().to_string();
        }
        watcher::Error::NoResourceVersion => return "no resourceVersion in the answer".into(),
    };
    format!("{}: {}", client.0, super::describe_client_error(client.1))
}

/// Keeps the GPU ledger in step with the pods of one watch scope (`None`: all namespaces).
pub fn pod_hook(shared: Arc<Shared>, scope: Option<String>) -> Hook<Pod> {
    let mut seen: Option<HashSet<String>> = None;
    Box::new(move |event| {
        let mut ledger = shared.ledger.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => seen = Some(HashSet::new()),
            watcher::Event::InitApply(p) => {
                if let Some(s) = seen.as_mut() {
                    s.insert(pod_key(p));
                }
                ledger.apply(p);
            }
            watcher::Event::InitDone => {
                let seen = seen.take().unwrap_or_default();
                let prefix = scope.as_ref().map(|ns| format!("{ns}/"));
                ledger.retain(|k| prefix.as_ref().is_some_and(|p| !k.starts_with(p.as_str())) || seen.contains(k));
            }
            watcher::Event::Apply(p) => {
                ledger.apply(p);
            }
            watcher::Event::Delete(p) => {
                ledger.remove(&pod_key(p));
            }
        }
    })
}

/// Where the watches of one kind look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A cluster-scoped kind (nodes, ClusterQueues).
    Cluster,
    /// All namespaces; on 403, the given namespace instead.
    AllNamespaces {
        fallback: String,
    },
    Namespace(String),
}

impl Scope {
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Scope::Namespace(ns) => Some(ns),
            _ => None,
        }
    }

    pub fn label(&self, what: &str) -> String {
        match self {
            Scope::Namespace(ns) => format!("{what} in {ns}"),
            _ => what.to_string(),
        }
    }
}

/// The scopes for a namespaced kind: the configured namespaces, or all of them.
pub fn scopes(namespaces: &[String], fallback: &str) -> Vec<Scope> {
    if namespaces.is_empty() {
        vec![Scope::AllNamespaces { fallback: fallback.to_string() }]
    } else {
        namespaces.iter().map(|ns| Scope::Namespace(ns.clone())).collect()
    }
}

/// Counts by label, for `doctor`.
pub fn object_counts(counts: &[(&str, usize)]) -> String {
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}

/// The index of events, namespace → pod → latest `FailedScheduling` message. Nested, not
/// keyed by a `(String, String)` pair: it is read for pods of every workload mapped, and a
/// pair key would take two new strings per lookup.
pub fn failed_scheduling_index(
    events: &[Arc<k8s_openapi::api::core::v1::Event>],
) -> HashMap<String, HashMap<String, String>> {
    type Latest = (Option<chrono::DateTime<chrono::Utc>>, String);
    let mut latest: HashMap<(String, String), Latest> = HashMap::new();
    for e in events {
        if e.reason.as_deref() != Some("FailedScheduling") || e.involved_object.kind.as_deref() != Some("Pod") {
            continue;
        }
        let (Some(ns), Some(name)) = (e.involved_object.namespace.clone(), e.involved_object.name.clone()) else {
            continue;
        };
        let Some(msg) = e.message.clone() else { continue };
        let at = e
            .series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|t| t.0)
            .or_else(|| e.event_time.as_ref().map(|t| t.0))
            .and_then(|t| chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().max(0) as u32))
            .or_else(|| e.last_timestamp.as_ref().and_then(super::map::time))
            .or_else(|| e.metadata.creation_timestamp.as_ref().and_then(super::map::time));
        let slot = latest.entry((ns, name)).or_insert((None, String::new()));
        if slot.1.is_empty() || at >= slot.0 {
            *slot = (at, msg);
        }
    }
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    for ((ns, name), (_, message)) in latest {
        out.entry(ns).or_default().insert(name, message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_failure_grace_and_notes() {
        let s = Shared::new("k");
        s.register("nodes", true);
        s.register("events", false);
        assert!(!s.synced());
        s.ok("nodes", true);
        assert!(s.synced(), "optional watches do not hold up the first snapshot");
        s.failing("events", "boom".into());
        assert_eq!(s.failure(Duration::ZERO), None, "an optional watch never fails the cluster");
        s.failing("nodes", "connection refused".into());
        assert!(s.failure(Duration::ZERO).unwrap().contains("connection refused"));
        assert_eq!(s.failure(Duration::from_secs(60)), None, "within the grace period");
        assert_eq!(s.notes().len(), 2, "{:?}", s.notes());
        s.ok("nodes", false);
        assert_eq!(s.failure(Duration::ZERO), None);
        s.set_note("kueue", Some("Kueue is not installed".into()));
        assert!(s.notes().contains(&"Kueue is not installed".to_string()));
        s.set_note("kueue", None);
        s.disable("nodes");
        assert!(!s.health()["nodes"].required);
    }

    #[test]
    fn denied_kinds() {
        let status = |code| ::kube::Error::Api(Box::new(::kube::core::Status::failure("nope", "x").with_code(code)));
        assert_eq!(denied(&watcher::Error::InitialListFailed(status(404))).map(|d| d.code), Some(404));
        assert_eq!(denied(&watcher::Error::InitialListFailed(status(403))).map(|d| d.code), Some(403));
        assert!(denied(&watcher::Error::InitialListFailed(status(500))).is_none());
        let gone = ::kube::core::Status::failure("too old", "Expired").with_code(410);
        assert!(denied(&watcher::Error::WatchError(Box::new(gone))).is_none(), "a 410 re-lists, it does not disable");
        let d = Disabled { code: 404, message: "the server could not find the requested resource".into() };
        assert!(d.describe("Kueue workloads").starts_with("Kueue workloads: not served"));
    }

    #[test]
    fn scopes_and_labels() {
        assert_eq!(scopes(&[], "default"), vec![Scope::AllNamespaces { fallback: "default".into() }]);
        let s = scopes(&["ml".into(), "infer".into()], "default");
        assert_eq!(s[1].label("pods"), "pods in infer");
        assert_eq!(Scope::Cluster.label("nodes"), "nodes");
    }

    #[test]
    fn latest_failed_scheduling_wins() {
        let ev = |msg: &str, at: &str| {
            Arc::new(
                serde_json::from_value::<k8s_openapi::api::core::v1::Event>(serde_json::json!({
                    "metadata": {"name": format!("e-{at}"), "namespace": "ml"},
                    "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "p"},
                    "reason": "FailedScheduling", "message": msg, "lastTimestamp": at
                }))
                .unwrap(),
            )
        };
        let idx = failed_scheduling_index(&[ev("new", "2025-01-02T00:00:00Z"), ev("old", "2025-01-01T00:00:00Z")]);
        assert_eq!(idx.get("ml").and_then(|pods| pods.get("p")).map(String::as_str), Some("new"));
    }
}
