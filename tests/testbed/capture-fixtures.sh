#!/usr/bin/env bash
# Usage: capture-fixtures.sh [fd22|fd24]...   (default: both)
# With the test bed up (tests/testbed/up.sh), fills each cluster with a realistic mix of jobs,
# drains a node, waits for the states to settle and saves the CLI output of each Slurm release
# to tests/fixtures/slurm/<major.minor>/. Then cancels every job and resumes the node.
# WARNING: cancels every job already on the cluster first (placement must be predictable).
set -euo pipefail
shopt -s inherit_errexit
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
FIXTURES=$(cd "$HERE/../fixtures" && pwd)/slurm
[[ $EUID -eq 0 ]] || die "run as root"

SQUEUE_FMT='%i|%F|%K|%j|%u|%a|%P|%T|%r|%N|%D|%C|%m|%b|%V|%S|%e|%l|%M|%Q'
SINFO_FMT='%N|%P|%T|%C|%m|%e|%G|%E|%f'
WEIRD_NAME=$'weird "double" \'single\' ünïcødé ✓ 🚀 with  spaces'
SLEEP='sleep 100000'

state_of() { $RUN squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n1 || true; }
reason_of() { $RUN squeue -h -t all -j "$1" -o %r 2>/dev/null | head -n1 || true; }

wait_state() { # JOBID REGEX [TIMEOUT_S]
    local s
    for _ in $(seq $((${3:-30} * 2))); do
        s=$(state_of "$1")
        [[ $s =~ $2 ]] && return 0
        sleep 0.5
    done
    die "$CLUSTER: job $1 is '$s', expected $2"
}

sub() { # sbatch ARGS... -> job id; output lands in /tmp (of the host or of the chroot)
    local id
    id=$($RUN sbatch --parsable -D /tmp -o '/tmp/fd-fixture-%A_%a.out' "$@" | cut -d';' -f1)
    echo "$id"
}

active_jobs() { $RUN squeue -h -o %A; } # default states: every unfinished one

clean_cluster() {
    if [[ -n $(active_jobs) ]]; then
        log "$CLUSTER: cancelling all jobs"
        $RUN scancel --user=root || true
        for _ in $(seq 120); do
            [[ -z $(active_jobs) ]] && break
            sleep 0.5
        done
        [[ -z $(active_jobs) ]] || die "$CLUSTER: jobs still active: $(active_jobs | xargs)"
    fi
}

