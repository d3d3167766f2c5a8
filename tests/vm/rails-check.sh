#!/usr/bin/env bash
# Inside a guest booted with two rails (scripts/vm/run.sh --rails 2: rxe0 on dummy0 =
# 10.0.0.1/24, rxe1 on dummy1 = 10.0.2.1/24). Run from the build directory.
#   rails-check.sh BUILD_DIR
# Checks, each failing with one sentence: both devices ACTIVE on their own netdev; wireup_info
# takes both as the rail set (unplaced soft devices, each its own card); connections on the
# second rail's device carry every verb from both sides (the engine's data-plane cases and the
# conformance connect cases on rxe1's address); a context asked for two rails refuses, naming
# the key, rather than quietly using one.
set -euo pipefail
B=${1:?usage: rails-check.sh BUILD_DIR}
cd "$B"
fail() { echo "rails-check: FAILED: $*"; exit 1; }

links=$(rdma link show)
echo "$links"
for r in "rxe0/1 state ACTIVE .*netdev dummy0" "rxe1/1 state ACTIVE .*netdev dummy1"; do
  grep -Eq "$r" <<<"$links" || fail "no '$r' in rdma link show"
done

info=$(./tools/wireup_info --rails 2 --local-rank 0)
grep -A4 '^rails:' <<<"$info"
grep -Eq '^  rail 0: +rxe0 +unplaced +card rxe0$' <<<"$info" || fail "wireup_info --rails 2: rail 0 is not rxe0"
grep -Eq '^  rail 1: +rxe1 +unplaced +card rxe1$' <<<"$info" || fail "wireup_info --rails 2: rail 1 is not rxe1"

# The second rail's device: every verb on every handed-over QP, from both sides. rxe's own
# packet counters say which device carried them: rxe1's grow, rxe0's stay.
sent() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }
rxe0_before=$(sent rxe0) rxe1_before=$(sent rxe1)
WIREUP_VM_ADDR=10.0.2.1 ./tests/engine_rdma --gtest_color=no --gtest_filter='EngineDataPlane.*' ||
  fail "the engine's data-plane cases on rxe1 (10.0.2.1)"
WIREUP_VM_ADDR=10.0.2.1 ./tests/conformance_rdma --gtest_color=no --gtest_filter='*Connect*:*DataPlane.*' ||
  fail "the conformance connect and data-plane cases on rxe1 (10.0.2.1)"
rxe0_sent=$(($(sent rxe0) - rxe0_before)) rxe1_sent=$(($(sent rxe1) - rxe1_before))
echo "rails-check: packets sent during the rxe1 cases: rxe0 $rxe0_sent, rxe1 $rxe1_sent"
((rxe1_sent > 0 && rxe0_sent == 0)) || fail "the rxe1 cases did not all go over rxe1 (sent: rxe0 $rxe0_sent, rxe1 $rxe1_sent)"

# With devices present, asking for two rails is still refused at context creation.
out=$(./tests/capi/capi_tests --gtest_color=no --gtest_filter='CapiHost.SeveralRailsAreRefusedNotIgnored' 2>&1) ||
  fail "device.rails=2 was not refused: $out"
echo "rails-check: ok"
