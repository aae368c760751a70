//! Kueue's objects, read as dynamic objects: Workloads (why a job waits), LocalQueues (which
//! ClusterQueue a namespace's queue feeds) and ClusterQueues (quota and usage per flavor).
//!
//! Kueue stores `v1beta2` since 0.16 and still serves `v1beta1`; the adapter asks for
//! `v1beta2` first and falls back. Field names that differ between the two (`cohort` /
//! `cohortName`, `flavorsUsage` / `flavorUsage`) are all accepted.

use kube::core::{ApiResource, DynamicObject};
use serde_json::Value;

use super::gpu::{is_gpu_resource, parse_quantity_milli, whole_units};

pub const GROUP: &str = "kueue.x-k8s.io";
/// Newest first: the order the adapter tries them in.
pub const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
/// The label a Job carries to be queued by Kueue.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The three Kueue kinds the adapter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KueueKind {
    Workload,
    LocalQueue,
    ClusterQueue,
}

impl KueueKind {
    pub const ALL: [KueueKind; 3] = [KueueKind::Workload, KueueKind::LocalQueue, KueueKind::ClusterQueue];

    pub fn kind(self) -> &'static str {
        match self {
            KueueKind::Workload => "Workload",
            KueueKind::LocalQueue => "LocalQueue",
            KueueKind::ClusterQueue => "ClusterQueue",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            KueueKind::Workload => "workloads",
            KueueKind::LocalQueue => "localqueues",
            KueueKind::ClusterQueue => "clusterqueues",
        }
    }

    pub fn namespaced(self) -> bool {
        self != KueueKind::ClusterQueue
    }

    /// The API resource of this kind at `version`.
    pub fn resource(self, version: &str) -> ApiResource {
        ApiResource {
            group: GROUP.into(),
            version: version.into(),
            api_version: format!("{GROUP}/{version}"),
            kind: self.kind().into(),
            plural: self.plural().into(),
        }
    }
}

/// The object's controller reference, else its first owner reference.
pub(super) fn owner_of(obj: &DynamicObject) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    let refs = obj.metadata.owner_references.as_deref().unwrap_or(&[]);
    refs.iter().find(|o| o.controller == Some(true)).or_else(|| refs.first())
}

pub(super) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

pub(super) fn condition<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    v.get("status")?.get("conditions")?.as_array()?.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub(super) fn is_true(c: Option<&Value>) -> bool {
    c.and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

/// What a Workload says about its job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WorkloadInfo {
    pub namespace: String,
    pub name: String,
    /// The owning object (`Job`, name).
    pub owner: Option<(String, String)>,
    pub queue: Option<String>,
    pub cluster_queue: Option<String>,
    pub quota_reserved: bool,
    pub admitted: bool,
    pub finished: bool,
    pub evicted: bool,
    /// `spec.active: false`: deactivated by a user or by Kueue.
    pub inactive: bool,
    /// Why it waits (or was evicted): the latest relevant condition's reason and message.
    pub reason: Option<String>,
    pub priority: Option<i64>,
}

impl WorkloadInfo {
    pub fn from_object(obj: &DynamicObject) -> WorkloadInfo {
        let d = &obj.data;
        let owner = owner_of(obj).map(|o| (o.kind.clone(), o.name.clone()));
        let quota = condition(d, "QuotaReserved");
        let admitted = condition(d, "Admitted");
        let evicted = condition(d, "Evicted");
        let describe = |c: &Value| {
            let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
            let message = c.get("message").and_then(Value::as_str).unwrap_or("");
            match (reason.is_empty(), message.is_empty()) {
                (true, true) => None,
                (false, true) => Some(format!("Kueue {reason}")),
                (true, false) => Some(format!("Kueue: {message}")),
                (false, false) => Some(format!("Kueue {reason}: {message}")),
            }
        };
        let mut info = WorkloadInfo {
            namespace: obj.metadata.namespace.clone().unwrap_or_default(),
            name: obj.metadata.name.clone().unwrap_or_default(),
            owner,
            queue: str_at(d, &["spec", "queueName"]).map(str::to_string),
            cluster_queue: str_at(d, &["status", "admission", "clusterQueue"]).map(str::to_string),
            quota_reserved: is_true(quota),
            admitted: is_true(admitted),
            finished: is_true(condition(d, "Finished")),
            evicted: is_true(evicted),
            inactive: d.get("spec").and_then(|s| s.get("active")).and_then(Value::as_bool) == Some(false),
            reason: None,
            priority: d.get("spec").and_then(|s| s.get("priority")).and_then(Value::as_i64),
        };
        info.reason = if info.evicted && !info.admitted {
            evicted.and_then(describe)
        } else if !info.quota_reserved {
            quota.and_then(describe).or_else(|| Some("Kueue: waiting for quota".into()))
        } else if !info.admitted {
            admitted.and_then(describe).or_else(|| Some("Kueue: waiting for admission checks".into()))
        } else {
            None
        };
        if info.inactive && !info.admitted {
            info.reason = Some("Kueue: workload deactivated (spec.active = false)".into());
        }
        info
    }
}

