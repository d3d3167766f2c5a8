// Every verb a transport uses, on every QP the engine hands over, from the initiating and the
// accepting side (tests/engine/data_plane_check.h): an all-to-all, an on-demand job, and an
// all-to-all whose QPs take their receives from one SRQ per rank. On the sim (engine_sim) and
// on rxe in the VM (engine_rdma).
#include <gtest/gtest.h>

#include "tests/engine/data_plane_check.h"
#include "tests/engine/engine_harness.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

// Room for the deepest READ burst (rxe answers max_qp_rd_atom 128) beside the other verbs.
const prov::QpCaps kCaps{160, 8, 1, 1, 0};

// What every result's peer said in its REQ (we accepted) or REP (we initiated): SRQ or not.
void expect_peer_srq(const Job& job, bool srq) {
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const Engine& e = *job.ranks[r].engine;
    for (const ConnResult& c : e.results())
      EXPECT_EQ(e.link(c).peer_srq, srq) << "rank " << r << " -> " << c.peer << " lane " << c.lane << " ("
                                         << (c.role == cm::Role::active ? "the REP's" : "the REQ's") << " SRQ bit)";
  }
}

// Both roles are among the results checked on every rank.
void expect_both_roles(const Job& job) {
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    size_t active = 0, passive = 0;
    for (const ConnResult& c : job.ranks[r].engine->results()) (c.role == cm::Role::active ? active : passive)++;
    EXPECT_GT(active, 0u) << "rank " << r;
    EXPECT_GT(passive, 0u) << "rank " << r;
  }
}

TEST(EngineDataPlane, EveryVerbOnEveryQpOfAnAllToAll) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 4);
  auto job = make_job(f, 4, 2, {}, {}, kCaps);
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_to_completion(f, *job, 120s));
  for (auto& r : job->ranks) EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors()[0].describe();
  expect_consistent(*job, 2);
  expect_both_roles(*job);
  expect_peer_srq(*job, false);
  EXPECT_EQ(expect_every_verb(*job), 4u * 3 * 2);
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

TEST(EngineDataPlane, EveryVerbOnEveryQpOnDemand) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 3);
  auto job = make_job(
      f, 3, 2,
      [](EngineOptions& o) {
        o.on_demand = true;
        o.wireup_timeout = 60s;
      },
      {}, kCaps);
  ASSERT_TRUE(job) << job.error().message();
  // Rank 0 asks for 1 and 2, rank 1 for 2 and 0 (crossing rank 0's request).
  ASSERT_TRUE(job->ranks[0].engine->connect(1));
  ASSERT_TRUE(job->ranks[0].engine->connect(2));
  ASSERT_TRUE(job->ranks[1].engine->connect(2));
  ASSERT_TRUE(job->ranks[1].engine->connect(0));
  auto ready = [&] {
    for (uint32_t me = 0; me < 3; ++me)
      for (uint32_t p = 0; p < 3; ++p)
        for (uint32_t l = 0; l < 2; ++l)
          if (p != me && job->ranks[me].engine->lane_state(p, l) != LaneState::ready) return false;
    return true;
  };
  ASSERT_TRUE(run_until(f, *job, ready, 120s));
  EXPECT_EQ(expect_every_verb(*job), 3u * 2 * 2);
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

// A transport's factory whose QPs (all of one rank) take their receives from one SRQ.
class SrqFactory {
 public:
  qp::QpFactory hook() {
    return [this](const qp::QpRequest& r) -> Result<std::unique_ptr<prov::Qp>> {
      if (!pd_) {
        auto pd = r.device.alloc_pd();
        if (!pd) return pd.error();
        pd_ = std::move(pd).value();
        auto cq = r.device.create_cq(4096, false);
        if (!cq) return cq.error();
        cq_ = std::move(cq).value();
        auto srq = pd_->create_srq(prov::SrqInitAttr{});
        if (!srq) return srq.error();
        srq_ = std::move(srq).value();
      }
      prov::QpInitAttr init;
      init.send_cq = cq_.get();
      init.recv_cq = cq_.get();
      init.caps = kCaps;
      init.srq = srq_.get();
      return pd_->create_qp(init);
    };
  }
  RankVerbs verbs() const { return RankVerbs{pd_.get(), cq_.get(), srq_.get()}; }

 private:
  std::unique_ptr<prov::Pd> pd_;
  std::unique_ptr<prov::Cq> cq_;
  std::unique_ptr<prov::Srq> srq_;  // destroyed after the QPs (the job goes first)
};

// Every handed-over QP has an SRQ, the peer's REQ (accepting side) or REP (initiating side)
// said so in its SRQ bit (LinkInfo::peer_srq), and every receive is taken from the rank's SRQ.
TEST(EngineDataPlane, EveryVerbOnEveryQpThroughAnSrq) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 3);
  std::vector<SrqFactory> factories(3);
  auto job = make_job(f, 3, 2, {}, [&](uint32_t rank, qp::QpFactory) { return factories[rank].hook(); });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_to_completion(f, *job, 120s));
  for (auto& r : job->ranks) EXPECT_TRUE(r.engine->errors().empty()) << r.engine->errors()[0].describe();
  expect_consistent(*job, 2);
  expect_both_roles(*job);
  expect_peer_srq(*job, true);
  EXPECT_EQ(expect_every_verb(*job, [&](uint32_t r) { return factories[r].verbs(); }), 3u * 2 * 2);
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

}  // namespace
}  // namespace wireup::etest
