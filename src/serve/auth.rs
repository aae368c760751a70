//! Who is calling the hub: a bearer token looked up in the token file, or, on a Unix socket
//! without one, the peer process's own user (its uid from the kernel, its role from the
//! token file's lines for that user name; root and the hub's own user are operators).
//!
//! The token file is held to sshd's StrictModes: only its owner may read it, and neither it
//! nor any directory above it may be writable by anyone but its owner or root (a sticky
//! directory like `/tmp` passes when the file is the hub's user's or root's). The check
//! runs at start and on every re-read.
//!
//! The token file holds no tokens, only their SHA-256 (`TOKEN_SHA256_HEX USER ROLE` a line),
//! so a copy of it lets nobody in; it is re-read when it changes (checked at most once a
//! second, when a request comes), so adding or revoking a user needs no restart, and a
//! broken edit keeps the table that worked. Tokens themselves are never logged and never
//! put in a message.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Status};

use crate::system::user::{check_user, user_name};

/// How often, at most, the token file is looked at for changes.
const RECHECK_EVERY: Duration = Duration::from_secs(1);

/// The largest token file read: a line is about 100 bytes, so this is ten thousand users.
const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;

/// What a caller may do: look (`viewer`) or also act (`operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Viewer,
    Operator,
}

impl Role {
    /// Whether this role may ask for changes (cancel, drain, submit, …).
    pub fn may_act(&self) -> bool {
        matches!(self, Role::Operator)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
        })
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            other => Err(format!("unknown role {:?}: give viewer or operator", crate::safe_text::printable(other))),
        }
    }
}

/// The identity a request was made under: what the audit log records and what decides
/// whether it may act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub role: Role,
}

/// How the hub tells callers apart.
pub struct Auth {
    /// Bearer tokens and the roles of user names; `None`: Unix-socket peers alone.
    tokens: Option<TokenFile>,
    /// The hub's own user: a peer with this uid can do what the hub does anyway.
    hub_uid: u32,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tokens {
            Some(file) => f.debug_struct("Auth").field("tokens", &file.path).finish(),
            None => f.write_str("Auth(unix peers)"),
        }
    }
}

impl Auth {
    /// Callers known by the token file at `path`, read now; a file that cannot be read or
    /// parsed, or that others could read or change, is an error naming it (and the line).
    pub fn tokens(path: &Path) -> Result<Auth, String> {
        let (table, stamp) = read_table(path).map_err(|(message, _)| message)?;
        if table.by_hash.is_empty() {
            tracing::warn!(file = %path.display(), "the token file lists no tokens: every request will be refused");
        }
        let loaded = Loaded { table: Arc::new(table), stamp: Some(stamp), checked: Instant::now() };
        let tokens = TokenFile { path: path.to_path_buf(), loaded: Mutex::new(loaded) };
        Ok(Auth { tokens: Some(tokens), hub_uid: effective_uid() })
    }

    /// No token file: only Unix-socket callers, known by their peer credentials, and of
    /// them only root and the hub's own user (as operators), since nothing gives anyone
    /// else a role. A TCP request is refused: nothing would tell its caller apart.
    pub fn unix_peers() -> Auth {
        Auth { tokens: None, hub_uid: effective_uid() }
    }

    /// Who made `request`, or `UNAUTHENTICATED` with a message that never holds the token.
    pub fn check<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        let Some(file) = &self.tokens else {
            return unix_peer(request, None, self.hub_uid);
        };
        let table = file.current();
        // A Unix-socket caller without a token is known by its uid; a token, where one is
        // sent, always rules.
        if request.metadata().get("authorization").is_none() && request.extensions().get::<UdsConnectInfo>().is_some() {
            return unix_peer(request, Some(&table), self.hub_uid);
        }
        let token = bearer_token(request)?;
        let hash = sha256(token);
        // The table is keyed by the token's hash: a lookup's timing tells nothing about any
        // token, only about hashes nobody can invert.
        table.by_hash.get(&hash).cloned().ok_or_else(|| {
            tracing::info!("refused a request with an unknown token");
            Status::unauthenticated("unknown token")
        })
    }
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// An interceptor that lets a request through only with a known caller, whom it puts in the
/// request's extensions for the service to read with [`caller`].
pub fn interceptor(auth: Arc<Auth>) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |mut request: Request<()>| {
        let who = auth.check(&request)?;
        request.extensions_mut().insert(who);
        Ok(request)
    }
}

