// The engine at scale and under faults on the simulated fabric (virtual time).
#include <cstdio>

#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::sim::SimConfig;
using prov::sim::LatencyModel;

void print(const char* what, const DriveReport& r, const Job& job) {
  uint64_t conns = 0, retries = 0, events = 0;
  for (auto& rk : job.ranks) {
    conns += rk.engine->results().size();
    retries += rk.engine->stats()[Counter::retries];
    events += rk.engine->stats()[Counter::events];
  }
  std::printf("[engine] sim %s: %llu endpoints, %llu retries, %llu CM events, %.3f s virtual, %.2f s wall, "
              "%llu progress calls\n",
              what, (unsigned long long)conns, (unsigned long long)retries, (unsigned long long)events,
              r.virtual_time.count() / 1e9, r.wall_s, (unsigned long long)r.progress_calls);
}

// After every engine closed and the factories are gone, nothing of the fabric is left.
void expect_all_released(SimEngineFabric& f, Job& job) {
  for (auto& rk : job.ranks) {
    if (!rk.engine) continue;
    ASSERT_TRUE(rk.engine->close(0s));
  }
  for (auto& rk : job.ranks) {
    rk.engine.reset();
    rk.factory.reset();
  }
  const auto& s = f.fabric().stats();
  EXPECT_EQ(s.ids_alive, 0u);
  EXPECT_EQ(s.qps_alive, 0u);
  EXPECT_EQ(s.cqs_alive, 0u);
  EXPECT_EQ(s.pds_alive, 0u);
  EXPECT_EQ(s.events_unacked, 0u);
  EXPECT_EQ(s.destroyed_with_unacked, 0u) << "an id was destroyed with an un-acked event";
}

TEST(EngineSim, AllToAll256RanksTwoLanes) {
  SimConfig cfg;
  cfg.seed = 1;
  cfg.latency = LatencyModel::hardware();
  SimEngineFabric f(256, cfg);
  auto job = make_job(f, 256, 2);
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  print("256 ranks x 2 lanes", *r, *job);
  size_t endpoints = 0;
  for (auto& rk : job->ranks) {
    EXPECT_TRUE(rk.engine->errors().empty());
    endpoints += rk.engine->results().size();
  }
  EXPECT_EQ(endpoints / 2, 65280u);
  expect_consistent(*job, 2);
  expect_all_released(f, *job);
}

TEST(EngineSim, OneRankTo4096Peers) {
  SimConfig cfg;
  cfg.seed = 2;
  SimEngineFabric f(4097, cfg);
  // Rank 0 knows everyone; every other rank knows only rank 0.
  Job job;
  std::vector<Peer> table;
  for (uint32_t i = 0; i < 4097; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = 4097;
    o.job_key = 77;
    o.listen_addr = f.address(i);
    Rank rk;
    rk.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    auto e = Engine::create(f.provider(i), o, rk.factory->hook());
    ASSERT_TRUE(e) << e.error().message();
    rk.engine = std::move(e).value();
    table.push_back(Peer{i, rk.engine->local_address()});
    job.ranks.push_back(std::move(rk));
  }
  ASSERT_TRUE(job.ranks[0].engine->set_peers(table));
  for (uint32_t i = 1; i < 4097; ++i) {
    std::vector<Peer> mine = {table[0], table[i]};
    ASSERT_TRUE(job.ranks[i].engine->set_peers(mine));
  }
  for (auto& rk : job.ranks) ASSERT_TRUE(rk.engine->start());
  auto r = drive(f, job, 600s);
  ASSERT_TRUE(r) << r.error().message();
  print("1 rank to 4096 peers", *r, job);
  const Engine& hub = *job.ranks[0].engine;
  EXPECT_EQ(hub.results().size(), 4096u);
  EXPECT_TRUE(hub.errors().empty());
  // Balanced roles: the hub initiated about half.
  EXPECT_NEAR(double(hub.stats()[Counter::established_active]), 2048.0, 1.0);
  for (uint32_t i = 1; i < 4097; ++i) {
    ASSERT_EQ(job.ranks[i].engine->results().size(), 1u);
    const ConnResult& c = job.ranks[i].engine->results()[0];
    bool found = false;
    for (const ConnResult& h : hub.results())
      if (h.peer == i) {
        EXPECT_EQ(h.remote_qpn, c.local_qpn);
        EXPECT_EQ(h.local_qpn, c.remote_qpn);
        found = true;
      }
    EXPECT_TRUE(found) << "rank " << i;
  }
  expect_all_released(f, job);
}

// 5% of CM messages lost, 1% of requests force-rejected, one node dead from the start of
// wireup: every live pair connected exactly once with crossed QPNs, every pair of the dead
// node reported against it, everything released.
TEST(EngineSim, LossRejectsAndADeadNode) {
  SimConfig cfg;
  cfg.seed = 7;
  cfg.faults.loss = 0.05;
  cfg.faults.rejects.push_back(prov::sim::ForcedReject{-1, -1, 28, 0.01, -1});
  const uint32_t n = 64, dead = 13;
  SimEngineFabric f(n, cfg);
  auto job = make_job(f, n, 2, [](EngineOptions& o) {
    o.max_attempts = 8;
    o.wireup_timeout = 400s;
  });
  ASSERT_TRUE(job) << job.error().message();
  f.fabric().kill_node(dead, f.fabric().now());
  auto r = drive(f, *job, 1000s, {dead});
  ASSERT_TRUE(r) << r.error().message();
  print("64 ranks x 2 lanes, 5% loss, 1% rejects, 1 dead", *r, *job);
  expect_consistent(*job, 2, {dead});
  uint64_t retries = 0;
  for (uint32_t me = 0; me < n; ++me) {
    if (me == dead) continue;
    const Engine& e = *job->ranks[me].engine;
    retries += e.stats()[Counter::retries];
    EXPECT_EQ(e.results().size(), (n - 2) * 2u) << "rank " << me;
    ASSERT_EQ(e.errors().size(), 2u) << "rank " << me << ": only the dead rank's two lanes may fail";
    for (const PeerError& pe : e.errors()) EXPECT_EQ(pe.peer, dead) << pe.describe();
  }
  EXPECT_GT(retries, 0u) << "the faults should have caused retries";
  EXPECT_GT(f.fabric().stats().messages_lost, 0u);
  EXPECT_GT(f.fabric().stats().forced_rejects, 0u);
  job->ranks[dead].engine.reset();  // the dead process's objects go with it
  job->ranks[dead].factory.reset();
  expect_all_released(f, *job);
}

