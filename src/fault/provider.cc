// The fault provider itself (fault/provider.h): the wrappers' registry and the calls of the
// provider seam.
#include "common/log.h"
#include "fault/wrap.h"

namespace wireup::fault {

FaultProvider::FaultProvider(prov::Provider& inner, std::unique_ptr<prov::Provider> owned,
                             std::shared_ptr<Plan> plan)
    : owned_(std::move(owned)), inner_(inner), plan_(std::move(plan)),
      name_("fault(" + std::string(inner.name()) + ")") {}

FaultProvider::~FaultProvider() {
  if (!ids_.empty())
    WIREUP_LOG(error, "fault provider destroyed with %zu CM id(s) still alive", ids_.size());
}

FaultDevice* FaultProvider::device_of(prov::Device* inner) {
  if (inner == nullptr) return nullptr;
  auto& slot = devices_[inner];
  if (!slot) slot = std::make_unique<FaultDevice>(*this, *inner);
  return slot.get();
}

FaultCmId* FaultProvider::id_of(const prov::CmId* inner) const {
  if (inner == nullptr) return nullptr;
  auto it = ids_.find(inner);
  return it == ids_.end() ? nullptr : it->second;
}

Result<std::vector<prov::Device*>> FaultProvider::devices() {
  auto devs = inner_.devices();
  if (!devs) return devs.error();
  std::vector<prov::Device*> out;
  for (prov::Device* d : *devs) out.push_back(device_of(d));
  return out;
}

Result<std::unique_ptr<prov::EventChannel>> FaultProvider::create_channel() {
  if (plan_->hit(Kind::create_channel, WIREUP_FAULT_SITE)) return Plan::error(Kind::create_channel);
  auto ch = inner_.create_channel();
  if (!ch) return ch.error();
  return std::unique_ptr<prov::EventChannel>(new FaultChannel(*this, std::move(ch).value()));
}

Result<std::unique_ptr<prov::CmId>> FaultProvider::create_id(prov::EventChannel& ch, prov::PortSpace ps,
                                                              prov::Route route) {
  auto* fch = dynamic_cast<FaultChannel*>(&ch);
  if (fch == nullptr)
    return Error::make(ErrorCode::invalid_argument, "rdma_create_id",
                       "the channel is not one of the fault provider's");
  if (plan_->hit(Kind::create_id, WIREUP_FAULT_SITE)) return Plan::error(Kind::create_id);
  auto id = inner_.create_id(fch->inner(), ps, route);
  if (!id) return id.error();
  return std::unique_ptr<prov::CmId>(new FaultCmId(*this, std::move(id).value(), *fch, route));
}

Status FaultProvider::wait(std::span<prov::EventChannel* const> channels, std::span<prov::Device* const> devices,
                           Nanos timeout) {
  std::vector<prov::EventChannel*> in_ch;
  std::vector<prov::Device*> in_dev;
  for (prov::EventChannel* c : channels) {
    auto* f = dynamic_cast<FaultChannel*>(c);
    if (f != nullptr && f->holds_event()) return Status::ok();  // an event is ready now
    in_ch.push_back(f != nullptr ? &f->inner() : c);
  }
  for (prov::Device* d : devices) {
    auto* f = dynamic_cast<FaultDevice*>(d);
    if (f != nullptr && f->posted_pending() > 0) return Status::ok();  // the transport's inbox
    in_dev.push_back(f != nullptr ? &f->inner() : d);
  }
  return inner_.wait(in_ch, in_dev, timeout);
}

std::unique_ptr<prov::Provider> wrap(prov::Provider& inner, std::shared_ptr<Plan> plan) {
  return std::make_unique<FaultProvider>(inner, nullptr, std::move(plan));
}

std::unique_ptr<prov::Provider> wrap(std::unique_ptr<prov::Provider> inner, std::shared_ptr<Plan> plan) {
  prov::Provider& ref = *inner;
  return std::make_unique<FaultProvider>(ref, std::move(inner), std::move(plan));
}

}  // namespace wireup::fault
