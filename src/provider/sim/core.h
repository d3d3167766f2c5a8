// Internals of the simulated fabric: the virtual clock, the event queue, nodes, the IB CM
// message machinery and the rdma_cm event delivery. SimFabric (fabric.h) is the public face;
// the provider objects (cm_id.h, channel.h, verbs.h) call into this.
//
// Single-threaded by design: nothing here takes a lock; one thread drives a fabric.
#pragma once

#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "provider/provider.h"
#include "provider/sim/faults.h"
#include "provider/sim/latency_model.h"
#include "provider/sim/queue.h"
#include "provider/sim/spec.h"

namespace wireup::prov::sim {

class SimCmId;
class SimDevice;
class SimEventChannel;
class SimProvider;
class SimQp;
struct SimConfig;

class VirtualClock final : public Clock {
 public:
  Nanos now() const override { return now_; }
  void advance_to(Nanos t) {
    if (t > now_) now_ = t;
  }

 private:
  Nanos now_{0};
};

// One IB CM MAD in flight. Comm ids are id handles (fabric-wide unique while alive).
struct Msg {
  CmMsg type = CmMsg::req;
  uint32_t src_node = 0;
  uint32_t dst_node = 0;
  uint32_t dst_ip = 0;        // REQ: the listener's address (host order)
  uint16_t dst_port = 0;      // REQ: the listener's port
  uint16_t src_port = 0;
  uint32_t src_ip = 0;
  PortSpace ps = PortSpace::tcp;
  Handle src_comm;            // the sender's id
  Handle dst_comm;            // the receiver's id (invalid for a REQ)
  uint32_t qpn = 0;           // REQ/REP: the sender's QP
  uint32_t psn = 0;           // REQ/REP: the sender's starting PSN
  Ece ece;                    // REQ: local ECE; REP: {REQ vendor, accepted options}
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t srq = 0;
  int reason = 0;             // REJ
  uint32_t mtu = 0;           // sender's port MTU (path MTU = min of both)
  std::vector<uint8_t> private_data;
};

// An rdma_cm event on its way to (or waiting on) a channel.
struct EventData {
  CmEventType type = CmEventType::addr_resolved;
  int status = 0;
  Handle target;                   // the id that reports it (the listener for CONNECT_REQUEST)
  std::unique_ptr<SimCmId> child;  // CONNECT_REQUEST: the new id
  std::vector<uint8_t> private_data;
  uint32_t qp_num = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t srq = 0;

  EventData();
  EventData(EventData&&) noexcept;
  EventData& operator=(EventData&&) noexcept;
  ~EventData();
};

struct Node {
  uint32_t index = 0;
  std::vector<std::unique_ptr<SimDevice>> devices;
  std::unique_ptr<SimProvider> provider;
  Nanos cpu_free{0};
  bool dead = false;
  uint32_t next_port = 0;                          // ephemeral port cursor
  std::unordered_map<uint32_t, uint32_t> ports;    // (ps << 16 | port) -> users
  std::vector<Handle> listeners;
  // Passive side: the child id of each remote active id (REQ duplicates find it here), and
  // remote ids whose connection ended recently (a late duplicate REQ gets REJ stale).
  std::unordered_map<uint64_t, Handle> by_remote;
  // The same child ids by the sender's (device, QPN): cm_match_req's stale-connection check.
  std::unordered_map<uint64_t, Handle> by_remote_qpn;
  std::unordered_map<uint64_t, Nanos> tombstones;
  size_t tombstone_sweep_at = 64;  // sweep expired ones when the map grows past this

