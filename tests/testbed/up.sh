#!/usr/bin/env bash
# Bring up the flightdeck Slurm test bed on this (Debian 12) machine, as root:
#   fd22  Slurm 22.05 on the host          slurmctld :6817  login sshd 127.0.0.1:2222
#   fd24  Slurm 24.11 in a Debian 13 chroot slurmctld :6917  login sshd 127.0.0.1:2224
# Idempotent: a second run reuses what is installed and running and exits quickly.
# A (re)started slurmctld starts with a clean queue (-c: no jobs, node states from slurm.conf).
# Env knobs: FD_TESTBED_MIRROR (Debian mirror URL, default: read from apt sources),
#            FD_TESTBED_SMOKE=0|1 (skip / force the job smoke test; default: only when a
#            slurm daemon was (re)started by this run).
# See tests/testbed/README.md.
set -euo pipefail
shopt -s inherit_errexit
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=users.sh
. "$HERE/users.sh"

[[ $EUID -eq 0 ]] || die "run as root"
# One run at a time (a developer and CI, two test runs): two would start every daemon twice.
# `flock -o` holds the lock in flock itself, so the daemons started below do not inherit it.
LOCK=/run/lock/flightdeck-testbed.lock
if [[ ${FD_TESTBED_LOCKED:-} != 1 ]]; then
    mkdir -p "$(dirname "$LOCK")"
    if ! flock -n "$LOCK" true; then log "another tests/testbed/up.sh is running: waiting for it"; fi
    FD_TESTBED_LOCKED=1 exec flock -o -w 900 "$LOCK" bash "$0" "$@"
fi
T0=$SECONDS
phase() { log "$* [t=$((SECONDS - T0))s]"; }

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
HOST_NAME=$(hostname -s)
# curl and python3-venv: for skypilot.sh and dstack.sh (their servers' venvs, their probes).
HOST_PKGS=(slurm-wlm slurm-client munge openssh-server openssh-client debootstrap
    util-linux procps mariadb-server slurmdbd curl python3-venv)
CHROOT_PKGS=(slurm-wlm slurm-client munge openssh-server slurmdbd)
DEAD_REASON="test bed: no slurmd"
STARTED=0 # set when a slurm daemon is (re)started; triggers the smoke test

mkdir -p "$FD_ROOT" "$FD_PIDS" "$FD_LOGS" "$FD_SSH" "$FD_BIN"
chmod 700 "$FD_SSH"

# ---------------------------------------------------------------------------------------
# packages
# missing_pkgs: lib.sh

POLICY_CREATED=0
CHROOT_JOB=
cleanup() {
    if ((POLICY_CREATED)); then rm -f /usr/sbin/policy-rc.d; fi
    POLICY_CREATED=0
    if [[ -n $CHROOT_JOB && -d /proc/$CHROOT_JOB ]]; then # failed while the chroot was building
        log "stopping the chroot build"
        # shellcheck disable=SC2046
        kill -TERM $(descendants "$CHROOT_JOB") "$CHROOT_JOB" 2>/dev/null || true
    fi
}
trap cleanup EXIT
APT_UPDATED=0
host_install() {
    local miss
    miss=$(missing_pkgs "$@" | xargs)
    [[ -n $miss ]] || return 0
    log "apt-get install (host): $miss"
    # keep package scripts from starting sshd on :22, slurmctld etc. with default configs
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        POLICY_CREATED=1
    fi
    if ((!APT_UPDATED)); then
        bounded "$FD_APT_TIMEOUT" apt-get update -qq >>"$FD_LOGS/apt-host.log" || die "apt-get update failed"
        APT_UPDATED=1
    fi
    # shellcheck disable=SC2086
    if ! bounded "$FD_APT_TIMEOUT" apt-get install -y -qq --no-install-recommends $miss >>"$FD_LOGS/apt-host.log"; then
        tail -n 30 "$FD_LOGS/apt-host.log" >&2
        die "apt-get install failed (log: $FD_LOGS/apt-host.log)"
    fi
    rm -f /usr/sbin/policy-rc.d
    POLICY_CREATED=0
}

debian_mirror() {
    if [[ -n ${FD_TESTBED_MIRROR:-} ]]; then
        echo "${FD_TESTBED_MIRROR%/}"
        return
    fi
    local u
    u=$({
        sed -n 's/^[[:space:]]*URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
            tr '[:blank:]' '\n'
        sed -nE 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
    } | grep -E '^https?://' | grep -Ev 'security|updates|backports' | grep -E '/debian/?$' |
        head -n1 || true)
    [[ -n $u ]] || die "no Debian mirror found in the apt sources; set FD_TESTBED_MIRROR"
    echo "${u%/}"
}

# ---------------------------------------------------------------------------------------
# Debian 13 chroot (runs in the background while the host cluster comes up)
mount_chroot() {
    mountpoint -q "$FD_CHROOT/proc" || mount -t proc proc "$FD_CHROOT/proc"
    mountpoint -q "$FD_CHROOT/sys" || mount -t sysfs sysfs "$FD_CHROOT/sys"
    if ! mountpoint -q "$FD_CHROOT/dev"; then
        mount --bind /dev "$FD_CHROOT/dev"
        mount --make-rslave "$FD_CHROOT/dev"
    fi
    mountpoint -q "$FD_CHROOT/dev/pts" || mount --bind /dev/pts "$FD_CHROOT/dev/pts"
}

