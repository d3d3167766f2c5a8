// Pure: when a peer counts as gone after wireup, decided once per peer.
//
// A process that dies has its kernel close every connection it had: each of its established
// lanes gets a DREQ, and this rank a DISCONNECTED per lane, all within milliseconds. The
// transport wants one answer per peer ("rank 7 is gone, 4 lanes with it"), not one per lane,
// and never twice. Other sources say the same of a whole peer at once: the launcher
// (wireup_fail_peer: PMIx termination events, pidfds of same-node peers) and the liveness
// service (a node gone silent). Whichever comes first decides; the rest are absorbed.
//
// The rule for DISCONNECTED: a peer is down when no established lane of it is left that has not
// dropped. A peer that drops one lane of several and keeps the others is alive (its transport
// closed that lane, or the DREQs are still on their way): nothing is declared for it yet.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace wireup {

enum class PeerDownCause : uint8_t {
  disconnected,  // every established lane of the peer got its DISCONNECTED (its process died)
  reported,      // the transport's launcher said so (Engine::fail_peer)
  silent,        // the liveness service: no heartbeat within the deadline, confirmed
};
const char* to_string(PeerDownCause c);

struct PeerDown {
  uint32_t peer = 0;
  uint32_t lanes = 0;  // the established lanes of the peer it took with it
  PeerDownCause cause = PeerDownCause::disconnected;
};

class PeerDownTracker {
 public:
  enum class State : uint8_t { up, degraded, down };  // degraded: some lanes dropped, not all

  // A lane of `peer` got the peer's DISCONNECTED; `still_up` established lanes of it have not.
  // Returns the peer's one PeerDown when this was its last lane.
  std::optional<PeerDown> lane_dropped(uint32_t peer, uint32_t still_up);
  // The peer is gone as a whole (`cause` reported or silent); `established` = its established
  // lanes. Returns its one PeerDown unless it was declared already.
  std::optional<PeerDown> declare(uint32_t peer, PeerDownCause cause, uint32_t established);
  State state(uint32_t peer) const;
  size_t down() const { return down_; }

 private:
  struct Entry {
    State state = State::up;
    uint32_t dropped = 0;
  };
  std::unordered_map<uint32_t, Entry> peers_;  // only peers that lost a lane or were declared
  size_t down_ = 0;
};

}  // namespace wireup
