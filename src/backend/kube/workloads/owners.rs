//! Which job every pod belongs to: each pod's controller owner reference is followed up
//! through the objects the adapter watches (batch Jobs and the workload kinds) to the top
//! owner, so a PyTorchJob's 8 pods, a JobSet's Jobs and their pods, or a RayJob's cluster
//! all become one job. Owners are looked up in an index built once per snapshot from the
//! watch caches (never a request per pod), and each owner's top is worked out once.
//!
//! Pods whose owner the adapter does not watch still group, by the owner's kind and name (a
//! ReplicaSet by the Deployment its `pod-template-hash` says it belongs to; a
//! LeaderWorkerSet's StatefulSets by the set's name label); pods without an owner, mirror
//! pods and pods of a batch Job that is gone stay single.

use std::collections::BTreeMap;
use std::sync::Arc;

// foldhash, not std's SipHash: the index is built and read for every pod of every snapshot.
use foldhash::{HashMap, HashMapExt};

use k8s_openapi::api::batch::v1::Job as KJob;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::core::DynamicObject;

use super::kinds::WorkloadKind;

/// The label LeaderWorkerSet puts on every pod of a set.
pub const LWS_NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";

/// A watched object: the index of a batch Job or of a workload object in the snapshot's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Watched {
    Batch(usize),
    Workload(usize),
}

/// An owner the adapter does not watch, known from references and labels only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerKey {
    pub namespace: String,
    pub kind: String,
    pub api_version: String,
    pub name: String,
}

/// Pods sorted by the job they belong to.
#[derive(Debug, Default)]
pub struct Grouped<'a> {
    /// Per batch Job (by index): its pods, and whether a workload owns the Job itself.
    pub batch: Vec<Vec<&'a Pod>>,
    pub batch_owned: Vec<bool>,
    /// Per workload object (by index): its pods, and whether another workload owns it (a
    /// RayJob's RayCluster, a TrainJob's JobSet: shown as part of their owner).
    pub workloads: Vec<Vec<&'a Pod>>,
    pub workloads_owned: Vec<bool>,
    /// Owners that are not watched, with their pods.
    pub unwatched: BTreeMap<OwnerKey, Vec<&'a Pod>>,
    /// Pods that are jobs of their own.
    pub bare: Vec<&'a Pod>,
}

#[derive(Hash, PartialEq, Eq)]
enum KindKey {
    Batch,
    Workload(WorkloadKind),
}

fn controller(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.as_ref()?.iter().find(|o| o.controller == Some(true))
}

fn kind_key(r: &OwnerReference) -> Option<KindKey> {
    if r.kind == "Job" && r.api_version.starts_with("batch/") {
        return Some(KindKey::Batch);
    }
    WorkloadKind::of_reference(&r.api_version, &r.kind).map(KindKey::Workload)
}

struct Index<'o> {
    by_name: HashMap<(&'o str, KindKey, &'o str), Watched>,
    parent: HashMap<Watched, (&'o str, KindKey, &'o str)>,
    top: HashMap<Watched, Watched>,
}

impl<'o> Index<'o> {
    fn new(jobs: &'o [Arc<KJob>], workloads: &'o [(WorkloadKind, Arc<DynamicObject>)]) -> Index<'o> {
        let mut by_name = HashMap::with_capacity(jobs.len() + workloads.len());
        let mut parent = HashMap::new();
        let mut add = |meta: &'o ObjectMeta, kind: KindKey, at: Watched| {
            let ns = meta.namespace.as_deref().unwrap_or("");
            by_name.insert((ns, kind, meta.name.as_deref().unwrap_or("")), at);
            if let Some(r) = controller(meta)
                && let Some(k) = kind_key(r)
            {
                parent.insert(at, (ns, k, r.name.as_str()));
            }
        };
        for (i, j) in jobs.iter().enumerate() {
            add(&j.metadata, KindKey::Batch, Watched::Batch(i));
        }
        for (i, (kind, o)) in workloads.iter().enumerate() {
            add(&o.metadata, KindKey::Workload(*kind), Watched::Workload(i));
        }
        Index { by_name, parent, top: HashMap::with_capacity(jobs.len() + workloads.len()) }
    }

    /// The top owner of a watched object (itself when nothing watched owns it); each
    /// object's answer is kept, and a reference cycle stops after a bounded climb.
    fn top(&mut self, at: Watched) -> Watched {
        if let Some(t) = self.top.get(&at) {
            return *t;
        }
        let mut here = at;
        for _ in 0..16 {
            let Some(up) = self.parent.get(&here).and_then(|key| self.by_name.get(key)) else { break };
            if *up == at {
                break;
            }
            here = *up;
        }
        self.top.insert(at, here);
        here
    }

    fn find(&self, ns: &str, r: &OwnerReference) -> Option<Watched> {
        let k = kind_key(r)?;
        self.by_name.get(&(ns, k, r.name.as_str())).copied()
    }
}

