// The transport's QP while the engine drives it, on any provider: what the C API's factory
// gives the engine for each QP the transport's factory made. Every call goes to the adapter's
// view of it (QpAdapter::view, which never destroys the QP); this object adds the end of life.
//
// When the engine lets go of it, the transport's release callback says the QP is the
// transport's to destroy again -- unless the C API handed it over as a result (hand_over()):
// a connected QP the transport was given is never released, whatever happens to its
// connection afterwards. Whether a result was handed over is the engine's record too
// (Engine::hand_over), which it asks before taking a connection back; this flag is the C
// API's own, for the one decision the engine does not make: the release.
#pragma once

#include <functional>
#include <memory>

#include "provider/provider.h"

struct ibv_qp;

namespace wireup::capi {

class TransportQp final : public prov::Qp {
 public:
  using Release = std::function<void()>;

  // `view` is the adapter's view of the transport's QP; `handle` what the transport's factory
  // returned: the QP's identity to the transport, and native() here (on rdma the ibv_qp*
  // itself; on another provider whatever its adapter takes for one).
  TransportQp(std::unique_ptr<prov::Qp> view, ibv_qp* handle, Release release)
      : view_(std::move(view)), handle_(handle), release_(std::move(release)) {}
  ~TransportQp() override;  // release_() unless handed over; never destroys the QP itself
  TransportQp(const TransportQp&) = delete;
  TransportQp& operator=(const TransportQp&) = delete;

  // Every QP of a C API handle's engine is one of these: the engine's only factory there is
  // the C API's (make_factory).
  static TransportQp& of(prov::Qp& q) { return static_cast<TransportQp&>(q); }

  // The transport was given this QP as a result: the release callback never comes for it.
  // One way: a QP handed over is never taken back.
  void hand_over() { handed_over_ = true; }
  bool handed_over() const { return handed_over_; }

  uint32_t qpn() const override { return view_->qpn(); }
  prov::QpState state() const override { return view_->state(); }
  Status modify(const prov::QpAttr& attr, uint32_t mask) override { return view_->modify(attr, mask); }
  Result<prov::QpAttr> query(uint32_t mask) override { return view_->query(mask); }
  Result<prov::Ece> query_ece() override { return view_->query_ece(); }
  Status set_ece(const prov::Ece& ece) override { return view_->set_ece(ece); }
  Status post(const prov::SendWr& wr) override { return view_->post(wr); }
  Status post_recv(uint64_t wr_id, const prov::Sge& sge) override { return view_->post_recv(wr_id, sge); }
  bool has_srq() const override { return view_->has_srq(); }
  prov::Device& device() const override { return view_->device(); }
  void* native() const override { return handle_; }

 private:
  std::unique_ptr<prov::Qp> view_;
  ibv_qp* handle_;
  Release release_;
  bool handed_over_ = false;
};

}  // namespace wireup::capi
