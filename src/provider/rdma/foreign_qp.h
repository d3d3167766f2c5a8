// A QP that someone else created and owns (the transport, through the C API's factory),
// seen through the provider seam so the engine can drive it like its own.
//
// The wrapper never destroys the ibv_qp: the transport made it on its own PD and CQs and keeps
// using it after wireup. When the engine drops a wrapper whose QP did not end up connected
// (a failed or superseded attempt), the optional release hook tells the owner it may destroy
// the QP; keep() disarms the hook for a QP that stays in use.
#pragma once

#include <functional>
#include <memory>

#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {

// The verbs calls are RdmaQp's; only the end of life differs.
class ForeignQp final : public RdmaQp {
 public:
  using Release = std::function<void(ibv_qp*)>;

  ForeignQp(RdmaDevice& dev, ibv_qp* qp, Release release)
      : RdmaQp(dev, qp, /*owned=*/false), release_(std::move(release)) {}
  ~ForeignQp() override;  // calls the release hook if armed; never ibv_destroy_qp

  // The QP stays with its owner in use: no release call when this wrapper goes.
  void keep() { release_ = nullptr; }

 private:
  Release release_;
};

// Wraps `qp` after checking that it is usable by the CM: an RC QP in RESET on a device of
// `p`. The error names what is wrong (and the QPN). Ownership of the ibv_qp stays outside.
Result<std::unique_ptr<ForeignQp>> wrap_foreign_qp(RdmaProvider& p, ibv_qp* qp, ForeignQp::Release release = {});

}  // namespace wireup::prov::rdma
