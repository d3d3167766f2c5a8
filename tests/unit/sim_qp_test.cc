// The sim provider's QPs: the verbs state machine and the attributes each transition requires,
// ECE on devices with and without it, and the SEND/RECV data path.
#include <gtest/gtest.h>

#include <cstring>

#include "provider/sim/fabric.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {
namespace {

struct Rig {
  SimFabric fab{SimConfig{.seed = 3, .latency = LatencyModel::zero()}};
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> cq;
  Device* dev = nullptr;

  explicit Rig(SimDeviceSpec spec = SimDeviceSpec::mlx5()) {
    SimNodeSpec n;
    n.devices = {spec};
    fab.add_node(n);
    dev = (*fab.provider(0).devices())[0];
    pd = std::move(dev->alloc_pd()).value();
    cq = std::move(dev->create_cq(16, false)).value();
  }
  std::unique_ptr<Qp> qp() {
    QpInitAttr a;
    a.send_cq = cq.get();
    a.recv_cq = cq.get();
    a.caps.max_recv_wr = 4;
    return std::move(pd->create_qp(a)).value();
  }
};

QpAttr to(QpState s) {
  QpAttr a;
  a.qp_state = s;
  a.port_num = 1;
  a.path_mtu = 3;
  a.dest_qp_num = 0x99;
  a.max_dest_rd_atomic = 1;
  a.max_rd_atomic = 1;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  return a;
}

constexpr uint32_t kInit = qp_mask::state | qp_mask::pkey_index | qp_mask::port | qp_mask::access_flags;
constexpr uint32_t kRtr = qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn |
                          qp_mask::rq_psn | qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer;
constexpr uint32_t kRts = qp_mask::state | qp_mask::sq_psn | qp_mask::timeout | qp_mask::retry_cnt |
                          qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic;

TEST(SimQp, ResetInitRtrRts) {
  Rig r;
  auto qp = r.qp();
  EXPECT_EQ(qp->state(), QpState::reset);
  EXPECT_GE(qp->qpn(), 0x11u);
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  ASSERT_TRUE(qp->modify(to(QpState::rts), kRts));
  EXPECT_EQ(qp->state(), QpState::rts);
  auto q = qp->query(0);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->dest_qp_num, 0x99u);
  EXPECT_EQ(q->timeout, 14);
}

TEST(SimQp, RefusesTransitionWithoutItsAttributesNamingThem) {
  Rig r;
  auto qp = r.qp();
  Status s = qp->modify(to(QpState::init), qp_mask::state | qp_mask::port);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().err, EINVAL);
  EXPECT_EQ(s.error().call, "ibv_modify_qp");
  EXPECT_EQ(s.error().qpn, qp->qpn());
  EXPECT_NE(s.error().detail.find("missing ACCESS_FLAGS|PKEY_INDEX"), std::string::npos) << s.message();
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  s = qp->modify(to(QpState::rtr), kRtr & ~qp_mask::dest_qpn);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().detail.find("missing DEST_QPN"), std::string::npos) << s.message();
  EXPECT_EQ(qp->state(), QpState::init) << "a refused modify changes nothing";
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  s = qp->modify(to(QpState::rts), kRts & ~(qp_mask::retry_cnt | qp_mask::rnr_retry));
  EXPECT_NE(s.error().detail.find("missing RETRY_CNT|RNR_RETRY"), std::string::npos) << s.message();
}

TEST(SimQp, RefusesSkippedStatesAndForeignBits) {
  Rig r;
  auto qp = r.qp();
  Status s = qp->modify(to(QpState::rts), kRts);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().detail.find("not a QP state transition"), std::string::npos) << s.message();
  s = qp->modify(to(QpState::init), kInit | qp_mask::dest_qpn);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().detail.find("DEST_QPN not allowed"), std::string::npos) << s.message();
  QpAttr bad = to(QpState::init);
  bad.port_num = 2;
  EXPECT_FALSE(qp->modify(bad, kInit)) << "the device has one port";
}

