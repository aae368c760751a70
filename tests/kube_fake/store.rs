//! Objects, resource versions, change history (for watches), recorded requests and knobs.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::resources::{ResourceDef, builtin_resources, from_wire, to_wire};

/// `(apiVersion, kind, namespace or "", name)`; the BTreeMap order is etcd's key order.
pub(crate) type Key = (String, String, String, String);

/// How much history watches can replay before it is compacted.
const HISTORY_LIMIT: usize = 20_000;

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// Arrival order, from 1.
    pub seq: u64,
    pub method: String,
    pub path: String,
    /// The query as sent (`&watch=true&…`), `None` without a `?`.
    pub raw_query: Option<String>,
    /// Decoded query pairs, empty pairs skipped.
    pub query: Vec<(String, String)>,
    pub content_type: Option<String>,
    pub accept: Option<String>,
    /// The body as text ("" when empty).
    pub raw_body: String,
    /// The body as JSON, when it is JSON.
    pub body: Option<Value>,
    /// The status answered (for a watch, the status of its headers: 200); 0 while in flight.
    pub status: u16,
}

impl RecordedRequest {
    /// The first value of a query parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A watch request (`watch=true` or `watch=1`).
    pub fn is_watch(&self) -> bool {
        matches!(self.param("watch"), Some("true" | "1"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One committed change, as watches replay it.
#[derive(Debug)]
pub(crate) struct Change {
    pub rv: u64,
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub ty: ChangeType,
    /// The object after the change (for DELETED: as it was, with the deletion's resourceVersion).
    pub object: Value,
    /// The object before the change (MODIFIED and DELETED).
    pub previous: Option<Value>,
}

/// What open watch streams are told.
#[derive(Clone, Debug)]
pub(crate) enum WatchMsg {
    Change(Arc<Change>),
    /// Abort like a dropped connection.
    Drop,
    /// History compacted at this resourceVersion: send ERROR 410 and end.
    Expire {
        rv: u64,
    },
}

pub(crate) struct State {
    pub objects: BTreeMap<Key, Value>,
    pub rv: u64,
    /// Watches (and continue tokens) from a resourceVersion below this get 410 Expired; the
    /// history holds every change newer than it.
    pub compacted_rv: u64,
    pub history: VecDeque<Arc<Change>>,
    pub requests: Vec<RecordedRequest>,
    pub next_seq: u64,
    pub latency: Duration,
    pub fail_next: usize,
    pub fail_status: u16,
    pub disabled: HashMap<(String, String), u16>,
    pub blocked_evictions: HashMap<(String, String), Option<usize>>,
    pub bookmark_interval: Duration,
    pub logs: HashMap<(String, String, String), String>,
    pub resources: Vec<ResourceDef>,
    pub open_watches: usize,
    rng: u64,
}

pub(crate) fn str_at(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("").to_owned()
}

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let map = obj.as_object_mut().expect("object");
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut().expect("metadata object")
}

impl State {
    pub(crate) fn new() -> State {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15);
        State {
            objects: BTreeMap::new(),
            rv: 1000,
            compacted_rv: 0,
            history: VecDeque::new(),
            requests: Vec::new(),
            next_seq: 1,
            latency: Duration::ZERO,
            fail_next: 0,
            fail_status: 500,
            disabled: HashMap::new(),
            blocked_evictions: HashMap::new(),
            bookmark_interval: Duration::from_millis(200),
            logs: HashMap::new(),
            resources: builtin_resources(),
            open_watches: 0,
            rng: seed | 1,
        }
    }

    pub(crate) fn rand(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn new_uid(&mut self) -> String {
        let (a, b, c) = (self.rand(), self.rand(), self.rand());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a as u32,
            (a >> 32) as u16,
            b & 0xfff,
            0x8000 | ((b >> 12) & 0x3fff),
            c & 0xffff_ffff_ffff
        )
    }

    /// The 5-character suffix a real server appends to `generateName`.
    pub(crate) fn name_suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5).map(|_| ALPHABET[(self.rand() % ALPHABET.len() as u64) as usize] as char).collect()
    }

