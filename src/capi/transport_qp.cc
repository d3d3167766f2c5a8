#include "capi/transport_qp.h"

namespace wireup::capi {

TransportQp::~TransportQp() {
  // The view goes first (it only looks at the QP); then the transport may destroy the QP.
  v_ = QpView{};
  if (release_ && !kept()) release_();
}

}  // namespace wireup::capi
