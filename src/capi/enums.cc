#include "capi/enums.h"

#include "wireup/peer_down.h"
#include "wireup/private_data.h"

namespace wireup::capi {

wireup_error_kind_t to_public(cm::FailKind k) {
  using K = cm::FailKind;
  switch (k) {
    case K::rejected: return WIREUP_ERROR_REJECTED;
    case K::unreachable: return WIREUP_ERROR_UNREACHABLE;
    case K::address_error: return WIREUP_ERROR_ADDRESS;
    case K::route_error: return WIREUP_ERROR_ROUTE;
    case K::connect_error: return WIREUP_ERROR_CONNECT;
    case K::device_removal: return WIREUP_ERROR_DEVICE_REMOVAL;
    case K::ece_rejected: return WIREUP_ERROR_ECE_REJECTED;
    case K::local_error: return WIREUP_ERROR_LOCAL;
    case K::disconnected: return WIREUP_ERROR_DISCONNECTED;
    case K::timed_out: return WIREUP_ERROR_TIMED_OUT;
    case K::rtu_lost: return WIREUP_ERROR_RTU_LOST;
    case K::bad_reply: return WIREUP_ERROR_BAD_REPLY;
    case K::abandoned: return WIREUP_ERROR_ABANDONED;
    case K::none: break;
  }
  // Every recorded failure has a kind; none reaching here is a bug, shown as a local one.
  return WIREUP_ERROR_LOCAL;
}

std::optional<cm::FailKind> from_public(wireup_error_kind_t k) {
  for (size_t i = 1; i < cm::kFailKinds; ++i) {
    const auto e = static_cast<cm::FailKind>(i);
    if (to_public(e) == k) return e;
  }
  return std::nullopt;
}

wireup_ece_outcome_t to_public(ece::Outcome o) {
  using O = ece::Outcome;
  switch (o) {
    case O::disabled: return WIREUP_ECE_DISABLED;
    case O::negotiated: return WIREUP_ECE_NEGOTIATED;
    case O::unsupported: return WIREUP_ECE_UNSUPPORTED;
    case O::vendor_mismatch: return WIREUP_ECE_VENDOR_MISMATCH;
    case O::rejected: return WIREUP_ECE_REJECTED;
  }
  return WIREUP_ECE_DISABLED;
}

std::optional<ece::Outcome> from_public(wireup_ece_outcome_t o) {
  for (size_t i = 0; i <= static_cast<size_t>(ece::Outcome::rejected); ++i) {
    const auto e = static_cast<ece::Outcome>(i);
    if (to_public(e) == o) return e;
  }
  return std::nullopt;
}

// Reject codes travel on the wire: their values are the protocol's and never change, so the
// public values are the same numbers.
static_assert(WIREUP_REJECT_CROSSED == static_cast<int>(kLastRejectCode), "a RejectCode without its public value");
static_assert(WIREUP_REJECT_WRONG_JOB_KEY == static_cast<int>(RejectCode::wrong_job_key) &&
                  WIREUP_REJECT_LOCAL_FAILURE == static_cast<int>(RejectCode::local_failure) &&
                  WIREUP_REJECT_REPAIR_REFUSED == static_cast<int>(RejectCode::repair_refused),
              "the public reject reasons are the wire's values");

wireup_reject_reason_t to_public(RejectCode c) { return static_cast<wireup_reject_reason_t>(c); }

wireup_reject_reason_t peer_reason_of(const PeerError& e) {
  if (e.peer_reason != RejectCode::none) return to_public(e.peer_reason);
  if (e.failure.kind == cm::FailKind::rejected && unknown_reject_reason(e.failure.private_data))
    return WIREUP_REJECT_UNKNOWN;
  return WIREUP_REJECT_NONE;
}

}  // namespace wireup::capi

extern "C" {

const char* wireup_error_kind_name(wireup_error_kind_t kind) {
  const auto k = wireup::capi::from_public(kind);
  return k ? wireup::cm::to_string(*k) : "unknown";
}

const char* wireup_ece_outcome_name(wireup_ece_outcome_t outcome) {
  const auto o = wireup::capi::from_public(outcome);
  return o ? wireup::ece::to_string(*o) : "unknown";
}

const char* wireup_reject_reason_name(wireup_reject_reason_t reason) {
  const int r = static_cast<int>(reason);
  if (r < WIREUP_REJECT_NONE || r > WIREUP_REJECT_CROSSED) return "unknown";
  return wireup::to_string(static_cast<wireup::RejectCode>(r));
}

const char* wireup_tally_group_name(wireup_tally_group_t group) {
  switch (group) {
    case WIREUP_TALLY_REJECTS_RECEIVED: return "rejects_received";
    case WIREUP_TALLY_REJECTS_SENT: return "rejects_sent";
    case WIREUP_TALLY_FAILURES: return "failures";
    case WIREUP_TALLY_ECE_OUTCOMES: return "ece_outcomes";
  }
  return "unknown";
}

const char* wireup_peer_down_cause_name(wireup_peer_down_cause_t cause) {
  switch (cause) {
    case WIREUP_PEER_DOWN_DISCONNECTED: return wireup::to_string(wireup::PeerDownCause::disconnected);
    case WIREUP_PEER_DOWN_REPORTED: return wireup::to_string(wireup::PeerDownCause::reported);
    case WIREUP_PEER_DOWN_SILENT: return wireup::to_string(wireup::PeerDownCause::silent);
    case WIREUP_PEER_DOWN_NONE: break;
  }
  return "unknown";
}

}  // extern "C"