/// The caller [`interceptor`] found for `request`. Its absence is a bug (a service served
/// without the interceptor), never the caller's fault, hence `INTERNAL`.
pub fn caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::internal("no caller on the request: the service is not behind the auth interceptor"))
}

/// The SHA-256 of `token`, in lower-case hex: what a token file line starts with.
pub fn sha256_hex(token: &str) -> String {
    hex(&sha256(token))
}

fn sha256(token: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The token of `authorization: Bearer TOKEN`.
fn bearer_token<T>(request: &Request<T>) -> Result<&str, Status> {
    let value =
        request.metadata().get("authorization").ok_or_else(|| Status::unauthenticated("missing bearer token"))?;
    let malformed = || Status::unauthenticated("malformed authorization header: expected `Bearer TOKEN`");
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.trim().split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(char::is_whitespace) {
        return Err(malformed());
    }
    Ok(token)
}

/// The caller at the other end of a Unix socket, by the uid the kernel vouches for
/// (SO_PEERCRED), with the role `table` gives its user name.
fn unix_peer<T>(request: &Request<T>, table: Option<&Table>, hub_uid: u32) -> Result<Caller, Status> {
    let Some(info) = request.extensions().get::<UdsConnectInfo>() else {
        return Err(Status::unauthenticated(
            "this hub has no token file and accepts only local callers on its Unix socket",
        ));
    };
    let Some(cred) = info.peer_cred else {
        return Err(Status::unauthenticated("the peer's credentials could not be read from the Unix socket"));
    };
    let uid = cred.uid();
    peer_caller(uid, user_name(uid), table, hub_uid)
}

/// The caller a Unix-socket peer with `uid` (login `name`) is: root and the hub's own user
/// are operators (they can read the hub's files and act as it anyway); anyone else has the
/// role the token file gives their user name, and without a line there is refused.
pub fn peer_caller(uid: u32, name: Option<String>, table: Option<&Table>, hub_uid: u32) -> Result<Caller, Status> {
    let user = name.unwrap_or_else(|| format!("uid:{uid}"));
    if uid == 0 || uid == hub_uid {
        return Ok(Caller { user, role: Role::Operator });
    }
    let Some(table) = table else {
        return Err(Status::unauthenticated(format!(
            "{user} (uid {uid}) may not use this hub: without a token file only root and the hub's own user may"
        )));
    };
    match table.by_user.get(&user) {
        Some(role) => Ok(Caller { user, role: *role }),
        None => {
            tracing::info!(uid, user = %user, "refused a Unix-socket peer with no line in the token file");
            Err(Status::unauthenticated(format!(
                "{user} (uid {uid}) has no line in the hub's token file; ask the hub's operator for one"
            )))
        }
    }
}

/// The token file and the table last read from it.
struct TokenFile {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

struct Loaded {
    table: Arc<Table>,
    /// What the file looked like when `table` (or the broken text after it) was read;
    /// `None` after it could not be looked at, so a file that comes back is read again.
    stamp: Option<Stamp>,
    checked: Instant,
}

/// The token file's lines: callers by their token's hash, and each user name's role (for
/// Unix-socket peers, known by name).
#[derive(Debug, Default)]
pub struct Table {
    by_hash: HashMap<[u8; 32], Caller>,
    by_user: HashMap<String, Role>,
}

impl Table {
    /// A user named on several lines with different roles gets the lesser one.
    fn from_callers(by_hash: HashMap<[u8; 32], Caller>) -> Table {
        let mut by_user: HashMap<String, Role> = HashMap::new();
        for caller in by_hash.values() {
            let role = by_user.entry(caller.user.clone()).or_insert(caller.role);
            if caller.role == Role::Viewer {
                *role = Role::Viewer;
            }
        }
        Table { by_hash, by_user }
    }

    /// The table of a token file's text (see [`parse_tokens`]).
    pub fn parse(path: &Path, text: &str) -> Result<Table, String> {
        parse_tokens(path, text).map(Table::from_callers)
    }
}

/// Enough of a file's metadata to notice a rewrite, in place or by rename.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            modified: meta.modified().ok(),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl TokenFile {
    /// The table to check against: the last one read, after a look at the file if the last
    /// look is a second old. A file that no longer reads keeps the table and says why once.
    fn current(&self) -> Arc<Table> {
        // A panic elsewhere while holding the lock leaves a table that is still whole.
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if loaded.checked.elapsed() < RECHECK_EVERY {
            return loaded.table.clone();
        }
        loaded.checked = Instant::now();
        let now = std::fs::metadata(&self.path).map(|meta| Stamp::of(&meta));
        match now {
            Ok(stamp) if loaded.stamp.as_ref() == Some(&stamp) => {}
            Ok(_) => match read_table(&self.path) {
                Ok((table, stamp)) => {
                    tracing::info!(file = %self.path.display(), tokens = table.by_hash.len(), "token file re-read");
                    loaded.table = Arc::new(table);
                    loaded.stamp = Some(stamp);
                }
                Err((message, stamp)) => {
                    tracing::warn!("{message}; keeping the {} tokens read before", loaded.table.by_hash.len());
                    // Not read again until it changes once more: one warning per edit.
                    loaded.stamp = stamp;
                }
            },
            Err(e) if loaded.stamp.is_some() => {
                tracing::warn!(
                    "cannot look at token file {}: {e}; keeping the {} tokens read before",
                    self.path.display(),
                    loaded.table.by_hash.len()
                );
                loaded.stamp = None;
            }
            Err(_) => {}
        }
        loaded.table.clone()
    }
}

/// Read and parse the token file, with the stamp of the very file that was read (taken
/// before its bytes, so a write that lands while reading is seen as a change next time).
/// A failure carries the stamp too, where there was one, so the same broken file is not
/// read (and warned about) again every second.
fn read_table(path: &Path) -> Result<(Table, Stamp), (String, Option<Stamp>)> {
    let shown = path.display();
    let mut file = std::fs::File::open(path).map_err(|e| (format!("cannot read token file {shown}: {e}"), None))?;
    let meta = file.metadata().map_err(|e| (format!("cannot read token file {shown}: {e}"), None))?;
    let stamp = Stamp::of(&meta);
    let checked = check_and_read(path, &mut file, &meta).and_then(|text| Table::parse(path, &text));
    match checked {
        Ok(table) => Ok((table, stamp)),
        Err(message) => Err((message, Some(stamp))),
    }
}

/// The text of the opened token file, if it is a regular file that passes strict modes.
fn check_and_read(path: &Path, file: &mut std::fs::File, meta: &std::fs::Metadata) -> Result<String, String> {
    let shown = path.display();
    if !meta.is_file() {
        return Err(format!("token file {shown} is not a regular file"));
    }
    super::strict_modes::check_file(path, file, meta, effective_uid())?;
    if meta.len() > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "token file {shown} is {} bytes; more than {} MiB is not a token file",
            meta.len(),
            MAX_TOKEN_FILE_BYTES >> 20
        ));
    }
    let mut text = String::new();
    file.by_ref()
        .take(MAX_TOKEN_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read token file {shown}: {e}"))?;
    Ok(text)
}

