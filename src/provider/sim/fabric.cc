#include "provider/sim/fabric.h"

#include "provider/sim/core.h"
#include "provider/sim/provider.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

SimFabric::SimFabric(SimConfig cfg) : core_(std::make_unique<Core>(cfg)) {}
SimFabric::~SimFabric() = default;

uint32_t SimFabric::add_node(const SimNodeSpec& spec) { return core_->add_node(spec); }
size_t SimFabric::node_count() const { return core_->nodes.size(); }

Provider& SimFabric::provider(uint32_t node) {
  Node& n = core_->node(node);
  if (!n.provider) n.provider = std::make_unique<SimProvider>(*core_, node);
  return *n.provider;
}

SockAddr SimFabric::address(uint32_t node, uint32_t device, uint16_t port) const {
  return SockAddr::ipv4(sim_ipv4(node, device), port);
}

const Clock& SimFabric::clock() const { return core_->clock; }
Nanos SimFabric::now() const { return core_->now(); }
bool SimFabric::step() { return core_->step(); }

size_t SimFabric::run_until(Nanos t) {
  size_t n = 0;
  while (!core_->queue.empty() && core_->next_time() <= t) {
    core_->step();
    ++n;
  }
  core_->clock.advance_to(t);
  return n;
}

Nanos SimFabric::next_time() const { return core_->next_time(); }
bool SimFabric::idle() const { return core_->queue.empty(); }

std::vector<SimFabric::Ready> SimFabric::take_ready() {
  std::vector<ReadyChannel> ready = core_->take_ready();
  std::vector<Ready> out;
  out.reserve(ready.size());  // drivers call this after every step: no growth on the way
  for (const ReadyChannel& r : ready) out.push_back({r.node, r.channel});
  return out;
}

void SimFabric::kill_node(uint32_t node, Nanos at) { core_->schedule(at, TimerKind::node_death, node); }

void SimFabric::remove_device(uint32_t node, uint32_t device, Nanos at) {
  core_->schedule(at, TimerKind::device_removal, node, device);
}

void SimFabric::set_port(uint32_t node, uint32_t device, bool up, Nanos at) {
  core_->schedule(at, TimerKind::port_change, node, device, up ? 1 : 0);
}

void SimFabric::fail_over(uint32_t node, uint32_t device) { core_->fail_over(node, device); }

void SimFabric::raise_device_event(uint32_t node, uint32_t device, DeviceEventType type, uint32_t qpn,
                                   const void* object) {
  const uint8_t port = scope_of(type) == DeviceEventScope::port ? 1 : 0;
  core_->node(node).devices.at(device)->raise(type, qpn, port, object);
}

Result<DeviceEvent> SimFabric::read_raised(uint32_t node, uint32_t device) {
  return core_->node(node).devices.at(device)->read_raised();
}

size_t SimFabric::raised_pending(uint32_t node, uint32_t device) const {
  return core_->node(node).devices.at(device)->raised_pending();
}

FaultPlan& SimFabric::faults() { return core_->faults.plan(); }
const SimStats& SimFabric::stats() const { return core_->stats; }
const LatencyModel& SimFabric::latency() const { return core_->latency; }

}  // namespace wireup::prov::sim
