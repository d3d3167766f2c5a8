// A QP that someone else created and owns (the transport, through the C API's factory),
// seen through the provider seam so the engine can drive it like its own.
//
// The wrapper never destroys the ibv_qp: the transport made it on its own PD and CQs and keeps
// using it after wireup. Telling the owner when the library is done with a QP is the C API's
// business (src/capi/transport_qp.h), the same for every provider.
#pragma once

#include <memory>

#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {

// The verbs calls are RdmaQp's; only the end of life differs: never ibv_destroy_qp.
class ForeignQp final : public RdmaQp {
 public:
  ForeignQp(RdmaDevice& dev, ibv_qp* qp) : RdmaQp(dev, qp, /*owned=*/false) {}
};

// Wraps `qp` after checking that it is usable by the CM: an RC QP in RESET on a device of
// `p`. The error names what is wrong (and the QPN). Ownership of the ibv_qp stays outside.
Result<std::unique_ptr<ForeignQp>> wrap_foreign_qp(RdmaProvider& p, ibv_qp* qp);

}  // namespace wireup::prov::rdma
