#!/usr/bin/env bash
# Open MPI's remote shell for the hosts of scripts/netns_cluster.sh: runs a
# command "on" a host by entering its network namespace instead of ssh.
#   netns_rsh.sh HOST COMMAND...     (as --mca plm_rsh_agent; HOST an address)
# GPT2LAB_NETNS_HOSTS names the cluster's "ADDRESS NAMESPACE" file. Like
# ssh, the words of COMMAND are joined and run by a shell; the host gets its
# own host name (a UTS namespace), as a separate machine has.
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
hosts=${GPT2LAB_NETNS_HOSTS:?netns_rsh: GPT2LAB_NETNS_HOSTS is not set (use the mpirun options of netns_cluster.sh up)}
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "$hosts")
[ -n "$ns" ] || { echo "netns_rsh: host '$host' is not in $hosts" >&2; exit 255; }
# shellcheck disable=SC2016  # expanded by the inner shell
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0"; exec sh -c "$1"' "$ns" "$*"
