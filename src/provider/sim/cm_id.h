// A simulated rdma_cm_id: the rdma_cm state (kernel cma.c's enum) and the IB CM state of its
// connection (cm.c's enum) as two explicit state machines.
#pragma once

#include <vector>

#include "provider/sim/core.h"

namespace wireup::prov::sim {

// rdma_cm id states (enum rdma_cm_state in the kernel). CONNECT covers connecting and
// connected, as in the kernel; the IB CM state tells which.
enum class CmaState : uint8_t {
  idle,
  addr_query,
  addr_resolved,
  route_query,
  route_resolved,
  connect,
  disconnect,
  addr_bound,
  listen,
  device_removal,
};
const char* to_string(CmaState s);

// IB CM connection states (enum ib_cm_state), the subset a connected RC id goes through.
enum class IbState : uint8_t {
  none,          // no IB CM id yet (before connect; listeners)
  idle,
  req_sent,
  mra_req_rcvd,  // the peer's MRA extended our REQ's timeout
  req_rcvd,
  mra_req_sent,  // CONNECT_REQUEST handed to the user; a duplicate REQ is answered with MRA
  rep_sent,
  mra_rep_rcvd,
  rep_rcvd,
  mra_rep_sent,  // CONNECT_RESPONSE handed to the user; a duplicate REP is answered with MRA
  established,
  dreq_sent,
  dreq_rcvd,
  timewait,
};
const char* to_string(IbState s);

class SimCmId final : public CmId {
 public:
  SimCmId(Core& core, uint32_t node, SimEventChannel* ch, PortSpace ps, Route route);
  ~SimCmId() override;
  Status bind_addr(const SockAddr& addr) override;
  Status resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) override;
  Status resolve_route(int timeout_ms) override;
  Status listen(int backlog) override;
  Status connect(const ConnParam& param) override;
  Status accept(const ConnParam& param) override;
  Status reject(std::span<const uint8_t> private_data) override;
  Status reject_ece(std::span<const uint8_t> private_data) override;
  Status establish() override;
  Status disconnect() override;
  Status notify_comm_est() override;
  Status set_tos(uint8_t tos) override;
  Status set_reuseaddr(bool on) override;
  Status set_ack_timeout(uint8_t timeout) override;
  Result<QpAttrWithMask> init_qp_attr(QpState state) override;
  Status set_local_ece(const Ece& ece) override;
  Result<Ece> get_remote_ece() override;
  SockAddr local_addr() const override;
  SockAddr peer_addr() const override;
  Device* device() const override;
  uint8_t port_num() const override { return dev >= 0 ? 1 : 0; }
  EventChannel* channel() const override;

  // --- sim internals (Core reads and writes these) ---
  SimDevice* bound_device() const;
  bool is_passive() const { return listener.valid() || passive; }
  void attach(SimEventChannel* ch);
  Status migrate_native(EventChannel& to) override;
  // Errors in the style of the rdma provider: the call, errno, the peer address.
  Error fail(const char* call, int err, std::string detail) const;

  Core& core;
  Handle self;
  uint32_t node;
  PortSpace ps;
  SimEventChannel* chan = nullptr;
  uint32_t chan_slot = 0;       // our index in chan's list of ids
  CmaState cma = CmaState::idle;
  IbState ib = IbState::none;
  int dev = -1;                 // device index on the node, -1 unbound
  // Addresses as IPv4 + port (a SockAddr is 128 bytes; ids are many).
  uint32_t local_ip = 0;        // 0: the wildcard address
  uint16_t local_port = 0;
  bool bound = false;
  uint16_t peer_port = 0;
  bool has_peer = false;        // remote_ip / peer_port are set
  bool port_taken = false;
  bool passive = false;         // a CONNECT_REQUEST id
  Handle listener;              // passive: the listener it came through
  int backlog = 0;              // listener: how many CONNECT_REQUESTs may wait un-retrieved
  int requests_waiting = 0;     // listener: queued, not yet retrieved
  uint32_t events_reported = 0; // retrieved from a channel (rdma_get_cm_event)
  uint32_t events_acked = 0;    // and acked
  uint64_t timer_token = 0;     // bumping it cancels the armed timer
  uint64_t op_token = 0;        // resolve_addr / resolve_route in flight
  int retries_left = 0;
  bool addr_ok = false;         // outcome of the address/route query in flight
  int op_error = 0;

  // The connection, as the IB CM knows it.
  uint32_t remote_node = 0;
  Handle remote_comm;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  uint32_t local_psn = 0;
  uint32_t remote_psn = 0;
  uint32_t remote_ip = 0;
  uint32_t path_mtu_bytes = 0;
  Ece local_ece;
  Ece remote_ece;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;  // for our QP: the peer's REQ/REP value
  uint8_t sent_rnr_retry = 7;   // passive: the value our REP carries (accept's param)
  uint8_t srq = 0;
  uint8_t tos = 0;
  bool ack_timeout_set = false;
  uint8_t ack_timeout = 0;
  bool reuseaddr = false;
  std::vector<uint8_t> sent_pd;  // private data of the REQ/REP being retransmitted

 private:
  Status require_device(const char* call) const;
  Status send_reject(const char* call, std::span<const uint8_t> pd, int reason);
};

}  // namespace wireup::prov::sim
