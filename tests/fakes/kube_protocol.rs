//! The Kubernetes fake API server (`tests/kube_fake/`) driven through the real `kube` client:
//! what kube sends, and that the fake answers it the way a real API server does.

use crate::kube_fake;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::http;
use futures_util::{Stream, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, EvictParams, GroupVersionKind, ListParams, LogParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, ResourceExt};
use kube_fake::{FakeApi, fixtures};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

async fn fake_with(objs: Vec<Value>) -> (FakeApi, Client) {
    let fake = FakeApi::start().await;
    fake.put_all(objs);
    let client = fake.client().await;
    (fake, client)
}

fn labelled_node(name: &str, labels: &[(&str, &str)]) -> Value {
    let mut n = fixtures::node_cpu(name);
    for (k, v) in labels {
        n["metadata"]["labels"][*k] = json!(v);
    }
    n
}

fn names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items.iter().map(|o| o.name_any()).collect()
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn next<S: Stream + Unpin>(s: &mut S) -> S::Item {
    tokio::time::timeout(WAIT, s.next()).await.expect("timed out waiting for the next event").expect("stream ended")
}

fn api_error(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error with a Status body, got {other:?}"),
    }
}

fn workload_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"), "workloads")
}

fn list_requests(fake: &FakeApi, path: &str) -> Vec<kube_fake::RecordedRequest> {
    fake.requests_to("GET", path).into_iter().filter(|r| !r.is_watch()).collect()
}

fn watch_requests(fake: &FakeApi, path: &str) -> Vec<kube_fake::RecordedRequest> {
    fake.requests_to("GET", path).into_iter().filter(|r| r.is_watch()).collect()
}

// ----- lists ---------------------------------------------------------------------------------

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let (fake, client) = fake_with((0..5).map(|i| fixtures::node_cpu(&format!("node-{i}"))).collect()).await;
    let nodes: Api<Node> = Api::all(client);

    let p1 = nodes.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(names(&p1.items), ["node-0", "node-1"]);
    assert_eq!(p1.metadata.remaining_item_count, Some(3));
    let c1 = p1.metadata.continue_.clone().expect("a continue token after page 1");
    let p2 = nodes.list(&ListParams::default().limit(2).continue_token(&c1)).await.unwrap();
    assert_eq!(names(&p2.items), ["node-2", "node-3"]);
    let c2 = p2.metadata.continue_.clone().expect("a continue token after page 2");
    let p3 = nodes.list(&ListParams::default().limit(2).continue_token(&c2)).await.unwrap();
    assert_eq!(names(&p3.items), ["node-4"]);
    assert!(p3.metadata.continue_.as_deref().unwrap_or("").is_empty(), "last page has no continue");
    // One consistent snapshot version across the pages, and every item carries its own.
    assert_eq!(p1.metadata.resource_version, p3.metadata.resource_version);
    assert!(p1.items.iter().all(|n| n.metadata.resource_version.is_some()));

    let reqs = list_requests(&fake, "/api/v1/nodes");
    assert_eq!(reqs.len(), 3);
    assert!(reqs.iter().all(|r| r.param("limit") == Some("2")));
    assert_eq!(reqs[1].param("continue"), Some(c1.as_str()));
    assert_eq!(reqs[2].param("continue"), Some(c2.as_str()));
    // kube builds its queries as `path?&k=v`.
    assert!(reqs[0].raw_query.as_deref().unwrap_or("").starts_with('&'), "{:?}", reqs[0].raw_query);
}

#[tokio::test]
async fn list_label_selectors() {
    let (_fake, client) = fake_with(vec![
        labelled_node("a", &[("pool", "gpu"), ("gpu", "h100")]),
        labelled_node("b", &[("pool", "gpu"), ("gpu", "a100")]),
        labelled_node("c", &[("pool", "cpu")]),
        labelled_node("d", &[]),
    ])
    .await;
    let nodes: Api<Node> = Api::all(client);
    let select = |sel: &'static str| {
        let nodes = nodes.clone();
        async move { names(&nodes.list(&ListParams::default().labels(sel)).await.unwrap().items) }
    };
    assert_eq!(select("pool=gpu").await, ["a", "b"]);
    assert_eq!(select("pool==gpu").await, ["a", "b"]);
    assert_eq!(select("pool!=gpu").await, ["c", "d"], "!= also matches objects without the label");
    assert_eq!(select("gpu").await, ["a", "b"]);
    assert_eq!(select("!gpu").await, ["c", "d"]);
    assert_eq!(select("gpu in (h100, t4)").await, ["a"]);
    assert_eq!(select("gpu notin (h100)").await, ["b", "c", "d"]);
    assert_eq!(select("pool=gpu,gpu in (a100)").await, ["b"]);
    assert_eq!(select("").await, ["a", "b", "c", "d"]);

    let err = nodes.list(&ListParams::default().labels("gpu in h100")).await.unwrap_err();
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
}

#[tokio::test]
async fn list_field_selectors() {
    let (_fake, client) = fake_with(fixtures::standard_cluster()).await;
    let pods: Api<Pod> = Api::all(client.clone());
    let select = |sel: String| {
        let pods = pods.clone();
        async move {
            let mut n = names(&pods.list(&ListParams::default().fields(&sel)).await.unwrap().items);
            n.sort();
            n
        }
    };
    assert_eq!(
        select(format!("spec.nodeName={}", fixtures::NODE_H100_A)).await,
        ["eval-mmlu-h7x9k", "featurizer-0", "llm-pretrain-0-k7x2p", "nvidia-dcgm-exporter-h7k2m"]
    );
    assert_eq!(
        select(format!("spec.nodeName={},status.phase!=Succeeded", fixtures::NODE_H100_A)).await,
        ["featurizer-0", "llm-pretrain-0-k7x2p", "nvidia-dcgm-exporter-h7k2m"]
    );
    assert_eq!(select("spec.nodeName=".into()).await, ["big-train-pending"], "an empty value matches unscheduled pods");
    assert_eq!(select("metadata.name=debug-shell".into()).await, ["debug-shell"]);
    assert_eq!(select("metadata.namespace=train".into()).await.len(), 3);

    let events: Api<Event> = Api::all(client);
    let node_events = events
        .list(
            &ListParams::default()
                .fields(&format!("involvedObject.kind=Node,involvedObject.name={}", fixtures::NODE_CORDONED)),
        )
        .await
        .unwrap();
    assert_eq!(node_events.items.len(), 1);
    assert_eq!(node_events.items[0].reason.as_deref(), Some("NodeNotSchedulable"));
    let sched = events.list(&ListParams::default().fields("reason=FailedScheduling")).await.unwrap();
    assert_eq!(sched.items.len(), 1);
    assert_eq!(sched.items[0].message.as_deref(), Some(fixtures::UNSCHEDULABLE_MESSAGE));
}

