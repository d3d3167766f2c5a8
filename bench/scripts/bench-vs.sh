#!/usr/bin/env bash
# Engine CPU and bytes per connection against SimMesh, this build and another one run
# alternately (so that a change of the machine's load falls on both alike), medians printed.
#   bench/scripts/bench-vs.sh OTHER_ENGINE_BENCH [RUNS] [RANKS]     defaults: 5 runs, 128 ranks
# Env: BENCH (default build/bench/engine_bench).
# Each run is one `engine_bench --benchmark_filter=BM_EngineVsMesh/RANKS/` process: SimMesh
# and the engine timed in the same iteration (CPU time), so each run's ratio is against a
# baseline of the same moment; the medians are of those per-run figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OTHER=${1:?usage: bench-vs.sh OTHER_ENGINE_BENCH [RUNS] [RANKS]}
RUNS=${2:-5}
N=${3:-128}
BENCH=${BENCH:-build/bench/engine_bench}
for b in "$BENCH" "$OTHER"; do
  [ -x "$b" ] || { echo "bench-vs: $b is not an executable engine_bench" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # $1 = label, $2 = binary
  "$2" --benchmark_filter="BM_EngineVsMesh/$N/" --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(" ".join(str(b[k]) for k in ("engine_us_per_conn","mesh_us_per_conn","engine_over_mesh","engine_over_mesh_mac","overhead_bytes_per_conn")))' \
    >>"$tmp/$1"
}
for ((i = 1; i <= RUNS; i++)); do
  run this "$BENCH"
  run other "$OTHER"
done
python3 - "$tmp" "$BENCH" "$OTHER" "$N" <<'EOF'
import statistics, sys
d, this, other, n = sys.argv[1:]
cols = ("engine us/conn", "SimMesh us/conn", "engine/SimMesh", "engine/(SimMesh+MACs)", "bytes over SimMesh/conn")
print(f"bench-vs: BM_EngineVsMesh/{n}, medians of alternating runs")
print("  %-28s" % "" + "".join("%24s" % c for c in cols))
for label, path in (("this", this), ("other", other)):
    rows = [list(map(float, l.split())) for l in open(f"{d}/{label}")]
    med = [statistics.median(r[i] for r in rows) for i in range(len(cols))]
    print("  %-28s" % f"{label} ({len(rows)} runs)" + "".join("%24.3f" % v for v in med))
    print("    %s" % path)
EOF
