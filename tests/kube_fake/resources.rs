//! The resources the fake serves, discovery documents, and the conversion between what is
//! stored and what goes on the wire.

use std::net::SocketAddr;

use serde_json::{Map, Value, json};

/// One served resource (one group/version/plural).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceDef {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    /// `status`, `log`, `eviction`, `scale`, `binding`, `finalize`.
    pub subresources: Vec<String>,
    /// Built-in kinds list their items without apiVersion/kind, like a real server.
    pub builtin: bool,
}

impl ResourceDef {
    /// A custom resource with a `status` subresource.
    pub fn new(api_version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceDef {
        let (group, version) = split_api_version(api_version);
        ResourceDef {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            singular: kind.to_lowercase(),
            kind: kind.to_owned(),
            namespaced,
            short_names: Vec::new(),
            subresources: vec!["status".into()],
            builtin: false,
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `(apiVersion, kind)` under which objects of this resource are stored. The
    /// events.k8s.io/v1 Event is a view of the core v1 Event.
    pub fn storage(&self) -> (String, String) {
        if self.is_events_v1() { ("v1".into(), "Event".into()) } else { (self.api_version(), self.kind.clone()) }
    }

    pub(crate) fn is_events_v1(&self) -> bool {
        self.group == "events.k8s.io" && self.kind == "Event"
    }

    /// `pods`, `jobs.batch`, `workloads.kueue.x-k8s.io`: how a real server names it in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    pub(crate) fn has_sub(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }
}

pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

fn def(gv: &str, kind: &str, plural: &str, namespaced: bool, short: &[&str], subs: &[&str]) -> ResourceDef {
    let mut d = ResourceDef::new(gv, kind, plural, namespaced);
    d.short_names = short.iter().map(|s| (*s).to_owned()).collect();
    d.subresources = subs.iter().map(|s| (*s).to_owned()).collect();
    d.builtin = !d.group.contains(".x-k8s.io");
    d
}

/// What the fake serves before any [`super::FakeApi::add_resource`].
pub(crate) fn builtin_resources() -> Vec<ResourceDef> {
    vec![
        def("v1", "Namespace", "namespaces", false, &["ns"], &["status", "finalize"]),
        def("v1", "Node", "nodes", false, &["no"], &["status"]),
        def("v1", "Pod", "pods", true, &["po"], &["status", "log", "eviction", "binding"]),
        def("v1", "Event", "events", true, &["ev"], &[]),
        def("v1", "Service", "services", true, &["svc"], &["status"]),
        def("v1", "ConfigMap", "configmaps", true, &["cm"], &[]),
        def("v1", "Secret", "secrets", true, &[], &[]),
        def("v1", "ServiceAccount", "serviceaccounts", true, &["sa"], &[]),
        def("v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, &["pvc"], &["status"]),
        def("v1", "PersistentVolume", "persistentvolumes", false, &["pv"], &["status"]),
        def("apps/v1", "Deployment", "deployments", true, &["deploy"], &["status", "scale"]),
        def("apps/v1", "ReplicaSet", "replicasets", true, &["rs"], &["status", "scale"]),
        def("apps/v1", "StatefulSet", "statefulsets", true, &["sts"], &["status", "scale"]),
        def("apps/v1", "DaemonSet", "daemonsets", true, &["ds"], &["status"]),
        def("batch/v1", "Job", "jobs", true, &[], &["status"]),
        def("batch/v1", "CronJob", "cronjobs", true, &["cj"], &["status"]),
        def("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"], &["status"]),
        def("events.k8s.io/v1", "Event", "events", true, &["ev"], &[]),
        def("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false, &["pc"], &[]),
        def("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", false, &[], &[]),
        // The hub's replicas hold one Lease per cluster (`src/serve/lease.rs`).
        def("coordination.k8s.io/v1", "Lease", "leases", true, &[], &[]),
        def("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", false, &["cq"], &["status"]),
        def("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", true, &["queue", "queues", "lq"], &["status"]),
        def("kueue.x-k8s.io/v1beta2", "Workload", "workloads", true, &["wl"], &["status"]),
        def("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "resourceflavors", false, &["flavor", "flavors", "rf"], &[]),
        def("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "admissionchecks", false, &[], &["status"]),
        def("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", false, &[], &[]),
    ]
}

const VERBS: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `(group, version, kind, verbs)` of a subresource, as discovery reports it.
fn sub_info(d: &ResourceDef, sub: &str) -> (String, String, String, Vec<&'static str>) {
    let own = (d.group.clone(), d.version.clone(), d.kind.clone());
    match sub {
        "status" => (own.0, own.1, own.2, vec!["get", "patch", "update"]),
        "log" => (own.0, own.1, own.2, vec!["get"]),
        "eviction" => ("policy".into(), "v1".into(), "Eviction".into(), vec!["create"]),
        "binding" => (own.0, own.1, "Binding".into(), vec!["create"]),
        "scale" => ("autoscaling".into(), "v1".into(), "Scale".into(), vec!["get", "patch", "update"]),
        "finalize" => (own.0, own.1, own.2, vec!["update"]),
        _ => (own.0, own.1, own.2, vec!["get"]),
    }
}

/// `/api`
pub(crate) fn core_versions(addr: SocketAddr) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}],
    })
}

fn groups_in_order(defs: &[ResourceDef]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for d in defs.iter().filter(|d| !d.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, versions)) => {
                if !versions.contains(&d.version) {
                    versions.push(d.version.clone());
                }
            }
            None => groups.push((d.group.clone(), vec![d.version.clone()])),
        }
    }
    groups
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs[0].clone()})
}

