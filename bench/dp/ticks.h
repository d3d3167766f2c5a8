// The clock the latency loops read: the time-stamp counter on x86-64, as perftest's
// get_cycles(), turned into time by the steady clock read once before and once after the
// whole loop (not by a frequency guess, as perftest's get_cpu_mhz does).
//
// Why not the steady clock in the loop: in the soft-RoCE VM (TCG) the guest kernel cannot
// calibrate the TSC and falls back to the HPET, so every clock_gettime is an emulated device
// read, about 19 us measured there (notes/data-path-perf.md) -- two of them per ping-pong
// step timed the clock, not the QP, and made wireup's QPs look 1.3-1.7x slower than
// perftest's, which reads the counter.
#pragma once

#include <chrono>
#include <cstdint>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace dp {

inline uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
#endif
}

// Made just before a loop; us_per_tick() just after it says how long a tick was over it.
class TickScale {
 public:
  TickScale() : t0_(ticks()), c0_(std::chrono::steady_clock::now()) {}
  double us_per_tick() const {
    const auto c1 = std::chrono::steady_clock::now();
    const uint64_t t1 = ticks();
    const double us = std::chrono::duration<double, std::micro>(c1 - c0_).count();
    return t1 > t0_ ? us / double(t1 - t0_) : 0.0;
  }

 private:
  uint64_t t0_;
  std::chrono::steady_clock::time_point c0_;
};

}  // namespace dp
