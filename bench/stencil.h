// Who asks whom in the on-demand benchmarks: pure functions of the rank, no engine.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace wireup::bench {

// A 3-D torus of x * y * z ranks, rank = (i * y + j) * z + k. The 26-point stencil: every
// rank of the surrounding 3 x 3 x 3 cube but itself, wrapping at the edges. Each dimension
// must be at least 3, or two offsets land on one rank (fewer than 26 distinct neighbours).
struct Torus {
  uint32_t x = 0, y = 0, z = 0;
  uint32_t ranks() const { return x * y * z; }
  // The 26 neighbours of `rank`, sorted, distinct when every dimension is >= 3.
  std::vector<uint32_t> neighbours(uint32_t rank) const;
};

// The distinct unordered pairs {a, b}, a < b, over asks[a] (a asks b), sorted: what an
// on-demand job must connect, exactly once each, whoever of the two asked.
std::vector<std::pair<uint32_t, uint32_t>> distinct_pairs(const std::vector<std::vector<uint32_t>>& asks);

}  // namespace wireup::bench
