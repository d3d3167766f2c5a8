// Several rails per rank on the simulated fabric: every node has two devices, each its own subnet
// (rails_sim_job.h). Sim only: the same engine code as on rxe (tests/vm/rails-check.sh runs it
// there).
#include <cstdio>
#include <map>

#include "tests/engine/rails_sim_job.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

using rails_sim::by_rail;
using rails_sim::kPrefix;
using rails_sim::RailsJob;

TEST(RailsSim, FourLanesSplitEvenlyOverTwoRails) {
  RailsJob j(6, 4, 11);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  // Format 2: both rails and their prefixes.
  auto published = decode_rails(job->ranks[0].engine->local_address());
  ASSERT_TRUE(published) << published.error().message();
  ASSERT_EQ(published->size(), 2u);
  EXPECT_EQ((*published)[1].prefix_len, kPrefix);
  auto r = drive(j.f, *job, 120s);
  ASSERT_TRUE(r) << r.error().message();
  for (uint32_t i = 0; i < 6; ++i) {
    const Engine& e = *job->ranks[i].engine;
    EXPECT_TRUE(e.errors().empty()) << "rank " << i << ": " << e.errors().front().describe();
    EXPECT_EQ(e.results().size(), 5u * 4u);
    // Every peer: lanes 0..3 striped over the two pairs, two on each.
    for (uint32_t p = 0; p < 6; ++p) {
      if (p == i) continue;
      EXPECT_EQ(by_rail(e, p), (std::map<uint32_t, size_t>{{0, 2}, {1, 2}})) << "rank " << i << " to " << p;
    }
  }
  expect_consistent(*job, 4);
}

// One lane per peer: lane 0's pair follows the sum of both ranks, so a rank's peers spread over
// both rails whichever side initiates.
TEST(RailsSim, SingleLanePeersSpreadOverTheRails) {
  RailsJob j(5, 1, 12);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(drive(j.f, *job, 120s));
  std::map<uint32_t, size_t> n = by_rail(*job->ranks[0].engine);
  EXPECT_EQ(n, (std::map<uint32_t, size_t>{{0, 2}, {1, 2}}));
  expect_consistent(*job, 1);
}

// A peer with one rail (format 1, what a single-rail rank publishes) pairs with the rail in its
// subnet only; the other rail carries nothing to it, and everything else is as before.
TEST(RailsSim, APeerWithOneRailUsesTheRailInItsSubnet) {
  RailsJob j(4, 4, 13, [](EngineOptions& o) {
    if (o.rank == 3) o.rails = {RailAddress{o.listen_addr, kPrefix}};
  });
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_EQ(job->ranks[3].engine->local_address().size(), 8u) << "one rail publishes format 1 (8 bytes for IPv4)";
  ASSERT_TRUE(drive(j.f, *job, 120s));
  for (uint32_t i = 0; i < 3; ++i) {
    const Engine& e = *job->ranks[i].engine;
    EXPECT_TRUE(e.errors().empty());
    EXPECT_EQ(by_rail(e, 3), (std::map<uint32_t, size_t>{{0, 4}})) << "rank " << i;
    EXPECT_EQ(by_rail(e, (i + 1) % 3), (std::map<uint32_t, size_t>{{0, 2}, {1, 2}})) << "rank " << i;
  }
  EXPECT_EQ(by_rail(*job->ranks[3].engine), (std::map<uint32_t, size_t>{{0, 12}}));
  expect_consistent(*job, 4);
}

// No rail in a common subnet and no route: every lane with that peer is given up at start, on
// both sides, with the pairing's reason; the other peers are not held up.
TEST(RailsSim, APeerNoRailReachesIsGivenUpWithTheReason) {
  RailsJob j(4, 2, 14, [](EngineOptions& o) {
    o.route_check = [](const prov::SockAddr&, const prov::SockAddr&) { return false; };
    // 10.0.0.4/16 and 10.16.0.4/16: no subnet agrees with a /12 (both ends see it so: the
    // prefixes travel in format 2).
    if (o.rank == 3) o.rails[0].prefix_len = o.rails[1].prefix_len = 16;
  });
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(drive(j.f, *job, 120s));
  for (uint32_t i = 0; i < 4; ++i) {
    const Engine& e = *job->ranks[i].engine;
    const size_t expected_errors = i == 3 ? 3u * 2u : 2u;
    ASSERT_EQ(e.errors().size(), expected_errors) << "rank " << i;
    for (const PeerError& err : e.errors()) {
      EXPECT_EQ(err.failure.kind, cm::FailKind::address_error);
      EXPECT_NE(err.describe().find("reaches any of the peer's"), std::string::npos) << err.describe();
      EXPECT_EQ(err.attempts, 0u);
    }
    EXPECT_EQ(e.results().size(), i == 3 ? 0u : 2u * 2u);
  }
  expect_consistent(*job, 2, {3});
}

