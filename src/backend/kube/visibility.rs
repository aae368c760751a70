//! Kueue's visibility API (`visibility.kueue.x-k8s.io`): where a pending workload stands in
//! its ClusterQueue and LocalQueue. Asked for one job on demand (`flightdeck why`), never per
//! refresh: the answer lists every pending workload of the ClusterQueue.
//!
//! `GET /apis/visibility.kueue.x-k8s.io/{v1beta2|v1beta1}/clusterqueues/NAME/pendingworkloads`
//! answers a `PendingWorkloadsSummary` whose `items` carry the workload's `metadata`,
//! `localQueueName`, and its 0-based `positionInClusterQueue` and `positionInLocalQueue`.

use ::kube::Client;
use ::kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

use super::drain::api_error;
use crate::backend::BackendError;

pub const GROUP: &str = "visibility.kueue.x-k8s.io";
/// Newest first: Kueue 0.16 serves v1beta2 beside v1beta1.
const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];

/// A pending workload's place, counted from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub cluster_queue: String,
    pub in_cluster_queue: u64,
    pub cluster_queue_pending: usize,
    pub local_queue: Option<String>,
    pub in_local_queue: Option<u64>,
    pub local_queue_pending: usize,
}

impl Position {
    /// `position 3 of 7 in ClusterQueue team-a (1 of 2 in LocalQueue research/q)`.
    pub fn line(&self, namespace: &str) -> String {
        let mut out = format!(
            "position {} of {} in ClusterQueue {}",
            self.in_cluster_queue, self.cluster_queue_pending, self.cluster_queue
        );
        if let (Some(lq), Some(at)) = (&self.local_queue, self.in_local_queue) {
            out.push_str(&format!(" ({at} of {} in LocalQueue {namespace}/{lq})", self.local_queue_pending));
        }
        out
    }
}

/// The place of workload `namespace/name` in a `PendingWorkloadsSummary`; `None` when it is
/// not listed (admitted meanwhile, or not yet seen by Kueue).
pub fn find(summary: &Value, cluster_queue: &str, namespace: &str, name: &str) -> Option<Position> {
    let items = summary.get("items")?.as_array()?;
    let meta =
        |item: &Value, key: &str| item.pointer(&format!("/metadata/{key}")).and_then(Value::as_str).map(str::to_string);
    let item = items
        .iter()
        .find(|i| meta(i, "name").as_deref() == Some(name) && meta(i, "namespace").as_deref() == Some(namespace))?;
    let local_queue = item.get("localQueueName").and_then(Value::as_str).map(str::to_string);
    let local_queue_pending = items
        .iter()
        .filter(|i| {
            meta(i, "namespace").as_deref() == Some(namespace)
                && i.get("localQueueName").and_then(Value::as_str) == local_queue.as_deref()
        })
        .count();
    Some(Position {
        cluster_queue: cluster_queue.to_string(),
        in_cluster_queue: item.get("positionInClusterQueue").and_then(Value::as_u64)? + 1,
        cluster_queue_pending: items.len(),
        in_local_queue: item.get("positionInLocalQueue").and_then(Value::as_u64).map(|p| p + 1),
        local_queue,
        local_queue_pending,
    })
}

/// What the visibility API says of workload `namespace/name` in `cluster_queue`, as lines
/// for `why`: its position, that it is not listed, or that the API is not served here.
pub async fn explain(
    client: &Client,
    cluster_queue: &str,
    namespace: &str,
    name: &str,
) -> Result<Vec<String>, BackendError> {
    for version in VERSIONS {
        let resource = ApiResource {
            group: GROUP.into(),
            version: version.into(),
            api_version: format!("{GROUP}/{version}"),
            kind: "ClusterQueue".into(),
            plural: "clusterqueues".into(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        match api.get_subresource("pendingworkloads", cluster_queue).await {
            Ok(summary) => {
                let summary = serde_json::to_value(&summary).unwrap_or(Value::Null);
                return Ok(vec![match find(&summary, cluster_queue, namespace, name) {
                    Some(p) => p.line(namespace),
                    None => format!(
                        "Kueue does not list it among ClusterQueue {cluster_queue}'s pending workloads (admitted or not yet queued)"
                    ),
                }]);
            }
            Err(::kube::Error::Api(s)) if s.code == 404 => continue,
            Err(e) => return Err(api_error(&format!("Kueue's visibility API for ClusterQueue {cluster_queue}"), e)),
        }
    }
    Ok(vec![format!(
        "no queue position: this cluster does not serve Kueue's visibility API ({GROUP}) for ClusterQueue {cluster_queue}"
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(ns: &str, name: &str, lq: &str, in_cq: u64, in_lq: u64) -> Value {
        json!({"metadata": {"name": name, "namespace": ns}, "priority": 0, "localQueueName": lq,
            "positionInClusterQueue": in_cq, "positionInLocalQueue": in_lq})
    }

    #[test]
    fn the_position_counts_from_one_in_both_queues() {
        let summary = json!({"kind": "PendingWorkloadsSummary", "items": [
            item("a", "w1", "q", 0, 0), item("b", "w2", "r", 1, 0), item("a", "w3", "q", 2, 1)]});
        let p = find(&summary, "team", "a", "w3").unwrap();
        assert_eq!(p.line("a"), "position 3 of 3 in ClusterQueue team (2 of 2 in LocalQueue a/q)");
        assert_eq!(find(&summary, "team", "b", "w1"), None, "the namespace counts");
        assert_eq!(find(&json!({}), "team", "a", "w1"), None);
    }
}
