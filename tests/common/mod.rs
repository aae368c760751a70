//! Shared helpers for the tests that run against the real Slurm test bed
//! (`tests/testbed/up.sh`). A missing test bed is a failure, never a skip.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightdeck::backend::Backend;
use flightdeck::backend::Registry;
use flightdeck::backend::slurm::{SlurmBackend, SlurmConfig};
use flightdeck::config::{ClusterConfig, Config};
use flightdeck::model::Snapshot;

pub const TESTBED_CONFIG: &str = "/var/lib/flightdeck-testbed/flightdeck.toml";

pub fn testbed_config_path() -> PathBuf {
    std::env::var_os("FD_TESTBED_CONFIG").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(TESTBED_CONFIG))
}

pub fn testbed_config() -> Config {
    let path = testbed_config_path();
    assert!(
        path.exists(),
        "the Slurm test bed is not up: {} is missing. Run `sudo tests/testbed/up.sh` (or ./tests/run.sh) first.",
        path.display()
    );
    Config::load(Some(&path), &Registry::builtin()).unwrap_or_else(|e| panic!("test bed config unreadable: {e}"))
}

pub fn cluster_config(name: &str) -> ClusterConfig {
    testbed_config()
        .clusters
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("cluster {name} missing from the test bed config"))
}

/// A test bed cluster with its Slurm section typed, as `SlurmBackend::new` takes it.
pub fn slurm_config(name: &str) -> ClusterConfig<SlurmConfig> {
    cluster_config(name).typed().unwrap_or_else(|| panic!("cluster {name} of the test bed is not a Slurm cluster"))
}

pub fn backend(name: &str) -> Arc<SlurmBackend> {
    Arc::new(SlurmBackend::new(&slurm_config(name)))
}

/// Tests that change a cluster (submit, drain, kill its SSH link) take its lock, so they
/// do not see each other's jobs or drained nodes. The two clusters run in parallel. A file
/// lock, so it also holds between test binaries and concurrent test runs.
pub fn cluster_lock(name: &str) -> std::fs::File {
    let file = lock_file(&format!("flightdeck-testbed-{name}.lock"));
    file.lock().expect("lock the test bed cluster");
    file
}

/// A scenario that counts the controller's RPCs (`sdiag` is cluster-wide) holds the
/// cluster's lock and then its quiet lock whole, so the count is its own: scenarios that
/// change the cluster wait on the first, and every scenario that reaches the cluster
/// without its lock holds the quiet lock shared ([`cluster_read`]). Always after
/// [`cluster_lock`], never before, so no two scenarios wait on each other.
pub fn cluster_quiet(name: &str) -> std::fs::File {
    let file = lock_file(&format!("flightdeck-testbed-{name}-quiet.lock"));
    file.lock().expect("lock the test bed cluster quiet");
    file
}

/// Held by a scenario that only reads a cluster (or calls it without changing what other
/// scenarios see): it runs beside every other such scenario and beside those that change
/// the cluster, but never while an RPC count is under way ([`cluster_quiet`]).
pub fn cluster_read(name: &str) -> std::fs::File {
    let file = lock_file(&format!("flightdeck-testbed-{name}-quiet.lock"));
    file.lock_shared().expect("share the test bed cluster's quiet lock");
    file
}

/// [`cluster_read`] on both test bed clusters, for scenarios that reach both.
pub fn clusters_read() -> [std::fs::File; 2] {
    [cluster_read("fd22"), cluster_read("fd24")]
}

/// Cancels every job of this name on the cluster when dropped, however the test ends (a
/// failing scenario leaves no job behind for the next one to trip over).
pub struct CancelByName {
    pub cluster: &'static str,
    pub name: String,
}

