#!/usr/bin/env bash
# Inside a guest booted with two rails (scripts/vm/run.sh --rails 2: rxe0 on dummy0 =
# 10.0.0.1/24, rxe1 on dummy1 = 10.0.2.1/24). Run from the build directory.
#   rails-check.sh BUILD_DIR
# Checks, each failing with one sentence: both devices ACTIVE on their own netdev; wireup_info
# takes both as the rail set (unplaced soft devices, each its own card); connections on the
# second rail's device carry every verb from both sides (the engine's data-plane cases and the
# conformance connect cases on rxe1's address); a context asked for two rails takes both; a job
# with device.rails=2 puts half its lanes on each device (results and kernel agree); with a
# third device added, device.rails=3 puts one lane on each (rails-three.sh); one rail each on
# the two subnets: each rank gives the other up at start, with the reason; rxe1's port going
# down mid-wireup moves the lanes not yet established to rxe0 and every lane connects.
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

# The route lookup of the pairing rule's step 2 (host/route.h): each dummy reaches its own subnet.
WIREUP_VM_RAILS=1 ./tests/host_tests --gtest_color=no --gtest_filter='HostRoute.*' ||
  fail "the route lookup out of one netdev (HostRoute.*)"

# A context asked for two rails takes both: rail 0 is the device, each rail has its address.
out=$(./tests/capi/capi_tests --gtest_color=no --gtest_filter='CapiHost.SeveralRailsAreTakenNotRefused:CapiHost.OneListenIpForSeveralRailsIsRefused' 2>&1) ||
  fail "device.rails=2 at context creation: $out"

# Connections over both rails: wireup_a2a, 2 ranks x 4 lanes, device.rails=2 (vm.toml's
# device.include names rxe0 alone: overridden). Half the lanes on each device, from the
# results (the summary's lanes_by_rail: rail:device -> endpoints, both ranks) and from the
# kernel (rdma resource show qp, per device, while the ranks hold their connections).
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
json=$(mktemp) err=$(mktemp)
trap 'rm -f "$json" "$err"' EXIT
mpirun --oversubscribe -np 2 ./tools/wireup_a2a --config "$HERE/../mpi/vm.toml" --set device.rails=2 \
  --set device.include=rxe0,rxe1 --lanes 4 --json --no-progress --hold-s 8 >"$json" 2>"$err" &
job=$!
for _ in $(seq 1 240); do [ -s "$json" ] && break; kill -0 $job 2>/dev/null || break; sleep 0.5; done
sleep 1
qps=$(rdma resource show qp)
echo "$qps" | grep -E 'comm wireup_a2a' || true
# One line per QP: "link rxe1/1 lqpn 19 rqpn 20 type RC state RTS ... comm wireup_a2a".
count() { awk -v dev="$1/" '$1 == "link" && index($2, dev) == 1 && / type RC / && / state RTS / && / comm wireup_a2a/ { n++ } END { print n + 0 }' <<<"$qps"; }
k0=$(count rxe0) k1=$(count rxe1)
rc=0
wait $job || rc=$?
((rc == 0)) || { cat "$err"; fail "wireup_a2a over two rails exited $rc"; }
grep -v '^wireup WARN' "$err" | tail -n 20
by_rail=$(jq -c '.lanes_by_rail' "$json")
echo "rails-check: results by rail: $by_rail; kernel RC QPs at RTS: rxe0 $k0, rxe1 $k1"
jq -e '.connections == 4 and .failed == 0' "$json" >/dev/null || fail "not every lane connected: $(jq -c '{connections, failed, failures}' "$json")"
[ "$by_rail" = '{"0:rxe0":4,"1:rxe1":4}' ] || fail "the results do not put half the lanes on each rail: $by_rail"
((k0 == 4 && k1 == 4)) || fail "the kernel does not show 4 RC QPs at RTS on each device (rxe0 $k0, rxe1 $k1)"
# Each rail has its own windows and counts (the engine's stats, "rails"): both carried connects,
# 4 endpoints established on each, and the per-rail connects add up to the total.
echo "rails-check: per rail: $(jq -c '.rails' "$json"); all rails' connect window peak $(jq -c '.connect_window_peak' "$json")"
jq -e '(.rails | length) == 2 and all(.rails[]; .connects_started > 0 and .established == 4 and .connect_window_peak >= 1)
       and ([.rails[].connects_started] | add) == .connects_started' "$json" >/dev/null ||
  fail "the per-rail stats do not show both rails carrying their lanes: $(jq -c '{rails, connects_started}' "$json")"

