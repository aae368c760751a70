//! The tests that need the live test bed (`tests/testbed/`: two Slurm releases behind sshd,
//! the SkyPilot and dstack servers), plus the `#[ignore]`d scenarios for a real Kubernetes
//! cluster. Scenarios that change a cluster take its lock (`common::cluster_lock`), a file
//! lock, so they serialise across threads of this binary and across concurrent runs.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;
#[path = "../kube_fake/mod.rs"]
mod kube_fake;

mod advice_live;
mod batch_live;
mod cli_live;
mod dstack_live;
mod history_live;
mod hub_live;
mod hub_replicas_live;
mod hub_sdiag_live;
mod init_probe;
mod kube_real;
mod migrate_live;
mod sbatch_real;
mod skypilot_live;
mod slurm_live;
mod slurm_telemetry_live;
mod spec_live_slurm;
mod tui_e2e;
mod usage_live;
mod watch_live;
mod why_live;
