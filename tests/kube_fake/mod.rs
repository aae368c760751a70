//! An in-process fake of the Kubernetes API server that speaks the real wire protocol to the
//! real `kube` client (`kube::Client`, `Api<T>`, `kube::runtime::{watcher, reflector}`,
//! `kube::Discovery`). No real API server can run on the build machines, see
//! `/work/shared/notes/kubernetes.md`; this is what the Kubernetes tests talk to instead.
//!
//! A test binary that needs it declares it in its `main.rs` (`#[path = "../kube_fake/mod.rs"]
//! mod kube_fake;`, as `fakes` and `bed` do); a test module then uses it:
//!
//! ```ignore
//! use crate::kube_fake::{FakeApi, fixtures};
//!
//! #[tokio::test]
//! async fn nodes() {
//!     let fake = FakeApi::start().await;
//!     for obj in fixtures::standard_cluster() { fake.put(obj); }
//!     let client = fake.client().await;              // no retries, see `FakeApi::config`
//!     let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
//!     assert_eq!(nodes.list(&Default::default()).await.unwrap().items.len(), 7);
//! }
//! ```
//!
//! # What it serves
//!
//! * Plain HTTP on `127.0.0.1:PORT`, on its own small tokio runtime (a background thread), so a
//!   test may use any runtime flavour, block, or even be synchronous ([`FakeApi::start_blocking`]).
//!   The server stops when the last clone of the [`FakeApi`] is dropped.
//! * Paths `/api/v1/{plural}`, `/api/v1/namespaces/{ns}/{plural}[/{name}[/{sub}]]`,
//!   `/apis/{group}/{version}/…`, cluster-scoped `…/{plural}/{name}[/{sub}]`. The resources known
//!   out of the box are listed in `resources.rs` (core v1, apps/v1, batch/v1, policy/v1,
//!   events.k8s.io/v1, scheduling.k8s.io/v1, node.k8s.io/v1, coordination.k8s.io/v1 Leases,
//!   kueue.x-k8s.io/v1beta2); more with [`FakeApi::add_resource`].
//! * Discovery: `/version`, `/api`, `/apis`, `/api/v1`, `/apis/{g}`, `/apis/{g}/{v}`, both the
//!   classic documents and the aggregated `APIGroupDiscoveryList` (when `Accept` asks for it).
//!   A kind disabled with status 404 disappears from discovery (an absent CRD).
//! * Lists `{kind: XList, apiVersion, metadata: {resourceVersion, continue, remainingItemCount},
//!   items}` in etcd key order (namespace, name), `limit`/`continue` paging, `labelSelector`
//!   (`=`, `==`, `!=`, `k`, `!k`, `in (…)`, `notin (…)`) and `fieldSelector` (`path=v`, `path==v`,
//!   `path!=v` on any dotted path, a missing field reads as ""). Items of built-in kinds come
//!   without `apiVersion`/`kind`, like a real server; custom resources carry them.
//! * Watch (`watch=true` or `watch=1`): HTTP 200, chunked, one JSON event per line, replaying
//!   changes newer than `resourceVersion` (`""`/`"0"` = synthetic ADDED for everything current),
//!   with label/field selectors applied to both the old and new object (an object that moves out
//!   of a selector is a DELETED, one that moves in an ADDED). `allowWatchBookmarks=true` → a
//!   BOOKMARK every [`FakeApi::set_bookmark_interval`] (default 200 ms) and one at the end of a
//!   `timeoutSeconds`. `sendInitialEvents=true` (streaming lists) → ADDED for everything, then a
//!   BOOKMARK annotated `k8s.io/initial-events-end: "true"`. A resource version older than the
//!   compacted history → HTTP 200 then one ERROR event holding a Status 410 `Expired`.
//! * Create (POST; uid, creationTimestamp, generation, resourceVersion, namespace from the path,
//!   `generateName`, `dryRun=All`), replace (PUT, optimistic concurrency on resourceVersion),
//!   PATCH with `application/strategic-merge-patch+json` (recursive merge, lists of containers,
//!   volumes, env… merged by `name`, conditions by `type`, `$patch: delete`),
//!   `application/merge-patch+json` (RFC 7386), `application/json-patch+json` (RFC 6902) and
//!   `application/apply-patch+yaml` (JSON bodies only; merged, `fieldManager` required). Writes
//!   to the main resource keep the old `status`; writes to `/status` only change `status`. A
//!   no-op write does not bump the resourceVersion. Finalizers hold a deletion until removed.
//! * DELETE (Status Success body; pods answer with the pod and its deletionTimestamp),
//!   `propagationPolicy` from the body or the query: Background/Foreground delete dependents
//!   (objects whose ownerReferences name the uid, recursively), Orphan strips the owner
//!   reference. The default is Background, except for batch/v1 Jobs: Orphan, as on a real
//!   server. DELETE on a collection deletes what the selectors match. Pods are deleted at once
//!   (there is no kubelet), `preconditions` are checked.
//! * `POST …/pods/{name}/eviction` with any body (kube sends `delete_options` in snake_case):
//!   201 Status Success and the pod is deleted; 429 `TooManyRequests` with a `DisruptionBudget`
//!   cause when [`FakeApi::block_eviction`] says so or a policy/v1 PodDisruptionBudget whose
//!   selector matches has `status.disruptionsAllowed` 0 (or no status yet); 404 when the pod is
//!   gone. An allowed eviction decrements the PDB's `disruptionsAllowed`.
//! * `GET …/pods/{name}/log` (`container`, `tailLines`) answers what [`FakeApi::set_pod_log`] set,
//!   as `text/plain`. It ignores `timestamps` (no timestamps are prefixed), `sinceTime`,
//!   `sinceSeconds`, `limitBytes`, `previous` and `follow` (the whole text, then the end).
//! * Every non-2xx answer carries a Status JSON body
//!   `{kind: Status, apiVersion: v1, metadata: {}, status: Failure, message, reason, code}`.
//! * Queries tolerate empty pairs (`path?&k=v`, bare `?`).
//!
//! # Protocol facts about kube 5 (checked by `tests/fakes/kube_protocol.rs`)
//!
//! * kube builds queries as `path?&k=v`; lists send `limit`, `continue`, selectors; the watcher's
//!   initial list sends `limit=500`; watches send `watch=true&timeoutSeconds=290&
//!   allowWatchBookmarks=true&resourceVersion=N`.
//! * `Api::evict` posts `{"delete_options": …, "metadata": {"name": …}}` (no kind/apiVersion).
//! * `Api::delete` sends DeleteOptions as a JSON body (camelCase), never as query parameters.
//! * kube's default client retries 429/503/504 (15 tries, exponential back-off from 5 ms);
//!   [`FakeApi::client`] turns that off, [`FakeApi::config`] lets a test turn it back on.
//! * `kube::Client::try_from(config)` needs a rustls crypto provider even for `http://`
//!   (kube's `ring` feature); without one it panics.
//! * An ERROR 410 event reaches a `watcher` stream as one `Err` ("error returned by apiserver
//!   during watch: too old resource version: N (M): Expired"), then a new `Init` … `InitDone`
//!   cycle with one new list.
//! * A watch body cut mid-stream ([`FakeApi::drop_watches`], [`FakeApi::set_down`]) is just the
//!   end of the stream for kube: `watcher` watches again from its last resourceVersion, without
//!   an error event and without listing again. A body cut while hyper still buffers events loses
//!   them on the wire, as a real dropped connection would; the re-watch replays them.
//! * `Api::delete` answers `Either::Left(pod)` for pods (graceful deletion) and
//!   `Either::Right(Status)` for the other kinds.
//! * `watcher::Config::streaming_lists()` sends `sendInitialEvents=true&
//!   resourceVersionMatch=NotOlderThan&resourceVersion=0` and no list at all.
#![allow(dead_code)]