// On demand, the same peer: an ask for it is given up at once with the pairing's reason (no
// attempt, nothing on the wire), not left to a lane on rail 0 and the CM; the others connect.
TEST(RailsSim, OnDemandAPeerNoRailReachesIsGivenUpAtOnce) {
  RailsJob j(4, 2, 17, [](EngineOptions& o) {
    o.on_demand = true;
    o.eager_ring = 0;
    o.route_check = [](const prov::SockAddr&, const prov::SockAddr&) { return false; };
    if (o.rank == 3) o.rails[0].prefix_len = o.rails[1].prefix_len = 16;
  });
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  ASSERT_TRUE(a.connect(3));
  ASSERT_TRUE(a.connect(1));
  for (uint32_t lane = 0; lane < 2; ++lane)
    EXPECT_EQ(a.lane_state(3, lane), LaneState::failed) << "lane " << lane << ": given up in connect() itself";
  ASSERT_TRUE(run_until(j.f, *job, [&] {
    return a.lane_state(1, 0) == LaneState::ready && a.lane_state(1, 1) == LaneState::ready;
  }, 30s));
  ASSERT_EQ(a.errors().size(), 2u);
  for (const PeerError& err : a.errors()) {
    EXPECT_EQ(err.peer, 3u);
    EXPECT_EQ(err.failure.kind, cm::FailKind::address_error);
    EXPECT_NE(err.describe().find("reaches any of the peer's"), std::string::npos) << err.describe();
    EXPECT_EQ(err.attempts, 0u);
  }
  EXPECT_EQ(job->ranks[3].engine->results().size(), 0u) << "nothing reached rank 3";
}