  Node();
  ~Node();
};

struct ReadyChannel {
  uint32_t node = 0;
  EventChannel* channel = nullptr;
};

class Core {
 public:
  explicit Core(const SimConfig& cfg);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // --- time and scheduling -------------------------------------------------------------
  Nanos now() const { return clock.now(); }
  void schedule(Nanos at, TimerKind kind, uint32_t a = 0, uint32_t b = 0, uint64_t c = 0);
  void schedule_id(Nanos at, TimerKind kind, const SimCmId& id, uint64_t token);
  bool step();
  Nanos next_time() const { return queue.empty() ? Nanos::max() : queue.top().at; }
  // When the node's CPU is free to start something (never before now).
  Nanos cpu_start(uint32_t node) const;
  // Occupies the node's CPU for `cost`; returns when that work is done.
  Nanos charge(uint32_t node, Nanos cost);

  // --- nodes, addresses ----------------------------------------------------------------
  uint32_t add_node(const SimNodeSpec& spec);
  Node& node(uint32_t i) { return *nodes[i]; }
  // The device an address belongs to, or nullptr (not a fabric address, no such node/device).
  SimDevice* device_at(uint32_t ip) const;
  uint16_t alloc_port(Node& n, PortSpace ps);
  bool take_port(Node& n, PortSpace ps, uint16_t port);  // false: in use
  void release_port(Node& n, PortSpace ps, uint16_t port);

  // --- CM messages and events (ib_cm.cc) -----------------------------------------------
  void send(Msg m, Nanos depart);
  void post_event(SimCmId& target, EventData ev);
  void on_message(Msg& m);
  void on_id_timer(SimCmId& id);
  void on_addr_done(SimCmId& id);
  void on_route_done(SimCmId& id);
  void on_timewait_exit(SimCmId& id);
  void id_destroyed(SimCmId& id);
  void kill_node(uint32_t node);
  void remove_device(uint32_t node, uint32_t device);
  void change_port(uint32_t node, uint32_t device, bool up);
  void fail_over(uint32_t node, uint32_t device);
  // Requests for the id's REQ / REP / DREQ retransmission machinery.
  void send_req(SimCmId& id);
  void send_rep(SimCmId& id);
  void send_dreq(SimCmId& id);
  // A message of the id's connection. `user`: sent by an API call (leaves when the node's CPU
  // is free) rather than by the kernel's CM on its own (leaves now).
  void send_simple(SimCmId& id, CmMsg type, bool user, int reason = 0,
                   std::span<const uint8_t> pd = {});
  void arm_timer(SimCmId& id, Nanos at);
  void cancel_timer(SimCmId& id);
  void enter_timewait(SimCmId& id);
  // The passive id leaves its connection: forget it for duplicate detection.
  void forget_remote(SimCmId& id);
  SimCmId* find_listener(Node& n, PortSpace ps, uint32_t ip, uint16_t port);

  // --- channels ------------------------------------------------------------------------
  void mark_ready(SimEventChannel& ch);
  std::vector<ReadyChannel> take_ready();

  VirtualClock clock;
  std::mt19937_64 rng;
  LatencyModel latency;
  FaultInjector faults;
  int max_backlog;
  SimStats stats;
  EventQueue queue;
  Slab<Msg> msgs;
  Slab<EventData> deliveries;
  HandleTable<SimCmId> ids;
  HandleTable<SimEventChannel> channels;
  HandleTable<SimQp> qps;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Handle> ready;  // channel handles that became readable
  uint32_t next_key = 0x100;  // lkey/rkey counter
  bool shutting_down = false; // ~Core: objects only unregister themselves

 private:
  void deliver(uint32_t slot);
  void handle_req(Msg& m);
  void handle_rep(Msg& m, SimCmId& id);
  void handle_rtu(SimCmId& id);
  void handle_rej(Msg& m, SimCmId& id);
  void handle_mra(SimCmId& id);
  void handle_dreq(Msg& m, SimCmId* id);
  void handle_drep(SimCmId& id);
  void reply_to(const Msg& to, CmMsg type, int reason);
};

// Pads private data to the whole field, as the receiving side of the real stack sees it.
std::vector<uint8_t> padded(std::span<const uint8_t> pd, size_t field);

}  // namespace wireup::prov::sim
