// The peer-down decision alone (src/wireup/peer_down.h).
#include <gtest/gtest.h>

#include "wireup/peer_down.h"

namespace wireup {
namespace {

TEST(PeerDownTracker, TheLastLaneDroppedMakesTheOneEvent) {
  PeerDownTracker t;
  EXPECT_FALSE(t.lane_dropped(7, 2));
  EXPECT_EQ(t.state(7), PeerDownTracker::State::degraded);
  EXPECT_FALSE(t.lane_dropped(7, 1));
  auto d = t.lane_dropped(7, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->peer, 7u);
  EXPECT_EQ(d->lanes, 3u);
  EXPECT_EQ(d->cause, PeerDownCause::disconnected);
  EXPECT_EQ(t.state(7), PeerDownTracker::State::down);
  EXPECT_FALSE(t.lane_dropped(7, 0)) << "a later lane of the same peer makes no second event";
  EXPECT_FALSE(t.declare(7, PeerDownCause::silent, 3));
  EXPECT_EQ(t.down(), 1u);
  EXPECT_EQ(t.state(8), PeerDownTracker::State::up);
}

TEST(PeerDownTracker, ADeclarationWinsOnceAndCountsTheDroppedLanes) {
  PeerDownTracker t;
  EXPECT_FALSE(t.lane_dropped(3, 1));  // one of two lanes gone: alive
  auto d = t.declare(3, PeerDownCause::reported, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cause, PeerDownCause::reported);
  EXPECT_EQ(d->lanes, 1u) << "the lane already dropped was the peer's too";
  EXPECT_FALSE(t.declare(3, PeerDownCause::silent, 2));
  EXPECT_FALSE(t.lane_dropped(3, 0));
  auto s = t.declare(4, PeerDownCause::silent, 2);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->lanes, 2u);
  EXPECT_EQ(t.down(), 2u);
  EXPECT_STREQ(to_string(PeerDownCause::silent), "silent");
}

}  // namespace
}  // namespace wireup
