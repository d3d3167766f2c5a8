// The on-demand part by itself: address asks once per peer until answered, deadlines due in
// ask order with stale ones skipped and swept, and the crossing rule.
#include "wireup/on_demand.h"

#include <gtest/gtest.h>

#include <vector>

namespace wireup {
namespace {

using std::chrono::seconds;

TEST(OnDemandAsks, AskAddressOncePerPeerUntilAnswered) {
  OnDemandAsks od(seconds(300));
  std::vector<uint32_t> asked;
  EXPECT_FALSE(od.can_ask_address());
  od.on_address_needed([&](uint32_t peer) { asked.push_back(peer); });
  ASSERT_TRUE(od.can_ask_address());
  EXPECT_TRUE(od.ask_address(7));
  EXPECT_FALSE(od.ask_address(7));  // not answered yet: not asked twice
  EXPECT_TRUE(od.ask_address(3));
  EXPECT_TRUE(od.address_asked(7));
  od.forget_ask(7);
  EXPECT_FALSE(od.address_asked(7));
  EXPECT_TRUE(od.address_asked(3));
  EXPECT_TRUE(od.ask_address(7));  // a later ask, after the answer, asks again
  EXPECT_EQ(asked, (std::vector<uint32_t>{7, 3, 7}));
}

TEST(OnDemandAsks, AnAnswerWithinTheCallbackLeavesNoAskBehind) {
  OnDemandAsks od(seconds(300));
  od.on_address_needed([&](uint32_t peer) { od.forget_ask(peer); });
  EXPECT_TRUE(od.ask_address(5));
  EXPECT_FALSE(od.address_asked(5));
  EXPECT_TRUE(od.ask_address(5));
}

TEST(OnDemandAsks, DeadlinesComeDueInAskOrderAndOnlyWhenDue) {
  const Nanos timeout = seconds(10);
  OnDemandAsks od(timeout);
  PairTable t;
  Pair& a = t.add(pair_key(1, 0), cm::Role::active);
  Pair& b = t.add(pair_key(2, 0), cm::Role::passive);
  a.first_start = seconds(1);
  b.first_start = seconds(2);
  od.note_deadline(t, a);
  od.note_deadline(t, b);
  EXPECT_EQ(od.next_deadline(), seconds(11));
  EXPECT_EQ(od.pop_due(t, seconds(10)), std::nullopt);  // a second early: nothing
  EXPECT_EQ(od.deadlines_queued(), 2u);
  EXPECT_EQ(od.pop_due(t, seconds(11)), t.index(a));
  EXPECT_EQ(od.pop_due(t, seconds(11)), std::nullopt);
  EXPECT_EQ(od.next_deadline(), seconds(12));
  EXPECT_EQ(od.pop_due(t, seconds(99)), t.index(b));
  EXPECT_EQ(od.next_deadline(), Nanos::max());
}

TEST(OnDemandAsks, AStaleDeadlineIsSkipped) {
  const Nanos timeout = seconds(10);
  OnDemandAsks od(timeout);
  PairTable t;
  Pair& a = t.add(pair_key(1, 0), cm::Role::active);
  Pair& b = t.add(pair_key(2, 0), cm::Role::active);
  a.first_start = seconds(1);
  od.note_deadline(t, a);
  b.first_start = seconds(2);
  od.note_deadline(t, b);
  a.first_start = seconds(3);  // asked again: its first entry is not its deadline any more
  od.note_deadline(t, a);
  t.become(b, Idle{});  // settled: its entry is stale too
  EXPECT_EQ(od.pop_due(t, seconds(12)), std::nullopt);
  EXPECT_EQ(od.pop_due(t, seconds(13)), t.index(a));
  EXPECT_EQ(od.deadlines_queued(), 0u);
}

TEST(OnDemandAsks, StaleEntriesAreSweptOnceTheyOutnumberTheOpenPairs) {
  OnDemandAsks od(seconds(300));
  PairTable t;
  Pair& a = t.add(pair_key(1, 0), cm::Role::active);
  // One open pair asked again and again (a transport connecting and disconnecting): the queue
  // stays within twice the open pairs plus the slack, however many asks.
  for (int i = 0; i < 10'000; ++i) {
    a.first_start = Nanos(i);
    od.note_deadline(t, a);
  }
  EXPECT_LE(od.deadlines_queued(), 2 * t.open() + 65);
  EXPECT_EQ(od.pop_due(t, seconds(400)), t.index(a));  // the live one survived every sweep
}

TEST(ClassifyRequest, TheCrossingRule) {
  using enum PairState;
  EXPECT_EQ(classify_request(idle, cm::Role::active, true), RequestFor::new_passive);
  EXPECT_EQ(classify_request(failed, cm::Role::active, false), RequestFor::new_passive);
  EXPECT_EQ(classify_request(waiting, cm::Role::passive, true), RequestFor::this_pair);
  EXPECT_EQ(classify_request(established, cm::Role::active, true), RequestFor::this_pair);
  EXPECT_EQ(classify_request(waiting, cm::Role::active, true), RequestFor::crossed_won);
  EXPECT_EQ(classify_request(connecting, cm::Role::active, true), RequestFor::crossed_won);
  EXPECT_EQ(classify_request(connecting, cm::Role::active, false), RequestFor::crossed_lost);
  EXPECT_STREQ(to_string(RequestFor::crossed_lost), "crossed_lost");
}

}  // namespace
}  // namespace wireup
