#include "tests/conformance/harness.h"

namespace wireup::conf {

using prov::CmEventType;
using prov::QpState;

namespace {
Error unexpected(const char* what, const prov::CmEvent& ev) {
  return Error::make(ErrorCode::protocol_error, what, "unexpected " + ev.describe());
}
}  // namespace

Result<Pair> connect_pair(TestFabric& f, Listener& l, const PairOptions& o) {
  prov::Provider& pp = f.provider(0);
  prov::Provider& ap = f.provider(1);
  Pair pair;
  auto act = Active::resolve(f, l.addr);
  if (!act) return act.error();
  pair.active = std::move(act).value();
  prov::CmId& aid = *pair.active.id;
  if (aid.device() == nullptr)
    return Error::make(ErrorCode::no_device, "connect_pair", "resolved id has no device");
  auto aqp = AppQp::create(*aid.device(), o.active_srq);
  if (!aqp) return aqp.error();
  pair.active_qp = std::move(aqp).value();
  WIREUP_TRY(pair.active_qp.to_state(aid, QpState::init));
  if (o.exchange_messages) WIREUP_TRY(pair.active_qp.post_recv());

  prov::ConnParam cp;
  cp.qp_num = pair.active_qp.qp->qpn();
  cp.srq = pair.active_qp.qp->has_srq() ? 1 : 0;
  cp.responder_resources = o.responder_resources;
  cp.initiator_depth = o.initiator_depth;
  cp.private_data = o.req_private_data;
  WIREUP_TRY(aid.connect(cp));

  auto req = next_event(pp, *l.ch);
  if (!req) return req.error();
  if (req->type != CmEventType::connect_request) return unexpected("CONNECT_REQUEST", *req);
  if (req->qp_num != cp.qp_num)
    return Error::make(ErrorCode::protocol_error, "CONNECT_REQUEST",
                       "qp_num " + std::to_string(req->qp_num) + " != sent " + std::to_string(cp.qp_num));
  pair.req_srq = req->srq;
  pair.passive_id = std::move(req->new_id);
  prov::CmId& pid = *pair.passive_id;
  auto pqp = AppQp::create(*pid.device(), o.passive_srq);
  if (!pqp) return pqp.error();
  pair.passive_qp = std::move(pqp).value();
  WIREUP_TRY(pair.passive_qp.to_state(pid, QpState::init));
  if (o.exchange_messages) WIREUP_TRY(pair.passive_qp.post_recv());
  if (o.passive_max_dest_rd_atomic >= 0) {
    auto rtr = pid.init_qp_attr(QpState::rtr);
    if (!rtr) return rtr.error();
    rtr->attr.max_dest_rd_atomic = static_cast<uint8_t>(o.passive_max_dest_rd_atomic);
    WIREUP_TRY(pair.passive_qp.qp->modify(rtr->attr, rtr->mask));
  } else {
    WIREUP_TRY(pair.passive_qp.to_state(pid, QpState::rtr));
  }
  WIREUP_TRY(pair.passive_qp.to_state(pid, QpState::rts));
  prov::ConnParam ap_param;
  ap_param.qp_num = pair.passive_qp.qp->qpn();
  ap_param.srq = pair.passive_qp.qp->has_srq() ? 1 : 0;
  ap_param.responder_resources = o.responder_resources;
  ap_param.initiator_depth = o.initiator_depth;
  ap_param.private_data = o.rep_private_data;
  WIREUP_TRY(pid.accept(ap_param));
  req->ack();

  auto resp = next_event(ap, *pair.active.ch);
  if (!resp) return resp.error();
  if (resp->type != CmEventType::connect_response) return unexpected("CONNECT_RESPONSE", *resp);
  if (resp->qp_num != ap_param.qp_num)
    return Error::make(ErrorCode::protocol_error, "CONNECT_RESPONSE", "qp_num mismatch");
  pair.rep_srq = resp->srq;
  if (o.redo_init) WIREUP_TRY(pair.active_qp.to_state(aid, QpState::init));
  WIREUP_TRY(pair.active_qp.to_state(aid, QpState::rtr));
  WIREUP_TRY(pair.active_qp.to_state(aid, QpState::rts));
  WIREUP_TRY(aid.establish());
  resp->ack();

  auto est = next_event(pp, *l.ch);
  if (!est) return est.error();
  if (est->type != CmEventType::established || est->id != &pid) return unexpected("ESTABLISHED", *est);
  est->ack();

  if (o.exchange_messages && f.has_data_path()) {
    // Each SEND's own completion is taken too: the CQs are left empty for the caller.
    WIREUP_TRY(pair.active_qp.send("ping"));
    if (auto s = pair.active_qp.wait_completion(prov::wc_opcode_send); !s) return s.error();
    auto got = pair.passive_qp.wait_completion(prov::wc_opcode_recv);
    if (!got) return got.error();
    if (*got != "ping") return Error::make(ErrorCode::protocol_error, "RECV", "payload '" + *got + "'");
    WIREUP_TRY(pair.passive_qp.send("pong"));
    if (auto s = pair.passive_qp.wait_completion(prov::wc_opcode_send); !s) return s.error();
    auto back = pair.active_qp.wait_completion(prov::wc_opcode_recv);
    if (!back) return back.error();
    if (*back != "pong") return Error::make(ErrorCode::protocol_error, "RECV", "payload '" + *back + "'");
  }
  return pair;
}

}  // namespace wireup::conf

namespace wireup::conf {

Result<Requested> Requested::send(TestFabric& f, const prov::SockAddr& dst, std::optional<prov::Ece> ece,
                                  std::vector<uint8_t> private_data) {
  Requested r;
  auto a = Active::resolve(f, dst);
  if (!a) return a.error();
  r.active = std::move(a).value();
  auto qp = AppQp::create(*r.active.id->device());
  if (!qp) return qp.error();
  r.qp = std::move(qp).value();
  WIREUP_TRY(r.qp.to_state(*r.active.id, prov::QpState::init));
  if (ece) WIREUP_TRY(r.active.id->set_local_ece(*ece));
  prov::ConnParam cp;
  cp.qp_num = r.qp.qp->qpn();
  cp.private_data = std::move(private_data);
  WIREUP_TRY(r.active.id->connect(cp));
  return r;
}

Result<Incoming> Incoming::take(TestFabric& f, Listener& l) {
  auto ev = next_event(f.provider(0), *l.ch);
  if (!ev) return ev.error();
  if (ev->type != prov::CmEventType::connect_request)
    return Error::make(ErrorCode::protocol_error, "CONNECT_REQUEST", "unexpected " + ev->describe());
  Incoming in;
  in.id = std::move(ev->new_id);
  in.req = std::move(ev).value();
  if (!in.id) return Error::make(ErrorCode::protocol_error, "CONNECT_REQUEST", "no new id");
  return in;
}

Status Incoming::ready() {
  auto qp_r = AppQp::create(*id->device());
  if (!qp_r) return qp_r.error();
  qp = std::move(qp_r).value();
  for (auto s : {prov::QpState::init, prov::QpState::rtr, prov::QpState::rts}) WIREUP_TRY(qp.to_state(*id, s));
  return Status::ok();
}

Status Incoming::accept(std::vector<uint8_t> private_data) {
  prov::ConnParam ap;
  ap.qp_num = qp.qp->qpn();
  ap.private_data = std::move(private_data);
  WIREUP_TRY(id->accept(ap));
  req.ack();
  return Status::ok();
}

}  // namespace wireup::conf
