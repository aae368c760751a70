//! Volcano beside its Jobs: PodGroups (the gang: `minMember`, phase, and the
//! `Unschedulable` condition that says why it waits) and Queues (capability, deserved and
//! allocated resources, state), read as dynamic objects.

use kube::core::DynamicObject;
use serde_json::{Map, Value};

use super::super::gpu::{is_gpu_resource, whole_units};
use super::super::kueue::{condition, is_true, owner_of, quantity, str_at};

/// A PodGroup: the gang a Volcano Job (or a Kubeflow job under Volcano) is scheduled as.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PodGroupInfo {
    pub namespace: String,
    pub name: String,
    /// The uid of the object that owns it (the Volcano Job, the PyTorchJob).
    pub owner_uid: Option<String>,
    pub min_member: u32,
    pub queue: Option<String>,
    /// Pending, Inqueue, Running, Unknown, Completed.
    pub phase: String,
    /// The `Unschedulable` condition in words, while it holds.
    pub unschedulable: Option<String>,
}

impl PodGroupInfo {
    pub fn from_object(obj: &DynamicObject) -> PodGroupInfo {
        let d = &obj.data;
        let owner_uid = owner_of(obj).map(|o| o.uid.clone());
        let unschedulable = condition(d, "Unschedulable").filter(|c| is_true(Some(c))).map(|c| {
            let reason = c.get("reason").and_then(Value::as_str).unwrap_or("Unschedulable");
            match c.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty()) {
                Some(m) => format!("Volcano {reason}: {m}"),
                None => format!("Volcano {reason}"),
            }
        });
        PodGroupInfo {
            namespace: obj.metadata.namespace.clone().unwrap_or_default(),
            name: obj.metadata.name.clone().unwrap_or_default(),
            owner_uid,
            min_member: d.pointer("/spec/minMember").and_then(Value::as_u64).unwrap_or(0) as u32,
            queue: str_at(d, &["spec", "queue"]).map(str::to_string),
            phase: str_at(d, &["status", "phase"]).unwrap_or("Pending").to_string(),
            unschedulable,
        }
    }

    /// Why the gang waits: the scheduler's condition, else its phase when not yet running.
    pub fn pending_reason(&self) -> Option<String> {
        if let Some(u) = &self.unschedulable {
            return Some(u.clone());
        }
        match self.phase.as_str() {
            "Pending" => {
                Some(format!("Volcano: pod group {} waits to be enqueued (gang of {})", self.name, self.min_member))
            }
            "Inqueue" => Some(format!(
                "Volcano: pod group {} is enqueued; {} to place together",
                self.name,
                crate::model::words::counted(self.min_member, "pod", "pods")
            )),
            _ => None,
        }
    }
}

/// A Volcano Queue (cluster-scoped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueInfo {
    pub name: String,
    /// Open, Closed, Closing, Unknown.
    pub state: String,
    /// GPU milli-units: the most the queue may hold, its fair share, and what it holds now.
    pub gpu_capability: Option<i64>,
    pub gpu_deserved: Option<i64>,
    pub gpu_guarantee: Option<i64>,
    pub gpu_allocated: i64,
    /// The GPU resource names the queue speaks of (`nvidia.com/gpu`).
    pub gpu_resources: Vec<String>,
    pub pending: u32,
    pub running: u32,
    pub inqueue: u32,
}

fn gpu_sum(resources: Option<&Map<String, Value>>, names: &mut Vec<String>) -> Option<i64> {
    let resources = resources?;
    let mut total = None;
    for (k, v) in resources.iter().filter(|(k, _)| is_gpu_resource(k)) {
        if let Some(q) = quantity(v) {
            total = Some(total.unwrap_or(0i64).saturating_add(q));
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    total
}

impl QueueInfo {
    pub fn from_object(obj: &DynamicObject) -> QueueInfo {
        let d = &obj.data;
        let mut names = Vec::new();
        let map = |p: &str| d.pointer(p).and_then(Value::as_object);
        let count = |k: &str| d.pointer(&format!("/status/{k}")).and_then(Value::as_u64).unwrap_or(0) as u32;
        QueueInfo {
            name: obj.metadata.name.clone().unwrap_or_default(),
            state: str_at(d, &["status", "state"]).unwrap_or("Open").to_string(),
            gpu_capability: gpu_sum(map("/spec/capability"), &mut names),
            gpu_deserved: gpu_sum(map("/spec/deserved"), &mut names),
            gpu_guarantee: gpu_sum(map("/spec/guarantee/resource"), &mut names),
            gpu_allocated: gpu_sum(map("/status/allocated"), &mut names).unwrap_or(0),
            gpu_resources: names,
            pending: count("pending"),
            running: count("running"),
            inqueue: count("inqueue"),
        }
    }

    /// The queue's GPU size: its capability, else its deserved share.
    pub fn gpu_total(&self) -> u64 {
        self.gpu_capability.or(self.gpu_deserved).map(whole_units).unwrap_or(0)
    }

    pub fn is_open(&self) -> bool {
        self.state == "Open"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unschedulable_gang_says_why() {
        let pg: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "dist-train", "namespace": "ml",
                "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "dist-train", "uid": "vj1", "controller": true}]},
            "spec": {"minMember": 4, "queue": "research"},
            "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                "message": "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"}]}
        }))
        .unwrap();
        let info = PodGroupInfo::from_object(&pg);
        assert_eq!(info.owner_uid.as_deref(), Some("vj1"));
        assert_eq!((info.min_member, info.queue.as_deref()), (4, Some("research")));
        assert_eq!(
            info.pending_reason().as_deref(),
            Some(
                "Volcano NotEnoughResources: 4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"
            )
        );
    }

    #[test]
    fn a_queue_reads_capability_deserved_and_allocated_gpus() {
        let q: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
            "spec": {"weight": 1, "capability": {"cpu": "64", "nvidia.com/gpu": 16}, "deserved": {"nvidia.com/gpu": "8"},
                "guarantee": {"resource": {"nvidia.com/gpu": "4"}}},
            "status": {"state": "Closed", "running": 2, "pending": 1, "allocated": {"cpu": "16", "nvidia.com/gpu": "6"}}
        }))
        .unwrap();
        let info = QueueInfo::from_object(&q);
        assert_eq!(
            (info.gpu_capability, info.gpu_deserved, info.gpu_guarantee, info.gpu_allocated),
            (Some(16_000), Some(8_000), Some(4_000), 6_000)
        );
        assert_eq!((info.gpu_total(), info.is_open(), info.running, info.pending), (16, false, 2, 1));
        assert_eq!(info.gpu_resources, vec!["nvidia.com/gpu".to_string()]);
    }
}
