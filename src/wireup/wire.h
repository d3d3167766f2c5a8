// Builders for every kind of the library's private data, so that no part of the engine fills
// a WireHeader by hand. One Wire per engine: it knows the job and this rank.
#pragma once

#include <array>
#include <cstdint>

#include "wireup/private_data.h"

namespace wireup {

using WireBytes = std::array<uint8_t, kWireHeaderSize>;

class Wire {
 public:
  Wire(uint64_t job_key, uint32_t self) : job_key_(job_key), self_(self) {}

  // REQ of (peer, lane) for `attempt` (active side).
  WireBytes request(uint32_t peer, uint16_t lane, uint32_t attempt) const;
  // REP answering that REQ (passive side).
  WireBytes accept(uint32_t peer, uint16_t lane, uint32_t attempt) const;
  // REJ about a pair this rank knows (a local failure, an answer to a rtu_lost notice): the
  // peer's PeerError can name the reason. Carries no job key.
  WireBytes reject(RejectCode code, uint32_t peer, uint16_t lane, uint32_t attempt) const;
  // REJ to a request that is not from a planned peer of this job: the code and our rank only,
  // so that a stranger learns nothing else.
  WireBytes refuse_stranger(RejectCode code) const;
  // The QP-less REQ of the RTU repair (see repair.h).
  WireBytes rtu_lost(uint32_t peer, uint16_t lane, uint32_t attempt) const;
  // The QP-less REQ that tells the passive side the active side gave up (WireKind::abandon).
  WireBytes abandon(uint32_t peer, uint16_t lane, uint32_t attempt) const;

  uint64_t job_key() const { return job_key_; }
  uint32_t self() const { return self_; }

 private:
  WireHeader header(WireKind kind, uint32_t peer, uint16_t lane, uint32_t attempt) const;

  uint64_t job_key_;
  uint32_t self_;
};

}  // namespace wireup
