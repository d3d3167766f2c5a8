// The liveness service's decisions alone (src/wireup/liveness.h): the ring, heartbeats,
// suspicion, confirmation by a second watcher, the spread, and what is final.
#include <gtest/gtest.h>

#include <algorithm>

#include "wireup/liveness.h"

namespace wireup::liveness {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const Ring> one_node(uint32_t n) { return std::make_shared<const Ring>(std::vector<uint64_t>(n, 7)); }

size_t count(const std::vector<Out>& out, Kind k, uint32_t to = UINT32_MAX) {
  return std::count_if(out.begin(), out.end(), [&](const Out& o) { return o.msg.kind == k && (to == UINT32_MAX || o.to == to); });
}

Msg heartbeat(uint32_t from) {
  Msg m;
  m.kind = Kind::heartbeat;
  m.from = from;
  return m;
}
Msg suspect(uint32_t from, uint32_t subject) {
  Msg m;
  m.kind = Kind::suspect;
  m.from = from;
  m.subject = subject;
  return m;
}

TEST(LivenessRing, NeighboursAreOnOtherNodes) {
  // Ranks 0,1 on node A, 2,3 on B, 4,5 on C: the ring is 0 2 4 1 3 5.
  Ring r({10, 10, 20, 20, 30, 30});
  const std::vector<uint32_t> want{0, 2, 4, 1, 3, 5};
  for (uint32_t p = 0; p < 6; ++p) {
    EXPECT_EQ(r.rank_at(p), want[p]);
    EXPECT_EQ(r.position(want[p]), p);
  }
}

TEST(LivenessParams, BadOnesAreNamed) {
  Params p;
  EXPECT_STREQ(check(p), "");
  p.deadline = 2 * p.period;
  EXPECT_NE(std::string(check(p)).find("liveness.deadline_ms"), std::string::npos);
  p = Params{};
  p.watchers = 0;
  EXPECT_NE(std::string(check(p)).find("liveness.watchers"), std::string::npos);
}

TEST(LivenessDetector, HeartbeatsGoToTheKSuccessorsOncePerPeriod) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  EXPECT_EQ(d.watchers(), (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_EQ(d.watched(), (std::vector<uint32_t>{1, 0, 7}));
  std::vector<Out> out;
  d.tick(0s, out);
  EXPECT_EQ(count(out, Kind::heartbeat), 3u);
  out.clear();
  EXPECT_EQ(d.next_due(), 500ms);
  d.tick(250ms, out);
  EXPECT_TRUE(out.empty()) << "nothing due between heartbeats";
  d.tick(500ms, out);
  EXPECT_EQ(count(out, Kind::heartbeat), 3u);
}

// One watcher's silence is a suspicion, told to the other watchers, never a death alone.
TEST(LivenessDetector, OneWatcherAloneOnlySuspects) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  std::vector<Out> out;
  for (Nanos t = 0s; t <= 5s; t += 500ms) {
    d.tick(t, out);
    d.receive(heartbeat(0), t, out);
    d.receive(heartbeat(7), t, out);  // rank 1 is silent
  }
  EXPECT_FALSE(d.dead(1));
  EXPECT_EQ(d.counters().suspicions, 1u);
  // Rank 1's other watchers (its successors 3 and 4; we are 2) were asked, again each period.
  EXPECT_GE(count(out, Kind::suspect, 3), 2u);
  EXPECT_GE(count(out, Kind::suspect, 4), 2u);
  EXPECT_EQ(count(out, Kind::suspect, 1), 0u);
  EXPECT_TRUE(d.take_deaths().empty());
}

TEST(LivenessDetector, ASecondWatcherConfirmsAndTheDeathSpreads) {
  Detector d(2, one_node(64), Params{});
  d.start(0s);
  std::vector<Out> out;
  d.tick(2250ms, out);  // rank 1 (and the others it watches) silent since 0
  out.clear();
  d.receive(suspect(3, 1), 2300ms, out);
  EXPECT_TRUE(d.dead(1));
  EXPECT_EQ(d.take_deaths(), (std::vector<uint32_t>{1}));
  EXPECT_EQ(d.counters().declared, 1u);
  // Two trees rooted at rank 1's place, k children each, every notice twice; where the
  // declarer is itself a child of the root (tree 0: the ring's next place) it serves its own
  // children too, as it will not be sent the notice.
  EXPECT_EQ(count(out, Kind::dead), (5u + 3u) * 2u);
  EXPECT_EQ(count(out, Kind::dead, 2), 0u);
  EXPECT_EQ(count(out, Kind::dead, 1), 0u);
  for (const Out& o : out) {
    if (o.msg.kind == Kind::dead) {
      EXPECT_EQ(o.msg.subject, 1u);
    }
  }
  EXPECT_TRUE(d.take_deaths().empty()) << "each death is taken once";
}

// A suspicion we hear while our own view is fresh is remembered, not followed; a heartbeat of
// the suspect forgets it.
TEST(LivenessDetector, AConfirmationNeedsOurOwnSilenceToo) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  std::vector<Out> out;
  d.receive(heartbeat(1), 1s, out);
  d.receive(suspect(3, 1), 1100ms, out);
  EXPECT_FALSE(d.dead(1));
  d.receive(heartbeat(1), 1500ms, out);  // alive: the remembered confirmation goes
  d.tick(1500ms + 2250ms, out);          // silent since 1.5 s: our own suspicion, alone
  EXPECT_FALSE(d.dead(1));
  d.receive(suspect(4, 1), 3800ms, out);
  EXPECT_TRUE(d.dead(1));
}

