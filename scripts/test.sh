#!/usr/bin/env bash
# The test suite from a fresh clone: installs what is missing, builds, runs the unit tests on
# the host and the real-stack suite inside the soft-RoCE VM (one boot); the two-node suite
# across a pair of VMs (one boot of the pair); then the unit suite again under
# ASan+UBSan+LSan (scripts/sanitize.sh, build-asan), the real provider's suites under them
# inside the VM (scripts/sanitize.sh --vm-ci), and a short run of every fuzz target
# (scripts/fuzz.sh, build-fuzz).
#
# Two slices (docs/testing.md lists what each holds):
#   scripts/test.sh [extra ctest args]   the CI slice: every test but those labelled `long`
#                                        (.ci/run runs this; it must stay under 45 minutes)
#   scripts/test.sh --full [...]         everything: also the long tests (vm.suite.long, the
#                                        pair's long cases), in their own boots
#   e.g. scripts/test.sh -L unit
# Env: BUILD_DIR (default ./build), WIREUP_JOBS (default nproc);
#      TEST_SANITIZE=0 skips the sanitizer suites (TEST_SANITIZE_VM=0 only the one in the VM), TEST_FUZZ_SECONDS (default 20 per target,
#      0 skips the fuzz run), TEST_TWONODE=0 skips the two-node suite. Exit status: non-zero
#      if any of the parts failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${WIREUP_JOBS:-$(nproc)}
SLICE=ci
if [ "${1:-}" = --full ]; then SLICE=full; shift; fi
# The CI slice leaves out the tests labelled long (and so vm.suite.long, twonode.suite.long).
long_filter='|long'
[ "$SLICE" = full ] && long_filter=''

scripts/install-deps.sh
t0=$(date +%s)
# Line tables only (-g1) for tests, tools and benchmarks: stack traces keep file:line, and the
# build takes far less time; the library's own objects keep full debug info for the ABI check
# (cmake/WireupAbi.cmake).
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIREUP_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
t1=$(date +%s)
echo "test.sh: build took $((t1 - t0)) s"
# The sanitizer build (scripts/sanitize.sh --build-only) starts now, at the lowest priority,
# beside the host and VM suites: a guest under TCG keeps about one core of two busy (vm.rails:
# 61 s user in 68 s), and the idle rest was ~640 s of instrumented build later on. Niced, it
# takes only what the suites leave; the sanitizer stages below wait for it, and rebuild (and
# report) anything it failed to build.
asan_bg=
if [ "${TEST_SANITIZE:-1}" != 0 ]; then
  nice -n 19 scripts/sanitize.sh --build-only >"$BUILD_DIR/test-sanitize-build.log" 2>&1 &
  asan_bg=$!
fi

# Runs one part with its output teed to LOG; sets part_rc and part_secs.
run_part() {
  local log=$1
  shift
  local ts
  ts=$(date +%s)
  set +e
  "$@" 2>&1 | tee "$log"
  part_rc=${PIPESTATUS[0]}
  set -e
  part_secs=$(($(date +%s) - ts))
}
# ctest's own summary line ("100% tests passed, 0 tests failed out of N"), or "" if none.
# ctest inside the VM colours its lines: the colour codes are dropped first.
ctest_summary() { sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^[0-9]+% tests passed' | tail -1 || true; }

# in_vm tests run inside the VM through vm.suite, never directly on the host.
# (a log of an earlier run must not pass for this one's)
rm -f "$BUILD_DIR/tests/vm/Testing/Temporary/LastTest.log"
echo "test.sh: slice $SLICE"
# -j: the host tests side by side (the VM boots are RUN_SERIAL: each runs alone).
run_part "$BUILD_DIR/test-main.log" ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -LE "in_vm|twonode$long_filter" "$@"
main_rc=$part_rc main_secs=$part_secs
# vm.suite shows its inner output only on failure: print the inner result lines either way.
inner=$BUILD_DIR/tests/vm/Testing/Temporary/LastTest.log
if [ -f "$inner" ]; then
  echo "test.sh: inside the VM:"
  grep -E '^\[ +(OK|FAILED|SKIPPED|PASSED) +\]|^\[(engine|a2a|mpi)\]|tests? passed|Test time' "$inner" | sed 's/^/  vm| /' || true
fi
echo "test.sh: tests took $main_secs s"

# The two-node suite: its own boot (a pair of VMs), its own line in the summary.
twonode_rc=skip twonode_secs=0
if [ "${TEST_TWONODE:-1}" != 0 ] && (($# == 0)); then
  tn_inner=$BUILD_DIR/Testing/Temporary/LastTest.log
  rm -f "$tn_inner"
  twonode_filter=()
  [ "$SLICE" = full ] || twonode_filter=(-LE long)
  run_part "$BUILD_DIR/test-twonode.log" ctest --test-dir "$BUILD_DIR" --output-on-failure -L twonode "${twonode_filter[@]}"
  twonode_rc=$part_rc twonode_secs=$part_secs
  if [ -f "$tn_inner" ]; then
    echo "test.sh: across the pair:"
    grep -E '\[twonode\] (===== .*: |  [a-z0-9]+ +(ok|FAILED) )|KNOWN|FAILED|pair: node|loss: [0-9]|restart: (node|rounds)|REQ 0x' "$tn_inner" |
      sed 's/^/  pair| /' || true
  fi
fi

asan_rc=skip asan_secs=0
if [ -n "$asan_bg" ]; then
  tw=$(date +%s)
  if wait "$asan_bg"; then
    echo "test.sh: the sanitizer build beside the suites: ok ($(grep -o 'built in [0-9]* s' "$BUILD_DIR/test-sanitize-build.log" | tail -1)), waited $(($(date +%s) - tw)) s for it"
  else
    echo "test.sh: the sanitizer build beside the suites failed; its log's end (the stage below builds again):"
    tail -20 "$BUILD_DIR/test-sanitize-build.log"
  fi
fi
if [ "${TEST_SANITIZE:-1}" != 0 ]; then
  run_part "$BUILD_DIR/test-sanitize.log" scripts/sanitize.sh
  asan_rc=$part_rc asan_secs=$part_secs
fi
# The real provider's suites under the same sanitizers, inside the VM (the same build dir, so
# the unit stage's objects are reused).
asanvm_rc=skip asanvm_secs=0
if [ "${TEST_SANITIZE:-1}" != 0 ] && [ "${TEST_SANITIZE_VM:-1}" != 0 ]; then
  run_part "$BUILD_DIR/test-sanitize-vm.log" scripts/sanitize.sh --vm-ci
  asanvm_rc=$part_rc asanvm_secs=$part_secs
fi
fuzz_rc=skip fuzz_secs=0 fuzz_t=${TEST_FUZZ_SECONDS:-20}
if [ "$fuzz_t" != 0 ]; then
  run_part "$BUILD_DIR/test-fuzz.log" scripts/fuzz.sh -t "$fuzz_t"
  fuzz_rc=$part_rc fuzz_secs=$part_secs
fi

status() { case $1 in skip) echo "skipped" ;; 0) echo "ok" ;; *) echo "FAILED (exit $1)" ;; esac; }
echo
echo "test.sh: summary, slice $SLICE (build $((t1 - t0)) s)"
printf '  %-22s %-16s %5d s  %s\n' "tests" "$(status "$main_rc")" "$main_secs" \
  "$(ctest_summary "$BUILD_DIR/test-main.log")"
