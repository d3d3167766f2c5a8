#include "live_heap.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

// GCC cannot see that the replacement operators below pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<int64_t> g_live{0};
// This thread's allocations: a plain per-thread add, so that counting them does not add a
// locked instruction to every allocation of the benchmark it measures.
thread_local int64_t t_allocs = 0;
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  ++t_allocs;
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace wireup::bench {
int64_t live_heap_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t allocations() { return t_allocs; }
}  // namespace wireup::bench
