//! The hub's protobuf vocabulary (`proto/flightdeck.proto`, compiled by `build.rs`) and the
//! conversions between it and `model`, used by the server and the client alike.
//!
//! One rule on the way in: a message from the other side never panics and never fails where
//! a reading is possible (unknown enum numbers are `Unknown`, unknown map keys are dropped).
//! Only what a user asked for (an action, a spec) is refused, with a message naming what is
//! wrong, because acting on a guess is worse than saying no.
//!
//! * [`state`]: jobs, nodes, queues, snapshots, health and what a cluster can do;
//! * [`calls`]: actions and their outcomes, specs, logs, previews, diagnoses, estimates;
//! * [`status`]: `BackendError` ↔ gRPC status;
//! * [`telemetry`]: a cluster's GPU telemetry, whole or as the newest history point;
//! * [`usage`]: who holds the GPUs, asked of the hub and answered per caller.

/// The largest gRPC message either side sends or takes, both ways: a full state goes out in
/// chunks of a few hundred jobs, so anything near this is a mistake or an attack, and is
/// refused before it is read into memory.
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;

mod calls;
mod state;
mod status;
mod telemetry;
mod usage;

pub use self::calls::{
    action_from_pb, action_to_pb, diagnosis_from_pb, diagnosis_to_pb, estimate_from_pb, estimate_to_pb,
    imported_from_pb, imported_to_pb, log_chunk_from_pb, log_chunk_to_pb, native_from_pb, native_to_pb,
    outcome_from_pb, outcome_to_pb, spec_from_json, spec_to_json,
};
pub use self::state::{
    ClusterInfo, capabilities_from_verbs, capabilities_to_verbs, health_from_pb, health_to_pb, info_from_pb,
    info_to_pb, job_from_pb, job_to_pb, meta_to_pb, node_from_pb, node_to_pb, queue_from_pb, queue_to_pb,
    snapshot_from_pb, time_from_ns, time_to_ns,
};
pub use self::status::{MAX_STATUS_MESSAGE, error_from_status, status_from_error};
pub use self::telemetry::{telemetry_from_pb, telemetry_to_pb};
pub use self::usage::{usage_from_pb, usage_request_from_pb, usage_request_to_pb, usage_to_pb};

use crate::model::Verb;

/// The generated messages and services of package `flightdeck.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("flightdeck.v1");

    /// The encoded descriptor set, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flightdeck_descriptor.bin"));
}

/// The verb a wire word names: its serde name (`teardown`, what the proto's comments list)
/// or its display word (`tear down`, `Verb::as_str`), so either spelling is understood.
fn verb_from_name(name: &str) -> Option<Verb> {
    Verb::ALL.into_iter().find(|v| v.as_str() == name || serde_name(*v) == name)
}

/// The verb's serde name (`teardown`): one word, as the proto's comments write verbs.
fn serde_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Teardown => "teardown",
        other => other.as_str(),
    }
}

/// Every verb name the wire understands, for messages that refuse another.
fn verb_names() -> String {
    Verb::ALL.into_iter().map(serde_name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_what_serde_writes() {
        for verb in Verb::ALL {
            let json = serde_json::to_value(verb).expect("a verb serialises");
            assert_eq!(json, serde_name(verb), "{verb:?}");
            assert_eq!(verb_from_name(serde_name(verb)), Some(verb));
            assert_eq!(verb_from_name(verb.as_str()), Some(verb));
        }
        assert_eq!(verb_from_name("Cancel"), None, "names are exact");
        assert_eq!(verb_from_name(""), None);
    }
}
