// The active side checks the REP before its QP moves past INIT: a listener that is not a
// wireup peer (rdma-core's ucmatose server accepts anything) is never reported as a connected
// peer. Driven by a hand-made passive listener that accepts every request with its own QP and
// private data of its choosing, on every engine fabric (sim on the host, rxe in the VM).
#include <functional>

#include "qp/transitions.h"
#include "tests/engine/engine_harness.h"
#include "wireup/address.h"
#include "wireup/wire.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;
using prov::CmEventType;

// What the foreign listener answers a request's private data with.
using Reply = std::function<std::vector<uint8_t>(std::span<const uint8_t> request)>;

Reply constant(std::vector<uint8_t> bytes) {
  return [bytes](std::span<const uint8_t>) { return bytes; };
}
// A wireup accept built by `w` for (rank 0, lane 0, attempt) that echoes the request's nonce
// (plus `nonce_offset`: a REP recorded for another request).
Reply accept_from(uint64_t key, uint32_t self, uint32_t attempt, uint64_t nonce_offset = 0) {
  return [=](std::span<const uint8_t> req) {
    const Wire w = *Wire::create(key, self, 1);
    const WireBytes b = w.accept(0, 0, attempt, nonce_of(req) + nonce_offset);
    return std::vector<uint8_t>(b.begin(), b.end());
  };
}

// A listener on node 1 that accepts whatever comes with `reply` as its REP's private data.
struct ForeignListener {
  std::unique_ptr<prov::EventChannel> ch;
  std::unique_ptr<prov::CmId> listener;
  std::vector<std::unique_ptr<prov::CmId>> accepted;
  std::vector<std::unique_ptr<prov::Qp>> qps;
  std::vector<CmEventType> seen;  // events of the accepted ids after the accept
};

Result<ForeignListener> listen_foreign(EngineFabric& f) {
  prov::Provider& p = f.provider(1);
  ForeignListener l;
  auto ch = p.create_channel();
  if (!ch) return ch.error();
  l.ch = std::move(ch).value();
  auto id = p.create_id(*l.ch, prov::PortSpace::tcp, nullptr);
  if (!id) return id.error();
  l.listener = std::move(id).value();
  WIREUP_TRY(l.listener->bind_addr(f.address(1)));
  WIREUP_TRY(l.listener->listen(16));
  return l;
}

// Progresses the engine and answers the foreign side until the engine is done or `bound`.
Status run(EngineFabric& f, Engine& e, ForeignListener& l, qp::DefaultQpFactory& qps,
           const Reply& reply, Nanos bound) {
  prov::Provider& p = f.provider(0);
  const Nanos until = p.clock().now() + bound;
  auto rejected = [&] { return std::find(l.seen.begin(), l.seen.end(), CmEventType::rejected) != l.seen.end(); };
  // Until the engine is done, its setup channel closed (after the abandon notice it sends for
  // a refused REP has its answer) and our REJ has reached the foreign side.
  while (!(e.done() && !e.setup_channel_open() && rejected()) && p.clock().now() < until) {
    WIREUP_TRY(e.progress());
    for (;;) {
      auto ev = l.ch->get_event();
      if (!ev) break;
      if (ev->type == CmEventType::connect_request && ev->qp_num == 0) {
        // A request without a QP (our abandon notice, after the refused REP): nothing to
        // connect it to; turned away as such a server would.
        WIREUP_TRY(ev->new_id->reject({}));
      } else if (ev->type == CmEventType::connect_request) {
        auto qp = qps.create(qp::QpRequest{*ev->new_id->device(), 0, 0, false});
        if (!qp) return qp.error();
        WIREUP_TRY(qp::to_init(**qp, *ev->new_id));
        WIREUP_TRY(qp::to_rtr(**qp, *ev->new_id));
        WIREUP_TRY(qp::to_rts(**qp, *ev->new_id));
        prov::ConnParam cp;
        cp.qp_num = (*qp)->qpn();
        const std::vector<uint8_t> r = reply(ev->private_data);
        cp.private_data.assign(r.begin(), r.end());
        WIREUP_TRY(ev->new_id->accept(cp));
        l.accepted.push_back(std::move(ev->new_id));
        l.qps.push_back(std::move(qp).value());
      } else {
        l.seen.push_back(ev->type);
      }
    }
    std::vector<prov::EventChannel*> chans = e.channels();
    chans.push_back(l.ch.get());
    WIREUP_TRY(p.wait(chans, 5ms));
  }
  return Status::ok();
}