pub mod fixtures;
mod patch;
mod resources;
mod selectors;
mod server;
mod store;
pub mod workloads;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use resources::ResourceDef;
pub use store::RecordedRequest;

use store::{State, WatchMsg};

/// A handle to one fake API server. Cheap to clone; every clone sees the same state. The server
/// shuts down when the last clone is dropped.
#[derive(Clone)]
pub struct FakeApi {
    inner: Arc<Inner>,
    _guard: Arc<RuntimeGuard>,
}

/// Shared between the handle and the server tasks.
pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    pub(crate) tx: broadcast::Sender<WatchMsg>,
    pub(crate) net: Mutex<server::Net>,
    pub(crate) addr: SocketAddr,
    pub(crate) runtime: tokio::runtime::Handle,
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Stops the server's runtime when the last [`FakeApi`] clone goes away.
struct RuntimeGuard {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for RuntimeGuard {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl FakeApi {
    /// Starts a fake API server on `127.0.0.1:0` (its own runtime on a background thread).
    pub async fn start() -> FakeApi {
        Self::start_blocking()
    }

    /// [`FakeApi::start`] for synchronous callers.
    pub fn start_blocking() -> FakeApi {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("kube-fake".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("kube-fake-rt")
                    .enable_all()
                    .build()
                    .expect("kube_fake: build the server runtime");
                handle_tx.send(rt.handle().clone()).expect("kube_fake: hand over the runtime");
                rt.block_on(async move {
                    let _ = stop_rx.await;
                });
                rt.shutdown_background();
            })
            .expect("kube_fake: spawn the server thread");
        let runtime = handle_rx.recv().expect("kube_fake: runtime handle");

