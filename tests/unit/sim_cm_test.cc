// The IB CM model of the sim provider: retransmission timing, MRA, duplicates, lost RTU,
// backlog, DREQ/DREP/TIMEWAIT, limits, ECE in REQ/REP, init_qp_attr, the ack discipline.
// Zero step costs throughout, so every time below is a protocol timer.
#include <gtest/gtest.h>

#include "provider/sim/fabric.h"
#include "tests/conformance/harness.h"

namespace wireup::prov::sim {
namespace {

using namespace std::chrono_literals;
using conf::Active;
using conf::AppQp;
using conf::Listener;
using conf::next_event;

class Fab final : public conf::TestFabric {
 public:
  explicit Fab(SimConfig cfg = zero_cfg(), int nodes = 2) : fab(std::move(cfg)) {
    for (int i = 0; i < nodes; ++i) fab.add_node();
  }
  static SimConfig zero_cfg() {
    SimConfig c;
    c.latency = LatencyModel::zero();
    return c;
  }
  std::string name() const override { return "sim"; }
  Provider& provider(int n) override { return fab.provider(static_cast<uint32_t>(n)); }
  SockAddr address(int n) override { return fab.address(static_cast<uint32_t>(n)); }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return false; }
  SimFabric fab;
};

SimConfig with_rule(MessageRule r) {
  SimConfig c = Fab::zero_cfg();
  c.faults.rules.push_back(r);
  return c;
}

constexpr Nanos kAttempt = 6144ms;  // 2 x 1024 ms packet lifetime + 4096 ms response timeout

TEST(SimCm, ProtocolTimersFollowTheKernelConstants) {
  LatencyModel m;
  EXPECT_EQ(m.cm_attempt_timeout(), kAttempt);
  EXPECT_EQ(m.timewait(), 2048ms);
  EXPECT_EQ(m.mra_timeout(), 65536ms + 2048ms);
  EXPECT_EQ(LatencyModel::cm_time(20), 4096ms);
}

TEST(SimCm, ReqRetransmittedThenUnreachable) {
  Fab f(with_rule({.types = msg_bit(CmMsg::req), .drop = 1}));
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  const Nanos t0 = f.fab.now();
  ConnParam cp;
  ASSERT_TRUE(a->id->connect(cp));
  auto ev = next_event(f.provider(1), *a->ch, 200s);
  ASSERT_TRUE(ev) << ev.error().message();
  EXPECT_EQ(ev->type, CmEventType::unreachable);
  EXPECT_EQ(ev->status, -ETIMEDOUT);
  // The first REQ and 15 retransmissions, each waiting one attempt timeout.
  EXPECT_EQ(f.fab.now() - t0, 16 * kAttempt);
  EXPECT_EQ(f.fab.stats().req_retransmits, 15u);
  EXPECT_EQ(f.fab.stats().unreachable, 1u);
}

TEST(SimCm, MraKeepsASlowPassiveSideAlive) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  const Nanos t0 = f.fab.now();
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  // The passive consumer sits on its CONNECT_REQUEST for 120 s: longer than the 98.3 s
  // the active side would wait without MRA.
  f.fab.run_until(t0 + 120s);
  EXPECT_GE(f.fab.stats().mra_sent, 1u);
  EXPECT_EQ(f.fab.stats().unreachable, 0u);
  auto req = l->ch->get_event();
  ASSERT_TRUE(req);
  ASSERT_EQ(req->type, CmEventType::connect_request);
  EXPECT_FALSE(l->ch->get_event()) << "duplicate REQs must not make more requests";
  auto pid = std::move(req->new_id);
  ASSERT_TRUE(pid->accept(ConnParam{}));
  req->ack();
  auto resp = next_event(f.provider(1), *a->ch, 10s);
  ASSERT_TRUE(resp) << resp.error().message();
  EXPECT_EQ(resp->type, CmEventType::connect_response);
  EXPECT_EQ(f.fab.now(), t0 + 120s);
}

TEST(SimCm, DuplicateReqMakesOneRequest) {
  Fab f(with_rule({.types = msg_bit(CmMsg::req), .duplicate = 1}));
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto p = conf::connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_GE(f.fab.stats().messages_duplicated, 1u);
  conf::expect_no_event(f.provider(0), *l->ch, 10s);
}

