// Builders for every kind of the library's private data, so that no part of the engine fills
// a WireHeader by hand, and the one place messages are sealed and opened (mac.h). One Wire
// per engine: it knows the job's key, this rank, and where its request nonces come from.
#pragma once

#include <cstdint>
#include <span>

#include "wireup/mac.h"
#include "wireup/private_data.h"

namespace wireup {

class Wire {
 public:
  // Derives the MAC key from the job key; nonces start at `nonce_base` (random_nonce_base()
  // for an engine; tests pick one to replay exact messages).
  static Result<Wire> create(uint64_t job_key, uint32_t self, uint64_t nonce_base);

  // A nonce for the next request this engine sends (REQ, rtu_lost, abandon): never reused.
  uint64_t fresh_nonce() { return next_nonce_++; }

  // REQ of (peer, lane) for `attempt` (active side).
  WireBytes request(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const;
  // REP answering the REQ whose nonce is `req_nonce` (passive side).
  WireBytes accept(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t req_nonce) const;
  // REJ about a pair this rank knows, answering (or, on the active side, about) the request
  // whose nonce is `req_nonce`: the peer can trust the reason and its PeerError names it.
  WireBytes reject(RejectCode code, uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t req_nonce) const;
  // REJ to a request that did not authenticate (or did not decode): the code and our rank
  // only, unauthenticated (the sender may not hold our key), so that a stranger learns
  // nothing else and a peer does not take it as final.
  WireBytes refuse_stranger(RejectCode code) const;
  // The QP-less REQ of the RTU repair (see repair.h).
  WireBytes rtu_lost(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const;
  // The QP-less REQ that tells the passive side the active side gave up (WireKind::abandon).
  WireBytes abandon(uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const;

  // Any header, sealed under the job's key (tests forge and replay with it).
  WireBytes seal(const WireHeader& h) const;
  // Decodes and checks the tag: an error names what was wrong (decode()'s reasons, or a tag
  // that does not verify).
  Result<WireHeader> open(std::span<const uint8_t> bytes) const;
  // open(), and the message must answer the request whose nonce is `nonce`.
  Result<WireHeader> open_answer(std::span<const uint8_t> bytes, uint64_t nonce) const;

  uint32_t self() const { return self_; }

 private:
  Wire(MacKey key, uint32_t self, uint64_t nonce_base) : key_(key), self_(self), next_nonce_(nonce_base) {}
  WireHeader header(WireKind kind, uint32_t peer, uint16_t lane, uint32_t attempt, uint64_t nonce) const;

  MacKey key_;
  uint32_t self_;
  uint64_t next_nonce_;
};

// The nonce a message carries (0 if it does not decode): what an answer to it must echo.
uint64_t nonce_of(std::span<const uint8_t> bytes);

}  // namespace wireup