#[tokio::test]
async fn paths_for_namespaced_cluster_scoped_and_group_resources() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let train: Api<Pod> = Api::namespaced(client.clone(), "train");
    assert_eq!(train.list(&ListParams::default()).await.unwrap().items.len(), 3);
    let node: Node = Api::all(client.clone()).get(fixtures::NODE_H100_A).await.unwrap();
    assert_eq!(node.name_any(), fixtures::NODE_H100_A);
    let jobs: Api<Job> = Api::all(client.clone());
    assert_eq!(jobs.list(&ListParams::default()).await.unwrap().items.len(), 2);
    let wl: Api<DynamicObject> = Api::namespaced_with(client.clone(), "research", &workload_resource());
    let pending = wl.get("job-big-sweep-7f3a1").await.unwrap();
    assert_eq!(pending.data["spec"]["queueName"], "team-research");
    let cq_res = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "ClusterQueue"),
        "clusterqueues",
    );
    let cqs: Api<DynamicObject> = Api::all_with(client, &cq_res);
    let cq = cqs.list(&ListParams::default()).await.unwrap();
    assert_eq!(cq.items.len(), 1);
    assert_eq!(cq.items[0].data["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"], "16");

    for path in [
        "/api/v1/namespaces/train/pods",
        "/api/v1/nodes/gpu-h100-a",
        "/apis/batch/v1/jobs",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads/job-big-sweep-7f3a1",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
    ] {
        let reqs = fake.requests_to("GET", path);
        assert_eq!(reqs.len(), 1, "one GET {path}");
        assert_eq!(reqs[0].status, 200, "GET {path}");
    }
}