// A lost REP: the active side's REQ retransmission reaches a passive id that already
// answered; the kernel drops that duplicate and the REP's own timer resends it.
TEST(SimCm, LostRepIsResentByItsTimerNotByTheDuplicateReq) {
  Fab f(with_rule({.types = msg_bit(CmMsg::rep), .drop = 1, .max_hits = 1}));
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  const Nanos t0 = f.fab.now();
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto pid = std::move(req->new_id);
  ASSERT_TRUE(pid->accept(ConnParam{}));
  req->ack();
  auto resp = next_event(f.provider(1), *a->ch, 60s);
  ASSERT_TRUE(resp) << resp.error().message();
  EXPECT_EQ(resp->type, CmEventType::connect_response);
  EXPECT_EQ(f.fab.now() - t0, kAttempt);
  EXPECT_EQ(f.fab.stats().rep_retransmits, 1u);
  EXPECT_EQ(f.fab.stats().req_retransmits, 1u);
  conf::expect_no_event(f.provider(0), *l->ch, 1s);  // no second CONNECT_REQUEST
}

TEST(SimCm, LostRtuMakesThePassiveSideResendRep) {
  Fab f(with_rule({.types = msg_bit(CmMsg::rtu), .drop = 1, .max_hits = 1}));
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  const Nanos t0 = f.fab.now();
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto pid = std::move(req->new_id);
  ASSERT_TRUE(pid->accept(ConnParam{}));
  req->ack();
  auto resp = next_event(f.provider(1), *a->ch);
  ASSERT_TRUE(resp);
  ASSERT_TRUE(a->id->establish());
  resp->ack();
  auto est = next_event(f.provider(0), *l->ch, 60s);
  ASSERT_TRUE(est) << est.error().message();
  EXPECT_EQ(est->type, CmEventType::established);
  EXPECT_EQ(est->id, pid.get());
  // REP timer (one attempt) -> REP again -> the established active side resends its RTU.
  EXPECT_EQ(f.fab.now() - t0, kAttempt);
  EXPECT_EQ(f.fab.stats().rep_retransmits, 1u);
  conf::expect_no_event(f.provider(1), *a->ch, 1s);
}

TEST(SimCm, FullBacklogDropsReqUntilTheListenerCatchesUp) {
  Fab f;
  auto l = Listener::create(f, 1);
  ASSERT_TRUE(l);
  auto a1 = Active::resolve(f, l->addr);
  auto a2 = Active::resolve(f, l->addr);
  ASSERT_TRUE(a1 && a2);
  const Nanos t0 = f.fab.now();
  // QPNs of their own: two REQs with one (device, QPN) would meet the CM's stale-connection
  // check before the backlog (the second refused REJ 10, as on the kernel).
  ConnParam p1, p2;
  p1.qp_num = 0x100;
  p2.qp_num = 0x101;
  ASSERT_TRUE(a1->id->connect(p1));
  ASSERT_TRUE(a2->id->connect(p2));
  f.fab.run_until(t0 + 1s);
  EXPECT_EQ(f.fab.stats().backlog_drops, 1u);
  auto r1 = l->ch->get_event();  // frees the backlog slot
  ASSERT_TRUE(r1);
  EXPECT_FALSE(l->ch->get_event());
  auto r2 = next_event(f.provider(0), *l->ch, 10s);
  ASSERT_TRUE(r2) << r2.error().message();
  EXPECT_EQ(r2->type, CmEventType::connect_request);
  EXPECT_EQ(f.fab.now() - t0, kAttempt) << "the dropped REQ comes back with its retransmission";
}

TEST(SimCm, NothingListeningRejectsWithReason8) {
  Fab f;
  auto a = Active::resolve(f, f.fab.address(0, 0, 9999));
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto ev = next_event(f.provider(1), *a->ch);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, CmEventType::rejected);
  EXPECT_EQ(ev->status, reject_reason::no_listener);
  EXPECT_EQ(ev->private_data, std::vector<uint8_t>(private_data_limit::rej, 0));
}

TEST(SimCm, DisconnectHandshakeThenTimewaitExit) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto p = conf::connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->active.id->disconnect());
  auto d0 = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(d0);
  EXPECT_EQ(d0->type, CmEventType::disconnected);
  EXPECT_EQ(d0->status, 0);
  d0->ack();
  ASSERT_TRUE(p->passive_id->disconnect());  // answers with DREP
  auto d1 = next_event(f.provider(1), *p->active.ch);
  ASSERT_TRUE(d1);
  EXPECT_EQ(d1->type, CmEventType::disconnected);
  EXPECT_EQ(d1->status, 0);
  const Nanos t1 = f.fab.now();
  auto tw = next_event(f.provider(1), *p->active.ch);
  ASSERT_TRUE(tw);
  EXPECT_EQ(tw->type, CmEventType::timewait_exit);
  EXPECT_EQ(f.fab.now() - t1, 2048ms);
  auto tw0 = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(tw0);
  EXPECT_EQ(tw0->type, CmEventType::timewait_exit);
}

