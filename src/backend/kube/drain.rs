//! Cordon, uncordon and drain, the way `kubectl` does them.
//!
//! Drain: cordon the node (recording the reason, who and when as annotations); list the
//! node's pods; leave mirror pods and DaemonSet pods alone; refuse pods with `emptyDir`
//! data or without a controller unless the options say otherwise; evict the rest through
//! the Eviction API, concurrently, retrying a disruption budget's 429 a bounded number of
//! times; then wait (within the deadline) until the evicted pods are gone. Pods that stay
//! are reported with the reason. Everything runs within one deadline: the client never
//! retries by itself, so nothing hangs on kube's long default back-off.

use std::time::Duration;

use ::kube::Client;
use ::kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use tokio::time::Instant;

use super::gpu::is_terminated;
use super::map::{DRAIN_AT, DRAIN_BY, DRAIN_REASON};
use crate::backend::BackendError;

/// How a drain treats the pods it finds.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// Evict pods that no controller will re-create (`kubectl drain --force`).
    pub force: bool,
    /// Evict pods whose `emptyDir` data will be lost (`--delete-emptydir-data`).
    pub delete_emptydir_data: bool,
    /// Tries per pod while a disruption budget answers 429.
    pub eviction_tries: u32,
    /// Pause between those tries.
    pub retry_pause: Duration,
    /// Wait for evicted pods to be gone (within the deadline).
    pub wait_for_deletion: bool,
}

impl Default for DrainOptions {
    fn default() -> Self {
        Self {
            force: false,
            delete_emptydir_data: false,
            eviction_tries: 4,
            retry_pause: Duration::from_millis(1000),
            wait_for_deletion: true,
        }
    }
}

/// What a drain did, pod by pod (`namespace/name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainReport {
    pub node: String,
    pub evicted: Vec<String>,
    /// Left alone on purpose: mirror and DaemonSet pods, finished pods.
    pub skipped: Vec<(String, String)>,
    /// Still there, and why (refused, blocked by a disruption budget, an error).
    pub stayed: Vec<(String, String)>,
    /// Evicted but not gone when the deadline passed.
    pub terminating: Vec<String>,
}

impl DrainReport {
    pub fn complete(&self) -> bool {
        self.stayed.is_empty()
    }

    /// One paragraph for the user.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("{} evicted", self.evicted.len())];
        if !self.skipped.is_empty() {
            parts.push(format!("{} left alone (DaemonSet, mirror or finished)", self.skipped.len()));
        }
        if !self.terminating.is_empty() {
            parts.push(format!("{} still terminating: {}", self.terminating.len(), self.terminating.join(", ")));
        }
        let mut text = format!("node {}: {}", self.node, parts.join("; "));
        if !self.stayed.is_empty() {
            let stayed: Vec<String> = self.stayed.iter().map(|(p, why)| format!("{p} ({why})")).collect();
            text.push_str(&format!("; {} stayed: {}", self.stayed.len(), stayed.join("; ")));
        }
        text
    }
}

/// What drain does with one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Evict,
    Skip(String),
    Refuse(String),
}

/// kubectl's filters, in its order.
pub fn classify(pod: &Pod, opts: &DrainOptions) -> Verdict {
    let annotations = pod.metadata.annotations.as_ref();
    if annotations.is_some_and(|a| a.contains_key("kubernetes.io/config.mirror")) {
        return Verdict::Skip("mirror pod".into());
    }
    let controller = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
    if controller.is_some_and(|o| o.kind == "DaemonSet") {
        return Verdict::Skip("DaemonSet pod".into());
    }
    let finished = is_terminated(pod);
    let empty_dir =
        pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).into_iter().flatten().any(|v| v.empty_dir.is_some());
    if empty_dir && !finished && !opts.delete_emptydir_data {
        return Verdict::Refuse("has emptyDir data that eviction would delete".into());
    }
    if controller.is_none() && !finished && !opts.force {
        return Verdict::Refuse("no controller would re-create it (unmanaged pod)".into());
    }
    Verdict::Evict
}

fn pod_name(p: &Pod) -> String {
    format!("{}/{}", p.metadata.namespace.as_deref().unwrap_or(""), p.metadata.name.as_deref().unwrap_or(""))
}

pub(crate) fn api_error(what: &str, err: ::kube::Error) -> BackendError {
    match &err {
        ::kube::Error::Api(s) if s.code == 404 => BackendError::NotFound(format!("{what}: {}", s.message)),
        _ => BackendError::Command {
            command: what.to_string(),
            status: None,
            stderr: super::describe_client_error(&err),
        },
    }
}

