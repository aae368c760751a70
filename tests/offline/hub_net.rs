//! The hub's networking over real sockets: a tonic server with the standard health service
//! as the RPC under test, behind `serve::auth`, served on loopback TCP, with TLS from a
//! self-signed certificate, and on a Unix socket bound by `serve::listen::bind_unix`; reached
//! through the client's `channel()`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flightdeck::serve::auth::{self, Auth, Caller, Role, sha256_hex};
use flightdeck::serve::listen::{ListenAddr, TlsFiles, bind_unix, check_tls, server_tls};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::Router;
use tonic::transport::{Channel, Server, ServerTlsConfig};
use tonic::{Code, Request, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

// The client's connection module, compiled here on its own (it uses nothing of the crate).
#[allow(dead_code)]
#[path = "../../src/backend/hub_link/channel.rs"]
mod channel;
use channel::{HubUrl, channel as hub_channel};

const CONNECT: Duration = Duration::from_secs(5);

/// Every caller the auth interceptor let through, in order.
type Seen = Arc<Mutex<Vec<Caller>>>;

/// A server with the health service behind `auth`'s interceptor; the callers it let in are
/// recorded (read back with `auth::caller`, as the hub's service will).
fn hub(auth: Auth, tls: Option<ServerTlsConfig>) -> (Router, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let mut check = auth::interceptor(Arc::new(auth));
    let intercept = move |request: Request<()>| {
        let request = check(request)?;
        record.lock().unwrap().push(auth::caller(&request)?);
        Ok(request)
    };
    let (_reporter, health) = tonic_health::server::health_reporter();
    let mut builder = Server::builder();
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).unwrap();
    }
    (builder.add_service(InterceptedService::new(health, intercept)), seen)
}

async fn serve_tcp(router: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)));
    addr
}

/// One health check over `channel`, with `token` as bearer when given.
async fn check(channel: Channel, token: Option<&str>) -> Result<ServingStatus, Status> {
    let header = token.map(|t| format!("Bearer {t}").parse::<tonic::metadata::MetadataValue<_>>().unwrap());
    let mut client = HealthClient::with_interceptor(channel, move |mut request: Request<()>| {
        if let Some(value) = &header {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    });
    let reply = client.check(HealthCheckRequest { service: String::new() }).await?;
    Ok(reply.into_inner().status())
}

fn write_private(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn token_file(dir: &Path, lines: &[(&str, &str, &str)]) -> PathBuf {
    let path = dir.join("hub-tokens");
    write_private(&path, &token_text(lines), 0o600);
    path
}

fn token_text(lines: &[(&str, &str, &str)]) -> String {
    let mut text = String::from("# TOKEN_SHA256_HEX USER ROLE\n");
    for (token, user, role) in lines {
        text.push_str(&format!("{} {user} {role}\n", sha256_hex(token)));
    }
    text
}

fn alice() -> Caller {
    Caller { user: "alice".into(), role: Role::Operator }
}

fn bob() -> Caller {
    Caller { user: "bob".into(), role: Role::Viewer }
}

#[tokio::test]
async fn loopback_tcp_with_tokens_knows_each_caller_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), &[("alice-token", "alice", "operator"), ("bob-token", "bob", "viewer")]);
    let (router, seen) = hub(Auth::tokens(&tokens).unwrap(), None);
    let addr = serve_tcp(router).await;
    let url: HubUrl = format!("http://{addr}").parse().unwrap();
    let channel = hub_channel(&url, None, CONNECT).unwrap();

    assert_eq!(check(channel.clone(), Some("alice-token")).await.unwrap(), ServingStatus::Serving);
    assert_eq!(check(channel.clone(), Some("bob-token")).await.unwrap(), ServingStatus::Serving);
    assert_eq!(*seen.lock().unwrap(), vec![alice(), bob()]);
    assert!(seen.lock().unwrap()[0].role.may_act());
    assert!(!seen.lock().unwrap()[1].role.may_act());

    let wrong = check(channel.clone(), Some("guessed-token")).await.unwrap_err();
    assert_eq!((wrong.code(), wrong.message()), (Code::Unauthenticated, "unknown token"));
    assert!(!format!("{wrong:?}").contains("guessed-token"));
    let missing = check(channel.clone(), None).await.unwrap_err();
    assert_eq!((missing.code(), missing.message()), (Code::Unauthenticated, "missing bearer token"));
    assert_eq!(seen.lock().unwrap().len(), 2, "refused callers never reach the service");
}

