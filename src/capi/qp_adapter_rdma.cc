// The rdma provider's adapter: the ibv_context and ibv_qp a transport uses are the library's.
#include "capi/qp_adapter.h"
#include "provider/rdma/foreign_qp.h"

namespace wireup::capi {
namespace {

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

  Result<QpView> view(ibv_qp* qp, prov::Device& dev) override {
    if (qp->context != context_of(dev))
      return Error::make(ErrorCode::invalid_argument, "QP factory",
                         "the QP was created on another ibv_context than the request's (" + dev.info().name + ")")
          .with_qpn(qp->qp_num);
    auto w = prov::rdma::wrap_foreign_qp(prov_, qp);
    if (!w) return w.error();
    QpView v;
    v.qp = w->get();
    v.holder = std::move(w).value();
    return v;
  }

 private:
  prov::rdma::RdmaProvider& prov_;
};

}  // namespace

std::unique_ptr<QpAdapter> rdma_qp_adapter(prov::rdma::RdmaProvider& p) { return std::make_unique<RdmaQpAdapter>(p); }

}  // namespace wireup::capi