        let listener = {
            let _enter = runtime.enter();
            server::bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("kube_fake: bind 127.0.0.1:0")
        };
        let addr = listener.local_addr().expect("kube_fake: local address");
        let (tx, _) = broadcast::channel(1 << 14);
        let inner = Arc::new(Inner {
            state: Mutex::new(State::new()),
            tx,
            net: Mutex::new(server::Net {
                listener: Some(listener),
                waker: None,
                conn_token: CancellationToken::new(),
            }),
            addr,
            runtime: runtime.clone(),
        });
        runtime.spawn(server::serve(inner.clone()));
        FakeApi { inner, _guard: Arc::new(RuntimeGuard { stop: Some(stop_tx) }) }
    }

    /// `http://127.0.0.1:PORT`. Stays the same across [`FakeApi::set_down`].
    pub fn url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// Writes `dir/kubeconfig-{context}.yaml`: one cluster (`server: http://…`), one user (`{}`),
    /// one context named `context` (namespace `default`), which is the current context.
    pub fn kubeconfig(&self, dir: &Path, context: &str) -> PathBuf {
        let path = dir.join(format!("kubeconfig-{context}.yaml"));
        write_kubeconfig(&path, &[(context, &self.url())], context);
        path
    }

    /// A `kube::Config` straight at the fake: default namespace `default`, `default_retry`
    /// **off** (kube's default retries 429/503/504 fifteen times with back-off), a 5 s connect
    /// timeout. Flip `default_retry` back on and pass it to [`FakeApi::client_with`] to test
    /// retry behaviour.
    pub fn config(&self) -> kube::Config {
        let mut config = kube::Config::new(self.url().parse().expect("kube_fake: url"));
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(5));
        config
    }

    /// A client built from [`FakeApi::config`] (no retries).
    pub async fn client(&self) -> kube::Client {
        self.client_with(self.config())
    }

    /// `kube::Client::try_from(config)`: kube's own client stack (what the adapter builds).
    /// Call it inside a tokio runtime (the client spawns its buffer task there). Needs a
    /// rustls crypto provider even for `http://` (kube's `ring` feature).
    pub fn client_with(&self, config: kube::Config) -> kube::Client {
        kube::Client::try_from(config).expect("kube_fake: build a kube client")
    }

