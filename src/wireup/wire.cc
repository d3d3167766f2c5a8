#include "wireup/wire.h"

namespace wireup {

WireHeader Wire::header(WireKind kind, uint32_t peer, uint16_t lane, uint32_t attempt) const {
  WireHeader h;
  h.kind = kind;
  h.job_key = job_key_;
  h.src_rank = self_;
  h.dst_rank = peer;
  h.lane = lane;
  h.attempt = attempt;
  return h;
}

WireBytes Wire::request(uint32_t peer, uint16_t lane, uint32_t attempt) const {
  return encode(header(WireKind::request, peer, lane, attempt));
}

WireBytes Wire::accept(uint32_t peer, uint16_t lane, uint32_t attempt) const {
  return encode(header(WireKind::accept, peer, lane, attempt));
}

WireBytes Wire::reject(RejectCode code, uint32_t peer, uint16_t lane, uint32_t attempt) const {
  WireHeader h = header(WireKind::reject, peer, lane, attempt);
  h.job_key = 0;
  h.reason = code;
  return encode(h);
}

WireBytes Wire::refuse_stranger(RejectCode code) const {
  WireHeader h;
  h.kind = WireKind::reject;
  h.reason = code;
  h.src_rank = self_;
  return encode(h);
}

WireBytes Wire::rtu_lost(uint32_t peer, uint16_t lane, uint32_t attempt) const {
  return encode(header(WireKind::rtu_lost, peer, lane, attempt));
}

WireBytes Wire::abandon(uint32_t peer, uint16_t lane, uint32_t attempt) const {
  return encode(header(WireKind::abandon, peer, lane, attempt));
}

}  // namespace wireup
