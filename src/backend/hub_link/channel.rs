//! The client's connection to a hub: one lazily connecting gRPC channel that reconnects by
//! itself, notices a dead hub through HTTP/2 pings, and speaks TLS (the given CA or the
//! system's roots) for `https://` or plain HTTP/2 over a Unix socket for `unix:/path`.
//!
//! This file uses nothing of the crate (only tonic, tokio, tower, hyper-util and rustls), so
//! `tests/offline/hub_net.rs` can compile it on its own.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};

/// How often an idle connection is pinged, and how long a ping may go unanswered before the
/// connection counts as dead (and the next call reconnects).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// TCP keepalive, for what HTTP/2 pings cannot see (a half-open connection under a quiet
/// stream is caught by either, whichever comes first).
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// The largest CA file read.
const MAX_CA_BYTES: u64 = 4 << 20;

/// Where a hub is: `http://host:port`, `https://host:port` or `unix:/path/to/socket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubUrl {
    /// `http://host:port`, as given (without a trailing `/`).
    Http(String),
    /// `https://host:port`, as given (without a trailing `/`).
    Https(String),
    Unix(PathBuf),
}

impl std::str::FromStr for HubUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if text.chars().any(char::is_control) {
            return Err("the hub URL holds a control character".into());
        }
        if let Some(rest) = text.strip_prefix("unix:") {
            let path = rest.strip_prefix("//").filter(|p| p.starts_with('/')).unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(format!(
                    "hub URL `{text}`: give an absolute socket path, like unix:/run/flightdeck/hub.sock"
                ));
            }
            return Ok(HubUrl::Unix(PathBuf::from(path)));
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!("hub URL `{text}` has no scheme: write https://{text} (or http://, or unix:/PATH)"));
        };
        let secure = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => {
                return Err(format!(
                    "hub URL `{text}`: unsupported scheme `{scheme}`; use https://, http:// or unix:/PATH"
                ));
            }
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains('/') || authority.contains('?') || authority.contains('#') {
            return Err(format!(
                "hub URL `{text}`: give only the scheme, host and port (no path), like https://hub:50051"
            ));
        }
        if authority.contains('@') {
            // Not echoed: what precedes `@` may be a password.
            return Err("the hub URL holds credentials (`user@` or `user:password@`); give the token with FLIGHTDECK_HUB_TOKEN or the config's token_env/token_file instead".into());
        }
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
        };
        if host.is_empty() {
            return Err(format!("hub URL `{text}` has no host"));
        }
        let base = format!("{}://{authority}", if secure { "https" } else { "http" });
        if let Err(e) = base.parse::<Uri>() {
            return Err(format!("hub URL `{text}`: {e}"));
        }
        Ok(if secure { HubUrl::Https(base) } else { HubUrl::Http(base) })
    }
}

impl HubUrl {
    /// Whether only this machine is reached: a Unix socket, or `localhost`, a 127.0.0.0/8
    /// address or `[::1]`.
    pub fn is_loopback(&self) -> bool {
        match self {
            HubUrl::Unix(_) => true,
            HubUrl::Http(base) | HubUrl::Https(base) => {
                let Ok(uri) = base.parse::<Uri>() else { return false };
                let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
                host.eq_ignore_ascii_case("localhost")
                    || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.to_canonical().is_loopback())
            }
        }
    }

    /// Whether a bearer token sent here would cross a network in clear text: plain
    /// `http://` to a host other than this one.
    pub fn exposes_tokens(&self) -> bool {
        matches!(self, HubUrl::Http(_)) && !self.is_loopback()
    }
}

impl fmt::Display for HubUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubUrl::Http(url) | HubUrl::Https(url) => f.write_str(url),
            HubUrl::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// A channel to the hub at `url`. It connects on first use and again after the connection
/// is lost, so building it never blocks and never fails for an unreachable hub; what fails
/// here is the setup itself (a CA file that does not read, no system roots), named.
/// Must be called within a Tokio runtime (the channel's worker is spawned on it).
pub fn channel(url: &HubUrl, ca_file: Option<&Path>, connect_timeout: Duration) -> Result<Channel, String> {
    match url {
        HubUrl::Http(base) | HubUrl::Https(base) => {
            if let (HubUrl::Http(_), Some(ca)) = (url, ca_file) {
                return Err(format!(
                    "a CA file ({}) is given, but {url} is not https://; write https:// or leave out the CA file",
                    ca.display()
                ));
            }
            let mut endpoint =
                tuned(Endpoint::from_shared(base.clone()).map_err(|e| format!("hub URL {url}: {e}"))?, connect_timeout)
                    .tcp_keepalive(Some(TCP_KEEPALIVE));
            if let HubUrl::Https(_) = url {
                let tls = match ca_file {
                    Some(path) => ClientTlsConfig::new().ca_certificate(read_ca(path)?),
                    None => ClientTlsConfig::new().with_native_roots(),
                };
                endpoint = endpoint.tls_config(tls).map_err(|e| match ca_file {
                    Some(path) => format!("TLS setup for {url} with CA file {}: {}", path.display(), error_text(&e)),
                    None => format!(
                        "TLS setup for {url}: {} (no usable system CA certificates? give the hub's CA file)",
                        error_text(&e)
                    ),
                })?;
            }
            Ok(endpoint.connect_lazy())
        }
        HubUrl::Unix(path) => {
            if let Some(ca) = ca_file {
                return Err(format!(
                    "a CA file ({}) is given, but {url} is a Unix socket, served without TLS",
                    ca.display()
                ));
            }
            // The authority only fills the `:authority` header; the connector ignores it.
            let endpoint = tuned(Endpoint::from_static("http://flightdeck-hub"), connect_timeout);
            let path = path.clone();
            let connector = tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(&path).await.map_err(|e| {
                        std::io::Error::new(e.kind(), format!("cannot connect to {}: {e}", path.display()))
                    })?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                }
            });
            Ok(endpoint.connect_with_connector_lazy(connector))
        }
    }
}