/// Group the pods under their top owners.
pub fn group<'a>(
    pods: &'a [Arc<Pod>],
    jobs: &[Arc<KJob>],
    workloads: &[(WorkloadKind, Arc<DynamicObject>)],
) -> Grouped<'a> {
    let mut index = Index::new(jobs, workloads);
    let mut out = Grouped {
        batch: vec![Vec::new(); jobs.len()],
        batch_owned: vec![false; jobs.len()],
        workloads: vec![Vec::new(); workloads.len()],
        workloads_owned: vec![false; workloads.len()],
        ..Grouped::default()
    };
    // Every watched object's top, by position: a pod's owner is then one lookup by name.
    let batch_top: Vec<Watched> = (0..jobs.len()).map(|i| index.top(Watched::Batch(i))).collect();
    let workload_top: Vec<Watched> = (0..workloads.len()).map(|i| index.top(Watched::Workload(i))).collect();
    for (i, top) in batch_top.iter().enumerate() {
        out.batch_owned[i] = *top != Watched::Batch(i);
    }
    for (i, top) in workload_top.iter().enumerate() {
        out.workloads_owned[i] = *top != Watched::Workload(i);
    }
    // LeaderWorkerSets by name: their pods' owners are StatefulSets, not watched.
    let lws: HashMap<(&str, &str), usize> = workloads
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| *k == WorkloadKind::LeaderWorkerSet)
        .map(|(i, (_, o))| {
            ((o.metadata.namespace.as_deref().unwrap_or(""), o.metadata.name.as_deref().unwrap_or("")), i)
        })
        .collect();
    for pod in pods {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(r) = controller(&pod.metadata) else {
            out.bare.push(pod);
            continue;
        };
        if let Some(at) = index.find(ns, r) {
            let top = match at {
                Watched::Batch(i) => batch_top[i],
                Watched::Workload(i) => workload_top[i],
            };
            match top {
                Watched::Batch(i) => out.batch[i].push(pod),
                Watched::Workload(i) => out.workloads[i].push(pod),
            }
            continue;
        }
        let labels = pod.metadata.labels.as_ref();
        if let Some(set) = labels.and_then(|l| l.get(LWS_NAME_LABEL)) {
            match lws.get(&(ns, set.as_str())) {
                Some(i) => out.workloads[*i].push(pod),
                None => out
                    .unwatched
                    .entry(OwnerKey {
                        namespace: ns.into(),
                        kind: "LeaderWorkerSet".into(),
                        api_version: format!("{}/v1", super::kinds::LWS),
                        name: set.clone(),
                    })
                    .or_default()
                    .push(pod),
            }
            continue;
        }
        let key = match (r.kind.as_str(), kind_key(r)) {
            // A Job that is gone (deleted with its pods orphaned) or a static pod's node.
            (_, Some(KindKey::Batch)) | ("Node", _) => None,
            ("ReplicaSet", _) => {
                let hash = labels.and_then(|l| l.get("pod-template-hash"));
                let deployment = hash.and_then(|h| r.name.strip_suffix(h.as_str())?.strip_suffix('-'));
                Some(match deployment {
                    Some(d) => OwnerKey {
                        namespace: ns.into(),
                        kind: "Deployment".into(),
                        api_version: "apps/v1".into(),
                        name: d.into(),
                    },
                    None => OwnerKey {
                        namespace: ns.into(),
                        kind: r.kind.clone(),
                        api_version: r.api_version.clone(),
                        name: r.name.clone(),
                    },
                })
            }
            _ => Some(OwnerKey {
                namespace: ns.into(),
                kind: r.kind.clone(),
                api_version: r.api_version.clone(),
                name: r.name.clone(),
            }),
        };
        match key {
            Some(k) => out.unwatched.entry(k).or_default().push(pod),
            None => out.bare.push(pod),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn meta(kind_av: Option<(&str, &str, &str)>, name: &str, labels: Value) -> Value {
        let mut m = json!({"name": name, "namespace": "ml", "uid": format!("uid-{name}"), "labels": labels});
        if let Some((av, kind, owner)) = kind_av {
            m["ownerReferences"] = json!([{"apiVersion": av, "kind": kind, "name": owner, "uid": format!("uid-{owner}"), "controller": true}]);
        }
        m
    }

    fn pod(owner: Option<(&str, &str, &str)>, name: &str, labels: Value) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({"metadata": meta(owner, name, labels), "spec": {"containers": []}})).unwrap(),
        )
    }

    fn workload(
        kind: WorkloadKind,
        owner: Option<(&str, &str, &str)>,
        name: &str,
    ) -> (WorkloadKind, Arc<DynamicObject>) {
        let d = kind.def();
        let v = json!({"apiVersion": format!("{}/{}", d.group, d.versions[0]), "kind": d.kind, "metadata": meta(owner, name, json!({}))});
        (kind, Arc::new(serde_json::from_value(v).unwrap()))
    }

    #[test]
    fn a_replicaset_groups_as_its_deployment_and_orphans_stay_single() {
        let pods = vec![
            pod(
                Some(("apps/v1", "ReplicaSet", "vllm-6f7d9c8b5")),
                "vllm-6f7d9c8b5-x2k4n",
                json!({"pod-template-hash": "6f7d9c8b5"}),
            ),
            pod(
                Some(("apps/v1", "ReplicaSet", "vllm-6f7d9c8b5")),
                "vllm-6f7d9c8b5-a1b2c",
                json!({"pod-template-hash": "6f7d9c8b5"}),
            ),
            pod(Some(("apps/v1", "ReplicaSet", "odd")), "odd-1", json!({})),
            pod(Some(("batch/v1", "Job", "gone")), "gone-0-abc", json!({})),
            pod(Some(("v1", "Node", "gpu-1")), "static-gpu-1", json!({})),
            pod(None, "loose", json!({})),
        ];
        let g = group(&pods, &[], &[]);
        let keys: Vec<(&str, &str, usize)> =
            g.unwatched.iter().map(|(k, v)| (k.kind.as_str(), k.name.as_str(), v.len())).collect();
        assert_eq!(keys, vec![("Deployment", "vllm", 2), ("ReplicaSet", "odd", 1)]);
        let bare: Vec<&str> = g.bare.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(bare, vec!["gone-0-abc", "static-gpu-1", "loose"]);
    }

    #[test]
    fn owners_are_followed_to_the_top_and_a_cycle_stops() {
        let jobs: Vec<Arc<KJob>> = vec![Arc::new(
            serde_json::from_value(
                json!({"metadata": meta(Some(("jobset.x-k8s.io/v1alpha2", "JobSet", "js")), "js-node-0", json!({}))}),
            )
            .unwrap(),
        )];
        let workloads = vec![
            workload(WorkloadKind::TrainJob, None, "tj"),
            workload(WorkloadKind::JobSet, Some(("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj")), "js"),
            // Two RayClusters owning each other: the climb stops.
            workload(WorkloadKind::RayCluster, Some(("ray.io/v1", "RayCluster", "b")), "a"),
            workload(WorkloadKind::RayCluster, Some(("ray.io/v1", "RayCluster", "a")), "b"),
        ];
        let pods = vec![
            pod(Some(("batch/v1", "Job", "js-node-0")), "js-node-0-0", json!({})),
            pod(Some(("ray.io/v1", "RayCluster", "a")), "ray-a-head", json!({})),
        ];
        let g = group(&pods, &jobs, &workloads);
        assert_eq!(g.batch_owned, vec![true]);
        assert_eq!(&g.workloads_owned[..2], &[false, true], "the TrainJob's JobSet is part of it");
        assert_eq!(g.workloads[0].len(), 1, "the TrainJob has the pod three levels down");
        assert!(g.workloads[1].is_empty());
        assert_eq!(g.workloads[2].len() + g.workloads[3].len(), 1);
        assert!(g.bare.is_empty() && g.unwatched.is_empty());
    }
}