build_chroot() {
    if [[ ! -e $FD_CHROOT/.fd-debootstrap-done ]]; then
        if [[ -e $FD_CHROOT ]]; then
            unmount_chroot
            [[ -z $(chroot_mounts) ]] || die "mounts left below $FD_CHROOT"
            log "removing incomplete chroot $FD_CHROOT"
            rm -rf --one-file-system "$FD_CHROOT"
        fi
        local mirror
        mirror=$(debian_mirror)
        log "debootstrap --variant=minbase trixie $FD_CHROOT $mirror"
        if ! bounded "$FD_DEBOOTSTRAP_TIMEOUT" debootstrap --variant=minbase trixie "$FD_CHROOT" "$mirror" \
            >"$FD_LOGS/debootstrap.log" 2>&1; then
            tail -n 30 "$FD_LOGS/debootstrap.log" >&2
            die "debootstrap failed (log: $FD_LOGS/debootstrap.log)"
        fi
        touch "$FD_CHROOT/.fd-debootstrap-done"
        log "debootstrap done"
    fi
    printf '#!/bin/sh\nexit 101\n' >"$FD_CHROOT/usr/sbin/policy-rc.d"
    chmod 755 "$FD_CHROOT/usr/sbin/policy-rc.d"
    cp /etc/hosts "$FD_CHROOT/etc/hosts"
    rm -f "$FD_CHROOT/etc/resolv.conf"
    cp -L /etc/resolv.conf "$FD_CHROOT/etc/resolv.conf" 2>/dev/null || true
    mount_chroot
    local miss
    miss=$(missing_pkgs --admindir "$FD_CHROOT/var/lib/dpkg" "${CHROOT_PKGS[@]}" | xargs)
    if [[ -n $miss ]]; then
        log "apt-get install (chroot): $miss"
        # shellcheck disable=SC2086
        # `timeout` inside the chroot (coreutils is in minbase): in_chroot is a function.
        if ! { in_chroot dpkg --configure -a &&
            in_chroot timeout --kill-after=30 "$FD_APT_TIMEOUT" apt-get update -qq &&
            in_chroot env DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes \
                timeout --kill-after=30 "$FD_APT_TIMEOUT" apt-get install -y -qq --no-install-recommends $miss; } \
            >>"$FD_LOGS/apt-chroot.log"; then
            tail -n 30 "$FD_LOGS/apt-chroot.log" >&2
            die "apt-get install in the chroot failed (log: $FD_LOGS/apt-chroot.log)"
        fi
        in_chroot apt-get clean
        log "chroot packages installed"
    fi
}

# ---------------------------------------------------------------------------------------
# munge: ROOTPREFIX ("" or the chroot) RUNNER (command prefix) NAME
start_munge() {
    local r=$1 run=$2 name=$3
    if $run sh -c 'munge -n | unmunge' >/dev/null 2>&1; then
        if ! running_pid "$name" >/dev/null && [[ -s $r/run/munge/munged.pid ]]; then
            record_pid "$name" munged "$r/run/munge/munged.pid"
        fi
        return 0
    fi
    log "starting munged ($name)"
    if [[ ! -s $r/etc/munge/munge.key ]]; then
        $run mungekey --create --keyfile=/etc/munge/munge.key >/dev/null
    fi
    mkdir -p "$r/run/munge" "$r/var/log/munge" "$r/var/lib/munge"
    $run chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
    chmod 700 "$r/etc/munge"
    chmod 600 "$r/etc/munge/munge.key"
    chmod 755 "$r/run/munge"
    $run runuser -u munge -- /usr/sbin/munged --force
    local i
    for i in $(seq 50); do
        $run sh -c 'munge -n | unmunge' >/dev/null 2>&1 && break
        sleep 0.2
    done
    $run sh -c 'munge -n | unmunge' >/dev/null 2>&1 ||
        die "munged ($name) does not work; see $r/var/log/munge/munged.log"
    record_pid "$name" munged "$r/run/munge/munged.pid"
}
host_run() { "$@"; }

# ---------------------------------------------------------------------------------------
# slurm configuration
CONF_CHANGED=0
install_if_changed() { # TMPFILE DEST: replace DEST if different; then sets CONF_CHANGED=1
    if cmp -s "$1" "$2"; then
        rm -f "$1"
    else
        mv "$1" "$2"
        CONF_CHANGED=1
    fi
}

mkgpus() { # DIR N: fake GPUs are char devices (plain files are rejected by slurmd)
    local i
    mkdir -p "$1"
    for ((i = 0; i < $2; i++)); do
        [[ -c $1/nvidia$i ]] || { rm -f "$1/nvidia$i"; mknod "$1/nvidia$i" c 1 3; }
    done
}

slurm_conf_common() { # NAME DIR(as seen by the daemons) CTLD_PORT DBD_PORT
    cat <<EOF
# Generated by flightdeck tests/testbed/up.sh: edits are overwritten.
ClusterName=$1
SlurmctldHost=$HOST_NAME(127.0.0.1)
SlurmctldPort=$3
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$2/state
SlurmdSpoolDir=$2/spool/%n
SlurmctldPidFile=$2/run/slurmctld.pid
SlurmdPidFile=$2/run/slurmd-%n.pid
SlurmctldLogFile=$2/log/slurmctld.log
SlurmdLogFile=$2/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5
# Multifactor so that sprio and sshare answer (why: a job waiting on priority is given its
# parts): the age and fair-share parts weigh in; every test job is root's, so the order
# stays first come, first served.
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityMaxAge=1-0
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=300
DefMemPerCPU=500
MailProg=/bin/true
# Job accounting through the cluster's slurmdbd, so sacct works. Limits are enforced, so a
# job needs an association (root has one: sacctmgr add cluster made it) and a QOS limit
# holds a job back (the fd-gpu1 QOS, see add_limit_qos); the default QOS has none. gres/gpu
# in the TRES so AllocTRES counts the GPUs (gres/gpu=N, no type) and a QOS can limit them;
# the gather plugin (a sample every 5 s) fills the steps' MaxRSS and friends.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageEnforce=limits
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$4
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
NodeName=DEFAULT CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=16000 State=UNKNOWN
EOF
}

