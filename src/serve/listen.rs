//! Where the hub listens: a TCP address (TLS required unless it is loopback) or a Unix socket
//! in a directory nobody else can swap it in.
//!
//! Host names are refused on purpose: `--listen` says which local interface is opened, and
//! a name that resolves to several (or to a public one) would hide that.

use std::fmt;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tonic::transport::{Identity, ServerTlsConfig};

/// The largest certificate chain or key file read.
const MAX_PEM_BYTES: u64 = 1 << 20;

/// `--listen`: `127.0.0.1:50051`, `[::1]:50051`, `0.0.0.0:50051` or `unix:/run/flightdeck.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl ListenAddr {
    /// Whether only this machine can reach it (a loopback address, or a Unix socket).
    pub fn is_loopback(&self) -> bool {
        match self {
            ListenAddr::Tcp(addr) => addr.ip().to_canonical().is_loopback(),
            ListenAddr::Unix(_) => true,
        }
    }
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if let Some(rest) = text.strip_prefix("unix:") {
            // `unix:///run/x.sock` is the URL form of `unix:/run/x.sock`.
            let path = rest.strip_prefix("//").filter(|p| p.starts_with('/')).unwrap_or(rest);
            if path.is_empty() {
                return Err("`unix:` needs a socket path, like unix:/run/flightdeck/hub.sock".into());
            }
            if !path.starts_with('/') {
                return Err(format!("`{text}`: give an absolute socket path, like unix:/run/flightdeck/hub.sock"));
            }
            if path.contains('\0') {
                return Err("the socket path holds a NUL character".into());
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(ListenAddr::Tcp(addr));
        }
        if text.parse::<std::net::IpAddr>().is_ok() {
            return Err(format!("`{text}` has no port: give an address and port, like {text}:50051"));
        }
        let shown = crate::safe_text::printable(text);
        Err(format!(
            "`{shown}` is not an IP address and port: give an IP address (127.0.0.1:50051, [::1]:50051, 0.0.0.0:50051) rather than a host name, or unix:/PATH"
        ))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// `--tls-cert` and `--tls-key`: PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Whether `addr` may be served with (or without) `tls`: an address other machines can reach
/// needs TLS, since tokens travel in every request; a Unix socket cannot have it (the
/// client does not speak TLS over one, and the kernel already keeps it local).
pub fn check_tls(addr: &ListenAddr, tls: Option<&TlsFiles>) -> Result<(), String> {
    match (addr, tls) {
        (ListenAddr::Unix(_), Some(_)) => {
            Err(format!("{addr} is a Unix socket: it is served without TLS; leave out --tls-cert/--tls-key"))
        }
        (ListenAddr::Tcp(_), None) if !addr.is_loopback() => Err(format!(
            "listening on {addr} lets other machines connect, and bearer tokens would cross the network in clear text: give --tls-cert FILE and --tls-key FILE (plain text is only for loopback addresses and unix: sockets)"
        )),
        _ => Ok(()),
    }
}

/// The server's TLS settings from its PEM certificate chain and key, checked now so that a
/// wrong file fails at start-up, naming the file, rather than at the first handshake.
pub fn server_tls(tls: &TlsFiles) -> Result<ServerTlsConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let cert_pem = read_pem("TLS certificate", &tls.cert)?;
    let key_pem = read_private_pem(&tls.key)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate {}: {e}", tls.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("TLS certificate {} holds no PEM certificate", tls.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            format!("TLS key {} holds no PEM private key", tls.key.display())
        }
        e => format!("TLS key {}: {e}", tls.key.display()),
    })?;
    // The same check the handshake would make, made once here: the key belongs to the
    // certificate, and rustls can use both.
    rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS key {} does not fit certificate {}: {e}", tls.key.display(), tls.cert.display()))?;
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem)))
}

