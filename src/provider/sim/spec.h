// Plain data of the simulated fabric: what a virtual node and its devices look like, and the
// counters the fabric keeps (SimFabric::stats()).
//
// Address scheme (virtual only; nothing here touches the real network): device d of node i
// has the IPv4 address 10.0.0.0 + (d << 20) + (i + 1), i.e. every address sits in 10.0.0.0/8,
// device 0 of node 0 is 10.0.0.1, device 1 of node 0 is 10.16.0.1. That allows 2^20 - 1 nodes
// and 16 devices per node, and lets an address be mapped back to (node, device) with no table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "provider/types.h"

namespace wireup::prov::sim {

inline constexpr uint32_t kSubnetBase = 0x0A000000;  // 10.0.0.0/8
inline constexpr uint32_t kMaxNodes = (1u << 20) - 1;
inline constexpr uint32_t kMaxDevicesPerNode = 16;

// Host-order IPv4 address of device `device` of node `node`.
inline uint32_t sim_ipv4(uint32_t node, uint32_t device) {
  return kSubnetBase | (device << 20) | (node + 1);
}

struct SimDeviceSpec {
  std::string name;                 // empty: "mlx5_<d>", or "rxe<d>" for vendor 0xffffff
  std::string transport = "RoCE";
  uint32_t vendor_id = 0x15b3;      // PCI vendor id; 0x15b3 = Mellanox, the ECE vendor id too
  uint32_t vendor_part_id = 4123;   // ConnectX-6
  bool ece_supported = true;        // false: ibv_query_ece / ibv_set_ece answer EOPNOTSUPP
  uint32_t ece_options = 0x7;       // option bits the device accepts in ibv_set_ece
  uint32_t ece_required = 0;        // bits every ibv_set_ece must keep set
  // Of the options an ibv_set_ece asks for, those this provider takes (and writes back in
  // the IN/OUT argument); the rest it clears without an error, as a provider may.
  uint32_t ece_keeps = ~0u;
  uint32_t max_qp = 131072;
  uint8_t max_rd_atomic = 16;       // max_qp_rd_atom: bounds responder_resources / initiator_depth
  // A responder that gets more READ/atomic requests in flight than its QP's
  // max_dest_rd_atomic NAKs the one too many (invalid request), as mlx5 does. rxe does not
  // count them (its responder recycles the oldest of its resources instead).
  bool enforces_rd_atomic_depth = true;
  PortState port_state = PortState::active;
  uint32_t active_mtu = 4096;       // bytes
  std::string link_layer = "Ethernet";

  // A ConnectX-like device with ECE (the default above).
  static SimDeviceSpec mlx5(std::string name = {});
  // A soft-RoCE device as the VM has it: no ECE (EOPNOTSUPP), MTU 1024 on a 1500-byte netdev,
  // vendor id 0xffffff (what rxe reports).
  static SimDeviceSpec rxe(std::string name = {});
};

struct SimNodeSpec {
  std::vector<SimDeviceSpec> devices = {SimDeviceSpec{}};
};

// Counters of one simulation. "alive" counts let an engine check that everything it created
// was destroyed at teardown.
struct SimStats {
  uint64_t events_processed = 0;     // scheduled fabric events handled (timers, messages, deliveries)
  uint64_t cm_events_delivered = 0;  // rdma_cm events put on a channel
  uint64_t cm_events_dropped = 0;    // for an id or channel that no longer exists, or a dead node
  uint64_t messages_sent = 0;        // IB CM MADs put on the wire (retransmissions included)
  uint64_t messages_delivered = 0;
  uint64_t messages_lost = 0;        // dropped by the fault plan
  uint64_t messages_duplicated = 0;
  uint64_t messages_unroutable = 0;  // to a dead node or a removed device
  uint64_t async_events = 0;         // device async events raised (COMM_EST, DEVICE_FATAL, ...)
  uint64_t req_retransmits = 0;
  uint64_t rep_retransmits = 0;
  uint64_t dreq_retransmits = 0;
  uint64_t mra_sent = 0;
  uint64_t backlog_drops = 0;        // REQs dropped because a listener's backlog was full
  uint64_t backlog_peak = 0;         // most CONNECT_REQUESTs ever waiting on one listener's backlog
  uint64_t forced_rejects = 0;
  uint64_t stale_qpn_rejects = 0;    // REJ stale to a REQ whose (device, QPN) an id here still held
  uint64_t unreachable = 0;          // UNREACHABLE events (REQ or REP retries exhausted)
  uint64_t destroyed_with_unacked = 0;   // rdma_destroy_id would have blocked forever
  uint64_t channels_destroyed_with_ids = 0;
  uint64_t ids_alive = 0;
  uint64_t channels_alive = 0;
  uint64_t qps_alive = 0;
  uint64_t cqs_alive = 0;
  uint64_t pds_alive = 0;
  uint64_t mrs_alive = 0;
  uint64_t events_pending = 0;       // queued on channels, not yet retrieved
  uint64_t events_unacked = 0;       // retrieved, not yet acked
};

}  // namespace wireup::prov::sim
