// The library's connections set the SRQ bit of their REQ and REP from the QP the transport's
// factory made (conn_param.srq), and the sim carries it to the other side's CM event.
#include <gtest/gtest.h>

#include "cm/connection.h"
#include "provider/sim/fabric.h"
#include "tests/conformance/harness.h"

namespace wireup::prov::sim {
namespace {

using namespace std::chrono_literals;

class Fab final : public conf::TestFabric {
 public:
  Fab() {
    fab.add_node();
    fab.add_node();
  }
  std::string name() const override { return "sim"; }
  Provider& provider(int n) override { return fab.provider(static_cast<uint32_t>(n)); }
  SockAddr address(int n) override { return fab.address(static_cast<uint32_t>(n)); }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return false; }
  SimFabric fab;
};

class NullObserver final : public cm::ConnectionObserver {
 public:
  void on_connection_changed(cm::Connection&) override {}
  Status check_reply(const cm::Connection&, std::span<const uint8_t>) override { return Status::ok(); }
  cm::PrivateData reject_data(const cm::Connection&) override { return {}; }
};

// A transport's factory whose QPs take their receives from one SRQ (or from their own queue).
class Factory {
 public:
  explicit Factory(bool with_srq) : with_srq_(with_srq) {}
  qp::QpFactory hook() {
    return [this](const qp::QpRequest& r) -> Result<std::unique_ptr<Qp>> {
      if (!pd_) {
        auto pd = r.device.alloc_pd();
        if (!pd) return pd.error();
        pd_ = std::move(pd).value();
        auto cq = r.device.create_cq(16, false);
        if (!cq) return cq.error();
        cq_ = std::move(cq).value();
        if (with_srq_) {
          auto srq = pd_->create_srq(SrqInitAttr{});
          if (!srq) return srq.error();
          srq_ = std::move(srq).value();
        }
      }
      QpInitAttr init;
      init.send_cq = cq_.get();
      init.recv_cq = cq_.get();
      init.srq = srq_.get();
      return pd_->create_qp(init);
    };
  }

 private:
  bool with_srq_;
  std::unique_ptr<Pd> pd_;
  std::unique_ptr<Cq> cq_;
  std::unique_ptr<Srq> srq_;
};

cm::Profile profile() {
  cm::Profile p;
  p.resolve_addr_timeout_ms = 2000;
  p.resolve_route_timeout_ms = 2000;
  return p;
}

// The active side: a Connection whose factory QP has (or has not) an SRQ; the REQ's bit as
// the listener's CONNECT_REQUEST reports it.
uint8_t request_srq_bit(bool with_srq) {
  Fab f;
  auto l = conf::Listener::create(f);
  EXPECT_TRUE(l) << l.error().message();
  if (!l) return 0xff;
  Factory fac(with_srq);  // outlives the connection's QP
  const cm::Profile prof = profile();
  cm::Spec spec;
  spec.profile = &prof;
  spec.remote = l->addr;
  NullObserver obs;
  auto ch = f.provider(1).create_channel();
  EXPECT_TRUE(ch);
  auto c = cm::Connection::start(f.provider(1), **ch, spec, &obs);
  EXPECT_TRUE(c) << c.error().message();
  if (!c) return 0xff;
  EventChannel* chans[] = {ch->get()};
  for (int i = 0; i < 100 && (*c)->state() != cm::State::route_resolved; ++i) {
    EXPECT_TRUE(f.provider(1).wait(chans, 100ms));
    dispatch(**ch, 8);
  }
  EXPECT_EQ((*c)->state(), cm::State::route_resolved);
  EXPECT_TRUE((*c)->connect(fac.hook()));
  auto req = conf::expect_event(f.provider(0), *l->ch, CmEventType::connect_request);
  EXPECT_EQ(req.qp_num, (*c)->qp()->qpn());
  return req.srq;
}

// The passive side: a Connection accepts with a factory QP; the REP's bit as the active
// side's CONNECT_RESPONSE reports it.
uint8_t reply_srq_bit(bool with_srq) {
  Fab f;
  auto l = conf::Listener::create(f);
  EXPECT_TRUE(l) << l.error().message();
  if (!l) return 0xff;
  auto act = conf::Active::resolve(f, l->addr);
  EXPECT_TRUE(act) << act.error().message();
  if (!act) return 0xff;
  auto aqp = conf::AppQp::create(*act->id->device());
  EXPECT_TRUE(aqp);
  EXPECT_TRUE(aqp->to_state(*act->id, QpState::init));
  ConnParam cp;
  cp.qp_num = aqp->qp->qpn();
  EXPECT_TRUE(act->id->connect(cp));
  auto req = conf::next_event(f.provider(0), *l->ch);
  EXPECT_TRUE(req) << req.error().message();
  if (!req) return 0xff;
  EXPECT_EQ(req->srq, 0) << "the active QP has no SRQ";
  Factory fac(with_srq);
  const cm::Profile prof = profile();
  cm::Spec spec;
  spec.profile = &prof;
  NullObserver obs;
  auto c = cm::Connection::from_request(f.provider(0), *req, spec, &obs);
  EXPECT_TRUE(c->accept(fac.hook()));
  req->ack();
  auto resp = conf::expect_event(f.provider(1), *act->ch, CmEventType::connect_response);
  EXPECT_EQ(resp.qp_num, c->qp()->qpn());
  return resp.srq;
}

TEST(SimSrqBit, RequestCarriesTheQpsSrq) {
  EXPECT_EQ(request_srq_bit(true), 1);
  EXPECT_EQ(request_srq_bit(false), 0);
}

TEST(SimSrqBit, ReplyCarriesTheQpsSrq) {
  EXPECT_EQ(reply_srq_bit(true), 1);
  EXPECT_EQ(reply_srq_bit(false), 0);
}

}  // namespace
}  // namespace wireup::prov::sim
