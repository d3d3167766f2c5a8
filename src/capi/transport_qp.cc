#include "capi/transport_qp.h"

namespace wireup::capi {

TransportQp::~TransportQp() {
  // The view goes first (it only looks at the QP); then the transport may destroy the QP.
  view_.reset();
  if (release_ && !handed_over_) release_();
}

}  // namespace wireup::capi
