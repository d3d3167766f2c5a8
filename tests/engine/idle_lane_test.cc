// On demand, a lane disconnected with disconnect() is idle: nothing asked and nothing held.
// What gives up a peer's open lanes (fail_peer, the loss of the device) must leave it alone:
// no FAILED lane event, no error, and the engine's count of open pairs unchanged (a pair given
// up twice would take the count below the truth, or wrap it, and done() would never be true).
#include <gtest/gtest.h>

#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kLanes = 2;

Result<Job> od_job(SimEngineFabric& f, uint32_t n) {
  return make_job(f, n, kLanes, [](EngineOptions& o) {
    o.on_demand = true;
    o.wireup_timeout = 60s;
  });
}

// Lane events of one engine, by kind.
struct LaneLog {
  size_t ready = 0, failed = 0, closed = 0;
  void watch(Engine& e) {
    e.on_lane_event([this](const LaneEvent& ev) {
      switch (ev.kind) {
        case LaneEvent::Kind::ready: ++ready; break;
        case LaneEvent::Kind::failed: ++failed; break;
        case LaneEvent::Kind::closed: ++closed; break;
      }
    });
  }
};

// Rank 0 connects to `peer`, waits for every lane, then disconnects it and waits until both
// sides are idle.
void connect_then_disconnect(SimEngineFabric& f, Job& job, uint32_t peer) {
  Engine& a = *job.ranks[0].engine;
  Engine& b = *job.ranks[peer].engine;
  ASSERT_TRUE(a.connect(peer));
  ASSERT_TRUE(run_until(f, job, [&] {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (a.lane_state(peer, l) != LaneState::ready || b.lane_state(0, l) != LaneState::ready) return false;
    return true;
  }, 30s));
  ASSERT_TRUE(a.disconnect(peer));
  ASSERT_TRUE(run_until(f, job, [&] {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (a.lane_state(peer, l) != LaneState::idle || b.lane_state(0, l) != LaneState::idle) return false;
    return true;
  }, 30s));
}

TEST(IdleLane, FailPeerLeavesADisconnectedLaneAlone) {
  SimEngineFabric f(2, {});
  auto job = od_job(f, 2);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  connect_then_disconnect(f, *job, 1);
  if (HasFatalFailure()) return;
  LaneLog log;
  log.watch(a);
  const size_t open_before = a.pairs().open();
  const size_t errors_before = a.errors().size();
  ASSERT_EQ(open_before, 0u);
  ASSERT_TRUE(a.done());

  EXPECT_EQ(a.fail_peer(1, "rank 1 died (test)"), 0u) << "an idle lane is not a pending one";
  ASSERT_TRUE(a.progress());  // lane events are delivered at the end of progress()
  EXPECT_EQ(log.failed, 0u) << "a FAILED lane event for a lane nobody asked for";
  EXPECT_EQ(a.errors().size(), errors_before);
  EXPECT_EQ(a.pairs().open(), open_before) << "the open count moved for an idle lane";
  for (uint32_t l = 0; l < kLanes; ++l) EXPECT_EQ(a.lane_state(1, l), LaneState::idle) << "lane " << l;
  EXPECT_TRUE(a.done());

  // The lane is still usable: a later connect opens it, and done() follows it.
  ASSERT_TRUE(a.connect(1));
  EXPECT_EQ(a.pairs().open(), kLanes);
  EXPECT_FALSE(a.done());
  ASSERT_TRUE(run_until(f, *job, [&] { return a.lane_state(1, 0) == LaneState::ready && a.done(); }, 30s));
  EXPECT_EQ(log.ready, kLanes);
}

TEST(IdleLane, DeviceLossLeavesADisconnectedLaneAlone) {
  SimEngineFabric f(3, {});
  auto job = od_job(f, 3);
  ASSERT_TRUE(job) << job.error().message();
  Engine& a = *job->ranks[0].engine;
  connect_then_disconnect(f, *job, 1);
  if (HasFatalFailure()) return;
  LaneLog log;
  log.watch(a);
  // A lane still asked for when the device goes: that one is given up, the idle ones are not.
  ASSERT_TRUE(a.connect(2));
  ASSERT_EQ(a.pairs().open(), kLanes);
  f.fabric().remove_device(0, 0, f.fabric().now());
  ASSERT_TRUE(run_until(f, *job, [&] { return a.device_lost() && a.done(); }, 30s))
      << "open count " << a.pairs().open();
  EXPECT_EQ(a.pairs().open(), 0u);
  for (const PeerError& pe : a.errors()) EXPECT_EQ(pe.peer, 2u) << "the idle lane was given up: " << pe.describe();
  EXPECT_EQ(log.failed + log.ready, kLanes) << "each lane asked for settles once, the idle ones not at all";
  for (uint32_t l = 0; l < kLanes; ++l) EXPECT_EQ(a.lane_state(1, l), LaneState::idle) << "lane " << l;
}

}  // namespace
}  // namespace wireup::etest
