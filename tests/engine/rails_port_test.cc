// A rail's port going down during wireup, on the simulated fabric (rails_sim_job.h: two mlx5
// devices per node, one subnet each). The sim's port change (SimFabric::set_port) is mlx5's
// and rxe's: PORT_ERR / PORT_ACTIVE on the device's async events, nothing on any QP or id,
// and nothing leaves or reaches the port while it is down. The engine's rule
// (Engine::port_changed): with another rail up, attempts started after the PORT_ERR leave
// from it and those under way move; the rail takes attempts again after PORT_ACTIVE; with no
// rail up, nothing moves and nothing is given up on a flap.
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "tests/engine/rails_sim_job.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

using rails_sim::by_rail;
using rails_sim::RailsJob;

constexpr uint32_t kRanks = 4;
constexpr uint32_t kLanes = 4;

// When each rank's engine handled a port event of rail 1's device (its report to the
// transport comes right after the engine acted on it, in the same progress call).
struct PortSeen {
  std::vector<Nanos> down = std::vector<Nanos>(kRanks, Nanos::max());
  std::vector<Nanos> up = std::vector<Nanos>(kRanks, Nanos::max());
};

void watch_ports(SimEngineFabric& f, Job& job, PortSeen& seen) {
  for (uint32_t i = 0; i < kRanks; ++i)
    job.ranks[i].engine->on_device_report([&f, &seen, i](const DeviceEventReport& d) {
      if (d.event.device != "mlx5_1") return;
      const Nanos t = f.fabric().clock().now();
      if (d.event.type == prov::DeviceEventType::port_err) seen.down[i] = std::min(seen.down[i], t);
      if (d.event.type == prov::DeviceEventType::port_active) seen.up[i] = std::min(seen.up[i], t);
    });
}

// The rail a lane takes with both rails up: the pairs are (0, 0) and (1, 1) in this job, and
// lanes stripe from the sum of both ranks (rail_routes.h).
uint32_t striped_rail(uint32_t self, uint32_t peer, uint32_t lane) { return (lane + peer + self) % 2; }

struct Outcome {
  size_t after_down = 0;  // active results whose attempt started after the PORT_ERR was handled
  size_t after_up = 0;    // ... after the PORT_ACTIVE
  size_t on_rail_one = 0;
  uint64_t failures = 0;  // attempts that failed (a moved attempt is abandoned, not failed)
  // Lanes whose REP was in hand when the port went down and whose RTU it swallowed: such an
  // attempt is left to finish (the peer holds its half), and on hardware as here the RTU cannot
  // leave a port that is down. Each must be reported on the passive side (rtu_lost, the peer
  // could not reconnect a lane it had handed over) and kept, handed over, on the active side.
  size_t rtu_lost = 0;
  // Attempts whose REP retries ran out (the RTU could not come back through the port): the
  // passive half of the same race, repaired (the RTU-lost notice reconnects a lane not yet
  // handed over) or counted in rtu_lost. An active attempt left on the downed rail instead of
  // moving would end the same way: APortDownAtTheStartPutsEveryLaneOnTheOtherRail, where no
  // REP is in hand, keeps that rule strict (no failure of any kind).
  uint64_t unreachable = 0;
};

// Every rank: nothing given up, every lane connected once, and each active result's rail what
// the rule says for when its attempt started.
Outcome check(const Job& job, const PortSeen& seen) {
  Outcome o;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> lost;  // (passive rank, peer, lane)
  for (uint32_t i = 0; i < kRanks; ++i) {
    const Engine& e = *job.ranks[i].engine;
    EXPECT_FALSE(e.device_lost()) << "rank " << i;
    for (const auto& [kind, n] : e.stats().failures_by_name())
      if (std::string_view(kind) == "unreachable")
        o.unreachable += n;
      else if (std::string_view(kind) != "rtu_lost")
        o.failures += n;
    size_t lost_here = 0;
    for (const PeerError& err : e.errors()) {
      if (err.role == cm::Role::passive && err.cause == PeerError::Cause::rtu_peer_cannot_reconnect) {
        ++lost_here;
        lost.insert({i, err.peer, err.lane});
        continue;
      }
      ADD_FAILURE() << "rank " << i << ": " << err.describe();
    }
    o.rtu_lost += lost_here;
    size_t live = 0;
    for (const ConnResult& r : e.results()) {
      if (r.withdrawn) continue;
      ++live;
      const uint32_t rail = e.link(r).rail;
      if (rail == 1) ++o.on_rail_one;
      if (r.role != cm::Role::active) continue;
      const Nanos start = r.timings.get().start;
      if (start > seen.up[i]) {
        ++o.after_up;
        EXPECT_EQ(rail, striped_rail(i, r.peer, r.lane))
            << "rank " << i << " to " << r.peer << " lane " << r.lane << ": started after PORT_ACTIVE";
      } else if (start > seen.down[i]) {
        ++o.after_down;
        EXPECT_EQ(rail, 0u) << "rank " << i << " to " << r.peer << " lane " << r.lane
                            << ": started after PORT_ERR on rail 1";
      }
    }
    EXPECT_EQ(live + lost_here, (kRanks - 1) * kLanes) << "rank " << i << ": every lane connected once";
  }
  // Every lane connected on both ends with crossed QPNs, but those lost with their RTU: kept
  // on the active end only.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, const ConnResult*> live_results;
  for (uint32_t i = 0; i < kRanks; ++i)
    for (const ConnResult& r : job.ranks[i].engine->results())
      if (!r.withdrawn) live_results[{i, r.peer, r.lane}] = &r;
  for (const auto& [key, r] : live_results) {
    const auto [me, peer, lane] = key;
    const auto theirs = live_results.find({peer, me, lane});
    if (lost.count({peer, me, lane})) {
      EXPECT_EQ(r->role, cm::Role::active) << "rank " << me << " to " << peer << " lane " << lane;
      EXPECT_TRUE(theirs == live_results.end()) << "a lane reported lost is connected on both ends";
      continue;
    }
    if (theirs == live_results.end()) {
      ADD_FAILURE() << "rank " << me << " to " << peer << " lane " << lane
                    << ": connected on one end only, and not reported";
      continue;
    }
    EXPECT_EQ(r->remote_qpn, theirs->second->local_qpn);
    EXPECT_EQ(r->local_qpn, theirs->second->remote_qpn);
  }
  return o;
}

