#!/usr/bin/env bash
# Inside a guest booted with two rails (scripts/vm/run.sh --rails 2: rxe0 on dummy0, rxe1 on
# dummy1): the Open MPI BTL with 2 lanes per peer, one on each device; NetPIPE -i to 1 MiB with
# its RDMA READs alternating between the lanes, so both devices' PDs and rkeys are used
# (btl-check.sh --expect-rails 2: every rank has a lane and RDMA on each rail).
#   rails-btl.sh BUILD_DIR
set -euo pipefail
B=$(cd "${1:?usage: rails-btl.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$B"
[[ -f transports/openmpi/component/mca_btl_wireup.so ]] ||
  { echo "rails-btl: FAILED: the Open MPI BTL was not built (no Open MPI headers?)"; exit 1; }
WIREUP_CONFIG="$HERE/../mpi/vm.toml" WIREUP_DEVICE_RAILS=2 WIREUP_DEVICE_INCLUDE=rxe0,rxe1 WIREUP_LOG_LEVEL=warn \
  "$HERE/btl-check.sh" --component-dir "$B/transports/openmpi/component" --np 2 --lanes 2 --expect-rails 2 \
  --expect-rdma --verdict "Integrity check passed" --reject "Integrity check failed" --workdir "$B/tests/vm/btl/rails" \
  -- NPopenmpi -i -u 1048576
