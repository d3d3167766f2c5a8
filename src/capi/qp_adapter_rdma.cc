// The rdma provider's adapter: the ibv_context and ibv_qp a transport uses are the library's.
#include "capi/qp_adapter.h"
#include "provider/rdma/rdma.h"

namespace wireup::capi {
namespace {

prov::QpState from_ibv_state(ibv_qp_state s) {
  // enum ibv_qp_state and QpState share their order (types.h) up to IBV_QPS_UNKNOWN.
  return s <= IBV_QPS_ERR ? static_cast<prov::QpState>(s) : prov::QpState::unknown;
}

const char* type_name(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    default: return "non-RC";
  }
}

class RdmaQpAdapter final : public QpAdapter {
 public:
  explicit RdmaQpAdapter(prov::rdma::RdmaProvider& p) : prov_(p) {}

  ibv_context* context_of(prov::Device& dev) const override { return static_cast<ibv_context*>(dev.native()); }

  Result<prov::DeviceEvent> event_of(const ibv_async_event& e, prov::Device& dev) const override {
    auto ev = prov::rdma::device_event_of(e, dev.info().name);
    if (!ev) return ev.error();
    if (prov::scope_of(ev->type) == prov::DeviceEventScope::qp && e.element.qp->context != context_of(dev))
      return Error::make(ErrorCode::invalid_argument, "async event",
                         std::string(prov::to_string(ev->type)) + " names a QP of another ibv_context than " +
                             dev.info().name + "'s")
          .with_qpn(ev->qpn);
    return ev;
  }

  // The transport keeps its ibv_qp: the engine gets an RdmaQp that never destroys it.
  Result<std::unique_ptr<prov::Qp>> view(ibv_qp* qp, prov::Device& dev) override {
    auto bad = [&](std::string why) {
      return Error::make(ErrorCode::invalid_argument, "QP factory", std::move(why)).with_qpn(qp->qp_num);
    };
    if (qp->context != context_of(dev))
      return bad("the QP was created on another ibv_context than the request's (" + dev.info().name + ")");
    prov::rdma::RdmaDevice* rdev = prov_.device_for(qp->context);
    if (rdev == nullptr)
      return bad("the QP's ibv_context is not one of the provider's devices (create it on the ibv_context the "
                 "request names)");
    if (qp->qp_type != IBV_QPT_RC)
      return bad(std::string("the QP is ") + type_name(qp->qp_type) + "; the CM connects RC QPs only");
    if (qp->state != IBV_QPS_RESET)
      return bad(std::string("the QP is in state ") + prov::to_string(from_ibv_state(qp->state)) +
                 "; hand it over fresh from ibv_create_qp (RESET)");
    return std::unique_ptr<prov::Qp>(prov::rdma::RdmaQp::unowned(*rdev, qp));
  }

 private:
  prov::rdma::RdmaProvider& prov_;
};

}  // namespace

std::unique_ptr<QpAdapter> rdma_qp_adapter(prov::rdma::RdmaProvider& p) { return std::make_unique<RdmaQpAdapter>(p); }

}  // namespace wireup::capi
