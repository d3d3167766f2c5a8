// The passive side's attempt rules, driven by a hand-made active peer: a newer attempt
// supersedes a half-open older one; an old or repeated attempt is refused as stale. And what
// someone without the job key can do to them: a forged attempt 0xFFFFFFFF locks nothing out,
// a replayed REQ supersedes nothing, a forged rtu_lost or abandon notice tears nothing down.
#include <optional>

#include "qp/transitions.h"
#include "tests/engine/engine_harness.h"
#include "wireup/address.h"
#include "wireup/wire.h"

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

constexpr uint64_t kKey = 0x5eed5eed12345678ULL;

// What rank 0 (of 2) sends for `attempt`, sealed with the job key, nonce picked by the test.
WireBytes genuine(uint32_t attempt, WireKind kind = WireKind::request, uint32_t src = 0, uint32_t dst = 1) {
  WireHeader h;
  h.kind = kind;
  h.src_rank = src;
  h.dst_rank = dst;
  h.attempt = attempt;
  h.nonce = 1000 + attempt;
  return Wire::create(kKey, src, 1)->seal(h);
}

// A REQ from node 1 to `target`'s listener with private data `pd`, up to REQ sent; with a QP
// in INIT unless `qpless` (a notice).
Result<Manual> request(EngineFabric& f, qp::DefaultQpFactory& factory, Engine& target, std::span<const uint8_t> pd,
                       bool qpless = false) {
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
  prov::ConnParam cp;
  if (!qpless) {
    auto qp = factory.create(qp::QpRequest{*m.id->device(), 1, 0, true});
    if (!qp) return qp.error();
    m.qp = std::move(qp).value();
    WIREUP_TRY(qp::to_init(*m.qp, *m.id));
    cp.qp_num = m.qp->qpn();
  }
  cp.private_data.assign(pd.begin(), pd.end());
  WIREUP_TRY(m.id->connect(cp));
  return m;
}

// The REJ `ev` must be, with the reason the target gave (decoded, never authenticated here).
void expect_refused(Result<prov::CmEvent>& ev, RejectCode want, const char* what) {
  ASSERT_TRUE(ev) << what << ": " << ev.error().message();
  ASSERT_EQ(ev->type, CmEventType::rejected) << what << ": " << ev->describe();
  auto why = decode(ev->private_data);
  ASSERT_TRUE(why) << what << ": " << why.error().message();
  EXPECT_EQ(why->reason, want) << what;
  ev->ack();
}

struct Target {
  qp::DefaultQpFactory qps{prov::QpCaps{8, 8, 1, 1, 0}, 64};
  std::unique_ptr<Engine> engine;
};

// Rank 1 of 2, started; rank 0 is driven by hand.
Result<std::unique_ptr<Target>> passive_target(EngineFabric& f) {
  auto t = std::make_unique<Target>();
  EngineOptions o = engine_defaults();
  o.rank = 1;
  o.nranks = 2;
  o.lanes = 1;
  o.job_key = kKey;
  o.listen_addr = f.address(0);
  o.wireup_timeout = 30s;
  auto e = Engine::create(f.provider(0), o, t->qps.hook());
  if (!e) return e.error();
  t->engine = std::move(e).value();
  prov::SockAddr peer_addr = f.address(1);
  peer_addr.set_port(9);  // rank 0's address: never dialled (rank 0 initiates)
  std::vector<Peer> table = {{0, encode_address(peer_addr)}, {1, t->engine->local_address()}};
  WIREUP_TRY(t->engine->set_peers(table));
  WIREUP_TRY(t->engine->start());
  return t;
}

// Completes a manual attempt that got its CONNECT_RESPONSE, and runs the target to done.
void complete(EngineFabric& f, Manual& m, Result<prov::CmEvent>& resp, Engine& target) {
  ASSERT_TRUE(resp) << resp.error().message();
  ASSERT_EQ(resp->type, CmEventType::connect_response) << resp->describe();
  ASSERT_TRUE(qp::to_rtr(*m.qp, *m.id));
  ASSERT_TRUE(qp::to_rts(*m.qp, *m.id));
  ASSERT_TRUE(m.id->establish());
  resp->ack();
  prov::Provider& p = f.provider(1);
  const Nanos until = p.clock().now() + 10s;
  while (!target.done() && p.clock().now() < until) {
    ASSERT_TRUE(target.progress());
    ASSERT_TRUE(target.wait(2ms));
  }
  ASSERT_TRUE(target.done());
}

