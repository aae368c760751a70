//! `flightdeck`: start-up only. Errors are reported by color-eyre; logs go to a file under
//! the XDG state directory, never to the terminal.

use std::process::ExitCode;

use clap::Parser;
use flightdeck::cli::{self, Cli};

/// mimalloc, not glibc's malloc: a telemetry reading of a large cluster makes and drops tens
/// of thousands of small strings every cadence, on several threads, and glibc's free lists
/// spend a third of the reading on them (`cargo bench --bench telemetry`: 30 ms → 20 ms).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> color_eyre::Result<ExitCode> {
    // Before anything sizeable is allocated: issue #29's peak was mostly freed memory kept.
    flightdeck::allocator::return_freed_memory_at_once();
    // Backtraces for our own errors cost ~0.7 s in debug builds and mean nothing to users.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: single-threaded here, before the runtime starts.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
    color_eyre::install()?;
    let cli = Cli::parse();
    let _log_guard = flightdeck::logging::init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match runtime.block_on(cli::run(cli)) {
        Ok(code) => Ok(code),
        Err(failure) => {
            eprintln!("{}", failure.line());
            Ok(ExitCode::FAILURE)
        }
    }
}