void expect_refused(EngineFabric& f, const Reply& reply, const std::string& why_part) {
  qp::DefaultQpFactory engine_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  qp::DefaultQpFactory foreign_qps(prov::QpCaps{8, 8, 1, 1, 0}, 64);
  auto l = listen_foreign(f);
  ASSERT_TRUE(l) << l.error().message();
  EngineOptions o = engine_defaults();
  o.rank = 0;  // of 2: rank 0 initiates to rank 1 (plan::initiates)
  o.nranks = 2;
  o.lanes = 1;
  o.job_key = 0x5eed5eed12345678ULL;
  o.listen_addr = f.address(0);
  o.rtu_linger = Nanos{0};
  o.wireup_timeout = 30s;
  auto e = Engine::create(f.provider(0), o, engine_qps.hook());
  ASSERT_TRUE(e) << e.error().message();
  // The peer table points rank 1 at the foreign listener, as a wrong table would.
  std::vector<Peer> table{{0, (*e)->local_address()}, {1, encode_address(l->listener->local_addr())}};
  ASSERT_TRUE((*e)->set_peers(table));
  ASSERT_TRUE((*e)->start());
  Status ran = run(f, **e, *l, foreign_qps, reply, 60s);
  ASSERT_TRUE(ran) << ran.message();
  Engine& eng = **e;
  EXPECT_TRUE(eng.done());
  EXPECT_EQ(eng.connected(), 0u) << "a listener that is not our peer was reported as connected";
  ASSERT_EQ(eng.errors().size(), 1u);
  const PeerError& pe = eng.errors()[0];
  EXPECT_EQ(pe.peer, 1u);
  EXPECT_EQ(pe.failure.kind, cm::FailKind::bad_reply) << pe.describe();
  EXPECT_EQ(pe.attempts, 1u) << "a wrong listener is final, not retried: " << pe.describe();
  EXPECT_NE(pe.describe().find(why_part), std::string::npos) << pe.describe();
  EXPECT_NE(pe.describe().find("rank 1"), std::string::npos) << "the error names the peer: " << pe.describe();
  // Nothing of it stayed: the connection (its id, and the QP it made) is gone, the listener
  // with the end of wireup; the abandon notice went out and got its answer.
  EXPECT_EQ(eng.live_ids(), 0u);
  EXPECT_EQ(eng.stats()[Counter::abandons_sent], 1u);
  // The foreign side was told: our REJ answered its REP.
  EXPECT_NE(std::find(l->seen.begin(), l->seen.end(), CmEventType::rejected), l->seen.end())
      << "the listener never saw its REP refused";
  ASSERT_TRUE(eng.close(1s));
}

TEST(EngineReplies, ForeignListenerIsNotAConnectedPeer) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  expect_refused(f, constant({'h', 'e', 'l', 'l', 'o'}), "not a wireup peer");  // a non-wireup server's
}

TEST(EngineReplies, AnotherJobsReplyIsRefused) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  expect_refused(f, accept_from(0x1111, 1, 1), "does not verify under this job's key");
}

TEST(EngineReplies, AStaleOrCrossedReplyIsRefused) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  expect_refused(f, accept_from(0x5eed5eed12345678ULL, 1, 7), "answers attempt 7, ours is 1");
}

TEST(EngineReplies, AReplayedReplyIsRefused) {
  // Genuine (our job's key, the right pair and attempt) but recorded for another request.
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  expect_refused(f, accept_from(0x5eed5eed12345678ULL, 1, 1, 1), "answers another request");
}

TEST(EngineReplies, AReplyFromAnotherRankIsRefused) {
  WIREUP_REQUIRE_ENGINE_FABRIC(f, 2);
  expect_refused(f, accept_from(0x5eed5eed12345678ULL, 3, 1), "comes from rank 3, not rank 1");
}

}  // namespace
}  // namespace wireup::etest
