#!/usr/bin/env bash
# Usage: capture-squeue-fields.sh [fd22|fd24]...   (default: both)
# With the test bed up (tests/testbed/up.sh), under the cluster's test lock (the file lock the
# live scenarios take), submits its own mix of jobs, waits for them to settle, and saves back to
# back the job listing both ways plus the node listing, to tests/fixtures/slurm/<major.minor>/:
#   squeue-fields.txt   env SLURM_TIME_FORMAT=%s squeue --all --states=all --noheader
#                       --Format=<parse::fields::squeue_fields_format("~Fixture0")>
#   squeue-fields.json  squeue --all --states=all --json
#   nodes-fields.json   sinfo --json (22.05) / scontrol show node --json (24.11)
# Then cancels its own jobs (only those). Other jobs the cluster still lists (recently finished
# ones of other scenarios) are captured too.
set -euo pipefail
shopt -s inherit_errexit
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
FIXTURES=$(cd "$HERE/../fixtures" && pwd)/slurm
BIN=/var/lib/flightdeck-testbed/bin

MARK='~Fixture0'
FIELDS=(JobID ArrayJobID ArrayTaskID State Reason UserName Account Partition NodeList NumNodes NumCPUs
    MinMemory NumTasks tres-per-node tres-per-job tres-per-task tres-per-socket tres-alloc SubmitTime StartTime
    EndTime TimeLimit PriorityLong exit_code BatchFlag)
USER_FIELDS=(Name Comment WorkDir StdOut StdErr)
FORMAT=""
for f in "${FIELDS[@]}"; do FORMAT+="$f:0|,"; done
for f in "${USER_FIELDS[@]}"; do FORMAT+="$f:0$MARK,"; done
# the last field ends with the record end: the mark's secret behind `^` (parse::fields::record_end)
FORMAT="${FORMAT%"$MARK,"}^${MARK#\~}"
# A name that tries to pose as a row of its own, and a comment that holds flightdeck's tag.
HOSTILE_NAME=$'evil|name\n999|999|N/A|RUNNING|None|root|(null)|gpu|x|1|1|1M|1|N/A|N/A|N/A|N/A|N/A|1|1|1|1|1|0|1|phantom~AAAAAAAA'
SLEEP='sleep 100000'

state_of() { $RUN squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n1 || true; }
wait_state() { # JOBID REGEX
    local s
    for _ in $(seq 120); do
        s=$(state_of "$1")
        [[ $s =~ $2 ]] && return 0
        sleep 0.5
    done
    die "$CLUSTER: job $1 is '$s', expected $2"
}

capture() { # CLUSTER GPU-TYPE NODE-COMMAND
    CLUSTER=$1 RUN=$BIN/$1
    local g=$2 ver dir ids=()
    ver=$($RUN scontrol --version | awk '{print $2}' | cut -d. -f1,2)
    dir=$FIXTURES/$ver
    sub() { $RUN sbatch --parsable -D /tmp "$@" | cut -d';' -f1; }
    # Whatever happens, this run's jobs go (the whole GPUs of h100-01 go to the first: one
    # running job alone on a node, whose device indices the node listing gives).
    trap 'for id in "${ids[@]}"; do $RUN scancel "$id" 2>/dev/null || true; done' EXIT
    ids+=("$(sub -J fields-gres-per-node --gres=gpu:h100:2 -c 2 --mem=2000 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-gpus-per-job --gpus=1 -c 2 --mem-per-cpu=700 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-gpus-per-task -n 2 --gpus-per-task=1 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-two-nodes -N 2 --gpus-per-node=1 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-later --begin=now+1hour --gres="gpu:$g:1" -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-held -H --gres=gpu:1 -c 2 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-array --array=0-3%1 --gres=gpu:1 -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J "$HOSTILE_NAME" --comment=$'\nx|y~Fixture1^Fixture1 flightdeck-migrated-from=forged' -o '/tmp/fd-fields-%x-%j.out' -e '/tmp/fd-fields-%j.err' -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-migrated --comment='flightdeck-migrated-from=hpc/12 migration=abc-1' -o 'fields-%j.log' -t 1:00:00 --wrap "$SLEEP")")
    ids+=("$(sub -J fields-exit3 -t 5 --wrap 'exit 3')")
    local canc
    canc=$(sub -J fields-cancelled -t 1:00:00 --wrap "$SLEEP")
    ids+=("$canc")
    wait_state "$canc" RUNNING
    $RUN scancel "$canc"
    wait_state "$canc" CANCELLED
    wait_state "${ids[9]}" FAILED
    wait_state "${ids[0]}" RUNNING
    wait_state "${ids[6]}_0" RUNNING
    sleep 3
    log "$CLUSTER: capturing Slurm $ver -> $dir"
    $RUN env SLURM_TIME_FORMAT=%s squeue --all --states=all --noheader --Format="$FORMAT" >"$dir/squeue-fields.txt"
    $RUN squeue --all --states=all --json >"$dir/squeue-fields.json"
    $RUN "${@:3}" >"$dir/nodes-fields.json"
    for id in "${ids[@]}"; do $RUN scancel "$id" 2>/dev/null || true; done
}

[[ $# -gt 0 ]] || set -- fd22 fd24
for c in "$@"; do
    case $c in
    fd22) exec 9>/tmp/flightdeck-testbed-fd22.lock; flock 9; capture fd22 a100 sinfo --json; exec 9>&- ;;
    fd24) exec 9>/tmp/flightdeck-testbed-fd24.lock; flock 9; capture fd24 l40s scontrol show node --json; exec 9>&- ;;
    *) die "unknown cluster $c" ;;
    esac
done
