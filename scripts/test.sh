#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs what is missing, builds, runs the unit
# tests on the host and the real-stack suite inside the soft-RoCE VM (one boot).
#   scripts/test.sh [extra ctest args]      e.g. scripts/test.sh -L unit
# Env: BUILD_DIR (default ./build), WIREUP_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${WIREUP_JOBS:-$(nproc)}

scripts/install-deps.sh
t0=$(date +%s)
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIREUP_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
t1=$(date +%s)
echo "test.sh: build took $((t1 - t0)) s"
# in_vm tests run inside the VM through vm.suite, never directly on the host.
set +e
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE in_vm "$@"
rc=$?
set -e
# vm.suite shows its inner output only on failure: print the inner result lines either way.
inner=$BUILD_DIR/tests/vm/Testing/Temporary/LastTest.log
if [ -f "$inner" ]; then
  echo "test.sh: inside the VM:"
  grep -E '^\[ +(OK|FAILED|SKIPPED|PASSED) +\]|^\[(engine|a2a|mpi)\]|tests? passed|Test time' "$inner" | sed 's/^/  vm| /' || true
fi
echo "test.sh: tests took $(($(date +%s) - t1)) s"
exit $rc
