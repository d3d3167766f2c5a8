// What the C API's `struct ibv_context*` and `struct ibv_qp*` are on a provider: the device a
// factory request names, and a view of the QP the transport's factory returned that the
// engine can drive (never its owner). The rdma provider's is the real one (libwireup.a); tests
// give the C API another provider with its own adapter (src/testsupport/capi_seam.h).
#pragma once

#include <memory>

#include "common/status.h"
#include "provider/provider.h"

struct ibv_async_event;
struct ibv_context;
struct ibv_qp;

namespace wireup::prov::rdma {
class RdmaProvider;
}

namespace wireup::capi {

class QpAdapter {
 public:
  virtual ~QpAdapter() = default;
  // What wireup_qp_request_t.context (and wireup_context_ibv_context) says for `dev`.
  virtual ibv_context* context_of(prov::Device& dev) const = 0;
  // Checks that the factory's `qp` is usable for a connection on `dev` (an RC QP in RESET on
  // that device) and gives the engine's view of it, which never destroys the QP (the
  // transport does, after its release callback or once it was handed over); the error names
  // what is wrong.
  virtual Result<std::unique_ptr<prov::Qp>> view(ibv_qp* qp, prov::Device& dev) = 0;
  // The seam's copy of an async event the transport read on `dev` (wireup_context_async_event):
  // its QP's number, port, or CQ/SRQ/WQ handle; the error names what is wrong with it.
  virtual Result<prov::DeviceEvent> event_of(const ibv_async_event& e, prov::Device& dev) const = 0;
};

// libibverbs' own objects: ibv_context of an RdmaDevice, an ibv_qp seen as RdmaQp::unowned.
std::unique_ptr<QpAdapter> rdma_qp_adapter(prov::rdma::RdmaProvider& p);

}  // namespace wireup::capi
