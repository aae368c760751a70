#!/usr/bin/env bash
# The one test command (README.md; .ci/run calls exactly this). On a fresh Debian 12
# machine, as root: brings up the real Slurm test bed (two releases, each behind its own
# sshd on loopback), then runs the formatting and lint gates and every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tests/testbed/up.sh
set -a
# shellcheck disable=SC1091
. /var/lib/flightdeck-testbed/env
set +a
# Leftovers from an earlier run would confuse the scenarios; start from an empty queue.
bash tests/testbed/reset.sh

export CARGO_TERM_COLOR=never
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
# The cockpit's end-to-end test drives the real binary in a tmux pane.
command -v tmux >/dev/null || apt-get install -y -q tmux >/dev/null
# Live scenarios wait on a per-cluster lock; enough threads keep both clusters busy.
cargo test --all-targets --locked -- --test-threads=8
