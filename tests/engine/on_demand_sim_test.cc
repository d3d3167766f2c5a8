// On demand, what only the sim can stage: a stale-connection reject (IB reason 10) on a
// reconnect, and an ask whose peer never answers, timed out alone within its own deadline.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/engine/counted_qp.h"
#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

Result<Job> od_job(SimEngineFabric& f, uint32_t n, std::vector<int64_t>& live, std::vector<uint64_t>& made,
                   Nanos timeout = 60s) {
  return make_job(
      f, n, 1,
      [timeout](EngineOptions& o) {
        o.on_demand = true;
        o.wireup_timeout = timeout;
      },
      [&](uint32_t rank, qp::QpFactory inner) { return counted(std::move(inner), live[rank], made[rank]); });
}

TEST(OnDemandSim, AStaleConnectionRejectOnReconnectIsRetriedWithAFreshQp) {
  prov::sim::SimConfig cfg;
  // Rank 1's CM answers the first REQ after the reconnect with REJ 10, as a kernel does that
  // still holds the old connection of that QPN (cm_match_req).
  SimEngineFabric f(2, cfg);
  std::vector<int64_t> live(2, 0);
  std::vector<uint64_t> made(2, 0);
  auto job = od_job(f, 2, live, made);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  Engine& b = *job->ranks[1].engine;
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(1, 0) == LaneState::ready && b.done(); }, 30s));
  ASSERT_TRUE(a.disconnect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return b.lane_state(0, 0) == LaneState::idle; }, 30s));
  f.fabric().faults().rejects.push_back(prov::sim::ForcedReject{0, 1, prov::reject_reason::stale_conn, 1, 1});
  const uint64_t made_before = made[0];
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(1, 0) == LaneState::ready; }, 30s));
  EXPECT_TRUE(a.errors().empty()) << a.errors().front().describe();
  EXPECT_EQ(a.stats().rejects_received(prov::reject_reason::stale_conn), 1u);
  EXPECT_EQ(a.results().back().attempts, 2u) << "the REJ 10 cost one attempt";
  EXPECT_EQ(made[0] - made_before, 2u) << "a fresh QP for the retry";
  EXPECT_EQ(live[0], 1) << "the rejected attempt's QP went back";
}

// Connect and disconnect, over and over, far faster than the 300 s deadline of each ask: the
// engine holds nothing per cycle. Each ask queues its deadline, which used to stay until it
// passed (300 s of asks: ~10 MB in wireup_churn's 100,000 sim cycles); the stale ones now go
// once they outnumber the open pairs. The results stay one per lane.
TEST(OnDemandSim, ConnectAndDisconnectOverAndOverHoldsNothingPerCycle) {
  SimEngineFabric f(2, prov::sim::SimConfig{});
  std::vector<int64_t> live(2, 0);
  std::vector<uint64_t> made(2, 0);
  auto job = od_job(f, 2, live, made, 300s);
  ASSERT_TRUE(job) << job.error().message();
  Engine* e[2] = {job->ranks[0].engine.get(), job->ranks[1].engine.get()};
  const Nanos t0 = f.fabric().now();
  size_t most = 0;
  for (uint32_t c = 0; c < 600; ++c) {
    ASSERT_TRUE(e[c % 2]->connect(1 - c % 2));
    if (c % 3 == 0) {
      ASSERT_TRUE(e[1 - c % 2]->connect(c % 2));  // crossing
    }
    ASSERT_TRUE(run_until(f, *job, [&] {
      return e[0]->lane_state(1, 0) == LaneState::ready && e[1]->lane_state(0, 0) == LaneState::ready;
    }, 30s)) << "cycle " << c;
    ASSERT_TRUE(e[(c / 2) % 2]->disconnect(1 - (c / 2) % 2));
    ASSERT_TRUE(run_until(f, *job, [&] {
      return e[0]->lane_state(1, 0) == LaneState::idle && e[1]->lane_state(0, 0) == LaneState::idle;
    }, 30s)) << "cycle " << c;
    for (Engine* x : e) {
      most = std::max(most, x->deadlines_queued());
      ASSERT_EQ(x->results().size(), 1u) << "cycle " << c;
    }
  }
  EXPECT_LT(f.fabric().now() - t0, 300s) << "the deadlines must not have passed: the test needs them pending";
  EXPECT_LE(most, 2u + 64u) << "deadlines queued beyond the open pairs plus the slack";
  EXPECT_EQ(e[0]->stats()[Counter::lanes_closed] + e[1]->stats()[Counter::lanes_closed], 1200u);
}

