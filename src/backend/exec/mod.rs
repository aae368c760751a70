//! Running commands: as local processes, or on a remote host over one multiplexed SSH master
//! (`ssh`). Shared below the kinds: Slurm runs its CLI through it, `local` runs `nvidia-smi`,
//! and `init` probes login nodes the way the Slurm backend would reach them.
//!
//! Every command is an argument vector. Locally it is executed without a shell; over SSH the
//! remote side always has a shell, so each argument is quoted with `shlex` before the line
//! leaves this module. Nothing else in the crate builds remote command lines.
//!
//! The exec transport every kind that runs commands shares (Slurm's CLI, `local`'s
//! `nvidia-smi`, `init`'s probes): local exec or one SSH ControlMaster per destination (`ssh`:
//! `SshTarget`, the `KnownHosts` policy; a kind turns its section into an `SshTarget`, Slurm by
//! `SlurmConfig::ssh_target`) (≤ 8 commands at once either way; a command waits for its slot before
//! its timeout starts, so waiting never times out or costs the connection); the only place a remote
//! command line is made (shlex-quoted); streaming stdout into a blocking parser; a failure whose
//! stderr says slurmctld's per-user RPC rate limit turned it away (`Rate limit exceeded, please
//! retry …`, libslurm's `RPC rate limited N time(s)`) is `BackendError::RateLimited`; captured
//! output bounded (16 MiB stdout, 1 MiB stderr, a clear error past it); streamed output (squeue's
//! and sinfo's JSON) bounded at `MAX_STREAMED_STDOUT` (8 GiB, four times a 100,000-job `squeue
//! --json` at the largest size per job measured), the command stopped and named with the bound past
//! it; a session sshd refuses (at `MaxSessions`, while sessions that just ended are still closing
//! on its side) is asked for again up to four times, 0.1–0.8 s apart, since nothing ran.

mod ssh;

use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use openssh::Session;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::io::SyncIoBridge;

pub use self::ssh::{KnownHosts, SshTarget, SshTransport, check_ssh_destination};
use crate::backend::BackendError;

/// sshd refuses more than `MaxSessions` (default 10) sessions on one connection, and the
/// openssh crate reports that as an error rather than opening a second connection.
const MAX_CONCURRENT_SSH_COMMANDS: usize = 8;

/// How often a session sshd refused is asked for again (after 0.1, 0.2, 0.4, 0.8 s): the
/// slots above stay under `MaxSessions`, but sshd frees a session a moment after our side
/// saw it end, so a burst of short commands can briefly find every session taken.
const SESSION_REFUSED_RETRIES: u32 = 4;

/// Local commands at once: a batch of a thousand cancels must not fork a thousand `scancel`s
/// against one controller (Slurm's own advice: keep client RPCs few).
const MAX_CONCURRENT_LOCAL_COMMANDS: usize = 8;

/// What one finished command left behind.
#[derive(Debug, Clone)]
pub struct CmdOutput {
    /// Exit status; `None` when killed by a signal or lost with the connection.
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// Turn a non-zero exit into the error the user reads: the command and its own stderr.
    pub fn into_result(self, argv: &[String]) -> Result<CmdOutput, BackendError> {
        if self.success() { Ok(self) } else { Err(command_error(argv, self.status, &self.stderr, &self.stdout)) }
    }
}

/// What Slurm says when slurmctld's per-user RPC rate limit (23.02+, `SlurmctldParameters=
/// rl_enable`) turns a request away: `slurm_strerror(SLURMCTLD_COMMUNICATIONS_BACKOFF)`, and
/// the line libslurm logs (at `-v`) each time it sleeps and asks again. Root and SlurmUser
/// are exempt, and the client library retries by itself (sleeping 1 s, 2 s, 3 s …), so at
/// the default verbosity a limited squeue mostly shows up as a slow one.
const RATE_LIMIT_TEXTS: [&str; 2] = ["Rate limit exceeded, please retry", "RPC rate limited"];

/// The line of `stderr` that says the controller rate-limited the command, if one does.
pub fn rate_limit_line(stderr: &str) -> Option<&str> {
    stderr.lines().map(str::trim).find(|l| RATE_LIMIT_TEXTS.iter().any(|t| l.contains(t)))
}

