// The simulated fabric: an in-process, deterministic, discrete-event model of the kernel
// rdma_cm + IB CM and of verbs QPs for many virtual nodes, behind the provider seam.
//
//   SimFabric fab(SimConfig{.seed = 7});
//   uint32_t a = fab.add_node(), b = fab.add_node();
//   prov::Provider& pa = fab.provider(a);        // one Provider view per node
//   ... use pa / pb exactly like the rdma provider; Provider::wait() advances virtual time,
//   or drive the whole fabric with fab.step() / fab.run_until(t) and poll channels.
//
// Determinism: a run is a function of the seed, the config and the sequence of API calls.
// Events at the same virtual instant run in the order they were scheduled.
//
// Where sim differs from the real stack on purpose (docs/testing.md, "What is proven where", has the full list):
//  - Nothing blocks. rdma_migrate_id while a retrieved event of the id is un-acked returns
//    ErrorCode::invalid_state ("would block until ..."); destroying an id with un-acked events
//    logs an error and counts stats().destroyed_with_unacked (the real call would hang);
//    Provider::wait() without a bound on an idle fabric returns invalid_state.
//  - The data path (SEND/RECV) is instantaneous and needs no virtual time.
//  - A channel's eventfd is created on the first fd() call.
//  - A destroyed id sends its REJ/DREQ/DREP once, without retransmission.
//  - A REJ reaching an established connection is ignored (the kernel tears it down).
//  - A dead node's pending events are dropped (its process is gone); ARP to it fails
//    (ADDR_ERROR after the timeout) instead of answering from a stale cache.
//  - DEVICE_REMOVAL reaches ids bound to the device (listeners bound to its address too),
//    not listeners bound to the wildcard address.
// The objects a provider hands out (channels, ids, PDs, CQs, QPs, MRs, events) must not
// outlive the SimFabric. A fabric is driven by one thread.
#pragma once

#include <memory>
#include <vector>

#include "provider/provider.h"
#include "provider/sim/faults.h"
#include "provider/sim/latency_model.h"
#include "provider/sim/spec.h"

namespace wireup::prov::sim {

class Core;

struct SimConfig {
  uint64_t seed = 1;
  LatencyModel latency = LatencyModel::hardware();
  FaultPlan faults{};
  // ucma.c max_backlog (net.rdma_ucm.max_backlog): a listen backlog <= 0 or above it gets it.
  int max_backlog = 1024;
};

class SimFabric {
 public:
  explicit SimFabric(SimConfig cfg = {});
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // Adds a node; its index (0, 1, ...). At most kMaxNodes nodes, kMaxDevicesPerNode devices.
  uint32_t add_node(const SimNodeSpec& spec = {});
  size_t node_count() const;
  // The node's Provider view; its clock() is the fabric's virtual clock.
  Provider& provider(uint32_t node);
  // The address of a node's device (see spec.h for the scheme).
  SockAddr address(uint32_t node, uint32_t device = 0, uint16_t port = 0) const;

  // --- virtual time --------------------------------------------------------------------
  const Clock& clock() const;
  Nanos now() const;
  // Processes the next scheduled event (advancing the clock to it); false when idle.
  bool step();
  // Processes every event scheduled up to `t`, then sets the clock to `t`. Returns how many.
  size_t run_until(Nanos t);
  size_t run_for(Nanos d) { return run_until(now() + d); }
  // Time of the next scheduled event; Nanos::max() when idle.
  Nanos next_time() const;
  bool idle() const;
  // Channels that became readable since the last call (each once), for drivers that poll
  // only what changed. A channel destroyed meanwhile is left out.
  struct Ready {
    uint32_t node;
    EventChannel* channel;
  };
  std::vector<Ready> take_ready();

  // --- faults at run time (in addition to SimConfig::faults) --------------------------
  void kill_node(uint32_t node, Nanos at);
  void remove_device(uint32_t node, uint32_t device, Nanos at);
  // A node's device's port (port 1) goes down or comes back at `at`, as its link would: the
  // device raises PORT_ERR or PORT_ACTIVE, and while it is down no CM message or packet leaves
  // or reaches it and no address resolves on it. Nothing else moves (core's change_port).
  void set_port(uint32_t node, uint32_t device, bool up, Nanos at);
  // A bonding failover under a node's device, now: ADDR_CHANGE on every id bound to it that
  // the CM still serves (cma_netdev_change: the bound netdev's hardware address changed).
  // Linux raises it for NETDEV_BONDING_FAILOVER of a bond master only.
  void fail_over(uint32_t node, uint32_t device);
  // Raises an async event on a node's device now, as its hardware would (e.g. a QP's
  // COMM_EST, QP_FATAL). The data path raises COMM_EST by itself (a packet reaching a QP in RTR).
  // `object`: the CQ/SRQ/WQ a cq/srq/wq-scoped event names; a port event names port 1.
  void raise_device_event(uint32_t node, uint32_t device, DeviceEventType type, uint32_t qpn = 0,
                          const void* object = nullptr);
  // The transport's own ibv_get_async_event on a node's device (for a transport that owns the
  // async events: AsyncOwner::transport): the next event raised, or would_block; and how many
  // wait. In library mode the library reads the same queue: never both.
  Result<DeviceEvent> read_raised(uint32_t node, uint32_t device);
  size_t raised_pending(uint32_t node, uint32_t device) const;
  FaultPlan& faults();  // message rules and rejects may be changed between steps

  const SimStats& stats() const;
  const LatencyModel& latency() const;

 private:
  std::unique_ptr<Core> core_;
};

}  // namespace wireup::prov::sim
