# shellcheck shell=bash disable=SC2034
# Shared paths and helpers for the flightdeck Slurm test bed (sourced by up.sh, down.sh, ...).

FD_ROOT=/var/lib/flightdeck-testbed
FD_CHROOT=$FD_ROOT/trixie
FD_PIDS=$FD_ROOT/pids
FD_LOGS=$FD_ROOT/log
FD_SSH=$FD_ROOT/ssh
FD_BIN=$FD_ROOT/bin
FD_KEY=$FD_SSH/id_ed25519
FD_KNOWN_HOSTS=$FD_SSH/known_hosts
FD_WORKDIR=/tmp                       # job workdir; exists in the host and in the chroot

# Cluster A: Slurm 22.05 on the host
FD22_DIR=$FD_ROOT/fd22
FD22_CONF=$FD22_DIR/etc/slurm.conf
FD22_CTLD_PORT=6817
FD22_DBD_PORT=6819                    # its slurmdbd (job accounting)
FD22_DB=slurm_acct_fd22               # its MariaDB database
FD22_SSH_PORT=2222
FD22_LIVE_NODES=(a100-01 a100-02 h100-01)   # slurmd started for these
FD22_DEAD_NODE=dead-01                       # configured, never started

# Cluster B: Slurm 24.11 in a Debian 13 chroot (paths as seen inside the chroot)
FD24_DIR_IN=/var/lib/flightdeck-testbed/fd24
FD24_DIR=$FD_CHROOT$FD24_DIR_IN
FD24_CONF_IN=/etc/slurm/slurm.conf
FD24_CTLD_PORT=6917
FD24_DBD_PORT=6919
FD24_DB=slurm_acct_fd24
FD24_SSH_PORT=2224
FD24_LIVE_NODES=(l40s-01 l40s-02 h100-01)

# Job accounting: one MariaDB on the host for both clusters' slurmdbd (fd24's, in the chroot,
# reaches it over TCP: the chroot shares the host's network). Not the machine's own MariaDB
# (that one, if ever started, would take 3306): own datadir, socket and port.
FD_DB_DIR=$FD_ROOT/mariadb
FD_DB_CNF=$FD_DB_DIR/my.cnf
FD_DB_SOCK=$FD_DB_DIR/run/mariadb.sock
FD_DB_PIDFILE=$FD_DB_DIR/run/mariadbd.pid
FD_DB_PORT=3316
FD_DB_USER=slurm
FD_DB_PASSFILE=$FD_DB_DIR/slurm-password   # the slurmdbds' password, made on first use

FD_STD_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf '[testbed %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---- bounds and locks ------------------------------------------------------------------
# Every step that waits on a mirror or a package index has a deadline, so a stalled network
# fails the run with a message instead of hanging it. Seconds; raise them for a slow mirror.
FD_APT_TIMEOUT=${FD_APT_TIMEOUT:-900}
FD_DEBOOTSTRAP_TIMEOUT=${FD_DEBOOTSTRAP_TIMEOUT:-1800}
FD_PIP_TIMEOUT=${FD_PIP_TIMEOUT:-1200}

bounded() { # SECS CMD...: CMD (an executable, not a function), TERM after SECS, KILL 30 s later
    local secs=$1 rc=0
    shift
    timeout --kill-after=30 "$secs" "$@" || rc=$?
    if ((rc == 124 || rc == 137)); then log "timed out after $secs s: $*"; fi
    return "$rc"
}

# One run of a script at a time: re-executes the calling script under `flock -o` on LOCK
# (the lock is held by flock itself, so daemons the script starts do not inherit it). A
# second run waits up to 15 minutes, then fails. Call it before anything else is done.
run_locked() { # LOCK SCRIPT ARGS...
    local lock=$1 script=$2 guard
    shift 2
    guard=FD_LOCKED_$(basename "$lock" .lock | tr -c 'A-Za-z0-9\n' _)
    [[ ${!guard:-} == 1 ]] && return 0
    mkdir -p "$(dirname "$lock")"
    if ! flock -n "$lock" true; then log "another $(basename "$script") is running: waiting for it"; fi
    export "$guard=1"
    exec flock -o -w 900 "$lock" bash "$script" "$@"
}

