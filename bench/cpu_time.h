// This process's CPU time, for the benchmarks' per-connection CPU figures (wall time on the
// shared machine is load, not work).
#pragma once

#include <time.h>

namespace wireup::bench {

inline double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace wireup::bench