write_fd22_conf() { # sets CONF_CHANGED=1 if a config file changed
    local d=$FD22_DIR
    mkdir -p "$d/etc" "$d/state" "$d/spool" "$d/log" "$d/run"
    mkgpus "$d/dev" 4
    {
        slurm_conf_common fd22 "$d" "$FD22_CTLD_PORT" "$FD22_DBD_PORT"
        cat <<EOF
NodeName=a100-01 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6821 Gres=gpu:a100:4 Feature=a100,nvlink
NodeName=a100-02 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6822 Gres=gpu:a100:4 Feature=a100,nvlink
NodeName=h100-01 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6823 Gres=gpu:h100:2 Feature=h100,hbm3
# dead-01 is configured but no slurmd is ever started for it: down* (down, not responding)
NodeName=dead-01 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6824 Gres=gpu:a100:4 Feature=a100 State=DOWN Reason="$DEAD_REASON"
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=a100-01 MaxTime=01:00:00 State=UP
EOF
    } >"$d/etc/slurm.conf.new"
    cat >"$d/etc/gres.conf.new" <<EOF
AutoDetect=off
NodeName=a100-[01-02],dead-01 Name=gpu Type=a100 File=$d/dev/nvidia[0-3]
NodeName=h100-01 Name=gpu Type=h100 File=$d/dev/nvidia[0-1]
EOF
    install_if_changed "$d/etc/slurm.conf.new" "$d/etc/slurm.conf"
    install_if_changed "$d/etc/gres.conf.new" "$d/etc/gres.conf"
}

write_fd24_conf() {
    local din=$FD24_DIR_IN d=$FD24_DIR e=$FD_CHROOT/etc/slurm
    mkdir -p "$e" "$d/state" "$d/spool" "$d/log" "$d/run"
    mkgpus "$d/dev" 4
    {
        slurm_conf_common fd24 "$din" "$FD24_CTLD_PORT" "$FD24_DBD_PORT"
        # Per-user RPC rate limiting (23.02+), as busy sites run it: a burst of 1000 RPCs, then
        # 100 a second, far above anything a test asks (root and SlurmUser are exempt anyway).
        echo "SlurmctldParameters=rl_enable,rl_bucket_size=1000,rl_refill_rate=100,rl_refill_period=1"
        cat <<EOF
NodeName=l40s-01 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6921 Gres=gpu:l40s:4 Feature=l40s
NodeName=l40s-02 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6922 Gres=gpu:l40s:4 Feature=l40s
NodeName=h100-01 NodeHostname=$HOST_NAME NodeAddr=127.0.0.1 Port=6923 Gres=gpu:h100:2 Feature=h100,hbm3
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=l40s-01 MaxTime=01:00:00 State=UP
EOF
    } >"$e/slurm.conf.new"
    cat >"$e/gres.conf.new" <<EOF
AutoDetect=off
NodeName=l40s-[01-02] Name=gpu Type=l40s File=$din/dev/nvidia[0-3]
NodeName=h100-01 Name=gpu Type=h100 File=$din/dev/nvidia[0-1]
EOF
    # 24.11's slurmd refuses to start without cgroups otherwise
    printf 'CgroupPlugin=disabled\n' >"$e/cgroup.conf.new"
    install_if_changed "$e/slurm.conf.new" "$e/slurm.conf"
    install_if_changed "$e/gres.conf.new" "$e/gres.conf"
    install_if_changed "$e/cgroup.conf.new" "$e/cgroup.conf"
}

# ---------------------------------------------------------------------------------------
# job accounting: one MariaDB (host) for both clusters, a slurmdbd per cluster
adopt_pidfile() { # NAME TAG PIDFILE: take back a daemon of ours whose bookkeeping got lost
    local pid
    running_pid "$1" >/dev/null && return 0
    [[ -s $3 ]] || return 0
    pid=$(<"$3")
    [[ $pid =~ ^[0-9]+$ && "$(cmdline_of "$pid")" == *"$2"* ]] || return 0
    log "adopting $1 (pid $pid, from $3)"
    record_pid "$1" "$2" "$3"
}

mariadb_cnf() {
    cat <<EOF
# Generated by flightdeck tests/testbed/up.sh: edits are overwritten.
# The test bed's MariaDB (both clusters' slurmdbd), not the machine's: read only with
# --defaults-file, so /etc/mysql is never consulted.
[mariadbd]
user = mysql
datadir = $FD_DB_DIR/data
socket = $FD_DB_SOCK
pid-file = $FD_DB_PIDFILE
port = $FD_DB_PORT
bind-address = 127.0.0.1
skip-name-resolve
# what slurmdbd checks at start: it logs an error for less (24.11 wants 2G, 22.05 512M). Pages
# are touched as the tables grow: mariadbd stays at ~140 MB resident.
innodb_buffer_pool_size = 2G
innodb_log_file_size = 64M
innodb_lock_wait_timeout = 900
max_allowed_packet = 16M

# mariadb / mariadb-admin --defaults-file=$FD_DB_CNF: root over the socket (unix_socket auth)
[client]
socket = $FD_DB_SOCK
user = root
EOF
}

db_ping() { mariadb-admin --defaults-file="$FD_DB_CNF" --connect-timeout=2 ping >/dev/null 2>&1; }

start_mariadb() {
    local d=$FD_DB_DIR i
    mkdir -p "$d/run"
    chmod 755 "$d"
    chown mysql:mysql "$d/run"
    CONF_CHANGED=0
    mariadb_cnf >"$d/my.cnf.new"
    install_if_changed "$d/my.cnf.new" "$FD_DB_CNF"
    adopt_pidfile mariadb "mariadbd --defaults-file=$FD_DB_CNF" "$FD_DB_PIDFILE"
    if running_pid mariadb >/dev/null; then
        ((CONF_CHANGED)) || return 0
        log "mariadb config changed: restarting it (the slurmdbds reconnect by themselves)"
        stop_daemon mariadb
    fi
    if [[ ! -e $d/.fd-install-done ]]; then # first use, or an install that did not finish
        rm -rf "$d/data"
        mkdir -p "$d/data"
        chown mysql:mysql "$d/data"
        chmod 700 "$d/data"
        log "mariadb-install-db ($d/data)"
        if ! mariadb-install-db --defaults-file="$FD_DB_CNF" --skip-test-db \
            --auth-root-authentication-method=socket >"$FD_LOGS/mariadb-install.log" 2>&1; then
            tail -n 30 "$FD_LOGS/mariadb-install.log" >&2
            die "mariadb-install-db failed (log: $FD_LOGS/mariadb-install.log)"
        fi
        touch "$d/.fd-install-done"
    fi
    port_open "$FD_DB_PORT" && die "port $FD_DB_PORT is taken by something else"
    log "starting mariadb on 127.0.0.1:$FD_DB_PORT"
    start_daemon mariadb "mariadbd --defaults-file=$FD_DB_CNF" \
        /usr/sbin/mariadbd --defaults-file="$FD_DB_CNF"
    for i in $(seq 120); do
        db_ping && return 0
        running_pid mariadb >/dev/null || break
        sleep 0.25
    done
    tail -n 30 "$FD_LOGS/mariadb.out" >&2 || true
    die "mariadb did not come up (log: $FD_LOGS/mariadb.out)"
}

