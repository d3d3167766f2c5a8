// Engine::fail_peer on the sim: a rank that dies mid-wireup and is reported dead by the
// transport (its launcher) is given up at once by every survivor, pending lanes and all,
// instead of after the CM's timeouts; the survivors' own pairs are untouched.
#include <gtest/gtest.h>

#include "tests/engine/sim_engine_fabric.h"
#include "testsupport/sim_drive.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t kRanks = 4, kLanes = 2, kVictim = 3;

Result<Job> job_of(SimEngineFabric& f) {
  return make_job(f, kRanks, kLanes, [](EngineOptions& o) { o.wireup_timeout = 600s; });
}

// Drives the job; at 1 ms of virtual time the victim stops (no engine any more) and, when
// `report` is set, every survivor is told so through fail_peer. Returns the drive's result
// and what each survivor's fail_peer gave up.
Result<SimDriveReport> run(SimEngineFabric& f, Job& job, bool report, std::vector<size_t>& given_up) {
  std::vector<Engine*> engines;
  for (auto& r : job.ranks) engines.push_back(r.engine.get());
  SimDriveOptions o;
  o.bound = 20s;  // far below the CM's retries of a REQ nobody answers (~6 s each) and the deadline
  o.at = 1ms;
  o.intervene = [&](std::vector<Engine*>& e) {
    e[kVictim] = nullptr;
    if (!report) return;
    for (uint32_t r = 0; r < kRanks; ++r)
      if (r != kVictim) given_up.push_back(job.ranks[r].engine->fail_peer(kVictim, "rank 3 died (test)"));
  };
  return sim_drive(f.fabric(), engines, o);
}

TEST(FailPeer, ADeadPeerReportedIsGivenUpAtOnce) {
  SimEngineFabric f(kRanks, {});
  auto job = job_of(f);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<size_t> given_up;
  auto r = run(f, *job, true, given_up);
  ASSERT_TRUE(r) << r.error().message();
  size_t total = 0;
  for (size_t n : given_up) total += n;
  EXPECT_GT(total, 0u) << "the victim died with nothing pending: the test shows nothing";
  for (uint32_t me = 0; me < kRanks; ++me) {
    if (me == kVictim) continue;
    const Engine& e = *job->ranks[me].engine;
    EXPECT_TRUE(e.done());
    size_t to_victim = 0;
    for (const PeerError& pe : e.errors()) {
      EXPECT_EQ(pe.peer, kVictim) << "a survivor lost a pair with another survivor: " << pe.describe();
      if (pe.cause != PeerError::Cause::peer_reported_dead) continue;
      ++to_victim;
      EXPECT_EQ(pe.failure.kind, cm::FailKind::disconnected) << pe.describe();
      EXPECT_NE(pe.describe().find("rank 3 died (test)"), std::string::npos) << pe.describe();
    }
    size_t established_to_victim = 0;
    for (const ConnResult& c : e.results())
      if (!c.withdrawn && c.peer == kVictim) ++established_to_victim;
    EXPECT_EQ(to_victim + established_to_victim, kLanes) << "rank " << me << ": every lane of the victim is settled";
  }
  expect_consistent(*job, kLanes, {kVictim});
}

// The control: the same death unreported leaves the survivors waiting past the bound.
TEST(FailPeer, UnreportedTheSameDeathOutlastsTheBound) {
  SimEngineFabric f(kRanks, {});
  auto job = job_of(f);
  ASSERT_TRUE(job) << job.error().message();
  std::vector<size_t> unused;
  auto r = run(f, *job, false, unused);
  ASSERT_FALSE(r) << "the survivors finished without being told: fail_peer is not what ended them";
  EXPECT_EQ(r.error().code, ErrorCode::timed_out) << r.error().message();
}

TEST(FailPeer, AnEstablishedLaneIsNotGivenUp) {
  SimEngineFabric f(2, {});
  auto job = make_job(f, 2, 1);
  ASSERT_TRUE(job) << job.error().message();
  auto r = drive(f, *job, 20s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(job->ranks[0].engine->fail_peer(1, "late"), 0u) << "an established lane is not a pending one";
  EXPECT_TRUE(job->ranks[0].engine->errors().empty());
}

}  // namespace
}  // namespace wireup::etest
