// The Provider view of one simulated node.
#pragma once

#include "provider/sim/core.h"

namespace wireup::prov::sim {

class SimProvider final : public Provider {
 public:
  SimProvider(Core& core, uint32_t node) : core_(core), node_(node) {}
  std::string_view name() const override { return "sim"; }
  Result<std::vector<Device*>> devices() override;
  Result<std::unique_ptr<EventChannel>> create_channel() override;
  Result<std::unique_ptr<CmId>> create_id(EventChannel& ch, PortSpace ps, Route route) override;
  // Advances virtual time, processing fabric events in order, until one of `channels` has an
  // event or `timeout` of virtual time has passed. Never sleeps.
  using Provider::wait;
  Status wait(std::span<EventChannel* const> channels, std::span<Device* const> devices, Nanos timeout) override;
  const Clock& clock() const override { return core_.clock; }

 private:
  Core& core_;
  uint32_t node_;
};

}  // namespace wireup::prov::sim