// The second rail's network goes during wireup (its device removed on every node, as when
// its switch fails): the unsettled lanes move to the first rail, those established on the
// second are lost (each reported by its own DEVICE_REMOVAL), and no pair is given up.
void lose_rail_one_at(Nanos after, uint64_t seed, size_t& moved) {
  RailsJob j(4, 4, seed);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  const Nanos at = j.f.fabric().clock().now() + after;
  for (uint32_t n = 0; n < 4; ++n) j.f.fabric().remove_device(n, 1, at);
  auto r = drive(j.f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  // The steady channel's DEVICE_REMOVALs of lanes established on rail 1 may come after done().
  auto on_rail_one = [&] {
    for (auto& rk : job->ranks)
      for (const ConnResult& c : rk.engine->results())
        if (!c.withdrawn && rk.engine->link(c).rail == 1) return true;
    return false;
  };
  (void)run_until(j.f, *job, [&] { return !on_rail_one(); }, 5s);
  for (uint32_t i = 0; i < 4; ++i) {
    const Engine& e = *job->ranks[i].engine;
    EXPECT_FALSE(e.device_lost()) << "rank " << i << ": one rail of two is not the device";
    // Only a lane the peer had established on rail 1 (lost there on both ends) is an error.
    size_t lost_established = 0;
    // A passive side whose REP was out when the rail went (DEVICE_REMOVAL in `accepting`)
    // cannot tell whether the peer got it: it asks the peer over rail 0 (an RTU-lost notice).
    // When the peer had (it established, then lost the lane to its own removal: its result
    // withdrawn, on rail 1), the answer settles the lane at once as rtu_lost (until
    // 2026-12-06 it waited for the wireup deadline and was reported device_removal).
    auto peer_lost_it = [&](const PeerError& err) {
      if (err.role != cm::Role::passive || err.failure.kind != cm::FailKind::rtu_lost ||
          err.cause != PeerError::Cause::rtu_peer_cannot_reconnect)
        return false;
      const Engine& pe = *job->ranks[err.peer].engine;
      for (const ConnResult& c : pe.results())
        if (c.peer == i && c.lane == err.lane && c.withdrawn && pe.link(c).rail == 1) return true;
      return false;
    };
    for (const PeerError& err : e.errors()) {
      if (err.cause == PeerError::Cause::device_removed && err.failure.after_peer_established) ++lost_established;
      else if (peer_lost_it(err)) ++lost_established;
      else ADD_FAILURE() << "rank " << i << ": " << err.describe();
    }
    size_t live = 0, withdrawn = 0;
    for (const ConnResult& c : e.results()) {
      if (c.withdrawn) {
        ++withdrawn;
        continue;
      }
      ++live;
      EXPECT_EQ(e.link(c).rail, 0u) << "rank " << i << ": a lane on the lost rail still counts as connected";
    }
    EXPECT_EQ(live + withdrawn + lost_established, 3u * 4u) << "rank " << i << ": every lane connected once, on a rail";
    moved += live > 6 ? live - 6 : 0;
  }
}

TEST(RailsSim, ARailLostDuringWireupMovesItsUnsettledLanes) {
  size_t moved = 0;
  lose_rail_one_at(Nanos{1}, 15, moved);
  EXPECT_EQ(moved, 4u * 6u) << "removed before anything connected: every lane on rail 0";
  for (Nanos after : {std::chrono::microseconds(2000), std::chrono::microseconds(5000), std::chrono::microseconds(20000)}) {
    size_t m = 0;
    lose_rail_one_at(after, 16, m);
    std::printf("[rails] rail 1 lost %lld us after start: %zu lanes moved to rail 0 over 4 ranks\n",
                static_cast<long long>(after.count() / 1000), m);
  }
}

// Rail 1's device removed on every node after the wireup, every result handed over as the C API
// does: each connection on rail 1 is reported by its own DEVICE_REMOVAL and its result stays,
// marked lost; rail 0's connections stand, nothing is given up, and the engines keep rail 0.
TEST(RailsSim, ARailRemovedAfterWireupLosesOnlyItsLanes) {
  RailsJob j(4, 4, 17);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(drive(j.f, *job, 120s));
  std::vector<std::map<uint32_t, size_t>> removals(4);  // rank -> rail -> DEVICE_REMOVAL events
  for (uint32_t i = 0; i < 4; ++i) {
    Engine& e = *job->ranks[i].engine;
    for (uint32_t r = 0; r < e.results().size(); ++r) e.hand_over(r);
    e.on_steady_event([&removals, i, ep = &e](const SteadyEvent& ev) {
      if (ev.type != prov::CmEventType::device_removal || ev.scope != SteadyEvent::Scope::connection) return;
      for (const ConnResult& c : ep->results())
        if (c.peer == ev.peer && c.lane == ev.lane) ++removals[i][ep->link(c).rail];
    });
  }
  const Nanos at = j.f.fabric().clock().now() + 1ms;
  for (uint32_t n = 0; n < 4; ++n) j.f.fabric().remove_device(n, 1, at);
  auto reported = [&] {
    for (uint32_t i = 0; i < 4; ++i)
      if (removals[i][1] < 6) return false;
    return true;
  };
  ASSERT_TRUE(run_until(j.f, *job, reported, 10s)) << "not every rail-1 connection reported";
  for (uint32_t i = 0; i < 4; ++i) {
    const Engine& e = *job->ranks[i].engine;
    EXPECT_FALSE(e.device_lost()) << "rank " << i;
    EXPECT_TRUE(e.errors().empty()) << "rank " << i << ": " << e.errors().front().describe();
    EXPECT_EQ(removals[i][0], 0u) << "rank " << i << ": a rail-0 connection reported removed";
    size_t standing = 0, lost = 0;
    for (const ConnResult& c : e.results()) {
      EXPECT_FALSE(c.withdrawn) << "rank " << i << ": a handed-over result withdrawn";
      if (e.link(c).rail == 0) {
        EXPECT_EQ(c.lost, cm::FailKind::none) << "rank " << i << " to " << c.peer << " lane " << c.lane;
        ++standing;
      } else {
        EXPECT_EQ(c.lost, cm::FailKind::device_removal) << "rank " << i << " to " << c.peer << " lane " << c.lane;
        ++lost;
      }
    }
    EXPECT_EQ(standing, 6u) << "rank " << i;
    EXPECT_EQ(lost, 6u) << "rank " << i;
    EXPECT_EQ(removals[i][1], 6u) << "rank " << i << ": one event per rail-1 connection";
  }
}

}  // namespace
}  // namespace wireup::etest
