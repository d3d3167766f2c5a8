// Every fault of the sim fabric, with fixed seeds: loss, delay and jitter, duplication,
// forced rejects (by probability and by node pair), a node that stops answering, device
// removal, address/route errors. And: a run is reproduced from its seed alone.
#include <gtest/gtest.h>

#include "provider/sim/fabric.h"
#include "provider/sim/mesh.h"
#include "tests/conformance/harness.h"

namespace wireup::prov::sim {
namespace {

using namespace std::chrono_literals;
using conf::Active;
using conf::Listener;
using conf::next_event;

class Fab final : public conf::TestFabric {
 public:
  explicit Fab(SimConfig cfg, int nodes = 2) : fab(std::move(cfg)) {
    for (int i = 0; i < nodes; ++i) fab.add_node();
  }
  std::string name() const override { return "sim"; }
  Provider& provider(int n) override { return fab.provider(static_cast<uint32_t>(n)); }
  SockAddr address(int n) override { return fab.address(static_cast<uint32_t>(n)); }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return false; }
  SimFabric fab;
};

SimConfig zero(uint64_t seed) {
  SimConfig c;
  c.seed = seed;
  c.latency = LatencyModel::zero();
  return c;
}

// 32 nodes, each connecting to the next 4; returns the report and the fabric's counters.
struct MeshRun {
  MeshReport report;
  SimStats stats;
};
MeshRun mesh_run(SimConfig cfg, uint32_t nodes = 32, uint32_t fanout = 4) {
  SimFabric fab(std::move(cfg));
  for (uint32_t i = 0; i < nodes; ++i) fab.add_node();
  MeshRun out;
  {
    SimMesh mesh(fab);
    EXPECT_TRUE(mesh.listen_all());
    for (uint32_t i = 0; i < nodes; ++i)
      for (uint32_t k = 1; k <= fanout; ++k) EXPECT_TRUE(mesh.connect(i, (i + k) % nodes));
    out.report = mesh.run(std::chrono::hours(1));
  }
  out.stats = fab.stats();
  return out;
}

void expect_same(const MeshRun& a, const MeshRun& b) {
  EXPECT_EQ(a.report.established, b.report.established);
  EXPECT_EQ(a.report.failures, b.report.failures);
  EXPECT_EQ(a.report.last_established, b.report.last_established);
  EXPECT_EQ(a.stats.events_processed, b.stats.events_processed);
  EXPECT_EQ(a.stats.messages_lost, b.stats.messages_lost);
  EXPECT_EQ(a.stats.messages_duplicated, b.stats.messages_duplicated);
  EXPECT_EQ(a.stats.forced_rejects, b.stats.forced_rejects);
}

TEST(SimFault, LossIsRecoveredByRetransmissionAndReproducible) {
  SimConfig cfg;  // hardware latencies
  cfg.seed = 42;
  cfg.faults.loss = 0.3;
  MeshRun a = mesh_run(cfg);
  EXPECT_EQ(a.report.established, a.report.planned) << "15 retries outlast 30% loss";
  EXPECT_GT(a.stats.messages_lost, 0u);
  EXPECT_GT(a.stats.req_retransmits + a.stats.rep_retransmits, 0u);
  EXPECT_GT(a.report.last_established, 4s) << "at least one attempt timeout was waited out";
  MeshRun b = mesh_run(cfg);
  expect_same(a, b);
  cfg.seed = 43;
  MeshRun c = mesh_run(cfg);
  EXPECT_NE(a.stats.messages_lost, c.stats.messages_lost) << "another seed, another run";
}

TEST(SimFault, DelayAndJitter) {
  auto arrival = [](uint64_t seed) {
    SimConfig cfg = zero(seed);
    cfg.faults.rules.push_back({.types = msg_bit(CmMsg::req), .delay = 1ms, .jitter = 500us});
    Fab f(cfg);
    auto l = Listener::create(f);
    auto a = Active::resolve(f, l->addr);
    const Nanos t0 = f.fab.now();
    EXPECT_TRUE(a->id->connect(ConnParam{}));
    auto req = next_event(f.provider(0), *l->ch);
    EXPECT_TRUE(req);
    return f.fab.now() - t0;
  };
  Nanos d = arrival(5);
  EXPECT_GE(d, 1ms);
  EXPECT_LE(d, 1500us);
  EXPECT_EQ(arrival(5), d) << "the same seed draws the same jitter";
  bool differs = false;
  for (uint64_t s = 6; s < 12 && !differs; ++s) differs = arrival(s) != d;
  EXPECT_TRUE(differs);
}

TEST(SimFault, DuplicationMakesNoExtraConnections) {
  SimConfig cfg;
  cfg.seed = 9;
  cfg.faults.duplicate = 0.5;
  cfg.faults.jitter = 50us;  // copies overtake each other
  MeshRun r = mesh_run(cfg);
  EXPECT_EQ(r.report.established, r.report.planned);
  EXPECT_EQ(r.report.failures.count("unexpected CONNECT_REQUEST"), 0u);
  EXPECT_GT(r.stats.messages_duplicated, 0u);
  expect_same(r, mesh_run(cfg));
}

TEST(SimFault, ForcedRejectsByReasonWithProbability) {
  SimConfig cfg;
  cfg.seed = 11;
  cfg.faults.rejects.push_back({.reason = reject_reason::consumer, .probability = 0.25});
  MeshRun r = mesh_run(cfg);
  const uint64_t rejected = r.report.failures["REJECTED 28"];
  EXPECT_GT(rejected, 0u);
  EXPECT_LT(rejected, r.report.planned);
  EXPECT_EQ(rejected, r.stats.forced_rejects);
  EXPECT_EQ(r.report.established + rejected, r.report.planned);
  expect_same(r, mesh_run(cfg));
}

TEST(SimFault, ForcedRejectForANodePair) {
  SimConfig cfg = zero(1);
  cfg.faults.rejects.push_back({.src_node = 1, .dst_node = 0, .reason = reject_reason::vendor_option});
  Fab f(cfg, 3);
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);  // from node 1
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto ev = next_event(f.provider(1), *a->ch);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, CmEventType::rejected);
  EXPECT_EQ(ev->status, reject_reason::vendor_option);
  // Node 2 is not in the rule.
  Provider& p2 = f.provider(2);
  auto ch = p2.create_channel();
  auto id = p2.create_id(**ch, PortSpace::tcp, nullptr);
  ASSERT_TRUE((*id)->resolve_addr(nullptr, l->addr, 1000));
  ASSERT_EQ(next_event(p2, **ch)->type, CmEventType::addr_resolved);
  ASSERT_TRUE((*id)->resolve_route(1000));
  ASSERT_EQ(next_event(p2, **ch)->type, CmEventType::route_resolved);
  ASSERT_TRUE((*id)->connect(ConnParam{}));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->type, CmEventType::connect_request);
}