/// Mark a node (un)schedulable. Uncordoning also clears flightdeck's drain annotations.
/// `drain` (reason, by) records why, by whom and when, as annotations.
pub async fn set_schedulable(
    client: &Client,
    node: &str,
    cordon: bool,
    drain: Option<(&str, &str)>,
) -> Result<(), BackendError> {
    let api: Api<Node> = Api::all(client.clone());
    let current = api.get(node).await.map_err(|e| api_error(&format!("get node {node}"), e))?;
    let mut patch = json!({"spec": {"unschedulable": cordon}});
    if let Some((reason, by)) = drain {
        patch["metadata"] = json!({"annotations": {
            DRAIN_REASON: reason,
            DRAIN_BY: by,
            DRAIN_AT: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }});
    } else if !cordon {
        let ours: Vec<&str> = [DRAIN_REASON, DRAIN_BY, DRAIN_AT]
            .into_iter()
            .filter(|k| current.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(*k)))
            .collect();
        if !ours.is_empty() {
            let nulls: serde_json::Map<String, serde_json::Value> =
                ours.into_iter().map(|k| (k.to_string(), serde_json::Value::Null)).collect();
            patch["metadata"] = json!({"annotations": nulls});
        }
    }
    api.patch(node, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map_err(|e| api_error(&format!("{} {node}", if cordon { "cordon" } else { "uncordon" }), e))?;
    Ok(())
}

/// The pods bound to `node`: across all namespaces, or (when that is forbidden) in `namespaces`.
async fn pods_on(client: &Client, node: &str, namespaces: &[String]) -> Result<Vec<Pod>, BackendError> {
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let all: Api<Pod> = Api::all(client.clone());
    match all.list(&lp).await {
        Ok(list) => return Ok(list.items),
        Err(::kube::Error::Api(s)) if s.code == 403 && !namespaces.is_empty() => {}
        Err(e) => return Err(api_error(&format!("list pods on node {node}"), e)),
    }
    let mut out = Vec::new();
    for ns in namespaces {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        out.extend(api.list(&lp).await.map_err(|e| api_error(&format!("list pods in {ns} on {node}"), e))?.items);
    }
    Ok(out)
}

enum Eviction {
    Accepted,
    Gone,
    Stayed(String),
}

async fn evict(client: &Client, pod: &Pod, opts: &DrainOptions, deadline: Instant) -> Eviction {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut tries = 0;
    loop {
        tries += 1;
        let attempt = tokio::time::timeout_at(deadline, api.evict(name, &EvictParams::default())).await;
        match attempt {
            Err(_) => return Eviction::Stayed("no answer before the deadline".into()),
            Ok(Ok(_)) => return Eviction::Accepted,
            Ok(Err(::kube::Error::Api(s))) if s.code == 404 => return Eviction::Gone,
            Ok(Err(::kube::Error::Api(s))) if s.code == 429 => {
                let why = if s.message.is_empty() { "too many requests".to_string() } else { s.message.clone() };
                let pause_ends = Instant::now() + opts.retry_pause;
                if tries >= opts.eviction_tries.max(1) || pause_ends >= deadline {
                    return Eviction::Stayed(format!("blocked by a disruption budget after {tries} tries: {why}"));
                }
                tokio::time::sleep_until(pause_ends).await;
            }
            Ok(Err(e)) => return Eviction::Stayed(format!("eviction refused: {}", super::describe_client_error(&e))),
        }
    }
}

