// ECE (Enhanced Connection Establishment) policy and negotiation, as pure functions.
//
// The flow for application-owned QPs, as mlx5 answers the ECE verbs (rdma-core
// providers/mlx5/verbs.c: ibv_set_ece only stores options, the firmware decides at the next
// modify, ibv_query_ece after it says what was taken) and as librdmacm drives them for the
// QPs it owns (librdmacm/cma.c: init_ece, ucma_process_conn_resp_ece):
//   active:  ibv_query_ece(qp) -> offer = device options & wanted -> rdma_set_local_ece ->
//            REQ ... REP -> rdma_get_remote_ece = what the passive side's firmware took ->
//            ibv_set_ece(that) -> INIT->RTR -> ibv_query_ece = what ours took ->
//            required bits present? RTS + establish : reject with reason 35
//   passive: rdma_get_remote_ece (the offer) & wanted (vendor must match) -> ibv_set_ece ->
//            INIT->RTR -> ibv_query_ece = what the firmware took -> required bits present?
//            rdma_set_local_ece(taken) + accept : rdma_reject_ece (reason 35)
// Nothing is set when there are no options to ask for. EOPNOTSUPP from query or set means
// "no ECE here" (rxe has no ECE verbs; an mlx5 without the capability refuses set): `auto`
// carries on without, `on` warns, `required` refuses.
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
  uint32_t accepted = 0;   // before RTR: options to ask the firmware for; after confirm: what it took
  Outcome outcome = Outcome::disabled;
  std::string why;         // a reject's reason, for logs and per-peer errors (empty otherwise)
};

// Passive side, on CONNECT_REQUEST: the peer's offer (vendor 0 = none) against our device
// (its vendor; nullopt = no ECE) and policy. `accepted` is what to ask the firmware for: the
// offer masked by `wanted`, not by the device's options, since the firmware decides at RTR.
Decision on_request(const Policy& p, const std::optional<prov::Ece>& device, const prov::Ece& offer);

// Active side, on CONNECT_RESPONSE: what the passive side accepted (vendor 0 = none) against
// what we offered (nullopt = nothing).
Decision on_reply(const Policy& p, const std::optional<prov::Ece>& offered, const prov::Ece& reply);

// Either side, after INIT->RTR: the firmware took `taken` of the `asked` options set before
// it (ibv_query_ece). `accepted` = taken; the required bits are checked against it.
Decision on_taken(const Policy& p, uint32_t asked, uint32_t taken);

}  // namespace wireup::ece