pub(crate) fn command_error(argv: &[String], status: Option<i32>, stderr: &str, stdout: &[u8]) -> BackendError {
    if let Some(line) = rate_limit_line(stderr) {
        return BackendError::RateLimited { command: display_argv(argv), detail: line.chars().take(300).collect() };
    }
    // Verbose tools (scancel -v) mix progress with errors: keep only the error lines.
    let errors: Vec<&str> = stderr.lines().filter(|l| l.to_ascii_lowercase().contains("error")).collect();
    let mut text = if errors.is_empty() { stderr.trim().to_string() } else { errors.join("; ") };
    if text.is_empty() {
        text = String::from_utf8_lossy(stdout).trim().chars().take(500).collect();
    }
    if text.is_empty() {
        text = "no output".to_string();
    }
    BackendError::Command { command: display_argv(argv), status, stderr: text }
}

/// A command line for messages: quoted the same way it is sent.
pub fn display_argv(argv: &[String]) -> String {
    shell_line(argv).unwrap_or_else(|_| argv.join(" "))
}

/// Quote an argument vector into one POSIX shell command line.
///
/// This is the only place a remote command line is made. NUL bytes cannot be passed through
/// a shell at all, so they are refused rather than silently dropped.
pub fn shell_line(argv: &[String]) -> Result<String, BackendError> {
    shlex::try_join(argv.iter().map(String::as_str))
        .map_err(|_| BackendError::InvalidSpec("an argument contains a NUL byte".to_string()))
}

type BoxRead = Pin<Box<dyn AsyncRead + Send>>;

/// Where and how commands run for one cluster.
pub enum Transport {
    /// Commands on this machine, at most [`MAX_CONCURRENT_LOCAL_COMMANDS`] at once; the
    /// count of commands run.
    Local(Arc<Semaphore>, Arc<AtomicU64>),
    Ssh(SshTransport),
}

impl Transport {
    /// Commands on `target`, over one ControlMaster made when the first command needs it.
    pub fn ssh(target: SshTarget) -> Self {
        Transport::Ssh(SshTransport::new(target))
    }

    /// Commands on this machine.
    pub fn local() -> Self {
        Transport::Local(Arc::new(Semaphore::new(MAX_CONCURRENT_LOCAL_COMMANDS)), Arc::default())
    }

    /// The slots commands take turns for. A command waits for its slot before its timeout
    /// starts: waiting behind others is not a hang, and must not cost the connection.
    async fn slot(&self) -> tokio::sync::OwnedSemaphorePermit {
        let (permits, commands) = match self {
            Transport::Local(permits, commands) => (permits, commands.as_ref()),
            Transport::Ssh(ssh) => (&ssh.permits, &ssh.commands),
        };
        commands.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The semaphores are never closed, so acquiring cannot fail; a permit-less run would
        // only lose the bound, never the command.
        match permits.clone().acquire_owned().await {
            Ok(permit) => permit,
            Err(_) => Arc::new(Semaphore::new(1)).acquire_owned().await.unwrap_or_else(|_| unreachable!()),
        }
    }