TEST(LivenessDetector, AHeartbeatRefutesASuspicion) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  std::vector<Out> out;
  d.tick(2250ms, out);
  EXPECT_EQ(d.counters().suspicions, 3u);  // all three it watches were silent
  d.receive(heartbeat(1), 2300ms, out);
  EXPECT_EQ(d.counters().refuted, 1u);
  d.receive(suspect(3, 1), 2350ms, out);
  EXPECT_FALSE(d.dead(1));
}

TEST(LivenessDetector, WithOneWatcherItsOwnSilenceIsEnough) {
  Params p;
  p.watchers = 1;
  Detector d(2, one_node(8), p);
  d.start(0s);
  std::vector<Out> out;
  d.tick(2250ms, out);
  EXPECT_TRUE(d.dead(1));
}

// Dead is final; the ring closes over the dead rank, and the newly watched one gets a full
// deadline from then.
TEST(LivenessDetector, DeadIsFinalAndTheRingCloses) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  std::vector<Out> out;
  Msg dead;
  dead.kind = Kind::dead;
  dead.from = 5;
  dead.subject = 1;
  dead.root = 1;
  d.receive(dead, 2500ms, out);  // rank 1 unheard since 0: the notice is taken
  EXPECT_TRUE(d.dead(1));
  EXPECT_EQ(d.watched(), (std::vector<uint32_t>{0, 7, 6}));
  const size_t forwarded = out.size();
  d.receive(dead, 2600ms, out);
  EXPECT_EQ(out.size(), forwarded) << "a tree is served once";
  d.receive(heartbeat(1), 2700ms, out);
  EXPECT_EQ(d.counters().stale, 1u);
  EXPECT_TRUE(d.dead(1));
  // Rank 6, watched from 2.5 s on, is not suspected before 2.5 s + 2.25 s.
  out.clear();
  for (Nanos t = 2500ms; t < 4700ms; t += 100ms) {
    d.receive(heartbeat(0), t, out);
    d.receive(heartbeat(7), t, out);
    d.tick(t, out);
  }
  EXPECT_EQ(count(out, Kind::suspect), 0u);
}

// Told of a death of a rank it hears itself: refused (the tellers were cut off, it is not).
TEST(LivenessDetector, ADeathOfARankWeHearIsRefused) {
  Detector d(2, one_node(8), Params{});
  d.start(0s);
  std::vector<Out> out;
  d.receive(heartbeat(1), 1s, out);
  Msg dead;
  dead.kind = Kind::dead;
  dead.from = 5;
  dead.subject = 1;
  dead.root = 1;
  d.receive(dead, 1500ms, out);
  EXPECT_FALSE(d.dead(1));
  EXPECT_EQ(d.counters().refused, 1u);
  EXPECT_TRUE(out.empty()) << "a refused notice is not passed on";
  Msg hb = heartbeat(0);
  hb.ndigest = 1;
  hb.digest[0] = 1;
  d.receive(hb, 1600ms, out);
  EXPECT_FALSE(d.dead(1));
  EXPECT_EQ(d.counters().refused, 2u);
}

// The heartbeats' digest carries the deaths learnt lately, so a rank cut off from both trees
// learns them from its ring predecessors.
TEST(LivenessDetector, HeartbeatsCarryRecentDeaths) {
  Detector a(2, one_node(8), Params{}), b(3, one_node(8), Params{});
  a.start(0s);
  b.start(0s);
  a.learn(6, 0s);
  std::vector<Out> out;
  a.tick(0s, out);
  for (const Out& o : out)
    if (o.to == 3) b.receive(o.msg, 1ms, out);
  EXPECT_TRUE(b.dead(6));
  EXPECT_EQ(b.take_deaths(), (std::vector<uint32_t>{6}));
}

// A small job end to end without loss: one node killed, everyone knows within the deadline,
// nobody else dead.
TEST(LivenessDetector, ASilentNodeIsKnownEverywhereWithinTheDeadline) {
  constexpr uint32_t kRanks = 96, kPerNode = 8;
  std::vector<uint64_t> node(kRanks);
  for (uint32_t r = 0; r < kRanks; ++r) node[r] = r / kPerNode;
  auto ring = std::make_shared<const Ring>(node);
  std::vector<Detector> d;
  for (uint32_t r = 0; r < kRanks; ++r) d.emplace_back(r, ring, Params{});
  for (auto& x : d) x.start(0s);
  std::vector<std::vector<Msg>> inbox(kRanks);
  std::vector<uint32_t> known(kRanks);
  const Nanos kill = 5s;
  auto victim = [](uint32_t r) { return r / kPerNode == 3; };
  Nanos last = 0s;
  for (Nanos t = 0s; t < 12s; t += 10ms) {
    std::vector<std::vector<Msg>> next(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
      if (t >= kill && victim(r)) continue;
      std::vector<Out> out;
      for (const Msg& m : inbox[r]) d[r].receive(m, t, out);
      if (t >= d[r].next_due()) d[r].tick(t, out);
      for (const Out& o : out) next[o.to].push_back(o.msg);
      for (uint32_t dead : d[r].take_deaths()) {
        ASSERT_TRUE(victim(dead)) << "rank " << dead << " declared dead by rank " << r;
        if (++known[r] == kPerNode) last = t;
      }
    }
    inbox.swap(next);
  }
  for (uint32_t r = 0; r < kRanks; ++r) {
    if (!victim(r)) {
      EXPECT_EQ(known[r], kPerNode) << "rank " << r;
    }
  }
  EXPECT_LE(last - kill, 3s);
}

}  // namespace
}  // namespace wireup::liveness
