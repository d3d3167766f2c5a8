#!/bin/bash
# path.sh up | down | netem NETEM-ARGS... | clear
#
# A RoCE path that crosses a netdev inside the soft-RoCE VM, so that tc netem can lose and
# delay CM messages (rxe0 on dummy0 loops every packet inside the rxe device: nothing to shape).
#
#   rxea on va 10.1.0.1/24  <== veth ==>  rxeb on vb 10.1.0.2/24     (both in the init netns)
#
# Why one namespace and policy routing rather than two namespaces: Linux 6.1's rdma_rxe opens
# its RoCEv2 UDP socket (port 4791) in init_net only and routes its packets there, so an rxe on
# a veth end moved into another netns never receives anything (README.md in this folder). In
# one namespace both addresses are local, and the kernel would deliver 10.1.0.1 -> 10.1.0.2
# through lo (rxe drops what arrives on lo); so the local table moves below two rules that send
# locally generated traffic for the other end out of the veth, and accept_local lets the other
# end take packets whose source is one of our own addresses.
set -euo pipefail
A=10.1.0.1
B=10.1.0.2

wait_active() {
  local i
  for i in $(seq 100); do
    rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
    sleep 0.05
  done
  echo "path.sh: $1 did not become ACTIVE" >&2
  return 1
}

case "${1:-}" in
  up)
    ip link add va type veth peer name vb
    ip addr add $A/24 dev va
    ip addr add $B/24 dev vb
    ip link set va up
    ip link set vb up
    ip rule add pref 1000 lookup local
    ip rule del pref 0 lookup local
    ip rule add pref 10 iif lo to $B lookup 101
    ip rule add pref 11 iif lo to $A lookup 102
    ip route add $B dev va src $A table 101
    ip route add $A dev vb src $B table 102
    for d in all va vb; do
      echo 1 >/proc/sys/net/ipv4/conf/$d/accept_local
      echo 0 >/proc/sys/net/ipv4/conf/$d/rp_filter
    done
    rdma link add rxea type rxe netdev va
    rdma link add rxeb type rxe netdev vb
    wait_active rxea
    wait_active rxeb
    ;;
  down)
    # Best effort: leave the VM as it booted for the tests that follow.
    rdma link delete rxea 2>/dev/null || true
    rdma link delete rxeb 2>/dev/null || true
    ip link del va 2>/dev/null || true
    ip rule del pref 10 2>/dev/null || true
    ip rule del pref 11 2>/dev/null || true
    ip rule add pref 0 lookup local 2>/dev/null || true
    ip rule del pref 1000 2>/dev/null || true
    ;;
  netem)
    shift
    tc qdisc replace dev va root netem "$@"
    tc qdisc replace dev vb root netem "$@"
    ;;
  clear)
    tc qdisc del dev va root 2>/dev/null || true
    tc qdisc del dev vb root 2>/dev/null || true
    ;;
  *)
    echo "usage: $0 up | down | netem NETEM-ARGS... | clear" >&2
    exit 2
    ;;
esac
