#!/usr/bin/env bash
# Usage: scripts/scale-figures.sh [jobs] [link] [cockpit] [kube]   (default: all four)
#
# Issue #29's figures, measured with the issue's own commands on the release binary
# (`cargo build --release` first; FLIGHTDECK_BIN names another binary):
#   jobs     `flightdeck jobs --output json` at SCALE_JOBS (50,000) jobs from a stand-in
#            `squeue` on PATH, built from the real captured records of one moment
#            (tests/fixtures/slurm/<SCALE_RELEASE>/squeue-fields.{txt,json}, the same jobs in
#            both forms, fresh ids per copy): peak RSS (`/usr/bin/time -f %M`) and wall time,
#            by field listing and by `--json` (the stand-in refusing `--Format`), beside
#            `jq .` on the JSON document of the same jobs.
#   link     the Slurm bytes per job of one refresh on the test bed (fd22, fd24): the field
#            listing as `flightdeck doctor` counts it, `squeue --json` counted over ssh.
#   cockpit  the cockpit over the stand-in (10 s refresh) in a tmux pane for 60 s: CPU from
#            /proc/PID/stat utime+stime, peak and resident memory from /proc/PID/status.
#   kube     `flightdeck jobs --output json` against 10,000 heavy pods on 1,000 nodes
#            (the Kubernetes fake; `tests/fakes/kube_trim.rs`), peak RSS; then the cockpit
#            over the same fake in a tmux pane for 30 s, peak and resident memory from
#            /proc/PID/status.
# Prints one line per figure. Speed figures depend on the machine: compare runs of one sitting.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${FLIGHTDECK_BIN:-$ROOT/target/release/flightdeck}
JOBS=${SCALE_JOBS:-50000}
RELEASE=${SCALE_RELEASE:-24.11}
WORK=${SCALE_WORK:-$(mktemp -d)}
FIXTURES=$ROOT/tests/fixtures/slurm/$RELEASE
[[ -x $BIN ]] || { echo "no binary at $BIN: cargo build --release" >&2; exit 2; }
mkdir -p "$WORK/bin" "$WORK/state"

# --- the stand-in cluster -------------------------------------------------------------------

# The field listing of JOBS jobs: the capture's records in job id order, copy r with every
# job id raised by (r+1) × 1,000,000 (the captures' ids are below that).
make_fields() {
    gawk -v N="$JOBS" 'BEGIN { RS = "\\^Fixture0\n"; ORS = "" }
        NF { split($0, f, "|"); id[f[1] + 0] = $0 }
        END {
            n = asorti(id, order, "@ind_num_asc")
            for (i = 0; i < N; i++) {
                off = (int(i / n) + 1) * 1000000
                rec = id[order[i % n + 1]]
                p1 = index(rec, "|"); first = substr(rec, 1, p1 - 1); rest = substr(rec, p1 + 1)
                p2 = index(rest, "|"); second = substr(rest, 1, p2 - 1); rest = substr(rest, p2 + 1)
                if (second ~ /^[0-9]+$/ && second != "0") second += off
                print (first + off) "|" second "|" rest "^Fixture0\n"
            }
        }' "$FIXTURES/squeue-fields.txt" > "$WORK/fields.txt"
}

# `squeue --json` of the same jobs, ids raised alike.
make_json() {
    jq --argjson n "$JOBS" '
        def raise($off): if type == "object" then (if .number != 0 then .number += $off else . end)
                         elif type == "number" and . != 0 then . + $off else . end;
        (.jobs | sort_by(.job_id)) as $jobs | ($jobs | length) as $k
        | .jobs = [range(0; $n) as $i | (((($i / $k) | floor) + 1) * 1000000) as $off
                   | $jobs[$i % $k] | .job_id += $off | .array_job_id |= raise($off)]' \
        "$FIXTURES/squeue-fields.json" > "$WORK/squeue.json"
}

make_standin() {
    [[ -s $WORK/fields.txt ]] || make_fields
    [[ -s $WORK/squeue.json ]] || make_json
    local version
    version=$(jq -r '.meta.slurm.release // "\(.meta.Slurm.version.major).\(.meta.Slurm.version.minor).\(.meta.Slurm.version.micro)"' "$FIXTURES/squeue-fields.json")
    cat > "$WORK/bin/squeue" <<EOF
#!/usr/bin/env bash
# Stand-in squeue over $JOBS captured jobs. SCALE_LISTING=json refuses --Format as a release
# without a field would.
for a in "\$@"; do
    case \$a in
        --Format=*)
            if [[ \${SCALE_LISTING:-fields} == json ]]; then
                echo "squeue: error: Invalid job format specification: stand-in" >&2; exit 1
            fi
            secret=\${a##*^}
            exec sed -e "s/~Fixture0/~\$secret/g" -e "s/\\^Fixture0/^\$secret/g" "$WORK/fields.txt" ;;
        --jobs=*) ids=\${a#--jobs=} ;;
        --format=*) exit 0 ;;
    esac
done
if [[ -n \${ids:-} ]]; then
    exec jq --arg ids "\$ids" '(\$ids | split(",")) as \$w | .jobs |= map(select((.job_id | tostring) as \$i | \$w | index(\$i)))' "$WORK/squeue.json"
fi
exec cat "$WORK/squeue.json"
EOF
    cat > "$WORK/bin/sinfo" <<EOF