    /// A client that reaches this fake through a TCP relay of its own that can be cut
    /// (`cut.cancel()`): from then on the relay refuses connections and closes every one it
    /// carries, as if the client's machine lost its network while the fake stays up for every
    /// other client. No retries, 1 s connect and read timeouts, so a cut shows at once.
    pub async fn cuttable_client(&self) -> (kube::Client, tokio_util::sync::CancellationToken) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("kube_fake: bind a relay");
        let url = format!("http://{}", listener.local_addr().expect("kube_fake: the relay's address"));
        let target = self.addr();
        let cut = tokio_util::sync::CancellationToken::new();
        let token = cut.clone();
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = tokio::select! {
                    _ = token.cancelled() => return,
                    accepted = listener.accept() => match accepted { Ok(a) => a, Err(_) => return },
                };
                let token = token.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else { return };
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    }
                });
            }
        });
        let mut config = kube::Config::new(url.parse().expect("kube_fake: the relay's url"));
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(1));
        config.read_timeout = Some(Duration::from_secs(1));
        (self.client_with(config), cut)
    }

    // ----- state ---------------------------------------------------------------------------

    /// Creates or replaces an object, keyed by apiVersion/kind/namespace/name. Bumps the
    /// resourceVersion and emits ADDED or MODIFIED (always, even when nothing changed). Keeps
    /// the uid and creationTimestamp of the object it replaces unless the new one sets them;
    /// a namespaced object without a namespace goes to `default`. An `events.k8s.io/v1` Event
    /// is stored as the core `v1` Event it is a view of. Panics on a kind the fake does not
    /// serve (register it first with [`FakeApi::add_resource`]). Returns the stored object.
    pub fn put(&self, obj: Value) -> Value {
        let mut st = self.inner.state();
        st.put(&self.inner.tx, obj)
    }

    /// [`FakeApi::put`] for many objects.
    pub fn put_all(&self, objs: impl IntoIterator<Item = Value>) {
        for obj in objs {
            self.put(obj);
        }
    }

    /// Deletes one object at once (no finalizers, no cascade) and emits DELETED. Returns the
    /// deleted object, `None` when there was none.
    pub fn delete(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let mut st = self.inner.state();
        let key = st.storage_key(api_version, kind, namespace, name);
        st.remove(&self.inner.tx, &key)
    }

    /// The stored object (with `apiVersion`, `kind`, `metadata.resourceVersion`).
    pub fn get(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let st = self.inner.state();
        let key = st.storage_key(api_version, kind, namespace, name);
        st.objects.get(&key).map(|obj| st.to_wire_for(api_version, kind, obj))
    }

    /// Every stored object of that kind, all namespaces, in key order.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let st = self.inner.state();
        st.all_of(api_version, kind)
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.state().rv
    }

    /// Every request the fake received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.state().requests.clone()
    }

    /// The recorded requests with this method whose path is `path` exactly.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|r| r.method == method && r.path == path).collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.inner.state().requests.clear();
    }

    /// The number of watch streams open right now.
    pub fn open_watches(&self) -> usize {
        self.inner.state().open_watches
    }

    // ----- knobs ---------------------------------------------------------------------------

    /// Every request waits this long before it is answered (0 to turn off).
    pub fn set_latency(&self, d: Duration) {
        self.inner.state().latency = d;
    }

    /// The next `n` requests (any path, discovery and watches included) answer `status` with a
    /// Status body (reason from the code: 500 InternalError, 503 ServiceUnavailable, 429
    /// TooManyRequests, …). Replaces an earlier `fail_next` still pending.
    pub fn fail_next(&self, n: usize, status: u16) {
        let mut st = self.inner.state();
        st.fail_next = n;
        st.fail_status = status;
    }

    /// Aborts every open watch stream now, as a dropped connection would: the body ends without
    /// its final chunk. kube's watcher reconnects from its last resourceVersion.
    pub fn drop_watches(&self) {
        let _ = self.inner.tx.send(WatchMsg::Drop);
    }

    /// Compacts history: open watches get an ERROR event with a Status 410 `Expired` and end, and
    /// every resourceVersion handed out so far becomes too old, so a watch (or a `continue`
    /// token) from one of them gets 410 too. kube's watcher answers with a fresh list (a new
    /// `Init` … `InitDone` cycle).
    pub fn expire_watches(&self) {
        let mut st = self.inner.state();
        st.rv += 1;
        st.compacted_rv = st.rv;
        st.history.clear();
        let _ = self.inner.tx.send(WatchMsg::Expire { rv: st.rv });
    }

    /// `true`: the API server is gone. The listening socket is closed (new connections are
    /// refused) and every open connection, watches included, is cut. `false`: listens again on
    /// the same port, so the same URL and kubeconfig work again. State is kept throughout, and
    /// [`FakeApi::put`] keeps working while down (the changes are replayed to watches after).
    pub fn set_down(&self, down: bool) {
        server::set_down(&self.inner, down);
    }

    /// Whether the server is down.
    pub fn is_down(&self) -> bool {
        server::is_down(&self.inner)
    }

    /// Evictions of `namespace/pod` answer 429 TooManyRequests (a disruption budget) `times`
    /// times, or for ever with `None`. `Some(0)` lifts the block.
    pub fn block_eviction(&self, namespace: &str, pod: &str, times: Option<usize>) {
        let mut st = self.inner.state();
        let key = (namespace.to_owned(), pod.to_owned());
        if times == Some(0) {
            st.blocked_evictions.remove(&key);
        } else {
            st.blocked_evictions.insert(key, times);
        }
    }

    /// Every path of that kind answers `status`: 404 is an absent CRD (the kind also disappears
    /// from discovery, its group too when nothing else is left), 403 is RBAC (still discovered).
    /// `disable_kind("policy/v1", "Eviction", s)` makes the pods/eviction subresource answer `s`.
    pub fn disable_kind(&self, api_version: &str, kind: &str, status: u16) {
        self.inner.state().disabled.insert((api_version.to_owned(), kind.to_owned()), status);
    }

    /// Undoes [`FakeApi::disable_kind`].
    pub fn enable_kind(&self, api_version: &str, kind: &str) {
        self.inner.state().disabled.remove(&(api_version.to_owned(), kind.to_owned()));
    }

    /// Period of BOOKMARK events on watches that allow them (default 200 ms).
    pub fn set_bookmark_interval(&self, d: Duration) {
        self.inner.state().bookmark_interval = d;
    }

    /// Serves another resource (a CRD such as Volcano's `batch.volcano.sh/v1alpha1` Job).
    pub fn add_resource(&self, api_version: &str, kind: &str, plural: &str, namespaced: bool) {
        let def = ResourceDef::new(api_version, kind, plural, namespaced);
        let mut st = self.inner.state();
        st.resources.retain(|d| !(d.api_version() == def.api_version() && d.kind == def.kind));
        st.resources.push(def);
    }

    /// Serve Kueue's visibility API (`visibility.kueue.x-k8s.io/v1beta1`
    /// `clusterqueues/NAME/pendingworkloads`), computed from the stored Workloads.
    pub fn serve_kueue_visibility(&self) {
        let mut def = ResourceDef::new("visibility.kueue.x-k8s.io/v1beta1", "ClusterQueue", "clusterqueues", false);
        def.subresources = vec!["pendingworkloads".into()];
        let mut st = self.inner.state();
        st.resources.retain(|d| !(d.api_version() == def.api_version() && d.kind == def.kind));
        st.resources.push(def);
    }

    /// What `GET …/pods/{pod}/log?container={container}` answers. `container: None` is the
    /// pod's only (or first) container.
    pub fn set_pod_log(&self, namespace: &str, pod: &str, container: Option<&str>, text: &str) {
        let key = (namespace.to_owned(), pod.to_owned(), container.unwrap_or("").to_owned());
        self.inner.state().logs.insert(key, text.to_owned());
    }
}

