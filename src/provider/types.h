// Plain data types of the provider seam: addresses, CM events, QP attributes, ECE.
//
// They mirror rdma_cma.h / verbs.h closely (same enum order, same field meaning) so that the
// rdma provider is a 1:1 translation and the sim provider models the same contract.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace wireup::prov {

// An IPv4/IPv6 socket address (what rdma_cm binds, resolves and listens on).
class SockAddr {
 public:
  SockAddr() = default;
  // "10.0.0.1:7471", "10.0.0.1" (port 0), "[fe80::1]:7471"
  static Result<SockAddr> parse(std::string_view text);
  static SockAddr from(const sockaddr* sa);
  static SockAddr ipv4(uint32_t host_order_addr, uint16_t port);

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&ss_); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&ss_); }
  socklen_t len() const;
  int family() const { return ss_.ss_family; }
  bool empty() const { return ss_.ss_family == AF_UNSPEC; }
  uint16_t port() const;
  void set_port(uint16_t port);
  // Host-order IPv4 address, 0 for other families.
  uint32_t ipv4_addr() const;
  std::string to_string() const;
  bool operator==(const SockAddr& o) const;

 private:
  sockaddr_storage ss_{};
};

enum class PortSpace : uint8_t { tcp, ib };  // RDMA_PS_TCP, RDMA_PS_IB

// Same order as enum rdma_cm_event_type.
enum class CmEventType : uint8_t {
  addr_resolved,
  addr_error,
  route_resolved,
  route_error,
  connect_request,
  connect_response,
  connect_error,
  unreachable,
  rejected,
  established,
  disconnected,
  device_removal,
  multicast_join,
  multicast_error,
  addr_change,
  timewait_exit,
};
const char* to_string(CmEventType t);

// Asynchronous events of a device (ibv_get_async_event), same order and values as enum
// ibv_event_type. QP events name the QP by number (DeviceEvent::qpn), port events the port.
enum class DeviceEventType : uint8_t {
  cq_err,
  qp_fatal,
  qp_req_err,
  qp_access_err,
  comm_est,          // the first request packet reached a QP still in RTR (before the RTU)
  sq_drained,
  path_mig,
  path_mig_err,
  device_fatal,      // the device is gone or broken (also sent by the kernel on its removal)
  port_active,
  port_err,
  lid_change,
  pkey_change,
  sm_change,
  srq_err,
  srq_limit_reached,
  qp_last_wqe_reached,
  client_reregister,
  gid_change,
  wq_fatal,
};
const char* to_string(DeviceEventType t);
// The element an event is about, as ibv_async_event's union says.
enum class DeviceEventScope : uint8_t { qp, cq, srq, wq, port, device };
DeviceEventScope scope_of(DeviceEventType t);

// One async event, copied out of the provider (acked by then: nothing here points into it).
struct DeviceEvent {
  DeviceEventType type = DeviceEventType::device_fatal;
  uint32_t qpn = 0;     // scope qp
  uint8_t port = 0;     // scope port
  std::string device;   // the device's name
  std::string describe() const;
};

// IB CM reject reasons carried as the status of RDMA_CM_EVENT_REJECTED (IBTA 12.6.7.2).
namespace reject_reason {
inline constexpr int no_listener = 8;     // IB_CM_REJ_INVALID_SERVICE_ID: nothing listening
inline constexpr int stale_conn = 10;
inline constexpr int consumer = 28;       // IB_CM_REJ_CONSUMER_DEFINED: rdma_reject()
inline constexpr int vendor_option = 35;  // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED: rdma_reject_ece()
}  // namespace reject_reason

// Private-data budgets of the IB CM messages as seen by an RDMA_PS_TCP consumer: the CM's
// own 36-byte rdma_cm header eats into the 92-byte REQ field (see rdma_connect(3)).
namespace private_data_limit {
inline constexpr size_t req_tcp = 56;
inline constexpr size_t req_ib = 92;
inline constexpr size_t rep = 196;
inline constexpr size_t rej = 148;
inline constexpr size_t dreq = 220;
}  // namespace private_data_limit

