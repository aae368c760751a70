#!/usr/bin/env bash
# The dstack server of the test bed: pinned dstack[server]==0.22.5 in its own virtual
# environment (cached between runs), its own HOME (the server rewrites ~/.dstack/config.yml),
# loopback port 3300 (not the default 3000, so a developer's own server is never touched) and a
# fixed admin token. No backend and no fleet are configured: runs are accepted and then wait
# or fail for lack of capacity, which is what the contract tests check. Writes FD_DSTACK_URL,
# FD_DSTACK_TOKEN, FD_DSTACK_PROJECT and FD_DSTACK_SERVER_DIR into /var/lib/flightdeck-testbed/dstack.env.
#
#   dstack.sh [up]   install if needed, start if not running, wait until it answers (idempotent)
#   dstack.sh start  the same (tests restart a server they stopped mid-run with it)
#   dstack.sh stop   stop the server (the venv, HOME and the server's database stay)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# One run at a time: two would install the venv or start the server twice.
run_locked /run/lock/flightdeck-testbed-dstack.lock "$0" "$@"

DSTACK_VERSION=0.22.5
DSTACK_PORT=3300
DSTACK_VENV=$FD_ROOT/venv-dstack
DSTACK_HOME=$FD_ROOT/dstack-home
DSTACK_ENV=$FD_ROOT/dstack.env
DSTACK_URL=http://127.0.0.1:$DSTACK_PORT
# A test-bed secret, not a credential: the server is on loopback and has no backend.
DSTACK_TOKEN=fd-testbed-dstack-admin-token
DSTACK_PROJECT=main
DSTACK_NAME=dstack-server

# dstack 0.22 calls sentry_sdk.start_transaction, which sentry-sdk 3 removed: with 3.x every
# background task of the server fails ("module 'sentry_sdk' has no attribute
# 'start_transaction'") and no run ever leaves `submitted`. dstack does not bound it itself.
SENTRY_PIN='sentry-sdk<3'

install_venv() {
    if [[ -x $DSTACK_VENV/bin/dstack ]] && "$DSTACK_VENV/bin/python" -c \
        "import dstack.version as v, sentry_sdk.consts as s, sys; sys.exit(v.__version__ != '$DSTACK_VERSION' or int(s.VERSION.split('.')[0]) >= 3)" \
        2>/dev/null; then
        return 0
    fi
    local t0=$SECONDS
    # A server started from the venv about to be replaced would keep its old libraries.
    stop_server
    log "installing dstack[server]==$DSTACK_VERSION ($SENTRY_PIN) into $DSTACK_VENV"
    rm -rf "$DSTACK_VENV"
    python3 -m venv "$DSTACK_VENV"
    # pip's own --timeout bounds each connection; `bounded` the whole install.
    bounded "$FD_PIP_TIMEOUT" "$DSTACK_VENV/bin/pip" install -q --disable-pip-version-check --timeout 60 \
        "dstack[server]==$DSTACK_VERSION" "$SENTRY_PIN"
    log "installed in $((SECONDS - t0)) s"
}

# dstack's server preloads gpuhunt's offer catalogs at start and every 10 minutes, from the
# network (`preload_offers_catalog`; dstack 0.22.5 has no setting to turn it off). Nothing
# outside is reachable from the test bed, so each load would wait on a dead connection and
# log a traceback per cloud. gpuhunt reads its catalogs from GPUHUNT_CATALOG_URL: point it at
# empty ones on disk (one per offline provider of the installed gpuhunt, `file://` URLs work
# with urllib). No backend is configured, so the server offers nothing either way.
DSTACK_CATALOG=$DSTACK_HOME/empty-catalog

empty_catalog() {
    rm -rf "$DSTACK_CATALOG"
    "$DSTACK_VENV/bin/python" - "$DSTACK_CATALOG" <<'PY'
import pathlib, sys, zipfile
from gpuhunt._internal.catalog import OFFLINE_PROVIDERS
root = pathlib.Path(sys.argv[1])
for p in OFFLINE_PROVIDERS:
    (root / p / "empty").mkdir(parents=True, exist_ok=True)
    (root / p / "version").write_text("empty\n")
    with zipfile.ZipFile(root / p / "empty" / "catalog.zip", "w") as z:
        z.writestr(f"{p}.csv", "")
PY
}

answers() {
    curl -fsS -m 2 -X POST -H 'Content-Type: application/json' -d '{}' \
        "$DSTACK_URL/api/server/get_info" >/dev/null 2>&1
}

start_server() {
    if running_pid "$DSTACK_NAME" >/dev/null && answers; then
        log "dstack server already up on $DSTACK_URL"
    else
        stop_server
        port_open "$DSTACK_PORT" && die "port $DSTACK_PORT is taken by something else"
        mkdir -p "$DSTACK_HOME"
        empty_catalog
        local t0=$SECONDS
        log "starting dstack server on $DSTACK_URL"
        start_daemon "$DSTACK_NAME" "$DSTACK_VENV" env -i HOME="$DSTACK_HOME" PATH="$DSTACK_VENV/bin:$FD_STD_PATH" \
            LANG=C.UTF-8 DSTACK_SERVER_ADMIN_TOKEN="$DSTACK_TOKEN" DSTACK_CLI_DISABLE_UPDATE_CHECK=1 \
            DSTACK_DISABLE_USAGE_STATS=1 DSTACK_SERVER_LOG_LEVEL=WARNING GPUHUNT_CATALOG_URL="file://$DSTACK_CATALOG" \
            "$DSTACK_VENV/bin/dstack" server --host 127.0.0.1 --port "$DSTACK_PORT" -y
        for _ in $(seq 120); do
            answers && break
            running_pid "$DSTACK_NAME" >/dev/null || die "dstack server exited (see $FD_LOGS/$DSTACK_NAME.out)"
            sleep 0.5
        done
        answers || die "dstack server does not answer on $DSTACK_URL (see $FD_LOGS/$DSTACK_NAME.out)"
        log "dstack server answers after $((SECONDS - t0)) s"
    fi
    # FD_DSTACK_SERVER_DIR: the server's file log storage, where the log test writes the
    # lines a runner would have sent (no runner can start offline).
    printf 'FD_DSTACK_URL=%s\nFD_DSTACK_TOKEN=%s\nFD_DSTACK_PROJECT=%s\nFD_DSTACK_SERVER_DIR=%s\n' \
        "$DSTACK_URL" "$DSTACK_TOKEN" "$DSTACK_PROJECT" "$DSTACK_HOME/.dstack/server" >"$DSTACK_ENV"
}

stop_server() {
    # The server may run workers below the recorded pid: stop the whole tree.
    local pid pids
    if pid=$(running_pid "$DSTACK_NAME"); then
        mapfile -t pids < <(echo "$pid"; descendants "$pid")
        log "stopping $DSTACK_NAME (pids ${pids[*]})"
        stop_pids "${pids[@]}"
    fi
    rm -f "$FD_PIDS/$DSTACK_NAME".{pid,tag,start}
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