#!/usr/bin/env bash
case "\$*" in
    --version) echo "slurm $version" ;;
    *--json*) exec cat "$FIXTURES/nodes-fields.json" ;;
    *) echo "stand-in sinfo: \$*" >&2; exit 1 ;;
esac
EOF
    cat > "$WORK/bin/scontrol" <<EOF
#!/usr/bin/env bash
case "\$*" in
    "show node --json") exec cat "$FIXTURES/nodes-fields.json" ;;
    *) echo "stand-in scontrol: \$*" >&2; exit 1 ;;
esac
EOF
    chmod +x "$WORK/bin/squeue" "$WORK/bin/sinfo" "$WORK/bin/scontrol"
    cat > "$WORK/standin.toml" <<EOF
[[cluster]]
name = "big"
kind = "slurm"
refresh_seconds = 10
timeout_seconds = 60
EOF
}

# The binary against the stand-in, in a state directory of its own.
STANDIN=(env PATH="$WORK/bin:$PATH" XDG_STATE_HOME="$WORK/state" FLIGHTDECK_CONFIG="$WORK/standin.toml")

# "seconds peak_kB" of a command (stdout dropped), the fastest of three runs.
timed() {
    local best="" line
    for _ in 1 2 3; do
        /usr/bin/time -o "$WORK/time" -f '%e %M' "$@" > /dev/null 2> "$WORK/stderr" || { cat "$WORK/stderr" >&2; return 1; }
        line=$(tail -n1 "$WORK/time")
        if [[ -z $best ]] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best=$line; fi
    done
    echo "$best"
}

figure_jobs() {
    make_standin
    local jq_t jq_m
    read -r jq_t jq_m < <(timed jq . "$WORK/squeue.json")
    echo "jq . on the --json document: $(wc -c < "$WORK/squeue.json") B, ${jq_t} s, peak $((jq_m / 1024)) MB"
    for listing in fields json; do
        for telemetry in "" --no-telemetry; do
            local t m
            read -r t m < <(SCALE_LISTING=$listing timed "${STANDIN[@]}" "$BIN" jobs --output json $telemetry)
            echo "jobs --output json $telemetry, $JOBS jobs by $listing listing: peak $((m / 1024)) MB, ${t} s = $(awk -v a="$t" -v b="$jq_t" 'BEGIN { printf "%.2f", a / b }')× jq"
        done
    done
    echo "field listing: $(wc -c < "$WORK/fields.txt") B, $(($(wc -c < "$WORK/fields.txt") / JOBS)) B per job"
}

# --- the link, on the test bed --------------------------------------------------------------

figure_link() {
    local env=/var/lib/flightdeck-testbed/env
    [[ -r $env ]] || { echo "link: the test bed is not up ($env)" >&2; return; }
    set -a; . "$env"; set +a
    for c in fd22 fd24; do
        local port_var=${c^^}_SSH_PORT lock=/tmp/flightdeck-testbed-$c-quiet.lock fields json jobs
        # Shared quiet lock: never while a test counts the controller's RPCs.
        fields=$(flock -s "$lock" env XDG_STATE_HOME="$WORK/state" "$BIN" --config "$FD_TESTBED_CONFIG" doctor 2>/dev/null \
            | awk -v c="$c" '$1 == c { on = 1; next } /^[^ ]/ { on = 0 } on && /bytes per job:/ { print $NF }')
        json=$(flock -s "$lock" ssh -q -i "$FD_TESTBED_KEY" -p "${!port_var}" -o BatchMode=yes \
            -o UserKnownHostsFile="$FD_TESTBED_KNOWN_HOSTS" root@127.0.0.1 squeue --all --states=all --json)
        jobs=$(jq '.jobs | length' <<< "$json")
        echo "$c: field listing ${fields} B per job; squeue --json $(( ${#json} / (jobs > 0 ? jobs : 1) )) B per job ($jobs jobs)"
    done
}

# --- the cockpit ----------------------------------------------------------------------------

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

figure_cockpit() {
    make_standin
    local session=fd-scale-$$ pid t0 t1 hz
    hz=$(getconf CLK_TCK)
    tmux new-session -d -s "$session" -x 160 -y 48 \
        "exec env PATH='$WORK/bin:$PATH' XDG_STATE_HOME='$WORK/state' FLIGHTDECK_CONFIG='$WORK/standin.toml' '$BIN'"
    trap 'tmux kill-session -t "$session" 2>/dev/null || true' RETURN
    pid=$(tmux display-message -p -t "$session" '#{pane_pid}')
    sleep 20 # the first refresh and its rows
    t0=$(cpu_ticks "$pid")
    sleep 60
    t1=$(cpu_ticks "$pid")
    echo "cockpit, $JOBS jobs, 10 s refresh, 60 s: $(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.1f", 100 * d / hz / 60 }')% of a core;" \
        "peak $(awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$pid/status") MB, resident $(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$pid/status") MB"
}

# --- Kubernetes -----------------------------------------------------------------------------

figure_kube() {
    (cd "$ROOT" && FLIGHTDECK_BIN=$BIN cargo test -q --test fakes kube_trim::ten_thousand_pods -- --ignored --nocapture --test-threads 1 2>&1 \
        | grep -oE '(flightdeck jobs --output json|cockpit, 10,000 pods).*')
}

for what in "${@:-jobs link cockpit kube}"; do
    for w in $what; do "figure_$w"; done
done
