#!/usr/bin/env bash
# Two users in two accounts on both clusters, for the usage scenario (tests/bed/usage_live.rs):
# fd-alice in account fd-physics, fd-bob in fd-biology. Login users on the host (fd22) and in
# the chroot (fd24) with the same fixed uids, no home, no login shell (jobs are submitted for
# them by root with runuser); their Slurm accounts and associations on each cluster. Only adds
# what is missing: idempotent, and safe on a bed that is running (nothing is restarted).
# Sourced by up.sh once both clusters answer; run alone (as root) it provisions a running bed.

# shellcheck shell=bash
USAGE_USERS=("fd-alice:61001:fd-physics" "fd-bob:61002:fd-biology")

usage_posix_users() { # ROOT(/ or the chroot)
    local root=$1 entry name uid have
    for entry in "${USAGE_USERS[@]}"; do
        IFS=: read -r name uid _ <<<"$entry"
        have=$(chroot "$root" getent passwd "$name" | cut -d: -f3 || true)
        [[ $have == "$uid" ]] && continue
        [[ -n $have ]] && die "$name exists in $root with uid $have, not $uid"
        [[ -n $(chroot "$root" getent passwd "$uid" || true) ]] && die "uid $uid is taken in $root"
        log "adding user $name (uid $uid) in $root"
        chroot "$root" useradd --uid "$uid" --user-group --no-create-home --home-dir /tmp \
            --shell /usr/sbin/nologin "$name" || die "useradd $name failed in $root"
    done
}

usage_accounts() { # CLUSTER RUNNER
    local c=$1 run=$2 entry name account
    for entry in "${USAGE_USERS[@]}"; do
        IFS=: read -r name _ account <<<"$entry"
        [[ -n $($run sacctmgr -n -P show assoc where cluster="$c" account="$account" user="$name" format=user) ]] &&
            continue
        log "$c: adding account $account and its user $name"
        if [[ -z $($run sacctmgr -n -P show assoc where cluster="$c" account="$account" format=account) ]]; then
            $run sacctmgr -i add account "$account" cluster="$c" description="flightdeck test bed" \
                organization=flightdeck >/dev/null || die "sacctmgr add account $account failed on $c"
        fi
        $run sacctmgr -i add user "$name" account="$account" cluster="$c" >/dev/null ||
            die "sacctmgr add user $name failed on $c"
    done
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    HERE=$(cd "$(dirname "$0")" && pwd)
    # shellcheck source=lib.sh
    . "$HERE/lib.sh"
    [[ $(id -u) == 0 ]] || die "run as root"
    usage_posix_users /
    usage_posix_users "$FD_CHROOT"
    usage_accounts fd22 fd22
    usage_accounts fd24 fd24
fi
