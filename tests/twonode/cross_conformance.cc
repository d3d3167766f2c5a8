// The conformance cases that take two ends, one end on each node of the pair: the passive end
// (listener) runs in this binary on node 2 (TWONODE_ROLE=server), the active end on node 1
// (TWONODE_ROLE=client), so every REQ, REP, RTU, REJ and DREQ crosses the virtual link between
// two kernels. Both processes run the same tests in the same order; each test meets its other
// half through small files in TWONODE_DIR (the shared build tree): the listener's port, and
// "step" marks where one side must wait for the other. Written against the conformance harness
// (tests/conformance), whose fabric is the local rxe0 at WIREUP_VM_ADDR.
#include "tests/twonode/cross_files.h"

namespace wireup::conf {
namespace {

using prov::CmEventType;

// The ext-QP flow across the link: the REQ's 56 bytes and the REP's 196 arrive whole, the QPNs
// cross, a SEND goes each way; then the DREQ/DREP rule: the initiator's DISCONNECTED waits for
// the passive side's rdma_disconnect.
TEST(CrossNode, ExtQpFlowPrivateDataSendAndDisconnect) {
  REQUIRE_ENV();
  WIREUP_REQUIRE_FABRIC(f);
  if (server()) {
    auto l = Listener::create(f);
    ASSERT_TRUE(l) << l.error().message();
    put("port", std::to_string(l->addr.port()));
    auto in = Incoming::take(f, *l);
    ASSERT_TRUE(in) << in.error().message();
    EXPECT_NE(in->req.qp_num, 0u);
    EXPECT_EQ(in->req.private_data, pattern(prov::private_data_limit::req_tcp, 1));
    ASSERT_TRUE(in->ready());
    ASSERT_TRUE(in->qp.post_recv());
    ASSERT_TRUE(in->accept(pattern(prov::private_data_limit::rep, 2)));
    put("server_qpn", std::to_string(in->qp.qp->qpn()));
    auto est = expect_event(f.provider(0), *l->ch, CmEventType::established);
    est.ack();
    auto got = in->qp.wait_completion(prov::wc_opcode_recv, std::chrono::milliseconds(20000));
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(*got, "ping");
    ASSERT_TRUE(in->qp.send("pong"));
    auto d = expect_event(f.provider(0), *l->ch, CmEventType::disconnected, std::chrono::seconds(30));
    d.ack();
    EXPECT_EQ(get("no_early_disconnected"), "1") << "the initiator saw DISCONNECTED before the DREP";
    ASSERT_TRUE(in->id->disconnect());
    EXPECT_EQ(get("done"), "1");
  } else {
    auto r = Requested::send(f, remote_listener(), std::nullopt, pattern(prov::private_data_limit::req_tcp, 1));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->qp.post_recv());
    auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response, std::chrono::seconds(30));
    EXPECT_EQ(std::to_string(resp.qp_num), get("server_qpn"));
    EXPECT_EQ(resp.private_data, pattern(prov::private_data_limit::rep, 2));
    ASSERT_TRUE(r->qp.to_state(*r->active.id, prov::QpState::rtr));
    ASSERT_TRUE(r->qp.to_state(*r->active.id, prov::QpState::rts));
    ASSERT_TRUE(r->active.id->establish());
    resp.ack();
    ASSERT_TRUE(r->qp.send("ping"));
    auto back = r->qp.wait_completion(prov::wc_opcode_recv, std::chrono::milliseconds(20000));
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, "pong");
    ASSERT_TRUE(r->active.id->disconnect());
    expect_no_event(f.provider(1), *r->active.ch, std::chrono::milliseconds(500));
    put("no_early_disconnected", ::testing::Test::HasFailure() ? "0" : "1");
    auto d = expect_event(f.provider(1), *r->active.ch, CmEventType::disconnected, std::chrono::seconds(30));
    d.ack();
    put("done", "1");
  }
}

// A consumer reject with private data crosses as REJECTED 28 with the whole 148-byte field.
TEST(CrossNode, RejectWithPrivateDataGivesStatus28) {
  REQUIRE_ENV();
  WIREUP_REQUIRE_FABRIC(f);
  const std::string why = "stranger: wrong job key";
  if (server()) {
    auto l = Listener::create(f);
    ASSERT_TRUE(l) << l.error().message();
    put("port", std::to_string(l->addr.port()));
    auto in = Incoming::take(f, *l);
    ASSERT_TRUE(in) << in.error().message();
    ASSERT_TRUE(in->id->reject({reinterpret_cast<const uint8_t*>(why.data()), why.size()}));
    in->req.ack();
    EXPECT_EQ(get("done"), "1");
  } else {
    auto r = Requested::send(f, remote_listener());
    ASSERT_TRUE(r) << r.error().message();
    auto rej = expect_event(f.provider(1), *r->active.ch, CmEventType::rejected, std::chrono::seconds(30));
    EXPECT_EQ(rej.status, prov::reject_reason::consumer);
    EXPECT_EQ(rej.private_data.size(), prov::private_data_limit::rej);
    ASSERT_GE(rej.private_data.size(), why.size());
    EXPECT_EQ(std::string(rej.private_data.begin(), rej.private_data.begin() + why.size()), why);
    put("done", "1");
  }
}

// A REQ to a port nobody listens on at the other node: that node's CM answers REJ reason 8.
TEST(CrossNode, ConnectWhereNothingListens) {
  REQUIRE_ENV();
  WIREUP_REQUIRE_FABRIC(f);
  if (server()) {
    {
      auto l = Listener::create(f);
      ASSERT_TRUE(l) << l.error().message();
      put("port_taken", std::to_string(l->addr.port()));
    }
    put("port", get("port_taken"));  // published only once the listener is gone
    EXPECT_EQ(get("done"), "1");
  } else {
    auto r = Requested::send(f, remote_listener());
    ASSERT_TRUE(r) << r.error().message();
    auto ev = next_event(f.provider(1), *r->active.ch, std::chrono::seconds(30));
    ASSERT_TRUE(ev) << ev.error().message();
    EXPECT_EQ(ev->type, CmEventType::rejected) << ev->describe();
    EXPECT_EQ(ev->status, prov::reject_reason::no_listener) << ev->describe();
    put("done", "1");
  }
}

// ECE values cross both ways: the REQ's offer, the REP's accepted subset.
TEST(CrossNode, EceCarriedOnRequestAndReply) {
  REQUIRE_ENV();
  WIREUP_REQUIRE_FABRIC(f);
  if (server()) {
    auto l = Listener::create(f);
    ASSERT_TRUE(l) << l.error().message();
    put("port", std::to_string(l->addr.port()));
    auto in = Incoming::take(f, *l);
    ASSERT_TRUE(in) << in.error().message();
    auto remote = in->id->get_remote_ece();
    ASSERT_TRUE(remote) << remote.error().message();
    EXPECT_EQ(remote->vendor_id, kMellanox);
    EXPECT_EQ(remote->options, 0x3u);
    ASSERT_TRUE(in->ready());
    ASSERT_TRUE(in->id->set_local_ece({kMellanox, 0x1}));
    ASSERT_TRUE(in->accept());
    EXPECT_EQ(get("done"), "1");
  } else {
    auto r = Requested::send(f, remote_listener(), prov::Ece{kMellanox, 0x3});
    ASSERT_TRUE(r) << r.error().message();
    auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response, std::chrono::seconds(30));
    auto back = r->active.id->get_remote_ece();
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(back->vendor_id, kMellanox);
    EXPECT_EQ(back->options, 0x1u);
    resp.ack();
    put("done", "1");
  }
}

}  // namespace
}  // namespace wireup::conf
