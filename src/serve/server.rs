//! `flightdeck serve`: one fleet behind the gRPC service, the standard health service and
//! server reflection, on TCP (TLS unless loopback) or a Unix socket; `/metrics` on a port
//! of its own (loopback unless asked otherwise), since it answers without a token.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Server;

use super::auth::{self, Auth};
use super::listen::{self, ListenAddr, TlsFiles};
use super::metrics::Metrics;
use super::peers::PeerOptions;
use super::publish::Publisher;
use super::relay;
use super::service::HubService;
use crate::fleet::Fleet;
use crate::wire::{self, pb};

/// How often the server pings an idle connection, and how long it waits for the answer:
/// a client gone without a goodbye (a laptop closed) is dropped within half a minute.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct ServeOptions {
    pub listen: ListenAddr,
    pub tls: Option<TlsFiles>,
    /// The token file; without one only a Unix socket is served (its peers are the callers).
    pub tokens: Option<PathBuf>,
    /// A plain-text port with the health service alone, for probes that cannot speak TLS
    /// (the kubelet's gRPC probes): it tells only whether the hub serves.
    pub health_listen: Option<std::net::SocketAddr>,
    /// Where `/metrics` answers (plain HTTP, no token: it names the clusters, so the
    /// command line keeps it on loopback unless told otherwise); `None`: nowhere.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// The most subscriptions open at once, per user and in all.
    pub subscribers: super::limits::SubscriberLimits,
}

/// Serve `fleet` until `shutdown` resolves. Errors are the sentence the user reads.
pub async fn serve(
    fleet: Arc<Fleet>,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), String> {
    let published = Replication { published: fleet.subscribe(), forward: None, relay: None };
    serve_published(fleet, published, opts, shutdown).await
}

/// What one replica of several serves besides its fleet.
pub struct Replication {
    /// The state it publishes: its own clusters and the relayed ones (`relay`).
    pub published: tokio::sync::watch::Receiver<Arc<crate::model::FleetState>>,
    /// Where calls on clusters other replicas hold go (`forward`).
    pub forward: Option<Arc<super::forward::Forwarder>>,
    /// Where each published cluster comes from, for `/metrics`.
    pub relay: Option<Arc<relay::Figures>>,
}

impl Replication {
    /// One replica's: `fleet`'s clusters merged with those relayed from the replicas that
    /// hold the others (`relay`), calls on those forwarded there (`forward`).
    pub fn relayed(fleet: &Fleet, ownership: Arc<dyn relay::Ownership>, peers: PeerOptions) -> Replication {
        let figures = Arc::new(relay::Figures::default());
        Replication {
            published: relay::start(fleet.subscribe(), ownership.clone(), peers.clone(), figures.clone()),
            forward: Some(super::forward::Forwarder::new(ownership, peers)),
            relay: Some(figures),
        }
    }
}

