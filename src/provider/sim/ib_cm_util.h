// Small helpers the IB CM model's two files share (ib_cm.cc, ib_cm_timers.cc).
#pragma once

#include "provider/sim/cm_id.h"
#include "provider/sim/core.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim::ibcm {


// IB CM reject reasons the model itself produces (IBTA 12.6.7.2).
inline constexpr int kRejTimeout = 1;          // IB_CM_REJ_TIMEOUT: an active id destroyed mid-connect
inline constexpr int kRejStaleConn = reject_reason::stale_conn;

inline bool accepted_state(IbState s) {
  return s == IbState::rep_sent || s == IbState::mra_rep_rcvd || s == IbState::established ||
         s == IbState::dreq_sent || s == IbState::dreq_rcvd || s == IbState::timewait;
}

inline EventData event(CmEventType type, int status = 0) {
  EventData ev;
  ev.type = type;
  ev.status = status;
  return ev;
}

inline Msg base_msg(const SimCmId& id, CmMsg type) {
  Msg m;
  m.type = type;
  m.src_node = id.node;
  m.dst_node = id.remote_node;
  m.src_ip = id.local_ip;
  m.src_port = id.local_port;
  m.dst_ip = id.remote_ip;
  m.ps = id.ps;
  m.src_comm = id.self;
  m.dst_comm = id.remote_comm;
  return m;
}

// cm_insert_remote_qpn's key: the sender's QPN on its CA. A sim device has one address, so
// the sender's address stands for its CA GUID.
inline uint64_t remote_qpn_key(uint32_t sender_ip, uint32_t qpn) { return uint64_t{sender_ip} << 32 | qpn; }

inline uint32_t port_mtu(const SimCmId& id) {
  SimDevice* d = id.bound_device();
  return d ? d->spec().active_mtu : 0;
}


}  // namespace wireup::prov::sim::ibcm
