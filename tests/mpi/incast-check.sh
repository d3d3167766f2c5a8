#!/usr/bin/env bash
# An incast on the real RDMA stack (the soft-RoCE VM): every rank knows only rank 0 (wireup_a2a
# --into 0), so with N ranks the (N-1)/2 ranks the plan makes initiators of rank 0 send it their
# REQs at once, into a listener whose backlog (cm.backlog) is small.
#
#   incast-check.sh --a2a BIN --np N --mode paced|off [--backlog B] [--rate R] [--timeout S]
#
# The kernel drops a REQ that finds the listener's backlog full without a reject (ucma.c
# answers -ENOMEM, cm.c then resets the id "to allow future retries"), so the only trace is the
# sender's CM resending it one CM timeout later: the ib_cm port counter cm_tx_retries/req.
#   off    (cm.incast = "off")   the REQs overflow the backlog: the counter must grow, and every
#                                connection must still be made (after the retries)
#   paced  (cm.incast = "paced") the senders space their REQs (incast_burst capped at backlog/2,
#                                incast_rate per second): the counter must not move
# Both modes: every planned connection established and verified (QPN cross-check, SEND both ways).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

A2A="" NP="" MODE="" BACKLOG=4 RATE=1 TIMEOUT=280
while (($#)); do
  case "$1" in
    --a2a) A2A=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --backlog) BACKLOG=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    *) echo "incast-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$A2A" ] || { echo "incast-check: --a2a '$A2A' is not an executable" >&2; exit 2; }
[[ "$NP" =~ ^[0-9]+$ && "$BACKLOG" =~ ^[0-9]+$ && "$RATE" =~ ^[0-9]+$ ]] ||
  { echo "incast-check: --np, --backlog and --rate want numbers" >&2; exit 2; }
case "$MODE" in paced|off) ;; *) echo "incast-check: --mode paced|off" >&2; exit 2 ;; esac
for t in mpirun jq timeout; do command -v $t >/dev/null || { echo "incast-check: '$t' not found" >&2; exit 2; }; done

# The IB CM's per-port counters of the device the tuning file names (rxe0, port 1): under the
# device's port since Linux 5.x (Debian 12's 6.1), /sys/class/infiniband_cm before.
CM=""
for d in /sys/class/infiniband/rxe0/ports/1 /sys/class/infiniband_cm/rxe0/1; do
  [ -r "$d/cm_tx_retries/req" ] && { CM=$d; break; }
done
[ -n "$CM" ] || { echo "incast-check: FAILED: no IB CM counters for rxe0 port 1 (is rxe0 up?)"; exit 1; }
counters() { echo "$(cat "$CM/cm_tx_msgs/req") $(cat "$CM/cm_tx_retries/req") $(cat "$CM/cm_rx_duplicates/req")"; }

INTO=0
INITIATORS=$(( (NP - 1) / 2 ))  # plan::initiates: the ranks behind rank 0 on the ring, nearest half
JOB=(mpirun --oversubscribe -np "$NP" "$A2A" --config "$HERE/vm.toml" --lanes 1 --json --no-progress --bootstrap mpi --into "$INTO"
     --set "cm.backlog=$BACKLOG" --set "cm.incast=$MODE" --set "cm.incast_rate=$RATE" --wireup-timeout-ms 180000)
OUT=$(mktemp) ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT
read -r tx0 retry0 dup0 <<<"$(counters)"
echo "incast-check: ${JOB[*]}"
echo "incast-check: $INITIATORS ranks initiate into rank $INTO, whose backlog is $BACKLOG; cm.incast = $MODE"
t0=$(date +%s.%N)
set +e
timeout --kill-after=10 "$TIMEOUT" "${JOB[@]}" >"$OUT" 2>"$ERR"
rc=$?
set -e
read -r tx1 retry1 dup1 <<<"$(counters)"
echo "incast-check: mpirun exited $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
grep -v '^wireup WARN' "$ERR" | grep -v 'PMIX ERROR: BAD-PARAM' | tail -n 30 || true
RETRIES=$((retry1 - retry0))
echo "incast-check: IB CM REQs sent $((tx1 - tx0)), of them resent after a CM timeout (cm_tx_retries/req) $RETRIES, duplicate REQs received $((dup1 - dup0))"
if ! jq -e . "$OUT" >/dev/null 2>&1; then
  echo "incast-check: FAILED: no JSON summary on stdout; stdout was:"; cat "$OUT"
  exit 1
fi
jq -c "{ranks, into, planned, connections, failed, wall_s, retries, rejects_received, phases_us}" "$OUT" || true

fails=0
fail() { echo "incast-check: FAILED: $1"; fails=$((fails + 1)); }
expect() {  # expect JQ_EXPR MESSAGE
  jq -e --argjson np "$NP" "$1" "$OUT" >/dev/null || fail "$2   [$1]"
}
[ "$rc" = 0 ] || fail "exit status $rc, expected 0"
expect '.ranks == $np and .into == 0 and .planned == $np - 1' "the job is the incast asked for"
expect '.connections == .planned and .failed == 0' "every planned connection is established"
expect '.verified and .check.qpn_ok == .connections and .check.send_ok == 2 * .connections' \
  "every connection passed the QPN cross-check and the SEND both ways"
case "$MODE" in
  off) ((RETRIES > 0)) || fail "no REQ was resent: the backlog of $BACKLOG did not overflow without pacing" ;;
  paced) ((RETRIES == 0)) || fail "$RETRIES REQ(s) resent after a CM timeout with pacing on" ;;
esac
if ((fails)); then
  echo "incast-check: $fails expectation(s) failed; last lines of stderr:"
  tail -n 20 "$ERR"
  exit 1
fi
echo "incast-check: ok ($MODE, np $NP, backlog $BACKLOG, $RETRIES REQ(s) resent)"
