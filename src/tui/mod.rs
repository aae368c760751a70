//! The cockpit: an interactive terminal UI over the fleet.

pub mod action;
pub mod keymap;
pub mod theme;
