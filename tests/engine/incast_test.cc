// Incast on the simulated fabric: 33 ranks that know only rank 0, so its 16 planned initiators
// send their REQs at once into a listener with a backlog of 2. Without pacing the sim's CM drops
// REQs at the full backlog (as ucma.c/cm.c do) and the senders wait a CM timeout; with pacing
// (wireup/incast.h) nothing is dropped and the job ends sooner. Sim only: the same incast on the
// real stack is tests/mpi/incast-check.sh (mpi.incast.*, in the VM).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "provider/sim/fabric.h"
#include "qp/factory.h"
#include "testsupport/sim_drive.h"
#include "wireup/engine.h"
#include "wireup/options.h"

namespace wireup {
namespace {

using namespace std::chrono_literals;

struct IncastRun {
  uint64_t backlog_drops = 0;
  uint64_t req_retransmits = 0;
  uint64_t backlog_peak = 0;
  size_t hub_connected = 0;
  uint64_t paced_starts = 0;
  Nanos end{0};
};

IncastRun run_incast(bool paced) {
  constexpr uint32_t kRanks = 33;
  prov::sim::SimConfig cfg;
  cfg.latency = prov::sim::LatencyModel::rxe_vm();
  prov::sim::SimFabric fab(cfg);
  for (uint32_t i = 0; i < kRanks; ++i) fab.add_node();
  std::vector<std::unique_ptr<qp::DefaultQpFactory>> factories;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < kRanks; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = kRanks;
    o.lanes = 1;
    o.job_key = 0x1ca57;
    o.listen_addr = fab.address(i);
    o.backlog = 2;
    o.incast = incast::Pacing{paced, 512, 100};  // the burst is capped at backlog / 2 = 1
    o.wireup_timeout = 600s;
    factories.push_back(std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64));
    auto e = Engine::create(fab.provider(i), o, factories.back()->hook());
    EXPECT_TRUE(e) << e.error().message();
    if (!e) return {};
    table.push_back(Peer{i, (*e)->local_address()});
    engines.push_back(std::move(e).value());
  }
  for (uint32_t i = 0; i < kRanks; ++i) {
    const Status s = i == 0 ? engines[i]->set_peers(table) : engines[i]->set_peers(std::vector<Peer>{table[0]});
    EXPECT_TRUE(s && engines[i]->start());
  }
  std::vector<Engine*> v;
  for (auto& e : engines) v.push_back(e.get());
  auto r = sim_drive(fab, v, 3600s);
  EXPECT_TRUE(r) << r.error().message();
  IncastRun out;
  out.backlog_drops = fab.stats().backlog_drops;
  out.req_retransmits = fab.stats().req_retransmits;
  out.backlog_peak = fab.stats().backlog_peak;
  out.hub_connected = engines[0]->connected();
  for (auto& e : engines) out.paced_starts += e->stats()[Counter::connects_paced];
  out.end = r ? r->virtual_end : Nanos{0};
  engines.clear();  // QPs before the factories' PDs and CQs
  std::printf("incast %s: %zu connected at rank 0, %llu REQs dropped at the backlog, %llu resent, peak %llu waiting, "
              "%llu first connects paced, done at %.3f s (virtual)\n",
              paced ? "paced" : "off", out.hub_connected, (unsigned long long)out.backlog_drops,
              (unsigned long long)out.req_retransmits, (unsigned long long)out.backlog_peak,
              (unsigned long long)out.paced_starts, double(out.end.count()) / 1e9);
  return out;
}

TEST(EngineIncast, WithoutPacingTheBacklogOverflowsAndSendersWaitACmTimeout) {
  const IncastRun off = run_incast(false);
  EXPECT_EQ(off.hub_connected, 32u);  // every pair made in the end, after the CM's resends
  EXPECT_GT(off.backlog_drops, 0u);
  EXPECT_GE(off.req_retransmits, off.backlog_drops);
  EXPECT_EQ(off.backlog_peak, 2u);
  EXPECT_EQ(off.paced_starts, 0u);
  EXPECT_GT(off.end, 6s);  // at least one CM timeout (6.1 s) was waited out
}

TEST(EngineIncast, PacedNothingIsDroppedAndTheJobEndsSooner) {
  const IncastRun paced = run_incast(true);
  const IncastRun off = run_incast(false);
  EXPECT_EQ(paced.hub_connected, 32u);
  EXPECT_EQ(paced.backlog_drops, 0u);
  EXPECT_EQ(paced.req_retransmits, 0u);
  EXPECT_LE(paced.backlog_peak, 2u);
  EXPECT_GT(paced.paced_starts, 0u);  // the 15 farther initiators of rank 0 were held back
  EXPECT_LT(paced.end, off.end);
}

}  // namespace
}  // namespace wireup