/// The table a token file's text describes; the first error names the file and line.
pub fn parse_tokens(path: &Path, text: &str) -> Result<HashMap<[u8; 32], Caller>, String> {
    let mut table = HashMap::new();
    let mut first_line: HashMap<[u8; 32], usize> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let at = || format!("token file {}, line {number}", path.display());
        let content = line.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let mut fields = content.split_whitespace();
        let (Some(hash), Some(user), Some(role)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!("{}: expected `TOKEN_SHA256_HEX USER ROLE`", at()));
        };
        if fields.next().is_some() {
            return Err(format!("{}: unexpected text after the role; expected `TOKEN_SHA256_HEX USER ROLE`", at()));
        }
        let hash = parse_hash(hash).map_err(|e| format!("{}: {e}", at()))?;
        check_user(user).map_err(|e| format!("{}: {e}", at()))?;
        let role: Role = role.parse().map_err(|e| format!("{}: {e}", at()))?;
        if let Some(before) = first_line.insert(hash, number) {
            return Err(format!("{}: the same token hash as line {before}; give each user a token of their own", at()));
        }
        table.insert(hash, Caller { user: user.to_string(), role });
    }
    Ok(table)
}

/// 64 hex digits (either case) → 32 bytes. The message says what is wrong, and, since a
/// token pasted where its hash belongs must not be echoed, never repeats the field.
fn parse_hash(field: &str) -> Result<[u8; 32], String> {
    if field.len() != 64 {
        return Err(format!(
            "the first field must be a SHA-256 in hex (64 characters), not {} characters; make it with `printf %s \"$TOKEN\" | sha256sum`",
            field.chars().count()
        ));
    }
    let mut out = [0u8; 32];
    for (i, pair) in field.as_bytes().chunks(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => out[i] = (high * 16 + low) as u8,
            _ => {
                return Err(
                    "the first field must be a SHA-256 in hex: it holds a character that is not a hex digit".into()
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn request_with(authorization: Option<&str>) -> Request<()> {
        let mut request = Request::new(());
        if let Some(value) = authorization {
            request.metadata_mut().insert("authorization", value.parse().unwrap());
        }
        request
    }

    fn token_file(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("hub-tokens");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }

    #[test]
    fn sha256_is_the_sha256sum_of_the_token() {
        // printf %s abc | sha256sum
        assert_eq!(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn roles_parse_print_and_decide() {
        assert_eq!("viewer".parse::<Role>(), Ok(Role::Viewer));
        assert_eq!("operator".parse::<Role>(), Ok(Role::Operator));
        assert_eq!(Role::Operator.to_string(), "operator");
        assert!(Role::Operator.may_act());
        assert!(!Role::Viewer.may_act());
        assert!("admin".parse::<Role>().unwrap_err().contains("viewer or operator"));
    }

    #[test]
    fn token_lines_parse_with_comments_and_blank_lines() {
        let text = format!(
            "# hub tokens\n\n{}  alice operator\n   {} bob viewer   # not a comment\n",
            sha256_hex("a"),
            sha256_hex("b").to_uppercase()
        );
        let err = parse_tokens(Path::new("/etc/t"), &text).unwrap_err();
        assert_eq!(
            err,
            "token file /etc/t, line 4: unexpected text after the role; expected `TOKEN_SHA256_HEX USER ROLE`"
        );
        let text = format!(
            "# hub tokens\n\n{}  alice operator\n\t{} bob viewer\n",
            sha256_hex("a"),
            sha256_hex("b").to_uppercase()
        );
        let table = parse_tokens(Path::new("/etc/t"), &text).unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(table[&sha256("a")], Caller { user: "alice".into(), role: Role::Operator });
        assert_eq!(table[&sha256("b")], Caller { user: "bob".into(), role: Role::Viewer });
    }

    #[test]
    fn broken_lines_are_named_by_file_and_line() {
        let path = Path::new("/etc/flightdeck/hub-tokens");
        let good = sha256_hex("a");
        let cases = [
            (format!("{good} alice"), "line 1: expected `TOKEN_SHA256_HEX USER ROLE`"),
            (format!("#\n{good} alice admin"), "line 2: unknown role \"admin\": give viewer or operator"),
            (
                "s3cret-token alice viewer".to_string(),
                "line 1: the first field must be a SHA-256 in hex (64 characters), not 12",
            ),
            (
                format!("{}zz alice viewer", &good[..62]),
                "line 1: the first field must be a SHA-256 in hex: it holds a character",
            ),
            (format!("{good} alice viewer\n\n{good} bob operator"), "line 3: the same token hash as line 1"),
            (format!("{good} al\u{202E}ice viewer"), "line 1: the user \"al\u{FFFD}ice\" holds a space or control"),
        ];
        for (text, expected) in cases {
            let err = parse_tokens(path, &text).unwrap_err();
            assert!(err.starts_with("token file /etc/flightdeck/hub-tokens, "), "{err}");
            assert!(err.contains(expected), "{err:?} should contain {expected:?}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn tokens_are_checked_and_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_file(dir.path(), &format!("{} alice operator\n", sha256_hex("right-token")));
        let auth = Auth::tokens(&path).unwrap();
        assert_eq!(
            auth.check(&request_with(Some("Bearer right-token"))).unwrap(),
            Caller { user: "alice".into(), role: Role::Operator }
        );
        assert_eq!(auth.check(&request_with(Some("bearer right-token"))).unwrap().user, "alice");
        for (header, message) in [
            (None, "missing bearer token"),
            (Some("Bearer wrong-token"), "unknown token"),
            (Some("Basic wrong-token"), "malformed authorization header: expected `Bearer TOKEN`"),
            (Some("Bearer"), "malformed authorization header: expected `Bearer TOKEN`"),
            (Some("Bearer two wrong-token"), "malformed authorization header: expected `Bearer TOKEN`"),
        ] {
            let status = auth.check(&request_with(header)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
            assert_eq!(status.message(), message);
            assert!(!format!("{status:?}").contains("wrong-token"));
        }
        assert!(!format!("{auth:?}").contains("alice"));
    }

    #[test]
    fn token_files_others_can_write_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_file(dir.path(), "");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o662)).unwrap();
        let err = Auth::tokens(&path).unwrap_err();
        assert!(err.contains("can be changed by others (mode 662)"), "{err}");
        let err = Auth::tokens(&dir.path().join("absent")).unwrap_err();
        assert!(err.starts_with(&format!("cannot read token file {}/absent: ", dir.path().display())), "{err}");
    }

    #[test]
    fn a_token_file_others_can_read_is_refused_at_start_and_on_every_re_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_file(dir.path(), &format!("{} alice operator\n", sha256_hex("alice-token")));
        let auth = Auth::tokens(&path).unwrap();
        let recheck_now = || {
            let file = auth.tokens.as_ref().unwrap();
            let mut loaded = file.loaded.lock().unwrap();
            loaded.checked = Instant::now().checked_sub(RECHECK_EVERY * 2).unwrap_or(loaded.checked);
        };
        // Rewritten so the group can read it: not taken, the table that passed stays.
        std::fs::write(&path, format!("{} bob viewer\n", sha256_hex("bob-token"))).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        recheck_now();
        assert_eq!(auth.check(&request_with(Some("Bearer alice-token"))).unwrap().user, "alice");
        assert!(auth.check(&request_with(Some("Bearer bob-token"))).is_err());
        let err = Auth::tokens(&path).unwrap_err();
        assert!(err.contains("can be read by group or others (mode 640)"), "{err}");
        assert!(err.contains(&format!("run chmod 600 {}", path.display())), "{err}");
        // Made private: read again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        recheck_now();
        assert_eq!(auth.check(&request_with(Some("Bearer bob-token"))).unwrap().user, "bob");
        assert!(auth.check(&request_with(Some("Bearer alice-token"))).is_err());
    }

    #[test]
    fn unix_peers_have_the_role_the_token_file_gives_their_name() {
        let text = [
            (sha256_hex("b"), "bob viewer"),
            (sha256_hex("a"), "alice operator"),
            (sha256_hex("c1"), "carol operator"),
            (sha256_hex("c2"), "carol viewer"),
        ]
        .map(|(hash, rest)| format!("{hash} {rest}\n"))
        .concat();
        let table = Table::parse(Path::new("/t"), &text).unwrap();
        let hub = 1000;
        let peer = |uid, name: &str, table| peer_caller(uid, Some(name.to_string()), table, hub);
        let caller = |user: &str, role| Caller { user: user.into(), role };
        // Root and the hub's own user can act as the hub anyway.
        assert_eq!(peer(0, "root", Some(&table)).unwrap(), caller("root", Role::Operator));
        assert_eq!(peer(hub, "flightdeck", Some(&table)).unwrap(), caller("flightdeck", Role::Operator));
        assert_eq!(peer(1001, "bob", Some(&table)).unwrap(), caller("bob", Role::Viewer));
        assert_eq!(peer(1002, "alice", Some(&table)).unwrap(), caller("alice", Role::Operator));
        // Named twice with two roles: the lesser.
        assert_eq!(peer(1003, "carol", Some(&table)).unwrap(), caller("carol", Role::Viewer));
        let refused = peer(1004, "mallory", Some(&table)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert_eq!(
            refused.message(),
            "mallory (uid 1004) has no line in the hub's token file; ask the hub's operator for one"
        );
        let nameless = peer_caller(1005, None, Some(&table), hub).unwrap_err();
        assert!(nameless.message().starts_with("uid:1005 (uid 1005) has no line"), "{}", nameless.message());
        // No token file: nobody but root and the hub's user.
        let refused = peer(1001, "bob", None).unwrap_err();
        assert!(refused.message().contains("without a token file only root and the hub's own user may"));
        assert_eq!(peer(0, "root", None).unwrap().role, Role::Operator);
    }

    #[test]
    fn the_interceptor_puts_the_caller_on_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_file(dir.path(), &format!("{} bob viewer\n", sha256_hex("t")));
        let mut intercept = interceptor(Arc::new(Auth::tokens(&path).unwrap()));
        let passed = intercept(request_with(Some("Bearer t"))).unwrap();
        assert_eq!(caller(&passed).unwrap(), Caller { user: "bob".into(), role: Role::Viewer });
        assert_eq!(intercept(request_with(None)).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(caller(&request_with(None)).unwrap_err().code(), tonic::Code::Internal);
    }

    #[test]
    fn unix_peers_refuse_what_came_without_a_socket() {
        let status = Auth::unix_peers().check(&request_with(Some("Bearer x"))).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(status.message().contains("only local callers on its Unix socket"));
    }
}
