#!/usr/bin/env bash
# Usage: kill-ssh.sh fd22|fd24
# Simulates a dropped SSH link to a cluster's login node: SIGKILLs the per-connection sshd
# processes (the children of the listening sshd, e.g. "sshd: root [priv]" / "sshd: root@notty",
# or "sshd-session" on OpenSSH 10) of that cluster's test-bed sshd. The listener stays up, so
# reconnecting works at once. Commands that were running remotely are not killed by this script.
# Prints "killed N connection(s) ..." (N may be 0). Exit 2 on bad usage, 1 if the sshd is down.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

case ${1:-} in
fd22 | fd24) cluster=$1 ;;
*)
    echo "usage: $0 fd22|fd24" >&2
    exit 2
    ;;
esac
[[ $EUID -eq 0 ]] || die "run as root"
listener=$(running_pid "$cluster-sshd") || die "the login sshd of $cluster is not running"

victims=()
conns=0
for child in $(pgrep -P "$listener" || true); do
    conns=$((conns + 1))
    victims+=("$child")
    for d in $(descendants "$child"); do
        # only the sshd processes of the connection, not the user's commands below them
        [[ $(cat "/proc/$d/comm" 2>/dev/null || true) =~ ^sshd ]] && victims+=("$d")
    done
done
if ((${#victims[@]})); then
    kill -KILL "${victims[@]}" 2>/dev/null || true
fi
echo "killed $conns connection(s) to the $cluster login node (pids: ${victims[*]:-none})"
