//! The hub's server: `flightdeck serve` runs one fleet (one poller per cluster) and serves
//! it over gRPC to every cockpit and script, so a cluster's load stays constant in the
//! number of people watching and every action goes through one audited place.
//!
//! The protobuf vocabulary and its conversions are `crate::wire`, shared with the client
//! (`backend::hub`), which never imports this module.

pub mod access;
pub mod auth;
pub mod diagnose_cache;
pub mod forward;
pub mod lease;
pub mod limits;
pub mod listen;
pub mod metrics;
pub mod peers;
pub mod publish;
pub mod relay;
pub mod server;
pub mod service;
pub mod strict_modes;
pub mod usage;

pub use self::server::{Replication, ServeOptions, serve, serve_published};