/// The `flightdeck` binary with one cluster `k8s` on a kubeconfig's `fake` context: the
/// config file and the binary's state live in `dir`.
pub struct Cli {
    config: PathBuf,
    state: PathBuf,
}

impl Cli {
    pub fn new(dir: &Path, kubeconfig: &Path) -> Cli {
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[[cluster]]\nname = \"k8s\"\nkind = \"kubernetes\"\nkubeconfig = \"{}\"\ncontext = \"fake\"\ntimeout_seconds = 5\n",
                kubeconfig.display()
            ),
        )
        .expect("the config file");
        Cli { config, state: dir.to_path_buf() }
    }

    /// One command: whether it succeeded, its stdout, its stderr.
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flightdeck"))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env("XDG_STATE_HOME", &self.state)
            .env("NO_COLOR", "1")
            .output()
            .expect("the binary runs");
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (out.status.success(), text(out.stdout), text(out.stderr))
    }
}

/// Writes a kubeconfig with one cluster/user/context per `(context, server_url)` entry, with
/// `current` as the current context. Users are `{}` (no credentials).
pub fn write_kubeconfig(path: &Path, contexts: &[(&str, &str)], current: &str) {
    let mut clusters = String::new();
    let mut ctxs = String::new();
    let mut users = String::new();
    for (name, url) in contexts {
        clusters.push_str(&format!("- name: {name}\n  cluster:\n    server: {url}\n"));
        ctxs.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n    namespace: default\n"
        ));
        users.push_str(&format!("- name: {name}\n  user: {{}}\n"));
    }
    let text = format!(
        "apiVersion: v1\nkind: Config\npreferences: {{}}\nclusters:\n{clusters}contexts:\n{ctxs}users:\n{users}current-context: {current}\n"
    );
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("kube_fake: kubeconfig directory");
    }
    std::fs::write(path, text).expect("kube_fake: write kubeconfig");
}
