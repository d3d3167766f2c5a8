// Live heap bytes of this process, counted by replacing the global operator new/delete in
// the benchmark binaries that link live_heap.cc (allocated - freed, by malloc_usable_size):
// every container counts, not an estimate from sizeof.
#pragma once

#include <cstdint>

namespace wireup::bench {
int64_t live_heap_bytes();
// Calls of operator new so far on this thread (the allocator's share of the CPU follows them).
int64_t allocations();
}  // namespace wireup::bench
