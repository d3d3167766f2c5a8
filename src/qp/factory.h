// The QP factory hook: the transport creates the QP for each (peer, lane) on the PD and CQs
// it chose; the library only drives it through the CM. A default factory is provided for
// transports (and tools) that just want RC QPs with given capabilities.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "common/status.h"
#include "provider/provider.h"

namespace wireup::qp {

struct QpRequest {
  prov::Device& device;  // the device the CM id resolved to: the QP must live on it
  uint32_t peer = 0;     // peer rank
  uint32_t lane = 0;
  bool active = false;   // this side initiates the connection
};

using QpFactory = std::function<Result<std::unique_ptr<prov::Qp>>(const QpRequest&)>;

// One PD and one CQ per device, shared by every QP it makes. It must outlive its QPs.
class DefaultQpFactory {
 public:
  DefaultQpFactory(prov::QpCaps caps, int cq_entries) : caps_(caps), cq_entries_(cq_entries) {}
  DefaultQpFactory(const DefaultQpFactory&) = delete;
  DefaultQpFactory& operator=(const DefaultQpFactory&) = delete;

  Result<std::unique_ptr<prov::Qp>> create(const QpRequest& req);
  QpFactory hook() {
    return [this](const QpRequest& r) { return create(r); };
  }
  // The PD / CQ used on `dev` (nullptr before the first QP on it).
  prov::Pd* pd(prov::Device& dev) const;
  prov::Cq* cq(prov::Device& dev) const;

 private:
  struct PerDevice {
    std::unique_ptr<prov::Pd> pd;
    std::unique_ptr<prov::Cq> cq;
  };
  Result<PerDevice*> resources(prov::Device& dev);

  prov::QpCaps caps_;
  int cq_entries_;
  std::map<prov::Device*, PerDevice> per_device_;
};

}  // namespace wireup::qp