fn read_pem(what: &str, path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {what} {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{what} {shown} is not a regular file"));
    }
    if meta.len() > MAX_PEM_BYTES {
        return Err(format!("{what} {shown} is {} bytes; that is no PEM file", meta.len()));
    }
    std::fs::read(path).map_err(|e| format!("cannot read {what} {shown}: {e}"))
}

/// The key's text, if neither group nor others can get at it.
fn read_private_pem(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read TLS key {shown}: {e}"))?;
    let mode = meta.mode() & 0o777;
    if meta.is_file() && mode & 0o077 != 0 {
        return Err(format!("TLS key {shown} can be read by group or others (mode {mode:03o}); run chmod 600 on it"));
    }
    read_pem("TLS key", path)
}

/// Bind the hub's Unix socket at `path` (within a Tokio runtime), where nobody else can put
/// one of their own: its directory must exist and be writable only by its owner (or be
/// sticky, like `/tmp`); an old socket nobody answers on is removed, anything else at the
/// path is left alone and refused. The socket is `0660` (its owner and group connect) from
/// the moment it has its name.
pub fn bind_unix(path: &Path) -> Result<tokio_stream::wrappers::UnixListenerStream, String> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(format!("socket path {shown} is not absolute"));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("/"));
    let dir = std::fs::metadata(parent)
        .map_err(|e| format!("socket {shown}: cannot use its directory {}: {e}", parent.display()))?;
    if !dir.is_dir() {
        return Err(format!("socket {shown}: {} is not a directory", parent.display()));
    }
    let dir_mode = dir.mode() & 0o7777;
    if dir_mode & 0o022 != 0 && dir_mode & 0o1000 == 0 {
        return Err(format!(
            "socket {shown}: its directory {} can be written by group or others (mode {:03o}) and is not sticky, so another user could replace the socket; use a directory only the hub's user can write (like /run/flightdeck)",
            parent.display(),
            dir_mode & 0o777
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => remove_stale_socket(path)?,
        Ok(_) => return Err(format!("{shown} exists and is not a socket; refusing to replace it")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("socket {shown}: {e}")),
    }
    let listener = bind_privately(path, parent)?;
    Ok(tokio_stream::wrappers::UnixListenerStream::new(listener))
}

/// Bind the socket in a fresh directory only this process's user can enter, give it its
/// mode there, and only then rename it to `path` (a rename keeps the listening socket):
/// there is no moment at which it is reachable with the umask's wider mode. The umask
/// itself is left alone, since it is the whole process's and other threads create files.
fn bind_privately(path: &Path, parent: &Path) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::DirBuilderExt;
    let shown = path.display();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let private = parent.join(format!(".{name}.{}.{nanos}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(|e| format!("socket {shown}: cannot make a private directory beside it: {e}"))?;
    let staged = private.join("hub.sock");
    let bound = (|| {
        let listener = tokio::net::UnixListener::bind(&staged).map_err(|e| format!("cannot listen on {shown}: {e}"))?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o660))
            .map_err(|e| format!("socket {shown}: cannot set its mode to 0660: {e}"))?;
        std::fs::rename(&staged, path).map_err(|e| format!("socket {shown}: cannot move it into place: {e}"))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_file(&staged);
    let _ = std::fs::remove_dir(&private);
    bound
}

/// Remove a socket left by a hub that is gone; one that still answers belongs to a live hub.
fn remove_stale_socket(path: &Path) -> Result<(), String> {
    let shown = path.display();
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(format!("another process is already listening on {shown}")),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            tracing::info!(socket = %shown, "removing a stale socket nobody answers on");
            std::fs::remove_file(path).map_err(|e| format!("cannot remove the stale socket {shown}: {e}"))
        }
        Err(e) => Err(format!("{shown} exists and cannot be checked ({e}); refusing to replace it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse_and_print() {
        for text in ["127.0.0.1:50051", "[::1]:50051", "0.0.0.0:50051", "[::]:8080", "unix:/run/flightdeck.sock"] {
            let addr: ListenAddr = text.parse().unwrap();
            assert_eq!(addr.to_string(), text);
        }
        assert_eq!("unix:///run/x.sock".parse(), Ok(ListenAddr::Unix("/run/x.sock".into())));
    }

    #[test]
    fn loopback_and_unix_are_local() {
        let local = ["127.0.0.1:1", "127.0.0.2:1", "[::1]:1", "[::ffff:127.0.0.1]:1", "unix:/run/x"];
        for text in local {
            assert!(text.parse::<ListenAddr>().unwrap().is_loopback(), "{text}");
        }
        for text in ["0.0.0.0:1", "[::]:1", "10.0.0.5:1"] {
            assert!(!text.parse::<ListenAddr>().unwrap().is_loopback(), "{text}");
        }
    }

    #[test]
    fn host_names_relative_paths_and_missing_ports_are_refused() {
        let err = "localhost:50051".parse::<ListenAddr>().unwrap_err();
        assert!(err.contains("give an IP address"), "{err}");
        let err = "hub.example.com:50051".parse::<ListenAddr>().unwrap_err();
        assert!(err.contains("rather than a host name"), "{err}");
        let err = "127.0.0.1".parse::<ListenAddr>().unwrap_err();
        assert_eq!(err, "`127.0.0.1` has no port: give an address and port, like 127.0.0.1:50051");
        let err = "unix:run/hub.sock".parse::<ListenAddr>().unwrap_err();
        assert!(err.contains("give an absolute socket path"), "{err}");
        assert!("unix:".parse::<ListenAddr>().is_err());
    }

    #[test]
    fn tls_is_required_off_loopback() {
        let tls = TlsFiles { cert: "/c".into(), key: "/k".into() };
        let open: ListenAddr = "0.0.0.0:50051".parse().unwrap();
        let err = check_tls(&open, None).unwrap_err();
        assert!(err.contains("--tls-cert") && err.contains("--tls-key"), "{err}");
        assert_eq!(check_tls(&open, Some(&tls)), Ok(()));
        assert_eq!(check_tls(&"127.0.0.1:50051".parse().unwrap(), None), Ok(()));
        let unix: ListenAddr = "unix:/run/x".parse().unwrap();
        assert_eq!(check_tls(&unix, None), Ok(()));
        assert!(check_tls(&unix, Some(&tls)).unwrap_err().contains("leave out --tls-cert/--tls-key"));
    }

    #[test]
    fn tls_files_are_named_when_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("hub.crt");
        let key = dir.path().join("hub.key");
        std::fs::write(&cert, "not pem").unwrap();
        std::fs::write(&key, "not pem").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let files = TlsFiles { cert: cert.clone(), key: key.clone() };
        let err = server_tls(&files).unwrap_err();
        assert_eq!(err, format!("TLS certificate {} holds no PEM certificate", cert.display()));

        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        let err = server_tls(&files).unwrap_err();
        assert_eq!(err, format!("TLS key {} holds no PEM private key", key.display()));

        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        assert!(server_tls(&files).is_ok());

        let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(&key, other.signing_key.serialize_pem()).unwrap();
        let err = server_tls(&files).unwrap_err();
        assert!(err.starts_with(&format!("TLS key {} does not fit certificate", key.display())), "{err}");

        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = server_tls(&files).unwrap_err();
        assert!(err.contains("can be read by group or others (mode 640)"), "{err}");
        let err = server_tls(&TlsFiles { cert: dir.path().join("nope"), key }).unwrap_err();
        assert!(err.starts_with(&format!("cannot read TLS certificate {}/nope", dir.path().display())), "{err}");
    }

    #[tokio::test]
    async fn stale_sockets_are_replaced_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.sock");
        let first = bind_unix(&path).unwrap();
        let err = bind_unix(&path).unwrap_err();
        assert_eq!(err, format!("another process is already listening on {}", path.display()));
        drop(first);
        // The old socket is still on disk, and nobody answers on it.
        assert!(path.exists());
        let _second = bind_unix(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o660);
        // Nothing is left beside it: the private directory it was made in is gone.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("hub.sock")]);
    }
}