#[tokio::test]
async fn built_in_list_items_carry_no_type_meta_but_custom_resources_do() {
    let (_fake, client) = fake_with(fixtures::standard_cluster()).await;
    let nodes: Value = client.request(http::Request::get("/api/v1/nodes").body(vec![]).unwrap()).await.unwrap();
    assert_eq!(nodes["kind"], "NodeList");
    assert_eq!(nodes["apiVersion"], "v1");
    assert!(nodes["items"][0].get("kind").is_none(), "built-in list items have no kind, like a real server");
    let wls: Value = client
        .request(http::Request::get("/apis/kueue.x-k8s.io/v1beta2/workloads").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(wls["kind"], "WorkloadList");
    assert_eq!(wls["items"][0]["kind"], "Workload");
    assert_eq!(wls["items"][0]["apiVersion"], "kueue.x-k8s.io/v1beta2");
}

#[tokio::test]
async fn queries_with_empty_pairs_and_a_bare_question_mark() {
    let (fake, client) = fake_with((0..3).map(|i| fixtures::node_cpu(&format!("n{i}"))).collect()).await;
    let one: Value =
        client.request(http::Request::get("/api/v1/nodes?&&limit=1&").body(vec![]).unwrap()).await.unwrap();
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    let all: Value = client.request(http::Request::get("/api/v1/nodes?").body(vec![]).unwrap()).await.unwrap();
    assert_eq!(all["items"].as_array().unwrap().len(), 3);
    let encoded: Value = client
        .request(http::Request::get("/api/v1/nodes?labelSelector=kubernetes.io%2Fhostname%3Dn2").body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(encoded["items"][0]["metadata"]["name"], "n2");
    let reqs = fake.requests();
    assert_eq!(reqs[0].query, [("limit".to_owned(), "1".to_owned())]);
    assert_eq!(reqs[1].raw_query.as_deref(), Some(""));
}

// ----- discovery -----------------------------------------------------------------------------

#[tokio::test]
async fn discovery_finds_kinds_and_an_absent_crd_is_absent() {
    let (fake, client) = fake_with(vec![]).await;
    for aggregated in [false, true] {
        fake.enable_kind("kueue.x-k8s.io/v1beta2", "Workload");
        let run = |c: Client| async move {
            let d = kube::Discovery::new(c);
            if aggregated { d.run_aggregated().await } else { d.run().await }
        };
        let d = run(client.clone()).await.unwrap();
        let kueue = d.get("kueue.x-k8s.io").expect("kueue group discovered");
        let (ar, caps) = kueue.recommended_kind("Workload").expect("Workload discovered");
        assert_eq!((ar.version.as_str(), ar.plural.as_str()), ("v1beta2", "workloads"));
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        let (_, cq_caps) = kueue.recommended_kind("ClusterQueue").expect("ClusterQueue discovered");
        assert_eq!(cq_caps.scope, kube::discovery::Scope::Cluster);
        let (_, pod_caps) = d.get("").expect("core group").recommended_kind("Pod").expect("pods");
        assert!(
            pod_caps.subresources.iter().any(|(r, _)| r.plural == "eviction"),
            "pods/eviction discovered (aggregated: {aggregated})"
        );
        assert!(d.get("batch").and_then(|g| g.recommended_kind("Job")).is_some());

        fake.disable_kind("kueue.x-k8s.io/v1beta2", "Workload", 404);
        let d = run(client.clone()).await.unwrap();
        let kueue = d.get("kueue.x-k8s.io").expect("the rest of kueue is still there");
        assert!(kueue.recommended_kind("Workload").is_none(), "a 404 kind is absent (aggregated: {aggregated})");
        assert!(kueue.recommended_kind("LocalQueue").is_some());
    }
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload");
    assert!(kube::discovery::pinned_kind(&client, &gvk).await.is_err());
    fake.enable_kind("kueue.x-k8s.io/v1beta2", "Workload");
    assert!(kube::discovery::pinned_kind(&client, &gvk).await.is_ok());

    for kind in ["ClusterQueue", "LocalQueue", "Workload", "ResourceFlavor", "AdmissionCheck", "WorkloadPriorityClass"]
    {
        fake.disable_kind("kueue.x-k8s.io/v1beta2", kind, 404);
    }
    let d = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(!d.has_group("kueue.x-k8s.io"), "Kueue not installed: no group at all");
    let err = client.list_api_group_resources("kueue.x-k8s.io/v1beta2").await.unwrap_err();
    assert_eq!(api_error(err).code, 404);
    assert_eq!(client.apiserver_version().await.unwrap().major, "1");
}

// ----- watch ---------------------------------------------------------------------------------

#[tokio::test]
async fn watch_streams_added_modified_deleted_in_order_and_bookmarks() {
    let (fake, client) = fake_with(vec![]).await;
    fake.set_bookmark_interval(Duration::from_millis(50));
    let nodes: Api<Node> = Api::all(client);
    let rv = nodes.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut stream = nodes.watch(&WatchParams::default(), &rv).await.unwrap().boxed();

    fake.put(fixtures::node_cpu("w1"));
    let mut changed = fixtures::node_cpu("w1");
    changed["metadata"]["labels"]["pool"] = json!("batch");
    fake.put(changed);
    let deleted = fake.delete("v1", "Node", None, "w1").expect("w1 existed");
    let deleted_rv: u64 = deleted["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();

    let mut seen = Vec::new();
    let mut bookmark_after_delete = false;
    while !bookmark_after_delete {
        match next(&mut stream).await.unwrap() {
            WatchEvent::Added(n) => seen.push(("ADDED", n)),
            WatchEvent::Modified(n) => seen.push(("MODIFIED", n)),
            WatchEvent::Deleted(n) => seen.push(("DELETED", n)),
            WatchEvent::Bookmark(b) => {
                bookmark_after_delete = b.metadata.resource_version.parse::<u64>().unwrap() >= deleted_rv;
                assert_eq!(b.types.kind, "Node");
            }
            WatchEvent::Error(e) => panic!("unexpected watch error {e:?}"),
        }
    }
    let types: Vec<&str> = seen.iter().map(|(t, _)| *t).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"]);
    assert_eq!(seen[1].1.labels().get("pool").map(String::as_str), Some("batch"));
    let rvs: Vec<u64> = seen.iter().map(|(_, n)| n.resource_version().unwrap().parse().unwrap()).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "resource versions increase: {rvs:?}");
    assert_eq!(rvs[2], deleted_rv);

    let w = &watch_requests(&fake, "/api/v1/nodes")[0];
    assert_eq!(w.param("watch"), Some("true"));
    assert_eq!(w.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(w.param("timeoutSeconds"), Some("290"));
    assert_eq!(w.param("resourceVersion"), Some(rv.as_str()));
    assert_eq!(w.status, 200);
    assert_eq!(fake.open_watches(), 1);
}

#[tokio::test]
async fn watch_replays_history_newer_than_the_resource_version() {
    let (fake, client) = fake_with(vec![]).await;
    let nodes: Api<Node> = Api::all(client);
    let rv0 = fake.resource_version().to_string();
    fake.put(fixtures::node_cpu("a"));
    fake.put(fixtures::node_cpu("b"));
    fake.delete("v1", "Node", None, "a");

    let mut replay = nodes.watch(&WatchParams::default().disable_bookmarks(), &rv0).await.unwrap().boxed();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(match next(&mut replay).await.unwrap() {
            WatchEvent::Added(n) => format!("ADDED {}", n.name_any()),
            WatchEvent::Deleted(n) => format!("DELETED {}", n.name_any()),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(got, ["ADDED a", "ADDED b", "DELETED a"]);

    // "0": any version — synthetic ADDED for what exists now.
    let mut from_zero = nodes.watch(&WatchParams::default().disable_bookmarks(), "0").await.unwrap().boxed();
    match next(&mut from_zero).await.unwrap() {
        WatchEvent::Added(n) => assert_eq!(n.name_any(), "b"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watch_selector_turns_moves_into_added_and_deleted() {
    let (fake, client) = fake_with(vec![labelled_node("x", &[("pool", "cpu")])]).await;
    let nodes: Api<Node> = Api::all(client);
    let rv = fake.resource_version().to_string();
    let mut gpu_pool =
        nodes.watch(&WatchParams::default().labels("pool=gpu").disable_bookmarks(), &rv).await.unwrap().boxed();
    fake.put(labelled_node("y", &[("pool", "cpu")]));
    fake.put(labelled_node("x", &[("pool", "gpu")]));
    fake.put(labelled_node("x", &[("pool", "gpu"), ("rack", "r1")]));
    fake.put(labelled_node("x", &[("pool", "cpu")]));
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(match next(&mut gpu_pool).await.unwrap() {
            WatchEvent::Added(n) => format!("ADDED {}", n.name_any()),
            WatchEvent::Modified(n) => format!("MODIFIED {}", n.name_any()),
            WatchEvent::Deleted(n) => format!("DELETED {}", n.name_any()),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(got, ["ADDED x", "MODIFIED x", "DELETED x"]);
}

#[tokio::test]
async fn too_old_resource_version_is_http_200_then_an_expired_error_event() {
    let (fake, client) =
        fake_with(vec![fixtures::node_cpu("a"), fixtures::node_cpu("b"), fixtures::node_cpu("c")]).await;
    let nodes: Api<Node> = Api::all(client);
    let page = nodes.list(&ListParams::default().limit(1)).await.unwrap();
    let old_rv = page.metadata.resource_version.clone().unwrap();
    fake.expire_watches();

    let mut s = nodes.watch(&WatchParams::default(), &old_rv).await.expect("HTTP 200, not an HTTP 410").boxed();
    match next(&mut s).await.unwrap() {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(status.message.contains("too old resource version"), "{}", status.message);
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(tokio::time::timeout(WAIT, s.next()).await.unwrap().is_none(), "the stream ends after the ERROR");
    assert_eq!(watch_requests(&fake, "/api/v1/nodes")[0].status, 200);

    // A continue token from before the compaction is too old as well (HTTP 410 on lists).
    let token = page.metadata.continue_.unwrap();
    let err = nodes.list(&ListParams::default().limit(1).continue_token(&token)).await.unwrap_err();
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn open_watch_gets_expired_error_event() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let nodes: Api<Node> = Api::all(client);
    let rv = fake.resource_version().to_string();
    let mut s = nodes.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    eventually("the watch to be open", || fake.open_watches() == 1).await;
    fake.expire_watches();
    match next(&mut s).await.unwrap() {
        WatchEvent::Error(status) => assert_eq!((status.code, status.reason.as_str()), (410, "Expired")),
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    eventually("the watch to close", || fake.open_watches() == 0).await;
}

/// Sends a raw HTTP/1.1 watch request and reads the answer to EOF, calling `during` once
/// `trigger` has arrived.
async fn raw_watch(fake: &FakeApi, query: &str, trigger: &str, during: impl FnOnce()) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(fake.addr()).await.unwrap();
    let req = format!("GET /api/v1/nodes?{query} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", fake.addr());
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut during = Some(during);
    loop {
        let n =
            tokio::time::timeout(WAIT, sock.read(&mut buf)).await.expect("the server ended the answer").unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&got).contains(trigger)
            && let Some(f) = during.take()
        {
            f();
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn watch_wire_format_clean_end_versus_dropped_connection() {
    let fake = FakeApi::start().await;
    fake.put(fixtures::node_cpu("a"));
    let rv = fake.resource_version() - 1;

    let clean = raw_watch(&fake, &format!("watch=1&resourceVersion={rv}&timeoutSeconds=1"), "", || {}).await;
    assert!(clean.starts_with("HTTP/1.1 200"), "{clean}");
    assert!(clean.to_lowercase().contains("transfer-encoding: chunked"), "{clean}");
    assert!(clean.contains(r#"{"type":"ADDED","object":{"#), "one JSON event per line: {clean}");
    assert!(clean.ends_with("0\r\n\r\n"), "a timeout ends the chunked body properly: {clean:?}");

    let fake2 = fake.clone();
    let dropped =
        raw_watch(&fake, &format!("watch=true&resourceVersion={rv}"), "\"ADDED\"", move || fake2.drop_watches()).await;
    assert!(dropped.contains(r#""type":"ADDED""#), "{dropped}");
    assert!(!dropped.ends_with("0\r\n\r\n"), "drop_watches cuts the body without its last chunk: {dropped:?}");
}

#[tokio::test]
async fn watch_timeout_seconds_ends_the_stream_with_a_bookmark() {
    let (fake, client) = fake_with(vec![]).await;
    fake.set_bookmark_interval(Duration::from_secs(60));
    let nodes: Api<Node> = Api::all(client);
    let rv = fake.resource_version().to_string();
    let started = Instant::now();
    let mut s = nodes.watch(&WatchParams::default().timeout(1), &rv).await.unwrap().boxed();
    assert!(matches!(next(&mut s).await.unwrap(), WatchEvent::Bookmark(_)));
    assert!(tokio::time::timeout(WAIT, s.next()).await.unwrap().is_none());
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");
}

// ----- kube::runtime ---------------------------------------------------------------------------

/// Runs a watcher in the background, sending its events as text ("Init", "InitApply a", …).
fn spawn_watcher(api: Api<Node>, config: watcher::Config) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut s = watcher(api, config).boxed();
        while let Some(ev) = s.next().await {
            let text = match ev {
                Ok(watcher::Event::Init) => "Init".to_owned(),
                Ok(watcher::Event::InitApply(n)) => format!("InitApply {}", n.name_any()),
                Ok(watcher::Event::InitDone) => "InitDone".to_owned(),
                Ok(watcher::Event::Apply(n)) => format!("Apply {}", n.name_any()),
                Ok(watcher::Event::Delete(n)) => format!("Delete {}", n.name_any()),
                Err(e) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    format!("Err {e}")
                }
            };
            if tx.send(text).is_err() {
                return;
            }
        }
    });
    rx
}

async fn until(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>, wanted: &str) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let ev = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {wanted:?}; got {got:?}"))
            .expect("watcher ended");
        let done = ev == wanted;
        got.push(ev);
        if done {
            return got;
        }
    }
}

#[tokio::test]
async fn watcher_relists_after_410_expired() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a"), fixtures::node_cpu("b")]).await;
    let mut rx = spawn_watcher(Api::all(client), watcher::Config::default());
    assert_eq!(until(&mut rx, "InitDone").await, ["Init", "InitApply a", "InitApply b", "InitDone"]);
    eventually("the watch to be open", || fake.open_watches() == 1).await;

    fake.expire_watches();
    fake.put(fixtures::node_cpu("c"));
    let events = until(&mut rx, "InitDone").await;
    assert!(events[0].starts_with("Err") && events[0].contains("too old resource version"), "{events:?}");
    assert!(events[0].ends_with(": Expired"), "{events:?}");
    let cycle: Vec<&String> = events.iter().skip_while(|e| *e != "Init").collect();
    assert_eq!(cycle, ["Init", "InitApply a", "InitApply b", "InitApply c", "InitDone"], "{events:?}");
    let lists = list_requests(&fake, "/api/v1/nodes");
    assert_eq!(lists.len(), 2, "one list per Init cycle");
    assert_eq!(lists[0].param("limit"), Some("500"), "the watcher pages its list by 500");
    fake.delete("v1", "Node", None, "a");
    assert_eq!(until(&mut rx, "Delete a").await, ["Delete a"]);
}

#[tokio::test]
async fn watcher_resumes_after_drop_watches_without_relisting() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let mut rx = spawn_watcher(Api::all(client), watcher::Config::default());
    until(&mut rx, "InitDone").await;
    eventually("the watch to be open", || fake.open_watches() == 1).await;
    fake.drop_watches();
    fake.put(fixtures::node_cpu("b"));
    let events = until(&mut rx, "Apply b").await;
    // kube maps the cut body to the end of the stream: no error, just a new watch.
    assert_eq!(events, ["Apply b"], "resumed, not relisted");
    assert!(watch_requests(&fake, "/api/v1/nodes").len() >= 2, "the watcher reconnected");
    assert_eq!(list_requests(&fake, "/api/v1/nodes").len(), 1);
}

#[tokio::test]
async fn watcher_with_streaming_lists_gets_initial_events_end_bookmark() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a"), fixtures::node_cpu("b")]).await;
    let mut rx = spawn_watcher(Api::all(client), watcher::Config::default().streaming_lists());
    assert_eq!(until(&mut rx, "InitDone").await, ["Init", "InitApply a", "InitApply b", "InitDone"]);
    fake.put(fixtures::node_cpu("c"));
    assert_eq!(until(&mut rx, "Apply c").await, ["Apply c"]);
    let w = &watch_requests(&fake, "/api/v1/nodes")[0];
    assert_eq!(w.param("sendInitialEvents"), Some("true"));
    assert_eq!(w.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(w.param("resourceVersion"), Some("0"));
    assert!(list_requests(&fake, "/api/v1/nodes").is_empty(), "no list with streaming lists");
}

#[tokio::test]
async fn reflector_store_converges_after_put_and_delete() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let (reader, writer) = reflector::store::<Node>();
    let stream = reflector(writer, watcher(Api::all(client), watcher::Config::default())).applied_objects();
    tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Some(ev) = stream.next().await {
            if ev.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    tokio::time::timeout(WAIT, reader.wait_until_ready()).await.unwrap().unwrap();
    assert_eq!(reader.state().len(), 7);

    fake.put(fixtures::node_h100("gpu-h100-new"));
    fake.delete("v1", "Node", None, fixtures::NODE_NOT_READY);
    let mut cordon = fake.get("v1", "Node", None, fixtures::NODE_H100_A).unwrap();
    cordon["spec"]["unschedulable"] = json!(true);
    fake.put(cordon);
    let names_now = || {
        let mut n: Vec<String> = reader.state().iter().map(|n| n.name_any()).collect();
        n.sort();
        n
    };
    eventually("the store to converge", || {
        let n = names_now();
        n.contains(&"gpu-h100-new".to_owned())
            && !n.contains(&fixtures::NODE_NOT_READY.to_owned())
            && reader.state().iter().any(|n| {
                n.name_any() == fixtures::NODE_H100_A && n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
            })
    })
    .await;
    assert_eq!(reader.state().len(), 7);
}

#[tokio::test]
async fn reflector_converges_after_the_server_goes_down_and_comes_back() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let (reader, writer) = reflector::store::<Node>();
    let stream = reflector(writer, watcher(Api::all(client), watcher::Config::default())).applied_objects();
    tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Some(ev) = stream.next().await {
            if ev.is_err() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    tokio::time::timeout(WAIT, reader.wait_until_ready()).await.unwrap().unwrap();
    eventually("the watch to be open", || fake.open_watches() == 1).await;

    fake.set_down(true);
    eventually("the open watch to be cut", || fake.open_watches() == 0).await;
    fake.put(fixtures::node_cpu("b"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(reader.state().len(), 1, "nothing reaches the client while the server is down");
    fake.set_down(false);
    eventually("the store to see b", || reader.state().iter().any(|n| n.name_any() == "b")).await;
}

// ----- writes --------------------------------------------------------------------------------

fn job_manifest(name: Option<&str>, generate_name: Option<&str>) -> Job {
    let mut meta = json!({"labels": {"kueue.x-k8s.io/queue-name": "team-train"}});
    if let Some(n) = name {
        meta["name"] = json!(n);
    }
    if let Some(g) = generate_name {
        meta["generateName"] = json!(g);
    }
    serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "suspend": true,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [fixtures::container("train", "nvcr.io/nvidia/pytorch:25.01-py3", "8", "64Gi", &[("nvidia.com/gpu", 4)])],
            }},
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn create_a_job_then_get_it() {
    let (fake, client) = fake_with(vec![]).await;
    let jobs: Api<Job> = Api::namespaced(client, "train");
    let created = jobs.create(&PostParams::default(), &job_manifest(Some("sweep-1"), None)).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("train"), "namespace from the path");
    assert!(created.metadata.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(created.metadata.resource_version.is_some());
    assert_eq!(created.metadata.generation, Some(1));

    let got = jobs.get("sweep-1").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(got.spec, created.spec);
    assert_eq!(got.labels().get("kueue.x-k8s.io/queue-name").map(String::as_str), Some("team-train"));

    let post = &fake.requests_to("POST", "/apis/batch/v1/namespaces/train/jobs")[0];
    assert_eq!(post.status, 201);
    assert_eq!(post.body.as_ref().unwrap()["kind"], "Job");
    assert_eq!(post.content_type.as_deref(), Some("application/json"));

    let generated = jobs.create(&PostParams::default(), &job_manifest(None, Some("sweep-"))).await.unwrap();
    let name = generated.name_any();
    assert!(name.starts_with("sweep-") && name.len() == "sweep-".len() + 5, "{name}");

    let err = jobs.create(&PostParams::default(), &job_manifest(Some("sweep-1"), None)).await.unwrap_err();
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(status.message, "jobs.batch \"sweep-1\" already exists");

    let dry =
        jobs.create(&PostParams { dry_run: true, ..Default::default() }, &job_manifest(Some("sweep-dry"), None)).await;
    assert!(dry.is_ok());
    assert!(jobs.get_opt("sweep-dry").await.unwrap().is_none(), "dryRun stores nothing");
}

#[tokio::test]
async fn cordon_is_a_strategic_merge_patch() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let nodes: Api<Node> = Api::all(client);
    let before = nodes.get(fixtures::NODE_H100_A).await.unwrap();
    let patched = nodes
        .patch(
            fixtures::NODE_H100_A,
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().unschedulable, Some(true));
    assert_eq!(patched.labels(), before.labels(), "labels untouched");
    assert_eq!(patched.status, before.status, "status untouched");
    assert_ne!(patched.metadata.resource_version, before.metadata.resource_version);
    let got = nodes.get(fixtures::NODE_H100_A).await.unwrap();
    assert_eq!(got.spec.as_ref().unwrap().unschedulable, Some(true));
    let req = &fake.requests_to("PATCH", "/api/v1/nodes/gpu-h100-a")[0];
    assert_eq!(req.content_type.as_deref(), Some("application/strategic-merge-patch+json"));
    assert_eq!(req.body, Some(json!({"spec": {"unschedulable": true}})));

    // The same patch again changes nothing: no new resourceVersion.
    let again = nodes
        .patch(
            fixtures::NODE_H100_A,
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, got.metadata.resource_version);

    // A label through a merge patch keeps the other labels; null uncordons.
    let labelled = nodes
        .patch(
            fixtures::NODE_H100_A,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"flightdeck.dev/drain": "true"}}, "spec": {"unschedulable": null}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(labelled.labels().get("flightdeck.dev/drain").map(String::as_str), Some("true"));
    assert_eq!(labelled.labels().get("nvidia.com/gpu.product").map(String::as_str), Some("NVIDIA-H100-80GB-HBM3"));
    assert_eq!(labelled.spec.as_ref().unwrap().unschedulable, None);
}

#[tokio::test]
async fn strategic_merge_merges_containers_by_name() {
    let (_fake, client) = fake_with(vec![fixtures::pod_native_sidecar(fixtures::NODE_H100_B)]).await;
    let pods: Api<Pod> = Api::namespaced(client, "inference");
    let name = "vllm-llama-6f7d9c8b5-x2k4n";
    let patched = pods
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.9.0"}]}})),
        )
        .await
        .unwrap();
    let spec = patched.spec.unwrap();
    assert_eq!(spec.containers.len(), 1);
    assert_eq!(spec.containers[0].image.as_deref(), Some("vllm/vllm-openai:v0.9.0"));
    assert!(spec.containers[0].resources.as_ref().unwrap().limits.as_ref().unwrap().contains_key("nvidia.com/gpu"));
    assert_eq!(spec.init_containers.unwrap().len(), 2);
}

#[tokio::test]
async fn custom_resources_refuse_strategic_merge_but_take_merge_and_json_patches() {
    let (_fake, client) = fake_with(fixtures::standard_cluster()).await;
    let wl: Api<DynamicObject> = Api::namespaced_with(client.clone(), "research", &workload_resource());
    let err = wl
        .patch("job-big-sweep-7f3a1", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"active": false}})))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).code, 415, "like a real server, CRDs have no strategic merge");
    let merged = wl
        .patch("job-big-sweep-7f3a1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"active": false}})))
        .await
        .unwrap();
    assert_eq!(merged.data["spec"]["active"], false);
    assert_eq!(merged.data["spec"]["queueName"], "team-research");
    assert_eq!(merged.metadata.generation, Some(2), "a spec change bumps the generation");

    let req = http::Request::patch("/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads/job-big-sweep-7f3a1")
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([
                {"op": "test", "path": "/spec/active", "value": false},
                {"op": "replace", "path": "/spec/active", "value": true},
                {"op": "add", "path": "/metadata/labels/owner", "value": "alice"},
            ]))
            .unwrap(),
        )
        .unwrap();
    let patched: Value = client.request(req).await.unwrap();
    assert_eq!(patched["spec"]["active"], true);
    assert_eq!(patched["metadata"]["labels"]["owner"], "alice");

    let failing =
        http::Request::patch("/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads/job-big-sweep-7f3a1")
            .header(http::header::CONTENT_TYPE, "application/json-patch+json")
            .body(serde_json::to_vec(&json!([{"op": "test", "path": "/spec/active", "value": false}])).unwrap())
            .unwrap();
    assert_eq!(api_error(client.request::<Value>(failing).await.unwrap_err()).code, 422);
}

