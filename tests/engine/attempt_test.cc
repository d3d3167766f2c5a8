// The passive side's attempt rules, driven by a hand-made active peer: a newer attempt
// supersedes a half-open older one; an old or repeated attempt is refused as stale.
#include "qp/transitions.h"
#include "tests/engine/engine_harness.h"
#include "wireup/address.h"
#include "wireup/private_data.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::CmEventType;

struct Manual {
  std::unique_ptr<prov::EventChannel> ch;
  std::unique_ptr<prov::CmId> id;
  std::unique_ptr<prov::Qp> qp;
};

// Progresses `e` and waits on `ch` until an event arrives there.
Result<prov::CmEvent> pump(prov::Provider& p, Engine& e, prov::EventChannel& ch, Nanos bound = 10s) {
  const Nanos until = p.clock().now() + bound;
  while (p.clock().now() < until) {
    auto w = e.progress();
    if (!w) return w.error();
    auto ev = ch.get_event();
    if (ev || ev.code() != ErrorCode::would_block) return ev;
    std::vector<prov::EventChannel*> chans = e.channels();
    chans.push_back(&ch);
    WIREUP_TRY(p.wait(chans, 2ms));
  }
  return Error::make(ErrorCode::timed_out, "pump", "no event");
}

// Rank 0 of a 2-rank job (rank 0 initiates to 1), by hand, up to REQ sent with `attempt`.
Result<Manual> request(EngineFabric& f, qp::DefaultQpFactory& factory, Engine& target, uint32_t attempt) {
  prov::Provider& p = f.provider(1);
  Manual m;
  auto ch = p.create_channel();
  if (!ch) return ch.error();
  m.ch = std::move(ch).value();
  auto id = p.create_id(*m.ch, prov::PortSpace::tcp, nullptr);
  if (!id) return id.error();
  m.id = std::move(id).value();
  prov::SockAddr src = f.address(1);
  auto to = decode_address(target.local_address());  // what the engine publishes
  if (!to) return to.error();
  WIREUP_TRY(m.id->resolve_addr(&src, *to, 2000));
  for (CmEventType want : {CmEventType::addr_resolved, CmEventType::route_resolved}) {
    auto ev = pump(p, target, *m.ch);
    if (!ev) return ev.error();
    if (ev->type != want) return Error::make(ErrorCode::protocol_error, "request", "got " + ev->describe());
    ev->ack();
    if (want == CmEventType::addr_resolved) WIREUP_TRY(m.id->resolve_route(2000));
  }
  auto qp = factory.create(qp::QpRequest{*m.id->device(), 1, 0, true});
  if (!qp) return qp.error();
  m.qp = std::move(qp).value();
  WIREUP_TRY(qp::to_init(*m.qp, *m.id));
  WireHeader h;
  h.job_key = 0x5eed5eed12345678ULL;
  h.src_rank = 0;
  h.dst_rank = 1;
  h.lane = 0;
  h.attempt = attempt;
  auto pd = encode(h);
  prov::ConnParam cp;
  cp.qp_num = m.qp->qpn();
  cp.private_data.assign(pd.begin(), pd.end());
  WIREUP_TRY(m.id->connect(cp));
  return m;
}

TEST(EngineAttempts, NewerSupersedesHalfOpenAndStaleIsRefused) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  qp::DefaultQpFactory target_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  qp::DefaultQpFactory manual_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  EngineOptions o = engine_defaults();
  o.rank = 1;
  o.nranks = 2;
  o.job_key = 0x5eed5eed12345678ULL;
  o.listen_addr = f.address(0);
  o.wireup_timeout = 60s;
  auto e = Engine::create(f.provider(0), o, target_qps.hook());
  ASSERT_TRUE(e) << e.error().message();
  Engine& target = **e;
  prov::SockAddr peer_addr = f.address(1);
  peer_addr.set_port(9);  // rank 0's address: never dialled (rank 0 initiates)
  std::vector<Peer> table = {{0, encode_address(peer_addr)}, {1, target.local_address()}};
  ASSERT_TRUE(target.set_peers(table));
  ASSERT_TRUE(target.start());
  prov::Provider& p = f.provider(1);

  // Attempt 2 is answered (CONNECT_RESPONSE) but never completed: half-open on the target.
  auto a2 = request(f, manual_qps, target, 2);
  ASSERT_TRUE(a2) << a2.error().message();
  auto resp2 = pump(p, target, *a2->ch);
  ASSERT_TRUE(resp2) << resp2.error().message();
  ASSERT_EQ(resp2->type, CmEventType::connect_response) << resp2->describe();
  resp2->ack();

  // Attempt 1 now is stale: refused, and the peer can read why.
  auto a1 = request(f, manual_qps, target, 1);
  ASSERT_TRUE(a1) << a1.error().message();
  auto rej = pump(p, target, *a1->ch);
  ASSERT_TRUE(rej) << rej.error().message();
  ASSERT_EQ(rej->type, CmEventType::rejected) << rej->describe();
  EXPECT_EQ(rej->status, prov::reject_reason::consumer);
  auto why = decode(rej->private_data);
  ASSERT_TRUE(why) << why.error().message();
  EXPECT_EQ(why->reason, RejectCode::stale_attempt);
  rej->ack();

  // Attempt 3 supersedes the half-open attempt 2 and completes.
  auto a3 = request(f, manual_qps, target, 3);
  ASSERT_TRUE(a3) << a3.error().message();
  auto resp3 = pump(p, target, *a3->ch);
  ASSERT_TRUE(resp3) << resp3.error().message();
  ASSERT_EQ(resp3->type, CmEventType::connect_response) << resp3->describe();
  ASSERT_TRUE(qp::to_rtr(*a3->qp, *a3->id));
  ASSERT_TRUE(qp::to_rts(*a3->qp, *a3->id));
  ASSERT_TRUE(a3->id->establish());
  const uint32_t target_qpn = resp3->qp_num;
  resp3->ack();
  const Nanos until = p.clock().now() + 10s;
  while (!target.done() && p.clock().now() < until) {
    ASSERT_TRUE(target.progress());
    ASSERT_TRUE(target.wait(2ms));
  }
  ASSERT_TRUE(target.done());
  ASSERT_EQ(target.results().size(), 1u);
  EXPECT_EQ(target.results()[0].remote_qpn, a3->qp->qpn());
  EXPECT_EQ(target.results()[0].local_qpn, target_qpn);
  EXPECT_EQ(target.results()[0].attempts, 3u);
  EXPECT_EQ(target.stats()[Counter::superseded], 1u);
  EXPECT_EQ(target.stats().rejects_sent(RejectCode::stale_attempt), 1u);
  EXPECT_EQ(target.stats()[Counter::strangers], 0u) << "a stale attempt is not a stranger";
  ASSERT_TRUE(target.close(0s));
}

}  // namespace
}  // namespace wireup::etest