/// `/apis`
pub(crate) fn group_list(defs: &[ResourceDef]) -> Value {
    let groups: Vec<Value> = groups_in_order(defs).iter().map(|(g, vs)| group_doc(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`
pub(crate) fn group(defs: &[ResourceDef], group: &str) -> Option<Value> {
    let (g, vs) = groups_in_order(defs).into_iter().find(|(g, _)| g == group)?;
    let mut doc = group_doc(&g, &vs);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `/api/v1`, `/apis/{group}/{version}`
pub(crate) fn resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let mine: Vec<&ResourceDef> = defs.iter().filter(|d| d.group == group && d.version == version).collect();
    if mine.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for d in mine {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": VERBS,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        resources.push(r);
        for sub in &d.subresources {
            let (g, v, kind, verbs) = sub_info(d, sub);
            let mut r = json!({
                "name": format!("{}/{}", d.plural, sub),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if g != d.group || v != d.version {
                r["group"] = json!(g);
                r["version"] = json!(v);
            }
            resources.push(r);
        }
    }
    let gv = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// The aggregated discovery document (`Accept: …;as=APIGroupDiscoveryList`) for `/api`
/// (`core = true`) or `/apis`.
pub(crate) fn aggregated(defs: &[ResourceDef], core: bool) -> Value {
    let groups: Vec<(String, Vec<String>)> =
        if core { vec![(String::new(), vec!["v1".to_owned()])] } else { groups_in_order(defs) };
    let mut items = Vec::new();
    for (g, versions) in groups {
        let mut vdocs = Vec::new();
        for v in versions {
            let mut resources = Vec::new();
            for d in defs.iter().filter(|d| d.group == g && d.version == v) {
                let subs: Vec<Value> = d
                    .subresources
                    .iter()
                    .map(|sub| {
                        let (sg, sv, kind, verbs) = sub_info(d, sub);
                        json!({"subresource": sub, "responseKind": {"group": sg, "version": sv, "kind": kind}, "verbs": verbs})
                    })
                    .collect();
                resources.push(json!({
                    "resource": d.plural,
                    "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
                    "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": d.singular,
                    "verbs": VERBS,
                    "shortNames": d.short_names,
                    "subresources": subs,
                }));
            }
            vdocs.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": vdocs}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

pub(crate) const AGGREGATED_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

// ----- wire conversion -------------------------------------------------------------------------

/// The stored object as it goes out for `def`: with apiVersion/kind (`with_type`) or, for items
/// of a built-in list, without; a core Event seen through events.k8s.io/v1 is converted.
pub(crate) fn to_wire(def: &ResourceDef, obj: &Value, with_type: bool) -> Value {
    let mut out = if def.is_events_v1() { core_event_to_v1(obj) } else { obj.clone() };
    if let Some(map) = out.as_object_mut() {
        if with_type || !def.builtin {
            map.insert("apiVersion".into(), json!(def.api_version()));
            map.insert("kind".into(), json!(def.kind));
        } else {
            map.remove("apiVersion");
            map.remove("kind");
        }
    }
    out
}

/// What a client sent for `def`, in the stored shape.
pub(crate) fn from_wire(def: &ResourceDef, obj: Value) -> Value {
    if def.is_events_v1() { v1_event_to_core(&obj) } else { obj }
}

fn copy(from: &Value, fk: &str, to: &mut Map<String, Value>, tk: &str) {
    if let Some(v) = from.get(fk).filter(|v| !v.is_null()) {
        to.insert(tk.to_owned(), v.clone());
    }
}

/// core/v1 Event → events.k8s.io/v1 Event.
pub(crate) fn core_event_to_v1(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    out.insert("kind".into(), json!("Event"));
    copy(ev, "metadata", &mut out, "metadata");
    out.insert("eventTime".into(), ev.get("eventTime").cloned().unwrap_or(Value::Null));
    copy(ev, "series", &mut out, "series");
    let controller = ev
        .get("reportingComponent")
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        .or_else(|| ev.pointer("/source/component"))
        .cloned();
    if let Some(c) = controller {
        out.insert("reportingController".into(), c);
    }
    let instance = ev
        .get("reportingInstance")
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        .or_else(|| ev.pointer("/source/host"))
        .cloned();
    if let Some(i) = instance {
        out.insert("reportingInstance".into(), i);
    }
    copy(ev, "action", &mut out, "action");
    copy(ev, "reason", &mut out, "reason");
    copy(ev, "involvedObject", &mut out, "regarding");
    copy(ev, "related", &mut out, "related");
    copy(ev, "message", &mut out, "note");
    copy(ev, "type", &mut out, "type");
    copy(ev, "source", &mut out, "deprecatedSource");
    copy(ev, "firstTimestamp", &mut out, "deprecatedFirstTimestamp");
    copy(ev, "lastTimestamp", &mut out, "deprecatedLastTimestamp");
    copy(ev, "count", &mut out, "deprecatedCount");
    Value::Object(out)
}

/// events.k8s.io/v1 Event → core/v1 Event.
pub(crate) fn v1_event_to_core(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    copy(ev, "metadata", &mut out, "metadata");
    copy(ev, "eventTime", &mut out, "eventTime");
    copy(ev, "series", &mut out, "series");
    copy(ev, "reportingController", &mut out, "reportingComponent");
    copy(ev, "reportingInstance", &mut out, "reportingInstance");
    copy(ev, "action", &mut out, "action");
    copy(ev, "reason", &mut out, "reason");
    copy(ev, "regarding", &mut out, "involvedObject");
    copy(ev, "related", &mut out, "related");
    copy(ev, "note", &mut out, "message");
    copy(ev, "type", &mut out, "type");
    copy(ev, "deprecatedSource", &mut out, "source");
    copy(ev, "deprecatedFirstTimestamp", &mut out, "firstTimestamp");
    copy(ev, "deprecatedLastTimestamp", &mut out, "lastTimestamp");
    copy(ev, "deprecatedCount", &mut out, "count");
    if !out.contains_key("involvedObject") {
        out.insert("involvedObject".into(), json!({}));
    }
    Value::Object(out)
}

/// Field selector keys of the core Event shape, rewritten for the events.k8s.io/v1 shape.
pub(crate) fn events_v1_field(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("involvedObject.") {
        format!("regarding.{rest}")
    } else if path == "source" || path == "reportingComponent" {
        "reportingController".into()
    } else if path == "message" {
        "note".into()
    } else {
        path.to_owned()
    }
}
