// Incast pacing's pure part (wireup/incast.h): every listener's planned initiators get distinct
// slots, the slots grow along each sender's start order, and the token bucket's delays.
#include <gtest/gtest.h>

#include <set>

#include "wireup/incast.h"
#include "wireup/plan.h"
#include "wireup/rail_pairing.h"

namespace wireup {
namespace {

using namespace std::chrono_literals;

std::vector<uint32_t> everyone(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(Incast, EachListenersInitiatorsHaveDistinctSlotsBelowHalfTheJob) {
  for (uint32_t n : {2u, 3u, 4u, 7u, 8u, 33u, 64u, 101u}) {
    for (uint32_t q = 0; q < n; ++q) {
      for (uint32_t lane : {0u, 1u, 3u}) {
        std::set<uint64_t> seen;
        for (uint32_t a = 0; a < n; ++a) {
          if (!plan::initiates(a, q, n)) continue;
          const uint64_t s = incast::slot(a, q, lane, n);
          EXPECT_TRUE(seen.insert(s).second) << "n " << n << " listener " << q << " rank " << a;
          EXPECT_GE(s, uint64_t(lane) * (n / 2));
          EXPECT_LT(s, uint64_t(lane + 1) * (n / 2));
        }
        EXPECT_EQ(seen.size(), plan::incoming(q, n, everyone(n)).size());
      }
    }
  }
}

// Several rails: each of the listener's rails is paced alone. Its slot for (me, lane) is the
// place of that REQ among the first REQs the same listener rail is planned to receive, in the
// senders' order (lane-major, nearest first), where each sender's lane goes over the pair the
// engine's striping gives it (lane_pair from the sum of both ranks, rail_routes.h).
TEST(Incast, RailSlotsAreThePlaceAmongTheSameRailsInitiators) {
  for (uint32_t rails : {1u, 2u, 3u, 4u, 8u}) {
    PeerPairing pairing;
    for (uint32_t r = 0; r < rails; ++r) pairing.pairs.push_back(RailPair{r, r});
    for (uint32_t n : {2u, 3u, 5u, 8u, 9u, 33u, 64u}) {
      for (uint32_t q = 0; q < n; ++q) {
        std::vector<uint64_t> next(rails, 0);  // per listener rail: the next place
        for (uint32_t lane = 0; lane < 5; ++lane) {
          for (uint32_t d = 1; d <= n / 2; ++d) {
            const uint32_t me = (q + n - d) % n;
            const uint32_t k = lane_pair(pairing, lane, me + q).peer;
            EXPECT_EQ(incast::rail_slot(me, q, lane, n, rails), next[k]++)
                << rails << " rails, n " << n << " listener " << q << " rank " << me << " lane " << lane;
          }
        }
      }
    }
  }
}

TEST(Incast, OneRailIsTheListenersSlot) {
  for (uint32_t n : {2u, 7u, 64u}) {
    for (uint32_t me = 0; me < n; ++me) {
      for (uint32_t q = 0; q < n; ++q) {
        if (me != q) {
          EXPECT_EQ(incast::rail_slot(me, q, 2, n, 1), incast::slot(me, q, 2, n));
        }
      }
    }
  }
}

TEST(Incast, TheNearestInitiatorComesFirst) {
  // 33 ranks: rank 0's initiators are 17..32; 32 is nearest (slot 0), 17 farthest (slot 15).
  EXPECT_EQ(incast::slot(32, 0, 0, 33), 0u);
  EXPECT_EQ(incast::slot(17, 0, 0, 33), 15u);
  EXPECT_EQ(incast::slot(32, 0, 1, 33), 16u);  // lane-major
}

TEST(Incast, SlotsGrowAlongEverySendersStartOrder) {
  // The engine only looks at the head of its start order (lane-major, nearest peer first).
  for (uint32_t n : {5u, 8u, 33u, 64u}) {
    for (uint32_t me = 0; me < n; ++me) {
      uint64_t last = 0;
      bool first = true;
      for (uint32_t lane = 0; lane < 3; ++lane) {
        for (uint32_t p : plan::outgoing(me, n, everyone(n))) {
          const uint64_t s = incast::slot(me, p, lane, n);
          if (!first) {
            EXPECT_GE(s, last) << "n " << n << " rank " << me << " peer " << p << " lane " << lane;
          }
          last = s, first = false;
        }
      }
    }
  }
}

TEST(Incast, DelaysFollowTheTokenBucket) {
  const incast::Pacing p{true, 4, 10};  // 4 at once, then 10 per second
  EXPECT_EQ(incast::delay(p, 0), 0ns);
  EXPECT_EQ(incast::delay(p, 3), 0ns);
  EXPECT_EQ(incast::delay(p, 4), 100ms);
  EXPECT_EQ(incast::delay(p, 13), 1000ms);
  EXPECT_EQ(incast::delay(incast::Pacing{false, 4, 10}, 13), 0ns);  // off: nothing is held
}

TEST(Incast, TheBurstLeavesHalfTheBacklogFree) {
  EXPECT_EQ(incast::effective({true, 512, 500}, 1024).burst, 512u);
  EXPECT_EQ(incast::effective({true, 512, 500}, 100).burst, 50u);
  EXPECT_EQ(incast::effective({true, 512, 500}, 2).burst, 1u);
  EXPECT_EQ(incast::effective({true, 512, 500}, 1).burst, 1u);  // never 0: the nearest initiator goes at once
  EXPECT_EQ(incast::effective({true, 8, 500}, 1024).burst, 8u);
}

}  // namespace
}  // namespace wireup
