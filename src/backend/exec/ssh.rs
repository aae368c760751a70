//! The SSH half of the exec transport: one multiplexed ControlMaster per destination, reused
//! by every command and replaced when it dies, and the host-key policy it connects under.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use openssh::{KnownHosts as SshKnownHosts, Session, SessionBuilder};
use tokio::sync::{Mutex, Semaphore};

use super::{MAX_CONCURRENT_SSH_COMMANDS, error_chain};
use crate::backend::BackendError;

/// How the ssh transport treats host keys it does not know yet.
///
/// The default is strict: an unknown or changed host key stops the connection. Nothing
/// accepts keys silently unless the user wrote so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KnownHosts {
    /// Only hosts already in known_hosts (`StrictHostKeyChecking=yes`).
    #[default]
    Strict,
    /// Record keys of new hosts, refuse changed ones (`StrictHostKeyChecking=accept-new`).
    AcceptNew,
    /// No checking at all (`StrictHostKeyChecking=no`); for throw-away test beds only.
    Off,
}

impl KnownHosts {
    /// Every value the config file accepts, as written there.
    pub const ACCEPTED: &'static [&'static str] = &["strict", "accept-new", "off"];

    pub fn as_str(self) -> &'static str {
        match self {
            KnownHosts::Strict => "strict",
            KnownHosts::AcceptNew => "accept-new",
            KnownHosts::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "strict" => Some(KnownHosts::Strict),
            "accept-new" => Some(KnownHosts::AcceptNew),
            "off" => Some(KnownHosts::Off),
            _ => None,
        }
    }

    /// The value of ssh's `StrictHostKeyChecking` option.
    pub fn ssh_option_value(self) -> &'static str {
        match self {
            KnownHosts::Strict => "yes",
            KnownHosts::AcceptNew => "accept-new",
            KnownHosts::Off => "no",
        }
    }
}

/// An ssh destination or user name as a config's `host` and `user` keys and `init --probe`
/// accept it. Each goes to ssh as an argument of its own: refuse empty ones, whitespace and
/// control characters, and a leading `-` (ssh would read it as an option).
pub fn check_ssh_destination(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("the value is empty".into());
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{value:?} contains whitespace or a control character"));
    }
    if value.starts_with('-') {
        return Err(format!("{value:?} starts with '-', which ssh would read as an option"));
    }
    Ok(())
}

/// Where and how to reach one host over SSH: what a kind's section says, made plain so the
/// transport needs no kind's config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The ssh destination (an `~/.ssh/config` alias works).
    pub host: String,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// `~` already expanded.
    pub identity_file: Option<PathBuf>,
    pub known_hosts: KnownHosts,
    /// `~` already expanded.
    pub known_hosts_file: Option<PathBuf>,
    /// How long making the master may take (the command's own timeout is separate).
    pub connect_timeout: Duration,
}

/// One cluster's login node: one ControlMaster, reused by every command, replaced when it dies.
pub struct SshTransport {
    host: String,
    user: Option<String>,
    port: Option<u16>,
    identity_file: Option<PathBuf>,
    known_hosts: KnownHosts,
    known_hosts_file: Option<PathBuf>,
    connect_timeout: Duration,
    session: Mutex<Option<Arc<Session>>>,
    pub(super) generation: AtomicU64,
    pub(super) permits: Arc<Semaphore>,
    pub(super) commands: AtomicU64,
}

impl SshTransport {
    pub(super) fn new(target: SshTarget) -> Self {
        Self {
            host: target.host,
            user: target.user,
            port: target.port,
            identity_file: target.identity_file,
            known_hosts: target.known_hosts,
            known_hosts_file: target.known_hosts_file,
            connect_timeout: target.connect_timeout,
            session: Mutex::new(None),
            generation: Default::default(),
            commands: AtomicU64::new(0),
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_SSH_COMMANDS)),
        }
    }

    pub fn destination(&self) -> String {
        let user = self.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("{user}{}{port}", self.host)
    }

    /// The live master, connecting first when there is none.
    pub(super) async fn session(&self) -> Result<Arc<Session>, BackendError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let started = Instant::now();
        let session = Arc::new(self.connect().await?);
        tracing::info!(target = %self.destination(), ms = started.elapsed().as_millis() as u64, "ssh master up");
        *slot = Some(session.clone());
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(session)
    }

    async fn connect(&self) -> Result<Session, BackendError> {
        let mut b = SessionBuilder::default();
        b.known_hosts_check(match self.known_hosts {
            KnownHosts::Strict => SshKnownHosts::Strict,
            KnownHosts::AcceptNew => SshKnownHosts::Add,
            KnownHosts::Off => SshKnownHosts::Accept,
        })
        .connect_timeout(self.connect_timeout)
        .server_alive_interval(Duration::from_secs(15))
        .control_directory(std::env::temp_dir());
        if let Some(user) = &self.user {
            b.user(user.clone());
        }
        if let Some(port) = self.port {
            b.port(port);
        }
        if let Some(key) = &self.identity_file {
            b.keyfile(key);
        }
        if let Some(file) = &self.known_hosts_file {
            b.user_known_hosts_file(file);
        }
        let connect = b.connect_mux(&self.host);
        match tokio::time::timeout(self.connect_timeout + Duration::from_secs(5), connect).await {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(e)) => Err(self.connect_error(e)),
            Err(_) => Err(BackendError::Connect {
                target: self.destination(),
                message: format!("no answer within {} s", self.connect_timeout.as_secs()),
            }),
        }
    }

    pub(super) fn connect_error(&self, e: openssh::Error) -> BackendError {
        BackendError::Connect { target: self.destination(), message: error_chain(&e) }
    }

    /// After a failed command, find out whether the master is still alive; drop it if not,
    /// so the next command reconnects.
    pub(super) async fn check_after_error(&self, session: &Arc<Session>) {
        if session.check().await.is_err() {
            self.forget_if_current(session).await;
        }
    }

    async fn forget_if_current(&self, session: &Arc<Session>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            tracing::warn!(target = %self.destination(), "ssh master lost; will reconnect");
            *slot = None;
        }
    }

    pub(super) async fn forget_session(&self) {
        self.session.lock().await.take();
    }
}

/// sshd refused to open one more session on the connection (its `MaxSessions`): the
/// connection is fine and nothing ran.
pub(super) fn session_refused(e: &openssh::Error) -> bool {
    error_chain(e).contains("Session open refused")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_hosts_words() {
        for (text, want) in
            [("strict", KnownHosts::Strict), ("accept-new", KnownHosts::AcceptNew), ("off", KnownHosts::Off)]
        {
            assert_eq!(KnownHosts::parse(text), Some(want));
            assert_eq!(want.as_str(), text);
        }
        assert_eq!(KnownHosts::parse("yes"), None);
        assert_eq!(KnownHosts::default().ssh_option_value(), "yes");
        assert_eq!(KnownHosts::AcceptNew.ssh_option_value(), "accept-new");
        assert_eq!(KnownHosts::Off.ssh_option_value(), "no");
    }

    #[test]
    fn the_destination_names_user_and_port_only_when_given() {
        let target = |user: Option<&str>, port| SshTarget {
            host: "login".into(),
            user: user.map(str::to_string),
            port,
            identity_file: None,
            known_hosts: KnownHosts::Strict,
            known_hosts_file: None,
            connect_timeout: Duration::from_secs(5),
        };
        assert_eq!(SshTransport::new(target(None, None)).destination(), "login");
        assert_eq!(SshTransport::new(target(Some("alice"), Some(2222))).destination(), "alice@login:2222");
    }
}