TEST(SimQp, ErrFromAnywhereThenReset) {
  Rig r;
  auto qp = r.qp();
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  ASSERT_TRUE(qp->modify(to(QpState::err), qp_mask::state));
  EXPECT_EQ(qp->state(), QpState::err);
  EXPECT_FALSE(qp->modify(to(QpState::rtr), kRtr)) << "ERR goes to RESET only";
  ASSERT_TRUE(qp->modify(to(QpState::reset), qp_mask::state));
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  ASSERT_TRUE(qp->modify(to(QpState::err), qp_mask::state));
  EXPECT_TRUE(qp->modify(to(QpState::err), qp_mask::state));
}

TEST(SimQp, PathMtuAboveThePortIsRefused) {
  Rig r(SimDeviceSpec::rxe());  // 1024-byte port
  auto qp = r.qp();
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  QpAttr a = to(QpState::rtr);
  a.path_mtu = 5;
  EXPECT_FALSE(qp->modify(a, kRtr));
  a.path_mtu = 3;
  EXPECT_TRUE(qp->modify(a, kRtr));
}

TEST(SimQp, EceOnADeviceWithoutItIsEopnotsupp) {
  Rig r(SimDeviceSpec::rxe());
  EXPECT_EQ(r.dev->info().name, "rxe0");
  auto qp = r.qp();
  auto q = qp->query_ece();
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().err, EOPNOTSUPP);
  EXPECT_EQ(q.code(), ErrorCode::not_supported);
  EXPECT_EQ(q.error().qpn, qp->qpn());
  auto s = qp->set_ece({0x15b3, 1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().err, EOPNOTSUPP);
  EXPECT_EQ(s.error().qpn, qp->qpn());
}

// As rdma-core providers/mlx5/verbs.c answers: query always works ({0x15b3, the firmware's last
// answer}, its answer at create before any set), set stores the options without writing
// anything back and clears that answer, and the next modify gives the firmware's decision.
TEST(SimQp, EceOnAnMlx5WithIt) {
  SimDeviceSpec spec = SimDeviceSpec::mlx5();
  spec.ece_options = 0x7;
  Rig r(spec);
  auto qp = r.qp();
  auto q = qp->query_ece();
  ASSERT_TRUE(q) << q.error().message();
  EXPECT_EQ(*q, (Ece{0x15b3, 0x7})) << "the firmware's answer at create";
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0x7})) << "RST->INIT without a set changes nothing";
  EXPECT_EQ(qp->set_ece({0, 0x4}).error().err, EOPNOTSUPP) << "libibverbs: vendor 0";
  EXPECT_EQ(qp->set_ece({0x8086, 0x4}).error().err, EINVAL) << "another vendor";
  ASSERT_TRUE(qp->set_ece({0x15b3, 0xd}));  // bit 3 is not the device's: the firmware decides
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0})) << "set clears the last answer, writes nothing back";
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0x5})) << "after the modify: what the firmware took";
  ASSERT_TRUE(qp->modify(to(QpState::rts), kRts));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0x5})) << "a modify without a set keeps the answer";
}

TEST(SimQp, EceFirmwareTakesFewerOptionsWithoutAnError) {
  SimDeviceSpec spec = SimDeviceSpec::mlx5();
  spec.ece_options = 0x7;
  spec.ece_fw_takes = 0x1;  // takes only bit 0 of what it is asked for
  Rig r(spec);
  auto qp = r.qp();
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  ASSERT_TRUE(qp->set_ece({0x15b3, 0x7}));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0}));
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0x1}));
}

