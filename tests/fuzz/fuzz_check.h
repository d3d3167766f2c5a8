// A property check for the fuzz targets: on failure, say which property broke and abort, so
// that libFuzzer records the input as a crash (assert() would vanish under NDEBUG).
#pragma once

#include <cstdint>

// The job key the private-data seeds are sealed with and fuzz_private_data opens them with.
inline constexpr uint64_t kFuzzJobKey = 0x0123456789abcdefULL;

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz: property violated at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)