missing_pkgs() { # [--admindir DIR] PKG... -> the ones not installed
    local admin=()
    if [[ $1 == --admindir ]]; then admin=(--admindir="$2"); shift 2; fi
    local p
    for p; do
        [[ $(dpkg-query "${admin[@]}" -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] ||
            echo "$p"
    done
}

# What the server scripts need on a fresh Debian 12 (curl to ask the servers, python3-venv
# for their virtual environments); up.sh installs them too, with the rest of the host's.
ensure_host_pkgs() { # PKG...: apt-get install the missing ones, bounded
    local miss
    miss=$(missing_pkgs "$@" | xargs)
    [[ -n $miss ]] || return 0
    [[ $EUID -eq 0 ]] || die "$miss missing; run as root to install them"
    log "apt-get install: $miss"
    mkdir -p "$FD_LOGS"
    # shellcheck disable=SC2086
    if ! { DEBIAN_FRONTEND=noninteractive bounded "$FD_APT_TIMEOUT" apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive bounded "$FD_APT_TIMEOUT" \
            apt-get install -y -qq --no-install-recommends $miss; } >>"$FD_LOGS/apt-host.log" 2>&1; then
        tail -n 30 "$FD_LOGS/apt-host.log" >&2
        die "apt-get install $miss failed (log: $FD_LOGS/apt-host.log)"
    fi
}

# Run a command on cluster fd22 / fd24 (slurm CLI etc.).
fd22() { env SLURM_CONF="$FD22_CONF" "$@"; }
fd24() {
    env -i PATH="$FD_STD_PATH" HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 \
        chroot "$FD_CHROOT" /bin/sh -c 'cd /tmp 2>/dev/null || cd /; exec "$@"' fd24 "$@"
}

# ---- pid bookkeeping -------------------------------------------------------------------
# $FD_PIDS/NAME.pid holds the host pid; $FD_PIDS/NAME.start its start time (what tells our
# process from a later one that reused the pid); $FD_PIDS/NAME.tag a string its cmdline must
# contain, the check for records older than the start time. The start time, not the cmdline,
# comes first: servers retitle themselves (SkyPilot's setproctitle), so a live server of ours
# would read as gone and be started twice.
cmdline_of() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline"; }

start_time_of() { # PID -> its start time in clock ticks since boot (field 22 of stat)
    local stat rest
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # Fields after the command name, which may hold spaces and parentheses.
    read -r -a rest <<<"${stat##*) }"
    echo "${rest[19]}"
}

remember_start() { # NAME: record the start time of NAME's recorded pid
    local pid
    pid=$(<"$FD_PIDS/$1.pid")
    start_time_of "$pid" >"$FD_PIDS/$1.start" || rm -f "$FD_PIDS/$1.start"
}

running_pid() { # NAME -> prints pid if our daemon NAME is alive
    local name=$1 pid tag start
    [[ -s $FD_PIDS/$name.pid ]] || return 1
    pid=$(<"$FD_PIDS/$name.pid")
    [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
    if [[ -s $FD_PIDS/$name.start ]]; then
        start=$(start_time_of "$pid") || return 1
        [[ $start == "$(<"$FD_PIDS/$name.start")" ]] || return 1
    else
        tag=$(cat "$FD_PIDS/$name.tag" 2>/dev/null || true)
        [[ -z $tag || "$(cmdline_of "$pid")" == *"$tag"* ]] || return 1
    fi
    echo "$pid"
}

# start_daemon NAME TAG CMD...: start CMD (which must stay in the foreground) in its own session,
# detached from this script, output appended to $FD_LOGS/NAME.out.
start_daemon() {
    local name=$1 tag=$2; shift 2
    mkdir -p "$FD_PIDS" "$FD_LOGS"
    echo "$tag" >"$FD_PIDS/$name.tag"
    rm -f "$FD_PIDS/$name.pid" "$FD_PIDS/$name.start"
    # From $FD_ROOT, not the caller's directory: a daemon outlives the checkout that started
    # it, and slurmd's job steps inherit its working directory (a deleted one fails them).
    # shellcheck disable=SC2016
    (cd "$FD_ROOT" && exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$FD_PIDS/$name.pid" "$@" \
        </dev/null >>"$FD_LOGS/$name.out" 2>&1) &
    local i
    for i in $(seq 50); do
        if [[ -s $FD_PIDS/$name.pid ]]; then
            remember_start "$name"
            return 0
        fi
        sleep 0.1
    done
    die "could not start $name"
}

# record_pid NAME TAG PIDFILE: adopt a self-daemonizing process (munged, sshd) via its pidfile.
record_pid() {
    mkdir -p "$FD_PIDS"
    echo "$2" >"$FD_PIDS/$1.tag"
    cp "$3" "$FD_PIDS/$1.pid"
    remember_start "$1"
}

stop_pids() { # PID...: TERM, wait up to 10 s, then KILL
    local pid alive
    kill -TERM "$@" 2>/dev/null || true
    for _ in $(seq 100); do
        alive=()
        for pid; do [[ -d /proc/$pid ]] && alive+=("$pid"); done
        ((${#alive[@]})) || return 0
        sleep 0.1
    done
    log "pids ${alive[*]} did not stop on TERM, killing"
    kill -KILL "${alive[@]}" 2>/dev/null || true
    for _ in $(seq 30); do
        alive=()
        for pid; do [[ -d /proc/$pid ]] && alive+=("$pid"); done
        ((${#alive[@]})) || return 0
        sleep 0.1
    done
}
stop_pid() { stop_pids "$1"; }

stop_daemon() { # NAME...: stop these daemons of ours (in parallel)
    local name pid pids=()
    for name; do
        if pid=$(running_pid "$name"); then
            log "stopping $name (pid $pid)"
            pids+=("$pid")
        fi
    done
    ((${#pids[@]} == 0)) || stop_pids "${pids[@]}"
    for name; do rm -f "$FD_PIDS/$name".{pid,tag,start}; done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

chroot_mounts() { # list of mounts below the chroot, deepest first
    findmnt -rn -o TARGET 2>/dev/null | awk -v p="$FD_CHROOT/" 'index($0, p) == 1' | sort -r
}

# Run a command inside the chroot with a clean environment (no host SLURM_CONF etc.).
FD_CHROOT_EXEC=(env -i PATH="$FD_STD_PATH" HOME=/root USER=root LOGNAME=root LANG=C.UTF-8
    chroot "$FD_CHROOT")
in_chroot() { "${FD_CHROOT_EXEC[@]}" "$@"; }

unmount_chroot() {
    local m
    for m in $(chroot_mounts); do
        umount "$m" 2>/dev/null || umount -l "$m" || log "could not unmount $m"
    done
}

descendants() { # PID -> all descendant pids
    local c
    for c in $(pgrep -P "$1" || true); do
        echo "$c"
        descendants "$c"
    done
}
