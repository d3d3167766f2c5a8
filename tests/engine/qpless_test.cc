// QP-less requests (the abandon and rtu_lost notices) against the IB CM's stale-connection
// check. cm_match_req refuses a REQ whose (sender CA, QPN) one of the receiving node's CM ids
// still holds with REJ 10; every QP-less REQ carries QPN 0, so while one notice from a device
// waits at a node for its answer, the next one from that device is refused. On rxe this left
// one pair of mpi.a2a.ece_required to its wireup timeout in about one run of four: the ECE-
// required rank gave up both lanes to a peer at once, its two notices went out together, the
// second got REJ 10, and REJ 10 was not a reason to send the notice again.
#include "tests/engine/sim_engine_fabric.h"
#include "testsupport/sim_drive.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::sim::SimDeviceSpec;

struct Job {
  std::unique_ptr<prov::sim::SimFabric> fab;
  std::vector<std::unique_ptr<qp::DefaultQpFactory>> qps;
  std::vector<std::unique_ptr<Engine>> engines;
};

// `n` ranks on their own nodes with `lanes` lanes; rank `odd` insists on ECE on an rxe device
// (no ECE), so it gives up every pair it initiates before any REQ and sends abandon notices.
Job make_job(uint32_t n, uint32_t lanes, uint32_t odd) {
  Job j;
  j.fab = std::make_unique<prov::sim::SimFabric>(prov::sim::SimConfig{});
  for (uint32_t i = 0; i < n; ++i) j.fab->add_node(prov::sim::SimNodeSpec{{SimDeviceSpec::rxe()}});
  std::vector<Peer> table;
  for (uint32_t i = 0; i < n; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = n;
    o.lanes = lanes;
    o.job_key = 9;
    o.listen_addr = j.fab->address(i);
    o.wireup_timeout = 60s;
    o.rtu_linger = Nanos{0};
    if (i == odd) o.ece = ece::Policy{ece::Mode::required, 0, 0x80000000u, 0};
    j.qps.push_back(std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64));
    auto e = Engine::create(j.fab->provider(i), o, j.qps.back()->hook());
    EXPECT_TRUE(e) << e.error().message();
    j.engines.push_back(std::move(e).value());
    table.push_back(Peer{i, j.engines.back()->local_address()});
  }
  for (auto& e : j.engines) {
    EXPECT_TRUE(e->set_peers(table));
    EXPECT_TRUE(e->start());
  }
  return j;
}

std::vector<Engine*> raw(const Job& j) {
  std::vector<Engine*> v;
  for (const auto& e : j.engines) v.push_back(e.get());
  return v;
}

// Rank 0 initiates to rank 1 in a 2-rank job and gives up all 4 lanes at once. Sent together,
// 3 of its 4 notices would be refused stale (the sim's CM answers as the kernel's does, see
// Conformance.SecondRequestWithoutQpWhileTheFirstIsHeldIsRejectedStale) and rank 1 would
// wait 60 s for those lanes: the engine keeps one QP-less REQ on the wire at a time.
TEST(QplessRequests, AnEngineNeverCollidesWithItsOwnNotices) {
  Job j = make_job(2, 4, 0);
  const Nanos t0 = j.fab->now();
  auto r = sim_drive(*j.fab, raw(j), 120s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(j.engines[0]->stats()[Counter::abandons_sent], 4u);
  EXPECT_EQ(j.engines[1]->stats()[Counter::abandons_received], 4u);
  EXPECT_EQ(j.fab->stats().stale_qpn_rejects, 0u) << "an engine keeps one QP-less REQ on the wire at a time";
  ASSERT_EQ(j.engines[1]->errors().size(), 4u);
  for (const PeerError& pe : j.engines[1]->errors())
    EXPECT_EQ(pe.cause, PeerError::Cause::peer_gave_up) << pe.describe();
  EXPECT_LT(r->virtual_end - t0, 2s) << "rank 1 waited for its wireup timeout";
}

// mpi.a2a.ece_required's shape on the sim: 4 ranks x 2 lanes, the last rank with ECE required
// and no ECE. Every pair of that rank settles on both sides at once, none waits for its
// 60 s wireup timeout, and everything else connects.
TEST(QplessRequests, EveryPairOfTheEceRequiredRankSettlesOnBothSidesAtOnce) {
  Job j = make_job(4, 2, 3);
  const Nanos t0 = j.fab->now();
  auto r = sim_drive(*j.fab, raw(j), 120s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_LT(r->virtual_end - t0, 5s) << "a pair waited for its wireup timeout";
  for (uint32_t i = 0; i < 3; ++i) {
    const Engine& e = *j.engines[i];
    EXPECT_EQ(e.connected(), 4u) << "rank " << i << " keeps its 2 lanes to each of the 2 other good ranks";
    ASSERT_EQ(e.errors().size(), 2u) << "rank " << i;
    for (const PeerError& pe : e.errors()) {
      EXPECT_EQ(pe.peer, 3u);
      EXPECT_NE(pe.cause, PeerError::Cause::peer_never_connected) << pe.describe();
      EXPECT_NE(pe.cause, PeerError::Cause::timed_out) << pe.describe();
    }
  }
  EXPECT_EQ(j.engines[3]->errors().size(), 6u);
  EXPECT_EQ(j.engines[3]->connected(), 0u);
}

}  // namespace
}  // namespace wireup::etest