TEST(SimCm, UnansweredDreqTimesOut) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto p = conf::connect_pair(f, *l);
  ASSERT_TRUE(p) << p.error().message();
  const Nanos t0 = f.fab.now();
  ASSERT_TRUE(p->active.id->disconnect());
  auto d = next_event(f.provider(1), *p->active.ch, 200s);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->type, CmEventType::disconnected);
  EXPECT_EQ(d->status, -ETIMEDOUT);
  EXPECT_EQ(f.fab.now() - t0, 16 * kAttempt);
  EXPECT_EQ(f.fab.stats().dreq_retransmits, 15u);
}

TEST(SimCm, PrivateDataLimitsOfEveryMessage) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  ConnParam cp;
  cp.private_data.assign(private_data_limit::req_tcp, 1);
  ASSERT_TRUE(a->id->connect(cp));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto pid = std::move(req->new_id);
  ConnParam ap;
  ap.private_data.assign(private_data_limit::rep + 1, 2);
  Status s = pid->accept(ap);
  EXPECT_EQ(s.error().err, EINVAL) << s.message();
  EXPECT_EQ(s.error().call, "rdma_accept");
  std::vector<uint8_t> rej(private_data_limit::rej + 1, 3);
  s = pid->reject(rej);
  EXPECT_EQ(s.error().err, EINVAL) << s.message();
  rej.pop_back();
  EXPECT_TRUE(pid->reject(rej));
  auto ev = next_event(f.provider(1), *a->ch);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->status, reject_reason::consumer);
  EXPECT_EQ(ev->private_data, rej);
}

TEST(SimCm, IbPortSpaceCarries92Bytes) {
  Fab f;
  Provider& pp = f.provider(0);
  auto lch = pp.create_channel();
  auto lid = pp.create_id(**lch, PortSpace::ib, nullptr);
  ASSERT_TRUE(lid);
  ASSERT_TRUE((*lid)->bind_addr(f.fab.address(0, 0, 5000)));
  ASSERT_TRUE((*lid)->listen(4));
  Provider& ap = f.provider(1);
  auto ach = ap.create_channel();
  auto aid = ap.create_id(**ach, PortSpace::ib, nullptr);
  ASSERT_TRUE((*aid)->resolve_addr(nullptr, f.fab.address(0, 0, 5000), 1000));
  ASSERT_EQ(next_event(ap, **ach)->type, CmEventType::addr_resolved);
  ASSERT_TRUE((*aid)->resolve_route(1000));
  ASSERT_EQ(next_event(ap, **ach)->type, CmEventType::route_resolved);
  ConnParam cp;
  cp.private_data.assign(private_data_limit::req_ib + 1, 9);
  EXPECT_EQ((*aid)->connect(cp).error().err, EINVAL);
  cp.private_data.pop_back();
  ASSERT_TRUE((*aid)->connect(cp));
  auto req = next_event(pp, **lch);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->private_data, cp.private_data);
}

TEST(SimCm, RepCarriesTheRequestsVendorWithTheAcceptedOptions) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a->id->get_remote_ece(), (Ece{0, 0})) << "nothing received yet";
  ASSERT_TRUE(a->id->set_local_ece({0x15b3, 0x3}));
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto pid = std::move(req->new_id);
  EXPECT_EQ(*pid->get_remote_ece(), (Ece{0x15b3, 0x3}));
  ASSERT_TRUE(pid->set_local_ece({0x1234, 0x1}));  // another vendor: the REP keeps the REQ's
  ASSERT_TRUE(pid->accept(ConnParam{}));
  req->ack();
  auto resp = next_event(f.provider(1), *a->ch);
  ASSERT_TRUE(resp);
  EXPECT_EQ(*a->id->get_remote_ece(), (Ece{0x15b3, 0x1}));
}

