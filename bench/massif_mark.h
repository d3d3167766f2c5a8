// Under valgrind's massif, a detailed heap snapshot at the moment that matters (a job's end,
// before teardown), so that bench/massif_split.py can tell the library's bytes from the
// simulated fabric's by call stack. live_heap.h counts both together; the SimMesh baseline
// only approximately removes the fabric's share (its queues keep their high-water capacity).
#pragma once

namespace wireup::bench {
// Writes the snapshot to $WIREUP_MASSIF_SNAPSHOT (suffixed .<n>, one per call) when that is
// set and the process runs under massif; does nothing otherwise.
void massif_snapshot();
}  // namespace wireup::bench
