//! The fake serves `coordination.k8s.io/v1` Leases as a real API server does, through the real
//! `kube` client: discovered, created, read, replaced and deleted, with optimistic concurrency
//! (what the hub's replicas rely on to hold one Lease per cluster).

use crate::kube_fake::FakeApi;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

fn lease(name: &str, holder: &str) -> Lease {
    Lease {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(Timestamp::now())),
            renew_time: Some(MicroTime(Timestamp::now())),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    }
}

fn status_of(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.reason.clone()),
        other => panic!("expected an API error with a Status body, got {other:?}"),
    }
}

#[tokio::test]
async fn leases_are_discovered_in_coordination_v1_and_namespaced() {
    let fake = FakeApi::start().await;
    let client = fake.client().await;
    for aggregated in [false, true] {
        let d = kube::Discovery::new(client.clone());
        let d = if aggregated { d.run_aggregated().await } else { d.run().await }.unwrap();
        let group = d.get("coordination.k8s.io").expect("coordination.k8s.io discovered");
        let (ar, caps) = group.recommended_kind("Lease").expect("Lease discovered");
        assert_eq!((ar.version.as_str(), ar.plural.as_str()), ("v1", "leases"));
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced, "aggregated: {aggregated}");
    }
}

#[tokio::test]
async fn lease_create_get_replace_list_delete() {
    let fake = FakeApi::start().await;
    let leases: Api<Lease> = Api::namespaced(fake.client().await, "hub");
    let created = leases.create(&PostParams::default(), &lease("flightdeck-hub-a", "r1")).await.unwrap();
    let rv = created.metadata.resource_version.clone().expect("a resourceVersion");
    assert_eq!(created.metadata.namespace.as_deref(), Some("hub"));

    let mut got = leases.get("flightdeck-hub-a").await.unwrap();
    assert_eq!(got.spec.as_ref().and_then(|s| s.holder_identity.as_deref()), Some("r1"));
    assert_eq!(got.metadata.resource_version.as_deref(), Some(rv.as_str()));

    if let Some(spec) = got.spec.as_mut() {
        spec.holder_identity = Some("r2".into());
        spec.lease_transitions = Some(1);
    }
    let replaced = leases.replace("flightdeck-hub-a", &PostParams::default(), &got).await.unwrap();
    assert_ne!(replaced.metadata.resource_version.as_deref(), Some(rv.as_str()), "an update bumps the version");
    assert_eq!(replaced.spec.as_ref().and_then(|s| s.lease_transitions), Some(1));

    let listed = leases.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec.as_ref().and_then(|s| s.holder_identity.as_deref()), Some("r2"));

    leases.delete("flightdeck-hub-a", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_of(leases.get("flightdeck-hub-a").await.unwrap_err()).0, 404);
}

#[tokio::test]
async fn a_duplicate_lease_create_is_409_already_exists() {
    let fake = FakeApi::start().await;
    let leases: Api<Lease> = Api::namespaced(fake.client().await, "hub");
    leases.create(&PostParams::default(), &lease("flightdeck-hub-a", "r1")).await.unwrap();
    let err = leases.create(&PostParams::default(), &lease("flightdeck-hub-a", "r2")).await.unwrap_err();
    assert_eq!(status_of(err), (409, "AlreadyExists".to_owned()));
    let kept = leases.get("flightdeck-hub-a").await.unwrap();
    assert_eq!(kept.spec.and_then(|s| s.holder_identity).as_deref(), Some("r1"), "the first holder kept");
}

#[tokio::test]
async fn a_lease_replace_with_a_stale_resource_version_is_409_conflict() {
    let fake = FakeApi::start().await;
    let leases: Api<Lease> = Api::namespaced(fake.client().await, "hub");
    let first = leases.create(&PostParams::default(), &lease("flightdeck-hub-a", "r1")).await.unwrap();

    // Two replicas read the same version; the first write wins, the second is refused.
    let mut mine = first.clone();
    let mut theirs = first.clone();
    if let Some(spec) = mine.spec.as_mut() {
        spec.holder_identity = Some("r2".into());
    }
    if let Some(spec) = theirs.spec.as_mut() {
        spec.holder_identity = Some("r3".into());
    }
    leases.replace("flightdeck-hub-a", &PostParams::default(), &mine).await.unwrap();
    let err = leases.replace("flightdeck-hub-a", &PostParams::default(), &theirs).await.unwrap_err();
    assert_eq!(status_of(err), (409, "Conflict".to_owned()));
    let now = leases.get("flightdeck-hub-a").await.unwrap();
    assert_eq!(now.spec.and_then(|s| s.holder_identity).as_deref(), Some("r2"), "one holder, the winner");
}
