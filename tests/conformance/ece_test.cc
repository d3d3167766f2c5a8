// ECE as the CM carries it (REQ and REP), the EINVAL rules, devices without ECE, reject_ece.
#include "tests/conformance/harness.h"

namespace wireup::conf {
namespace {

using prov::CmEventType;

constexpr uint32_t kMellanox = 0x15b3;  // PCI vendor id used as the ECE vendor id

TEST(Conformance, EceCarriedOnRequestAndReply) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto r = Requested::send(f, l->addr, prov::Ece{kMellanox, 0x3});
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  auto remote = in->id->get_remote_ece();
  ASSERT_TRUE(remote) << remote.error().message();
  EXPECT_EQ(remote->vendor_id, kMellanox);
  EXPECT_EQ(remote->options, 0x3u);
  ASSERT_TRUE(in->ready());
  ASSERT_TRUE(in->id->set_local_ece({kMellanox, 0x1}));  // the accepted subset
  ASSERT_TRUE(in->accept());

  auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response);
  auto back = r->active.id->get_remote_ece();
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->vendor_id, kMellanox);
  EXPECT_EQ(back->options, 0x1u);
}

// librdmacm builds the REP's ECE from the REQ's vendor id and the passive side's own options:
// a passive side that sets nothing answers {offered vendor, 0}, not "no ECE".
TEST(Conformance, ReplyEchoesVendorWhenPassiveSetsNoEce) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto r = Requested::send(f, l->addr, prov::Ece{kMellanox, 0x6});
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  ASSERT_TRUE(in->ready());
  ASSERT_TRUE(in->accept());  // no set_local_ece on this side
  auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response);
  auto back = r->active.id->get_remote_ece();
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->vendor_id, kMellanox);
  EXPECT_EQ(back->options, 0u);
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
    auto s = qp->qp->set_ece({kMellanox, 0x1});
    if (q) {
      RecordProperty(d->info().name + "_ece", "supported");
      EXPECT_TRUE(s) << s.error().message();
    } else {
      RecordProperty(d->info().name + "_ece", "EOPNOTSUPP");
      EXPECT_EQ(q.error().err, EOPNOTSUPP) << q.error().message();
      EXPECT_EQ(q.code(), ErrorCode::not_supported);
      ASSERT_FALSE(s);
      EXPECT_EQ(s.error().err, EOPNOTSUPP) << s.error().message();
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
  auto r = Requested::send(f, l->addr, prov::Ece{kMellanox, 0x4});
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  const uint8_t why[] = {'e', 'c', 'e'};
  ASSERT_TRUE(in->id->reject_ece(why));
  in->req.ack();
  auto rej = expect_event(f.provider(1), *r->active.ch, CmEventType::rejected);
  EXPECT_EQ(rej.status, prov::reject_reason::vendor_option);
}

}  // namespace
}  // namespace wireup::conf
