// The transport's C factory as the engine's QpFactory: its ibv_qp, wrapped without taking
// ownership, with the release callback armed until the QP ends up connected.
#include <cstring>

#include "capi/handles.h"

namespace wireup::capi {
namespace {

std::string who(const qp::QpRequest& r) {
  return "rank " + std::to_string(r.peer) + " lane " + std::to_string(r.lane);
}

}  // namespace

qp::QpFactory make_factory(wireup_t* w) {
  return [w](const qp::QpRequest& r) -> Result<std::unique_ptr<prov::Qp>> {
    auto* ctx = static_cast<ibv_context*>(r.device.native());
    const wireup_qp_request_t req{r.peer, r.lane, r.active ? 1 : 0, ctx};
    ibv_qp* qp = nullptr;
    if (int rc = w->create_qp(w->arg, &req, &qp); rc != 0)
      return Error::from_errno("QP factory", rc > 0 ? rc : EINVAL,
                               rc > 0 ? "the transport's factory failed"
                                      : "the transport's factory failed (with a negative value, not an errno)")
          .with_peer(who(r));
    if (qp == nullptr)
      return Error::make(ErrorCode::invalid_argument, "QP factory", "the transport's factory returned 0 but no QP")
          .with_peer(who(r));
    prov::rdma::ForeignQp::Release release;
    if (w->release_qp != nullptr)
      release = [w, req](ibv_qp* q) { w->release_qp(w->arg, &req, q); };
    if (qp->context != ctx) {
      if (release) release(qp);  // we will not use it: it is the transport's to destroy
      return Error::make(ErrorCode::invalid_argument, "QP factory",
                         "the QP was created on another ibv_context than the request's (" + r.device.info().name + ")")
          .with_peer(who(r))
          .with_qpn(qp->qp_num);
    }
    auto wrapped = prov::rdma::wrap_foreign_qp(*w->ctx->provider, qp, release);
    if (!wrapped) {
      if (release) release(qp);
      return Error(wrapped.error()).with_peer(who(r));
    }
    return std::unique_ptr<prov::Qp>(std::move(wrapped).value());
  };
}

void keep_new_results(wireup_t* w) {
  const auto& res = w->engine->results();
  for (; w->kept < res.size(); ++w->kept)
    if (auto* q = dynamic_cast<prov::rdma::ForeignQp*>(res[w->kept].qp)) q->keep();
}

}  // namespace wireup::capi