TEST(EngineAttempts, NewerSupersedesHalfOpenAndStaleIsRefused) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  qp::DefaultQpFactory manual_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto t = passive_target(f);
  ASSERT_TRUE(t) << t.error().message();
  Engine& target = *(*t)->engine;
  prov::Provider& p = f.provider(1);

  // Attempt 2 is answered (CONNECT_RESPONSE) but never completed: half-open on the target.
  auto a2 = request(f, manual_qps, target, genuine(2));
  ASSERT_TRUE(a2) << a2.error().message();
  auto resp2 = pump(p, target, *a2->ch);
  ASSERT_TRUE(resp2) << resp2.error().message();
  ASSERT_EQ(resp2->type, CmEventType::connect_response) << resp2->describe();
  resp2->ack();

  // Attempt 1 now is stale: refused, and the peer can read why.
  auto a1 = request(f, manual_qps, target, genuine(1));
  ASSERT_TRUE(a1) << a1.error().message();
  auto rej = pump(p, target, *a1->ch);
  ASSERT_TRUE(rej) << rej.error().message();
  EXPECT_EQ(rej->status, prov::reject_reason::consumer);
  expect_refused(rej, RejectCode::stale_attempt, "attempt 1 after 2");

  // Attempt 3 supersedes the half-open attempt 2 and completes.
  auto a3 = request(f, manual_qps, target, genuine(3));
  ASSERT_TRUE(a3) << a3.error().message();
  auto resp3 = pump(p, target, *a3->ch);
  ASSERT_TRUE(resp3) << resp3.error().message();
  const uint32_t target_qpn = resp3->qp_num;
  complete(f, *a3, resp3, target);
  ASSERT_EQ(target.results().size(), 1u);
  EXPECT_EQ(target.results()[0].remote_qpn, a3->qp->qpn());
  EXPECT_EQ(target.results()[0].local_qpn, target_qpn);
  EXPECT_EQ(target.results()[0].attempts, 3u);
  EXPECT_EQ(target.stats()[Counter::superseded], 1u);
  EXPECT_EQ(target.stats().rejects_sent(RejectCode::stale_attempt), 1u);
  EXPECT_EQ(target.stats()[Counter::strangers], 0u) << "a stale attempt is not a stranger";
  ASSERT_TRUE(target.close(0s));
}

TEST(EngineForgery, AForgedAttemptLocksNothingOut) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  qp::DefaultQpFactory manual_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto t = passive_target(f);
  ASSERT_TRUE(t) << t.error().message();
  Engine& target = *(*t)->engine;
  prov::Provider& p = f.provider(1);
  // Without the key: attempt 0xFFFFFFFF with a made-up tag, and a genuine REQ whose attempt
  // was rewritten to 0xFFFFFFFF. Were either believed, every real attempt would be stale.
  WireHeader h;
  h.src_rank = 0;
  h.dst_rank = 1;
  h.attempt = 0xFFFFFFFF;
  h.nonce = 77;
  WireBytes made_up = encode(h);
  std::fill(made_up.begin() + kWireAuthenticated, made_up.end(), uint8_t{0x5a});
  WireBytes rewritten = genuine(1);
  for (int i = 0; i < 4; ++i) rewritten[20 + i] = 0xFF;
  ASSERT_EQ(decode(rewritten)->attempt, 0xFFFFFFFFu);
  for (const WireBytes* forged : {&made_up, &rewritten}) {
    auto m = request(f, manual_qps, target, *forged);
    ASSERT_TRUE(m) << m.error().message();
    auto rej = pump(p, target, *m->ch);
    expect_refused(rej, RejectCode::wrong_job_key, "forged attempt 0xFFFFFFFF");
  }
  // The real attempt 1 goes through.
  auto a1 = request(f, manual_qps, target, genuine(1));
  ASSERT_TRUE(a1) << a1.error().message();
  auto resp = pump(p, target, *a1->ch);
  complete(f, *a1, resp, target);
  ASSERT_EQ(target.results().size(), 1u);
  EXPECT_EQ(target.results()[0].attempts, 1u);
  EXPECT_EQ(target.results()[0].remote_qpn, a1->qp->qpn());
  EXPECT_EQ(target.stats()[Counter::strangers], 2u) << "both forgeries counted as strangers";
  EXPECT_EQ(target.stats().rejects_sent(RejectCode::wrong_job_key), 2u);
  ASSERT_TRUE(target.close(0s));
}

