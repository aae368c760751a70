//! The adapters against fakes served in-process: the Kubernetes wire-protocol fake
//! (`tests/kube_fake`) driven through the real kube client, and small HTTP stubs replaying
//! recorded dstack, SkyPilot and Prometheus answers. One binary (`cargo test --test fakes`).

#[path = "../kube_fake/mod.rs"]
mod kube_fake;
#[path = "../support/memory.rs"]
mod memory;

mod dstack_stub;
mod hub_leases;
mod hub_replicas;
mod kube_form;
mod kube_leases;
mod kube_protocol;
mod kube_scenarios;
mod kube_trim;
mod kube_usage;
mod kube_workloads;
mod skypilot_recorded;
mod telemetry_prometheus;
