//! `deploy/kubernetes/hub-replicas.yaml` read as Kubernetes reads it (typed by k8s-openapi)
//! and held to the CLI: the Deployment's arguments parse as `flightdeck serve` with the
//! replicas' flags, the RBAC covers what the Lease keeper does, and the Services and the
//! disruption budget select the Deployment's pods.

use std::collections::BTreeMap;

use clap::Parser;
use flightdeck::cli::Cli;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_json::Value;

const MANIFEST: &str = include_str!("../../deploy/kubernetes/hub-replicas.yaml");

fn documents() -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(MANIFEST)
        .expect("the manifest is YAML")
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

/// The one document of `kind` (named `name` when given), typed.
fn one<T: serde::de::DeserializeOwned>(kind: &str, name: Option<&str>) -> T {
    let docs: Vec<Value> = documents()
        .into_iter()
        .filter(|d| d["kind"] == kind && name.is_none_or(|n| d["metadata"]["name"] == n))
        .collect();
    assert_eq!(docs.len(), 1, "one {kind} {name:?} in the manifest");
    serde_json::from_value(docs[0].clone()).unwrap_or_else(|e| panic!("{kind} does not read as Kubernetes's: {e}"))
}

#[test]
fn the_replicas_deployment_runs_three_hubs_with_flags_the_cli_takes() {
    let deployment: Deployment = one("Deployment", Some("flightdeck-hub"));
    let spec = deployment.spec;
    assert_eq!(spec.replicas, Some(3));
    let pod = spec.template.spec.expect("a pod spec");
    let hub = pod.containers.iter().find(|c| c.name == "hub").expect("the hub container");
    let args = hub.args.clone().expect("arguments");

    // The downward API gives the pod's IP, name and namespace, as the arguments use them.
    let env: BTreeMap<String, String> = hub
        .env
        .iter()
        .flatten()
        .filter_map(|e| {
            let field = e.value_from.as_ref()?.field_ref.as_ref()?;
            Some((e.name.clone(), field.field_path.clone()))
        })
        .collect();
    assert_eq!(env.get("POD_IP").map(String::as_str), Some("status.podIP"));
    assert_eq!(env.get("POD_NAME").map(String::as_str), Some("metadata.name"));
    assert_eq!(env.get("POD_NAMESPACE").map(String::as_str), Some("metadata.namespace"));
    // Kubernetes expands $(VAR) in arguments; so does this test, with a pod's values.
    let pod_values =
        [("$(POD_IP)", "10.1.2.3"), ("$(POD_NAME)", "flightdeck-hub-7d9f-abcde"), ("$(POD_NAMESPACE)", "ops")];
    let expanded: Vec<String> =
        args.iter().map(|a| pod_values.iter().fold(a.clone(), |a, (var, value)| a.replace(var, value))).collect();
    assert!(expanded.iter().all(|a| !a.contains("$(")), "every variable is one the pod has: {expanded:?}");

    let cli = Cli::try_parse_from(std::iter::once("flightdeck".to_owned()).chain(expanded.iter().cloned()))
        .unwrap_or_else(|e| panic!("the Deployment's arguments are not flightdeck's: {e}"));
    let parsed = format!("{cli:?}");
    for shown in [
        "replicas_via: Some(Kubernetes)",
        "lease_namespace: Some(\"ops\")",
        "peer_address: Some(\"10.1.2.3:50051\")",
        "replica_id: Some(\"flightdeck-hub-7d9f-abcde\")",
        "peer_token_file: Some(",
    ] {
        assert!(parsed.contains(shown), "{shown} not in {parsed}");
    }
    // Peers reach the port the hub listens on, which the Services name.
    let flag = |name: &str| expanded.iter().find_map(|a| a.strip_prefix(&format!("--{name}="))).map(str::to_owned);
    let listen_port = flag("listen").and_then(|l| l.rsplit_once(':').map(|(_, p)| p.to_owned())).expect("--listen");
    assert!(flag("peer-address").expect("--peer-address").ends_with(&format!(":{listen_port}")));
    let grpc = hub.ports.iter().flatten().find(|p| p.name.as_deref() == Some("grpc")).expect("a grpc port");
    assert_eq!(grpc.container_port.to_string(), listen_port);

    // The pod runs as the service account the Role is bound to, with its token mounted.
    assert_eq!(pod.service_account_name.as_deref(), Some("flightdeck-hub"));
    assert_ne!(pod.automount_service_account_token, Some(false));
}

#[test]
fn the_role_covers_what_the_lease_keeper_does_in_its_namespace_only() {
    let role: Role = one("Role", None);
    let rules = role.rules.expect("rules");
    let leases = rules
        .iter()
        .find(|r| {
            r.api_groups.iter().flatten().any(|g| g == "coordination.k8s.io")
                && r.resources.iter().flatten().any(|x| x == "leases")
        })
        .expect("a rule for leases");
    for verb in ["get", "list", "create", "update", "delete"] {
        assert!(leases.verbs.iter().any(|v| v == verb), "leases: {verb} missing");
    }
    assert!(documents().iter().all(|d| d["kind"] != "ClusterRole"), "leases are namespaced: no ClusterRole");
    let binding: RoleBinding = one("RoleBinding", None);
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(Some(binding.role_ref.name), role.metadata.name);
    let subjects = binding.subjects.expect("subjects");
    assert!(subjects.iter().any(|s| s.kind == "ServiceAccount" && s.name == "flightdeck-hub"));
    assert!(documents().iter().any(|d| d["kind"] == "ServiceAccount" && d["metadata"]["name"] == "flightdeck-hub"));
}

#[test]
fn the_peer_service_is_headless_and_the_budget_keeps_two_of_three() {
    let deployment: Deployment = one("Deployment", Some("flightdeck-hub"));
    let labels = deployment.spec.template.metadata.unwrap().labels.unwrap();
    let selects = |selector: &BTreeMap<String, String>| selector.iter().all(|(k, v)| labels.get(k) == Some(v));

    let peers: Service = one("Service", Some("flightdeck-hub-peers"));
    let spec = peers.spec.expect("a spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "headless");
    assert!(selects(&spec.selector.expect("a selector")));
    let clients: Service = one("Service", Some("flightdeck-hub"));
    assert!(selects(&clients.spec.unwrap().selector.expect("a selector")));

    let budget: PodDisruptionBudget = one("PodDisruptionBudget", None);
    let spec = budget.spec.expect("a spec");
    assert!(selects(&spec.selector.unwrap().match_labels.expect("labels")));
    let one_out = spec.max_unavailable.map(|m| format!("{m:?}"));
    assert_eq!(one_out.as_deref(), Some("Int(1)"), "at most one replica evicted at a time");
}