# One rail's netdev down before start: rxe1's port is down, so the rail set has rxe0 alone
# (said at warn, with the reason), and every lane runs there.
ip link set dummy1 down
trap 'ip link set dummy1 up; rm -f "$json" "$err"' EXIT
for _ in $(seq 1 40); do rdma link show rxe1/1 | grep -q 'state ACTIVE' || break; sleep 0.5; done
rdma link show rxe1/1
mpirun --oversubscribe -np 2 ./tools/wireup_a2a --config "$HERE/../mpi/vm.toml" --set device.rails=2 \
  --set device.include=rxe0,rxe1 --lanes 4 --json --no-progress >"$json" 2>"$err" ||
  { rc=$?; cat "$err"; fail "wireup_a2a with rxe1's netdev down exited $rc"; }
ip link set dummy1 up
grep -m 2 'device.rails = 2' "$err" || true
grep -q 'device.rails = 2: 1 rail (rxe1: ' "$err" || fail "no warning naming rxe1 when its netdev was down: $(head -c 2000 "$err")"
by_rail=$(jq -c '.lanes_by_rail' "$json")
echo "rails-check: dummy1 down: results by rail: $by_rail"
jq -e '.connections == 4 and .failed == 0' "$json" >/dev/null || fail "dummy1 down: not every lane connected"
[ "$by_rail" = '{"0:rxe0":8}' ] || fail "dummy1 down: the lanes are not all on rxe0: $by_rail"
for _ in $(seq 1 40); do rdma link show rxe1/1 | grep -q 'state ACTIVE' && break; sleep 0.5; done

# One rail each with both devices allowed: the local ranks take different devices (rank 0
# rxe0 on 10.0.0.1/24, rank 1 rxe1 on 10.0.2.1/24), and no route leaves either netdev for the
# other's subnet. Each rank gives the other up at start, naming both addresses and the way out
# (device.rails = "all"), instead of sending REQs that rxe drops until the CM's retries run out
# (the job hung past 120 s before the check).
t0=$(date +%s)
rc=0
timeout 120 mpirun --oversubscribe -np 2 ./tools/wireup_a2a --config "$HERE/../mpi/vm.toml" --set device.rails=1 \
  --set device.include=rxe0,rxe1 --lanes 2 --json --no-progress >"$json" 2>"$err" || rc=$?
secs=$(($(date +%s) - t0))
grep -m 1 'no rail here' "$err" || true
echo "rails-check: one rail each on two subnets: exit $rc after $secs s, $(jq -c '{connections, failed}' "$json" 2>/dev/null)"
((rc != 0 && rc != 124)) || { cat "$err"; fail "one rail each on two subnets: wireup_a2a exited $rc (expected a failure, not success or a hang)"; }
jq -e '.connections == 0 and .failed == 2' "$json" >/dev/null || fail "one rail each on two subnets: not both lanes given up"
grep -q 'no rail here (10.0.0.1/24) reaches any of the peer.s (10.0.2.1).*device.rails = "all"' "$err" ||
  fail "one rail each on two subnets: no error naming both addresses and device.rails = \"all\""
((secs < 60)) || fail "one rail each on two subnets: given up only after $secs s"

