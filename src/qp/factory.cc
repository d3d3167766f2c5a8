#include "qp/factory.h"

namespace wireup::qp {

Result<DefaultQpFactory::PerDevice*> DefaultQpFactory::resources(prov::Device& dev) {
  auto it = per_device_.find(&dev);
  if (it != per_device_.end()) return &it->second;
  PerDevice r;
  auto pd = dev.alloc_pd();
  if (!pd) return pd.error();
  r.pd = std::move(pd).value();
  auto cq = dev.create_cq(cq_entries_, false);
  if (!cq) return cq.error();
  r.cq = std::move(cq).value();
  return &per_device_.emplace(&dev, std::move(r)).first->second;
}

Result<std::unique_ptr<prov::Qp>> DefaultQpFactory::create(const QpRequest& req) {
  auto r = resources(req.device);
  if (!r) return r.error();
  prov::QpInitAttr init;
  init.type = prov::QpType::rc;
  init.send_cq = (*r)->cq.get();
  init.recv_cq = (*r)->cq.get();
  init.caps = caps_;
  auto qp = (*r)->pd->create_qp(init);
  if (!qp) return Error(qp.error()).with_peer("rank " + std::to_string(req.peer));
  return qp;
}

prov::Pd* DefaultQpFactory::pd(prov::Device& dev) const {
  auto it = per_device_.find(&dev);
  return it == per_device_.end() ? nullptr : it->second.pd.get();
}

prov::Cq* DefaultQpFactory::cq(prov::Device& dev) const {
  auto it = per_device_.find(&dev);
  return it == per_device_.end() ? nullptr : it->second.cq.get();
}

}  // namespace wireup::qp
