// Helpers the simulated id's two files share (cm_id.cc, cm_id_qp.cc).
#pragma once

#include <cstdint>
#include <string>

#include "provider/sim/cm_id.h"

namespace wireup::prov::sim {

inline std::string state_of(const SimCmId& id) {
  return std::string("id is ") + to_string(id.cma) + " (IB CM " + to_string(id.ib) + ")";
}

// enum ibv_mtu of a byte count: 256 -> 1 ... 4096 -> 5
inline uint32_t mtu_enum(uint32_t bytes) {
  uint32_t e = 1;
  while (e < 5 && (256u << e) <= bytes) ++e;
  return e;
}

inline bool knows_peer(IbState s) {
  switch (s) {
    case IbState::req_rcvd:
    case IbState::mra_req_sent:
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
    case IbState::rep_rcvd:
    case IbState::mra_rep_sent:
    case IbState::established:
      return true;
    default:
      return false;
  }
}

// RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d
inline Gid ipv4_gid(uint32_t ip) {
  Gid g;
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = static_cast<uint8_t>(ip >> 24);
  g.raw[13] = static_cast<uint8_t>(ip >> 16);
  g.raw[14] = static_cast<uint8_t>(ip >> 8);
  g.raw[15] = static_cast<uint8_t>(ip);
  return g;
}

}  // namespace wireup::prov::sim