/// [`serve`] as one replica of several: publishing `replication.published` rather than the
/// fleet's own state, forwarding calls as `replication.forward` says.
pub async fn serve_published(
    fleet: Arc<Fleet>,
    replication: Replication,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), String> {
    listen::check_tls(&opts.listen, opts.tls.as_ref())?;
    let auth = match (&opts.tokens, &opts.listen) {
        (Some(path), _) => Auth::tokens(path)?,
        (None, ListenAddr::Unix(_)) => Auth::unix_peers(),
        (None, ListenAddr::Tcp(_)) => {
            return Err("serving on TCP needs --tokens FILE (lines of `TOKEN_SHA256 USER ROLE`); only a Unix socket may go without".into());
        }
    };
    let metrics = Arc::new(Metrics::default());
    let Replication { published, forward, relay } = replication;
    let publisher = Publisher::new(&published.borrow().clone(), metrics.clone());
    tokio::spawn(publisher.clone().run(published));
    // On shutdown, end the subscriptions first: a graceful stop waits for open streams.
    let closing = publisher.clone();
    let shutdown = async move {
        shutdown.await;
        closing.close();
    };

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<pb::hub_server::HubServer<HubService>>().await;
    if let Some(at) = opts.health_listen {
        let listener =
            tokio::net::TcpListener::bind(at).await.map_err(|e| format!("cannot listen on {at} for health: {e}"))?;
        let probes = Server::builder()
            .add_service(health_service.clone())
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
        tokio::spawn(probes);
    }
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| format!("cannot build the reflection service: {e}"))?;
    // Messages are bounded both ways (tonic would encode any size): a full state goes out in
    // chunks, so only a mistake or an attack comes near the bound.
    let service = pb::hub_server::HubServer::new(
        HubService::with_limits(fleet.clone(), publisher.clone(), metrics.clone(), opts.subscribers)
            .forwarding(forward),
    )
    .max_decoding_message_size(wire::MAX_MESSAGE)
    .max_encoding_message_size(wire::MAX_MESSAGE);
    let hub = tonic::service::interceptor::InterceptedService::new(service, auth::interceptor(Arc::new(auth)));

    if let Some(at) = opts.metrics_listen {
        let figures = Figured { fleet: fleet.clone(), metrics: metrics.clone(), relay };
        serve_metrics(at, figures, publisher.closed()).await?;
    }

    let routes = tonic::service::Routes::new(health_service).add_service(reflection).add_service(hub);
    let mut server = Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT));
    if let Some(tls) = &opts.tls {
        server = server.tls_config(listen::server_tls(tls)?).map_err(|e| format!("TLS: {e}"))?;
    }
    let router = server.add_routes(routes);
    let served = match &opts.listen {
        ListenAddr::Tcp(addr) => {
            let listener =
                tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            let bound = listener.local_addr().map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            announce(&format!("{bound}"), opts.tls.is_some());
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            router.serve_with_incoming_shutdown(incoming, shutdown).await
        }
        ListenAddr::Unix(path) => {
            let incoming = listen::bind_unix(path)?;
            announce(&format!("unix:{}", path.display()), false);
            let served = router.serve_with_incoming_shutdown(incoming, shutdown).await;
            let _ = std::fs::remove_file(path);
            served
        }
    };
    served.map_err(|e| format!("the hub stopped: {e}"))
}

/// What `/metrics` reads: the hub's counters, its fleet's own polling, and for a replica
/// where each cluster it publishes comes from.
#[derive(Clone)]
struct Figured {
    fleet: Arc<Fleet>,
    metrics: Arc<Metrics>,
    relay: Option<Arc<relay::Figures>>,
}

impl Figured {
    fn text(&self) -> String {
        let mut body = self.metrics.render(&self.fleet.state(), &self.fleet.requests_sent());
        if let Some(relay) = &self.relay {
            body.push_str(&super::metrics::replica_text(&relay.now()));
        }
        body
    }
}

/// Answer `GET /metrics` (Prometheus text) on `at`, plain HTTP/1, on a task of its own.
/// Bound now, so a port in use fails the start in words rather than later in a log.
/// It stops when `closed` resolves (the hub stopping).
async fn serve_metrics(
    at: std::net::SocketAddr,
    figured: Figured,
    closed: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(at).await.map_err(|e| {
        format!("cannot listen on {at} for /metrics: {e}; give --metrics-listen IP:PORT, or --metrics-listen off")
    })?;
    let bound = listener.local_addr().map_err(|e| format!("cannot listen on {at} for /metrics: {e}"))?;
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let body = figured.text();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], body) }
        }),
    );
    tracing::info!(listen = %bound, "metrics serving");
    eprintln!("flightdeck hub metrics on http://{bound}/metrics");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(closed).await {
            tracing::error!("the metrics listener stopped: {e}");
        }
    });
    Ok(())
}

/// Say where the hub listens (the port, when the system chose it) on stderr and in the log.
fn announce(at: &str, tls: bool) {
    tracing::info!(listen = %at, tls, "hub serving");
    eprintln!("flightdeck hub listening on {at}{}", if tls { " (TLS)" } else { "" });
}