db_password() { # the slurmdbds' MariaDB password, made on first use
    if [[ ! -s $FD_DB_PASSFILE ]]; then
        (umask 077 && head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$FD_DB_PASSFILE.new")
        mv "$FD_DB_PASSFILE.new" "$FD_DB_PASSFILE"
    fi
    cat "$FD_DB_PASSFILE"
}

db_grant() { # DATABASE: create it and let the slurmdbd user in (idempotent; password from the file)
    local pw h
    pw=$(db_password)
    {
        printf "CREATE DATABASE IF NOT EXISTS \`%s\`;\n" "$1"
        # 127.0.0.1 is what slurmdbd's TCP connections match (skip-name-resolve); localhost
        # is the socket, for a person with the password
        for h in 127.0.0.1 localhost; do
            printf "CREATE USER IF NOT EXISTS '%s'@'%s';\n" "$FD_DB_USER" "$h"
            printf "ALTER USER '%s'@'%s' IDENTIFIED BY '%s';\n" "$FD_DB_USER" "$h" "$pw"
            printf "GRANT ALL ON \`%s\`.* TO '%s'@'%s';\n" "$1" "$FD_DB_USER" "$h"
        done
    } | mariadb --defaults-file="$FD_DB_CNF" || die "could not set up database $1 in mariadb"
}

slurmdbd_conf() { # DIR(as seen by slurmdbd) DBD_PORT DATABASE
    cat <<EOF
# Generated by flightdeck tests/testbed/up.sh: edits are overwritten.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$2
SlurmUser=root
DebugLevel=info
LogFile=$1/log/slurmdbd.log
PidFile=$1/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$FD_DB_PORT
StorageUser=$FD_DB_USER
StoragePass=$(db_password)
StorageLoc=$3
EOF
}

# start_slurmdbd CLUSTER RUNNER CONF(host path) DIR(host path) DIR(as seen) DBD_PORT DATABASE CMD...
# CMD... runs a command the cluster's way (env SLURM_CONF=..., or in the chroot); slurmdbd reads
# slurmdbd.conf from slurm.conf's folder, and sacctmgr (the readiness check) slurm.conf.
start_slurmdbd() {
    local c=$1 run=$2 conf=$3 d=$4 din=$5 port=$6 db=$7 name=$1-slurmdbd i
    shift 7
    # holds the password; slurmdbd insists on mode 600, owned by SlurmUser
    (umask 077 && slurmdbd_conf "$din" "$port" "$db" >"$conf.new")
    CONF_CHANGED=0
    install_if_changed "$conf.new" "$conf"
    adopt_pidfile "$name" "slurmdbd -D" "$d/run/slurmdbd.pid"
    if running_pid "$name" >/dev/null; then
        ((CONF_CHANGED)) || return 0
        log "$c slurmdbd config changed: restarting it (slurmctld reconnects)"
        stop_daemon "$name"
    fi
    db_grant "$db"
    port_open "$port" && die "port $port is taken by something else"
    log "starting $c slurmdbd on :$port"
    start_daemon "$name" "slurmdbd -D" "$@" /usr/sbin/slurmdbd -D
    STARTED=1
    for i in $(seq 120); do
        $run sacctmgr -n show cluster >/dev/null 2>&1 && return 0
        running_pid "$name" >/dev/null || break
        sleep 0.25
    done
    tail -n 30 "$d/log/slurmdbd.log" >&2 || true
    die "slurmdbd of $c did not come up (log: $d/log/slurmdbd.log, $FD_LOGS/$name.out)"
}

register_cluster() { # CLUSTER RUNNER: known to its slurmdbd before slurmctld first starts
    local c=$1 run=$2
    [[ -n $($run sacctmgr -n -P show cluster where name="$c" format=cluster) ]] && return 0
    log "registering cluster $c in its slurmdbd"
    $run sacctmgr -i add cluster "$c" >/dev/null || die "sacctmgr add cluster $c failed"
}

# Slurm 23.02+ keeps "NAME|ID" in the state's clustername file and will not start ("CLUSTER ID
# MISMATCH") when the database knows the cluster under another id: a state from before
# accounting (slurmctld made up an id), or a database made anew. Without the file slurmctld
# takes the database's id. The state is cleared at each start anyway (-c). 22.05 keeps no id.
# A QOS with a limit, for the "why pending" scenario of a QOS limit (tests/bed/why_live.rs): one
# GPU per user, for jobs that ask for it (--qos=fd-gpu1); root may use it.
LIMIT_QOS=fd-gpu1
add_limit_qos() { # CLUSTER RUNNER
    local c=$1 run=$2
    if [[ -z $($run sacctmgr -n -P show qos where name="$LIMIT_QOS" format=name) ]]; then
        log "$c: adding QOS $LIMIT_QOS (one GPU per user)"
        $run sacctmgr -i add qos "$LIMIT_QOS" MaxTRESPerUser=gres/gpu=1 >/dev/null ||
            die "sacctmgr add qos $LIMIT_QOS failed on $c"
    fi
    if ! $run sacctmgr -n -P show assoc where user=root cluster="$c" format=qos | grep -qw "$LIMIT_QOS"; then
        $run sacctmgr -i modify user root where cluster="$c" set qos+="$LIMIT_QOS" >/dev/null ||
            die "sacctmgr could not give root the QOS $LIMIT_QOS on $c"
    fi
}

drop_stale_cluster_id() { # CLUSTER STATE_DIR(host path) DATABASE
    local f=$2/clustername have want
    [[ -s $f ]] || return 0
    have=$(<"$f")
    [[ $have == *"|"* ]] || return 0
    have=${have#*|}
    want=$(mariadb --defaults-file="$FD_DB_CNF" -N -B -e \
        "SELECT id FROM \`$3\`.cluster_table WHERE name = '$1' AND deleted = 0" 2>/dev/null || true)
    [[ -n $want && $want != "$have" ]] || return 0
    log "$1: the state's cluster id is $have, the database's $want: removing $f"
    rm -f "$f"
}

# ---------------------------------------------------------------------------------------
# slurm daemons
stop_cluster() { # CLUSTER NODE...
    local c=$1
    shift
    stop_daemon "${@/#/$c-slurmd-}"
    stop_daemon "$c-slurmctld"
}

wait_ctld() { # CLUSTER RUNNER LOGFILE
    local i
    for i in $(seq 120); do
        $2 scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
        running_pid "$1-slurmctld" >/dev/null || break
        sleep 0.5
    done
    tail -n 30 "$3" >&2 || true
    die "slurmctld of $1 did not come up (log: $3)"
}

nodes_ready() { # RUNNER NODE...: every node listed and in a usable, responding state
    local run=$1 out n st s
    shift
    out=$($run sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
    for n; do
        st=$(awk -v n="$n" '$1 == n { print $2 }' <<<"$out")
        [[ -n $st ]] || return 1
        for s in $st; do
            [[ $s =~ ^(idle|mix|mixed|alloc|comp|drain|drng|drain|resv|maint|plnd)$ ]] || return 1
        done
    done
}

wait_nodes() { # CLUSTER RUNNER LOGDIR NODE...
    local c=$1 run=$2 logdir=$3 i
    shift 3
    for i in $(seq 180); do
        nodes_ready "$run" "$@" && return 0
        sleep 0.5
    done
    log "nodes of $c not ready after 90 s:"
    $run sinfo -N >&2 || true
    for f in "$logdir"/slurmctld.log "$logdir"/slurmd-*.log; do
        [[ -e $f ]] || continue
        echo "--- tail $f" >&2
        tail -n 15 "$f" >&2
    done
    die "nodes of $c did not become idle"
}

start_fd22() {
    local n changed
    CONF_CHANGED=0
    write_fd22_conf
    changed=$CONF_CHANGED
    start_slurmdbd fd22 fd22 "$FD22_DIR/etc/slurmdbd.conf" "$FD22_DIR" "$FD22_DIR" \
        "$FD22_DBD_PORT" "$FD22_DB" env SLURM_CONF="$FD22_CONF"
    if ((changed)) && running_pid fd22-slurmctld >/dev/null; then
        log "fd22 config changed: restarting its daemons"
        stop_cluster fd22 "${FD22_LIVE_NODES[@]}"
    fi
    if ! running_pid fd22-slurmctld >/dev/null; then
        register_cluster fd22 fd22
        log "starting fd22 slurmctld"
        start_daemon fd22-slurmctld "slurmctld -D -f $FD22_CONF" \
            env SLURM_CONF="$FD22_CONF" /usr/sbin/slurmctld -D -f "$FD22_CONF" -c
        STARTED=1
    fi
    wait_ctld fd22 fd22 "$FD22_DIR/log/slurmctld.log"
    add_limit_qos fd22 fd22
    usage_posix_users /
    usage_accounts fd22 fd22
    # a node that never registered stays "unk*" for ever: mark it down (state may come from
    # the saved state rather than slurm.conf)
    if [[ $(fd22 sinfo -h -n "$FD22_DEAD_NODE" -o %t | head -n1) != down* ]]; then
        fd22 scontrol update nodename="$FD22_DEAD_NODE" state=down reason="$DEAD_REASON"
    fi
    for n in "${FD22_LIVE_NODES[@]}"; do
        if ! running_pid "fd22-slurmd-$n" >/dev/null; then
            log "starting fd22 slurmd $n"
            start_daemon "fd22-slurmd-$n" "slurmd -D -f $FD22_CONF -N $n" \
                env SLURM_CONF="$FD22_CONF" /usr/sbin/slurmd -D -f "$FD22_CONF" -N "$n"
            STARTED=1
        fi
    done
}

start_fd24() {
    local n changed
    CONF_CHANGED=0
    write_fd24_conf
    changed=$CONF_CHANGED
    start_slurmdbd fd24 fd24 "$FD_CHROOT/etc/slurm/slurmdbd.conf" "$FD24_DIR" "$FD24_DIR_IN" \
        "$FD24_DBD_PORT" "$FD24_DB" "${FD_CHROOT_EXEC[@]}"
    if ((changed)) && running_pid fd24-slurmctld >/dev/null; then
        log "fd24 config changed: restarting its daemons"
        stop_cluster fd24 "${FD24_LIVE_NODES[@]}"
    fi
    if ! running_pid fd24-slurmctld >/dev/null; then
        register_cluster fd24 fd24
        drop_stale_cluster_id fd24 "$FD24_DIR/state" "$FD24_DB"
        log "starting fd24 slurmctld"
        start_daemon fd24-slurmctld "slurmctld -D -f $FD24_CONF_IN" \
            "${FD_CHROOT_EXEC[@]}" /usr/sbin/slurmctld -D -f "$FD24_CONF_IN" -c
        STARTED=1
    fi
    wait_ctld fd24 fd24 "$FD24_DIR/log/slurmctld.log"
    add_limit_qos fd24 fd24
    usage_posix_users "$FD_CHROOT"
    usage_accounts fd24 fd24
    for n in "${FD24_LIVE_NODES[@]}"; do
        if ! running_pid "fd24-slurmd-$n" >/dev/null; then
            log "starting fd24 slurmd $n"
            start_daemon "fd24-slurmd-$n" "slurmd -D -f $FD24_CONF_IN -N $n" \
                "${FD_CHROOT_EXEC[@]}" /usr/sbin/slurmd -D -f "$FD24_CONF_IN" -N "$n"
            STARTED=1
        fi
    done
}

# ---------------------------------------------------------------------------------------
# ssh login nodes
client_key() {
    [[ -s $FD_KEY ]] || ssh-keygen -q -t ed25519 -N '' -C flightdeck-testbed -f "$FD_KEY"
    chmod 600 "$FD_KEY"
}

# The test sshds read the test key from a file of their own (AuthorizedKeysFile), never from
# root's ~/.ssh/authorized_keys, which the machine's own sshd on port 22 also honours: a
# passwordless key there would open this machine to anyone holding the test key.
TESTBED_AUTHORIZED_KEYS=/etc/flightdeck-testbed/authorized_keys

authorize_key() { # ROOTPREFIX
    local ak=$1$TESTBED_AUTHORIZED_KEYS root_ak=$1/root/.ssh/authorized_keys
    mkdir -p "$(dirname "$ak")"
    chmod 755 "$(dirname "$ak")"
    cp "$FD_KEY.pub" "$ak.new"
    chmod 600 "$ak.new"
    mv "$ak.new" "$ak"
    # Earlier test beds wrote the key into root's own file: take back only that line.
    if [[ -f $root_ak ]] && grep -q ' flightdeck-testbed$' "$root_ak"; then
        log "removing the old test key from $root_ak"
        grep -v ' flightdeck-testbed$' "$root_ak" >"$root_ak.new" || true
        chmod 600 "$root_ak.new"
        mv "$root_ak.new" "$root_ak"
    fi
}

sshd_config() { # PORT HOSTKEY PIDFILE [extra lines...]
    local port=$1 key=$2 pid=$3
    shift 3
    cat <<EOF
# flightdeck test bed login node (generated by tests/testbed/up.sh)
Port $port
ListenAddress 127.0.0.1
HostKey $key
PidFile $pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile $TESTBED_AUTHORIZED_KEYS
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
MaxSessions 10
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
    local l
    for l; do echo "$l"; done
}

# start_sshd NAME PORT RUNNER CFG ROOTPREFIX PIDFILE LOGFILE CHANGED (paths as seen by sshd)
start_sshd() {
    local name=$1 port=$2 run=$3 cfg=$4 r=$5 pidf=$6 logf=$7 changed=$8 i
    # Adopt one started earlier whose bookkeeping got lost, but only if the pidfile's pid is
    # an sshd on this config: the chroot's /run is a plain directory that outlives a reboot,
    # and a stale pid there may now be any other process (then no sshd was started at all).
    adopt_pidfile "$name" "$cfg" "$r$pidf"
    if running_pid "$name" >/dev/null; then
        ((changed)) || return 0
        log "$name config changed: restarting"
        stop_daemon "$name"
    fi
    mkdir -p "$r/run/sshd"
    chmod 755 "$r/run/sshd"
    $run /usr/sbin/sshd -t -f "$cfg" || die "bad sshd config $r$cfg"
    port_open "$port" && die "port $port is taken by something else"
    log "starting sshd $name on 127.0.0.1:$port"
    rm -f "$r$pidf"
    $run /usr/sbin/sshd -f "$cfg" -E "$logf"
    for i in $(seq 50); do
        [[ -s $r$pidf ]] && port_open "$port" && break
        sleep 0.1
    done
    [[ -s $r$pidf ]] || die "sshd $name did not start (log: $r$logf)"
    record_pid "$name" "$cfg" "$r$pidf"
}

setup_sshd_fd22() {
    local d=$FD_SSH/fd22 changed=0
    mkdir -p "$d"
    [[ -s $d/ssh_host_ed25519_key ]] ||
        ssh-keygen -q -t ed25519 -N '' -C fd22-login -f "$d/ssh_host_ed25519_key"
    sshd_config "$FD22_SSH_PORT" "$d/ssh_host_ed25519_key" "$d/sshd.pid" \
        "# SHLVL=1: bash skips ~/.bashrc for ssh commands (the machine's pyenv init costs" \
        "# ~100 ms per command); interactive logins still read it" \
        "SetEnv SLURM_CONF=$FD22_CONF SHLVL=1" >"$d/sshd_config.new"
    CONF_CHANGED=0
    install_if_changed "$d/sshd_config.new" "$d/sshd_config"
    changed=$CONF_CHANGED
    start_sshd fd22-sshd "$FD22_SSH_PORT" host_run "$d/sshd_config" "" "$d/sshd.pid" \
        "$FD_LOGS/fd22-sshd.log" "$changed"
}

setup_sshd_fd24() {
    local r=$FD_CHROOT changed=0
    [[ -s $r/etc/ssh/ssh_host_ed25519_key ]] ||
        ssh-keygen -q -t ed25519 -N '' -C fd24-login -f "$r/etc/ssh/ssh_host_ed25519_key"
    sshd_config "$FD24_SSH_PORT" /etc/ssh/ssh_host_ed25519_key /run/sshd-fd24.pid \
        >"$r/etc/ssh/sshd_config_fd24.new"
    CONF_CHANGED=0
    install_if_changed "$r/etc/ssh/sshd_config_fd24.new" "$r/etc/ssh/sshd_config_fd24"
    changed=$CONF_CHANGED
    start_sshd fd24-sshd "$FD24_SSH_PORT" in_chroot /etc/ssh/sshd_config_fd24 "$r" \
        /run/sshd-fd24.pid /var/log/fd24-sshd.log "$changed"
}

write_client_files() {
    local kh=$FD_KNOWN_HOSTS.new
    {
        printf '[127.0.0.1]:%s %s\n' "$FD22_SSH_PORT" \
            "$(cut -d' ' -f1,2 "$FD_SSH/fd22/ssh_host_ed25519_key.pub")"
        printf '[127.0.0.1]:%s %s\n' "$FD24_SSH_PORT" \
            "$(cut -d' ' -f1,2 "$FD_CHROOT/etc/ssh/ssh_host_ed25519_key.pub")"
    } >"$kh"
    install_if_changed "$kh" "$FD_KNOWN_HOSTS"

    local c port toml=$FD_ROOT/flightdeck.toml.new
    : >"$toml"
    for c in fd22 fd24; do
        port=$FD22_SSH_PORT
        [[ $c == fd24 ]] && port=$FD24_SSH_PORT
        [[ -s $toml ]] && echo >>"$toml"
        cat >>"$toml" <<EOF
[[cluster]]
name = "$c"
kind = "slurm"
host = "127.0.0.1"
port = $port
user = "root"
identity_file = "$FD_KEY"
known_hosts = "strict"
known_hosts_file = "$FD_KNOWN_HOSTS"
refresh_seconds = 2
EOF
    done
    install_if_changed "$toml" "$FD_ROOT/flightdeck.toml"

    # command wrappers: $FD_BIN/fd22 squeue ...   $FD_BIN/fd24 squeue ...
    cat >"$FD_BIN/fd22.new" <<EOF
#!/bin/sh
# run a command (slurm CLI) against test-bed cluster fd22 (Slurm 22.05 on the host)
SLURM_CONF=$FD22_CONF exec "\$@"
EOF
    cat >"$FD_BIN/fd24.new" <<EOF
#!/bin/sh
# run a command (slurm CLI) inside the Debian 13 chroot of test-bed cluster fd24 (Slurm 24.11),
# in /tmp, with a clean environment
exec env -i PATH=$FD_STD_PATH HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 \\
    chroot $FD_CHROOT /bin/sh -c 'cd /tmp 2>/dev/null || cd /; exec "\$@"' fd24 "\$@"
EOF
    install_if_changed "$FD_BIN/fd22.new" "$FD_BIN/fd22"
    install_if_changed "$FD_BIN/fd24.new" "$FD_BIN/fd24"
    chmod 755 "$FD_BIN/fd22" "$FD_BIN/fd24"

    local v22 v24 n22 n24
    n22=$(IFS=,; echo "${FD22_LIVE_NODES[*]}")
    n24=$(IFS=,; echo "${FD24_LIVE_NODES[*]}")
    v22=$(fd22 scontrol --version | awk '{print $2}')
    v24=$(fd24 scontrol --version | awk '{print $2}')
    cat >"$FD_ROOT/env.new" <<EOF
# flightdeck Slurm test bed (generated by tests/testbed/up.sh); shell KEY=value lines
FD_TESTBED_ROOT=$FD_ROOT
FD_TESTBED_CONFIG=$FD_ROOT/flightdeck.toml
FD_TESTBED_KEY=$FD_KEY
FD_TESTBED_KNOWN_HOSTS=$FD_KNOWN_HOSTS
FD_TESTBED_CHROOT=$FD_CHROOT
FD_TESTBED_WORKDIR=$FD_WORKDIR
FD22_SSH_PORT=$FD22_SSH_PORT
FD24_SSH_PORT=$FD24_SSH_PORT
FD22_SLURMCTLD_PORT=$FD22_CTLD_PORT
FD24_SLURMCTLD_PORT=$FD24_CTLD_PORT
FD22_SLURMDBD_PORT=$FD22_DBD_PORT
FD24_SLURMDBD_PORT=$FD24_DBD_PORT
FD22_ACCOUNTING_DB=$FD22_DB
FD24_ACCOUNTING_DB=$FD24_DB
FD_TESTBED_MARIADB_PORT=$FD_DB_PORT
FD_TESTBED_MARIADB_SOCKET=$FD_DB_SOCK
FD22_SLURM_VERSION=$v22
FD24_SLURM_VERSION=$v24
FD22_SLURM_CONF=$FD22_CONF
FD24_SLURM_CONF=$FD24_CONF_IN
FD24_SLURM_CONF_HOST=$FD_CHROOT$FD24_CONF_IN
FD22_NODES=$n22,$FD22_DEAD_NODE
FD22_DEAD_NODE=$FD22_DEAD_NODE
FD24_NODES=$n24
FD22_RUN=$FD_BIN/fd22
FD24_RUN=$FD_BIN/fd24
FD22_RUN_CMD="env SLURM_CONF=$FD22_CONF"
FD24_RUN_CMD="chroot $FD_CHROOT"
FD22_JOB_OUTPUT_DIR=$FD_WORKDIR
FD24_JOB_OUTPUT_DIR=$FD_CHROOT$FD_WORKDIR
EOF
    install_if_changed "$FD_ROOT/env.new" "$FD_ROOT/env"
}

# The stand-in nvidia-smi (tests/testbed/nvidia-smi) at the same path on the host and in the
# chroot, where srun steps of either cluster run it; never on PATH, so this machine does not
# look like a GPU box. Replaced only when it changed.
install_nvidia_smi() {
    local r dest
    for r in "" "$FD_CHROOT"; do
        dest=$r$FD_BIN/nvidia-smi
        mkdir -p "$(dirname "$dest")"
        if ! cmp -s "$HERE/nvidia-smi" "$dest"; then
            cp "$HERE/nvidia-smi" "$dest.new"
            chmod 755 "$dest.new"
            mv "$dest.new" "$dest"
            log "installed the stand-in nvidia-smi as $dest"
        fi
    done
}

ssh_check() { # PORT EXPECTED_VERSION_PREFIX
    local out
    out=$(ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes \
        -o UserKnownHostsFile="$FD_KNOWN_HOSTS" -o IdentitiesOnly=yes -i "$FD_KEY" \
        -o ConnectTimeout=10 -p "$1" root@127.0.0.1 scontrol --version 2>&1) ||
        die "ssh to 127.0.0.1:$1 failed: $out"
    [[ $out == *" $2"* ]] || die "ssh 127.0.0.1:$1 scontrol --version said '$out', want $2"
    log "ssh 127.0.0.1:$1 ok: $out"
}

smoke() { # CLUSTER RUNNER GPUTYPE HOST_DIR_OF_/tmp
    local c=$1 run=$2 gpu=$3 dir=$4 j1 j2 i s1 s2 acct
    j1=$($run sbatch --parsable -D /tmp -J fd-smoke -o '/tmp/fd-smoke-%j.out' \
        --wrap 'sleep 1; echo ok')
    # shellcheck disable=SC2016
    j2=$($run sbatch --parsable -D /tmp -J fd-smoke-gpu --gres="gpu:$gpu:1" \
        -o '/tmp/fd-smoke-%j.out' --wrap 'echo "gpus=$CUDA_VISIBLE_DEVICES"')
    for i in $(seq 120); do
        s1=$($run squeue -h -t all -j "$j1" -o %T 2>/dev/null || true)
        s2=$($run squeue -h -t all -j "$j2" -o %T 2>/dev/null || true)
        [[ $s1 == COMPLETED && $s2 == COMPLETED ]] && break
        [[ $s1 =~ FAIL|CANCEL|TIMEOUT|NODE_FAIL || $s2 =~ FAIL|CANCEL|TIMEOUT|NODE_FAIL ]] && break
        sleep 0.5
    done
    [[ $s1 == COMPLETED && $s2 == COMPLETED ]] ||
        die "$c smoke jobs $j1/$j2 ended as '$s1'/'$s2'"
    grep -qx ok "$dir/fd-smoke-$j1.out" || die "$c: $dir/fd-smoke-$j1.out lacks 'ok'"
    grep -q '^gpus=0' "$dir/fd-smoke-$j2.out" || die "$c: GPU job output: $(cat "$dir/fd-smoke-$j2.out")"
    rm -f "$dir/fd-smoke-$j1.out" "$dir/fd-smoke-$j2.out"
    # accounting: both in sacct (their states within ~0.2 s of the end, measured), the GPU in
    # AllocTRES
    for i in $(seq 50); do
        acct=$($run sacct -X -n -P -j "$j1,$j2" -o JobID,State,AllocTRES 2>/dev/null || true)
        [[ $acct == *"$j1|COMPLETED|"*"$j2|COMPLETED|"*gres/gpu=1* ]] && break
        sleep 0.2
    done
    [[ $acct == *"$j1|COMPLETED|"*"$j2|COMPLETED|"*gres/gpu=1* ]] ||
        die "$c: sacct does not show the smoke jobs as completed: '$acct'"
    log "$c smoke ok: job $j1 and GPU job $j2 ($gpu) completed, and in sacct"
}

# =======================================================================================
phase "flightdeck test bed: up"
if [[ ! -e $FD_CHROOT/.fd-debootstrap-done ]] ||
    [[ -n $(missing_pkgs --admindir "$FD_CHROOT/var/lib/dpkg" "${CHROOT_PKGS[@]}") ]]; then
    host_install debootstrap
    debian_mirror >/dev/null # fail early and visibly
    phase "building the Debian 13 chroot in the background (log: $FD_LOGS/chroot-build.log)"
    (build_chroot) >"$FD_LOGS/chroot-build.log" 2>&1 &
    CHROOT_JOB=$!
fi

host_install "${HOST_PKGS[@]}"
phase "host packages ready"
start_munge "" host_run munge-host
start_mariadb # before the slurmdbds, which come before the slurmctlds (start_fd22, start_fd24)
# plain `sinfo` on the host (and over ssh) talks to fd22
mkdir -p /etc/slurm
if [[ ! -e /etc/slurm/slurm.conf || -L /etc/slurm/slurm.conf ]]; then
    ln -sfn "$FD22_CONF" /etc/slurm/slurm.conf
fi
start_fd22
client_key
authorize_key ""
setup_sshd_fd22

if [[ -n $CHROOT_JOB ]]; then
    if ! wait "$CHROOT_JOB"; then
        tail -n 40 "$FD_LOGS/chroot-build.log" >&2
        CHROOT_JOB=
        die "building the chroot failed (log: $FD_LOGS/chroot-build.log)"
    fi
    CHROOT_JOB=
    phase "chroot ready"
else
    build_chroot # quick: mounts, hosts, resolv.conf
fi
start_munge "$FD_CHROOT" in_chroot munge-fd24
start_fd24
authorize_key "$FD_CHROOT"
setup_sshd_fd24

wait_nodes fd22 fd22 "$FD22_DIR/log" "${FD22_LIVE_NODES[@]}"
phase "fd22 nodes up"
wait_nodes fd24 fd24 "$FD24_DIR/log" "${FD24_LIVE_NODES[@]}"
phase "fd24 nodes up"

write_client_files
install_nvidia_smi
ssh_check "$FD22_SSH_PORT" 22.05
ssh_check "$FD24_SSH_PORT" 24.11

if [[ ${FD_TESTBED_SMOKE:-} == 1 || (${FD_TESTBED_SMOKE:-} != 0 && $STARTED == 1) ]]; then
    smoke fd22 fd22 a100 /tmp &
    s22=$!
    smoke fd24 fd24 l40s "$FD_CHROOT/tmp" &
    s24=$!
    wait "$s22" || die "fd22 smoke test failed"
    wait "$s24" || die "fd24 smoke test failed"
fi

dead_state=$(fd22 sinfo -h -n "$FD22_DEAD_NODE" -o %t 2>/dev/null | head -n1 || true)
phase "test bed up: fd22 ($(fd22 scontrol --version)) ssh :$FD22_SSH_PORT," \
    "fd24 ($(fd24 scontrol --version)) ssh :$FD24_SSH_PORT; $FD22_DEAD_NODE is '$dead_state';" \
    "config $FD_ROOT/flightdeck.toml, env $FD_ROOT/env"