TEST(OnDemandSim, AnAskWhosePeerNeverAnswersTimesOutAloneAtItsOwnDeadline) {
  prov::sim::SimConfig cfg;
  cfg.faults.deaths.push_back(prov::sim::NodeDeath{2, 0ns});  // rank 2's node is dead from the start
  SimEngineFabric f(3, cfg);
  std::vector<int64_t> live(3, 0);
  std::vector<uint64_t> made(3, 0);
  auto job = od_job(f, 3, live, made, 4s);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  const Nanos t0 = f.fabric().now();
  ASSERT_TRUE(a.connect(2));
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(2, 0) == LaneState::connecting && f.fabric().now() >= t0 + 1s; }, 10s));
  const Nanos t1 = f.fabric().now();
  ASSERT_TRUE(a.connect(1));  // asked 1 s later: its own deadline
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(2, 0) == LaneState::failed; }, 10s));
  const Nanos failed_at = f.fabric().now();
  EXPECT_GE(failed_at - t0, 4s);
  EXPECT_LT(failed_at - t0, 4s + 100ms) << "given up at its deadline, not later";
  ASSERT_EQ(a.errors().size(), 1u);
  EXPECT_EQ(a.errors()[0].peer, 2u);
  EXPECT_EQ(a.errors()[0].cause, PeerError::Cause::timed_out) << a.errors()[0].describe();
  EXPECT_EQ(a.lane_state(1, 0), LaneState::ready) << "the other ask is untouched";
  EXPECT_LT(t1 - t0, 4s);
  EXPECT_TRUE(a.done());
}

TEST(OnDemandSim, AnAddressNeverGivenTimesOutAndIsAskedForAgain) {
  SimEngineFabric f(2, {});
  std::vector<int64_t> live(2, 0);
  std::vector<uint64_t> made(2, 0);
  Job job;
  for (uint32_t i = 0; i < 2; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = 2;
    o.lanes = 1;
    o.job_key = 0x77;
    o.listen_addr = f.address(i);
    o.on_demand = true;
    o.wireup_timeout = 2s;
    Rank r;
    r.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    auto e = Engine::create(f.provider(i), o, counted(r.factory->hook(), live[i], made[i]));
    ASSERT_TRUE(e) << e.error().message();
    r.engine = std::move(e).value();
    ASSERT_TRUE(r.engine->start());
    job.ranks.push_back(std::move(r));
  }
  Engine& a = *job.ranks[0].engine;
  const Peer b{1, job.ranks[1].engine->local_address()};
  uint32_t asked = 0;
  a.on_address_needed([&](uint32_t) { ++asked; });  // the first answer never comes
  ASSERT_TRUE(a.connect(1));
  ASSERT_TRUE(run_until(f, job, [&] { return a.lane_state(1, 0) == LaneState::failed; }, 10s));
  ASSERT_EQ(a.errors().size(), 1u);
  EXPECT_NE(a.errors()[0].describe().find("no address for the peer"), std::string::npos) << a.errors()[0].describe();
  EXPECT_EQ(made[0], 0u) << "no QP without an address";
  a.on_address_needed([&](uint32_t peer) {
    ++asked;
    EXPECT_TRUE(a.add_peer(peer == 1 ? b : Peer{}));  // answered from inside the callback
  });
  ASSERT_TRUE(a.connect(1));
  EXPECT_EQ(asked, 2u) << "a second ask after the first went unanswered";
  ASSERT_TRUE(run_until(f, job, [&] { return a.lane_state(1, 0) == LaneState::ready; }, 10s));
}

}  // namespace
}  // namespace wireup::etest