#[tokio::test]
async fn status_subresource_writes_only_status() {
    let (_fake, client) = fake_with(vec![fixtures::job_llm_pretrain()]).await;
    let jobs: Api<Job> = Api::namespaced(client, "train");
    let main = jobs
        .patch(
            "llm-pretrain",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 0}, "spec": {"parallelism": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(main.status.as_ref().unwrap().active, Some(3), "status ignored on the main resource");
    assert_eq!(main.spec.as_ref().unwrap().parallelism, Some(2));
    let status = jobs
        .patch_status(
            "llm-pretrain",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 1}, "spec": {"parallelism": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(status.status.as_ref().unwrap().active, Some(1));
    assert_eq!(status.spec.as_ref().unwrap().parallelism, Some(2), "spec ignored on /status");
}

#[tokio::test]
async fn replace_with_a_stale_resource_version_is_a_conflict() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let nodes: Api<Node> = Api::all(client);
    let mut stale = nodes.get("a").await.unwrap();
    fake.put(labelled_node("a", &[("touched", "yes")]));
    stale.labels_mut().insert("mine".into(), "1".into());
    let status = api_error(nodes.replace("a", &PostParams::default(), &stale).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    let mut fresh = nodes.get("a").await.unwrap();
    fresh.labels_mut().insert("mine".into(), "1".into());
    let replaced = nodes.replace("a", &PostParams::default(), &fresh).await.unwrap();
    assert_eq!(replaced.labels().get("mine").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn deleting_a_job_in_the_background_deletes_its_pods_and_workload() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "train");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "train");
    let res = jobs.delete("llm-pretrain", &DeleteParams::background()).await.unwrap();
    let status = res.right().expect("a Status for a deleted Job");
    assert_eq!(status.status, Some(kube::core::response::StatusSummary::Success));
    assert!(jobs.get_opt("llm-pretrain").await.unwrap().is_none());
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty(), "the Job's pods are gone");
    assert!(fake.get("kueue.x-k8s.io/v1beta2", "Workload", Some("train"), "job-llm-pretrain-5c8d2").is_none());
    let del = &fake.requests_to("DELETE", "/apis/batch/v1/namespaces/train/jobs/llm-pretrain")[0];
    assert_eq!(del.body.as_ref().unwrap()["propagationPolicy"], "Background");
}

