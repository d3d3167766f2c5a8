#include "wireup/plan.h"

#include <algorithm>

namespace wireup::plan {

bool initiates(uint32_t a, uint32_t b, uint32_t n) {
  if (a == b || n < 2) return false;
  uint32_t d = (b + n - a) % n;  // distance from a forward to b, 1..n-1
  if (2 * d < n) return true;
  if (2 * d > n) return false;
  return a < b;  // exactly opposite on an even ring
}

std::vector<uint32_t> outgoing(uint32_t me, uint32_t n, const std::vector<uint32_t>& peers) {
  std::vector<uint32_t> out;
  for (uint32_t p : peers)
    if (initiates(me, p, n)) out.push_back(p);
  std::sort(out.begin(), out.end(), [&](uint32_t x, uint32_t y) {
    return (x + n - me) % n < (y + n - me) % n;
  });
  return out;
}

std::vector<uint32_t> incoming(uint32_t me, uint32_t n, const std::vector<uint32_t>& peers) {
  std::vector<uint32_t> in;
  for (uint32_t p : peers)
    if (initiates(p, me, n)) in.push_back(p);
  return in;
}

}  // namespace wireup::plan
