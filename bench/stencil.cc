#include "stencil.h"

#include <algorithm>

namespace wireup::bench {

std::vector<uint32_t> Torus::neighbours(uint32_t rank) const {
  const uint32_t i = rank / (y * z), j = rank / z % y, k = rank % z;
  std::vector<uint32_t> out;
  out.reserve(26);
  // +dim - 1 .. +dim + 1, mod dim: the offsets -1, 0, +1 without going below zero.
  for (uint32_t di = x - 1; di <= x + 1; ++di)
    for (uint32_t dj = y - 1; dj <= y + 1; ++dj)
      for (uint32_t dk = z - 1; dk <= z + 1; ++dk) {
        if (di == x && dj == y && dk == z) continue;  // offset 0, 0, 0: itself
        out.push_back(((i + di) % x * y + (j + dj) % y) * z + (k + dk) % z);
      }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> distinct_pairs(const std::vector<std::vector<uint32_t>>& asks) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint32_t a = 0; a < asks.size(); ++a)
    for (uint32_t b : asks[a]) out.emplace_back(std::min(a, b), std::max(a, b));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace wireup::bench
