//! Tracing to a log file under the XDG state directory. Never to the terminal: the cockpit
//! owns the screen, and the CLI's stdout is for data.

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Log to `<state dir>/flightdeck.log`, filtered by `FLIGHTDECK_LOG` (default `info`).
/// Returns the guard that flushes the log on drop, or `None` when the file cannot be opened
/// (flightdeck then runs without a log rather than not at all).
pub fn init() -> Option<WorkerGuard> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = crate::config::state_dir()?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).ok()?;
    let file =
        std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(dir.join("flightdeck.log")).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = EnvFilter::try_from_env("FLIGHTDECK_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).try_init().ok()?;
    Some(guard)
}
