#!/usr/bin/env bash
# Inside a guest booted with two rails (scripts/vm/run.sh --rails 2), run from the build
# directory; rails-check.sh runs it last.
#   rails-three.sh BUILD_DIR [A2A]      (A2A: the wireup_a2a to run; default BUILD_DIR's)
# A third rail for the length of the check (rxe2 on dummy2 = 10.0.4.1/24, removed at the end),
# then wireup_a2a under mpirun with device.rails=3: each rank publishes three IPv4 rails (26
# bytes, past WIREUP_ADDRESS_MAX), so the runner's address exchange must carry more than that.
# Every lane connected and checked, one on each device (lanes_by_rail, both ranks), with each
# bootstrap.
set -euo pipefail
B=${1:?usage: rails-three.sh BUILD_DIR [A2A]}
cd "$B"
A2A=${2:-./tools/wireup_a2a}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "rails-three: FAILED: $*"; exit 1; }

json=$(mktemp) err=$(mktemp)
cleanup() {
  rdma link delete rxe2 2>/dev/null || true
  ip link delete dummy2 2>/dev/null || true
  rm -f "$json" "$err"
}
trap cleanup EXIT
ip link add dummy2 type dummy && ip link set dummy2 up && ip addr add 10.0.4.1/24 dev dummy2 ||
  fail "cannot make dummy2 (10.0.4.1/24)"
rdma link add rxe2 type rxe netdev dummy2 || fail "rdma link add rxe2 (dummy2)"
for _ in $(seq 1 100); do rdma link show rxe2/1 | grep -q 'state ACTIVE' && break; sleep 0.1; done
rdma link show rxe2/1 | grep -q 'state ACTIVE' || fail "rxe2 did not become ACTIVE"

# Both bootstraps: pmix (each address a PMIx value) and mpi (fixed-size MPI_Allgather slots).
for boot in pmix mpi; do
  rc=0
  mpirun --oversubscribe -np 2 "$A2A" --config "$HERE/../mpi/vm.toml" --set device.rails=3 \
    --set device.include=rxe0,rxe1,rxe2 --lanes 3 --json --no-progress --bootstrap $boot >"$json" 2>"$err" || rc=$?
  grep -v '^wireup WARN' "$err" | grep -E 'wireup_a2a|connections|rails|checks|one-sided|terminate|what\(\)' || true
  ((rc == 0)) || fail "bootstrap $boot: wireup_a2a over three rails exited $rc"
  by_rail=$(jq -c '.lanes_by_rail' "$json")
  echo "rails-three: bootstrap $boot: results by rail: $by_rail"
  jq -e '.connections == 3 and .failed == 0' "$json" >/dev/null ||
    fail "bootstrap $boot: not every lane connected: $(jq -c '{connections, failed, failures}' "$json")"
  [ "$by_rail" = '{"0:rxe0":2,"1:rxe1":2,"2:rxe2":2}' ] ||
    fail "bootstrap $boot: the lanes are not one per rail on each rank: $by_rail"
done
echo "rails-three: ok"