    pub(crate) fn find_def(&self, api_version: &str, kind: &str) -> Option<&ResourceDef> {
        self.resources.iter().find(|d| d.api_version() == api_version && d.kind == kind)
    }

    /// Where an object of that apiVersion/kind is stored (events.k8s.io/v1 → core v1 Event).
    pub(crate) fn storage_key(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Key {
        let (av, k) = match self.find_def(api_version, kind) {
            Some(d) => d.storage(),
            None => (api_version.to_owned(), kind.to_owned()),
        };
        (av, k, namespace.unwrap_or("").to_owned(), name.to_owned())
    }

    /// A stored object as a client of `api_version`/`kind` sees it (with type meta).
    pub(crate) fn to_wire_for(&self, api_version: &str, kind: &str, obj: &Value) -> Value {
        match self.find_def(api_version, kind) {
            Some(d) => to_wire(d, obj, true),
            None => obj.clone(),
        }
    }

    pub(crate) fn all_of(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let Some(def) = self.find_def(api_version, kind) else { return Vec::new() };
        let (av, k) = def.storage();
        self.range(&av, &k).map(|(_, o)| to_wire(def, o, true)).collect()
    }

    /// Stored objects of one storage kind, in key order.
    pub(crate) fn range<'a>(&'a self, av: &'a str, kind: &'a str) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        let start = (av.to_owned(), kind.to_owned(), String::new(), String::new());
        self.objects.range(start..).take_while(move |(k, _)| k.0 == av && k.1 == kind)
    }

    fn record_change(&mut self, tx: &broadcast::Sender<WatchMsg>, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > HISTORY_LIMIT {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
        let _ = tx.send(WatchMsg::Change(change));
    }

    /// Stores an object (already stamped with uid, namespace…), bumping the resourceVersion
    /// and emitting ADDED or MODIFIED; an object with a deletionTimestamp and no finalizers
    /// left is deleted instead. Returns the stored object.
    pub(crate) fn commit(&mut self, tx: &broadcast::Sender<WatchMsg>, mut obj: Value) -> Value {
        let key = key_of(&obj);
        let previous = self.objects.get(&key).cloned();
        let finalizers_left =
            obj.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if previous.is_some() && obj.pointer("/metadata/deletionTimestamp").is_some() && !finalizers_left {
            self.objects.insert(key.clone(), obj);
            return self.remove(tx, &key).unwrap_or(Value::Null);
        }
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        self.objects.insert(key.clone(), obj.clone());
        let ty = if previous.is_some() { ChangeType::Modified } else { ChangeType::Added };
        self.record_change(
            tx,
            Change {
                rv: self.rv,
                api_version: key.0,
                kind: key.1,
                namespace: key.2,
                ty,
                object: obj.clone(),
                previous,
            },
        );
        obj
    }

    /// Removes an object, emitting DELETED (the object carries the deletion's resourceVersion).
    pub(crate) fn remove(&mut self, tx: &broadcast::Sender<WatchMsg>, key: &Key) -> Option<Value> {
        let previous = self.objects.remove(key)?;
        self.rv += 1;
        let mut obj = previous.clone();
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        self.record_change(
            tx,
            Change {
                rv: self.rv,
                api_version: key.0.clone(),
                kind: key.1.clone(),
                namespace: key.2.clone(),
                ty: ChangeType::Deleted,
                object: obj.clone(),
                previous: Some(previous),
            },
        );
        Some(obj)
    }

    /// Fills what the server owns on a new object: uid, creationTimestamp, generation,
    /// namespace (namespaced kinds only).
    pub(crate) fn stamp_new(&mut self, def: &ResourceDef, obj: &mut Value, namespace: Option<&str>) {
        let uid = self.new_uid();
        let meta = meta_mut(obj);
        if def.namespaced {
            let ns = namespace
                .map(str::to_owned)
                .or_else(|| meta.get("namespace").and_then(Value::as_str).map(str::to_owned))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "default".to_owned());
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
            meta.insert("uid".into(), json!(uid));
        }
        if meta.get("creationTimestamp").and_then(Value::as_str).is_none_or(str::is_empty) {
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        }
        if !meta.contains_key("generation") {
            meta.insert("generation".into(), json!(1));
        }
    }

    /// [`super::FakeApi::put`].
    pub(crate) fn put(&mut self, tx: &broadcast::Sender<WatchMsg>, obj: Value) -> Value {
        let api_version = str_at(&obj, "/apiVersion");
        let kind = str_at(&obj, "/kind");
        let def = self.find_def(&api_version, &kind).cloned().unwrap_or_else(|| {
            panic!("kube_fake: put() of {api_version}/{kind}, which the fake does not serve; register it with FakeApi::add_resource")
        });
        let mut obj = from_wire(&def, obj);
        let (av, k) = def.storage();
        obj["apiVersion"] = json!(av);
        obj["kind"] = json!(k);
        let ns = if def.namespaced {
            Some(str_at(&obj, "/metadata/namespace")).filter(|s| !s.is_empty()).unwrap_or_else(|| "default".into())
        } else {
            String::new()
        };
        let name = str_at(&obj, "/metadata/name");
        assert!(!name.is_empty(), "kube_fake: put() of a {kind} without metadata.name");
        let key = (av, k, ns.clone(), name);
        if let Some(old) = self.objects.get(&key) {
            let meta = meta_mut(&mut obj);
            for field in ["uid", "creationTimestamp"] {
                if meta.get(field).and_then(Value::as_str).is_none_or(str::is_empty)
                    && let Some(v) = old.pointer(&format!("/metadata/{field}"))
                {
                    meta.insert(field.into(), v.clone());
                }
            }
        }
        self.stamp_new(&def, &mut obj, def.namespaced.then_some(ns.as_str()));
        self.commit(tx, obj)
    }

    /// Deletes an object and its dependents according to `policy` (Background, Foreground,
    /// Orphan). An object with finalizers only gets its deletionTimestamp. Returns the object as
    /// deleted (or marked).
    pub(crate) fn delete_cascading(
        &mut self,
        tx: &broadcast::Sender<WatchMsg>,
        key: &Key,
        policy: &str,
    ) -> Option<Value> {
        let obj = self.objects.get(key)?.clone();
        let uid = str_at(&obj, "/metadata/uid");
        if !uid.is_empty() {
            let dependents: Vec<Key> = self
                .objects
                .iter()
                .filter(|(_, o)| {
                    o.pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| refs.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(&uid)))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for dep in dependents {
                if policy == "Orphan" {
                    let mut d = self.objects[&dep].clone();
                    if let Some(refs) = d.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&uid));
                    }
                    self.commit(tx, d);
                } else {
                    self.delete_cascading(tx, &dep, policy);
                }
            }
        }
        let has_finalizers =
            obj.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if obj.pointer("/metadata/deletionTimestamp").is_some() {
                return Some(obj);
            }
            let mut marked = obj;
            meta_mut(&mut marked).insert("deletionTimestamp".into(), json!(now_rfc3339()));
            meta_mut(&mut marked).insert("deletionGracePeriodSeconds".into(), json!(0));
            return Some(self.commit(tx, marked));
        }
        self.remove(tx, key)
    }
}

pub(crate) fn key_of(obj: &Value) -> Key {
    (
        str_at(obj, "/apiVersion"),
        str_at(obj, "/kind"),
        str_at(obj, "/metadata/namespace"),
        str_at(obj, "/metadata/name"),
    )
}

/// The default `propagationPolicy` of a kind: Orphan for batch/v1 Jobs (as a real server, for
/// backwards compatibility), Background otherwise.
pub(crate) fn default_propagation(def: &ResourceDef) -> &'static str {
    if def.group == "batch" && def.kind == "Job" { "Orphan" } else { "Background" }
}