#[tokio::test]
async fn a_channel_to_nobody_fails_its_call_and_reconnects_when_the_hub_comes() {
    // Pick a free port, then leave it closed.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), &[("alice-token", "alice", "operator")]);
    let channel = hub_channel(&format!("http://{addr}").parse().unwrap(), None, CONNECT).unwrap();
    let down = check(channel.clone(), Some("alice-token")).await.unwrap_err();
    assert_eq!(down.code(), Code::Unavailable);
    let text = channel::status_text(&down);
    assert!(text.starts_with("tcp connect error: ") && text.contains("Connection refused"), "{text}");

    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let (router, _) = hub(Auth::tokens(&tokens).unwrap(), None);
    tokio::spawn(router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)));
    // The same channel, without being rebuilt.
    let mut answer = check(channel.clone(), Some("alice-token")).await;
    for _ in 0..50 {
        if answer.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        answer = check(channel.clone(), Some("alice-token")).await;
    }
    assert_eq!(answer.unwrap(), ServingStatus::Serving);
}

#[tokio::test]
async fn tls_with_a_self_signed_certificate_is_trusted_only_through_its_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let files = TlsFiles { cert: dir.path().join("hub.crt"), key: dir.path().join("hub.key") };
    write_private(&files.cert, &generated.cert.pem(), 0o644);
    write_private(&files.key, &generated.signing_key.serialize_pem(), 0o600);
    let tokens = token_file(dir.path(), &[("alice-token", "alice", "operator")]);

    let listen: ListenAddr = "0.0.0.0:50051".parse().unwrap();
    assert_eq!(check_tls(&listen, Some(&files)), Ok(()));
    let (router, seen) = hub(Auth::tokens(&tokens).unwrap(), Some(server_tls(&files).unwrap()));
    let addr = serve_tcp(router).await;

    for host in [format!("localhost:{}", addr.port()), addr.to_string()] {
        let url: HubUrl = format!("https://{host}").parse().unwrap();
        let channel = hub_channel(&url, Some(&files.cert), CONNECT).unwrap();
        assert_eq!(check(channel, Some("alice-token")).await.unwrap(), ServingStatus::Serving, "{url}");
    }
    assert_eq!(*seen.lock().unwrap(), vec![alice(), alice()]);

    // Without the CA file the system's roots are used, and they do not know this certificate.
    let url: HubUrl = format!("https://localhost:{}", addr.port()).parse().unwrap();
    match hub_channel(&url, None, CONNECT) {
        Ok(channel) => {
            let refused = check(channel, Some("alice-token")).await.unwrap_err();
            assert_eq!(refused.code(), Code::Unavailable);
            let text = channel::status_text(&refused);
            assert_eq!(text, "invalid peer certificate: UnknownIssuer");
        }
        // A machine without a system store says so when the channel is built.
        Err(text) => assert!(text.contains("system CA certificates"), "{text}"),
    }
    // Plain HTTP to the TLS port gets nowhere either.
    let plain = hub_channel(&format!("http://{addr}").parse().unwrap(), None, CONNECT).unwrap();
    assert!(check(plain, Some("alice-token")).await.is_err());
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_unix_socket_in_a_private_directory_serves_token_callers() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), &[("bob-token", "bob", "viewer")]);
    let path = dir.path().join("hub.sock");
    let listen: ListenAddr = format!("unix:{}", path.display()).parse().unwrap();
    assert!(listen.is_loopback());
    assert_eq!(check_tls(&listen, None), Ok(()));

    let incoming = bind_unix(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o660);
    let (router, seen) = hub(Auth::tokens(&tokens).unwrap(), None);
    tokio::spawn(router.serve_with_incoming(incoming));

    let channel = hub_channel(&format!("unix:{}", path.display()).parse().unwrap(), None, CONNECT).unwrap();
    assert_eq!(check(channel.clone(), Some("bob-token")).await.unwrap(), ServingStatus::Serving);
    assert_eq!(*seen.lock().unwrap(), vec![bob()]);
    // A token, when sent, rules: a wrong one is refused even from a local peer.
    assert_eq!(check(channel.clone(), Some("wrong-token")).await.unwrap_err().code(), Code::Unauthenticated);
    // Without one the peer is known by its uid, with the role the token file gives its
    // name; root (and the hub's own user) are operators.
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let me = flightdeck::system::user::user_name(uid).unwrap_or_else(|| format!("uid:{uid}"));
    assert_eq!(check(channel, None).await.unwrap(), ServingStatus::Serving);
    assert_eq!(seen.lock().unwrap().last(), Some(&Caller { user: me, role: Role::Operator }));

    // A socket nobody listens on is named in the failure.
    let absent = dir.path().join("absent.sock");
    let nowhere = hub_channel(&format!("unix:{}", absent.display()).parse().unwrap(), None, CONNECT).unwrap();
    let down = check(nowhere, Some("bob-token")).await.unwrap_err();
    assert_eq!(down.code(), Code::Unavailable);
    let text = channel::status_text(&down);
    assert!(text.contains(&format!("cannot connect to {}: ", absent.display())), "{text}");
}

