//! Reaching the other replicas of a hub (issue #32): each is found through a Lease holder
//! identity (`ID@PEER`), and reached the way a hub client reaches a hub (`backend::hub_link`):
//! one `Link` per peer address, subscribed and resumed as a cockpit's is, with the token
//! the replicas share.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::http::TokenSource;
use crate::backend::hub_link::Link;
use crate::backend::hub_link::channel::{self, HubUrl};

/// How long connecting to a peer, and its first state, may take before the relay says so.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(5);

/// How this replica reaches the others.
#[derive(Clone, Debug, Default)]
pub struct PeerOptions {
    /// `https://` to peers (the hub serves TLS: every replica does), else `http://`.
    pub tls: bool,
    /// The CA that signed the peers' certificates (else the system roots).
    pub ca_file: Option<PathBuf>,
    /// The token this replica shows the others: an operator's line of the token file the
    /// replicas share (`--peer-token-file`).
    pub token: Option<TokenSource>,
}

impl PeerOptions {
    /// The URL of a peer address as a Lease names it: `HOST:PORT` gets this hub's scheme;
    /// an address with its own scheme (or `unix:`) is taken as it is.
    pub fn url(&self, peer: &str) -> Result<HubUrl, String> {
        if peer.contains("://") || peer.starts_with("unix:") {
            return peer.parse();
        }
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{peer}").parse()
    }

    /// A link to `peer`, not yet subscribed (the channel connects on first use).
    pub fn link(&self, peer: &str) -> Result<Arc<Link>, String> {
        let url = self.url(peer)?;
        let channel = channel::channel(&url, self.ca_file.as_deref(), PEER_TIMEOUT)?;
        Ok(Link::new(url, channel, self.token.clone()))
    }
}

/// Starts following `link`'s subscription on a task of its own, for as long as anyone
/// else holds the link (`Link::follow` ends once the last other holder dropped it).
pub fn follow(link: &Arc<Link>) {
    let link = link.clone();
    tokio::spawn(async move {
        let first = match link.open(PEER_TIMEOUT).await {
            Ok(stream) => Some(stream),
            Err(e) => {
                link.lock().down = Some(e.to_string());
                link.changed.send_modify(|n| *n = n.wrapping_add(1));
                None
            }
        };
        link.follow(first, PEER_TIMEOUT).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_address_takes_this_hub_s_scheme_unless_it_names_one() {
        let plain = PeerOptions::default();
        assert_eq!(plain.url("10.0.0.5:7443").unwrap(), HubUrl::Http("http://10.0.0.5:7443".into()));
        let tls = PeerOptions { tls: true, ..PeerOptions::default() };
        assert_eq!(tls.url("hub-0.hub:7443").unwrap(), HubUrl::Https("https://hub-0.hub:7443".into()));
        assert_eq!(tls.url("http://127.0.0.1:1").unwrap(), HubUrl::Http("http://127.0.0.1:1".into()));
        assert!(matches!(tls.url("unix:/run/fd.sock").unwrap(), HubUrl::Unix(_)));
    }
}