#[tokio::test]
async fn deleting_a_job_without_a_policy_orphans_its_dependents() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let jobs: Api<Job> = Api::namespaced(client, "research");
    jobs.delete("big-sweep", &DeleteParams::default()).await.unwrap();
    let wl = fake
        .get("kueue.x-k8s.io/v1beta2", "Workload", Some("research"), "job-big-sweep-7f3a1")
        .expect("orphaned, not deleted");
    assert!(wl["metadata"]["ownerReferences"].as_array().unwrap().is_empty(), "owner reference removed");
}

#[tokio::test]
async fn deleting_a_pod_answers_the_pod_and_finalizers_hold_deletion() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "research");
    let res = pods.delete("debug-shell", &DeleteParams::default()).await.unwrap();
    let pod = res.left().expect("pods answer with the pod");
    assert!(pod.metadata.deletion_timestamp.is_some());
    assert!(pods.get_opt("debug-shell").await.unwrap().is_none(), "no kubelet: gone at once");
    let err = pods.delete("debug-shell", &DeleteParams::default()).await.unwrap_err();
    assert_eq!(api_error(err).code, 404);

    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let held = cms.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some(), "a finalizer holds the deletion");
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none(), "gone once the finalizer is removed");
    assert!(fake.get("v1", "ConfigMap", Some("default"), "held").is_none());
}

