// A QP of the transport's factory as the engine holds it, on any provider: every call goes to
// the adapter's view of the transport's QP (qp_adapter.h); nothing here destroys it.
//
// When the engine lets go of it, the transport's release callback says the QP is the
// transport's to destroy again -- unless it was kept (prov::Qp::keep): the C API keeps every
// QP it hands over as a result, so a connected QP the transport was given is never released,
// whatever happens to its connection afterwards.
#pragma once

#include <functional>

#include "capi/qp_adapter.h"

namespace wireup::capi {

class TransportQp final : public prov::Qp {
 public:
  using Release = std::function<void()>;

  // `handle` is what the transport's factory returned: the QP's identity to the transport,
  // and native() here (on rdma the ibv_qp* itself; on another provider whatever its adapter
  // takes for one).
  TransportQp(QpView v, ibv_qp* handle, Release release)
      : v_(std::move(v)), handle_(handle), release_(std::move(release)) {}
  ~TransportQp() override;  // release_() unless kept(); never destroys the QP itself
  TransportQp(const TransportQp&) = delete;
  TransportQp& operator=(const TransportQp&) = delete;

  uint32_t qpn() const override { return v_.qp->qpn(); }
  prov::QpState state() const override { return v_.qp->state(); }
  Status modify(const prov::QpAttr& attr, uint32_t mask) override { return v_.qp->modify(attr, mask); }
  Result<prov::QpAttr> query(uint32_t mask) override { return v_.qp->query(mask); }
  Result<prov::Ece> query_ece() override { return v_.qp->query_ece(); }
  Result<prov::Ece> set_ece(const prov::Ece& ece) override { return v_.qp->set_ece(ece); }
  Status post(const prov::SendWr& wr) override { return v_.qp->post(wr); }
  Status post_recv(uint64_t wr_id, const prov::Sge& sge) override { return v_.qp->post_recv(wr_id, sge); }
  bool has_srq() const override { return v_.qp->has_srq(); }
  prov::Device& device() const override { return v_.qp->device(); }
  void* native() const override { return handle_; }

 private:
  QpView v_;
  ibv_qp* handle_;
  Release release_;
};

}  // namespace wireup::capi
