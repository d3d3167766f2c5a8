// The non-owning QP wrapper (RdmaQp without ibv_destroy_qp): the checks on what it wraps.
#include "provider/rdma/foreign_qp.h"

#include <cstring>


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

Result<std::unique_ptr<ForeignQp>> wrap_foreign_qp(RdmaProvider& p, ibv_qp* qp) {
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
  return std::make_unique<ForeignQp>(*dev, qp);
}

}  // namespace wireup::prov::rdma
