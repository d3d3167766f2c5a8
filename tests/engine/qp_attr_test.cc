// What the handed-over QPs carry, read back from the QPs themselves (ibv_query_qp on rdma):
// the access flags a transport's one-sided operations need on both ends, the READ/atomic
// depths negotiated between two ranks configured differently, and the one ACK timeout.
#include "tests/engine/engine_harness.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
namespace access = prov::access;
namespace m = prov::qp_mask;

constexpr uint32_t kOneSided = access::remote_write | access::remote_read | access::remote_atomic;

struct Configured {
  uint8_t initiator_depth;
  uint8_t responder_resources;
};

prov::QpAttr query(const Engine& e, uint32_t result) {
  prov::Qp* qp = e.qp(result);
  EXPECT_NE(qp, nullptr);
  if (qp == nullptr) return {};
  auto a = qp->query(m::state | m::access_flags | m::max_qp_rd_atomic | m::max_dest_rd_atomic | m::timeout |
                     m::path_mtu | m::retry_cnt | m::rnr_retry | m::min_rnr_timer);
  EXPECT_TRUE(a) << a.error().message();
  return a ? *a : prov::QpAttr{};
}

// The result's peer QP, found by its QPN on the peer's engine.
const ConnResult* peer_result(const Job& job, uint32_t me, const ConnResult& r) {
  for (const ConnResult& x : job.ranks[r.peer].engine->results())
    if (x.peer == me && x.local_qpn == r.remote_qpn) return &x;
  return nullptr;
}

TEST(QpAttributes, BothEndsCarryTheNegotiatedDepthsAccessAndAckTimeout) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  // Rank 0 would issue 3 and take 5; rank 1 would issue 4 and take 2. Whoever initiates, each
  // QP may issue at most what the other end takes, and no more than its own side asked for.
  const Configured cfg[2] = {{3, 5}, {4, 2}};
  constexpr uint8_t kAckTimeout = 20;  // 4.3 s; neither rxe's nor the sim's CM default
  auto job = make_job(f, 2, 4, [&](EngineOptions& o) {
    o.qp.max_rd_atomic = cfg[o.rank].initiator_depth;
    o.qp.max_dest_rd_atomic = cfg[o.rank].responder_resources;
    o.ack_timeout = kAckTimeout;
    o.rtu_linger = Nanos{0};
  });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_to_completion(f, *job, 120s));
  expect_consistent(*job, 4);
  size_t active = 0, passive = 0;
  for (uint32_t me = 0; me < 2; ++me) {
    const Engine& e = *job->ranks[me].engine;
    ASSERT_EQ(e.results().size(), 4u);
    for (uint32_t i = 0; i < e.results().size(); ++i) {
      const ConnResult& r = e.results()[i];
      (r.role == cm::Role::active ? active : passive)++;
      const prov::QpAttr a = query(e, i);
      const ConnResult* pr = peer_result(*job, me, r);
      ASSERT_NE(pr, nullptr);
      const prov::QpAttr b = query(*job->ranks[r.peer].engine, static_cast<uint32_t>(pr - job->ranks[r.peer].engine->results().data()));
      SCOPED_TRACE("rank " + std::to_string(me) + (r.role == cm::Role::active ? " active" : " passive") +
                   " qpn " + std::to_string(r.local_qpn));
      EXPECT_EQ(a.qp_state, prov::QpState::rts);
      // Every one-sided operation a transport posts into this QP is allowed (the peer's
      // depth toward us is not 0, so READ and atomics too).
      EXPECT_EQ(a.qp_access_flags & kOneSided, kOneSided) << "qp_access_flags 0x" << std::hex << a.qp_access_flags;
      EXPECT_EQ(a.timeout, kAckTimeout);
      // Never more outstanding than the other end takes, nor than this side configured.
      EXPECT_LE(a.max_rd_atomic, b.max_dest_rd_atomic);
      EXPECT_LE(a.max_rd_atomic, cfg[me].initiator_depth);
      EXPECT_LE(a.max_dest_rd_atomic, cfg[me].responder_resources);
      // Negotiated, not merely capped: the depth is the smaller of what the two sides asked.
      EXPECT_EQ(a.max_rd_atomic, std::min(cfg[me].initiator_depth, cfg[r.peer].responder_resources));
      EXPECT_EQ(a.max_dest_rd_atomic, std::min(cfg[me].responder_resources, cfg[r.peer].initiator_depth));
      // The result says what the QP was given, and the QP agrees.
      const qp::QpGiven& g = e.link(r).qp;
      EXPECT_EQ(g.access_flags, a.qp_access_flags);
      EXPECT_EQ(g.max_rd_atomic, a.max_rd_atomic);
      EXPECT_EQ(g.max_dest_rd_atomic, a.max_dest_rd_atomic);
      EXPECT_EQ(g.timeout, a.timeout);
      EXPECT_EQ(g.path_mtu, a.path_mtu);
      EXPECT_EQ(g.retry_cnt, a.retry_cnt);
      EXPECT_EQ(g.rnr_retry, a.rnr_retry);
    }
  }
  EXPECT_EQ(active, 4u);
  EXPECT_EQ(passive, 4u);
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

TEST(QpAttributes, DepthsDefaultToTheDevicesBounds) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  auto job = make_job(f, 2, 1, [](EngineOptions& o) {
    o.qp.max_rd_atomic.reset();
    o.qp.max_dest_rd_atomic.reset();
    o.rtu_linger = Nanos{0};
  });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_to_completion(f, *job, 120s));
  for (auto& rank : job->ranks) {
    const Engine& e = *rank.engine;
    ASSERT_EQ(e.results().size(), 1u);
    const prov::DeviceInfo& dev = e.qp(0)->device().info();
    const prov::QpAttr a = query(e, 0);
    // Both ranks sit on devices of one kind: the bounds meet.
    EXPECT_EQ(a.max_rd_atomic, std::min<uint32_t>({dev.max_qp_init_rd_atom, dev.max_qp_rd_atom, 255}));
    EXPECT_EQ(a.max_dest_rd_atomic, std::min<uint32_t>({dev.max_qp_init_rd_atom, dev.max_qp_rd_atom, 255}));
    EXPECT_GT(a.max_rd_atomic, 1u) << dev.name << ": a device bound of 1 would not show the default";
  }
  for (auto& r : job->ranks) ASSERT_TRUE(r.engine->close(0s));
}

TEST(QpAttributes, DepthAboveTheDeviceIsAnErrorNamingBothNumbers) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  auto job = make_job(f, 2, 1, [](EngineOptions& o) {
    if (o.rank == 0) o.qp.max_rd_atomic = 255;
    o.max_attempts = 1;
    o.wireup_timeout = 20s;
    o.rtu_linger = Nanos{0};
  });
  ASSERT_TRUE(job) << job.error().message();
  (void)run_to_completion(f, *job, 120s);
  const Engine& e0 = *job->ranks[0].engine;
  EXPECT_TRUE(e0.results().empty());
  ASSERT_FALSE(e0.errors().empty());
  const std::string why = e0.errors()[0].describe();
  const prov::DeviceInfo& dev = job->ranks[0].engine->devices()[0]->info();
  EXPECT_NE(why.find("qp.max_rd_atomic (initiator depth) 255 is above device " + dev.name +
                     "'s max_qp_init_rd_atom " + std::to_string(dev.max_qp_init_rd_atom)),
            std::string::npos)
      << why;
  for (auto& r : job->ranks) (void)r.engine->close(0s);
}

}  // namespace
}  // namespace wireup::etest
