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
}

/// Run the cockpit over `fleet` until the user quits or the terminal goes away.
///
/// Needs a tokio runtime. The terminal is restored however this returns (and on panic).
pub async fn run(fleet: Fleet, opts: TuiOptions) -> color_eyre::Result<()> {
    let app = App::new(opts);
    let mut term = terminal::TerminalGuard::enter()?;
    let result = event_loop::run(std::sync::Arc::new(fleet), app, &mut term).await;
    term.restore()?;
    result
}