TEST(SimCm, InitQpAttrFollowsWhatTheCmKnows) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  auto aqp = AppQp::create(*a->id->device());
  ASSERT_TRUE(aqp);
  // Before rdma_connect there is no IB CM id: the kernel answers INIT attributes whatever was
  // asked, and the QP refuses RTR with them, naming what is missing.
  auto early = a->id->init_qp_attr(QpState::rtr);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->mask, qp_mask::state | qp_mask::pkey_index | qp_mask::port | qp_mask::access_flags);
  ASSERT_TRUE(aqp->to_state(*a->id, QpState::init));
  Status s = aqp->to_state(*a->id, QpState::rtr);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().detail.find("missing AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN"),
            std::string::npos)
      << s.message();
  ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  ASSERT_TRUE(a->id->connect(cp));
  // REQ sent, no REP yet: the CM does not know the peer.
  auto rtr = a->id->init_qp_attr(QpState::rtr);
  ASSERT_FALSE(rtr);
  EXPECT_EQ(rtr.error().err, EINVAL);
  EXPECT_FALSE(a->id->init_qp_attr(QpState::sqd));

  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto pid = std::move(req->new_id);
  auto pinit = pid->init_qp_attr(QpState::init);
  ASSERT_TRUE(pinit);
  EXPECT_EQ(pinit->attr.qp_access_flags, access::remote_write | access::remote_read | access::remote_atomic);
  auto prtr = pid->init_qp_attr(QpState::rtr);
  ASSERT_TRUE(prtr);
  EXPECT_EQ(prtr->mask, qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn |
                            qp_mask::rq_psn | qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer);
  EXPECT_EQ(prtr->attr.dest_qp_num, aqp->qp->qpn());
  EXPECT_EQ(prtr->attr.path_mtu, 5u) << "4096-byte ports on both sides";
  auto prts = pid->init_qp_attr(QpState::rts);
  ASSERT_TRUE(prts);
  EXPECT_EQ(prts->mask, qp_mask::state | qp_mask::sq_psn | qp_mask::timeout | qp_mask::retry_cnt |
                            qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic);
  EXPECT_EQ(prts->attr.timeout, 19) << "packet lifetime 18 + 1";
  ASSERT_TRUE(pid->accept(ConnParam{}));
  req->ack();
  ASSERT_TRUE(next_event(f.provider(1), *a->ch));
  // The PSNs cross: what one side receives with is what the other sends with.
  auto artr = a->id->init_qp_attr(QpState::rtr);
  auto arts = a->id->init_qp_attr(QpState::rts);
  ASSERT_TRUE(artr && arts);
  EXPECT_EQ(artr->attr.rq_psn, prts->attr.sq_psn);
  EXPECT_EQ(arts->attr.sq_psn, prtr->attr.rq_psn);
}

TEST(SimCm, MigrateRefusesWhileAnEventIsUnackedAndDestroyCountsIt) {
  Fab f;
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->id->connect(ConnParam{}));
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  auto other = f.provider(0).create_channel();
  ASSERT_TRUE(other);
  // The un-acked CONNECT_REQUEST counts against the listener, not the new id (as in librdmacm).
  EXPECT_TRUE(req->new_id->migrate(**other));
  Status s = l->id->migrate(**other);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::invalid_state);
  EXPECT_NE(s.error().detail.find("blocks"), std::string::npos) << s.message();
  EXPECT_EQ(f.fab.stats().events_unacked, 1u);
  auto pid = std::move(req->new_id);
  l->id.reset();  // with the CONNECT_REQUEST still un-acked: the real call would hang
  EXPECT_EQ(f.fab.stats().destroyed_with_unacked, 1u);
  EXPECT_EQ(f.fab.stats().events_unacked, 0u);
  req->ack();  // harmless now
}

TEST(SimCm, AddressErrors) {
  Fab f;
  Provider& p = f.provider(1);
  auto ch = p.create_channel();
  auto id = p.create_id(**ch, PortSpace::tcp, nullptr);
  ASSERT_TRUE(id);
  Status s = (*id)->resolve_addr(nullptr, *SockAddr::parse("192.168.1.1:7471"), 500);
  EXPECT_EQ(s.error().err, ENETUNREACH) << s.message();
  const Nanos t0 = f.fab.now();
  ASSERT_TRUE((*id)->resolve_addr(nullptr, f.fab.address(200), 500));  // no such node
  auto ev = next_event(p, **ch);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, CmEventType::addr_error);
  EXPECT_EQ(ev->status, -ETIMEDOUT);
  EXPECT_EQ(f.fab.now() - t0, 500ms);
  Status b = (*id)->bind_addr(f.fab.address(0));
  EXPECT_EQ(b.error().err, EINVAL) << "already bound by resolve_addr";
}

TEST(SimCm, StepCostsOccupyTheNodeCpu) {
  SimConfig cfg = Fab::zero_cfg();
  cfg.latency.create_qp = 1ms;
  cfg.latency.cm_message = 10us;
  cfg.latency.cpu_per_event = 100us;
  Fab f(cfg);
  auto l = Listener::create(f);
  ASSERT_TRUE(l);
  auto a = Active::resolve(f, l->addr);
  ASSERT_TRUE(a);
  const Nanos t0 = f.fab.now();
  auto aqp = AppQp::create(*a->id->device());  // 1 ms of node 1's CPU
  ASSERT_TRUE(aqp);
  ASSERT_TRUE(a->id->connect(ConnParam{}));     // so the REQ leaves at t0 + 1 ms
  auto req = next_event(f.provider(0), *l->ch);
  ASSERT_TRUE(req);
  EXPECT_EQ(f.fab.now() - t0, 1ms + 10us + 100us);
}

}  // namespace
}  // namespace wireup::prov::sim
