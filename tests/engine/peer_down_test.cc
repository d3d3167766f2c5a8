// Peer down after wireup, on the sim: a rank whose process dies (its ids destroyed: the CM
// sends a DREQ for each established connection, cm_destroy_id) is reported to each survivor
// once, naming it, with the lanes it took; the per-lane DISCONNECTED events still come.
#include <map>

#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

struct Seen {
  std::vector<PeerDown> downs;
  size_t disconnects = 0;
  Nanos first_down{-1};
};

// Advances the fabric by `span` in 5 ms steps, progressing every engine still alive.
void settle(SimEngineFabric& f, Job& job, Nanos span) {
  for (Nanos t{0}; t < span; t += 5ms) {
    f.fabric().run_for(5ms);
    for (auto& rk : job.ranks) {
      if (!rk.engine) continue;
      auto w = rk.engine->progress();
      ASSERT_TRUE(w) << w.error().message();
    }
  }
}

std::vector<Seen> listen(SimEngineFabric& f, Job& job) {
  std::vector<Seen> seen(job.ranks.size());
  for (uint32_t r = 0; r < job.ranks.size(); ++r) {
    job.ranks[r].engine->on_peer_down([&f, &seen, r](const PeerDown& d) {
      seen[r].downs.push_back(d);
      if (seen[r].first_down < Nanos{0}) seen[r].first_down = f.fabric().now();
    });
    job.ranks[r].engine->on_steady_event([&seen, r](const SteadyEvent& e) {
      seen[r].disconnects += e.type == prov::CmEventType::disconnected;
    });
  }
  return seen;
}

// The victim's process dies: its engine (every id) goes without a close().
TEST(PeerDown, ADeadProcessIsReportedOncePerSurvivorWithAllItsLanes) {
  constexpr uint32_t kRanks = 5, kLanes = 3, kVictim = 2;
  SimEngineFabric f(kRanks, {});
  auto job = make_job(f, kRanks, kLanes);
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 60s);
  ASSERT_TRUE(r) << r.error().message();
  auto seen = listen(f, *job);
  const Nanos died = f.fabric().now();
  job->ranks[kVictim].engine.reset();
  settle(f, *job, 3s);  // past the IB CM's timewait: nothing more may come
  for (uint32_t rk = 0; rk < kRanks; ++rk) {
    if (rk == kVictim) continue;
    const Seen& s = seen[rk];
    ASSERT_EQ(s.downs.size(), 1u) << "rank " << rk;
    EXPECT_EQ(s.downs[0].peer, kVictim);
    EXPECT_EQ(s.downs[0].lanes, kLanes);
    EXPECT_EQ(s.downs[0].cause, PeerDownCause::disconnected);
    EXPECT_EQ(s.disconnects, kLanes) << "the per-lane events still come";
    EXPECT_LT(s.first_down - died, 1s) << "rank " << rk;
    const Engine& e = *job->ranks[rk].engine;
    EXPECT_EQ(e.stats()[Counter::peers_down], 1u);
    EXPECT_EQ(e.peers_down().state(kVictim), PeerDownTracker::State::down);
    for (uint32_t other = 0; other < kRanks; ++other) {
      if (other == kVictim || other == rk) continue;
      EXPECT_EQ(e.peers_down().state(other), PeerDownTracker::State::up) << "rank " << rk << " of " << other;
    }
  }
}

// Told twice (the launcher, then the DREQs): one event, the first source's cause; and this
// rank's own close() makes nobody down on its side.
TEST(PeerDown, ReportedFirstThenDisconnectedIsOneEvent) {
  SimEngineFabric f(3, {});
  auto job = make_job(f, 3, 2);
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 60s);
  ASSERT_TRUE(r) << r.error().message();
  auto seen = listen(f, *job);
  EXPECT_EQ(job->ranks[0].engine->fail_peer(1, "its launcher said so (test)"), 0u);
  EXPECT_TRUE(seen[0].downs.empty()) << "delivered from progress(), not from fail_peer()";
  EXPECT_LE(job->ranks[0].engine->next_wakeup(), f.fabric().now());
  job->ranks[1].engine.reset();
  settle(f, *job, 3s);
  ASSERT_EQ(seen[0].downs.size(), 1u);
  EXPECT_EQ(seen[0].downs[0].cause, PeerDownCause::reported);
  EXPECT_EQ(seen[0].downs[0].lanes, 2u);
  ASSERT_EQ(seen[2].downs.size(), 1u);
  EXPECT_EQ(seen[2].downs[0].cause, PeerDownCause::disconnected);
  // A second source for the same peer is absorbed.
  EXPECT_FALSE(job->ranks[2].engine->declare_down(1, PeerDownCause::silent));
  // Rank 0 leaves properly: rank 2 sees it go, rank 0 itself reports nobody.
  ASSERT_TRUE(job->ranks[0].engine->close(1s));
  settle(f, *job, 3s);
  EXPECT_EQ(seen[0].downs.size(), 1u) << "our own disconnects say nothing of the peers";
  ASSERT_EQ(seen[2].downs.size(), 2u);
  EXPECT_EQ(seen[2].downs[1].peer, 0u);
}

// A silent peer (the liveness service's verdict) with no DREQ ever: one event, cause silent,
// and its later DISCONNECTEDs (when the CM gives up) make no second one.
TEST(PeerDown, SilentIsDeclaredOnceAndAbsorbsLaterDisconnects) {
  SimEngineFabric f(3, {});
  auto job = make_job(f, 3, 2);
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 60s);
  ASSERT_TRUE(r) << r.error().message();
  auto seen = listen(f, *job);
  EXPECT_TRUE(job->ranks[0].engine->declare_down(1, PeerDownCause::silent));
  EXPECT_FALSE(job->ranks[0].engine->declare_down(1, PeerDownCause::silent));
  EXPECT_FALSE(job->ranks[0].engine->declare_down(0, PeerDownCause::silent)) << "never itself";
  settle(f, *job, 10ms);
  ASSERT_EQ(seen[0].downs.size(), 1u);
  EXPECT_EQ(seen[0].downs[0].cause, PeerDownCause::silent);
  EXPECT_EQ(seen[0].downs[0].lanes, 2u);
  job->ranks[1].engine.reset();
  settle(f, *job, 3s);
  EXPECT_EQ(seen[0].downs.size(), 1u);
  EXPECT_EQ(seen[0].disconnects, 2u);
}

}  // namespace
}  // namespace wireup::etest
