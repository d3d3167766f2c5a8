// ECE as the CM carries it (REQ and REP), the EINVAL rules, devices without ECE, reject_ece.
#include "tests/conformance/harness.h"

namespace wireup::conf {
namespace {

using prov::CmEventType;
using prov::QpState;

constexpr uint32_t kMellanox = 0x15b3;  // PCI vendor id used as the ECE vendor id

TEST(Conformance, EceCarriedOnRequestAndReply) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  auto aqp = AppQp::create(*a->id->device());
  ASSERT_TRUE(aqp);
  ASSERT_TRUE(aqp->to_state(*a->id, QpState::init));
  ASSERT_TRUE(a->id->set_local_ece({kMellanox, 0x3}));
  prov::ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  ASSERT_TRUE(a->id->connect(cp));

  auto req = expect_event(f.provider(0), *l->ch, CmEventType::connect_request);
  auto pid = std::move(req.new_id);
  ASSERT_NE(pid, nullptr);
  auto remote = pid->get_remote_ece();
  ASSERT_TRUE(remote) << remote.error().message();
  EXPECT_EQ(remote->vendor_id, kMellanox);
  EXPECT_EQ(remote->options, 0x3u);

  auto pqp = AppQp::create(*pid->device());
  ASSERT_TRUE(pqp);
  ASSERT_TRUE(pqp->to_state(*pid, QpState::init));
  ASSERT_TRUE(pqp->to_state(*pid, QpState::rtr));
  ASSERT_TRUE(pqp->to_state(*pid, QpState::rts));
  ASSERT_TRUE(pid->set_local_ece({kMellanox, 0x1}));  // the accepted subset
  prov::ConnParam ap;
  ap.qp_num = pqp->qp->qpn();
  ASSERT_TRUE(pid->accept(ap));
  req.ack();

  auto resp = expect_event(f.provider(1), *a->ch, CmEventType::connect_response);
  auto back = a->id->get_remote_ece();
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->vendor_id, kMellanox);
  EXPECT_EQ(back->options, 0x1u);
}

TEST(Conformance, SetLocalEceWithVendorZeroIsEinval) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  Status s = a->id->set_local_ece({0, 0x1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().err, EINVAL) << s.message();
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
}

// Devices either support ECE on their QPs or answer EOPNOTSUPP (rxe does); nothing else.
TEST(Conformance, QpEceAnswersOrIsUnsupported) {
  WIREUP_REQUIRE_FABRIC(f);
  auto devs = f.provider(1).devices();
  ASSERT_TRUE(devs) << devs.error().message();
  ASSERT_FALSE(devs->empty());
  for (prov::Device* d : *devs) {
    auto qp = AppQp::create(*d);
    ASSERT_TRUE(qp) << qp.error().message();
    auto q = qp->qp->query_ece();
    Status s = qp->qp->set_ece({kMellanox, 0x1});
    if (q) {
      RecordProperty(d->info().name + "_ece", "supported");
      EXPECT_TRUE(s) << s.message();
    } else {
      RecordProperty(d->info().name + "_ece", "EOPNOTSUPP");
      EXPECT_EQ(q.error().err, EOPNOTSUPP) << q.error().message();
      EXPECT_EQ(q.code(), ErrorCode::not_supported);
      EXPECT_EQ(s.error().err, EOPNOTSUPP) << s.message();
      EXPECT_EQ(q.error().qpn, qp->qp->qpn()) << "errors carry the QPN";
    }
    if (d->info().name.rfind("rxe", 0) == 0) {
      EXPECT_FALSE(q) << "rxe is known not to implement ECE";
    }
  }
}

TEST(Conformance, RejectEceGivesStatus35) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  auto aqp = AppQp::create(*a->id->device());
  ASSERT_TRUE(aqp);
  ASSERT_TRUE(aqp->to_state(*a->id, QpState::init));
  ASSERT_TRUE(a->id->set_local_ece({kMellanox, 0x4}));
  prov::ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  ASSERT_TRUE(a->id->connect(cp));
  auto req = expect_event(f.provider(0), *l->ch, CmEventType::connect_request);
  auto pid = std::move(req.new_id);
  ASSERT_NE(pid, nullptr);
  const uint8_t why[] = {'e', 'c', 'e'};
  ASSERT_TRUE(pid->reject_ece(why));
  req.ack();
  auto rej = expect_event(f.provider(1), *a->ch, CmEventType::rejected);
  EXPECT_EQ(rej.status, prov::reject_reason::vendor_option);
}

}  // namespace
}  // namespace wireup::conf

namespace wireup::conf {
namespace {

// librdmacm builds the REP's ECE from the REQ's vendor id and the passive side's own options:
// a passive side that sets nothing answers {offered vendor, 0}, not "no ECE".
TEST(Conformance, ReplyEchoesVendorWhenPassiveSetsNoEce) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a) << a.error().message();
  auto aqp = AppQp::create(*a->id->device());
  ASSERT_TRUE(aqp);
  ASSERT_TRUE(aqp->to_state(*a->id, prov::QpState::init));
  ASSERT_TRUE(a->id->set_local_ece({0x15b3, 0x6}));
  prov::ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  ASSERT_TRUE(a->id->connect(cp));
  auto req = expect_event(f.provider(0), *l->ch, prov::CmEventType::connect_request);
  auto pid = std::move(req.new_id);
  ASSERT_NE(pid, nullptr);
  auto pqp = AppQp::create(*pid->device());
  ASSERT_TRUE(pqp);
  ASSERT_TRUE(pqp->to_state(*pid, prov::QpState::init));
  ASSERT_TRUE(pqp->to_state(*pid, prov::QpState::rtr));
  ASSERT_TRUE(pqp->to_state(*pid, prov::QpState::rts));
  prov::ConnParam ap;
  ap.qp_num = pqp->qp->qpn();
  ASSERT_TRUE(pid->accept(ap));  // no set_local_ece on this side
  req.ack();
  auto resp = expect_event(f.provider(1), *a->ch, prov::CmEventType::connect_response);
  auto back = a->id->get_remote_ece();
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->vendor_id, 0x15b3u);
  EXPECT_EQ(back->options, 0u);
}

}  // namespace
}  // namespace wireup::conf
