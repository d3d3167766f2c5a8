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

bool Engine::owes_farewell(const Pair& p, const cm::Failure& f, PeerError::Cause cause) const {
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

Nanos Engine::farewell_until() const { return life_.farewells > 0 ? life_.farewell_until : Nanos{0}; }

void Engine::say_farewell(Pair& p) {
  auto* f = p.as<Failed>();
  if (f == nullptr || !channels_.setup || f->farewell_pending) return;
  f->farewell_pending = true;
  f->farewell_tries = 0;
  ++life_.farewells;
  ++stats_[Counter::abandons_sent];
  send_farewell(p);
}

void Engine::send_farewell(Pair& p) {
  auto* f = p.as<Failed>();
  if (f == nullptr || !f->farewell_pending || !channels_.setup) return;
  const uint64_t nonce = fixed_.wire.fresh_nonce();
  cm::Spec spec = spec_for(p, nonce);
  if (spec.remote.empty()) return end_farewell(p);  // no address (cannot happen for a planned pair)
  (void)spec.private_data.assign(fixed_.wire.abandon(p.peer, p.lane, p.attempt, nonce));
  ++f->farewell_tries;
  life_.farewell_until = now() + kFarewellBound;
  auto c = cm::Connection::start(prov_, *channels_.setup->channel, spec, this);
  if (!c) {
    WIREUP_LOG(info, "rank %u: rank %u lane %u: the abandon notice could not start: %s", opt().rank, p.peer, p.lane,
               c.error().message().c_str());
    return end_farewell(p);
  }
  f->farewell = std::move(c).value();
}

void Engine::end_farewell(Pair& p) {
  auto* f = p.as<Failed>();
  if (f == nullptr || !f->farewell_pending) return;
  retire(std::move(f->farewell));
  f->farewell_pending = false;
  --life_.farewells;
}

void Engine::after_farewell(Pair& p) {
  auto* f = p.as<Failed>();
  if (f == nullptr || !f->farewell) return;
  cm::Connection& c = *f->farewell;
  // No QP, so no QP window; but one QP-less request per host on the wire (NoticeLines).
  if (c.state() == cm::State::route_resolved) return ready_to_notify(p);
  if (c.state() != cm::State::failed) return;
  const cm::Failure answer = failure_of(c);
  retire(std::move(f->farewell));
  if (peer_reject_code(answer) == RejectCode::abandon_noted) return end_farewell(p);
  // A notice that did not reach the peer's engine, or found it not ready, is sent again, like a
  // connect, within the pair's attempt budget (notice_undelivered says which answers those are).
  if (notice_undelivered(answer) && f->farewell_tries < opt().max_attempts) {
    const Nanos at = retries_.schedule(RetryScheduler::Queue::farewell, pairs_.index(p), f->farewell_tries, now());
    life_.farewell_until = std::max(life_.farewell_until, at + kFarewellBound);
    return;
  }
  WIREUP_LOG(info, "rank %u: rank %u lane %u: the abandon notice was not taken: %s", opt().rank, p.peer, p.lane,
             answer.describe().c_str());
  end_farewell(p);
}

int Engine::start_due_farewells() {
  if (retries_.next_due(RetryScheduler::Queue::farewell) == Nanos::max()) return 0;
  int work = 0;
  while (auto i = retries_.pop_due(RetryScheduler::Queue::farewell, now())) {
    Pair* p = pairs_.at(*i);
    auto* f = p ? p->as<Failed>() : nullptr;
    if (f == nullptr || !f->farewell_pending || f->farewell) continue;
    send_farewell(*p);
    ++work;
  }
  return work;
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
