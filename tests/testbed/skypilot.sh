#!/usr/bin/env bash
# The SkyPilot API server of the test bed: pinned skypilot==0.14.1 in its own virtual
# environment (cached between runs), its own HOME, loopback port 46590 (not the default
# 46580, so a developer's own server is never touched), a seeded catalog so GPU names and
# `/list_accelerators` answer offline. Writes FD_SKYPILOT_URL into
# /var/lib/flightdeck-testbed/skypilot.env.
#
#   skypilot.sh [up]   install if needed, start if not running, wait until it answers (idempotent)
#   skypilot.sh start  the same (tests restart a server they stopped mid-run with it)
#   skypilot.sh stop   stop the server (the venv, HOME and catalog stay)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# One run at a time: two would install the venv or start the server twice.
run_locked /run/lock/flightdeck-testbed-skypilot.lock "$0" "$@"

SKY_VERSION=0.14.1
SKY_PORT=46590
SKY_VENV=$FD_ROOT/venv-skypilot
SKY_HOME=$FD_ROOT/skypilot-home
SKY_ENV=$FD_ROOT/skypilot.env
SKY_URL=http://127.0.0.1:$SKY_PORT
SKY_NAME=skypilot-api
SKY_CATALOG=$SKY_HOME/.sky/catalogs/v8

install_venv() {
    # Importing sky writes ~/.sky: under the server's HOME, never the caller's.
    mkdir -p "$SKY_HOME"
    if [[ -x $SKY_VENV/bin/sky ]] && HOME=$SKY_HOME "$SKY_VENV/bin/python" -c "import sky, sys; sys.exit(sky.__version__ != '$SKY_VERSION')" 2>/dev/null; then
        return 0
    fi
    log "installing skypilot==$SKY_VERSION into $SKY_VENV"
    rm -rf "$SKY_VENV"
    python3 -m venv "$SKY_VENV"
    # pip's own --timeout bounds each connection; `bounded` the whole install.
    HOME=$SKY_HOME bounded "$FD_PIP_TIMEOUT" "$SKY_VENV/bin/pip" install -q --disable-pip-version-check --timeout 60 \
        "skypilot==$SKY_VERSION"
}

# The catalog SkyPilot would download: the GPU names (common/), and one cloud's offers
# (Lambda) so the accelerator listing answers. Prices are Lambda's public list prices.
seed_catalog() {
    mkdir -p "$SKY_CATALOG/common" "$SKY_CATALOG/lambda"
    cat >"$SKY_CATALOG/common/accelerators.csv" <<'EOF'
AcceleratorName,Clouds
A100,"['AWS', 'Azure', 'GCP', 'Lambda']"
A100-80GB,"['AWS', 'Azure', 'GCP', 'Lambda']"
H100,"['AWS', 'Azure', 'GCP', 'Lambda']"
L4,"['AWS', 'GCP']"
EOF
    cat >"$SKY_CATALOG/common/metadata.csv" <<'EOF'
GPU,MemoryGB,Manufacturer
A100,40,NVIDIA
A100-80GB,80,NVIDIA
H100,80,NVIDIA
L4,24,NVIDIA
EOF
    cat >"$SKY_CATALOG/lambda/vms.csv" <<'EOF'
InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice
gpu_1x_a100_sxm4,A100,1.0,30.0,200.0,1.29,us-east-1,"{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 1.0, 'MemoryInfo': {'SizeInMiB': 40960}}], 'TotalGpuMemoryInMiB': 40960}",
gpu_8x_a100_80gb_sxm4,A100-80GB,8.0,240.0,1800.0,14.32,us-east-1,"{'Gpus': [{'Name': 'A100-80GB', 'Manufacturer': 'NVIDIA', 'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}",
gpu_1x_h100_pcie,H100,1.0,26.0,200.0,2.49,us-east-1,"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 1.0, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 81920}",
gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}",
cpu_4x_general,,,4.0,16.0,0.10,us-east-1,,
EOF
}

answers() { curl -fsS -m 2 "$SKY_URL/api/health" >/dev/null 2>&1; }

# One asynchronous request end to end (the first one starts the server's workers: 8-10 s).
warm_up() {
    local id
    id=$(curl -fsS -m 10 -D - -o /dev/null -X POST -H 'Content-Type: application/json' \
        -d '{"clouds": "lambda", "gpus_only": true}' "$SKY_URL/list_accelerators" |
        tr -d '\r' | sed -n 's/^[Xx]-[Ss]ky[Pp]ilot-[Rr]equest-[Ii][Dd]: *//p')
    [[ -n $id ]] || die "no request id from $SKY_URL/list_accelerators"
    curl -fsS -m 60 "$SKY_URL/api/get?request_id=$id" | grep -q 'H100' ||
        die "the seeded catalog does not answer /list_accelerators (see $FD_LOGS/$SKY_NAME.out)"
}

start_server() {
    if running_pid "$SKY_NAME" >/dev/null && answers; then
        log "skypilot api server already up on $SKY_URL"
    else
        stop_server
        port_open "$SKY_PORT" && die "port $SKY_PORT is taken by something else"
        mkdir -p "$SKY_HOME"
        seed_catalog
        local t0=$SECONDS
        log "starting skypilot api server on $SKY_URL"
        start_daemon "$SKY_NAME" "$SKY_VENV" env HOME="$SKY_HOME" PATH="$SKY_VENV/bin:$FD_STD_PATH" \
            SKYPILOT_DISABLE_USAGE_COLLECTION=1 SKYPILOT_DEBUG=0 \
            "$SKY_VENV/bin/sky" api start --host 127.0.0.1 --port "$SKY_PORT" --foreground
        for _ in $(seq 120); do
            answers && break
            running_pid "$SKY_NAME" >/dev/null || die "skypilot api server exited (see $FD_LOGS/$SKY_NAME.out)"
            sleep 0.5
        done
        answers || die "skypilot api server does not answer on $SKY_URL (see $FD_LOGS/$SKY_NAME.out)"
        log "skypilot api server answers after $((SECONDS - t0)) s"
        warm_up
        log "skypilot api server warm after $((SECONDS - t0)) s"
    fi
    printf 'FD_SKYPILOT_URL=%s\n' "$SKY_URL" >"$SKY_ENV"
}

stop_server() {
    # `sky api start --foreground` runs the server and its workers as children: stop the
    # whole tree of the recorded pid, leaves included.
    local pid pids
    if pid=$(running_pid "$SKY_NAME"); then
        mapfile -t pids < <(echo "$pid"; descendants "$pid")
        log "stopping $SKY_NAME (pids ${pids[*]})"
        stop_pids "${pids[@]}"
    fi
    rm -f "$FD_PIDS/$SKY_NAME".{pid,tag,start}
}

case ${1:-up} in
up | start)
    ensure_host_pkgs curl python3-venv
    install_venv
    start_server
    ;;
stop) stop_server ;;
*) die "usage: $0 [up|start|stop]" ;;
esac
