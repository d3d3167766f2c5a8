// Final answers told across (WireKind::abandon). When the active side of a pair gives up for
// a reason the passive side cannot see (a local failure before or instead of a REQ, a REP it
// refused, a peer's transient refusal to the last attempt), it sends a QP-less REQ saying so;
// the passive side settles the pair as failed at once (PeerError cause peer_gave_up) instead
// of waiting out its wireup timeout, and answers with a REJ abandon_noted. A peer that has not
// started yet, is not listening yet, did not answer, or whose CM refused the notice as stale
// (REJ 10: another QP-less REQ from our device still held there) is asked again within the
// pair's attempt budget; a notice that never gets through leaves it to its own deadline.
#include "common/log.h"
#include "wireup/engine.h"

namespace wireup {

bool Engine::owes_abandon(const Pair& p, const cm::Failure& f, PeerError::Cause cause) const {
  if (p.role != cm::Role::active || cause != PeerError::Cause::failed || !channels_.setup) return false;
  switch (f.kind) {
    case cm::FailKind::local_error:  // e.g. ECE `required` on a device without ECE, a factory failing
    case cm::FailKind::bad_reply:    // we refused its REP: it would wait for a newer attempt
      return true;
    case cm::FailKind::rejected:
      // Its own transient refusal (local_failure) to our last attempt: it waits for another.
      return peer_reject_code(f) == RejectCode::local_failure;
    default:
      // The network (UNREACHABLE, ADDR/ROUTE/CONNECT_ERROR: a notice would not get through
      // either), the peer's own final refusals (it settled itself), the deadline (it has one).
      return false;
  }
}

void Engine::announce_abandon(Pair& p) {
  if (p.state() != PairState::failed || !channels_.setup || !notices_.open_abandon(pairs_.index(p))) return;
  ++stats_[Counter::abandons_sent];
  send_abandon(p);
}

void Engine::send_abandon(Pair& p) {
  const uint64_t key = pairs_.index(p);
  if (p.state() != PairState::failed || notices_.find(key) == nullptr || !channels_.setup) return;
  const uint64_t nonce = fixed_.wire.fresh_nonce();
  cm::Spec spec = spec_for(p, nonce);
  if (spec.remote.empty()) return retire(notices_.close(key));  // no address (cannot happen for a planned pair)
  (void)spec.private_data.assign(fixed_.wire.abandon(p.peer, p.lane, p.attempt, nonce));
  retire(notices_.begin_try(key, now()));
  auto c = cm::Connection::start(prov_, *channels_.setup->channel, spec, this);
  if (!c) {
    // Tried again within the pair's attempt budget: a start refused while a rail's device goes
    // away (ENODEV from rdma_resolve_addr, seen in the VM with `rdma link delete rxe1` mid-
    // wireup) is taken over by a rail left once the removal is read, and the peer, told, does
    // not wait out its wireup timeout.
    const uint32_t tries = notices_.find(key)->tries;
    if (tries < opt().max_attempts) {
      WIREUP_LOG(info, "rank %u: rank %u lane %u: the abandon notice could not start (try %u): %s; trying again",
                 opt().rank, p.peer, p.lane, tries, c.error().message().c_str());
      return notices_.retry_at(key, retries_.due_after(tries, now()));
    }
    WIREUP_LOG(info, "rank %u: rank %u lane %u: the abandon notice could not start: %s", opt().rank, p.peer, p.lane,
               c.error().message().c_str());
    return retire(notices_.close(key));
  }
  notices_.hold(key, std::move(c).value());
}

void Engine::abandon_answered(Pair& p, const cm::Failure& answer) {
  const uint64_t key = pairs_.index(p);
  if (peer_reject_code(answer) == RejectCode::abandon_noted) return retire(notices_.close(key));
  // A notice that did not reach the peer's engine, or found it not ready, is sent again, like a
  // connect, within the pair's attempt budget (notice_undelivered says which answers those are).
  const uint32_t tries = notices_.find(key)->tries;
  if (notice_undelivered(answer) && tries < opt().max_attempts)
    return notices_.retry_at(key, retries_.due_after(tries, now()));
  WIREUP_LOG(info, "rank %u: rank %u lane %u: the abandon notice was not taken: %s", opt().rank, p.peer, p.lane,
             answer.describe().c_str());
  retire(notices_.close(key));
}

void Engine::handle_abandon(prov::CmEvent& ev, const GateVerdict& v) {
  ++stats_[Counter::abandons_received];
  Pair* p = pairs_.find(v.header.src_rank, v.header.lane);
  stats_.reject_sent(RejectCode::abandon_noted);
  if (Status st = ev.id->reject(fixed_.wire.reject(RejectCode::abandon_noted, v.header.src_rank, v.header.lane,
                                                   v.header.attempt, v.header.nonce));
      !st)
    WIREUP_LOG(warn, "rank %u: %s", opt().rank, st.message().c_str());
  if (p == nullptr) return;
  // Settled already, or about an older attempt than one we have seen (a late notice must not
  // end a newer connection).
  if (!p->open() || v.header.attempt < p->attempt) return;
  if (p->role != cm::Role::passive) return;  // on demand: not a lane the peer initiated
  cm::Failure f;
  f.kind = cm::FailKind::abandoned;
  f.error = Error::make(ErrorCode::connect_error, "abandon",
                        "the peer gave up on the pair after its attempt " + std::to_string(v.header.attempt) +
                            " and said so (its own error says why)");
  f.error.peer = "rank " + std::to_string(p->peer) + " lane " + std::to_string(p->lane);
  if (p->attempt < v.header.attempt) p->attempt = v.header.attempt;
  give_up(*p, f, PeerError::Cause::peer_gave_up);
}

}  // namespace wireup
