// The discrete-event loop, nodes, ports, the CPU model, message transport and event delivery.
#include "provider/sim/core.h"

#include <algorithm>
#include <cstdlib>

#include "common/log.h"
#include "provider/sim/channel.h"
#include "provider/sim/cm_id.h"
#include "provider/sim/fabric.h"
#include "provider/sim/provider.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

EventData::EventData() = default;
EventData::EventData(EventData&&) noexcept = default;
EventData& EventData::operator=(EventData&&) noexcept = default;
EventData::~EventData() = default;

Node::Node() = default;
Node::~Node() = default;

std::vector<uint8_t> padded(std::span<const uint8_t> pd, size_t field) {
  std::vector<uint8_t> out(field, 0);
  std::copy_n(pd.begin(), std::min(pd.size(), field), out.begin());
  return out;
}

Core::Core(const SimConfig& cfg)
    : rng(cfg.seed), latency(cfg.latency), faults(cfg.faults, rng), max_backlog(cfg.max_backlog) {
  for (const NodeDeath& d : cfg.faults.deaths) schedule(d.at, TimerKind::node_death, d.node);
  for (const DeviceRemoval& r : cfg.faults.removals)
    schedule(r.at, TimerKind::device_removal, r.node, r.device);
}

Core::~Core() {
  // Events still in delivery may own CONNECT_REQUEST ids; they must go while the tables are
  // intact (their destructors unregister themselves).
  shutting_down = true;
  deliveries.clear();
  nodes.clear();
}

void Core::schedule(Nanos at, TimerKind kind, uint32_t a, uint32_t b, uint64_t c) {
  queue.push(Timer{std::max(at, now()), 0, kind, a, b, c});
}

void Core::schedule_id(Nanos at, TimerKind kind, const SimCmId& id, uint64_t token) {
  schedule(at, kind, id.self.index, id.self.gen, token);
}

bool Core::step() {
  if (queue.empty()) return false;
  Timer t = queue.pop();
  clock.advance_to(t.at);
  ++stats.events_processed;
  switch (t.kind) {
    case TimerKind::message: {
      Msg m = msgs.take(t.a);
      on_message(m);
      break;
    }
    case TimerKind::deliver:
      deliver(t.a);
      break;
    case TimerKind::id_timer:
    case TimerKind::timewait_exit:
    case TimerKind::addr_done:
    case TimerKind::route_done: {
      SimCmId* id = ids.get(Handle{t.a, t.b});
      if (id == nullptr) break;  // destroyed meanwhile
      if (t.kind == TimerKind::id_timer && id->timer_token == t.c) on_id_timer(*id);
      if (t.kind == TimerKind::timewait_exit && id->timer_token == t.c) on_timewait_exit(*id);
      if (t.kind == TimerKind::addr_done && id->op_token == t.c) on_addr_done(*id);
      if (t.kind == TimerKind::route_done && id->op_token == t.c) on_route_done(*id);
      break;
    }
    case TimerKind::node_death:
      if (t.a < nodes.size()) kill_node(t.a);
      break;
    case TimerKind::device_removal:
      if (t.a < nodes.size() && t.b < nodes[t.a]->devices.size()) remove_device(t.a, t.b);
      break;
    case TimerKind::port_change:
      if (t.a < nodes.size() && t.b < nodes[t.a]->devices.size()) change_port(t.a, t.b, t.c != 0);
      break;
  }
  return true;
}

Nanos Core::cpu_start(uint32_t n) const { return std::max(now(), nodes[n]->cpu_free); }

Nanos Core::charge(uint32_t n, Nanos cost) {
  Nanos done = cpu_start(n) + cost;
  nodes[n]->cpu_free = done;
  return done;
}

uint32_t Core::add_node(const SimNodeSpec& spec) {
  if (nodes.size() >= kMaxNodes) {
    WIREUP_LOG(error, "sim: more than %u nodes do not fit the address scheme", kMaxNodes);
    std::abort();
  }
  auto n = std::make_unique<Node>();
  n->index = static_cast<uint32_t>(nodes.size());
  size_t count = std::min<size_t>(spec.devices.size(), kMaxDevicesPerNode);
  if (count < spec.devices.size())
    WIREUP_LOG(warn, "sim: node %u keeps the first %u of its %zu devices", n->index,
               kMaxDevicesPerNode, spec.devices.size());
  for (size_t d = 0; d < count; ++d)
    n->devices.push_back(
        std::make_unique<SimDevice>(*this, n->index, static_cast<uint32_t>(d), spec.devices[d]));
  nodes.push_back(std::move(n));
  return nodes.back()->index;
}

