// A QP that forwards to the one the factory made and counts the live ones: tests that check
// every QP made was handed back (destroyed) once the engine let go of it.
#pragma once

#include <cstdint>
#include <memory>

#include "provider/provider.h"
#include "qp/factory.h"

namespace wireup::etest {

class CountedQp final : public prov::Qp {
 public:
  CountedQp(std::unique_ptr<prov::Qp> q, int64_t& live) : q_(std::move(q)), live_(live) { ++live_; }
  ~CountedQp() override { --live_; }
  uint32_t qpn() const override { return q_->qpn(); }
  prov::QpState state() const override { return q_->state(); }
  Status modify(const prov::QpAttr& a, uint32_t mask) override { return q_->modify(a, mask); }
  Result<prov::QpAttr> query(uint32_t mask) override { return q_->query(mask); }
  Result<prov::Ece> query_ece() override { return q_->query_ece(); }
  Result<prov::Ece> set_ece(const prov::Ece& e) override { return q_->set_ece(e); }
  Status post(const prov::SendWr& wr) override { return q_->post(wr); }
  Status post_recv(uint64_t id, const prov::Sge& s) override { return q_->post_recv(id, s); }
  bool has_srq() const override { return q_->has_srq(); }
  prov::Device& device() const override { return q_->device(); }
  void* native() const override { return q_->native(); }

 private:
  std::unique_ptr<prov::Qp> q_;
  int64_t& live_;
};

// Wraps a factory so that every QP it makes is counted in `live` (and `made`).
inline qp::QpFactory counted(qp::QpFactory inner, int64_t& live, uint64_t& made) {
  return [inner = std::move(inner), &live, &made](const qp::QpRequest& r) -> Result<std::unique_ptr<prov::Qp>> {
    auto q = inner(r);
    if (!q) return q.error();
    ++made;
    return std::unique_ptr<prov::Qp>(new CountedQp(std::move(q).value(), live));
  };
}

}  // namespace wireup::etest