// ----- eviction ------------------------------------------------------------------------------

#[tokio::test]
async fn eviction_answers_201_and_deletes_the_pod() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let pods: Api<Pod> = Api::namespaced(client, "train");
    let rv = fake.resource_version().to_string();
    let mut watch = pods.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();

    let status = pods.evict("llm-pretrain-2-m3v8r", &EvictParams::default()).await.unwrap();
    assert_eq!(status.code, 201);
    assert_eq!(status.status, Some(kube::core::response::StatusSummary::Success));
    assert!(pods.get_opt("llm-pretrain-2-m3v8r").await.unwrap().is_none());
    match next(&mut watch).await.unwrap() {
        WatchEvent::Deleted(p) => assert_eq!(p.name_any(), "llm-pretrain-2-m3v8r"),
        other => panic!("expected DELETED, got {other:?}"),
    }

    // What kube sends: snake_case delete_options and the name, no kind/apiVersion.
    let post = &fake.requests_to("POST", "/api/v1/namespaces/train/pods/llm-pretrain-2-m3v8r/eviction")[0];
    let body = post.body.as_ref().unwrap();
    assert_eq!(body["metadata"]["name"], "llm-pretrain-2-m3v8r");
    assert!(body.as_object().unwrap().contains_key("delete_options"), "{body}");
    assert!(body.get("kind").is_none());

    let gone = api_error(pods.evict("llm-pretrain-2-m3v8r", &EvictParams::default()).await.unwrap_err());
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn blocked_eviction_answers_429_until_the_block_is_spent() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let pods: Api<Pod> = Api::namespaced(client, "research");
    fake.block_eviction("research", "debug-shell", Some(2));
    for _ in 0..2 {
        let status = api_error(pods.evict("debug-shell", &EvictParams::default()).await.unwrap_err());
        assert_eq!((status.code, status.reason.as_str()), (429, "TooManyRequests"));
        assert!(status.message.contains("disruption budget"), "{}", status.message);
        let causes = status.details.unwrap().causes;
        assert_eq!(causes[0].reason, "DisruptionBudget");
        assert!(pods.get_opt("debug-shell").await.unwrap().is_some());
    }
    assert_eq!(pods.evict("debug-shell", &EvictParams::default()).await.unwrap().code, 201);
    assert_eq!(fake.requests_to("POST", "/api/v1/namespaces/research/pods/debug-shell/eviction").len(), 3);

    fake.block_eviction("research", "featurizer-0", None);
    for _ in 0..3 {
        assert_eq!(api_error(pods.evict("featurizer-0", &EvictParams::default()).await.unwrap_err()).code, 429);
    }
    fake.block_eviction("research", "featurizer-0", Some(0));
    assert_eq!(pods.evict("featurizer-0", &EvictParams::default()).await.unwrap().code, 201);
}

#[tokio::test]
async fn kube_default_retry_hides_a_429_behind_retries() {
    let fake = FakeApi::start().await;
    fake.put_all(fixtures::standard_cluster());
    let mut config = fake.config();
    config.default_retry = true;
    let pods: Api<Pod> = Api::namespaced(fake.client_with(config), "research");
    fake.block_eviction("research", "debug-shell", Some(2));
    let status = pods.evict("debug-shell", &EvictParams::default()).await.unwrap();
    assert_eq!(status.code, 201, "kube retried the 429s by itself");
    assert_eq!(fake.requests_to("POST", "/api/v1/namespaces/research/pods/debug-shell/eviction").len(), 3);
}