struct Ece {
  uint32_t vendor_id = 0;
  uint32_t options = 0;
  bool operator==(const Ece&) const = default;
};

// rdma_conn_param, with private data owned.
struct ConnParam {
  std::vector<uint8_t> private_data;
  uint8_t responder_resources = 1;
  uint8_t initiator_depth = 1;
  uint8_t flow_control = 1;
  uint8_t retry_count = 7;       // transport retries, 7 = the IB maximum
  uint8_t rnr_retry_count = 7;   // 7 = retry forever on receiver-not-ready
  uint8_t srq = 0;
  uint32_t qp_num = 0;           // the application-owned QP carried in REQ/REP
};

// QP states, same order as enum ibv_qp_state.
enum class QpState : uint8_t { reset, init, rtr, rts, sqd, sqe, err, unknown };
const char* to_string(QpState s);

// Attribute mask bits; same values as enum ibv_qp_attr_mask (checked by the rdma provider).
namespace qp_mask {
inline constexpr uint32_t state = 1 << 0;
inline constexpr uint32_t cur_state = 1 << 1;
inline constexpr uint32_t en_sqd_async_notify = 1 << 2;
inline constexpr uint32_t access_flags = 1 << 3;
inline constexpr uint32_t pkey_index = 1 << 4;
inline constexpr uint32_t port = 1 << 5;
inline constexpr uint32_t qkey = 1 << 6;
inline constexpr uint32_t av = 1 << 7;
inline constexpr uint32_t path_mtu = 1 << 8;
inline constexpr uint32_t timeout = 1 << 9;
inline constexpr uint32_t retry_cnt = 1 << 10;
inline constexpr uint32_t rnr_retry = 1 << 11;
inline constexpr uint32_t rq_psn = 1 << 12;
inline constexpr uint32_t max_qp_rd_atomic = 1 << 13;
inline constexpr uint32_t alt_path = 1 << 14;
inline constexpr uint32_t min_rnr_timer = 1 << 15;
inline constexpr uint32_t sq_psn = 1 << 16;
inline constexpr uint32_t max_dest_rd_atomic = 1 << 17;
inline constexpr uint32_t path_mig_state = 1 << 18;
inline constexpr uint32_t cap = 1 << 19;
inline constexpr uint32_t dest_qpn = 1 << 20;
// Names of the bits set in mask, e.g. "PATH_MTU|DEST_QPN".
std::string names(uint32_t mask);
}  // namespace qp_mask

// Access flags, same values as enum ibv_access_flags.
namespace access {
inline constexpr uint32_t local_write = 1;
inline constexpr uint32_t remote_write = 2;
inline constexpr uint32_t remote_read = 4;
inline constexpr uint32_t remote_atomic = 8;
inline constexpr uint32_t remote_all = remote_write | remote_read | remote_atomic;
}  // namespace access

struct Gid {
  std::array<uint8_t, 16> raw{};
  bool operator==(const Gid&) const = default;
};

// ibv_ah_attr with its GRH.
struct AhAttr {
  Gid dgid;
  uint32_t flow_label = 0;
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 0;
  uint8_t traffic_class = 0;
  uint16_t dlid = 0;
  uint8_t sl = 0;
  uint8_t src_path_bits = 0;
  uint8_t static_rate = 0;
  uint8_t is_global = 0;
  uint8_t port_num = 0;
};

// ibv_qp_attr, the subset a connected RC QP uses. Units follow the verbs spec:
// timeout is 4.096 us * 2^timeout, min_rnr_timer an index into the RNR table.
struct QpAttr {
  QpState qp_state = QpState::reset;
  uint32_t path_mtu = 0;  // enum ibv_mtu: 1=256 .. 5=4096
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  AhAttr ah_attr;
  uint16_t pkey_index = 0;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  uint8_t port_num = 0;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
};

// What rdma_init_qp_attr() answers: the attributes and the mask the CM says must be set.
struct QpAttrWithMask {
  QpAttr attr;
  uint32_t mask = 0;
};