/// A LocalQueue: a namespace's door into a ClusterQueue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalQueueInfo {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: Option<String>,
}

impl LocalQueueInfo {
    pub fn from_object(obj: &DynamicObject) -> LocalQueueInfo {
        LocalQueueInfo {
            namespace: obj.metadata.namespace.clone().unwrap_or_default(),
            name: obj.metadata.name.clone().unwrap_or_default(),
            cluster_queue: str_at(&obj.data, &["spec", "clusterQueue"]).map(str::to_string),
        }
    }
}

/// Quota and use of one resource in one flavor, in whole units (GPUs, CPUs) or bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlavorQuota {
    pub flavor: String,
    pub resource: String,
    /// In milli-units, as every quantity here.
    pub nominal: i64,
    pub borrowing_limit: Option<i64>,
    pub used: i64,
    pub borrowed: i64,
}

/// A ClusterQueue: quota per flavor and what is in use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterQueueInfo {
    pub name: String,
    pub cohort: Option<String>,
    pub quotas: Vec<FlavorQuota>,
    pub pending_workloads: u32,
    pub admitted_workloads: u32,
    pub reserving_workloads: u32,
    /// `Active` is not `True`: the queue admits nothing (its reason).
    pub inactive_reason: Option<String>,
}

impl ClusterQueueInfo {
    pub fn from_object(obj: &DynamicObject) -> ClusterQueueInfo {
        let d = &obj.data;
        let mut quotas: Vec<FlavorQuota> = Vec::new();
        for group in d.pointer("/spec/resourceGroups").and_then(Value::as_array).into_iter().flatten() {
            for flavor in group.get("flavors").and_then(Value::as_array).into_iter().flatten() {
                let fname = flavor.get("name").and_then(Value::as_str).unwrap_or_default();
                for r in flavor.get("resources").and_then(Value::as_array).into_iter().flatten() {
                    let q = |k: &str| r.get(k).and_then(quantity);
                    quotas.push(FlavorQuota {
                        flavor: fname.to_string(),
                        resource: r.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                        nominal: q("nominalQuota").unwrap_or(0),
                        borrowing_limit: q("borrowingLimit"),
                        used: 0,
                        borrowed: 0,
                    });
                }
            }
        }
        // Usage: admitted (flavorsUsage) where the status has it, else reserved.
        let status = d.get("status");
        let usage = ["flavorsUsage", "flavorUsage", "flavorsReservation", "flavorReservation"]
            .iter()
            .find_map(|k| status.and_then(|s| s.get(*k)).and_then(Value::as_array));
        for flavor in usage.into_iter().flatten() {
            let fname = flavor.get("name").and_then(Value::as_str).unwrap_or_default();
            for r in flavor.get("resources").and_then(Value::as_array).into_iter().flatten() {
                let rname = r.get("name").and_then(Value::as_str).unwrap_or_default();
                let used = r.get("total").and_then(quantity).unwrap_or(0);
                let borrowed = r.get("borrowed").and_then(quantity).unwrap_or(0);
                match quotas.iter_mut().find(|q| q.flavor == fname && q.resource == rname) {
                    Some(q) => {
                        q.used = used;
                        q.borrowed = borrowed;
                    }
                    None => quotas.push(FlavorQuota {
                        flavor: fname.into(),
                        resource: rname.into(),
                        used,
                        borrowed,
                        ..FlavorQuota::default()
                    }),
                }
            }
        }
        let count = |k: &str| status.and_then(|s| s.get(k)).and_then(Value::as_u64).unwrap_or(0) as u32;
        let active = condition(d, "Active");
        ClusterQueueInfo {
            name: obj.metadata.name.clone().unwrap_or_default(),
            cohort: str_at(d, &["spec", "cohortName"]).or_else(|| str_at(d, &["spec", "cohort"])).map(str::to_string),
            quotas,
            pending_workloads: count("pendingWorkloads"),
            admitted_workloads: count("admittedWorkloads"),
            reserving_workloads: count("reservingWorkloads"),
            inactive_reason: active.filter(|c| !is_true(Some(c))).map(|c| {
                let reason = c.get("reason").and_then(Value::as_str).unwrap_or("Inactive");
                match c.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()) {
                    Some(m) => format!("{reason}: {m}"),
                    None => reason.to_string(),
                }
            }),
        }
    }

    /// GPU quota (nominal) over every flavor, in whole GPUs.
    pub fn gpu_quota(&self) -> u64 {
        self.quotas.iter().filter(|q| is_gpu_resource(&q.resource)).map(|q| whole_units(q.nominal)).sum()
    }

    /// GPUs in use by admitted workloads, in whole GPUs.
    pub fn gpu_used(&self) -> u64 {
        self.quotas.iter().filter(|q| is_gpu_resource(&q.resource)).map(|q| whole_units(q.used)).sum()
    }
}

