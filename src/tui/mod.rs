//! The cockpit: an interactive terminal UI over the fleet.
//!
//! `app` is the pure state machine (`App::update(msg) -> commands`), `views` draw it,
//! `event_loop` feeds it keys, fleet states, outcomes and clock ticks and carries out its
//! commands, `terminal` owns the terminal (raw mode, alternate screen, restore on drop and
//! on panic, suspend on Ctrl-Z).

pub mod action;
pub mod app;
pub mod event_loop;
pub mod keymap;
pub mod terminal;
pub mod theme;
pub mod views;
pub mod widgets;

use std::sync::Arc;

use crate::fleet::Fleet;

pub use self::app::{App, Command, Msg, Screen};
use self::keymap::Keymap;
use self::theme::Theme;

/// What the cockpit starts with.
pub struct TuiOptions {
    /// The effective keymap (builtin or the user's file over it).
    pub keymap: Keymap,
    /// The theme, already resolved for the terminal's colour depth.
    pub theme: Theme,
    /// Shown in the header; the fleet refuses changes either way.
    pub read_only: bool,
    /// The current user (the `mine` filter).
    pub user: String,
    /// Where the configuration came from, for the header (`~/.config/flightdeck/config.toml`).
    pub config_label: String,
    /// What the overview says when the fleet has no cluster at all: what was looked for on
    /// this machine and how to add a cluster, one line each. The CLI writes it (`tui` knows no
    /// backend); empty says only that none is configured.
    pub no_clusters: Vec<String>,
}

/// Run the cockpit over `fleet` until the user quits or the terminal goes away.
///
/// Needs a tokio runtime and a terminal on standard output. The terminal is restored however
/// this returns, and on panic.
/// How long quitting waits for actions under way.
pub const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

pub async fn run(fleet: Fleet, opts: TuiOptions, notify: crate::notify::NotifySettings) -> color_eyre::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(color_eyre::eyre::eyre!(
            "the cockpit needs a terminal; for scripts use the subcommands (`flightdeck jobs --output json`)"
        ));
    }
    let mut app = App::new(opts);
    app.set_notify(notify);
    let signals = event_loop::signals()?;
    let mut term = terminal::TerminalGuard::enter()?;
    let events = ratatui::crossterm::event::EventStream::new();
    let fleet = Arc::new(fleet);
    let result = event_loop::run(fleet.clone(), app, &mut term, events, signals, event_loop::TICK).await;
    let restored = term.restore();
    // Quit (or SIGTERM) with actions under way: they finish, bounded, before the fleet goes.
    let under_way = fleet.in_flight();
    if !under_way.is_empty() {
        eprintln!("flightdeck: waiting for {} action{}…", under_way.len(), if under_way.len() == 1 { "" } else { "s" });
        let unknown = fleet.settle(SETTLE_LIMIT).await;
        if !unknown.is_empty() {
            // The actions name rows the fleet listed: a hub's cluster names among them.
            eprintln!(
                "flightdeck: gave up after {} s; outcome unknown (see `flightdeck audit`): {}",
                SETTLE_LIMIT.as_secs(),
                crate::safe_text::printable(&unknown.join(", "))
            );
        }
    }
    match result {
        // Nobody is left to read a message (or to see the terminal restored).
        Err(e) if e.downcast_ref::<event_loop::TerminalLost>().is_some() => {
            tracing::warn!("{e}; the cockpit ends");
            Ok(())
        }
        Err(e) => Err(e),
        Ok(()) => Ok(restored?),
    }
}
