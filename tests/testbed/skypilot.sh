#!/usr/bin/env bash
# The SkyPilot API server of the test bed: pinned skypilot==0.14.1 in its own virtual
# environment (cached between runs), its own HOME, loopback port 46590 (not the default
# 46580, so a developer's own server is never touched), a seeded catalog so GPU names and
# `/list_accelerators` answer offline, no infra: every launch there ends NoCloudAccessError.
# Writes FD_SKYPILOT_URL into /var/lib/flightdeck-testbed/skypilot.env.
#
# A second server of the same venv (port 46591, HOME skypilot-slurm-home) has the test bed's
# Slurm 24.11 cluster fd24 as its one infra (SkyPilot's Slurm cloud: ~/.slurm/config, an
# ssh-config Host per cluster; a cluster is one sbatch allocation, its jobs run under srun):
# there a launch really reaches UP and a RUNNING job. Writes FD_SKYPILOT_SLURM_URL into
# /var/lib/flightdeck-testbed/skypilot-slurm.env. It needs, on fd24 (the trixie chroot, login
# node and compute nodes alike), what `prepare_fd24` below puts there:
#   * rsync, python3, python3-venv, curl, ca-certificates (Debian packages): SkyPilot rsyncs
#     its sbatch script to the login node and runs its runtime (skylet) in a Python venv;
#   * the host's extra CA certificates, so the node reaches PyPI where the host does;
#   * uv from PyPI, as /opt/fd-sky/uv-real, and two stand-ins for what SkyPilot downloads
#     from outside the package registries: `curl https://astral.sh/uv/install.sh` (a curl
#     wrapper in /usr/local/bin answers that one URL with an installer of the bed's uv) and
#     the CPython 3.10 that `uv venv --python 3.10` downloads from GitHub (the bed's uv maps
#     that request to the chroot's python3, 3.13);
#   * the node names in /etc/hosts (skylet resolves each node of $SLURM_JOB_NODELIST).
# The runtime's Python packages come from PyPI when a cluster is first launched (about a
# minute; uv keeps them in /tmp/uv_cache_0 of the chroot for the next launch).
#
#   skypilot.sh [up]     install if needed, start if not running, wait until it answers (idempotent)
#   skypilot.sh start    the same (tests restart a server they stopped mid-run with it)
#   skypilot.sh stop     stop the server (the venv, HOME and catalog stay)
#   skypilot.sh slurm    prepare fd24, start the Slurm-infra server (idempotent; after up.sh)
#   skypilot.sh slurm-stop  stop the Slurm-infra server
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
SKY_SLURM_PORT=46591
SKY_SLURM_HOME=$FD_ROOT/skypilot-slurm-home
SKY_SLURM_ENV=$FD_ROOT/skypilot-slurm.env
SKY_SLURM_URL=http://127.0.0.1:$SKY_SLURM_PORT
SKY_SLURM_NAME=skypilot-slurm-api
UV_VERSION=0.13.9
FD_SKY_DIR=/opt/fd-sky # in the chroot

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
seed_catalog() { # [CATALOG_DIR]
    local SKY_CATALOG=${1:-$SKY_CATALOG}
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

answers() { curl -fsS -m 2 "${1:-$SKY_URL}/api/health" >/dev/null 2>&1; }

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

# launch_server NAME HOME PORT URL WHAT: start `sky api start` for HOME on PORT and wait until
# it answers on URL (both servers of the bed, the cloudless one and the Slurm-infra one).
launch_server() {
    local name=$1 home=$2 port=$3 url=$4 what=$5 t0=$SECONDS
    port_open "$port" && die "port $port is taken by something else"
    log "starting $what on $url"
    start_daemon "$name" "$SKY_VENV" env HOME="$home" PATH="$SKY_VENV/bin:$FD_STD_PATH" \
        SKYPILOT_DISABLE_USAGE_COLLECTION=1 SKYPILOT_DEBUG=0 \
        "$SKY_VENV/bin/sky" api start --host 127.0.0.1 --port "$port" --foreground
    for _ in $(seq 120); do
        answers "$url" && break
        running_pid "$name" >/dev/null || die "$what exited (see $FD_LOGS/$name.out)"
        sleep 0.5
    done
    answers "$url" || die "$what does not answer on $url (see $FD_LOGS/$name.out)"
    log "$what answers after $((SECONDS - t0)) s"
}

start_server() {
    if running_pid "$SKY_NAME" >/dev/null && answers; then
        log "skypilot api server already up on $SKY_URL"
    else
        stop_server
        mkdir -p "$SKY_HOME"
        seed_catalog
        local t0=$SECONDS
        launch_server "$SKY_NAME" "$SKY_HOME" "$SKY_PORT" "$SKY_URL" "skypilot api server"
        warm_up
        log "skypilot api server warm after $((SECONDS - t0)) s"
    fi
    printf 'FD_SKYPILOT_URL=%s\n' "$SKY_URL" >"$SKY_ENV"
}

stop_server() { # [NAME]
    # `sky api start --foreground` runs the server and its workers as children: stop the
    # whole tree of the recorded pid, leaves included.
    local name=${1:-$SKY_NAME} pid pids
    if pid=$(running_pid "$name"); then
        mapfile -t pids < <(echo "$pid"; descendants "$pid")
        log "stopping $name (pids ${pids[*]})"
        stop_pids "${pids[@]}"
    fi
    rm -f "$FD_PIDS/$name".{pid,tag,start}
}

# ---- the Slurm-infra server --------------------------------------------------------------

# fd24's side of SkyPilot's Slurm cloud (see the header): packages, CA, uv and its stand-ins,
# node names. Idempotent; every file is replaced only when it changed.
prepare_fd24() {
    [[ -d $FD_CHROOT/etc/slurm ]] || die "no fd24 chroot at $FD_CHROOT: run tests/testbed/up.sh first"
    local miss
    miss=$(missing_pkgs --admindir "$FD_CHROOT/var/lib/dpkg" rsync python3 python3-venv curl ca-certificates | xargs)
    if [[ -n $miss ]]; then
        log "apt-get install (chroot, for SkyPilot): $miss"
        # shellcheck disable=SC2086
        if ! { in_chroot timeout --kill-after=30 "$FD_APT_TIMEOUT" apt-get update -qq &&
            in_chroot env DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes \
                timeout --kill-after=30 "$FD_APT_TIMEOUT" apt-get install -y -qq --no-install-recommends $miss; } \
            >>"$FD_LOGS/apt-chroot.log" 2>&1; then
            tail -n 30 "$FD_LOGS/apt-chroot.log" >&2
            die "apt-get install in the chroot failed (log: $FD_LOGS/apt-chroot.log)"
        fi
        in_chroot apt-get clean
    fi
    # The host's own CA certificates (an egress proxy's, where there is one).
    local crt changed=0
    for crt in /usr/local/share/ca-certificates/*.crt; do
        [[ -f $crt ]] || continue
        cmp -s "$crt" "$FD_CHROOT$crt" && continue
        mkdir -p "$(dirname "$FD_CHROOT$crt")"
        cp "$crt" "$FD_CHROOT$crt"
        changed=1
    done
    ((changed == 0)) || in_chroot update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates in the chroot failed"

    local d=$FD_CHROOT$FD_SKY_DIR
    mkdir -p "$d"
    if [[ ! -x $d/uv-real ]] || [[ $("$d/uv-real" -V 2>/dev/null) != "uv $UV_VERSION"* ]]; then
        log "fetching uv==$UV_VERSION from PyPI for fd24"
        local tmp
        tmp=$(mktemp -d)
        if ! HOME=$SKY_SLURM_HOME bounded "$FD_PIP_TIMEOUT" "$SKY_VENV/bin/pip" download -q --disable-pip-version-check \
            --timeout 60 --no-deps --only-binary :all: --platform "manylinux_2_17_$(uname -m)" -d "$tmp" "uv==$UV_VERSION"; then
            rm -rf "$tmp"
            die "pip download uv==$UV_VERSION failed"
        fi
        "$SKY_VENV/bin/python" -m zipfile -e "$tmp"/uv-*.whl "$tmp/x"
        install -m 755 "$tmp/x/uv-$UV_VERSION.data/scripts/uv" "$d/uv-real"
        rm -rf "$tmp"
    fi
    write_if_changed "$d/uv" 755 <<EOF
#!/bin/sh
# flightdeck test bed (tests/testbed/skypilot.sh): SkyPilot's runtime setup runs
# \`uv venv --python 3.10\`, and uv would download that CPython from GitHub; here the chroot's
# python3 stands in. Otherwise the real uv (uv==$UV_VERSION from PyPI), unchanged.
export UV_PYTHON_DOWNLOADS=never SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
prev=
for a in "\$@"; do
    if [ "\$prev" = --python ] && [ "\$a" = 3.10 ]; then a=/usr/bin/python3; fi
    set -- "\$@" "\$a"
    prev=\$a
done
shift \$((\$# / 2))
exec $FD_SKY_DIR/uv-real "\$@"
EOF
    write_if_changed "$FD_CHROOT/usr/local/bin/curl" 755 <<EOF
#!/bin/sh
# flightdeck test bed (tests/testbed/skypilot.sh): SkyPilot installs uv with
# \`curl -LsSf https://astral.sh/uv/install.sh | UV_INSTALL_DIR=... sh\`; that host is not
# reachable here, so that one URL answers an installer of the bed's uv. Anything else: curl.
for a in "\$@"; do
    case \$a in
    https://astral.sh/uv/install.sh)
        echo 'mkdir -p "\${UV_INSTALL_DIR:?}" && ln -sf $FD_SKY_DIR/uv "\$UV_INSTALL_DIR/uv"'
        exit 0
        ;;
    esac
done
exec /usr/bin/curl "\$@"
EOF
    # up.sh copies the host's /etc/hosts into the chroot; the node names come after it.
    local names
    names="127.0.0.1 ${FD24_NODES//,/ } # flightdeck test bed: SkyPilot's skylet resolves its nodes"
    grep -qxF "$names" "$FD_CHROOT/etc/hosts" || echo "$names" >>"$FD_CHROOT/etc/hosts"
}

write_if_changed() { # FILE MODE < CONTENT
    local f=$1 mode=$2
    cat >"$f.new"
    chmod "$mode" "$f.new"
    if cmp -s "$f.new" "$f"; then rm -f "$f.new"; else mv "$f.new" "$f"; fi
}

# The server's view of fd24: the login sshd of the chroot, the test bed's key.
slurm_home() {
    mkdir -p "$SKY_SLURM_HOME/.slurm" "$SKY_SLURM_HOME/.sky"
    # The GPU names a launch looks up (SkyPilot would download them).
    seed_catalog "$SKY_SLURM_HOME/.sky/catalogs/v8"
    write_if_changed "$SKY_SLURM_HOME/.slurm/config" 600 <<EOF
Host fd24
  HostName 127.0.0.1
  Port $FD24_SSH_PORT
  User root
  IdentityFile $FD_KEY
  UserKnownHostsFile $FD_KNOWN_HOSTS
EOF
    # The partition has no MaxTime: a --time keeps SkyPilot's allocation from outliving a test.
    write_if_changed "$SKY_SLURM_HOME/.sky/config.yaml" 644 <<EOF
allowed_clouds: [slurm]
slurm:
  allowed_clusters: [fd24]
  sbatch_options:
    time: "60"
EOF
}

start_slurm_server() {
    if running_pid "$SKY_SLURM_NAME" >/dev/null && answers "$SKY_SLURM_URL"; then
        log "skypilot slurm-infra server already up on $SKY_SLURM_URL"
    else
        stop_server "$SKY_SLURM_NAME"
        launch_server "$SKY_SLURM_NAME" "$SKY_SLURM_HOME" "$SKY_SLURM_PORT" "$SKY_SLURM_URL" \
            "skypilot slurm-infra server"
    fi
    # `sky check` records the enabled infra (launches read it); it also proves the login works.
    local out
    out=$(cd "$SKY_SLURM_HOME" && bounded 180 env HOME="$SKY_SLURM_HOME" PATH="$SKY_VENV/bin:$FD_STD_PATH" \
        SKYPILOT_DISABLE_USAGE_COLLECTION=1 SKYPILOT_API_SERVER_ENDPOINT="$SKY_SLURM_URL" \
        "$SKY_VENV/bin/sky" check slurm 2>&1) || die "sky check slurm failed: $out"
    out=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$out")
    grep -q 'fd24: enabled' <<<"$out" || die "sky check slurm does not enable fd24: $out"
    printf 'FD_SKYPILOT_SLURM_URL=%s\n' "$SKY_SLURM_URL" >"$SKY_SLURM_ENV"
}

case ${1:-up} in
up | start)
    ensure_host_pkgs curl python3-venv
    install_venv
    start_server
    ;;
stop) stop_server ;;
slurm)
    ensure_host_pkgs curl python3-venv
    [[ -s $FD_ROOT/env ]] || die "no $FD_ROOT/env: run tests/testbed/up.sh first"
    # shellcheck disable=SC1091
    . "$FD_ROOT/env"
    install_venv
    prepare_fd24
    slurm_home
    start_slurm_server
    ;;
slurm-stop) stop_server "$SKY_SLURM_NAME" ;;
*) die "usage: $0 [up|start|stop|slurm|slurm-stop]" ;;
esac