#[tokio::test]
async fn unix_peers_are_known_by_their_uid_and_tcp_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sock");
    let (router, seen) = hub(Auth::unix_peers(), None);
    tokio::spawn(router.serve_with_incoming(bind_unix(&path).unwrap()));
    let channel = hub_channel(&format!("unix:{}", path.display()).parse().unwrap(), None, CONNECT).unwrap();
    assert_eq!(check(channel, None).await.unwrap(), ServingStatus::Serving);

    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let me = flightdeck::system::user::user_name(uid).unwrap_or_else(|| format!("uid:{uid}"));
    assert_eq!(*seen.lock().unwrap(), vec![Caller { user: me, role: Role::Operator }]);

    let (router, seen) = hub(Auth::unix_peers(), None);
    let addr = serve_tcp(router).await;
    let tcp = hub_channel(&format!("http://{addr}").parse().unwrap(), None, CONNECT).unwrap();
    let refused = check(tcp, Some("any-token")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(refused.message().contains("Unix socket"), "{}", refused.message());
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_rewritten_token_file_is_picked_up_and_a_broken_one_keeps_the_old_table() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), &[("alice-token", "alice", "operator")]);
    let (router, seen) = hub(Auth::tokens(&tokens).unwrap(), None);
    let addr = serve_tcp(router).await;
    let channel = hub_channel(&format!("http://{addr}").parse().unwrap(), None, CONNECT).unwrap();
    assert!(check(channel.clone(), Some("alice-token")).await.is_ok());
    assert_eq!(check(channel.clone(), Some("bob-token")).await.unwrap_err().code(), Code::Unauthenticated);

    // Rewritten in place: alice revoked, bob added.
    write_private(&tokens, &token_text(&[("bob-token", "bob", "viewer")]), 0o600);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(check(channel.clone(), Some("bob-token")).await.is_ok());
    assert_eq!(check(channel.clone(), Some("alice-token")).await.unwrap_err().code(), Code::Unauthenticated);

    // A broken edit: the table that worked stays.
    let broken = format!("{}\n{} carol admin\n", token_text(&[("carol-token", "carol", "viewer")]), sha256_hex("x"));
    write_private(&tokens, &broken, 0o600);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(check(channel.clone(), Some("bob-token")).await.is_ok());
    assert_eq!(check(channel.clone(), Some("carol-token")).await.unwrap_err().code(), Code::Unauthenticated);

    // Replaced by rename, as editors and configuration tools do: read again.
    let next = dir.path().join("hub-tokens.new");
    write_private(&next, &token_text(&[("carol-token", "carol", "operator")]), 0o600);
    std::fs::rename(&next, &tokens).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(check(channel.clone(), Some("carol-token")).await.is_ok());
    assert_eq!(check(channel.clone(), Some("bob-token")).await.unwrap_err().code(), Code::Unauthenticated);

    let users: Vec<String> = seen.lock().unwrap().iter().map(|c| format!("{} {}", c.user, c.role)).collect();
    assert_eq!(users, ["alice operator", "bob viewer", "bob viewer", "carol operator"]);
}

