// Engine::fail_peer: a peer the transport knows to be dead (its launcher said so, e.g. a
// PMIx process-termination event) is given up at once. Without it the engine learns of the
// death only from the CM: REJ 8 from a dead listener is retried as transient, an unanswered
// REQ waits out its CM retries (~6 s each on rxe), a passive pair waits for the deadline.
#include "wireup/engine.h"

namespace wireup {

size_t Engine::fail_peer(uint32_t peer, const std::string& why) {
  size_t given_up = 0;
  if (!life_.started) return 0;  // the pairs are planned by start()
  for (Pair& p : pairs_) {
    if (p.peer != peer) continue;
    // Only what is still on its way: an established, failed or idle (on demand: disconnected)
    // lane owes no outcome.
    if (!p.open()) continue;
    // A retry queued or a QP grant awaited for this pair is skipped when popped: both check
    // that the pair still waits or connects (start_connects, grant_qps).
    cm::Failure f;
    f.kind = cm::FailKind::disconnected;
    f.error = Error::make(ErrorCode::unreachable, "fail_peer", why);
    f.error.peer = "rank " + std::to_string(peer);
    stats_.failure(f.kind);
    give_up(p, f, PeerError::Cause::peer_reported_dead);
    ++given_up;
  }
  return given_up;  // the next progress() ends the setup channel if that settled the last pair
}

}  // namespace wireup