SimDevice* Core::device_at(uint32_t ip) const {
  if ((ip & 0xFF000000u) != kSubnetBase) return nullptr;
  uint32_t dev = (ip >> 20) & 0xF;
  uint32_t host = ip & 0xFFFFF;
  if (host == 0 || host - 1 >= nodes.size()) return nullptr;
  const Node& n = *nodes[host - 1];
  return dev < n.devices.size() ? n.devices[dev].get() : nullptr;
}

namespace {
uint32_t port_key(PortSpace ps, uint16_t port) { return (static_cast<uint32_t>(ps) << 16) | port; }
// Linux ip_local_port_range default, where rdma_cm picks ephemeral ports too.
constexpr uint32_t kEphemeralLow = 32768;
constexpr uint32_t kEphemeralHigh = 60999;
}  // namespace

uint16_t Core::alloc_port(Node& n, PortSpace ps) {
  const uint32_t span = kEphemeralHigh - kEphemeralLow + 1;
  for (uint32_t tries = 0; tries < span; ++tries) {
    uint16_t port = static_cast<uint16_t>(kEphemeralLow + n.next_port);
    n.next_port = (n.next_port + 1) % span;
    if (take_port(n, ps, port)) return port;
  }
  return 0;
}

bool Core::take_port(Node& n, PortSpace ps, uint16_t port) {
  return n.ports.emplace(port_key(ps, port), 1).second;
}

void Core::release_port(Node& n, PortSpace ps, uint16_t port) { n.ports.erase(port_key(ps, port)); }

void Core::send(Msg m, Nanos depart) {
  ++stats.messages_sent;
  // A port that is down sends nothing (the receiving end is checked in on_message).
  const SimDevice* from = device_at(m.src_ip);
  if (nodes[m.src_node]->dead || m.dst_node >= nodes.size() || (from != nullptr && !from->usable())) {
    ++stats.messages_unroutable;
    return;
  }
  MessageFate f = faults.message(m.type, m.src_node, m.dst_node, depart, m.dst_ip);
  if (f.lost) {
    ++stats.messages_lost;
    return;
  }
  const Nanos flight = depart + latency.cm_message;
  if (f.duplicated) {
    ++stats.messages_duplicated;
    Msg copy = m;
    schedule(flight + f.dup_extra, TimerKind::message, msgs.put(std::move(copy)));
  }
  schedule(flight + f.extra, TimerKind::message, msgs.put(std::move(m)));
}

void Core::post_event(SimCmId& target, EventData ev) {
  ev.target = target.self;
  if (nodes[target.node]->dead) {
    ++stats.cm_events_dropped;  // the node's process is gone: nobody will read it
    return;
  }
  Nanos at = charge(target.node, latency.cpu_per_event);
  schedule(at, TimerKind::deliver, deliveries.put(std::move(ev)));
}

void Core::deliver(uint32_t slot) {
  EventData ev = deliveries.take(slot);
  SimCmId* id = ids.get(ev.target);
  if (id == nullptr || id->chan == nullptr || nodes[id->node]->dead) {
    // Gone, or a CONNECT_REQUEST id the user has not retrieved yet: the kernel (ucma)
    // discards events of such an id too. A dropped CONNECT_REQUEST takes its new id along.
    if (id != nullptr && ev.type == CmEventType::connect_request) --id->requests_waiting;
    ++stats.cm_events_dropped;
    return;
  }
  ++stats.cm_events_delivered;
  id->chan->push(std::move(ev));
}

void Core::mark_ready(SimEventChannel& ch) {
  if (ch.in_ready) return;
  ch.in_ready = true;
  ready.push_back(ch.self);
}

std::vector<ReadyChannel> Core::take_ready() {
  std::vector<ReadyChannel> out;
  out.reserve(ready.size());
  for (Handle h : ready) {
    if (SimEventChannel* ch = channels.get(h)) {
      ch->in_ready = false;
      out.push_back({ch->node, ch});
    }
  }
  ready.clear();
  return out;
}

}  // namespace wireup::prov::sim