# A third rail for a while: an address past WIREUP_ADDRESS_MAX through the runner's exchange.
"$HERE/rails-three.sh" "$B" || fail "three rails (rails-three.sh)"
# Rail 1's device removed mid-wireup (before the port-down case: after that one, rxe1 drops
# every packet for minutes, below; rxe1 is put back at the end of this case): rank 0
# runs `rdma link delete rxe1` at its 8th of 256 connections (one connect at a time, so the
# wireup is still young when the kernel's removal reaches the ranks, ~40 connections later
# under TCG). Every id on rxe1 gets DEVICE_REMOVAL; each rank loses rail 1 (said at warn) and
# moves its unsettled lanes to rxe0. The lanes established on rxe1 before are lost on both
# ends: their results stay, marked lost (wireup_result_t.lost), and the runner counts them as
# failed, per rail, and leaves them out of the data checks. So: exit 3 (lanes failed, checks
# passed), every failure one of those lost lanes, every lost endpoint on rxe1, every other
# connection on rxe0. (Until 2026-12-05 both ranks aborted here: the C API called a lost
# handed-over result INTERNAL.) The delete itself returns only after the ranks exit (rxe
# cannot disassociate a context).
rc=0
mpirun --oversubscribe -np 2 ./tools/wireup_a2a --config "$HERE/../mpi/vm.toml" --set device.rails=2 \
  --set device.include=rxe0,rxe1 --set engine.connect_window=1 --set engine.wireup_timeout_ms=60000 --lanes 256 \
  --json --no-progress --bootstrap mpi --run 'rdma link delete rxe1' --run-after-conns 8 >"$json" 2>"$err" || rc=$?
grep -E '^\[a2a\]|rail 1 \(.*\) lost|^connections|^checks|^failed peer' "$err" || true
echo "rails-check: rxe1 removed mid-wireup: exit $rc, $(jq -c '{wall_s, connections, failed, lost_after, lanes_by_rail, lost_by_rail}' "$json" 2>/dev/null)"
((rc == 3)) || { tail -50 "$err"; fail "rxe1 removed mid-wireup: wireup_a2a exited $rc (expected 3: the lanes on rxe1 lost, checks passed)"; }
(($(grep -c 'rail 1 (10.0.2.1:0) lost: ' "$err") == 2)) || fail "rxe1 removed mid-wireup: not both ranks lost rail 1"
# And quickly: a lane left to wait for the wireup deadline (60 s here) shows as wall time (a
# passive lane whose REP was out asks the peer over rxe0 instead, since 2026-12-06).
jq -e '.wall_s < 30 and .lost_after > 0 and .failed == .lost_after and .connections + .lost_after == 256 and
  .lost_by_rail == {"1:rxe1": .lanes_by_rail["1:rxe1"]} and .lanes_by_rail["0:rxe0"] == 2 * .connections' \
  "$json" >/dev/null || {
  grep -E 'WARN|ERROR' "$err" | grep -v 'DEVICE_REMOVAL on the connection to' | tail -30
  fail "rxe1 removed mid-wireup: more than rxe1's lanes failed, lanes left on rxe1, or a lane waited for the deadline: $(jq -c '{wall_s, connections, failed, lost_after, lanes_by_rail, lost_by_rail, failed_peers}' "$json")"
}
for _ in $(seq 1 60); do rdma link show rxe1/1 >/dev/null 2>&1 || break; sleep 0.5; done
rdma link add rxe1 type rxe netdev dummy1 || fail "rdma link add rxe1 after the removal case"
for _ in $(seq 1 40); do rdma link show rxe1/1 | grep -q 'state ACTIVE' && break; sleep 0.5; done