capture() { # CLUSTER RUNNER GPU(a100|l40s) DRAIN_NODE
    CLUSTER=$1 RUN=$2
    local g=$3 drain=$4 ver dir n
    ver=$($RUN scontrol --version | awk '{print $2}' | cut -d. -f1,2)
    dir=$FIXTURES/$ver
    mkdir -p "$dir"
    log "$CLUSTER: Slurm $ver -> $dir"

    clean_cluster
    for n in $($RUN sinfo -h -N -t drain -o %N | sort -u); do
        $RUN scontrol update nodename="$n" state=resume
    done

    # running GPU jobs of both models; --gpus=h100:1 and --gpus-per-node
    local train h100 gpn
    train=$(sub -J train-llama-70b --gres="gpu:$g:4" -c 4 --mem=8000 -t 2-00:00:00 --wrap "$SLEEP")
    h100=$(sub -J finetune-h100 --gpus=h100:1 -c 2 --mem=4000 -t 1-00:00:00 --wrap "$SLEEP")
    gpn=$(sub -J eval-gpus-per-node -N 1 --gpus-per-node="$g:2" -c 2 -t 1-00:00:00 --wrap "$SLEEP")
    for n in "$train" "$h100" "$gpn"; do wait_state "$n" RUNNING; done

    # pending: Resources (no node has 4 free GPUs), Priority (behind it), Dependency
    local res prio dep held arr
    res=$(sub -J big-"$g"-needs-4 --gres="gpu:$g:4" -c 4 -t 12:00:00 --wrap "$SLEEP")
    prio=$(sub -J queued-behind-big --gres="gpu:$g:4" -c 2 -t 12:00:00 --wrap "$SLEEP")
    dep=$(sub -J postprocess --dependency=afterok:"$train" -t 01:00:00 --wrap 'echo post')
    held=$(sub -H -J held-by-user --gres="gpu:$g:1" -t 01:00:00 --wrap "$SLEEP")
    # array: 2 tasks running, the rest pending in the parent (JobArrayTaskLimit)
    arr=$(sub -J sweep --array=0-5%2 --gres="gpu:$g:1" -t 00:30:00 --wrap "$SLEEP")

    # CPU-only running jobs: debug partition, two nodes, a weird name
    local dbg multi weird
    dbg=$(sub -p debug -J debug-shell -c 1 -t 00:30:00 --wrap "$SLEEP")
    multi=$(sub -J mpi-2node -N 2 -n 2 -t 02:00:00 --wrap "$SLEEP")
    weird=$(sub -J "$WEIRD_NAME" -t 01:00:00 --wrap "$SLEEP")

    # finished: failed with exit code 3, completed, cancelled while running
    local fail ok canc susp rq
    fail=$(sub -J fail-exit3 -t 00:05:00 --wrap 'echo failing >&2; exit 3')
    ok=$(sub -J done-ok -t 00:05:00 --wrap 'echo done')
    canc=$(sub -J cancel-me -t 01:00:00 --wrap "$SLEEP")
    # suspended; requeued and held by the admin
    susp=$(sub -J suspend-me -t 01:00:00 --wrap "$SLEEP")
    rq=$(sub -J requeue-hold-me -t 01:00:00 --wrap "$SLEEP")

    for n in "$dbg" "$multi" "$weird" "$canc" "$susp" "$rq"; do wait_state "$n" RUNNING; done
    wait_state "${arr}_0" RUNNING
    wait_state "${arr}_1" RUNNING
    wait_state "$fail" FAILED
    wait_state "$ok" COMPLETED
    $RUN scancel "$canc"
    $RUN scontrol suspend "$susp"
    $RUN scontrol requeuehold "$rq"
    wait_state "$canc" CANCELLED
    wait_state "$susp" SUSPENDED
    wait_state "$rq" PENDING 60

    # drain the node running the h100 job (-> draining / mixed+drain)
    $RUN scontrol update nodename="$drain" state=drain reason="fixture: GPU 1 fell off the bus"

    # let the main and backfill schedulers set pending reasons and start-time estimates
    for _ in $(seq 60); do
        [[ $(reason_of "$res") == Resources && $(reason_of "$prio") =~ Priority|Resources ]] && break
        sleep 0.5
    done
    sleep 8

    log "$CLUSTER: capturing"
    $RUN squeue --json >"$dir/squeue.json"
    $RUN sinfo --json >"$dir/sinfo.json"
    if $RUN scontrol show node --json >"$dir/scontrol-node.json" 2>/dev/null; then :; else
        rm -f "$dir/scontrol-node.json"
        log "$CLUSTER: scontrol show node --json is not supported on $ver"
    fi
    $RUN squeue -r -h -o "$SQUEUE_FMT" >"$dir/squeue.txt"
    $RUN sinfo -N -h -o "$SINFO_FMT" >"$dir/sinfo.txt"
    $RUN scontrol --version >"$dir/scontrol-version.txt"
    $RUN squeue >"$dir/squeue-plain.txt"
    $RUN sinfo >"$dir/sinfo-plain.txt"
    # extras: finished jobs too (-t all); 24.11's --json honours filters, 22.05's ignores them
    $RUN squeue --json --states=all >"$dir/squeue-all.json"
    if cmp -s "$dir/squeue.json" "$dir/squeue-all.json"; then rm "$dir/squeue-all.json"; fi
    $RUN squeue -r -h -t all -o "$SQUEUE_FMT" >"$dir/squeue-all.txt"
    $RUN squeue -t all >"$dir/squeue-all-plain.txt"
    cat >"$dir/jobs.txt" <<EOF
# job ids of the fixture jobs (name: id), cluster $CLUSTER, Slurm $($RUN scontrol --version)
train-llama-70b (running, gres gpu:$g:4): $train
finetune-h100 (running, --gpus=h100:1, node later drained): $h100
eval-gpus-per-node (running, --gpus-per-node=$g:2): $gpn
big-$g-needs-4 (pending, Resources): $res
queued-behind-big (pending, Priority or Resources): $prio
postprocess (pending, Dependency afterok:$train): $dep
held-by-user (pending, held, sbatch -H): $held
sweep (array 0-5%2: tasks 0,1 running, parent pending JobArrayTaskLimit): $arr
debug-shell (running, partition debug): $dbg
mpi-2node (running, 2 nodes): $multi
weird name (running): $weird
fail-exit3 (failed, exit code 3): $fail
done-ok (completed): $ok
cancel-me (cancelled while running): $canc
suspend-me (suspended): $susp
requeue-hold-me (requeued + held by admin: scontrol requeuehold): $rq
drained node: $drain
EOF
    log "$CLUSTER: pending reasons: res=$(reason_of "$res") prio=$(reason_of "$prio")" \
        "dep=$(reason_of "$dep") held=$(reason_of "$held") arr=$(reason_of "$arr")"

    # clean up
    clean_cluster
    $RUN scontrol update nodename="$drain" state=resume
    log "$CLUSTER: done; jobs cancelled, $drain resumed"
}

clusters=("$@")
((${#clusters[@]})) || clusters=(fd22 fd24)
for c in "${clusters[@]}"; do
    case $c in
    fd22) capture fd22 fd22 a100 h100-01 ;;
    fd24) capture fd24 fd24 l40s h100-01 ;;
    *) die "unknown cluster $c" ;;
    esac
done
rm -f /tmp/fd-fixture-*.out "$FD_CHROOT"/tmp/fd-fixture-*.out
log "fixtures in $FIXTURES"
