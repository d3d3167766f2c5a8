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

// The ECE verbs as the devices answer them. rxe has no ECE verbs: EOPNOTSUPP to both
// (libibverbs dummy_ops.c). mlx5 (rdma-core providers/mlx5/verbs.c) always answers query with
// its vendor and the firmware's last answer; set only stores the options (EOPNOTSUPP without
// the ECE capability) and clears that answer: nothing is written back before a modify.
TEST(Conformance, QpEceAsTheDeviceAnswers) {
  WIREUP_REQUIRE_FABRIC(f);
  auto devs = f.provider(1).devices();
  ASSERT_TRUE(devs) << devs.error().message();
  ASSERT_FALSE(devs->empty());
  for (prov::Device* d : *devs) {
    SCOPED_TRACE(d->info().name);
    auto qp = AppQp::create(*d);
    ASSERT_TRUE(qp) << qp.error().message();
    auto q = qp->qp->query_ece();
    if (!q) {
      RecordProperty(d->info().name + "_ece", "EOPNOTSUPP");
      EXPECT_EQ(q.error().err, EOPNOTSUPP) << q.error().message();
      EXPECT_EQ(q.code(), ErrorCode::not_supported);
      EXPECT_EQ(q.error().qpn, qp->qp->qpn()) << "errors carry the QPN";
      Status s = qp->qp->set_ece({kMellanox, 0x1});
      ASSERT_FALSE(s);
      EXPECT_EQ(s.error().err, EOPNOTSUPP) << s.error().message();
      continue;
    }
    EXPECT_NE(q->vendor_id, 0u) << "a device that answers query names its vendor";
    Status other = qp->qp->set_ece({q->vendor_id ^ 0x1, 0x1});
    ASSERT_FALSE(other) << "another vendor's options";
    EXPECT_EQ(other.error().err, EINVAL) << other.error().message();
    Status s = qp->qp->set_ece({q->vendor_id, 0x1});
    if (!s) {
      RecordProperty(d->info().name + "_ece", "query only (set: EOPNOTSUPP)");
      EXPECT_EQ(s.error().err, EOPNOTSUPP) << s.error().message();
      EXPECT_EQ(q->options, 0u) << "a device without ECE has no firmware answer";
      continue;
    }
    RecordProperty(d->info().name + "_ece", "supported");
    auto after = qp->qp->query_ece();
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(*after, (prov::Ece{q->vendor_id, 0})) << "set stores; the firmware has not answered yet";
    if (d->info().name.rfind("rxe", 0) == 0) ADD_FAILURE() << "rxe is known not to implement ECE";
  }
}

// The passive side's ECE flow on the device the CM chose: the offer set before INIT->RTR,
// what the firmware took read after it, and carried back in the REP. On a device without ECE
// (rxe in the VM) set and query say EOPNOTSUPP and the connection goes on without options.
TEST(Conformance, EcePassiveFlowTheRepCarriesWhatWasTaken) {
  WIREUP_REQUIRE_FABRIC(f);
  auto l = Listener::create(f);
  ASSERT_TRUE(l) << l.error().message();
  auto r = Requested::send(f, l->addr, prov::Ece{kMellanox, 0x1});
  ASSERT_TRUE(r) << r.error().message();
  auto in = Incoming::take(f, *l);
  ASSERT_TRUE(in) << in.error().message();
  auto remote = in->id->get_remote_ece();
  ASSERT_TRUE(remote) << remote.error().message();
  ASSERT_EQ(*remote, (prov::Ece{kMellanox, 0x1}));
  prov::Device& dev = *in->id->device();
  auto qp = AppQp::create(dev);
  ASSERT_TRUE(qp) << qp.error().message();
  in->qp = std::move(qp).value();
  ASSERT_TRUE(in->qp.to_state(*in->id, prov::QpState::init));
  Status set = in->qp.qp->set_ece(*remote);
  ASSERT_TRUE(in->qp.to_state(*in->id, prov::QpState::rtr));
  auto taken = in->qp.qp->query_ece();
  uint32_t in_force = 0;
  if (set) {
    ASSERT_TRUE(taken) << taken.error().message();
    EXPECT_EQ(taken->options & ~remote->options, 0u) << "the firmware takes no more than it was asked for";
    in_force = taken->options;
    RecordProperty(dev.info().name + "_taken", std::to_string(in_force));
    if (in_force != 0) {
      ASSERT_TRUE(in->id->set_local_ece({kMellanox, in_force}));
    }
  } else {
    EXPECT_EQ(set.error().err, EOPNOTSUPP) << set.error().message();
    RecordProperty(dev.info().name + "_taken", "EOPNOTSUPP");
  }
  ASSERT_TRUE(in->qp.to_state(*in->id, prov::QpState::rts));
  ASSERT_TRUE(in->accept());
  auto resp = expect_event(f.provider(1), *r->active.ch, CmEventType::connect_response);
  auto back = r->active.id->get_remote_ece();
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, (prov::Ece{kMellanox, in_force})) << "the REP carries what the passive firmware took";
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