# Rail 1's port going down mid-wireup (last: after it, rxe1 drops every packet although rxe1/1
# is ACTIVE again with its address and route: rails-three.sh's rxe1 lane never connected in
# 600 s, and a 4-lane job on both rails hung past 250 s, 2026-12-05; not looked into): rank 0 runs `ip link set dummy1 down` at its 4th of 256
# connections (32 lanes are all up before the shell has run `ip` under TCG: tried 2026-12-05).
# rxe raises PORT_ERR on rxe1 (rxe_net.c: the netdev notifier's NETDEV_DOWN -> rxe_port_down)
# and each rank's engine takes rail 1 out of new attempts, moving its attempts under way there
# (Engine::port_changed, said at warn with the lanes established on rxe1, which stay). Attempts
# the kernel refused first (ENETUNREACH from rdma_resolve_addr or the QP's RTR, before the
# PORT_ERR was read) are retried. Every lane connects (but those whose RTU the link took, below),
# and rxe1 keeps only what was established there before (striping alone puts half there). The
# wireup timeout is cut to 60 s so that a stuck lane fails the case instead of holding the VM.
rc=0
mpirun --oversubscribe -np 2 ./tools/wireup_a2a --config "$HERE/../mpi/vm.toml" --set device.rails=2 \
  --set device.include=rxe0,rxe1 --set engine.wireup_timeout_ms=60000 --lanes 256 --no-verify --json \
  --no-progress --bootstrap mpi --run 'ip link set dummy1 down' --run-after-conns 4 >"$json" 2>"$err" || rc=$?
ip link set dummy1 up
# Exit 3 only for the lanes whose RTU the link took (below): the active end's handed-over
# result is marked lost and counted failed (since 2026-12-05), so the job fails those lanes.
((rc == 0 || rc == 3)) || { cat "$err"; fail "wireup_a2a with dummy1 going down mid-wireup exited $rc"; }
grep -E 'port down \(PORT_ERR\)|rtu_lost|never got our RTU|^\[a2a\]|^failures' "$err" || true
by_rail=$(jq -c '.lanes_by_rail' "$json")
kept=$(grep -o '[0-9]* established lanes stay' "$err" | awk '{ n += $1 } END { print n + 0 }')
# A lane whose REP was in hand when the link went down is established on the active side, but
# its RTU was lost with the link: the passive side's REP retries run out, the peer (its lane
# handed over already) cannot reconnect it, and the passive side gives it up (rtu_lost, one
# WARN line each): that endpoint is missing from lanes_by_rail. The CM cannot save it (it
# would be lost the same way on mlx5); seen 0 to 2 times per run of 256 (2026-12-05).
rtu_lost=$(grep -c ' (passive, [0-9]* attempts\?): rtu_lost' "$err" || true)
echo "rails-check: dummy1 down mid-wireup: results by rail: $by_rail; on rxe1 at the PORT_ERR: $kept endpoints;" \
  "lanes lost with their RTU: $rtu_lost"
(($(grep -c 'rail 1 (rxe1 port 1, .*) port down (PORT_ERR): new attempts leave from the rails up' "$err") == 2)) ||
  fail "dummy1 down mid-wireup: not both ranks took rail 1 out on its PORT_ERR"
jq -e --argjson lost "$rtu_lost" '.connections + $lost == 256 and .failed == $lost and .lost_after == $lost' "$json" >/dev/null &&
  ((rtu_lost <= 4)) && { ((rc == 0 && rtu_lost == 0)) || ((rc == 3 && rtu_lost > 0)); } ||
  fail "dummy1 down mid-wireup: not every lane connected, or a failure other than a lost RTU (exit $rc): $(jq -c '{connections, failed, lost_after, failures}' "$json"), $rtu_lost rtu_lost"
# Slack: an active attempt with the peer's REP in hand is left to finish where it is.
jq -e --argjson kept "$kept" --argjson lost "$rtu_lost" \
  '(.lanes_by_rail["0:rxe0"] + (.lanes_by_rail["1:rxe1"] // 0)) + $lost == 512 and
  (.lanes_by_rail["1:rxe1"] // 0) <= $kept + 16 and (.lanes_by_rail["1:rxe1"] // 0) < 256' "$json" >/dev/null ||
  fail "dummy1 down mid-wireup: lanes started after the PORT_ERR went to rxe1 (or went missing): $by_rail, $kept there before, $rtu_lost rtu_lost"
for _ in $(seq 1 40); do rdma link show rxe1/1 | grep -q 'state ACTIVE' && break; sleep 0.5; done

echo "rails-check: ok"