TEST(SimFault, NodeThatStopsAnswering) {
  SimConfig cfg = zero(1);
  cfg.faults.deaths.push_back({.node = 0, .at = 10s});
  Fab f(cfg, 3);
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto p = conf::connect_pair(f, *l);  // before T: fine
  ASSERT_TRUE(p) << p.error().message();
  f.fab.run_until(11s);
  // Its established peer disconnects: the DREQ is never answered.
  ASSERT_TRUE(p->active.id->disconnect());
  auto d = next_event(f.provider(1), *p->active.ch, 200s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->type, CmEventType::disconnected);
  EXPECT_EQ(d->status, -ETIMEDOUT);
  // A new peer cannot even resolve it (ARP goes unanswered).
  auto a = Active::resolve(f, l->addr);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().detail.find("ADDR_ERROR"), std::string::npos) << a.error().message();
  EXPECT_GT(f.fab.stats().messages_unroutable, 0u);
}

TEST(SimFault, ReqToANodeThatDiesMidConnectIsUnreachable) {
  SimConfig cfg = zero(1);
  Fab f(cfg);
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  f.fab.kill_node(0, f.fab.now());
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto ev = next_event(f.provider(1), *a->ch, 200s);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, CmEventType::unreachable);
  EXPECT_EQ(ev->status, -ETIMEDOUT);
}

TEST(SimFault, DeviceRemoval) {
  SimConfig cfg = zero(1);
  Fab f(cfg, 0);
  SimNodeSpec two;
  two.devices = {SimDeviceSpec::mlx5(), SimDeviceSpec::mlx5()};
  f.fab.add_node(two);
  f.fab.add_node(two);
  auto l = Listener::create(f);  // bound to node 0's device 0
  ASSERT_TRUE(l);
  auto p = conf::connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  f.fab.remove_device(0, 0, f.fab.now() + 1s);
  auto ev = next_event(f.provider(0), *l->ch, 2s);
  ASSERT_TRUE(ev);
  // The listener (bound to that device's address) and the accepted id both hear of it.
  std::vector<CmId*> told{ev->id};
  EXPECT_EQ(ev->type, CmEventType::device_removal);
  ev->ack();
  auto ev2 = next_event(f.provider(0), *l->ch, 1s);
  ASSERT_TRUE(ev2);
  EXPECT_EQ(ev2->type, CmEventType::device_removal);
  told.push_back(ev2->id);
  EXPECT_NE(std::find(told.begin(), told.end(), p->passive_id.get()), told.end());
  EXPECT_NE(std::find(told.begin(), told.end(), l->id.get()), told.end());
  EXPECT_EQ(p->passive_qp.qp->state(), QpState::err);
  auto devs = f.provider(0).devices();
  ASSERT_TRUE(devs);
  EXPECT_EQ(devs->size(), 1u);
  EXPECT_EQ((*devs)[0]->info().name, "mlx5_1");
  EXPECT_EQ(p->passive_qp.pd->device().alloc_pd().error().err, EIO);
}

TEST(SimFault, AddressAndRouteErrors) {
  for (bool route : {false, true}) {
    SimConfig cfg = zero(1);
    (route ? cfg.faults.route_error : cfg.faults.addr_error) = 1;
    Fab f(cfg);
    auto l = Listener::create(f);
    ASSERT_TRUE(l);
    auto a = Active::resolve(f, l->addr);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.code(), route ? ErrorCode::route_error : ErrorCode::address_error) << a.error().message();
  }
}

// All the random faults at once: the whole run is a function of the seed.
TEST(SimFault, EverythingAtOnceIsReproducible) {
  SimConfig cfg;
  cfg.seed = 2024;
  cfg.faults.loss = 0.1;
  cfg.faults.duplicate = 0.1;
  cfg.faults.delay = 20us;
  cfg.faults.jitter = 100us;
  cfg.faults.rejects.push_back({.reason = reject_reason::consumer, .probability = 0.05});
  cfg.faults.deaths.push_back({.node = 7, .at = 1ms});
  MeshRun a = mesh_run(cfg);
  MeshRun b = mesh_run(cfg);
  expect_same(a, b);
  // Node 7's own four connects never settle: its process is gone, nobody reads its events.
  EXPECT_EQ(a.report.established + a.report.failed, a.report.planned - 4);
  EXPECT_GT(a.report.failed, 0u);
}

}  // namespace
}  // namespace wireup::prov::sim
