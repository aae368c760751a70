//! The hub: `flightdeck serve` runs one fleet (one poller per cluster) and serves it over
//! gRPC to every cockpit and script, so a cluster's load stays constant in the number of
//! people watching and every action goes through one audited place.
//!
//! `wire` is the protobuf vocabulary and its conversions (shared with the client,
//! `backend::hub`); the server side is the rest.

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
pub mod serve;
pub mod service;
pub mod strict_modes;
pub mod wire;

pub use self::serve::{Replication, ServeOptions, serve, serve_published};