if [ "$twonode_rc" != skip ]; then
  printf '  %-22s %-16s %5d s  %s\n' "two-node (pair of VMs)" "$(status "$twonode_rc")" "$twonode_secs" \
    "$(ctest_summary "$BUILD_DIR/test-twonode.log")"
else
  printf '  %-22s %s\n' "two-node (pair of VMs)" "skipped (TEST_TWONODE=0 or a ctest filter given)"
fi
if [ "$asan_rc" != skip ]; then
  printf '  %-22s %-16s %5d s  %s\n' "sanitizers (unit)" "$(status "$asan_rc")" "$asan_secs" \
    "$(ctest_summary "$BUILD_DIR/test-sanitize.log")"
else
  printf '  %-22s %s\n' "sanitizers (unit)" "skipped (TEST_SANITIZE=0)"
fi
if [ "$asanvm_rc" != skip ]; then
  printf '  %-22s %-16s %5d s  %s\n' "sanitizers (VM, rxe)" "$(status "$asanvm_rc")" "$asanvm_secs" \
    "$(ctest_summary "$BUILD_DIR/test-sanitize-vm.log")"
else
  printf '  %-22s %s\n' "sanitizers (VM, rxe)" "skipped (TEST_SANITIZE=0 or TEST_SANITIZE_VM=0)"
fi
if [ "$fuzz_rc" != skip ]; then
  printf '  %-22s %-16s %5d s  %s\n' "fuzz (${fuzz_t} s/target)" "$(status "$fuzz_rc")" "$fuzz_secs" \
    "$(grep -E '^fuzz.sh: (no findings|[0-9]+ finding)' "$BUILD_DIR/test-fuzz.log" | tail -1 | sed 's/^fuzz.sh: //')"
else
  printf '  %-22s %s\n' "fuzz" "skipped (TEST_FUZZ_SECONDS=0)"
fi
# CI keeps only the head and the tail of this output: the lines that say why a part failed go
# last (a test's own "FAILED: ..." verdict, gtest's failures, ctest's failed names).
why() {
  local rc=$1 log=$2
  [ "$rc" = skip ] || [ "$rc" = 0 ] || [ ! -f "$log" ] && return 0
  echo "test.sh: why $(basename "$log" .log) failed:"
  sed 's/\x1b\[[0-9;]*m//g' "$log" |
    grep -E 'FAILED: |\*\*\*(Failed|Timeout|Exception)|^\[  FAILED  \]|Failure$|: error: |ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' |
    sort -u | head -25 | sed 's/^/  /' || true
}
why "$main_rc" "$BUILD_DIR/test-main.log"
why "$twonode_rc" "$BUILD_DIR/test-twonode.log"
why "$asan_rc" "$BUILD_DIR/test-sanitize.log"
why "$asanvm_rc" "$BUILD_DIR/test-sanitize-vm.log"
why "$fuzz_rc" "$BUILD_DIR/test-fuzz.log"
for rc in "$main_rc" "$twonode_rc" "$asan_rc" "$asanvm_rc" "$fuzz_rc"; do
  [ "$rc" = skip ] || [ "$rc" = 0 ] || exit 1
done
exit 0
