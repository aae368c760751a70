//! The hub's protobuf vocabulary (`proto/flightdeck.proto`, compiled by `build.rs`) and the
//! conversions between it and `model`, used by the server and the client alike.

/// The generated messages and services of package `flightdeck.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("flightdeck.v1");

    /// The encoded descriptor set, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flightdeck_descriptor.bin"));
}
