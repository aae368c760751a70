//! A hub serving one publisher on loopback TCP, as the hub benches need it: a fleet that polls
//! nothing, a token file with one user, the real service behind the real interceptor.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use flightdeck::fleet::{Fleet, FleetOptions};
use flightdeck::model::FleetState;
use flightdeck::serve::auth::{self, Auth, sha256_hex};
use flightdeck::serve::metrics::Metrics;
use flightdeck::serve::publish::Publisher;
use flightdeck::serve::service::HubService;
use flightdeck::wire::pb;

pub struct LoopbackHub {
    pub publisher: Arc<Publisher>,
    pub addr: SocketAddr,
    _fleet: Arc<Fleet>,
}

/// Serves `state` on 127.0.0.1 to the bearer of `token`, known as `user` with `role`; the
/// token file is written in `dir`.
pub async fn serve(state: &FleetState, dir: &Path, token: &str, user: &str, role: &str) -> LoopbackHub {
    let metrics = Arc::new(Metrics::default());
    let publisher = Publisher::new(state, metrics.clone());
    let fleet = Arc::new(Fleet::start(
        Vec::new(),
        FleetOptions { read_only: true, poll: false, audit: None, actor: "bench".into() },
    ));
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{} {user} {role}\n", sha256_hex(token))).unwrap();
    std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let auth = Arc::new(Auth::tokens(&tokens).unwrap());
    let service = pb::hub_server::HubServer::with_interceptor(
        HubService::new(fleet.clone(), publisher.clone(), metrics),
        auth::interceptor(auth),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    LoopbackHub { publisher, addr, _fleet: fleet }
}