/// Wait until the pod is gone (404, or a new pod of the same name) or the deadline passes.
async fn gone(client: &Client, pod: &Pod, deadline: Instant) -> bool {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let uid = pod.metadata.uid.clone();
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    loop {
        match tokio::time::timeout_at(deadline, api.get_opt(name)).await {
            Err(_) => return false,
            Ok(Ok(None)) => return true,
            Ok(Ok(Some(p))) if p.metadata.uid != uid => return true,
            Ok(_) => {}
        }
        if Instant::now() + Duration::from_millis(250) >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Cordon `node`, evict what may be evicted, and report. `reason` and `by` are recorded on
/// the node. Evictions and the wait for deletion end at `deadline`; the caller bounds the
/// whole call (cordon and list included) a little later than that.
pub async fn drain(
    client: &Client,
    node: &str,
    reason: &str,
    by: &str,
    namespaces: &[String],
    opts: &DrainOptions,
    deadline: Instant,
) -> Result<DrainReport, BackendError> {
    set_schedulable(client, node, true, Some((reason, by))).await?;
    let pods = pods_on(client, node, namespaces).await?;
    let mut report = DrainReport { node: node.to_string(), ..DrainReport::default() };
    let mut to_evict = Vec::new();
    for pod in &pods {
        match classify(pod, opts) {
            Verdict::Skip(why) => report.skipped.push((pod_name(pod), why)),
            Verdict::Refuse(why) => report.stayed.push((pod_name(pod), why)),
            Verdict::Evict => to_evict.push(pod),
        }
    }
    let results = futures_util::future::join_all(to_evict.iter().map(|p| evict(client, p, opts, deadline))).await;
    let mut accepted = Vec::new();
    for (pod, result) in to_evict.into_iter().zip(results) {
        match result {
            Eviction::Accepted => accepted.push(pod),
            Eviction::Gone => report.evicted.push(pod_name(pod)),
            Eviction::Stayed(why) => report.stayed.push((pod_name(pod), why)),
        }
    }
    if opts.wait_for_deletion {
        let done = futures_util::future::join_all(accepted.iter().map(|p| gone(client, p, deadline))).await;
        for (pod, gone) in accepted.into_iter().zip(done) {
            report.evicted.push(pod_name(pod));
            if !gone {
                report.terminating.push(pod_name(pod));
            }
        }
    } else {
        report.evicted.extend(accepted.into_iter().map(pod_name));
    }
    report.evicted.sort();
    Ok(report)
}

/// Delete a pod or a Job (with background propagation, so its pods go too).
/// Delete `name` in the background (its pods go with it). With `uid`, only the object of
/// that identity: a newer one that took the name is left alone, and the error says so.
pub async fn delete<K>(api: &Api<K>, name: &str, uid: Option<&str>, what: &str) -> Result<(), BackendError>
where
    K: ::kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut params = DeleteParams::background();
    if let Some(uid) = uid {
        params =
            params.preconditions(::kube::api::Preconditions { uid: Some(uid.to_string()), resource_version: None });
    }
    api.delete(name, &params).await.map(drop).map_err(|e| match &e {
        ::kube::Error::Api(s) if s.code == 409 && uid.is_some() => BackendError::Command {
            command: what.to_string(),
            status: None,
            stderr: format!(
                "{name} is no longer the object you chose (it was deleted and created again); nothing was deleted: {}",
                s.message
            ),
        },
        _ => api_error(what, e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        let mut base = json!({"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": []}, "status": {"phase": "Running"}});
        for (k, val) in v.as_object().unwrap() {
            for (k2, val2) in val.as_object().unwrap() {
                base[k][k2] = val2.clone();
            }
        }
        serde_json::from_value(base).unwrap()
    }

    fn owned_by(kind: &str) -> serde_json::Value {
        json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "u", "controller": true}]}})
    }

    #[test]
    fn kubectl_filters() {
        let opts = DrainOptions::default();
        assert_eq!(classify(&pod(owned_by("ReplicaSet")), &opts), Verdict::Evict);
        assert_eq!(classify(&pod(owned_by("DaemonSet")), &opts), Verdict::Skip("DaemonSet pod".into()));
        let mirror = pod(json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "abc"}}}));
        assert_eq!(classify(&mirror, &opts), Verdict::Skip("mirror pod".into()));
        let bare = pod(json!({"metadata": {}}));
        assert!(matches!(classify(&bare, &opts), Verdict::Refuse(why) if why.contains("unmanaged")));
        assert_eq!(classify(&bare, &DrainOptions { force: true, ..opts.clone() }), Verdict::Evict);
        let mut with_scratch = pod(owned_by("ReplicaSet"));
        with_scratch.spec.as_mut().unwrap().volumes =
            Some(vec![serde_json::from_value(json!({"name": "scratch", "emptyDir": {}})).unwrap()]);
        assert!(matches!(classify(&with_scratch, &opts), Verdict::Refuse(why) if why.contains("emptyDir")));
        let told = DrainOptions { delete_emptydir_data: true, ..opts.clone() };
        assert_eq!(classify(&with_scratch, &told), Verdict::Evict);
        // Finished pods go whatever they hold.
        let mut done = pod(json!({"metadata": {}}));
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        done.spec.as_mut().unwrap().volumes = with_scratch.spec.as_ref().unwrap().volumes.clone();
        assert_eq!(classify(&done, &opts), Verdict::Evict);
    }

    #[test]
    fn report_names_what_stayed() {
        let r = DrainReport {
            node: "gpu-1".into(),
            evicted: vec!["ml/a".into()],
            skipped: vec![("kube-system/dcgm".into(), "DaemonSet pod".into())],
            stayed: vec![("ml/db".into(), "blocked by a disruption budget after 4 tries: Cannot evict pod".into())],
            terminating: vec![],
        };
        assert!(!r.complete());
        assert_eq!(
            r.summary(),
            "node gpu-1: 1 evicted; 1 left alone (DaemonSet, mirror or finished); 1 stayed: ml/db (blocked by a disruption budget after 4 tries: Cannot evict pod)"
        );
    }
}
