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

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// How many x in [lo, hi] have x = a (mod m).
int64_t count_congruent(int64_t lo, int64_t hi, int64_t a, int64_t m) {
  if (hi < lo) return 0;
  return floor_div(hi - a, m) - floor_div(lo - 1 - a, m);
}

}  // namespace

uint64_t rail_slot(uint32_t me, uint32_t peer, uint32_t lane, uint32_t n, uint32_t rails) {
  if (rails <= 1) return slot(me, peer, lane, n);
  // Initiator at distance d is rank i = peer - d, wrapped past 0 when d > peer; its lane L goes
  // over pair (L + i + peer) mod R. Lane `lane` of `me` at distance `d` takes pair k; the
  // listener's other planned first REQs on pair k, from distances 1..m of every lane, are
  // those with (L' + 2 peer - d' [+ n]) = k (mod R), i.e. d' = L' + 2 peer [+ n] - k.
  const int64_t R = rails, m = n / 2, P = peer, N = n;
  const int64_t d = (P + N - me) % N;
  const int64_t k = (int64_t(lane) + me + P) % R;
  // Of lane L', the distances 1..m (or 1..hi) whose first REQ goes over pair k.
  auto on_k = [&](int64_t L, int64_t hi) {
    const int64_t near = std::min(hi, P);  // no wrap: i = peer - d'
    return count_congruent(1, near, L + 2 * P - k, R) + count_congruent(P + 1, hi, L + 2 * P + N - k, R);
  };
  // Over R consecutive lanes the residues L' + c cover every class once: m slots per R lanes.
  int64_t before = (int64_t(lane) / R) * m;
  for (int64_t L = (int64_t(lane) / R) * R; L < lane; ++L) before += on_k(L, m);
  return static_cast<uint64_t>(before + on_k(lane, d - 1));
}

Nanos delay(const Pacing& p, uint64_t slot) {
  if (!p.on || slot < p.burst) return Nanos{0};
  const uint64_t tokens = slot - p.burst + 1;  // tokens the bucket must have refilled
  return Nanos{static_cast<int64_t>(tokens * 1'000'000'000ull / p.rate)};
}

}  // namespace wireup::incast