#[test]
fn tls_is_required_where_other_machines_can_connect() {
    let err = check_tls(&"0.0.0.0:50051".parse().unwrap(), None).unwrap_err();
    assert!(err.contains("--tls-cert") && err.contains("--tls-key"), "{err}");
    assert!(check_tls(&"[::]:50051".parse().unwrap(), None).is_err());
    assert_eq!(check_tls(&"127.0.0.1:50051".parse().unwrap(), None), Ok(()));
    assert_eq!(check_tls(&"[::1]:50051".parse().unwrap(), None), Ok(()));
    assert_eq!(check_tls(&"unix:/run/flightdeck/hub.sock".parse().unwrap(), None), Ok(()));
}

#[tokio::test]
async fn unix_sockets_are_bound_only_where_nobody_else_can_swap_them() {
    let dir = tempfile::tempdir().unwrap();

    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = bind_unix(&open.join("hub.sock")).unwrap_err();
    assert!(err.contains("can be written by group or others (mode 777) and is not sticky"), "{err}");
    assert!(err.contains(&open.display().to_string()), "{err}");
    assert!(!open.join("hub.sock").exists());

    // Sticky, like /tmp: others can create names there but not replace ours.
    let sticky = dir.path().join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let _sticky_socket = bind_unix(&sticky.join("hub.sock")).unwrap();

    let regular = dir.path().join("hub.sock");
    std::fs::write(&regular, "precious").unwrap();
    let err = bind_unix(&regular).unwrap_err();
    assert_eq!(err, format!("{} exists and is not a socket; refusing to replace it", regular.display()));
    assert_eq!(std::fs::read_to_string(&regular).unwrap(), "precious");

    let err = bind_unix(&dir.path().join("absent").join("hub.sock")).unwrap_err();
    assert!(err.contains("cannot use its directory"), "{err}");

    let path = dir.path().join("good.sock");
    let _socket = bind_unix(&path).unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
    assert_eq!(meta.mode() & 0o777, 0o660);
}

/// What the kernel tells a watcher of `dir` while `during` runs: (event mask, name).
fn dir_events(dir: &Path, during: impl FnOnce()) -> Vec<(u32, String)> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain syscalls on a descriptor this function owns and closes; the buffer
    // outlives the read into it, and its length is passed along.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    assert!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
    let mask = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_ATTRIB;
    assert!(unsafe { libc::inotify_add_watch(fd, name.as_ptr(), mask) } >= 0);
    during();
    let mut buf = vec![0u8; 64 * 1024];
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    unsafe { libc::close(fd) };
    let n = usize::try_from(n).unwrap_or(0);
    let header = std::mem::size_of::<libc::inotify_event>();
    let mut events = Vec::new();
    let mut at = 0;
    while at + header <= n {
        // SAFETY: the kernel wrote whole events; read_unaligned copes with the byte buffer.
        let event: libc::inotify_event = unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
        let name = &buf[at + header..at + header + event.len as usize];
        let name = String::from_utf8_lossy(name).trim_end_matches('\0').to_string();
        events.push((event.mask, name));
        at += header + event.len as usize;
    }
    events
}

#[tokio::test]
async fn a_unix_socket_gets_its_name_only_once_it_has_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sock");
    let mut listener = None;
    let events = dir_events(dir.path(), || listener = Some(bind_unix(&path).unwrap()));
    let named: Vec<u32> = events.iter().filter(|(_, name)| name == "hub.sock").map(|(mask, _)| *mask).collect();
    // Made elsewhere and moved in whole: never created under its name with the umask's
    // mode, never changed after it got it.
    assert_eq!(named, vec![libc::IN_MOVED_TO], "{events:?}");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o660);
    drop(listener);
}
