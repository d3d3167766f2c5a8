// Engine::fail_peer: a peer the transport knows to be dead (its launcher said so, e.g. a
// PMIx process-termination event) is given up at once. Without it the engine learns of the
// death only from the CM: REJ 8 from a dead listener is retried as transient, an unanswered
// REQ waits out its CM retries (~6 s each on rxe), a passive pair waits for the deadline.
#include "common/log.h"
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
  // A peer reported dead after some of its lanes were established is gone for the transport
  // too: one peer-down event, unless its DREQs (or the liveness service) told us first.
  if (established_lanes(peer, false) > 0) declare_down(peer, PeerDownCause::reported);
  return given_up;  // the next progress() ends the setup channel if that settled the last pair
}

bool Engine::declare_down(uint32_t peer, PeerDownCause cause) {
  if (!life_.started || peer == opt().rank) return false;
  auto d = downs_.declare(peer, cause, established_lanes(peer, false));
  if (!d) return false;
  ++stats_[Counter::peers_down];
  downs_due_.push_back(*d);  // fail_peer() and the liveness service run outside progress()
  return true;
}

uint32_t Engine::established_lanes(uint32_t peer, bool up_only) const {
  uint32_t n = 0;
  for (uint32_t lane = 0; lane < opt().lanes; ++lane) {
    const Pair* p = pairs_.find(peer, lane);
    const auto* e = p ? p->as<Established>() : nullptr;
    if (e != nullptr && (!up_only || !e->disconnected)) ++n;
  }
  return n;
}

void Engine::lane_dropped(const Pair& p) {
  // On demand a peer disconnects lanes it no longer needs (wireup_disconnect), and its DREQs
  // look exactly like a dying process's: the CM carries no reason. There only the launcher
  // and the liveness service can say a peer is gone.
  if (opt().on_demand) return;
  auto d = downs_.lane_dropped(p.peer, established_lanes(p.peer, true));
  if (!d) return;
  ++stats_[Counter::peers_down];
  WIREUP_LOG(info, "rank %u: rank %u is gone (%u lanes disconnected)", opt().rank, d->peer, d->lanes);
  report_down(*d);
}

void Engine::report_down(const PeerDown& d) { records_.report(d); }

int Engine::deliver_downs() {
  if (downs_due_.empty()) return 0;
  std::vector<PeerDown> due;
  due.swap(downs_due_);  // the callback may call fail_peer() again
  for (const PeerDown& d : due) {
    WIREUP_LOG(info, "rank %u: rank %u is gone (%s, %u lanes)", opt().rank, d.peer, to_string(d.cause), d.lanes);
    report_down(d);
  }
  return static_cast<int>(due.size());
}

}  // namespace wireup
