#!/usr/bin/env bash
# rails-pairing.sh LINKS1 LINKS2 IDS1 IDS2 [COMM]: from two nodes' `rdma link show` and
# `rdma resource show cm_id` (files, taken while a job held its connections), checks that every
# connection of COMM (default wireup_a2a) has both ends on one link, whatever the devices are
# called: each established id's device sits on the netdev whose subnet holds the id's source and
# destination addresses (the pair's eth0 = 10.0.1.0/24, eth1 = 10.0.2.0/24), and each id whose
# peer is on the other node has that peer's id there, addresses crossed, on the same netdev.
# Prints one line per (node, device, netdev) with its connections, and the pairs across; exit 1
# with a sentence per violation.
set -euo pipefail
L1=${1:?usage: rails-pairing.sh LINKS1 LINKS2 IDS1 IDS2 [COMM]} L2=${2:?} I1=${3:?} I2=${4:?}
COMM=${5:-wireup_a2a}
awk -v comm="$COMM" '
  # rdma link show: "link rxe1/1 state ACTIVE physical_state LINK_UP netdev eth0"
  FNR == 1 { file++ }
  file <= 2 && $1 == "link" {
    dev = $2; sub(/\/.*/, "", dev)
    for (i = 3; i < NF; i++) if ($i == "netdev") netdev[file, dev] = $(i + 1)
    next
  }
  # rdma resource show cm_id: "link rxe0/1 cm-idn 5 lqpn 17 qp-type RC state CONNECT ps TCP pid 9
  # comm wireup_a2a src-addr 10.0.1.1:40001 dst-addr 10.0.1.2:39999"
  file > 2 && $1 == "link" && / state CONNECT / && index($0, " comm " comm " ") {
    node = file - 2
    dev = $2; sub(/\/.*/, "", dev)
    src = dst = ""
    for (i = 3; i < NF; i++) { if ($i == "src-addr") src = $(i + 1); if ($i == "dst-addr") dst = $(i + 1) }
    n = ++ids[node]
    id_dev[node, n] = dev; id_src[node, n] = src; id_dst[node, n] = dst
    by_ends[node, src, dst] = n
  }
  function subnet(a) { sub(/:[0-9]+$/, "", a); sub(/\.[0-9]+$/, "", a); return a }
  function host(a) { sub(/:[0-9]+$/, "", a); return a }
  function link_subnet(nd) { return nd == "eth0" ? "10.0.1" : nd == "eth1" ? "10.0.2" : "?" }
  END {
    bad = 0
    for (node = 1; node <= 2; node++) {
      if (ids[node] == 0) { print "rails-pairing: FAILED: node " node " has no established " comm " id"; bad++ }
      for (n = 1; n <= ids[node]; n++) {
        dev = id_dev[node, n]; nd = netdev[node, dev]; src = id_src[node, n]; dst = id_dst[node, n]
        count[node, dev " on " nd]++
        if (subnet(src) != link_subnet(nd) || subnet(dst) != link_subnet(nd)) {
          print "rails-pairing: FAILED: node " node ": an id on " dev " (netdev " nd ") from " src " to " dst; bad++
        }
        if (node == 1 && host(dst) ~ /\.2$/) {
          across++
          m = by_ends[2, dst, src]
          if (m == "") { print "rails-pairing: FAILED: node 1 " dev " " src " -> " dst ": no id on node 2 with the addresses crossed"; bad++; continue }
          nd2 = netdev[2, id_dev[2, m]]
          if (nd2 != nd) { print "rails-pairing: FAILED: node 1 " dev " (" nd ") paired with node 2 " id_dev[2, m] " (" nd2 ")"; bad++ }
          pairs[dev " (" nd ") <-> node 2 " id_dev[2, m] " (" nd2 ")"]++
        }
      }
    }
    for (k in count) { split(k, p, SUBSEP); print "rails-pairing: node " p[1] ": " p[2] ": " count[k] " connections" }
    for (k in pairs) print "rails-pairing: across the link: node 1 " k ": " pairs[k] " connections"
    print "rails-pairing: " across + 0 " connections from node 1 to node 2, " bad " problems"
    exit (bad > 0 ? 1 : 0)
  }' "$L1" "$L2" "$I1" "$I2"
