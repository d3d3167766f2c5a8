#!/usr/bin/env bash
# wireup_a2a on the simulated fabric in on-demand mode, checked from its --json (host, no VM):
#
#   a2a-sim-check.sh --a2a BIN --ranks N --lanes L --pattern P [--seed S]
#
# Expects: every pair of the pattern connected exactly once per lane and no other pair (the
# runner's lane ledger counts lanes held twice and connections nobody asked for), QPNs
# cross-checked on both ends, a SEND both ways on each connection, every asked lane timed from
# connect() to READY, and crossing pairs for random:K. Then the same expectations against a
# control run whose rank 1 dies at once: they must fail there (the check can fail).
set -euo pipefail
A2A="" RANKS="" LANES="" PATTERN="" SEED=1
while (($#)); do
  case "$1" in
    --a2a) A2A=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --lanes) LANES=$2; shift 2 ;;
    --pattern) PATTERN=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "a2a-sim-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$A2A" ] || { echo "a2a-sim-check: --a2a '$A2A' is not an executable" >&2; exit 2; }
[[ "$RANKS" =~ ^[0-9]+$ && "$LANES" =~ ^[0-9]+$ && -n $PATTERN ]] ||
  { echo "a2a-sim-check: --ranks, --lanes (numbers) and --pattern are needed" >&2; exit 2; }
command -v jq >/dev/null || { echo "a2a-sim-check: 'jq' not found" >&2; exit 2; }

OUT=$(mktemp) ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT
JOB=("$A2A" --provider sim --ranks "$RANKS" --lanes "$LANES" --mode on-demand --pattern "$PATTERN" --seed "$SEED"
     --json --set log.level=error)

# check FILE: prints each expectation that does not hold; returns how many.
check() {
  local f=$1 n=0
  want() {
    if ! jq -e --argjson lanes "$LANES" "$1" "$f" >/dev/null; then
      echo "a2a-sim-check: FAILED: $2   [$1]"; n=$((n + 1))
    fi
  }
  want ".ranks == $RANKS and .engine_mode == \"on_demand\" and .pattern.name == \"$PATTERN\"" "the job has the shape asked for"
  want '.planned == .pattern.pairs * $lanes and .pattern.pairs > 0' "the planned connections are the pattern's pairs"
  want '.connections == .planned and .failed == 0' "every asked pair connected on every lane"
  want '.check.pattern_dup == 0 and .check.pattern_extra == 0' "no lane connected twice, no pair nobody asked for"
  want '.check.qpn_ok == .connections and .check.qpn_bad == 0 and .check.half_open == 0' "QPNs cross-checked on both ends"
  want '.check.send_ok == 2 * .connections and .check.recv_ok == 2 * .connections and .check.data_bad == 0' \
    "a SEND both ways on every connection"
  want '.ask_to_ready_us.n == .lanes_asked and .ask_to_ready_us.p99 > 0' "every asked lane timed from connect() to READY"
  [[ $PATTERN == random:* ]] && want '.pattern.crossing_pairs > 0' "the random pattern has crossing pairs"
  return $n
}

echo "a2a-sim-check: ${JOB[*]}"
set +e
"${JOB[@]}" >"$OUT" 2>"$ERR"
rc=$?
set -e
jq -e . "$OUT" >/dev/null 2>&1 || { echo "a2a-sim-check: FAILED: no JSON (exit $rc)"; cat "$ERR"; exit 1; }
jq -r '"a2a-sim-check: \(.ranks) ranks, pattern \(.pattern.name): \(.pattern.pairs) pairs, \(.connections)/\(.planned) connections, \(.pattern.crossing_pairs) crossing pairs (\(.crossed_won) refused by the kept side, \(.crossed_yielded) withdrawn), ask-to-ready p50 \(.ask_to_ready_us.p50 / 100 | round / 10) ms p99 \(.ask_to_ready_us.p99 / 100 | round / 10) ms (virtual)"' "$OUT"
fails=0
check "$OUT" || fails=$?
[ "$rc" = 0 ] || { echo "a2a-sim-check: FAILED: exit status $rc"; fails=$((fails + 1)); }

# The control: rank 1 dead from the start, its pairs never connect; the checks must say so.
set +e
"${JOB[@]}" --kill-rank 1 --kill-after-ms 0 --wireup-timeout-ms 2000 >"$OUT" 2>"$ERR"
set -e
if check "$OUT" >/dev/null; then
  echo "a2a-sim-check: FAILED: the expectations held for a run with a dead rank: they cannot fail"
  fails=$((fails + 1))
else
  echo "a2a-sim-check: control (rank 1 dead) fails the expectations, as it must: $(check "$OUT" | head -n 1)"
fi
((fails == 0)) || exit 1
echo "a2a-sim-check: ok"
