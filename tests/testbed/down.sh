#!/usr/bin/env bash
# Stop everything tests/testbed/up.sh started (both login sshds, both Slurm clusters with their
# running job steps, both slurmdbds and the MariaDB behind them, both mungeds) and unmount the
# chroot's mounts. Installed packages, the chroot, keys, configs, Slurm state and the accounting
# database stay, so the next up.sh is fast. Idempotent.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
[[ $EUID -eq 0 ]] || die "run as root"

# 0. the dstack server (tests/testbed/dstack.sh)
bash "$HERE/dstack.sh" stop

# 1. login nodes
stop_daemon fd22-sshd fd24-sshd
if [[ -s $FD_SSH/fd22/sshd.pid ]]; then # bookkeeping lost
    p=$(<"$FD_SSH/fd22/sshd.pid")
    if [[ $(cmdline_of "$p") == *"$FD_SSH/fd22/sshd_config"* ]]; then stop_pid "$p"; fi
fi

# 2. slurm: slurmds, then running job steps (slurmstepd and the job processes below them),
#    then the controllers
slurmds=()
for f in "$FD_PIDS"/fd22-slurmd-*.pid "$FD_PIDS"/fd24-slurmd-*.pid; do
    [[ -e $f ]] && slurmds+=("$(basename "$f" .pid)")
done
((${#slurmds[@]} == 0)) || stop_daemon "${slurmds[@]}"
for p in $(pgrep -x slurmstepd || true); do
    r=$(readlink "/proc/$p/root" 2>/dev/null || true)
    [[ $r == / || $r == "$FD_CHROOT" ]] || continue
    mapfile -t step_pids < <(echo "$p"; descendants "$p")
    log "killing job step $(cmdline_of "$p")(pids ${step_pids[*]})"
    kill -KILL "${step_pids[@]}" 2>/dev/null || true
done
stop_daemon fd22-slurmctld fd24-slurmctld

# 3. the slurmdbds, after the controllers (which send them their last job records)
stop_daemon fd22-slurmdbd fd24-slurmdbd

# 4. munge, and the MariaDB behind the slurmdbds (together: neither needs the other)
stop_daemon mariadb munge-fd24 munge-host
if [[ -s $FD_DB_PIDFILE ]]; then # a mariadbd whose bookkeeping got lost
    p=$(<"$FD_DB_PIDFILE")
    if [[ $(cmdline_of "$p") == *"mariadbd --defaults-file=$FD_DB_CNF"* ]]; then stop_pid "$p"; fi
fi
if [[ -s /run/munge/munged.pid ]]; then # a host munged whose bookkeeping got lost
    p=$(</run/munge/munged.pid)
    if [[ $(cmdline_of "$p") == *munged* ]]; then stop_pid "$p"; fi
fi

# 5. anything else still running inside the chroot (left-overs whose pid files were lost)
if [[ -d $FD_CHROOT ]]; then
    for d in /proc/[0-9]*; do
        [[ $(readlink "$d/root" 2>/dev/null || true) == "$FD_CHROOT" ]] || continue
        p=${d#/proc/}
        log "stopping left-over chroot process $p: $(cmdline_of "$p")"
        stop_pid "$p"
    done
    unmount_chroot
    left=$(chroot_mounts)
    [[ -z $left ]] || die "still mounted: $left"
fi
# 6. the SkyPilot API server (its venv, HOME and catalog stay)
bash "$HERE/skypilot.sh" stop
rm -f "$FD_PIDS"/*.pid "$FD_PIDS"/*.tag 2>/dev/null || true
log "test bed down"