#[tokio::test]
async fn a_disruption_budget_object_blocks_eviction() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let pdb = |allowed: i64| {
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "scratch-cache", "namespace": "research"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "scratch-cache"}}},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1},
        })
    };
    fake.put(pdb(0));
    let pods: Api<Pod> = Api::namespaced(client, "research");
    let name = "scratch-cache-5d8f7b6c9-kq4zm";
    let status = api_error(pods.evict(name, &EvictParams::default()).await.unwrap_err());
    assert_eq!(status.code, 429);
    assert_eq!(
        status.details.unwrap().causes[0].message,
        "The disruption budget scratch-cache needs 1 healthy pods and has 1 currently"
    );
    assert_eq!(
        pods.evict("debug-shell", &EvictParams::default()).await.unwrap().code,
        201,
        "other pods are not covered"
    );
    fake.put(pdb(1));
    assert_eq!(pods.evict(name, &EvictParams::default()).await.unwrap().code, 201);
    let after = fake.get("policy/v1", "PodDisruptionBudget", Some("research"), "scratch-cache").unwrap();
    assert_eq!(after["status"]["disruptionsAllowed"], 0, "an eviction spends the budget");
}

// ----- errors and knobs ----------------------------------------------------------------------

#[tokio::test]
async fn errors_carry_status_bodies() {
    let (fake, client) = fake_with(vec![]).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let status = api_error(pods.get("nope").await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "pods \"nope\" not found");
    assert_eq!(status.details.unwrap().kind, "pods");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    assert_eq!(api_error(jobs.get("nope").await.unwrap_err()).message, "jobs.batch \"nope\" not found");

    let raw = client.request_text(http::Request::get("/apis/example.com/v1/things").body(vec![]).unwrap()).await;
    let status = api_error(raw.unwrap_err());
    assert_eq!((status.code, status.message.as_str()), (404, "the server could not find the requested resource"));

    fake.fail_next(1, 500);
    let status = api_error(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (500, "InternalError"));
    assert!(pods.list(&ListParams::default()).await.is_ok(), "only the next request fails");
    fake.fail_next(1, 503);
    let status = api_error(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (503, "ServiceUnavailable"));

    // Every non-2xx answer was a Status document.
    for r in fake.requests() {
        assert!(r.status != 0, "{r:?}");
    }
}

#[tokio::test]
async fn kube_default_retry_retries_503s() {
    let fake = FakeApi::start().await;
    fake.put(fixtures::node_cpu("a"));
    let mut config = fake.config();
    config.default_retry = true;
    let nodes: Api<Node> = Api::all(fake.client_with(config));
    fake.fail_next(2, 503);
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [503, 503, 200]);
}

#[tokio::test]
async fn latency_knob_delays_every_answer() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let nodes: Api<Node> = Api::all(client);
    nodes.list(&ListParams::default()).await.unwrap();
    // A latency far above what a local answer takes, so the answer without it is quicker
    // by a margin no loaded machine eats up.
    const LATENCY: Duration = Duration::from_secs(2);
    fake.set_latency(LATENCY);
    let t = Instant::now();
    nodes.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() >= LATENCY, "{:?}", t.elapsed());
    fake.set_latency(Duration::ZERO);
    let t = Instant::now();
    nodes.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() < LATENCY, "{:?}", t.elapsed());
}

#[tokio::test]
async fn set_down_refuses_connections_and_brings_the_same_url_back() {
    let (fake, client) = fake_with(vec![fixtures::node_cpu("a")]).await;
    let url = fake.url();
    let nodes: Api<Node> = Api::all(client);
    nodes.list(&ListParams::default()).await.unwrap();

    fake.set_down(true);
    assert!(fake.is_down());
    let err = nodes.list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "a connection error, not an answer: {err:?}");
    let connect = tokio::net::TcpStream::connect(fake.addr()).await.unwrap_err();
    assert_eq!(connect.kind(), std::io::ErrorKind::ConnectionRefused);

    fake.set_down(false);
    assert_eq!(fake.url(), url);
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 1, "same client, same URL");
}

#[tokio::test]
async fn set_down_cuts_an_open_watch() {
    let (fake, client) = fake_with(vec![]).await;
    let nodes: Api<Node> = Api::all(client);
    let rv = fake.resource_version().to_string();
    let mut s = nodes.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    eventually("the watch to be open", || fake.open_watches() == 1).await;
    fake.set_down(true);
    // The stream ends (kube maps a cut body to the end of the stream) or fails.
    let end = tokio::time::timeout(WAIT, s.next()).await.expect("the watch noticed the server going away");
    assert!(matches!(end, None | Some(Err(_))), "unexpected {end:?}");
    fake.set_down(false);
}

#[tokio::test]
async fn disabled_kind_answers_404_or_403() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    let wl: Api<DynamicObject> = Api::namespaced_with(client, "research", &workload_resource());
    assert_eq!(wl.list(&ListParams::default()).await.unwrap().items.len(), 1);

    fake.disable_kind("kueue.x-k8s.io/v1beta2", "Workload", 404);
    let status = api_error(wl.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "the server could not find the requested resource");
    assert_eq!(api_error(wl.get("job-big-sweep-7f3a1").await.unwrap_err()).code, 404);

    fake.disable_kind("kueue.x-k8s.io/v1beta2", "Workload", 403);
    let status = api_error(wl.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status.message.contains(
            "cannot list resource \"workloads\" in API group \"kueue.x-k8s.io\" in the namespace \"research\""
        ),
        "{}",
        status.message
    );

    fake.enable_kind("kueue.x-k8s.io/v1beta2", "Workload");
    assert_eq!(wl.list(&ListParams::default()).await.unwrap().items.len(), 1);
}

// ----- odds and ends -------------------------------------------------------------------------