TEST(SimQp, EceOnAnMlx5WithoutIt) {
  Rig r(SimDeviceSpec::mlx5_no_ece());
  auto qp = r.qp();
  auto q = qp->query_ece();
  ASSERT_TRUE(q) << "mlx5_query_ece always answers";
  EXPECT_EQ(*q, (Ece{0x15b3, 0}));
  auto s = qp->set_ece({0x15b3, 0x1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().err, EOPNOTSUPP);
  EXPECT_EQ(s.code(), ErrorCode::not_supported);
  EXPECT_EQ(s.error().qpn, qp->qpn());
  EXPECT_EQ(qp->set_ece({0x8086, 0x1}).error().err, EINVAL) << "the vendor is checked first";
  ASSERT_TRUE(qp->modify(to(QpState::init), kInit));
  ASSERT_TRUE(qp->modify(to(QpState::rtr), kRtr));
  EXPECT_EQ(*qp->query_ece(), (Ece{0x15b3, 0}));
}

TEST(SimQp, MaxQpIsEnforced) {
  SimDeviceSpec spec = SimDeviceSpec::mlx5();
  spec.max_qp = 2;
  Rig r(spec);
  auto a = r.qp();
  auto b = r.qp();
  QpInitAttr init;
  init.send_cq = r.cq.get();
  init.recv_cq = r.cq.get();
  auto c = r.pd->create_qp(init);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().err, ENOMEM);
  b.reset();
  EXPECT_TRUE(r.pd->create_qp(init));
}

// Two QPs of one node wired by hand: RTR/RTS attributes naming each other.
TEST(SimQp, SendReachesThePostedReceive) {
  Rig r;
  auto a = r.qp();
  auto b = r.qp();
  std::vector<uint8_t> buf(256);
  auto mr = r.pd->reg_mr(buf.data(), buf.size(), access::local_write);
  ASSERT_TRUE(mr);
  auto wire = [&](Qp& q, uint32_t dest) {
    QpAttr at = to(QpState::rtr);
    at.dest_qp_num = dest;
    at.ah_attr.dgid.raw[10] = 0xff;
    at.ah_attr.dgid.raw[11] = 0xff;
    uint32_t ip = sim_ipv4(0, 0);
    for (int i = 0; i < 4; ++i) at.ah_attr.dgid.raw[12 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
    ASSERT_TRUE(q.modify(to(QpState::init), kInit));
    ASSERT_TRUE(q.modify(at, kRtr));
    ASSERT_TRUE(q.modify(to(QpState::rts), kRts));
  };
  const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
  // Not at RTS yet: posting a send is refused.
  EXPECT_EQ(a->post_send(1, Sge{base, 4, (*mr)->lkey()}, true).error().err, EINVAL);
  wire(*a, b->qpn());
  wire(*b, a->qpn());
  std::memcpy(buf.data(), "ping", 4);
  ASSERT_TRUE(a->post_send(7, Sge{base, 4, (*mr)->lkey()}, true));  // before the receive: RNR wait
  WorkCompletion wc[4];
  EXPECT_EQ(*r.cq->poll(wc), 0);
  ASSERT_TRUE(b->post_recv(8, Sge{base + 128, 128, (*mr)->lkey()}));
  ASSERT_EQ(*r.cq->poll(wc), 2);
  EXPECT_EQ(wc[0].opcode, wc_opcode_recv);
  EXPECT_EQ(wc[0].wr_id, 8u);
  EXPECT_EQ(wc[0].byte_len, 4u);
  EXPECT_EQ(wc[0].src_qp, a->qpn());
  EXPECT_EQ(wc[1].opcode, wc_opcode_send);
  EXPECT_EQ(wc[1].wr_id, 7u);
  EXPECT_EQ(std::memcmp(buf.data() + 128, "ping", 4), 0);
  // An unregistered key is a local protection error, not a crash.
  ASSERT_TRUE(a->post_send(9, Sge{base, 4, 0xdead}, true));
  ASSERT_EQ(*r.cq->poll(wc), 1);
  EXPECT_EQ(wc[0].status, wc_status::loc_prot_err);
  mr->reset();
}

TEST(SimQp, RcTransitionTable) {
  EXPECT_TRUE(rc_transition(QpState::rts, QpState::err).allowed);
  EXPECT_TRUE(rc_transition(QpState::sqd, QpState::reset).allowed);
  EXPECT_FALSE(rc_transition(QpState::init, QpState::rts).allowed);
  EXPECT_FALSE(rc_transition(QpState::err, QpState::init).allowed);
  EXPECT_EQ(rc_transition(QpState::reset, QpState::init).required,
            qp_mask::pkey_index | qp_mask::port | qp_mask::access_flags);
}

}  // namespace
}  // namespace wireup::prov::sim