// Windows of one: a rank whose only QP place is held by its own connect must still accept
// (the per-role QP windows); found by the sim as a deadlock at 33 ranks x 2 lanes.
TEST(EngineSim, TinyWindowsCannotDeadlock) {
  SimConfig cfg;
  cfg.seed = 5;
  SimEngineFabric f(12, cfg);
  auto job = make_job(f, 12, 3, [](EngineOptions& o) {
    o.qp_window = 1;
    o.connect_window = 1;
  });
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 300s);
  ASSERT_TRUE(r) << r.error().message();
  for (auto& rk : job->ranks) EXPECT_EQ(rk.engine->results().size(), 11u * 3);
  expect_consistent(*job, 3);
}

// After wireup, what happens to established connections reaches the transport through the
// steady channel's callback: a peer's disconnect, and a device removal.
TEST(EngineSim, SteadyEventsReachTheTransport) {
  SimConfig cfg;
  cfg.seed = 3;
  SimEngineFabric f(4, cfg);
  auto job = make_job(f, 4, 1);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<std::vector<SteadyEvent>> seen(4);
  for (uint32_t r = 0; r < 4; ++r)
    job->ranks[r].engine->on_steady_event([&seen, r](const SteadyEvent& e) { seen[r].push_back(e); });
  auto rep = drive(f, *job, 60s);
  ASSERT_TRUE(rep) << rep.error().message();
  auto settle = [&] {  // 3 s: past the IB CM's 2,048 ms TIMEWAIT
    for (int i = 0; i < 600; ++i) {
      f.fabric().run_for(5ms);
      for (auto& rk : job->ranks) {
        auto w = rk.engine->progress();
        ASSERT_TRUE(w) << w.error().message();
      }
    }
  };
  // Rank 0 leaves: ranks 1..3 each learn of it for the right peer and lane.
  ASSERT_TRUE(job->ranks[0].engine->close(0s));
  settle();
  for (uint32_t r = 1; r < 4; ++r) {
    // DISCONNECTED, then TIMEWAIT_EXIT once the IB CM's timewait ends (the QP may be reused).
    ASSERT_EQ(seen[r].size(), 2u) << "rank " << r;
    EXPECT_EQ(seen[r][0].peer, 0u);
    EXPECT_EQ(seen[r][0].lane, 0u);
    EXPECT_EQ(seen[r][0].type, prov::CmEventType::disconnected);
    EXPECT_EQ(seen[r][1].peer, 0u);
    EXPECT_EQ(seen[r][1].type, prov::CmEventType::timewait_exit);
  }
  // Rank 2's device goes away: DEVICE_REMOVAL for each id it still holds (the one to the
  // departed rank 0 too: ids live until close()), each reported once; then the engine
  // destroys them all (rdma_cm(7)), the listener's too if it still lingers.
  const bool listening = job->ranks[2].engine->setup_channel_open();
  f.fabric().remove_device(2, 0, f.fabric().now());
  settle();
  size_t removals = 0, listener = 0;
  for (const SteadyEvent& e : seen[2]) {
    if (e.type != prov::CmEventType::device_removal) continue;
    if (e.scope == SteadyEvent::Scope::listener) {
      ++listener;
      continue;
    }
    ++removals;
    EXPECT_NE(e.peer, 2u);
  }
  EXPECT_EQ(removals, 3u);
  EXPECT_EQ(listener, listening ? 1u : 0u);
  const Engine& e2 = *job->ranks[2].engine;
  EXPECT_TRUE(e2.device_lost());
  EXPECT_EQ(e2.live_ids(), 0u);
  EXPECT_FALSE(e2.setup_channel_open());
  EXPECT_EQ(e2.stats()[Counter::device_removals], 3u + listener);
}

TEST(EngineSim, StrangerFloodLeavesNoResidue) {
  // 40 ranks, of which 8 carry another job key: they are turned away before any QP exists
  // and the 32 real ranks connect all-to-all regardless.
  SimConfig cfg;
  cfg.seed = 11;
  SimEngineFabric f(40, cfg);
  auto job = make_job(f, 40, 1, [](EngineOptions& o) {
    if (o.rank >= 32) o.job_key = 0xdeadbeef;
    o.max_attempts = 2;
    o.wireup_timeout = 30s;
  });
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 300s);
  ASSERT_TRUE(r) << r.error().message();
  uint64_t strangers = 0;
  for (uint32_t me = 0; me < 32; ++me) {
    const Engine& e = *job->ranks[me].engine;
    strangers += e.stats()[Counter::strangers];
    EXPECT_EQ(e.results().size(), 31u) << "rank " << me;
    for (const ConnResult& c : e.results()) EXPECT_LT(c.peer, 32u);
    for (const PeerError& pe : e.errors()) EXPECT_GE(pe.peer, 32u) << pe.describe();
  }
  EXPECT_GT(strangers, 0u);
  expect_all_released(f, *job);
}

}  // namespace
}  // namespace wireup::etest