    /// Commands run so far (each one a few controller RPCs at most): the hub's metrics.
    pub fn commands_run(&self) -> u64 {
        match self {
            Transport::Local(_, commands) => commands.load(std::sync::atomic::Ordering::Relaxed),
            Transport::Ssh(ssh) => ssh.commands.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// How the cluster is reached, for `doctor` and messages.
    pub fn describe(&self) -> String {
        match self {
            Transport::Local(..) => "local commands".to_string(),
            Transport::Ssh(ssh) => format!("ssh {}", ssh.destination()),
        }
    }

    /// Changes whenever a new connection is made, so per-connection facts (the Slurm
    /// release) are learnt again after a reconnect.
    pub fn generation(&self) -> u64 {
        match self {
            Transport::Local(..) => 0,
            Transport::Ssh(ssh) => ssh.generation.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Run a command to completion, optionally feeding `stdin`, within `timeout`.
    pub async fn output(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, BackendError> {
        let slot = self.slot().await;
        let run = async {
            let mut child = self.spawn(argv, stdin.is_some(), slot).await?;
            if let (Some(input), Some(mut w)) = (stdin, child.stdin.take()) {
                // A command that exits without reading its input closes the pipe; that is
                // its business, and its exit status says what happened.
                let _ = w.write_all(input).await;
                let _ = w.shutdown().await;
                drop(w);
            }
            let out = child.stdout.take().map(|r| Box::pin(r) as BoxRead);
            // Over a bound, the first error ends the wait and the command is dropped (and so
            // stopped) rather than held whole.
            let (stdout, stderr) = tokio::try_join!(
                async {
                    read_capped(out, MAX_STDOUT).await.map_err(|e| self.capture_error(argv, "standard output", e))
                },
                async {
                    read_capped(child.stderr.take(), MAX_STDERR)
                        .await
                        .map_err(|e| self.capture_error(argv, "standard error", e))
                },
            )?;
            let status = child.wait.wait().await.map_err(|e| self.lost(argv, e))?;
            Ok(CmdOutput { status, stdout, stderr: String::from_utf8_lossy(&stderr).into_owned() })
        };
        self.with_timeout(argv, timeout, run).await
    }

    /// Run a command and hand its standard output, as a blocking reader, to `consume` on a
    /// blocking thread while it arrives. Used for documents too large to hold twice.
    ///
    /// A non-zero exit wins over whatever `consume` made of the output, since a failed
    /// `squeue` prints its reason on stderr and nothing useful on stdout. Past
    /// [`MAX_STREAMED_STDOUT`] bytes the reader fails, the command is stopped, and the error
    /// names the bound and the command.
    pub async fn stream<T, F>(&self, argv: &[String], timeout: Duration, consume: F) -> Result<T, BackendError>
    where
        T: Send + 'static,
        F: FnOnce(Capped<SyncIoBridge<BoxRead>>) -> T + Send + 'static,
    {
        self.stream_capped(argv, timeout, MAX_STREAMED_STDOUT, consume).await.map(|(parsed, _)| parsed)
    }

    /// [`Transport::stream`], with what the command said on standard error when it exited 0
    /// (squeue reports an unknown `--Format` field there, and exits 0 with no output).
    pub async fn stream_with_stderr<T, F>(
        &self,
        argv: &[String],
        timeout: Duration,
        consume: F,
    ) -> Result<(T, String), BackendError>
    where
        T: Send + 'static,
        F: FnOnce(Capped<SyncIoBridge<BoxRead>>) -> T + Send + 'static,
    {
        self.stream_capped(argv, timeout, MAX_STREAMED_STDOUT, consume).await
    }

    async fn stream_capped<T, F>(
        &self,
        argv: &[String],
        timeout: Duration,
        cap: u64,
        consume: F,
    ) -> Result<(T, String), BackendError>
    where
        T: Send + 'static,
        F: FnOnce(Capped<SyncIoBridge<BoxRead>>) -> T + Send + 'static,
    {
        let slot = self.slot().await;
        let run = async {
            let mut child = self.spawn(argv, false, slot).await?;
            let out = child.stdout.take().expect("stdout is piped");
            let passed = Arc::new(AtomicBool::new(false));
            let reader = Capped { inner: SyncIoBridge::new(out), left: cap, passed: passed.clone() };
            // Once `consume` returns (at the bound, with the reader's error), the pipe closes
            // and the command ends on its next write.
            let parsed = tokio::task::spawn_blocking(move || consume(reader));
            let (parsed, stderr) = tokio::join!(parsed, read_all(child.stderr.take()));
            if passed.load(Ordering::Relaxed) {
                return Err(BackendError::Command {
                    command: display_argv(argv),
                    status: None,
                    stderr: format!(
                        "its standard output passed {} MiB, flightdeck's bound on a streamed answer; stopped",
                        cap >> 20
                    ),
                });
            }
            let status = child.wait.wait().await.map_err(|e| self.lost(argv, e))?;
            if status != Some(0) {
                return Err(command_error(argv, status, &stderr, b""));
            }
            parsed
                .map(|parsed| (parsed, stderr))
                .map_err(|e| BackendError::Parse { what: display_argv(argv), message: e.to_string() })
        };
        self.with_timeout(argv, timeout, run).await
    }

    async fn with_timeout<T>(
        &self,
        argv: &[String],
        timeout: Duration,
        fut: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        match tokio::time::timeout(timeout, fut).await {
            Ok(res) => res,
            Err(_) => {
                // A hung command over SSH often means a half-dead link: start afresh next time.
                if let Transport::Ssh(ssh) = self {
                    ssh.forget_session().await;
                }
                Err(BackendError::Timeout { what: display_argv(argv), secs: timeout.as_secs() })
            }
        }
    }

    /// Start `argv` holding `slot` (see [`Transport::slot`]) until it has exited.
    async fn spawn(
        &self,
        argv: &[String],
        with_stdin: bool,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<Spawned<'_>, BackendError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(BackendError::InvalidSpec("empty command".to_string()));
        };
        let stdin = || if with_stdin { Stdio::piped() } else { Stdio::null() };
        match self {
            Transport::Local(..) => {
                let mut child = tokio::process::Command::new(program)
                    .args(args)
                    .stdin(stdin())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| BackendError::Command {
                        command: display_argv(argv),
                        status: None,
                        stderr: format!("cannot start `{program}`: {e}"),
                    })?;
                Ok(Spawned {
                    stdin: child.stdin.take().map(|w| Box::pin(w) as _),
                    stdout: child.stdout.take().map(|r| Box::pin(r) as BoxRead),
                    stderr: child.stderr.take().map(|r| Box::pin(r) as BoxRead),
                    wait: Waiter::Local { child, _slot: slot },
                })
            }
            Transport::Ssh(ssh) => {
                let line = shell_line(argv)?;
                let mut refused = 0;
                let (session, mut child) = loop {
                    let session = ssh.session().await?;
                    let spawned = session
                        .clone()
                        .arc_raw_command(&line)
                        .stdin(if with_stdin { openssh::Stdio::piped() } else { openssh::Stdio::null() })
                        .stdout(openssh::Stdio::piped())
                        .stderr(openssh::Stdio::piped())
                        .spawn()
                        .await;
                    match spawned {
                        Ok(child) => break (session, child),
                        // sshd is at `MaxSessions`: sessions that just ended on our side are
                        // still being closed on its side. Nothing ran; ask again shortly.
                        Err(e) if refused < SESSION_REFUSED_RETRIES && ssh::session_refused(&e) => {
                            refused += 1;
                            tokio::time::sleep(Duration::from_millis(50 << refused)).await;
                        }
                        Err(e) => {
                            ssh.check_after_error(&session).await;
                            return Err(ssh.connect_error(e));
                        }
                    }
                };
                Ok(Spawned {
                    stdin: child.stdin().take().map(|w| Box::pin(w) as _),
                    stdout: child.stdout().take().map(|r| Box::pin(r) as BoxRead),
                    stderr: child.stderr().take().map(|r| Box::pin(r) as BoxRead),
                    wait: Waiter::Ssh { child, session, transport: ssh, _slot: slot },
                })
            }
        }
    }

    fn io_error(&self, argv: &[String], e: std::io::Error) -> BackendError {
        BackendError::Command { command: display_argv(argv), status: None, stderr: format!("reading output: {e}") }
    }

    fn capture_error(&self, argv: &[String], which: &str, e: Capture) -> BackendError {
        match e {
            Capture::Io(e) => self.io_error(argv, e),
            Capture::TooLong(limit) => BackendError::Command {
                command: display_argv(argv),
                status: None,
                stderr: format!("its {which} passed {} MiB, more than flightdeck keeps; stopped", limit >> 20),
            },
        }
    }

    fn lost(&self, argv: &[String], e: String) -> BackendError {
        match self {
            Transport::Local(..) => BackendError::Command { command: display_argv(argv), status: None, stderr: e },
            Transport::Ssh(ssh) => BackendError::Connect { target: ssh.destination(), message: e },
        }
    }
}

/// The most standard output [`Transport::output`] keeps of one command. Large documents
/// go through [`Transport::stream`], which parses as it reads.
pub const MAX_STDOUT: usize = 16 << 20;
/// The most standard output [`Transport::stream`] reads of one command before stopping it
/// with an error naming this bound and the command. The streamed answers (squeue's and
/// sinfo's JSON) are parsed as they arrive, never held, so the bound is against a runaway
/// (a wedged wrapper, something else answering as squeue), not for memory. Measured per
/// record: squeue `--json` 3.6 KB a job on 22.05 and 9.3–9.6 KB on 24.11 (the test bed's
/// captures in `tests/fixtures/slurm/`), up to 21 KB in slurmrestd's pretty-printed
/// 24.05–25.11 samples; sinfo 1.4–4.8 KB a node. A 100,000-job queue is so 0.4–2.1 GB:
/// 8 GiB is four times the largest of those.
pub const MAX_STREAMED_STDOUT: u64 = 8 << 30;
const _: () = assert!(MAX_STREAMED_STDOUT >= 4 * 100_000 * 21_000, "four 100,000-job queues at 21 KB a job");
/// The most standard error it keeps: error messages, not data.
pub const MAX_STDERR: usize = 1 << 20;

/// A streamed command's standard output as the consumer reads it: an error once more than
/// the bound has come (and a flag the transport reads to say so in its own words).
pub struct Capped<R> {
    inner: R,
    left: u64,
    passed: Arc<AtomicBool>,
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the bound: the end of the answer is fine, one byte more is not.
            let mut one = [0u8; 1];
            if self.inner.read(&mut one)? == 0 {
                return Ok(0);
            }
            self.passed.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("standard output past flightdeck's bound on a streamed answer"));
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

/// A reader that counts the bytes that pass through it: what one command's answer moved
/// over the link, for `doctor`.
pub struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Self { inner, count }
    }
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

enum Capture {
    Io(std::io::Error),
    TooLong(usize),
}

/// Everything `r` says, up to `limit` bytes; more than that is an error, not a truncation,
/// so a parser never sees half a document as if it were whole.
async fn read_capped(r: Option<BoxRead>, limit: usize) -> Result<Vec<u8>, Capture> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let mut r = r.take(limit as u64 + 1);
        r.read_to_end(&mut buf).await.map_err(Capture::Io)?;
    }
    if buf.len() > limit { Err(Capture::TooLong(limit)) } else { Ok(buf) }
}

