//! flightdeck: one keyboard-driven cockpit for every GPU a team can reach.
//!
//! See `ARCHITECTURE.md` for the module map and data flow.

pub mod allocator;
pub mod backend;
pub mod cli;
pub mod columns;
pub mod config;
pub mod fleet;
pub mod logging;
pub mod model;
pub mod notify;
pub mod output;
pub mod safe_text;
pub mod serve;
pub mod spec;
pub mod system;
pub mod tomlfile;
pub mod tui;
pub mod wire;
