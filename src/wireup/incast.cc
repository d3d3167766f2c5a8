#include "wireup/incast.h"

#include <algorithm>

namespace wireup::incast {

Pacing effective(const Pacing& asked, int backlog) {
  const uint32_t half = backlog > 1 ? static_cast<uint32_t>(backlog / 2) : 1;
  return Pacing{asked.on, std::max<uint32_t>(1, std::min(asked.burst, half)), std::max<uint32_t>(1, asked.rate)};
}

uint64_t slot(uint32_t me, uint32_t peer, uint32_t lane, uint32_t n) {
  // plan::initiates: `me` initiates to the ranks ahead of it on the ring at distance < n/2 (and
  // the opposite one when n is even and me < peer), so `peer`'s initiators are the ranks behind
  // it at distances 1..n/2: n/2 of them at most, per lane.
  const uint32_t d = (peer + n - me) % n;
  const uint64_t per_lane = n / 2;
  return uint64_t(lane) * per_lane + (d > 0 ? d - 1 : 0);
}

Nanos delay(const Pacing& p, uint64_t slot) {
  if (!p.on || slot < p.burst) return Nanos{0};
  const uint64_t tokens = slot - p.burst + 1;  // tokens the bucket must have refilled
  return Nanos{static_cast<int64_t>(tokens * 1'000'000'000ull / p.rate)};
}

}  // namespace wireup::incast
