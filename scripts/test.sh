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
if (($#)); then
  ctest --test-dir "$BUILD_DIR" --output-on-failure -LE in_vm "$@"
else
  ctest --test-dir "$BUILD_DIR" --output-on-failure -LE in_vm
fi
echo "test.sh: tests took $(($(date +%s) - t1)) s"