/// A streamed command's standard error: the first [`MAX_STDERR`] bytes kept, the rest
/// read and dropped so the command is never blocked on a full pipe.
async fn read_all(r: Option<BoxRead>) -> String {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let mut r = r;
        let _ = (&mut r).take(MAX_STDERR as u64).read_to_end(&mut buf).await;
        let _ = tokio::io::copy(&mut r, &mut tokio::io::sink()).await;
    }
    String::from_utf8_lossy(&buf).into_owned()
}

struct Spawned<'a> {
    stdin: Option<Pin<Box<dyn tokio::io::AsyncWrite + Send>>>,
    stdout: Option<BoxRead>,
    stderr: Option<BoxRead>,
    wait: Waiter<'a>,
}

enum Waiter<'a> {
    Local {
        child: tokio::process::Child,
        _slot: tokio::sync::OwnedSemaphorePermit,
    },
    Ssh {
        child: openssh::Child<Arc<Session>>,
        session: Arc<Session>,
        transport: &'a SshTransport,
        _slot: tokio::sync::OwnedSemaphorePermit,
    },
}

impl Waiter<'_> {
    /// Exit code, or `None` for death by signal. `Err` means the link was lost.
    async fn wait(self) -> Result<Option<i32>, String> {
        match self {
            Waiter::Local { mut child, _slot } => child.wait().await.map(|s| s.code()).map_err(|e| e.to_string()),
            Waiter::Ssh { child, session, transport, _slot } => match child.wait().await {
                Ok(status) => Ok(status.code()),
                Err(e) => {
                    transport.check_after_error(&session).await;
                    Err(error_chain(&e))
                }
            },
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hostile_arguments_are_single_words() {
        let name = "x'; touch /tmp/pwned; echo '$(id)";
        let line = shell_line(&v(&["scontrol", "update", &format!("reason={name}")])).unwrap();
        let words = shlex::split(&line).unwrap();
        assert_eq!(words, v(&["scontrol", "update", &format!("reason={name}")]));
        // And a real shell agrees: the words it prints are exactly the argv, nothing ran.
        let out = std::process::Command::new("sh").arg("-c").arg(format!("printf '%s\\n' {line}")).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("scontrol\nupdate\nreason={name}\n"));
    }

    #[test]
    fn a_rate_limited_command_is_told_apart_from_other_failures() {
        let argv = v(&["squeue", "--json"]);
        // slurm_strerror(SLURMCTLD_COMMUNICATIONS_BACKOFF), as squeue prints an error.
        let e = command_error(
            &argv,
            Some(1),
            "slurm_load_jobs error: Rate limit exceeded, please retry momentarily\n",
            b"",
        );
        assert!(matches!(e, BackendError::RateLimited { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the controller is rate-limiting this user's RPCs; polling backs off (`squeue --json`: \
             slurm_load_jobs error: Rate limit exceeded, please retry momentarily)"
        );
        // libslurm's own line while it sleeps and retries (logged at -v).
        let e = command_error(&argv, None, "squeue: RPC rate limited 3 time(s). Sleeping then trying again.", b"");
        assert!(matches!(e, BackendError::RateLimited { .. }), "{e:?}");
        // Other failures stay what they were.
        let e = command_error(&argv, Some(1), "slurm_load_jobs error: Unable to contact slurm controller", b"");
        assert!(matches!(e, BackendError::Command { .. }), "{e:?}");
        assert_eq!(rate_limit_line("squeue: error: Invalid user: rate"), None);
    }

    #[tokio::test]
    async fn a_rate_limited_local_command_fails_as_rate_limited() {
        let script = "echo 'slurm_load_partitions: Rate limit exceeded, please retry momentarily' >&2; exit 1";
        let argv = v(&["sh", "-c", script]);
        let t = Transport::local();
        let err = t.output(&argv, None, Duration::from_secs(5)).await.unwrap().into_result(&argv).unwrap_err();
        assert!(matches!(err, BackendError::RateLimited { .. }), "{err:?}");
        let err = t.stream(&argv, Duration::from_secs(5), |_r| ()).await.unwrap_err();
        assert!(matches!(err, BackendError::RateLimited { .. }), "{err:?}");
    }

    #[test]
    fn nul_bytes_are_refused() {
        assert!(shell_line(&v(&["echo", "a\0b"])).is_err());
    }

    #[tokio::test]
    async fn local_output_and_exit_status() {
        let t = Transport::local();
        let out =
            t.output(&v(&["sh", "-c", "echo hi; echo oops >&2; exit 3"]), None, Duration::from_secs(5)).await.unwrap();
        assert_eq!(out.status, Some(3));
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr.trim(), "oops");
        let err = out.into_result(&v(&["x"])).unwrap_err().to_string();
        assert!(err.contains("oops") && err.contains("exit 3"), "{err}");
    }

    #[tokio::test]
    async fn local_commands_take_turns_and_waiting_is_not_their_timeout() {
        let t = Arc::new(Transport::local());
        let dir = tempfile::tempdir().unwrap();
        // Each command notes how many run beside it (a file per running command), then
        // lasts 300 ms; every one is given 1 s, and three waves of eight take about 900 ms,
        // so the last wave waits longer than its own timeout before it starts.
        let script =
            "touch \"$1/run.$$\"; ls \"$1\" | grep -c '^run\\.' >> \"$1/../counts.$$\"; sleep 0.3; rm \"$1/run.$$\"";
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        let tasks: Vec<_> = (0..3 * MAX_CONCURRENT_LOCAL_COMMANDS)
            .map(|_| {
                let t = t.clone();
                let argv = v(&["sh", "-c", script, "sh", runs.to_str().unwrap()]);
                tokio::spawn(async move { t.output(&argv, None, Duration::from_secs(1)).await })
            })
            .collect();
        for task in tasks {
            let out = task.await.unwrap().expect("no command times out while waiting for its turn");
            assert_eq!(out.status, Some(0), "{}", out.stderr);
        }
        let mut most = 0;
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap().to_string_lossy().starts_with("counts.") {
                let n: usize = std::fs::read_to_string(&path).unwrap().trim().parse().unwrap();
                most = most.max(n);
            }
        }
        assert!((1..=MAX_CONCURRENT_LOCAL_COMMANDS).contains(&most), "{most} commands ran at once");
    }

    #[tokio::test]
    async fn captured_output_is_bounded() {
        let t = Transport::local();
        let secs = Duration::from_secs(20);
        // Exactly at the bound is kept whole.
        let at = format!("head -c {MAX_STDOUT} /dev/zero");
        assert_eq!(t.output(&v(&["sh", "-c", &at]), None, secs).await.unwrap().stdout.len(), MAX_STDOUT);
        // One byte over, from a command that would never stop: a clear error, promptly.
        let started = std::time::Instant::now();
        let err = t.output(&v(&["sh", "-c", "exec cat /dev/zero"]), None, secs).await.unwrap_err().to_string();
        assert!(err.contains("standard output passed 16 MiB"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "waited for the command instead of stopping it");
        let err = t.output(&v(&["sh", "-c", "exec cat /dev/zero >&2"]), None, secs).await.unwrap_err().to_string();
        assert!(err.contains("standard error passed 1 MiB"), "{err}");
    }

    #[tokio::test]
    async fn local_stdin_is_fed() {
        let out = Transport::local().output(&v(&["cat"]), Some(b"script body"), Duration::from_secs(5)).await.unwrap();
        assert_eq!(out.stdout, b"script body");
    }

    #[tokio::test]
    async fn local_timeout_is_reported() {
        let err = Transport::local().output(&v(&["sleep", "5"]), None, Duration::from_millis(100)).await.unwrap_err();
        assert!(matches!(err, BackendError::Timeout { .. }), "{err}");
    }

    #[tokio::test]
    async fn stream_hands_stdout_to_a_reader() {
        let n = Transport::local()
            .stream(&v(&["seq", "1", "100000"]), Duration::from_secs(10), |r| {
                std::io::BufRead::lines(std::io::BufReader::new(r)).count()
            })
            .await
            .unwrap();
        assert_eq!(n, 100000);
    }

    #[tokio::test]
    async fn a_streamed_answer_past_its_bound_is_stopped_naming_the_bound_and_the_command() {
        let t = Transport::local();
        let secs = Duration::from_secs(20);
        let drain = |r: Capped<SyncIoBridge<BoxRead>>| std::io::copy(&mut { r }, &mut std::io::sink());
        // Exactly at the bound is read whole.
        let (n, _) = t.stream_capped(&v(&["head", "-c", "1048576", "/dev/zero"]), secs, 1 << 20, drain).await.unwrap();
        assert_eq!(n.unwrap(), 1 << 20);
        // One byte over, from a command that would never stop: a clear error, promptly.
        let started = std::time::Instant::now();
        let err = t.stream_capped(&v(&["sh", "-c", "exec cat /dev/zero"]), secs, 1 << 20, drain).await.unwrap_err();
        let err = err.to_string();
        assert!(err.contains("`sh -c 'exec cat /dev/zero'`"), "{err}");
        assert!(err.contains("standard output passed 1 MiB, flightdeck's bound on a streamed answer"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "waited for the command instead of stopping it");
    }

    #[tokio::test]
    async fn stream_reports_failure_with_stderr() {
        let err = Transport::local()
            .stream(&v(&["sh", "-c", "echo 'squeue: error: bad' >&2; exit 1"]), Duration::from_secs(5), |_r| ())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("squeue: error: bad"), "{err}");
    }

    #[tokio::test]
    async fn missing_program_names_it() {
        let err = Transport::local().output(&v(&["no-such-prog-xyz"]), None, Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().contains("no-such-prog-xyz"), "{err}");
    }
}
