// Rails at job scale on the simulated fabric: 1,024 ranks on 128 nodes of 8 NICs each (a GPU
// node's shape: 8 processes, 8 NICs, one network per NIC), every rank taking all 8 as its rails.
// Its own ctest (engine.sim.rails_1024): about a million connections.
#include <chrono>
#include <cstdio>
#include <map>

#include "tests/engine/rails_sim_job.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using rails_sim::by_rail;
using rails_sim::RailsJob;

constexpr uint32_t kRanks = 1024, kPerNode = 8, kRails = 8, kLanes = 2;

// Lane `lane` between ranks a and b takes the pair (a + b + lane) mod 8 (rail_routes.h: the sum
// of both ranks); every rank's rail k pairs with the peer's rail k (the same subnet). So rank a
// has, on rail k, one lane for each (peer, lane) whose sum falls on k.
std::map<uint32_t, size_t> striped(uint32_t a) {
  std::map<uint32_t, size_t> n;
  for (uint32_t b = 0; b < kRanks; ++b)
    for (uint32_t l = 0; l < kLanes && b != a; ++l) ++n[(a + b + l) % kRails];
  return n;
}

TEST(RailsSimScale, EightRailsAt1024Ranks) {
  const auto t0 = std::chrono::steady_clock::now();
  RailsJob j(kRanks, kLanes, 21, {}, rails_sim::Shape{kRails, kPerNode});
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(j.f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  size_t endpoints = 0, errors = 0;
  std::map<uint32_t, size_t> all;  // rail -> endpoints, every rank
  for (uint32_t i = 0; i < kRanks; ++i) {
    const Engine& e = *job->ranks[i].engine;
    errors += e.errors().size();
    if (!e.errors().empty()) ADD_FAILURE() << "rank " << i << ": " << e.errors().front().describe();
    endpoints += e.results().size();
    const std::map<uint32_t, size_t> n = by_rail(e);  // each result on its rail's device
    EXPECT_EQ(n, striped(i)) << "rank " << i << ": lanes per rail";
    for (auto [rail, k] : n) all[rail] += k;
  }
  EXPECT_EQ(endpoints, size_t(kRanks) * (kRanks - 1) * kLanes);
  EXPECT_EQ(all.size(), size_t(kRails));
  for (auto [rail, k] : all) EXPECT_EQ(k, size_t(kRanks) * (kRanks - 1) * kLanes / kRails) << "rail " << rail;
  expect_consistent(*job, kLanes);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[rails] %u ranks (%u per node) x %u rails x %u lanes: %zu endpoints, %zu errors, rail 0 %zu .. rail 7 "
              "%zu endpoints; %.3f s virtual, drive %.1f s wall, %.1f s wall in all\n",
              kRanks, kPerNode, kRails, kLanes, endpoints, errors, all[0], all[kRails - 1],
              r->virtual_time.count() / 1e9, r->wall_s, wall);
}

}  // namespace
}  // namespace wireup::etest
