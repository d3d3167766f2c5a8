// On demand, a crossing's refusal (RejectCode::crossed) is the protocol working, not a
// stranger: rank 0 and 600 peers ask each other at the same instant, rank 0 wins about 300 of
// the crossings, more than the stranger log holds (256 hosts). Every pair must connect once,
// and the refusals must neither warn nor fill the stranger log (strangers_unlogged stays 0).
// Before the fix each crossing logged a warning and, past 256 of them, counted as an unlogged
// stranger.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "provider/sim/fabric.h"
#include "qp/factory.h"
#include "testsupport/sim_drive.h"
#include "wireup/engine.h"
#include "wireup/options.h"
#include "wireup/plan.h"
#include "wireup/stranger_log.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

TEST(OnDemandCrossing, RefusalsAreNoStrangers) {
  constexpr uint32_t kRanks = 601;
  prov::sim::SimConfig cfg;
  cfg.latency = prov::sim::LatencyModel::rxe_vm();  // every first REQ is out before any arrives
  prov::sim::SimFabric fab(cfg);
  std::vector<std::unique_ptr<qp::DefaultQpFactory>> factories;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<uint32_t> ready(kRanks, 0);
  for (uint32_t i = 0; i < kRanks; ++i) {
    fab.add_node();
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = kRanks;
    o.lanes = 1;
    o.job_key = 0xc0ffee;
    o.listen_addr = fab.address(i);
    o.on_demand = true;
    factories.push_back(std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64));
    auto e = Engine::create(fab.provider(i), o, factories.back()->hook());
    ASSERT_TRUE(e) << e.error().message();
    engines.push_back(std::move(e).value());
    engines.back()->on_lane_event([&ready, i](const LaneEvent& ev) { ready[i] += ev.kind == LaneEvent::Kind::ready; });
  }
  std::vector<Peer> all;
  for (uint32_t i = 0; i < kRanks; ++i) all.push_back(Peer{i, engines[i]->local_address()});
  for (uint32_t i = 0; i < kRanks; ++i) {
    ASSERT_TRUE(engines[i]->set_peers(i == 0 ? all : std::vector<Peer>{all[0]}));
    ASSERT_TRUE(engines[i]->start());
  }
  for (uint32_t q = 1; q < kRanks; ++q) {
    ASSERT_TRUE(engines[0]->connect(q));
    ASSERT_TRUE(engines[q]->connect(0));
  }
  std::vector<Engine*> drive;
  for (auto& e : engines) drive.push_back(e.get());
  SimDriveOptions d;
  d.bound = 3600s;
  d.settled = [&ready](uint32_t r) { return ready[r] == (r == 0 ? kRanks - 1 : 1u); };
  testing::internal::CaptureStderr();
  auto rep = sim_drive(fab, drive, d);
  const std::string logged = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(rep) << rep.error().message();

  const Stats& s = engines[0]->stats();
  uint32_t wins = 0;
  for (uint32_t q = 1; q < kRanks; ++q) wins += plan::initiates(0, q, kRanks);
  EXPECT_GT(wins, StrangerLog::kDefaultCapacity);
  // Every peer's first REQ crossed ours, so each win is one refusal.
  EXPECT_EQ(s.rejects_sent(RejectCode::crossed), wins);
  EXPECT_EQ(s[Counter::crossed_won], wins);
  EXPECT_EQ(s[Counter::strangers], 0u);
  EXPECT_EQ(s[Counter::strangers_unlogged], 0u);
  EXPECT_EQ(logged.find("crossed"), std::string::npos) << logged.substr(0, 400);
  EXPECT_EQ(engines[0]->connected(), kRanks - 1);
  EXPECT_TRUE(engines[0]->errors().empty());
  for (uint32_t q = 1; q < kRanks; ++q) EXPECT_EQ(engines[q]->connected(), 1u) << "rank " << q;
}

}  // namespace
}  // namespace wireup::etest
