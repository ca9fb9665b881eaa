#!/usr/bin/env bash
# A cluster of N "hosts" on this machine for multi-host MPI runs: N network
# namespaces joined by veth pairs to a bridge that lives in a namespace of
# its own, addresses 10.77.0.1 .. 10.77.0.N/24, optionally a rate limit and
# delay (tc netem) on every host's link. Needs root.
#   scripts/netns_cluster.sh up N [--rate 1gbit] [--delay 1ms] [--name PREFIX]
#   scripts/netns_cluster.sh down [--name PREFIX]
#   scripts/netns_cluster.sh exec I [--name PREFIX] -- CMD...   # CMD inside host I
#
# `up` writes the state folder /run/gpt2lab-netns/PREFIX/ with:
#   hostfile   the hosts' addresses, one slot each (mpirun --hostfile)
#   hosts      "ADDRESS NAMESPACE" per host, read by scripts/netns_rsh.sh
#   rsh        Open MPI's remote shell for these hosts (scripts/netns_rsh.sh)
#   mpirun     the mpirun options that launch there (without ssh); use as
#              `scripts/netns_cluster.sh exec 0 -- mpirun $(cat .../mpirun) ...`
# The namespaces have no route anywhere else: no default route, no NAT, no
# link to a real interface; the bridge is not in the host's namespace. Names
# start with PREFIX (default gpt2lab; tests use one with their pid) so that
# concurrent clusters do not collide. `down` kills whatever still runs in
# them and deletes them and the state folder; it is safe to run twice.
set -euo pipefail

SUBNET=10.77.0
STATE_ROOT=/run/gpt2lab-netns

usage() {
  sed -n '2,20p' "$0" >&2
  exit 2
}

die() {
  echo "netns_cluster: $*" >&2
  exit 1
}

# up N RATE DELAY PREFIX
up() {
  local n=$1 rate=$2 delay=$3 prefix=$4 state=$STATE_ROOT/$4 bridge_ns=$4-br
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 200)); then die "N must be 1..200, got '$n'"; fi
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  [ ! -e "$state" ] || die "cluster '$prefix' exists ($state): run '$0 down --name $prefix' first"
  mkdir -p "$state"
  # A cluster half made is taken down again.
  trap 'down "$prefix"' EXIT
  ip netns add "$bridge_ns"
  ip -n "$bridge_ns" link add br0 type bridge
  ip -n "$bridge_ns" link set br0 up
  : >"$state/hostfile"
  : >"$state/hosts"
  local i ns addr
  for ((i = 0; i < n; ++i)); do
    ns=$prefix-$i
    addr=$SUBNET.$((i + 1))
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$bridge_ns" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$bridge_ns" link set "p$i" master br0 up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    # A peer cut off makes TCP retransmit for 15 minutes by default
    # (tcp_retries2 = 15) before a connection fails; 4 fails it after about
    # 6 s (0.2 s doubling 5 times), so that Open MPI sees a lost host
    # instead of waiting on it.
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=4
    shape "$ns" "$rate" "$delay"
    echo "$addr slots=1" >>"$state/hostfile"
    echo "$addr $ns" >>"$state/hosts"
  done
  mpirun_options "$state" >"$state/mpirun"
  trap - EXIT
  echo "netns_cluster: $n hosts $SUBNET.1-$n (rate ${rate:-unlimited}, delay ${delay:-0}), state in $state"
}

# Every host's egress: the rate of its network card (a token bucket), and
# a one-way delay (netem, under the bucket). The bucket holds 5 ms of the
# rate: at least one timer tick's worth, or the bucket could not reach the
# rate. netem's queue holds 1000 packets by default, too few at 10 Gbit/s
# with a delay (drops would show as retransmits instead of a rate).
shape() {
  local ns=$1 rate=$2 delay=$3 parent=root bits
  if [ -n "$rate" ]; then
    bits=$(rate_bits "$rate")
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: tbf rate "$rate" burst $((bits / 8 / 200)) latency 100ms
    parent="parent 1:1"
  fi
  if [ -n "$delay" ]; then
    # shellcheck disable=SC2086  # "parent 1:1" is two words
    ip netns exec "$ns" tc qdisc add dev eth0 $parent handle 10: netem delay "$delay" limit 100000 ||
      die "cannot add a delay: this kernel lacks the netem qdisc (sch_netem); run without --delay"
  fi
}

# "10gbit" -> 10000000000 (tc's units: kbit, mbit, gbit; bit).
rate_bits() {
  [[ $1 =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "--rate must be like 100mbit, 1gbit or 10gbit, got '$1'"
  local n=${BASH_REMATCH[1]}
  case ${BASH_REMATCH[2]} in
    bit) echo "$n" ;;
    kbit) echo $((n * 1000)) ;;
    mbit) echo $((n * 1000000)) ;;
    gbit) echo $((n * 1000000000)) ;;
  esac
}

# Open MPI over TCP on the hosts' link only: rsh through our agent (no ssh),
# out-of-band and data traffic on the cluster subnet, no shared memory.
# Keepalives on mpirun's links to its daemons: a host that is cut off is
# declared lost after 10 + 3 x 2 s idle instead of 300 + 9 x 20 s, so that
# mpirun ends the job instead of waiting for a daemon it cannot reach.
mpirun_options() {
  local here
  here=$(cd "$(dirname "$0")" && pwd)
  printf '#!/bin/sh\nGPT2LAB_NETNS_HOSTS=%s/hosts exec %s/netns_rsh.sh "$@"\n' "$1" "$here" >"$1/rsh"
  chmod +x "$1/rsh"
  echo "--allow-run-as-root --hostfile $1/hostfile" \
    "--mca plm_rsh_agent $1/rsh --mca plm_rsh_no_tree_spawn 1" \
    "--mca btl tcp,self --mca btl_tcp_if_include $SUBNET.0/24 --mca oob_tcp_if_include $SUBNET.0/24" \
    "--mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3"
}

down() {
  local prefix=$1 ns pids
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$prefix-([0-9]+|br)\$" || true); do
    pids=$(ip netns pids "$ns" || true)
    # shellcheck disable=SC2086  # a list of pids
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "${STATE_ROOT:?}/$prefix"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
n="" rate="" delay="" prefix=gpt2lab host=""
case $cmd in
  up) n=${1:-}; shift || true ;;
  exec) host=${1:-}; shift || true ;;
  down) ;;
  *) usage ;;
esac
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --name) prefix=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[[ $prefix =~ ^[A-Za-z0-9_]{1,12}$ ]] || die "--name must be 1-12 letters, digits or _, got '$prefix'"
case $cmd in
  up) up "$n" "$rate" "$delay" "$prefix" ;;
  down) down "$prefix" ;;
  exec)
    [ $# -gt 0 ] || usage
    ip netns list | grep -q "^$prefix-$host\b" || die "no host $host in cluster '$prefix' (run '$0 up N' first)"
    # The hosts' own names (UTS namespace), as on separate machines.
    # shellcheck disable=SC2016  # expanded by the inner shell
    exec ip netns exec "$prefix-$host" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$prefix-$host" "$@"
    ;;
esac
