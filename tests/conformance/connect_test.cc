// The application-owned-QP flow, disconnect, private-data limits and scale, on any provider.
#include "tests/conformance/harness.h"

namespace wireup::conf {
namespace {

using prov::CmEventType;
using prov::QpState;

TEST(Conformance, ExtQpFlowStepByStep) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  prov::CmId& aid = *a->id;
  ASSERT_NE(aid.device(), nullptr);
  auto aqp = AppQp::create(*aid.device());
  ASSERT_TRUE(aqp) << aqp.error().message();
  ASSERT_TRUE(aqp->to_state(aid, QpState::init));
  ASSERT_TRUE(aqp->post_recv());

  // No QP on the id, qp_num in the REQ: the CM answers CONNECT_RESPONSE, not ESTABLISHED.
  prov::ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  cp.private_data = {'h', 'e', 'l', 'l', 'o'};
  ASSERT_TRUE(aid.connect(cp));

  auto req = expect_event(f.provider(0), *l->ch, CmEventType::connect_request);
  ASSERT_EQ(req.type, CmEventType::connect_request);
  EXPECT_EQ(req.qp_num, aqp->qp->qpn());
  EXPECT_EQ(req.listen_id, l->id.get());
  ASSERT_GE(req.private_data.size(), 5u);
  EXPECT_EQ(std::string(req.private_data.begin(), req.private_data.begin() + 5), "hello");
  // The receiver sees the whole REQ field (the length is not carried): 56 bytes for TCP.
  EXPECT_EQ(req.private_data.size(), prov::private_data_limit::req_tcp);
  ASSERT_NE(req.new_id, nullptr);
  auto pid = std::move(req.new_id);
  auto pqp = AppQp::create(*pid->device());
  ASSERT_TRUE(pqp) << pqp.error().message();
  ASSERT_TRUE(pqp->to_state(*pid, QpState::init));
  ASSERT_TRUE(pqp->post_recv());
  ASSERT_TRUE(pqp->to_state(*pid, QpState::rtr));
  auto rtr_attr = pid->init_qp_attr(QpState::rtr);
  ASSERT_TRUE(rtr_attr);
  EXPECT_EQ(rtr_attr->attr.dest_qp_num, aqp->qp->qpn()) << "RTR attributes name the active QP";
  ASSERT_TRUE(pqp->to_state(*pid, QpState::rts));
  EXPECT_EQ(pqp->qp->state(), QpState::rts);
  prov::ConnParam ap;
  ap.qp_num = pqp->qp->qpn();
  ASSERT_TRUE(pid->accept(ap));
  req.ack();

  auto resp = expect_event(f.provider(1), *a->ch, CmEventType::connect_response);
  EXPECT_EQ(resp.qp_num, pqp->qp->qpn());
  ASSERT_TRUE(aqp->to_state(aid, QpState::rtr));
  ASSERT_TRUE(aqp->to_state(aid, QpState::rts));
  ASSERT_TRUE(aid.establish());
  resp.ack();

  auto est = expect_event(f.provider(0), *l->ch, CmEventType::established);
  EXPECT_EQ(est.id, pid.get());
  est.ack();
  // The active side gets no ESTABLISHED of its own in this flow.
  expect_no_event(f.provider(1), *a->ch, 300ms);

  if (f.has_data_path()) {
    ASSERT_TRUE(aqp->send("ping"));
    auto got = pqp->wait_completion(prov::wc_opcode_recv);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(*got, "ping");
    ASSERT_TRUE(pqp->send("pong"));
    auto back = aqp->wait_completion(prov::wc_opcode_recv);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, "pong");
  }
}

TEST(Conformance, DisconnectReachesBothSides) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto p = connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  // DREQ: the passive side learns of it at once...
  ASSERT_TRUE(p->active.id->disconnect());
  auto d2 = expect_event(f.provider(0), *l->ch, CmEventType::disconnected);
  EXPECT_EQ(d2.id, p->passive_id.get());
  d2.ack();
  // ...but the initiator's DISCONNECTED waits for the DREP, which the kernel sends only when
  // the passive consumer calls rdma_disconnect too (or after the DREQ times out).
  expect_no_event(f.provider(1), *p->active.ch, 300ms);
  ASSERT_TRUE(p->passive_id->disconnect());
  auto d1 = expect_event(f.provider(1), *p->active.ch, CmEventType::disconnected);
  EXPECT_EQ(d1.id, p->active.id.get());
}

TEST(Conformance, RequestPrivateDataLimit) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  // Exactly the TCP port-space REQ budget goes through, every byte intact.
  PairOptions o;
  for (size_t i = 0; i < prov::private_data_limit::req_tcp; ++i) o.req_private_data.push_back(uint8_t(i + 1));
  for (size_t i = 0; i < prov::private_data_limit::rep; ++i) o.rep_private_data.push_back(uint8_t(200 - i));
  {
    auto p = connect_pair(f, *l, o);
    ASSERT_TRUE(p) << p.error().message();
  }
  // One byte over is refused by rdma_connect itself.
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  prov::ConnParam cp;
  cp.qp_num = 0x123;
  cp.private_data.assign(prov::private_data_limit::req_tcp + 1, 0xab);
  Status s = a->id->connect(cp);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().err, EINVAL) << s.message();
  EXPECT_EQ(s.error().call, "rdma_connect");
}

TEST(Conformance, ReplyPrivateDataReadable) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto r = Requested::send(f, l->addr);
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  ASSERT_TRUE(in->ready());
  std::vector<uint8_t> rep(prov::private_data_limit::rep, 0x5a);
  rep.back() = 0x77;
  ASSERT_TRUE(in->accept(rep));
  auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response);
  ASSERT_EQ(resp.private_data.size(), prov::private_data_limit::rep);
  EXPECT_EQ(resp.private_data.front(), 0x5a);
  EXPECT_EQ(resp.private_data.back(), 0x77);
}

// Many connections through one listener, each checked by a SEND both ways.
TEST(Conformance, TwoHundredExtQpConnections) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f, 256);
  ASSERT_TRUE(l) << l.error().message();
  std::vector<Pair> pairs;
  for (int i = 0; i < 200; ++i) {
    auto p = connect_pair(f, *l);
    ASSERT_TRUE(p) << "connection " << i << ": " << p.error().message();
    pairs.push_back(std::move(p).value());
  }
  EXPECT_EQ(pairs.size(), 200u);
}

}  // namespace
}  // namespace wireup::conf
