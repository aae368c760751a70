//! Actions on a workload act on the workload object, never pod by pod: cancel deletes it
//! with background propagation (its Jobs and pods go with it, as `kubectl delete` does);
//! hold and release set the field its operator reads (`spec.suspend`, Kubeflow's
//! `spec.runPolicy.suspend`) or, for a Volcano Job, create the `AbortJob`/`ResumeJob`
//! Command that `vcctl job suspend/resume` creates. A workload queued by Kueue is held
//! through Kueue, which owns the suspend field: its Kueue Workload's `spec.active` goes
//! false (Kueue evicts it and suspends the object) and back to true (it queues again).

use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::json;

use super::super::drain::{self, api_error};
use super::super::kueue::{KueueKind, QUEUE_LABEL, VERSIONS as KUEUE_VERSIONS};
use super::kinds::{WorkloadKind, volcano_command};
use crate::backend::BackendError;

fn api(client: &Client, kind: WorkloadKind, version: &str, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &kind.def().resource(version))
}

fn what(kind: WorkloadKind, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", kind.def().kind)
}

/// Delete the object with background propagation; with `uid`, only that very object.
pub async fn cancel(
    client: &Client,
    kind: WorkloadKind,
    version: &str,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<(), BackendError> {
    let api = api(client, kind, version, namespace);
    drain::delete(&api, name, uid, &format!("delete {}", what(kind, namespace, name))).await
}

/// Hold (`suspend = true`) or release the object.
pub async fn set_suspended(
    client: &Client,
    kind: WorkloadKind,
    version: &str,
    namespace: &str,
    name: &str,
    suspend: bool,
    by: &str,
) -> Result<(), BackendError> {
    let verb = if suspend { "hold" } else { "release" };
    let Some(via) = kind.suspend_via() else {
        return Err(BackendError::Unsupported(format!(
            "a {} cannot be suspended; scale it instead (kubectl scale {}/{name} -n {namespace} --replicas=0)",
            kind.def().kind,
            kind.def().plural
        )));
    };
    let api = api(client, kind, version, namespace);
    let current = api.get(name).await.map_err(|e| api_error(&format!("get {}", what(kind, namespace, name)), e))?;
    if current.metadata.labels.as_ref().is_some_and(|l| l.contains_key(QUEUE_LABEL)) {
        let uid = current.metadata.uid.as_deref().unwrap_or_default();
        return set_kueue_active(client, namespace, uid, &what(kind, namespace, name), !suspend).await;
    }
    let command = format!("{verb} {} ({via})", what(kind, namespace, name));
    let patch = match kind {
        WorkloadKind::PyTorchJob
        | WorkloadKind::MpiJob
        | WorkloadKind::TfJob
        | WorkloadKind::XgBoostJob
        | WorkloadKind::PaddleJob
        | WorkloadKind::JaxJob => json!({"spec": {"runPolicy": {"suspend": suspend}}}),
        WorkloadKind::VolcanoJob => return volcano_command_for(client, &current, suspend, by, &command).await,
        _ => json!({"spec": {"suspend": suspend}}),
    };
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(drop).map_err(|e| api_error(&command, e))
}

/// Hold (`active = false`) or release the Kueue Workload that queues the object of `uid`
/// (`owner` names it in messages): Kueue owns a queued object's suspend field and would undo
/// a patch of it, so the Workload is where a user stops and restarts it.
pub async fn set_kueue_active(
    client: &Client,
    namespace: &str,
    uid: &str,
    owner: &str,
    active: bool,
) -> Result<(), BackendError> {
    let verb = if active { "release" } else { "hold" };
    let mut last = None;
    for version in KUEUE_VERSIONS {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &KueueKind::Workload.resource(version));
        let listed = match api.list(&ListParams::default()).await {
            Ok(l) => l,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                last = Some(s.message);
                continue;
            }
            Err(e) => return Err(api_error(&format!("list Kueue Workloads in {namespace}"), e)),
        };
        let ours = listed
            .items
            .into_iter()
            .find(|w| w.metadata.owner_references.iter().flatten().any(|r| r.uid == uid && r.controller == Some(true)));
        let Some(workload) = ours else {
            return Err(BackendError::NotFound(format!(
                "{owner} is queued by Kueue but has no Kueue Workload yet (Kueue makes one when it sees the object): try again shortly"
            )));
        };
        let wl_name = workload.metadata.name.unwrap_or_default();
        let patch = json!({"spec": {"active": active}});
        let command = format!("{verb} {owner} (Kueue Workload {namespace}/{wl_name} spec.active = {active})");
        return api
            .patch(&wl_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(drop)
            .map_err(|e| api_error(&command, e));
    }
    Err(BackendError::Unsupported(format!(
        "{owner} is labelled for Kueue, but this cluster does not serve Kueue's Workloads ({}): nothing to hold it through",
        last.unwrap_or_default()
    )))
}

/// Volcano's way: a `bus.volcano.sh` Command naming the job, owned by it (so it goes when
/// the job goes); the job controller carries it out and deletes it.
async fn volcano_command_for(
    client: &Client,
    job: &DynamicObject,
    suspend: bool,
    by: &str,
    what: &str,
) -> Result<(), BackendError> {
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let action = if suspend { "AbortJob" } else { "ResumeJob" };
    let api_version =
        job.types.as_ref().map(|t| t.api_version.clone()).unwrap_or_else(|| "batch.volcano.sh/v1alpha1".into());
    let reference = json!({
        "apiVersion": api_version, "kind": "Job", "name": name,
        "uid": job.metadata.uid.clone().unwrap_or_default(), "controller": true, "blockOwnerDeletion": true,
    });
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": volcano_command().api_version, "kind": "Command",
        "metadata": {
            "generateName": format!("{name}-{}-", action.to_ascii_lowercase()),
            "namespace": namespace,
            "ownerReferences": [reference.clone()],
        },
        "action": action,
        "target": reference,
        "reason": "flightdeck",
        "message": format!("{action} by {by} with flightdeck"),
    }))
    .map_err(|e| BackendError::Parse { what: "the Volcano Command".into(), message: e.to_string() })?;
    let commands: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &volcano_command());
    commands.create(&PostParams::default(), &object).await.map(drop).map_err(|e| api_error(what, e))
}
