#!/usr/bin/env bash
# The main job, for real: installs what is missing, builds into ./build, then runs the
# all-to-all runner (tools/wireup_a2a) under mpirun and prints its summary.
#
#   scripts/run-main.sh [runner options...]       e.g. scripts/run-main.sh --lanes 16 --json
#
# Where it runs:
#  - this machine, if `ibv_devices` lists a device with an ACTIVE port: mpirun -np A2A_NP
#    (default 8) here, with the configuration from WIREUP_CONFIG / ./wireup.toml / /etc/wireup;
#  - otherwise the soft-RoCE VM (scripts/vm/run.sh: Debian's kernel in qemu, rxe0 on dummy0):
#    mpirun --oversubscribe -np 8 inside it, tuned by tests/mpi/vm.toml (TCG timeouts, windows).
# Env: BUILD_DIR (default ./build), WIREUP_JOBS (default nproc), A2A_NP (default 8),
#      A2A_LANES (default 8: 8 ranks x 8 lanes = 224 connections).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${WIREUP_JOBS:-$(nproc)}
NP=${A2A_NP:-8}
LANES=${A2A_LANES:-8}

scripts/install-deps.sh
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target wireup_a2a
A2A=$BUILD_DIR/tools/wireup_a2a

# A device whose port 1 (or any port) is ACTIVE, as libibverbs sees it on this machine.
active_device() {
  local dev
  for dev in $(ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }'); do
    if ibv_devinfo -d "$dev" 2>/dev/null | grep -q 'PORT_ACTIVE'; then
      echo "$dev"
      return 0
    fi
  done
  return 1
}

if dev=$(active_device); then
  echo "run-main: $dev has an ACTIVE port: mpirun -np $NP on this machine" >&2
  MPI=(mpirun -np "$NP")
  [ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
  # More ranks than cores is fine for a connection job: they mostly wait on the CM.
  MPI+=(--oversubscribe)
  exec "${MPI[@]}" "$A2A" --lanes "$LANES" "$@"
fi

echo "run-main: no RDMA device with an ACTIVE port here: running inside the soft-RoCE VM" \
     "(qemu, rxe0), mpirun --oversubscribe -np $NP" >&2
cd "$BUILD_DIR"
exec "$ROOT/scripts/vm/run.sh" --timeout 1800 --share "$BUILD_DIR" -- \
  mpirun --oversubscribe -np "$NP" "$A2A" --config "$ROOT/tests/mpi/vm.toml" --lanes "$LANES" "$@"
