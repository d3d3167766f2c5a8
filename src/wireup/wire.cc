#include "wireup/wire.h"

#include <algorithm>

namespace wireup {

Result<Wire> Wire::create(uint64_t job_key, uint32_t self, uint64_t nonce_base) {
  auto key = MacKey::derive(job_key);
  if (!key) return key.error();
  return Wire(*key, self, nonce_base);
}

WireHeader Wire::header(WireKind kind, uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const {
  WireHeader h;
  h.kind = kind;
  h.src_rank = self_;
  h.dst_rank = peer;
  h.lane = lane;
  h.attempt = attempt;
  h.nonce = nonce;
  return h;
}

WireBytes Wire::seal(const WireHeader& h) const {
  WireBytes b = encode(h);
  const auto t = key_.tag(std::span<const uint8_t>(b.data(), kWireAuthenticated));
  std::copy(t.begin(), t.end(), b.begin() + kWireAuthenticated);
  return b;
}

Result<WireHeader> Wire::open(std::span<const uint8_t> bytes) const {
  auto h = decode(bytes);
  if (!h) return h;
  const auto tag = bytes.subspan(kWireAuthenticated).first<kMacTagSize>();
  if (std::all_of(tag.begin(), tag.end(), [](uint8_t b) { return b == 0; }))
    return Error::make(ErrorCode::protocol_error, "authenticate private data",
                       "it carries no tag (a refusal of a request that did not authenticate)");
  if (!key_.verify(bytes.first(kWireAuthenticated), tag))
    return Error::make(ErrorCode::protocol_error, "authenticate private data",
                       "the tag does not verify under this job's key (another job's key, or altered in flight)");
  return h;
}

Result<WireHeader> Wire::open_answer(std::span<const uint8_t> bytes, uint64_t nonce) const {
  auto h = open(bytes);
  if (h && h->nonce != nonce)
    return Error::make(ErrorCode::protocol_error, "authenticate private data",
                       "it answers another request (an earlier attempt's answer, replayed or late)");
  return h;
}

WireBytes Wire::request(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const {
  return seal(header(WireKind::request, peer, lane, attempt, nonce));
}

WireBytes Wire::accept(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t req_nonce) const {
  return seal(header(WireKind::accept, peer, lane, attempt, req_nonce));
}

WireBytes Wire::reject(RejectCode code, uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t req_nonce) const {
  WireHeader h = header(WireKind::reject, peer, lane, attempt, req_nonce);
  h.reason = code;
  return seal(h);
}

WireBytes Wire::refuse_stranger(RejectCode code) const {
  WireHeader h;
  h.kind = WireKind::reject;
  h.reason = code;
  h.src_rank = self_;
  return encode(h);  // tag left zero: see the header
}

WireBytes Wire::rtu_lost(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const {
  return seal(header(WireKind::rtu_lost, peer, lane, attempt, nonce));
}

WireBytes Wire::abandon(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const {
  return seal(header(WireKind::abandon, peer, lane, attempt, nonce));
}

uint64_t nonce_of(std::span<const uint8_t> bytes) {
  auto h = decode(bytes);
  return h ? h->nonce : 0;
}

}  // namespace wireup
