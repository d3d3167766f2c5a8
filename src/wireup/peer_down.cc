#include "wireup/peer_down.h"

#include <algorithm>

namespace wireup {

const char* to_string(PeerDownCause c) {
  switch (c) {
    case PeerDownCause::disconnected: return "disconnected";
    case PeerDownCause::reported: return "reported";
    case PeerDownCause::silent: return "silent";
  }
  return "unknown";
}

std::optional<PeerDown> PeerDownTracker::lane_dropped(uint32_t peer, uint32_t still_up) {
  Entry& e = peers_[peer];
  if (e.state == State::down) return std::nullopt;
  ++e.dropped;
  if (still_up > 0) {
    e.state = State::degraded;
    return std::nullopt;
  }
  e.state = State::down;
  ++down_;
  return PeerDown{peer, e.dropped, PeerDownCause::disconnected};
}

std::optional<PeerDown> PeerDownTracker::declare(uint32_t peer, PeerDownCause cause, uint32_t established) {
  Entry& e = peers_[peer];
  if (e.state == State::down) return std::nullopt;
  e.state = State::down;
  ++down_;
  return PeerDown{peer, std::max(established, e.dropped), cause};
}

PeerDownTracker::State PeerDownTracker::state(uint32_t peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? State::up : it->second.state;
}

}  // namespace wireup
