#include "live_heap.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

// GCC cannot see that the replacement operators below pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_allocs{0};
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  g_allocs.fetch_add(1, std::memory_order_relaxed);
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
int64_t allocations() { return g_allocs.load(std::memory_order_relaxed); }
}  // namespace wireup::bench
