#!/usr/bin/env bash
# Flakiness, measured: one a2a-check.sh job repeated RUNS times in one boot (one VM or the pair),
# every run's outcome and times kept. A run passes when a2a-check.sh does (every connection
# made, QPNs cross-checked, a SEND, an RDMA WRITE and an RDMA READ each way).
#
#   repeat-a2a.sh --runs N --log DIR -- A2A-CHECK-ARGS...
#   e.g. (in the VM) repeat-a2a.sh --runs 100 --log build/flaky -- --a2a build/tools/wireup_a2a --np 16 --lanes 4
#
# Prints one line per run ("run 7: ok, job 3.1 s, wireup 0.84 s") and a summary: runs passed, and
# the spread (min / median / p90 / max) of the launcher's wall time and of the summary's wall_s
# (the slowest rank from start() to done()). A failed run's whole output is kept as
# DIR/run-N.log. Exit 0 only when every run passed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUNS="" LOG=""
while (($#)); do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --log) LOG=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "repeat-a2a: unknown option '$1' (want --runs N --log DIR -- A2A-CHECK-ARGS...)" >&2; exit 2 ;;
  esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "repeat-a2a: --runs wants a positive number, not '$RUNS'" >&2; exit 2; }
[ -n "$LOG" ] || { echo "repeat-a2a: --log DIR is required (failed runs are kept there)" >&2; exit 2; }
(($#)) || { echo "repeat-a2a: no a2a-check.sh arguments after --" >&2; exit 2; }
mkdir -p "$LOG"
times="$LOG/times.txt"
: >"$times"
passed=0
echo "repeat-a2a: $RUNS runs of: a2a-check.sh $*"
for ((i = 1; i <= RUNS; i++)); do
  out="$LOG/run-$i.log"
  if "$HERE/a2a-check.sh" "$@" >"$out" 2>&1; then ok=ok passed=$((passed + 1)); else ok=FAILED; fi
  job=$(sed -n 's/^a2a-check: .* exited [0-9]* after \([0-9.]*\) s$/\1/p' "$out" | tail -1)
  wall=$(grep -m 1 '^{"ranks"' "$out" | jq -r '.wall_s // empty' 2>/dev/null || true)
  echo "run $i: $ok, job ${job:-?} s, wireup ${wall:-?} s"
  echo "$i $ok ${job:-nan} ${wall:-nan}" >>"$times"
  if [ "$ok" = ok ]; then rm -f "$out"; else tail -n 30 "$out" | sed "s/^/  run $i| /"; fi
done
spread() {  # column of times.txt -> "min / median / p90 / max"
  awk -v c="$1" '$c != "nan" { print $c }' "$times" | sort -n | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "none"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      p = v[int(0.9 * NR + 0.999)]
      printf "%.2f / %.2f / %.2f / %.2f s (min / median / p90 / max, %d runs)", v[1], m, p, v[NR], NR
    }'
}
echo "repeat-a2a: $passed of $RUNS runs passed"
echo "repeat-a2a: launcher wall time $(spread 3)"
echo "repeat-a2a: wireup (slowest rank, start to done) $(spread 4)"
((passed == RUNS))
