#!/usr/bin/env bash
# Instructions per connection, engine against SimMesh (the minimal driver making the same
# provider calls), counted by callgrind: noise-free, so two builds compare exactly.
#   bench/scripts/callgrind-engine.sh [RANKS]        default 64 (RANKS*(RANKS-1)/2 connections)
# Env: BENCH (default build/bench/engine_bench), OUT (default build/callgrind).
# Ends with the difference summed by what it pays for (bench/scripts/callgrind-groups.py).
# Each side is counted alone (--toggle-collect on library functions, which the benchmark
# cannot inline): SimMesh's listen/connect/run, and the engines' create/set_peers/start plus
# the drive; building the simulated fabric, common to both, is left out.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N=${1:-64}
BENCH=${BENCH:-build/bench/engine_bench}
OUT=${OUT:-build/callgrind}
command -v valgrind >/dev/null || { echo "callgrind-engine: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
[ -x "$BENCH" ] || { echo "callgrind-engine: $BENCH not built (cmake --build build --target engine_bench)" >&2; exit 2; }
mkdir -p "$OUT"
count() {  # $1 = name, rest = --toggle-collect patterns
  local name=$1 log=$OUT/$1.log
  shift
  valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.out" "$@" \
    "$BENCH" --benchmark_filter="BM_EngineVsMesh/$N/" >/dev/null 2>"$log"
  grep -oE 'Collected : [0-9]+' "$log" | awk '{print $3}'
}
mesh=$(count mesh --toggle-collect='wireup::prov::sim::SimMesh::listen_all(*' \
  --toggle-collect='wireup::prov::sim::SimMesh::connect(*' --toggle-collect='wireup::prov::sim::SimMesh::run(*')
# The drive: the overload the benchmark calls (a bound in std::chrono); one pattern only, as
# a nested match would toggle collection off again.
drive='wireup::sim_drive(*std::chrono*'
engine=$(count engine --toggle-collect='wireup::Engine::create(*' --toggle-collect='wireup::Engine::set_peers(*' \
  --toggle-collect='wireup::Engine::start()' --toggle-collect="$drive")
conns=$((N * (N - 1) / 2))
# The engine's MACs (SipHash-2-4-128, libsodium's crypto_shorthash_siphashx24: 4 per connection),
# inclusive, from the same profile: SimMesh authenticates nothing, so the like-for-like
# baseline is SimMesh plus these.
mac=$(callgrind_annotate --inclusive=yes "$OUT/engine.out" 2>/dev/null |
  awk '/ \?\?\?:crypto_shorthash_siphashx24 \[/ && !done { gsub(",", "", $1); print $1; done = 1 }')
[ -n "$mac" ] || { echo "callgrind-engine: no crypto_shorthash_siphashx24 in the engine's profile" >&2; exit 1; }
awk -v m="$mesh" -v e="$engine" -v c="$conns" -v n="$N" -v k="$mac" 'BEGIN {
  printf "callgrind-engine: %d ranks, %d connections\n", n, c
  printf "  SimMesh  %12d instructions  %8.0f per connection\n", m, m / c
  printf "  engine   %12d instructions  %8.0f per connection\n", e, e / c
  printf "  of which MACs %7d instructions  %8.0f per connection (crypto_shorthash_siphashx24, inclusive)\n", k, k / c
  printf "  engine / SimMesh = %.3f\n", e / m
  printf "  engine / (SimMesh + the same MACs) = %.3f\n", e / (m + k)
}'
# Where the difference goes, by what it pays for.
python3 bench/scripts/callgrind-groups.py "$OUT/mesh.out" "$OUT/engine.out" "$conns"