#[tokio::test]
async fn kubeconfig_file_points_at_the_fake() {
    let fake = FakeApi::start().await;
    fake.put(fixtures::node_cpu("a"));
    let dir = tempfile::tempdir().unwrap();
    let path = fake.kubeconfig(dir.path(), "fake-ctx");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    assert_eq!(kubeconfig.current_context.as_deref(), Some("fake-ctx"));
    let options = kube::config::KubeConfigOptions { context: Some("fake-ctx".into()), ..Default::default() };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), format!("{}/", fake.url()));
    assert_eq!(config.default_namespace, "default");
    let nodes: Api<Node> = Api::all(fake.client_with(config));
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn events_k8s_io_is_a_view_of_core_events() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    type NewEvent = k8s_openapi::api::events::v1::Event;
    let events: Api<NewEvent> = Api::namespaced(client.clone(), "research");
    for selector in ["regarding.name=big-train-pending", "involvedObject.name=big-train-pending"] {
        let list = events.list(&ListParams::default().fields(selector)).await.unwrap();
        assert_eq!(list.items.len(), 1, "{selector}");
        let ev = &list.items[0];
        assert_eq!(ev.note.as_deref(), Some(fixtures::UNSCHEDULABLE_MESSAGE));
        assert_eq!(ev.reason.as_deref(), Some("FailedScheduling"));
        assert_eq!(ev.regarding.as_ref().unwrap().kind.as_deref(), Some("Pod"));
        assert_eq!(ev.reporting_controller.as_deref(), Some("default-scheduler"));
        assert_eq!(ev.deprecated_count, Some(12));
    }
    let rv = fake.resource_version().to_string();
    let mut watch = events.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    let involved = json!({"kind": "Pod", "namespace": "research", "name": "debug-shell", "apiVersion": "v1"});
    fake.put(fixtures::event("research", "debug-shell.1", involved, "Normal", "Pulled", "pulled", "kubelet", 1));
    match next(&mut watch).await.unwrap() {
        WatchEvent::Added(e) => assert_eq!(e.note.as_deref(), Some("pulled")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn pod_logs() {
    let (fake, client) = fake_with(fixtures::standard_cluster()).await;
    fake.set_pod_log("research", "debug-shell", None, "line 1\nline 2\nline 3\n");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "research");
    assert_eq!(pods.logs("debug-shell", &LogParams::default()).await.unwrap(), "line 1\nline 2\nline 3\n");
    let tail = LogParams { tail_lines: Some(1), ..Default::default() };
    assert_eq!(pods.logs("debug-shell", &tail).await.unwrap(), "line 3\n");
    fake.set_pod_log("inference", "vllm-llama-6f7d9c8b5-x2k4n", Some("vllm"), "serving\n");
    let inference: Api<Pod> = Api::namespaced(client, "inference");
    let only_vllm = LogParams { container: Some("vllm".into()), ..Default::default() };
    assert_eq!(inference.logs("vllm-llama-6f7d9c8b5-x2k4n", &only_vllm).await.unwrap(), "serving\n");
    let missing = api_error(pods.logs("nope", &LogParams::default()).await.unwrap_err());
    assert_eq!(missing.code, 404);
}

// ----- fixtures ------------------------------------------------------------------------------

fn quantity(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> u32 {
    q.0.parse().unwrap_or_else(|_| panic!("a whole GPU count, got {:?}", q.0))
}

fn limit(c: &k8s_openapi::api::core::v1::Container, resource: &str) -> u32 {
    c.resources.as_ref().and_then(|r| r.limits.as_ref()).and_then(|l| l.get(resource)).map(quantity).unwrap_or(0)
}

/// A second, independent computation of a pod's effective request (KEP-753 sidecars).
fn pod_request(pod: &Pod, resource: &str) -> u32 {
    let spec = pod.spec.as_ref().unwrap();
    let app: u32 = spec.containers.iter().map(|c| limit(c, resource)).sum();
    let mut sidecars = 0;
    let mut init_peak = 0;
    for c in spec.init_containers.iter().flatten() {
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars += limit(c, resource);
            init_peak = init_peak.max(sidecars);
        } else {
            init_peak = init_peak.max(limit(c, resource) + sidecars);
        }
    }
    let overhead = spec.overhead.as_ref().and_then(|o| o.get(resource)).map(quantity).unwrap_or(0);
    (app + sidecars).max(init_peak) + overhead
}

#[tokio::test]
async fn standard_cluster_deserializes_and_matches_the_documented_gpu_allocation() {
    let (_fake, client) = fake_with(fixtures::standard_cluster()).await;
    let nodes = Api::<Node>::all(client.clone()).list(&ListParams::default()).await.unwrap().items;
    let pods = Api::<Pod>::all(client.clone()).list(&ListParams::default()).await.unwrap().items;
    assert_eq!(nodes.len(), 7);
    assert_eq!(pods.len(), 20);
    assert_eq!(Api::<Job>::all(client.clone()).list(&ListParams::default()).await.unwrap().items.len(), 2);
    assert_eq!(Api::<Event>::all(client.clone()).list(&ListParams::default()).await.unwrap().items.len(), 3);
    for (kind, plural, n) in [
        ("ClusterQueue", "clusterqueues", 1),
        ("LocalQueue", "localqueues", 2),
        ("Workload", "workloads", 2),
        ("ResourceFlavor", "resourceflavors", 1),
    ] {
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind), plural);
        let items =
            Api::<DynamicObject>::all_with(client.clone(), &ar).list(&ListParams::default()).await.unwrap().items;
        assert_eq!(items.len(), n, "{kind}");
    }

    let mut computed: BTreeMap<(String, String), u32> = BTreeMap::new();
    for pod in &pods {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
        let Some(node) = pod.spec.as_ref().unwrap().node_name.clone() else { continue };
        if phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        for row in kube_fake::fixtures::STANDARD_GPU_ALLOCATION.iter().filter(|r| r.node == node) {
            *computed.entry((node.clone(), row.resource.to_owned())).or_default() += pod_request(pod, row.resource);
        }
    }
    for row in kube_fake::fixtures::STANDARD_GPU_ALLOCATION {
        let node = nodes.iter().find(|n| n.name_any() == row.node).unwrap_or_else(|| panic!("node {}", row.node));
        let status = node.status.as_ref().unwrap();
        let get = |m: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.as_ref().and_then(|m| m.get(row.resource)).map(quantity).unwrap_or(0)
        };
        assert_eq!(get(&status.capacity), row.capacity, "{} {} capacity", row.node, row.resource);
        assert_eq!(get(&status.allocatable), row.allocatable, "{} {} allocatable", row.node, row.resource);
        let allocated = computed.get(&(row.node.to_owned(), row.resource.to_owned())).copied().unwrap_or(0);
        assert_eq!(allocated, row.allocated, "{} {} allocated", row.node, row.resource);
    }
    // The drain target holds what the table says.
    let on_cordoned: Vec<String> = pods
        .iter()
        .filter(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some(fixtures::NODE_CORDONED))
        .map(|p| format!("{}/{}", p.namespace().unwrap(), p.name_any()))
        .collect();
    let mut expected: Vec<String> = fixtures::CORDONED_NODE_PODS.iter().map(|(p, _)| (*p).to_owned()).collect();
    let mut got = on_cordoned;
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    // Owner references point at objects' real uids.
    let job = Api::<Job>::namespaced(client, "train").get("llm-pretrain").await.unwrap();
    let owned =
        pods.iter().filter(|p| p.owner_references().iter().any(|o| Some(&o.uid) == job.metadata.uid.as_ref())).count();
    assert_eq!(owned, 3);
}
