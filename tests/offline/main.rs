//! The tests that need nothing but the crate: parsers over fixtures, the cockpit without
//! a terminal, the fleet and the hub over in-memory clusters, the binary run in a home of
//! its own. One binary (`cargo test --test offline`), one module per area.

#[path = "../support/memory.rs"]
mod memory;

mod advice;
mod architecture;
mod config_spec;
mod deploy;
mod dialect_cloud;
mod dialect_kube;
mod dialect_slurm;
mod dialect_workloads;
mod extremes;
mod fleet;
mod fleet_telemetry;
mod hub;
mod hub_net;
mod hub_wire;
mod init;
mod local_backend;
mod migrate;
mod registry;
mod slurm_parse;
mod terminal_text;
mod tui_app;
mod tui_keymap_theme;
mod tui_snapshots;
mod usage;
mod vocabulary;
