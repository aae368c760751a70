//! A SkyPilot API server's section of `[[cluster]]`.
//!
//! ```toml
//! [[cluster]]
//! name = "sky"
//! kind = "skypilot"
//! url = "http://127.0.0.1:46580"   # the SkyPilot API server
//! token_env = "SKYPILOT_TOKEN"      # optional bearer token (or token_file = "~/.sky/token")
//! timeout_seconds = 30              # bound on every request, and on waiting for its result
//! ```
//!
//! With no config file, the embedded default adds the API server that `~/.sky/config.yaml`
//! names (`api_server: endpoint:`), else one answering on SkyPilot's default local port
//! (`discover.rs`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::backend::http::TokenSource;
use crate::config::{ClusterKind, ClusterSection, FileError, KindConfig, KindSettings, Settings};

/// The port `sky api start` listens on by default.
pub const DEFAULT_PORT: u16 = 46580;
/// How long the embedded default's probe of the local port may take (connect and answer).
const PROBE_BOUND: Duration = Duration::from_millis(300);

/// Which SkyPilot API server, and the token to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkyPilotConfig {
    /// `http://host:port`, no trailing `/`.
    pub url: String,
    pub token: Option<TokenSource>,
}

impl Default for SkyPilotConfig {
    fn default() -> Self {
        Self { url: format!("http://127.0.0.1:{DEFAULT_PORT}"), token: None }
    }
}

impl KindSettings for SkyPilotConfig {
    const KIND: ClusterKind = ClusterKind::from_static("skypilot");
}

impl SkyPilotConfig {
    pub const KEYS: &'static [&'static str] = &["url", "token_env", "token_file"];

    pub fn parse(section: &ClusterSection<'_>) -> Result<SkyPilotConfig, FileError> {
        let raw: Raw = section.deserialize()?;
        let mut out = SkyPilotConfig::default();
        if let Some(value) = &raw.url {
            out.url = check_url(value.get_ref()).map_err(|why| section.bad_value("url", value, why))?;
        }
        let file = match &raw.token_file {
            Some(value) => Some(section.file_path("token_file", value)?),
            None => None,
        };
        let env = raw.token_env.as_ref().map(|v| v.get_ref().clone());
        out.token = TokenSource::from_keys(env, file).map_err(|why| match (&raw.token_env, &raw.token_file) {
            (Some(v), _) => section.bad_value("token_env", v, &why),
            (None, Some(v)) => section.bad_value("token_file", v, &why),
            (None, None) => unreachable!("no token key, no token error"),
        })?;
        Ok(out)
    }
}

/// The kind's config: its keys and parser.
pub fn kind_config() -> KindConfig {
    KindConfig {
        kind: SkyPilotConfig::KIND,
        keys: SkyPilotConfig::KEYS,
        parse: |section| SkyPilotConfig::parse(section).map(Settings::new),
    }
}

/// An API server URL: `http://` or `https://`, a host, no credentials in it (they would
/// show in every error message), no query; the trailing `/` dropped.
pub fn check_url(url: &str) -> Result<String, String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{url:?} is no http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    if host.contains('@') {
        return Err("a URL with credentials in it would show them in messages; use `token_env` or `token_file`".into());
    }
    if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{url:?} is not a plain server URL (no spaces, query or fragment)"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// `api_server: endpoint: URL` of a SkyPilot client config, when it has a usable one.
pub fn endpoint_in(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Client {
        api_server: Option<ApiServer>,
    }
    #[derive(Deserialize)]
    struct ApiServer {
        endpoint: Option<String>,
    }
    let text = std::fs::read_to_string(path).ok()?;
    if text.len() > 1 << 20 {
        return None;
    }
    let client: Client = serde_saphyr::from_str(&text).ok()?;
    check_url(&client.api_server?.endpoint?).ok()
}