/// A quantity written as a string (`"8"`, `"64Gi"`) or a bare number.
pub(super) fn quantity(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_quantity_milli(s),
        Value::Number(n) => n.as_i64().map(|i| i.saturating_mul(1000)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dynamic(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn resources_per_version() {
        let ar = KueueKind::ClusterQueue.resource("v1beta2");
        assert_eq!(ar.api_version, "kueue.x-k8s.io/v1beta2");
        assert_eq!(ar.plural, "clusterqueues");
        assert!(!KueueKind::ClusterQueue.namespaced());
        assert!(KueueKind::Workload.namespaced());
    }

    #[test]
    fn pending_workload_says_why() {
        let wl = dynamic(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "job-train-abc", "namespace": "ml",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u1", "controller": true}]},
            "spec": {"queueName": "team-a", "podSets": []},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more needed"}]}
        }));
        let info = WorkloadInfo::from_object(&wl);
        assert_eq!(info.owner, Some(("Job".into(), "train".into())));
        assert_eq!(info.queue.as_deref(), Some("team-a"));
        assert!(!info.admitted && !info.quota_reserved);
        assert_eq!(
            info.reason.as_deref(),
            Some(
                "Kueue Pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more needed"
            )
        );

        let admitted = dynamic(json!({
            "metadata": {"name": "w", "namespace": "ml"},
            "status": {"admission": {"clusterQueue": "cq-a"}, "conditions": [
                {"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
        }));
        let info = WorkloadInfo::from_object(&admitted);
        assert!(info.admitted);
        assert_eq!(info.cluster_queue.as_deref(), Some("cq-a"));
        assert_eq!(info.reason, None);
    }

    #[test]
    fn cluster_queue_quota_and_usage_both_versions() {
        for (usage_key, cohort_key) in [("flavorsUsage", "cohortName"), ("flavorUsage", "cohort")] {
            let cq = dynamic(json!({
                "metadata": {"name": "cq-a"},
                "spec": {cohort_key: "all", "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
                    {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "64"}, {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": "8"}]},
                    {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "32"}, {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}
                ]}]},
                "status": {usage_key: [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "12", "borrowed": "0"}]},
                                       {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}],
                    "pendingWorkloads": 3, "admittedWorkloads": 2,
                    "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}
            }));
            let info = ClusterQueueInfo::from_object(&cq);
            assert_eq!(info.cohort.as_deref(), Some("all"));
            assert_eq!(info.gpu_quota(), 24);
            assert_eq!(info.gpu_used(), 20);
            assert_eq!((info.pending_workloads, info.admitted_workloads), (3, 2));
            let h100 = info.quotas.iter().find(|q| q.flavor == "h100" && q.resource == "nvidia.com/gpu").unwrap();
            assert_eq!(h100.borrowing_limit, Some(8000));
            assert_eq!(info.inactive_reason, None);
        }
    }

    #[test]
    fn local_queue_points_at_its_cluster_queue() {
        let lq = dynamic(json!({"metadata": {"name": "team-a", "namespace": "ml"}, "spec": {"clusterQueue": "cq-a"}}));
        let info = LocalQueueInfo::from_object(&lq);
        assert_eq!(info.cluster_queue.as_deref(), Some("cq-a"));
        assert_eq!(info.namespace, "ml");
    }
}
