// ECE (Enhanced Connection Establishment) policy and negotiation, as pure functions.
//
// The flow for application-owned QPs (both sides):
//   active:  ibv_query_ece(qp) -> offer = device options & wanted -> rdma_set_local_ece ->
//            REQ ... REP -> rdma_get_remote_ece = what the passive side accepted ->
//            required bits present? ibv_set_ece(qp, accepted) : reject with reason 35
//   passive: rdma_get_remote_ece (the offer) + ibv_query_ece(qp) -> accepted = offer & ours
//            (vendor must match) -> required bits present? ibv_set_ece + rdma_set_local_ece +
//            accept : rdma_reject_ece (reason 35)
// Devices without ECE (rxe) answer EOPNOTSUPP to query/set: `auto` then carries on without.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "provider/types.h"

namespace wireup::ece {

enum class Mode : uint8_t {
  off,       // never touch ECE
  auto_,     // negotiate where the device supports it; quietly without where it does not
  on,        // negotiate; a device without ECE is reported (warning) but does not fail
  required,  // no connection unless ECE is negotiated with every required option bit
};
const char* to_string(Mode m);
std::optional<Mode> mode_from_string(const std::string& s);

struct Policy {
  Mode mode = Mode::auto_;
  uint32_t wanted = 0;    // options to offer; 0 = everything the device supports
  uint32_t required = 0;  // options without which the connection is refused
  uint32_t vendor_id = 0; // 0 = the device's own
};

enum class Outcome : uint8_t {
  disabled,         // mode off
  negotiated,       // both sides support ECE, same vendor, accepted options agreed
  unsupported,      // this device or the peer's has no ECE: connection goes on without
  vendor_mismatch,  // both offered, different vendors: options 0
  rejected,         // a required option was missing: reason 35
};
const char* to_string(Outcome o);

struct Report {
  prov::Ece local;        // what this side's device reported (vendor, options); 0 if none
  prov::Ece remote;       // what the peer sent in its REQ/REP
  uint32_t accepted = 0;  // options in force on the QP
  Outcome outcome = Outcome::disabled;
};

// What the active side puts in its REQ. nullopt: send no ECE (off, or device without ECE).
// `device` is ibv_query_ece's answer, nullopt when it said EOPNOTSUPP.
std::optional<prov::Ece> offer(const Policy& p, const std::optional<prov::Ece>& device);

struct Decision {
  bool reject = false;     // reject with reason 35
  uint32_t accepted = 0;   // options to set on the QP and send back in the REP
  Outcome outcome = Outcome::disabled;
  std::string why;         // a reject's reason, for logs and per-peer errors (empty otherwise)
};

// Passive side, on CONNECT_REQUEST: the peer's offer (vendor 0 = none) against our device.
Decision on_request(const Policy& p, const std::optional<prov::Ece>& device, const prov::Ece& offer);

// Active side, on CONNECT_RESPONSE: what the passive side accepted (vendor 0 = none) against
// what we offered (nullopt = nothing).
Decision on_reply(const Policy& p, const std::optional<prov::Ece>& offered, const prov::Ece& reply);

}  // namespace wireup::ece
