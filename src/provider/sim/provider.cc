#include "provider/sim/provider.h"

#include <algorithm>

#include "provider/sim/channel.h"
#include "provider/sim/cm_id.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

Result<std::vector<Device*>> SimProvider::devices() {
  std::vector<Device*> out;
  for (auto& d : core_.node(node_).devices)
    if (!d->removed) out.push_back(d.get());
  if (out.empty())
    return Error::make(ErrorCode::no_device, "rdma_get_devices",
                       "sim node " + std::to_string(node_) + " has no device (none given, or all removed)");
  return out;
}

Result<std::unique_ptr<EventChannel>> SimProvider::create_channel() {
  return std::unique_ptr<EventChannel>(new SimEventChannel(core_, node_));
}

Result<std::unique_ptr<CmId>> SimProvider::create_id(EventChannel& ch, PortSpace ps, Route route) {
  auto* sch = dynamic_cast<SimEventChannel*>(&ch);
  if (sch == nullptr || &sch->core != &core_ || sch->node != node_)
    return Error::make(ErrorCode::invalid_argument, "rdma_create_id",
                       "channel belongs to another provider or node");
  core_.charge(node_, core_.latency.create_id);
  return std::unique_ptr<CmId>(new SimCmId(core_, node_, sch, ps, route));
}

Status SimProvider::wait(std::span<EventChannel* const> channels, std::span<Device* const> devices, Nanos timeout) {
  std::vector<SimEventChannel*> chans;
  chans.reserve(channels.size());
  for (EventChannel* c : channels) {
    auto* s = dynamic_cast<SimEventChannel*>(c);
    if (s == nullptr || &s->core != &core_)
      return Error::make(ErrorCode::invalid_argument, "wait", "channel belongs to another provider");
    chans.push_back(s);
  }
  auto ready = [&] {
    return std::any_of(chans.begin(), chans.end(), [](SimEventChannel* c) { return c->has_pending(); }) ||
           std::any_of(devices.begin(), devices.end(), [](Device* d) { return d->async_pending(); });
  };
  const Nanos now = core_.now();
  const bool forever = timeout >= Nanos::max() - now;
  const Nanos deadline = forever ? Nanos::max() : now + std::max(timeout, Nanos{0});
  while (!ready()) {
    if (core_.queue.empty()) {
      if (forever)
        return Error::make(ErrorCode::invalid_state, "wait",
                           "nothing is scheduled in the sim fabric: an unbounded wait would block forever");
      core_.clock.advance_to(deadline);
      break;
    }
    if (core_.next_time() > deadline) {
      core_.clock.advance_to(deadline);
      break;
    }
    core_.step();
  }
  return Status::ok();
}

}  // namespace wireup::prov::sim
