//! What SkyPilot API server this machine reaches: the one `~/.sky/config.yaml` names
//! (`api_server: endpoint:`), else one that answers `/api/health` on the default local port.

use std::path::Path;

use futures_util::future::BoxFuture;

use super::config::{DEFAULT_PORT, SkyPilotConfig, endpoint_in, probe_local};
use crate::backend::registry::{Discovery, Found, Line, Look};
use crate::config::Settings;

/// The kind's discovery (its `KindEntry::discover`): a file read, else a bounded probe of
/// one local port, off the runtime's threads.
pub fn discover(_look: &Look) -> BoxFuture<'static, Discovery> {
    Box::pin(async {
        let path = crate::config::expand_tilde("~/.sky/config.yaml");
        tokio::task::spawn_blocking(move || server(&path, || probe_local(DEFAULT_PORT))).await.unwrap_or_else(|e| {
            Discovery { missing: vec![format!("SkyPilot (looking failed: {e})")], ..Discovery::default() }
        })
    })
}

/// The server of the client config at `path`, else the local one when `answers`.
fn server(path: &Path, answers: impl FnOnce() -> bool) -> Discovery {
    let (url, why) = match endpoint_in(path) {
        Some(url) => {
            let why = format!("SkyPilot API server at {url} (the api_server of {})", path.display());
            (url, why)
        }
        None if answers() => {
            let url = format!("http://127.0.0.1:{DEFAULT_PORT}");
            let why = format!("SkyPilot API server at {url} (it answered /api/health)");
            (url, why)
        }
        None => {
            let missing =
                format!("SkyPilot (no api_server in {}, nothing on 127.0.0.1:{DEFAULT_PORT})", path.display());
            return Discovery { missing: vec![missing], ..Discovery::default() };
        }
    };
    let found = Found {
        names: vec!["sky".into(), "skypilot".into()],
        why,
        active: true,
        settings: Settings::new(SkyPilotConfig { url: url.clone(), token: None }),
        section: vec![Line::text("url", url)],
    };
    Discovery { found: vec![found], ..Discovery::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_config_first_then_the_local_port() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let none = server(&path, || false);
        assert!(none.found.is_empty());
        assert!(none.missing[0].starts_with("SkyPilot (no api_server in "), "{:?}", none.missing);
        let local = server(&path, || true);
        assert_eq!(local.found[0].settings.get::<SkyPilotConfig>(), Some(&SkyPilotConfig::default()));
        assert!(local.found[0].why.ends_with("(it answered /api/health)"), "{}", local.found[0].why);
        std::fs::write(&path, "api_server:\n  endpoint: http://sky.internal:46580/\n").unwrap();
        let named = server(&path, || panic!("the file's server is not probed for"));
        let f = &named.found[0];
        assert!(f.active);
        assert_eq!(f.names, ["sky", "skypilot"]);
        assert_eq!(f.section, [Line::text("url", "http://sky.internal:46580")]);
        assert!(f.why.starts_with("SkyPilot API server at http://sky.internal:46580 (the api_server of "), "{}", f.why);
    }
}