/// What every hub connection shares: a bounded connect, pings while idle.
fn tuned(endpoint: Endpoint, connect_timeout: Duration) -> Endpoint {
    endpoint
        .connect_timeout(connect_timeout)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true)
}

/// The CA certificates of `path` (PEM), checked here so a wrong file is named now rather
/// than turning into a handshake failure later.
fn read_ca(path: &Path) -> Result<Certificate, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read CA file {shown}: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_CA_BYTES {
        return Err(format!("CA file {shown} is not a PEM file (not a regular file, or over 4 MiB)"));
    }
    let pem = std::fs::read(path).map_err(|e| format!("cannot read CA file {shown}: {e}"))?;
    let mut certs = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("CA file {shown}: {e}"))?;
        // The same parse the handshake's verifier makes.
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).map_err(|e| format!("CA file {shown}: {e}"))?;
        certs += 1;
    }
    if certs == 0 {
        return Err(format!("CA file {shown} holds no PEM certificate"));
    }
    Ok(Certificate::from_pem(pem))
}

/// An error with its chain of causes, `: `-separated (`transport error: invalid peer
/// certificate: UnknownIssuer`): tonic's own text stops at the first, which says little.
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A failed call's status in words, with what caused it (for a connection failure, the
/// transport's chain: `tcp connect error: Connection refused (os error 111)`,
/// `invalid peer certificate: UnknownIssuer`). tonic's wrapper that only says
/// "transport error" is left out, and so is a cause the text already holds.
pub fn status_text(status: &tonic::Status) -> String {
    use std::error::Error;
    let mut text = status.message().to_string();
    let mut source = status.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if more != "transport error" && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_urls_parse_and_print() {
        for text in ["http://127.0.0.1:50051", "https://hub.example.com:50051", "https://[::1]:50051", "https://hub"] {
            assert_eq!(text.parse::<HubUrl>().unwrap().to_string(), text);
        }
        assert_eq!("https://hub:50051/".parse(), Ok(HubUrl::Https("https://hub:50051".into())));
        assert_eq!("unix:/run/fd.sock".parse(), Ok(HubUrl::Unix("/run/fd.sock".into())));
        assert_eq!("unix:///run/fd.sock".parse(), Ok(HubUrl::Unix("/run/fd.sock".into())));
        assert_eq!(HubUrl::Unix("/run/fd.sock".into()).to_string(), "unix:/run/fd.sock");
    }

    #[test]
    fn bad_hub_urls_say_what_is_wrong() {
        let err = "https://alice:s3cret@hub:50051".parse::<HubUrl>().unwrap_err();
        assert!(err.contains("holds credentials") && !err.contains("s3cret"), "{err}");
        let err = "ftp://hub:21".parse::<HubUrl>().unwrap_err();
        assert!(err.contains("unsupported scheme `ftp`"), "{err}");
        let err = "hub:50051".parse::<HubUrl>().unwrap_err();
        assert!(err.contains("has no scheme: write https://hub:50051"), "{err}");
        assert!("https://:50051".parse::<HubUrl>().unwrap_err().contains("has no host"));
        assert!("https://".parse::<HubUrl>().unwrap_err().contains("has no host"));
        assert!("https://hub:50051/v1".parse::<HubUrl>().unwrap_err().contains("no path"));
        assert!("unix:run/x.sock".parse::<HubUrl>().unwrap_err().contains("absolute socket path"));
    }

    #[tokio::test]
    async fn channels_build_without_connecting_and_name_a_bad_ca_file() {
        let timeout = Duration::from_secs(1);
        // Nobody listens there; building must still succeed at once.
        assert!(channel(&"http://127.0.0.1:9".parse().unwrap(), None, timeout).is_ok());
        assert!(channel(&"unix:/nonexistent/hub.sock".parse().unwrap(), None, timeout).is_ok());

        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap();
        let https: HubUrl = "https://127.0.0.1:9".parse().unwrap();
        let err = channel(&https, Some(&ca), timeout).unwrap_err();
        assert_eq!(err, format!("CA file {} holds no PEM certificate", ca.display()));
        let err = channel(&https, Some(&dir.path().join("absent.pem")), timeout).unwrap_err();
        assert!(err.starts_with(&format!("cannot read CA file {}/absent.pem", dir.path().display())), "{err}");
        let err = channel(&"http://127.0.0.1:9".parse().unwrap(), Some(&ca), timeout).unwrap_err();
        assert!(err.contains("is not https://"), "{err}");
    }
}
