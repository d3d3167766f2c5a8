#!/usr/bin/env bash
# wireup_a2a against rdma-core's own tools, in one soft-RoCE VM boot:
#   cmtime   -c N   (rdma_cm connection steps, CM-owned QPs, no data)
#   ucmatose -c N -C 1   (connect, one message each way)
#   wireup_a2a, 2 ranks x N lanes = N connections (application-owned QPs, ECE attempted,
#            every id migrated to the steady channel, QPNs cross-checked, a SEND each way)
# and prints each rate and the runner's ratios to them. Target (issue 16): >= 1.5x cmtime at every N.
#
#   bench/scripts/compare-cmtime.sh [--build DIR] [--tuning FILE] [--window CW:QW] [N ...]
#        (default N: 64 256 1024; the runner runs twice per N: with the tuning file's windows,
#        tests/mpi/vm.toml's 8:16, and with connect_window:qp_create_window = CW:QW, 32:64)
#
# The rates come from an emulated machine (qemu TCG, 2 vCPUs): compare them with each other,
# in the same boot, never with hardware. Raw outputs stay in BUILD/compare-cmtime/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build
TUNING=$ROOT/tests/mpi/vm.toml
# 2 x 256 in one loaded boot at f5c7b74: 8:16 72-87 conn/s, 32:64 134-200, 256:512 147-154
# (wider: the resolves and QP creations of a whole storm queue behind each other).
WINDOW=32:64
while (($#)); do
  case "$1" in
    --window) WINDOW=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --tuning) TUNING=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    --*) echo "compare-cmtime: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
NS=("$@")
((${#NS[@]})) || NS=(64 256 1024)
for n in "${NS[@]}"; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "compare-cmtime: N '$n' is not a count" >&2; exit 2; }; done
for t in cmtime ucmatose mpirun jq; do
  command -v "$t" >/dev/null || { echo "compare-cmtime: '$t' not found (scripts/install-deps.sh)" >&2; exit 2; }
done
BUILD=$(cd "$BUILD" && pwd)
A2A=$BUILD/tools/wireup_a2a
[ -x "$A2A" ] || { echo "compare-cmtime: $A2A not built (cmake --build $BUILD --target wireup_a2a)" >&2; exit 2; }

OUT=$BUILD/compare-cmtime
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$BUILD"
"$ROOT/scripts/vm/run.sh" --timeout 3600 --share "$BUILD" -- \
  "$ROOT/bench/scripts/compare-cmtime-vm.sh" "$A2A" "$TUNING" "$OUT" "$WINDOW" "${NS[@]}" >"$OUT/vm.log" 2>&1 || {
  echo "compare-cmtime: the VM run failed; its log:" >&2
  tail -n 40 "$OUT/vm.log" >&2
  exit 1
}
[ -s "$OUT/results.tsv" ] || { echo "compare-cmtime: no results ($OUT/vm.log)" >&2; exit 1; }

echo "connections/s on rxe in one VM boot (qemu TCG; relative numbers only); raw output in $OUT"
awk -F'\t' -v win="$WINDOW" '
  NR == 1 { next }
  { rate[$1, $2] = $3; secs[$1, $2] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  END {
    printf "%6s %10s %10s %12s %10s %10s %16s %10s %10s\n", "N", "cmtime", "ucmatose", "wireup_a2a", "/cmtime", "/ucmatose",
           "wide (" win ")", "/cmtime", "/ucmatose"
    for (i = 1; i <= k; i++) {
      n = order[i]; c = rate[n, "cmtime"]; u = rate[n, "ucmatose"]; w = rate[n, "wireup_a2a"]; x = rate[n, "wireup_a2a_wide"]
      printf "%6s %10s %10s %12s %10s %10s %16s %10s %10s\n", n, c == "" ? "-" : c, u == "" ? "-" : u, w == "" ? "-" : w,
             (c > 0 && w != "") ? sprintf("%.2fx", w / c) : "-", (u > 0 && w != "") ? sprintf("%.2fx", w / u) : "-",
             x == "" ? "-" : x, (c > 0 && x != "") ? sprintf("%.2fx", x / c) : "-", (u > 0 && x != "") ? sprintf("%.2fx", x / u) : "-"
    }
  }' "$OUT/results.tsv"
echo
echo "what each time covers (docs/results.md, 'Real stack', says it step by step):"
cut -f1,2,4,5 "$OUT/results.tsv" | tail -n +2 | sed 's/^/  /'
