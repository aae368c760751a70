#!/usr/bin/env bash
# The one test command (README.md; .ci/run calls exactly this). On a fresh Debian 12
# machine, as root: brings up the real Slurm test bed (two releases, each behind its own
# sshd on loopback), then runs the formatting and lint gates and every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The crate's rust-version (Cargo.toml) is the oldest toolchain that builds it.
want=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml)
have=$(cargo --version | sed -n 's/^cargo \([0-9.]*\).*/\1/p')
if [[ -z $have || $(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1) != "$want" ]]; then
    echo "tests/run.sh: cargo ${have:-not found}, but flightdeck needs Rust $want or newer (rustup update stable)" >&2
    exit 1
fi

bash tests/testbed/up.sh
bash tests/testbed/skypilot.sh # SkyPilot API server: FD_SKYPILOT_URL in skypilot.env
# A second one with fd24 as its Slurm infra (jobs really run): FD_SKYPILOT_SLURM_URL
bash tests/testbed/skypilot.sh slurm
bash tests/testbed/dstack.sh
set -a
# shellcheck disable=SC1091
. /var/lib/flightdeck-testbed/env
# shellcheck disable=SC1091
. /var/lib/flightdeck-testbed/skypilot.env
# shellcheck disable=SC1091
. /var/lib/flightdeck-testbed/skypilot-slurm.env
. /var/lib/flightdeck-testbed/dstack.env
set +a
# Leftovers from an earlier run would confuse the scenarios; start from an empty queue.
bash tests/testbed/reset.sh

export CARGO_TERM_COLOR=never
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
# The cockpit's end-to-end test drives the real binary in a tmux pane.
if ! command -v tmux >/dev/null; then
    timeout 900 apt-get update -q >/dev/null
    timeout 900 apt-get install -y -q tmux >/dev/null
fi
# Live scenarios wait on a per-cluster lock; enough threads keep both clusters busy.
cargo test --all-targets --locked -- --test-threads=8