size_t connected(const Job& job) {
  size_t n = 0;
  for (const Rank& rk : job.ranks) n += rk.engine->connected();
  return n;
}

// Rail 1's port goes down on every node and stays down: at `after` past the start, or (when
// `once_connected` > 0) as soon as that many endpoints are connected over the job. Every lane
// connects, those started (or moved) after the PORT_ERR on rail 0.
Outcome port_down_at(Nanos after, uint64_t seed, size_t once_connected = 0, const OptionsHook& more = {}) {
  RailsJob j(kRanks, kLanes, seed, more);
  auto& job = j.job;
  EXPECT_TRUE(job) << job.error().message();
  if (!job) return {};
  PortSeen seen;
  watch_ports(j.f, *job, seen);
  auto& fab = j.f.fabric();
  if (once_connected > 0) {
    EXPECT_TRUE(run_until(j.f, *job, [&] { return connected(*job) >= once_connected; }, 60s));
  }
  const Nanos at = fab.clock().now() + after;
  for (uint32_t n = 0; n < kRanks; ++n) fab.set_port(n, 1, false, at);
  auto r = drive(j.f, *job, 600s);
  EXPECT_TRUE(r) << r.error().message();
  for (uint32_t i = 0; i < kRanks; ++i) EXPECT_NE(seen.down[i], Nanos::max()) << "rank " << i << " saw no PORT_ERR";
  return check(*job, seen);
}

TEST(RailsPortSim, APortDownAtTheStartPutsEveryLaneOnTheOtherRail) {
  // Down before any CM message arrives: every attempt under way moves, none stays on rail 1.
  const Outcome o = port_down_at(Nanos{1}, 21);
  EXPECT_EQ(o.on_rail_one, 0u);
  EXPECT_EQ(o.failures + o.unreachable + o.rtu_lost, 0u)
      << "an attempt under way on rail 1 was left to time out instead of moving";
  EXPECT_GT(o.after_down, 0u) << "no attempt started after the PORT_ERR: the test checks nothing";
}

TEST(RailsPortSim, APortDownMidWireupKeepsTheEstablishedLanesAndMovesTheRest) {
  // One connect at a time per rank and rail (windows are per rail), so that attempts start on
  // both sides of the PORT_ERR.
  auto one_at_a_time = [](EngineOptions& o) { o.connect_window = 1; };
  const size_t all = kRanks * (kRanks - 1) * kLanes;  // endpoints
  for (size_t first : {all / 4, all / 2}) {
    const Outcome o = port_down_at(Nanos{0}, 22, first, one_at_a_time);
    std::printf("[rails] rail 1 port down once %zu of %zu endpoints were connected: %zu endpoints stay on rail 1, "
                "%zu active attempts started after the PORT_ERR (all on rail 0), %llu attempts failed, %llu REP timeouts, %zu lanes "
                "lost with their RTU\n",
                first, all, o.on_rail_one, o.after_down, static_cast<unsigned long long>(o.failures), static_cast<unsigned long long>(o.unreachable), o.rtu_lost);
    EXPECT_GT(o.on_rail_one, 0u) << "lanes established on rail 1 before its PORT_ERR are kept";
    EXPECT_LT(o.on_rail_one, all / 2) << "striping alone puts half on rail 1";
    EXPECT_GT(o.after_down, 0u);
    EXPECT_EQ(o.failures, 0u) << "an attempt failed other than by the REP-in-hand race";
    // At most the attempts in flight on rail 1 at the PORT_ERR: one per rank (its window of 1).
    EXPECT_LE(o.rtu_lost, size_t{kRanks}) << "more lanes lost with their RTU than attempts could be in flight";
    EXPECT_LE(o.unreachable, uint64_t{kRanks}) << "more REP timeouts than attempts could be in flight on rail 1";
  }
}

