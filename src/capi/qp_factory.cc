// The transport's C factory as the engine's QpFactory: its QP, seen through the context's
// adapter without taking ownership, with the release callback armed until it is handed over.
#include <cstring>

#include "capi/handles.h"
#include "capi/transport_qp.h"

namespace wireup::capi {
namespace {

std::string who(const qp::QpRequest& r) {
  return "rank " + std::to_string(r.peer) + " lane " + std::to_string(r.lane);
}

}  // namespace

qp::QpFactory make_factory(wireup_t* w) {
  return [w](const qp::QpRequest& r) -> Result<std::unique_ptr<prov::Qp>> {
    QpAdapter& adapter = *w->ctx->qps;
    const wireup_qp_request_t req{sizeof(wireup_qp_request_t), r.peer, r.lane, r.active ? 1 : 0,
                                  adapter.context_of(r.device), w->ctx->rail_of(&r.device)};
    ibv_qp* qp = nullptr;
    if (int rc = w->create_qp(w->qp_arg, &req, &qp); rc != 0)
      return Error::from_errno("QP factory", rc > 0 ? rc : EINVAL,
                               rc > 0 ? "the transport's factory failed"
                                      : "the transport's factory failed (with a negative value, not an errno)")
          .with_peer(who(r));
    if (qp == nullptr)
      return Error::make(ErrorCode::invalid_argument, "QP factory", "the transport's factory returned 0 but no QP")
          .with_peer(who(r));
    TransportQp::Release release;
    if (w->release_qp != nullptr)
      release = [w, req, qp] { w->release_qp(w->qp_arg, &req, qp); };
    auto view = adapter.view(qp, r.device);
    if (!view) {
      if (release) release();  // we will not use it: it is the transport's to destroy
      return Error(view.error()).with_peer(who(r));
    }
    return std::unique_ptr<prov::Qp>(std::make_unique<TransportQp>(std::move(view).value(), qp, std::move(release)));
  };
}

void hand_over_new_results(wireup_t* w) {
  for (const LaneEvent& e : w->lanes_pending)
    if (e.kind == LaneEvent::Kind::ready) (void)w->handed.take(*w->engine, e.index);
}

}  // namespace wireup::capi
