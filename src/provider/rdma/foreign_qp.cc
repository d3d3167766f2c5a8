// The non-owning QP wrapper: the same verbs calls as RdmaQp, minus ibv_destroy_qp.
#include "provider/rdma/foreign_qp.h"

#include <cstring>

#include "common/log.h"
#include "provider/rdma/convert.h"

namespace wireup::prov::rdma {
namespace {

QpState from_ibv_state(ibv_qp_state s) {
  // enum ibv_qp_state and QpState share their order (types.h) up to IBV_QPS_UNKNOWN.
  return s <= IBV_QPS_ERR ? static_cast<QpState>(s) : QpState::unknown;
}

const char* type_name(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    default: return "non-RC";
  }
}

}  // namespace

ForeignQp::ForeignQp(RdmaDevice& dev, ibv_qp* qp, Release release)
    : dev_(dev), qp_(qp), state_(from_ibv_state(qp->state)), release_(std::move(release)) {}

ForeignQp::~ForeignQp() {
  if (release_) release_(qp_);
}

Status ForeignQp::modify(const QpAttr& attr, uint32_t mask) {
  ibv_qp_attr a = to_ibv(attr);
  if (int rc = ibv_modify_qp(qp_, &a, static_cast<int>(mask)); rc != 0)
    return Error::from_errno("ibv_modify_qp", rc,
                             std::string("to ") + to_string(attr.qp_state) + " with " + qp_mask::names(mask) +
                                 " (transport-owned QP)")
        .with_qpn(qpn());
  if (mask & qp_mask::state) state_ = attr.qp_state;
  return Status::ok();
}

Result<QpAttr> ForeignQp::query(uint32_t mask) {
  ibv_qp_attr a;
  ibv_qp_init_attr init;
  std::memset(&a, 0, sizeof a);
  if (int rc = ibv_query_qp(qp_, &a, static_cast<int>(mask), &init); rc != 0)
    return Error::from_errno("ibv_query_qp", rc).with_qpn(qpn());
  return from_ibv(a);
}

Result<Ece> ForeignQp::query_ece() {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  // An errno value comes back (EOPNOTSUPP on devices without ECE, e.g. rxe).
  if (int rc = ibv_query_ece(qp_, &e); rc != 0)
    return Error::from_errno("ibv_query_ece", rc, "device " + dev_.info().name).with_qpn(qpn());
  return Ece{e.vendor_id, e.options};
}

Status ForeignQp::set_ece(const Ece& ece) {
  ibv_ece e;
  std::memset(&e, 0, sizeof e);
  e.vendor_id = ece.vendor_id;
  e.options = ece.options;
  if (int rc = ibv_set_ece(qp_, &e); rc != 0)
    return Error::from_errno("ibv_set_ece", rc, "device " + dev_.info().name).with_qpn(qpn());
  return Status::ok();
}

Status ForeignQp::post_send(uint64_t wr_id, const Sge& sge, bool signaled) {
  ibv_sge s{sge.addr, sge.length, sge.lkey};
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) return Error::from_errno("ibv_post_send", rc).with_qpn(qpn());
  return Status::ok();
}

Status ForeignQp::post_recv(uint64_t wr_id, const Sge& sge) {
  ibv_sge s{sge.addr, sge.length, sge.lkey};
  ibv_recv_wr wr;
  std::memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) return Error::from_errno("ibv_post_recv", rc).with_qpn(qpn());
  return Status::ok();
}

Result<std::unique_ptr<ForeignQp>> wrap_foreign_qp(RdmaProvider& p, ibv_qp* qp, ForeignQp::Release release) {
  if (qp == nullptr) return Error::make(ErrorCode::invalid_argument, "wrap_foreign_qp", "the QP is NULL");
  auto bad = [&](std::string why) {
    return Error::make(ErrorCode::invalid_argument, "wrap_foreign_qp", std::move(why)).with_qpn(qp->qp_num);
  };
  RdmaDevice* dev = p.device_for(qp->context);
  if (dev == nullptr)
    return bad("the QP's ibv_context is not one of the provider's devices (create it on the ibv_context the "
               "request names)");
  if (qp->qp_type != IBV_QPT_RC)
    return bad(std::string("the QP is ") + type_name(qp->qp_type) + "; the CM connects RC QPs only");
  if (qp->state != IBV_QPS_RESET)
    return bad(std::string("the QP is in state ") + to_string(from_ibv_state(qp->state)) +
               "; hand it over fresh from ibv_create_qp (RESET)");
  return std::make_unique<ForeignQp>(*dev, qp, std::move(release));
}

}  // namespace wireup::prov::rdma