TEST(RailsPortSim, APortThatComesBackTakesNewAttemptsAgain) {
  RailsJob j(kRanks, kLanes, 23, [](EngineOptions& o) { o.connect_window = 1; });
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  PortSeen seen;
  watch_ports(j.f, *job, seen);
  auto& fab = j.f.fabric();
  for (uint32_t n = 0; n < kRanks; ++n) fab.set_port(n, 1, false, fab.clock().now() + Nanos{1});
  // Up again once a quarter of the lanes are: the rest start with both rails up.
  ASSERT_TRUE(run_until(j.f, *job, [&] { return connected(*job) >= kRanks * (kRanks - 1) * kLanes / 4; }, 60s));
  for (uint32_t n = 0; n < kRanks; ++n) fab.set_port(n, 1, true, fab.clock().now());
  auto r = drive(j.f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  for (uint32_t i = 0; i < kRanks; ++i) EXPECT_NE(seen.up[i], Nanos::max()) << "rank " << i << " saw no PORT_ACTIVE";
  const Outcome o = check(*job, seen);
  std::printf("[rails] flap: %zu active attempts during the PORT_ERR (rail 0), %zu after the PORT_ACTIVE "
              "(striped), %zu lanes on rail 1\n",
              o.after_down, o.after_up, o.on_rail_one);
  EXPECT_GT(o.after_down, 0u);
  EXPECT_GT(o.after_up, 0u);
  EXPECT_GT(o.on_rail_one, 0u) << "rail 1 took nothing after it came back";
}

// Both rails' ports down at once, back 200 ms later (a switch reboot, say): no rail is up, so
// nothing moves and nothing is given up; the attempts' CM retries bridge the gap and every
// lane connects, striped as usual.
TEST(RailsPortSim, BothPortsDownIsLeftToTheCmAndAFlapLosesNothing) {
  RailsJob j(kRanks, kLanes, 24);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  auto& fab = j.f.fabric();
  const Nanos down = fab.clock().now() + Nanos{1};
  for (uint32_t n = 0; n < kRanks; ++n)
    for (uint32_t d = 0; d < 2; ++d) {
      fab.set_port(n, d, false, down);
      fab.set_port(n, d, true, down + 200ms);
    }
  auto r = drive(j.f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  for (uint32_t i = 0; i < kRanks; ++i) {
    const Engine& e = *job->ranks[i].engine;
    for (const PeerError& err : e.errors()) ADD_FAILURE() << "rank " << i << ": " << err.describe();
    EXPECT_EQ(e.connected(), (kRanks - 1) * kLanes) << "rank " << i;
    for (uint32_t p = 0; p < kRanks; ++p) {
      if (p == i) continue;
      EXPECT_EQ(by_rail(e, p), (std::map<uint32_t, size_t>{{0, 2}, {1, 2}})) << "rank " << i << " to " << p;
    }
  }
  expect_consistent(*job, kLanes);
}

// Only rank 0's rail 1 goes down, before the start: its PORT_ERR is rank 0's alone, and the
// other ranks learn of it only from the silence of its rail-1 listener (mlx5 and rxe tell a
// peer nothing of a remote port). Their lanes to rank 0 that stripe onto rail 1 get no answer
// (UNREACHABLE, or ADDR_ERROR where the neighbour does not resolve) and their next attempt
// takes the other rail pair (Engine::next_rail_after): every lane connects, none given up.
TEST(RailsPortSim, APeersPortDownIsLearnedFromItsSilenceAndTheLaneMovesOn) {
  RailsJob j(kRanks, kLanes, 25);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  auto& fab = j.f.fabric();
  fab.set_port(0, 1, false, fab.clock().now() + Nanos{1});
  auto r = drive(j.f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  uint64_t silent = 0;
  for (uint32_t i = 0; i < kRanks; ++i) {
    const Engine& e = *job->ranks[i].engine;
    for (const PeerError& err : e.errors()) ADD_FAILURE() << "rank " << i << ": " << err.describe();
    EXPECT_EQ(e.connected(), (kRanks - 1) * kLanes) << "rank " << i;
    for (const auto& [kind, n] : e.stats().failures_by_name()) {
      const std::string_view k(kind);
      if (k == "unreachable" || k == "address_error" || k == "route_error" || k == "connect_error") silent += n;
      else ADD_FAILURE() << "rank " << i << ": " << n << " attempts failed with " << k;
    }
    for (uint32_t p = 0; p < kRanks; ++p) {
      if (p == i) continue;
      const auto want = (i == 0 || p == 0) ? std::map<uint32_t, size_t>{{0, kLanes}}
                                           : std::map<uint32_t, size_t>{{0, kLanes / 2}, {1, kLanes / 2}};
      EXPECT_EQ(by_rail(e, p), want) << "rank " << i << " to " << p;
    }
  }
  std::printf("[rails] rank 0's rail 1 down: %llu attempts to it got no answer and moved on\n",
              static_cast<unsigned long long>(silent));
  EXPECT_GT(silent, 0u) << "no attempt went to rank 0's rail 1: the test checks nothing";
  expect_consistent(*job, kLanes);
}

}  // namespace
}  // namespace wireup::etest
