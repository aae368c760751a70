#!/usr/bin/env bash
# Put both test-bed clusters back to a clean state between test runs: no jobs in the queue,
# every live node returned to service. Leaves the daemons running.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# Never while up.sh (re)starts the daemons, nor two resets at once: up.sh's lock.
run_locked /run/lock/flightdeck-testbed.lock "$0" "$@"
# Nor in the middle of a live scenario that holds a cluster's lock (tests/common: the same
# files, in the tests' temporary directory): wait for it, bounded.
for c in fd22 fd24; do
    exec {held}>>"${TMPDIR:-/tmp}/flightdeck-testbed-$c.lock"
    flock -w 600 "$held" || die "reset.sh: cluster $c stayed locked by a test for 10 minutes"
done
BIN=$FD_BIN
for c in fd22 fd24; do
    [[ -x $BIN/$c ]] || { echo "reset.sh: test bed cluster $c is not up (run up.sh)" >&2; exit 1; }
    "$BIN/$c" scancel --user=root --full 2>/dev/null || true
done
"$BIN/fd22" scontrol update NodeName=a100-[01-02],h100-01 State=RESUME 2>/dev/null || true
"$BIN/fd24" scontrol update NodeName=l40s-[01-02],h100-01 State=RESUME 2>/dev/null || true
# Wait (bounded) until nothing is active any more, so the scenarios start on idle nodes.
for _ in $(seq 1 60); do
    busy=$( { "$BIN/fd22" squeue -h -t PD,R,CG,S; "$BIN/fd24" squeue -h -t PD,R,CG,S; } | wc -l)
    [[ $busy -eq 0 ]] && exit 0
    sleep 1
done
echo "reset.sh: jobs still active after 60 s" >&2
exit 1