struct QpCaps {
  uint32_t max_send_wr = 128;
  uint32_t max_recv_wr = 128;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
};

enum class QpType : uint8_t { rc, uc, ud };

// Work completion, the fields a transport reads (ibv_wc).
struct WorkCompletion {
  uint64_t wr_id = 0;
  int status = 0;       // enum ibv_wc_status, 0 = success (wc_status)
  int opcode = 0;       // enum ibv_wc_opcode (wc_opcode_*)
  uint32_t byte_len = 0;
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t imm_data = 0;  // valid with wc_flag_with_imm; carried unchanged (network order)
  uint32_t wc_flags = 0;  // enum ibv_wc_flags
};
// enum ibv_wc_opcode: what a completion was for (checked by the rdma provider).
inline constexpr int wc_opcode_send = 0;
inline constexpr int wc_opcode_rdma_write = 1;
inline constexpr int wc_opcode_rdma_read = 2;
inline constexpr int wc_opcode_comp_swap = 3;
inline constexpr int wc_opcode_fetch_add = 4;
inline constexpr int wc_opcode_recv = 128;
inline constexpr int wc_opcode_recv_rdma_with_imm = 129;
inline constexpr uint32_t wc_flag_with_imm = 1 << 1;  // IBV_WC_WITH_IMM

// enum ibv_wc_status, the values the library and its tests look at.
namespace wc_status {
inline constexpr int success = 0;
inline constexpr int loc_len_err = 1;
inline constexpr int loc_qp_op_err = 2;
inline constexpr int loc_prot_err = 4;
inline constexpr int wr_flush_err = 5;
inline constexpr int rem_inv_req_err = 9;
inline constexpr int rem_access_err = 10;
inline constexpr int retry_exc_err = 12;
}  // namespace wc_status

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// enum ibv_wr_opcode, same values.
enum class WrOpcode : uint8_t {
  rdma_write,
  rdma_write_with_imm,
  send,
  send_with_imm,
  rdma_read,
  atomic_cmp_and_swp,
  atomic_fetch_and_add,
};
const char* to_string(WrOpcode op);

// One send work request (ibv_send_wr with one SGE; length 0 posts no SGE at all).
// RDMA: remote_addr/rkey name the peer's memory. Atomics: 8 bytes at an 8-aligned
// remote_addr, the original value lands in the SGE; compare_add is the compare value of CAS
// or the addend of fetch-and-add, swap the value CAS writes.
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::send;
  Sge sge;
  bool signaled = true;
  uint32_t imm_data = 0;  // *_WITH_IMM: carried unchanged (network order, as in ibv_send_wr)
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
};

// ibv_srq_init_attr's attr.
struct SrqInitAttr {
  uint32_t max_wr = 128;
  uint32_t max_sge = 1;
  uint32_t srq_limit = 0;
};

enum class PortState : uint8_t { nop, down, init, armed, active, active_defer, unknown };
const char* to_string(PortState s);

struct PortInfo {
  uint8_t port_num = 1;
  PortState state = PortState::unknown;
  std::string link_layer;  // "InfiniBand", "Ethernet"
  uint32_t active_mtu = 0; // bytes
};

struct DeviceInfo {
  std::string name;            // "mlx5_0", "rxe0"
  std::string transport;       // "InfiniBand", "RoCE", "iWARP", "unknown"
  uint32_t vendor_id = 0;      // PCI vendor id from ibv_query_device
  uint32_t vendor_part_id = 0;
  uint64_t node_guid = 0;      // network byte order as reported
  std::string fw_ver;
  std::string pci_bus_id;      // "0000:81:00.0", empty for software devices
  std::string netdev;          // RoCE: the Ethernet interface underneath
  uint32_t max_qp = 0;
  // READ/atomic bounds (ibv_device_attr): outstanding as a target per QP (max_qp_rd_atom, the
  // bound of responder_resources) and as an initiator (max_qp_init_rd_atom, initiator_depth).
  uint32_t max_qp_rd_atom = 0;
  uint32_t max_qp_init_rd_atom = 0;
  std::vector<PortInfo> ports;
};

}  // namespace wireup::prov
