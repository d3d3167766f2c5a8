// Rejects: by the consumer with private data, and by nobody listening.
#include "tests/conformance/harness.h"

namespace wireup::conf {
namespace {

using prov::CmEventType;

TEST(Conformance, RejectWithPrivateDataGivesStatus28) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto r = Requested::send(f, l->addr);
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  const std::string why = "stranger: wrong job key";
  ASSERT_TRUE(in->id->reject({reinterpret_cast<const uint8_t*>(why.data()), why.size()}));
  in->req.ack();
  auto rej = expect_event(f.provider(1), *r->active.ch, CmEventType::rejected);
  EXPECT_EQ(rej.status, prov::reject_reason::consumer);
  ASSERT_GE(rej.private_data.size(), why.size());
  EXPECT_EQ(std::string(rej.private_data.begin(), rej.private_data.begin() + why.size()), why);
  // As with the REQ, the receiver gets the whole REJ field.
  EXPECT_EQ(rej.private_data.size(), prov::private_data_limit::rej);
}

// A REQ with no QP at all (conn_param.qp_num 0): the engine's rtu_lost notice. rdma_connect
// takes qp_num from conn_param when the id has no QP and the IB CM does not check it; the
// passive side sees a CONNECT_REQUEST with qp_num 0 and its private data, and its reject with
// private data reaches the sender as REJECTED 28.
TEST(Conformance, RequestWithoutQpIsDeliveredAndRejected) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  const std::string note = "rtu_lost lane 3 attempt 2";
  prov::ConnParam p;
  p.qp_num = 0;
  p.private_data.assign(note.begin(), note.end());
  ASSERT_TRUE(a->id->connect(p));
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  EXPECT_EQ(in->req.qp_num, 0u);
  ASSERT_GE(in->req.private_data.size(), note.size());
  EXPECT_EQ(std::string(in->req.private_data.begin(), in->req.private_data.begin() + note.size()), note);
  const std::string answer = "repair_accepted";
  ASSERT_TRUE(in->id->reject({reinterpret_cast<const uint8_t*>(answer.data()), answer.size()}));
  in->req.ack();
  auto rej = expect_event(f.provider(1), *a->ch, CmEventType::rejected);
  EXPECT_EQ(rej.status, prov::reject_reason::consumer);
  ASSERT_GE(rej.private_data.size(), answer.size());
  EXPECT_EQ(std::string(rej.private_data.begin(), rej.private_data.begin() + answer.size()), answer);
}

// Two QP-less REQs from one device while the first is still held (its CONNECT_REQUEST taken,
// not answered): the receiving CM's stale-connection check is keyed by the sender's CA and
// QPN (cm_match_req, cm_insert_remote_qpn), and both carry QPN 0, so the second is refused
// with REJ 10 and never reaches the listener. Once the first is answered, the key is free.
TEST(Conformance, SecondRequestWithoutQpWhileTheFirstIsHeldIsRejectedStale) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto qpless = [&](Active& a) {
    prov::ConnParam p;
    p.qp_num = 0;
    return a.id->connect(p);
  };
  auto first = Active::resolve(f, l->addr);
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(qpless(*first));
  auto held = Incoming::take(f, *l);
  ASSERT_TRUE(held) << held.error().message();
  auto second = Active::resolve(f, l->addr);
  ASSERT_TRUE(second) << second.error().message();
  ASSERT_TRUE(qpless(*second));
  auto rej = expect_event(f.provider(1), *second->ch, CmEventType::rejected);
  EXPECT_EQ(rej.status, prov::reject_reason::stale_conn) << rej.describe();
  rej.ack();
  expect_no_event(f.provider(0), *l->ch, std::chrono::milliseconds(200));
  // Answered: the first one's key goes, and a third QP-less REQ reaches the listener.
  ASSERT_TRUE(held->id->reject({}));
  held->req.ack();
  auto answered = expect_event(f.provider(1), *first->ch, CmEventType::rejected);
  EXPECT_EQ(answered.status, prov::reject_reason::consumer);
  answered.ack();
  auto third = Active::resolve(f, l->addr);
  ASSERT_TRUE(third) << third.error().message();
  ASSERT_TRUE(qpless(*third));
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  EXPECT_EQ(in->req.qp_num, 0u);
  ASSERT_TRUE(in->id->reject({}));
  in->req.ack();
  expect_event(f.provider(1), *third->ch, CmEventType::rejected).ack();
}

// What the stack answers to a REQ for a port nobody listens on: the remote IB CM rejects
// with reason 8 (invalid service id) rather than letting the REQ time out.
TEST(Conformance, ConnectWhereNothingListens) {
  WIREUP_REQUIRE_FABRIC(f);
  prov::SockAddr dst;
  {
    auto l = Listener::create(f);  // take a port, then close it: nobody listens there now
    ASSERT_TRUE(l) << l.error().message();
    dst = l->addr;
  }
  auto r = Requested::send(f, dst);
  ASSERT_TRUE(r) << r.error().message();
  auto ev = next_event(f.provider(1), *r->active.ch, std::chrono::seconds(30));
  ASSERT_TRUE(ev) << ev.error().message();
  RecordProperty("no_listener_event", prov::to_string(ev->type));
  RecordProperty("no_listener_status", ev->status);
  EXPECT_EQ(ev->type, CmEventType::rejected) << ev->describe();
  EXPECT_EQ(ev->status, prov::reject_reason::no_listener) << ev->describe();
}

}  // namespace
}  // namespace wireup::conf
