// The fault provider's device, PD and QP (fault/wrap.h).
#include "fault/wrap.h"

namespace wireup::fault {

// --- FaultDevice ------------------------------------------------------------------------------

FaultDevice::~FaultDevice() {
  if (claimed_inner_) inner_.release_async(prov::AsyncOwner::library);
}

Status FaultDevice::native_take_async() {
  if (claimed_inner_) return Status::ok();
  if (Status s = inner_.claim_async(prov::AsyncOwner::library); !s) return s;
  claimed_inner_ = true;
  return Status::ok();
}

Result<std::unique_ptr<prov::Pd>> FaultDevice::alloc_pd() {
  if (prov_.plan().hit(Kind::alloc_pd, WIREUP_FAULT_SITE)) return Plan::error(Kind::alloc_pd, info().name);
  auto pd = inner_.alloc_pd();
  if (!pd) return pd.error();
  return std::unique_ptr<prov::Pd>(new FaultPd(prov_, *this, std::move(pd).value()));
}

Result<std::unique_ptr<prov::Cq>> FaultDevice::create_cq(int cqe, bool with_comp_channel) {
  if (prov_.plan().hit(Kind::create_cq, WIREUP_FAULT_SITE)) return Plan::error(Kind::create_cq, info().name);
  return inner_.create_cq(cqe, with_comp_channel);
}

// --- FaultPd ----------------------------------------------------------------------------------

prov::Device& FaultPd::device() const { return dev_; }

Result<std::unique_ptr<prov::Qp>> FaultPd::create_qp(const prov::QpInitAttr& attr) {
  if (prov_.plan().hit(Kind::create_qp, WIREUP_FAULT_SITE)) return Plan::error(Kind::create_qp, dev_.info().name);
  auto qp = inner_->create_qp(attr);
  if (!qp) return qp.error();
  return std::unique_ptr<prov::Qp>(new FaultQp(prov_, dev_, std::move(qp).value()));
}

Result<std::unique_ptr<prov::Mr>> FaultPd::reg_mr(void* addr, size_t len, uint32_t access_flags) {
  if (prov_.plan().hit(Kind::reg_mr, WIREUP_FAULT_SITE)) return Plan::error(Kind::reg_mr, dev_.info().name);
  return inner_->reg_mr(addr, len, access_flags);
}

Result<std::unique_ptr<prov::Srq>> FaultPd::create_srq(const prov::SrqInitAttr& attr) {
  if (prov_.plan().hit(Kind::create_srq, WIREUP_FAULT_SITE)) return Plan::error(Kind::create_srq, dev_.info().name);
  return inner_->create_srq(attr);
}

// --- FaultQp ----------------------------------------------------------------------------------

prov::Device& FaultQp::device() const { return dev_; }

Status FaultQp::modify(const prov::QpAttr& attr, uint32_t mask) {
  if (prov_.plan().hit(Kind::modify_qp, WIREUP_FAULT_SITE)) return Plan::error(Kind::modify_qp).with_qpn(qpn());
  return inner_->modify(attr, mask);
}

Status FaultQp::post(const prov::SendWr& wr) {
  if (prov_.plan().hit(Kind::post_send, WIREUP_FAULT_SITE)) return Plan::error(Kind::post_send).with_qpn(qpn());
  return inner_->post(wr);
}

Status FaultQp::post_recv(uint64_t wr_id, const prov::Sge& sge) {
  if (prov_.plan().hit(Kind::post_recv, WIREUP_FAULT_SITE)) return Plan::error(Kind::post_recv).with_qpn(qpn());
  return inner_->post_recv(wr_id, sge);
}

}  // namespace wireup::fault