impl Drop for CancelByName {
    fn drop(&mut self) {
        let (cluster, name) = (self.cluster, self.name.clone());
        // Its own thread and runtime: drop may run inside the test's runtime.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let argv = vec!["scancel".to_string(), format!("--name={name}")];
                let _ = backend(cluster).transport().output(&argv, None, Duration::from_secs(30)).await;
            });
        })
        .join();
    }
}

fn lock_file(name: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(name);
    std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).expect("lock file")
}

/// Poll `snapshot` until `done` holds; panic with `what` and the last snapshot's summary.
pub async fn wait_snapshot(
    backend: &SlurmBackend,
    timeout: Duration,
    what: &str,
    done: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let started = Instant::now();
    let mut last_err;
    loop {
        match backend.snapshot().await {
            Ok(s) if done(&s) => return s,
            Ok(s) => {
                last_err = format!(
                    "last snapshot: jobs {:?}",
                    s.jobs.iter().map(|j| (j.job_ref.id.clone(), j.state, j.reason.clone())).collect::<Vec<_>>()
                )
            }
            Err(e) => last_err = format!("last error: {e}"),
        }
        if started.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}; {last_err}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Run a command on the cluster's login node through the backend's own transport.
pub async fn remote(backend: &SlurmBackend, argv: &[&str]) -> String {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let out = backend.transport().output(&argv, None, Duration::from_secs(30)).await.expect("remote command");
    assert!(out.success(), "{argv:?} failed: {}", out.stderr);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The root of the cluster's filesystem as seen from the host (the 24.11 cluster lives in
/// a chroot).
pub fn cluster_root(name: &str) -> PathBuf {
    match name {
        "fd24" => PathBuf::from(
            std::env::var("FD_TESTBED_CHROOT").unwrap_or_else(|_| "/var/lib/flightdeck-testbed/trixie".into()),
        ),
        _ => PathBuf::from("/"),
    }
}

/// `on_both_clusters!(scenario, …)`: each `async fn scenario(cluster: &str)` as a test on
/// both test bed clusters, `fd22::scenario` (Slurm 22.05) and `fd24::scenario` (24.11).
/// Test binaries that run no such scenario leave it unused.
#[allow(unused_macros)]
macro_rules! on_both_clusters {
    ($($name:ident),* $(,)?) => {
        mod fd22 { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $name() { super::$name("fd22").await } )* }
        mod fd24 { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $name() { super::$name("fd24").await } )* }
    };
}

/// A hub's token file in `dir`: one `(token, "user role")` line per caller, hashed as
/// `serve` expects and private to its owner (`serve` refuses a file others can read).
pub fn tokens_file(dir: &std::path::Path, callers: &[(&str, &str)]) -> PathBuf {
    use std::fmt::Write;
    let path = dir.join("tokens");
    let mut text = String::new();
    for (token, who) in callers {
        let _ = writeln!(text, "{} {who}", flightdeck::serve::auth::sha256_hex(token));
    }
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

/// `flightdeck serve` over `fleet` in this process, on a free loopback port, answering
/// once `start` returns. Dropping it (or `stop`) ends the server.
pub struct LoopbackHub {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl LoopbackHub {
    pub async fn start(fleet: Arc<flightdeck::fleet::Fleet>, tokens: PathBuf) -> LoopbackHub {
        use flightdeck::serve::{ServeOptions, listen::ListenAddr};
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let opts = ServeOptions {
            listen: ListenAddr::Tcp(addr),
            tls: None,
            health_listen: None,
            metrics_listen: None,
            subscribers: Default::default(),
            tokens: Some(tokens),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            let _ = flightdeck::serve::serve(fleet, opts, async move {
                let _ = stopped.await;
            })
            .await;
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(Instant::now() < deadline, "the loopback hub does not answer on {addr}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        LoopbackHub { addr, stop: Some(stop), served: Some(served) }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Ends the server and waits until it has let go of its port.
    pub async fn stop(mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        if let Some(served) = self.served.take() {
            let _ = served.await;
        }
    }
}

impl Drop for LoopbackHub {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
    }
}