/// Whether a SkyPilot API server answers `GET /api/health` on this local port, within
/// [`PROBE_BOUND`] all told. Nothing listening costs one refused connect.
pub fn probe_local(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut sock) = TcpStream::connect_timeout(&addr, PROBE_BOUND) else { return false };
    let _ = sock.set_read_timeout(Some(PROBE_BOUND));
    let _ = sock.set_write_timeout(Some(PROBE_BOUND));
    let request = format!("GET /api/health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if sock.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = sock.take(16 << 10).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.starts_with("HTTP/1.") && text.contains("\"api_version\"")
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    url: Option<Spanned<String>>,
    #[serde(default)]
    token_env: Option<Spanned<String>>,
    #[serde(default)]
    token_file: Option<Spanned<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::registry::testing::{parse, refused_naming_key as refused};

    const BASE: &str = "[[cluster]]\nname = \"sky\"\nkind = \"skypilot\"\n";

    #[test]
    fn skypilot_sections() {
        let config =
            parse(&format!("{BASE}url = \"http://10.0.0.5:46580/\"\ntoken_env = \"SKYPILOT_TOKEN\"\n")).unwrap();
        assert_eq!(
            config.clusters[0].section::<SkyPilotConfig>(),
            Some(&SkyPilotConfig {
                url: "http://10.0.0.5:46580".into(),
                token: Some(TokenSource::Env("SKYPILOT_TOKEN".into())),
            })
        );
        let config = parse(&format!("{BASE}token_file = \"~/.sky/token\"\n")).unwrap();
        let sky = config.clusters[0].section::<SkyPilotConfig>().unwrap();
        assert_eq!(sky.url, "http://127.0.0.1:46580");
        assert!(matches!(&sky.token, Some(TokenSource::File(p)) if p.ends_with(".sky/token")));
    }

    #[test]
    fn skypilot_keys_are_checked() {
        let shown = refused(&format!("{BASE}url = \"ftp://x\"\n"), 4, "url");
        assert!(shown.contains("no http:// or https:// URL"), "{shown}");
        let shown = refused(&format!("{BASE}url = \"https://me:pw@sky.example\"\n"), 4, "url");
        assert!(shown.contains("credentials") && !shown.contains("me:pw@"), "{shown}");
        refused(&format!("{BASE}url = \"http://\"\n"), 4, "url");
        refused(&format!("{BASE}url = \"http://a b\"\n"), 4, "url");
        let shown = refused(&format!("{BASE}token_env = \"A\"\ntoken_file = \"/t\"\n"), 4, "token_env");
        assert!(shown.contains("not both"), "{shown}");
        refused(&format!("{BASE}token_env = \"\"\n"), 4, "token_env");
        let shown = refused(&format!("{BASE}context = \"x\"\n"), 4, "context");
        assert!(shown.contains("does not apply to a skypilot cluster"), "{shown}");
    }

    #[test]
    fn endpoint_of_the_client_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "api_server:\n  endpoint: http://sky.internal:46580/\nallowed_clouds: [aws]\n").unwrap();
        assert_eq!(endpoint_in(&path).as_deref(), Some("http://sky.internal:46580"));
        std::fs::write(&path, "allowed_clouds: [aws]\n").unwrap();
        assert_eq!(endpoint_in(&path), None);
        std::fs::write(&path, "api_server: [not, a, map]\n").unwrap();
        assert_eq!(endpoint_in(&path), None);
        assert_eq!(endpoint_in(&dir.path().join("missing.yaml")), None);
    }

    #[test]
    fn the_local_probe_is_fast_and_wants_a_skypilot_answer() {
        use std::net::TcpListener;
        // Nothing listening: refused at once.
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let t = std::time::Instant::now();
        assert!(!probe_local(port));
        // A server that answers like SkyPilot, and one that never answers.
        let sky = TcpListener::bind("127.0.0.1:0").unwrap();
        let sky_port = sky.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = sky.accept() {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n{\"status\":\"healthy\",\"api_version\":\"62\"}");
            }
        });
        assert!(probe_local(sky_port));
        let mute = TcpListener::bind("127.0.0.1:0").unwrap();
        let mute_port = mute.local_addr().unwrap().port();
        let t2 = std::time::Instant::now();
        assert!(!probe_local(mute_port));
        assert!(t2.elapsed() < Duration::from_secs(2), "bounded: {:?}", t2.elapsed());
        assert!(t.elapsed() < Duration::from_secs(3));
        drop(mute);
    }
}