TEST(EngineForgery, AReplayedRequestSupersedesNothing) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  qp::DefaultQpFactory manual_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto t = passive_target(f);
  ASSERT_TRUE(t) << t.error().message();
  Engine& target = *(*t)->engine;
  prov::Provider& p = f.provider(1);
  // Attempt 2 answered, half-open; then the very same bytes again (a replay from another
  // id, as one who recorded the REQ would send it), and the earlier attempt 1.
  auto a2 = request(f, manual_qps, target, genuine(2));
  ASSERT_TRUE(a2) << a2.error().message();
  auto resp = pump(p, target, *a2->ch);
  ASSERT_TRUE(resp) << resp.error().message();
  ASSERT_EQ(resp->type, CmEventType::connect_response) << resp->describe();
  for (uint32_t attempt : {2u, 1u}) {
    auto replay = request(f, manual_qps, target, genuine(attempt));
    ASSERT_TRUE(replay) << replay.error().message();
    auto rej = pump(p, target, *replay->ch);
    expect_refused(rej, RejectCode::stale_attempt, "replayed REQ");
  }
  // The half-open attempt 2 was not superseded: it completes.
  complete(f, *a2, resp, target);
  ASSERT_EQ(target.results().size(), 1u);
  EXPECT_EQ(target.results()[0].attempts, 2u);
  EXPECT_EQ(target.results()[0].remote_qpn, a2->qp->qpn());
  EXPECT_EQ(target.stats()[Counter::superseded], 0u);
  ASSERT_TRUE(target.close(0s));
}

// A whole 3-rank job (each rank initiates one pair and accepts one), then notices to rank 0's
// listener while it lingers: forged ones are refused before the repair or abandon logic sees
// them; the same rtu_lost notice sealed with the key is taken (so the test would see a
// forgery that got through).
TEST(EngineForgery, AForgedNoticeTearsNothingDown) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 3);
  qp::DefaultQpFactory manual_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto job = make_job(f, 3, 1, [](EngineOptions& o) {
    o.job_key = kKey;
    o.rtu_linger = 30s;  // listeners stay open after their active pair is established
  });
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(run_to_completion(f, *job, 30s));
  Engine& r0 = *job->ranks[0].engine;
  ASSERT_EQ(r0.results().size(), 2u);
  ASSERT_TRUE(r0.setup_channel_open());
  prov::Provider& p = f.provider(1);
  // rtu_lost comes from the passive side of a pair rank 0 initiates; abandon from the active
  // side of a pair rank 0 accepts.
  std::optional<ConnResult> act, pas;
  for (const ConnResult& r : r0.results()) (r.role == cm::Role::active ? act : pas) = r;
  ASSERT_TRUE(act && pas);
  struct Case {
    WireKind kind;
    const ConnResult& pair;
  };
  for (const Case& c : {Case{WireKind::rtu_lost, *act}, Case{WireKind::abandon, *pas}}) {
    WireBytes forged = genuine(c.pair.attempts, c.kind, c.pair.peer, 0);
    forged[kWireAuthenticated] ^= 0x01;  // one bit of the tag: as good as no key
    auto m = request(f, manual_qps, r0, forged, true);
    ASSERT_TRUE(m) << m.error().message();
    auto rej = pump(p, r0, *m->ch);
    expect_refused(rej, RejectCode::wrong_job_key, c.kind == WireKind::rtu_lost ? "forged rtu_lost" : "forged abandon");
  }
  EXPECT_EQ(r0.stats()[Counter::rtu_lost_received], 0u);
  EXPECT_EQ(r0.stats()[Counter::abandons_received], 0u);
  for (const ConnResult& r : r0.results()) EXPECT_FALSE(r.withdrawn);
  EXPECT_TRUE(r0.errors().empty());
  // The control: the genuine notice reaches the repair logic (handed over, so refused and
  // reported as a loss there, which is what a forgery must never cause).
  auto m = request(f, manual_qps, r0, genuine(act->attempts, WireKind::rtu_lost, act->peer, 0), true);
  ASSERT_TRUE(m) << m.error().message();
  auto rej = pump(p, r0, *m->ch);
  ASSERT_TRUE(rej) << rej.error().message();
  ASSERT_EQ(rej->type, CmEventType::rejected);
  EXPECT_NE(decode(rej->private_data)->reason, RejectCode::wrong_job_key);
  rej->ack();
  EXPECT_EQ(r0.stats()[Counter::rtu_lost_received], 1u);
}

}  // namespace
}  // namespace wireup::etest
