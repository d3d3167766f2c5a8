// The RTU gap, both sides of it.
//
// The IB CM's last message, the RTU, is not acknowledged: the active side is established as
// soon as it has sent it. If every RTU is lost, and with it every REP retransmission that
// would make the active CM send it again, the passive side's REP retries run out and it gets
// UNREACHABLE; its CM tells the active side nothing (cm.c cm_process_send_error: on
// IB_CM_REP_ERROR the id goes idle, no REJ; the sim does the same). Left alone, the active
// side reports the lane connected and the passive side reports it failed, and the transport's
// first send on it hangs.
//
// The passive side cannot tell a lost REP (the active side retries with a newer attempt) from
// a lost RTU (it never will), so it asks: a REQ without a QP to the active rank's listener,
// kind rtu_lost, naming the lane and the attempt. The active side always refuses it (there
// is no QP to connect) and says in the RejectCode what it did:
//   repair_accepted  it was established with that attempt and still wiring up: it tore the
//                    lane down and reconnects with a newer attempt (one of its max_attempts,
//                    so repairs cannot loop); the passive side waits for that attempt;
//   repair_pending   not established with that attempt: a newer one is coming anyway;
//   repair_refused   it cannot reconnect (wireup ended, the transport took the QP, or no
//                    attempts left) and reported the loss on its side (a SteadyEvent, or a
//                    PeerError); the passive side reports the pair failed too.
// A notice that cannot be delivered is retried like a connect (max_attempts tries with
// backoff); REJ 8 after all of them means the active rank's listener is gone (its wireup
// ended and its rtu_linger ran out), and the passive side says so in its PeerError.
#include <cerrno>

#include "common/log.h"
#include "wireup/engine.h"

namespace wireup {

namespace {
std::string pair_name(uint32_t peer, uint32_t lane, uint32_t attempt) {
  return "rank " + std::to_string(peer) + " lane " + std::to_string(lane) + " attempt " + std::to_string(attempt);
}
}  // namespace

cm::Failure Engine::rtu_lost_failure(const Slot& s, int status, const std::string& why) const {
  cm::Failure f;
  f.kind = cm::FailKind::rtu_lost;
  f.status = status;
  f.error = Error::make(ErrorCode::connect_error, "RTU", why);
  f.error.peer = "rank " + std::to_string(s.peer) + " lane " + std::to_string(s.lane);
  return f;
}

// --- the passive side: the notice ----------------------------------------------------------

void Engine::start_notice(Slot& s) {
  if (!setup_) return;
  const uint64_t k = key(s.peer, s.lane);
  Notice& n = notices_[k];
  if (n.conn) graveyard_.push_back(std::move(n.conn));
  if (n.attempt != s.attempt) n = Notice{};  // a newer attempt's RTU: a fresh budget
  n.attempt = s.attempt;
  n.due = cm::kUnset;
  if (n.tries == 0)
    WIREUP_LOG(warn, "rank %u: %s: our REP retries ran out (every REP or every RTU lost); asking the peer",
               opt_.rank, pair_name(s.peer, s.lane, s.attempt).c_str());
  ++n.tries;
  ++stats_.rtu_lost_sent;
  cm::Spec spec = spec_for(s);
  WireHeader h;
  h.kind = WireKind::rtu_lost;
  h.job_key = opt_.job_key;
  h.src_rank = opt_.rank;
  h.dst_rank = s.peer;
  h.lane = s.lane;
  h.attempt = n.attempt;
  auto bytes = encode(h);
  spec.private_data.assign(bytes.begin(), bytes.end());
  auto c = cm::Connection::start(prov_, *setup_, std::move(spec));
  if (!c) return settle_notice(s, cm::Failure{cm::FailKind::local_error, 0, {}, c.error()});
  n.conn = std::move(c).value();
  n.conn->owner = &s;
}

void Engine::after_notice(Slot& s) {
  auto it = notices_.find(key(s.peer, s.lane));
  if (it == notices_.end() || !it->second.conn) return;
  cm::Connection& c = *it->second.conn;
  // No QP, so no QP window: the notice goes out as soon as its route is known.
  if (c.state() == cm::State::route_resolved) (void)c.notify();
  if (c.state() != cm::State::failed) return;
  cm::Failure f = c.failure();
  graveyard_.push_back(std::move(it->second.conn));
  settle_notice(s, f);
}

void Engine::settle_notice(Slot& s, const cm::Failure& f) {
  const uint64_t k = key(s.peer, s.lane);
  Notice& n = notices_.at(k);
  // Copied: drop_notice() below frees `n`, and the messages after it still name the attempt.
  const uint32_t attempt = n.attempt;
  const std::string pair = pair_name(s.peer, s.lane, attempt);
  if (f.kind == cm::FailKind::rejected && f.status == prov::reject_reason::consumer) {
    auto h = decode(f.private_data);
    if (h && h->kind == WireKind::reject) {
      switch (h->reason) {
        case RejectCode::repair_accepted:
          WIREUP_LOG(info, "rank %u: %s: the peer never got our REP's answer through (RTU lost); it reconnects",
                     opt_.rank, pair.c_str());
          // Reported only if the newer attempt never comes before the deadline.
          passive_failures_[k] = rtu_lost_failure(
              s, f.status, "our REP retries for attempt " + std::to_string(attempt) +
                               " ran out though the peer was established (its RTUs were lost); it tore the lane "
                               "down to reconnect, and no newer attempt arrived");
          drop_notice(k);
          return;
        case RejectCode::repair_pending:
          drop_notice(k);  // the peer retries on its own: wait for it as for any lost REP
          return;
        case RejectCode::repair_refused:
          drop_notice(k);
          passive_failures_.erase(k);
          return give_up(s, rtu_lost_failure(s, f.status,
                                             "the peer's RTU for attempt " + std::to_string(attempt) +
                                                 " never arrived; the peer had the lane established and could not "
                                                 "reconnect it (it reported the loss on its side)"));
        case RejectCode::local_failure:
        case RejectCode::shutting_down:
          break;  // transient on the peer's side: ask again
        default:
          // An answer that is not about repairs (a peer that does not know the notice): final.
          drop_notice(k);
          passive_failures_.erase(k);
          return give_up(s, rtu_lost_failure(s, f.status,
                                             "our REP retries for attempt " + std::to_string(attempt) +
                                                 " ran out and the peer refused the RTU-lost notice (" +
                                                 to_string(h->reason) + "): it may hold the lane as connected"));
      }
    }
  }
  // Not answered: REJ 8 (no listener), 10 (the CM's stale-connection check), someone else's
  // REJ, UNREACHABLE, ADDR/ROUTE/CONNECT_ERROR. Ask again within the budget.
  n.last = f;
  if (n.tries < opt_.max_attempts) {
    n.due = now() + backoff(n.tries);
    return;
  }
  drop_notice(k);
  passive_failures_.erase(k);
  const bool gone = f.kind == cm::FailKind::rejected && f.status == prov::reject_reason::no_listener;
  give_up(s, rtu_lost_failure(
                 s, f.status,
                 gone ? "the peer's RTU for attempt " + std::to_string(attempt) +
                            " never arrived and the peer's listener is gone (it finished its wireup): it may hold "
                            "the lane as connected"
                      : "the peer's RTU for attempt " + std::to_string(attempt) +
                            " never arrived and the RTU-lost notice could not be delivered (" + f.describe() +
                            "): the peer may hold the lane as connected"));
}

int Engine::start_notices() {
  const Nanos t = now();
  std::vector<uint64_t> due;
  for (auto& [k, n] : notices_)
    if (!n.conn && n.due != cm::kUnset && n.due <= t) due.push_back(k);
  for (uint64_t k : due) {
    Slot& s = slots_.at(k);
    if (s.state != SlotState::waiting) {
      drop_notice(k);
      continue;
    }
    start_notice(s);
  }
  return static_cast<int>(due.size());
}

void Engine::drop_notice(uint64_t k) {
  auto it = notices_.find(k);
  if (it == notices_.end()) return;
  if (it->second.conn) graveyard_.push_back(std::move(it->second.conn));
  notices_.erase(it);
}

// --- the active side: the answer ------------------------------------------------------------

void Engine::answer_notice(prov::CmEvent& ev, RejectCode code, const Slot& s, const std::string& why) {
  stats_.rejects_sent[to_string(code)]++;
  WIREUP_LOG(info, "rank %u: RTU-lost notice for %s: %s (%s)", opt_.rank, pair_name(s.peer, s.lane, s.attempt).c_str(),
             to_string(code), why.c_str());
  WireHeader h;
  h.kind = WireKind::reject;
  h.reason = code;
  h.src_rank = opt_.rank;
  h.dst_rank = s.peer;
  h.lane = s.lane;
  h.attempt = s.attempt;
  if (Status st = ev.id->reject(encode(h)); !st) WIREUP_LOG(warn, "rank %u: %s", opt_.rank, st.message().c_str());
}

void Engine::tear_down_established(Slot& s) {
  if (s.result < results_.size()) {
    results_.erase(results_.begin() + s.result);
    for (auto& [k, o] : slots_)
      if (o.result != UINT32_MAX && o.result > s.result) --o.result;
  }
  s.result = UINT32_MAX;
  s.qp.reset();  // never handed over: nothing of the transport's is on it
  s.id.reset();  // its CM sends a DREQ to the peer's idle id, which the peer's CM answers
  s.disconnected = false;
  s.state = SlotState::waiting;
  ++open_pairs_;
}

void Engine::handle_rtu_lost(prov::CmEvent& ev, const WireHeader& h) {
  ++stats_.rtu_lost_received;
  Slot& s = slots_.at(key(h.src_rank, h.lane));
  if (s.state == SlotState::failed)
    return answer_notice(ev, RejectCode::repair_refused, s, "this side gave up on the pair (see its errors)");
  if (s.state == SlotState::in_flight && s.attempt == h.attempt && s.conn) {
    // Still connecting with the attempt the peer has given up on: a REP that arrives late
    // would make us established against a CM id that is gone. Drop it and retry now.
    release_windows(s);
    graveyard_.push_back(std::move(s.conn));
    s.state = SlotState::waiting;
    if (s.attempt < opt_.max_attempts) {
      ++stats_.retries;
      retry_at_.emplace(now() + backoff(s.attempt), key(s.peer, s.lane));
      return answer_notice(ev, RejectCode::repair_pending, s, "attempt abandoned, a newer one follows");
    }
    answer_notice(ev, RejectCode::repair_refused, s, "no attempts left");
    return give_up(s, rtu_lost_failure(s, 0,
                                       "the peer's REP retries for attempt " + std::to_string(s.attempt) +
                                           " ran out before we connected, and no attempts are left"));
  }
  if (s.state != SlotState::established || s.attempt != h.attempt)
    return answer_notice(ev, RejectCode::repair_pending, s,
                         "not established with attempt " + std::to_string(h.attempt) + ": a newer attempt follows");
  // Established with the attempt whose RTU the peer never got: no connection is behind our QP.
  const bool wiring_up = open_pairs_ > 0;
  if (wiring_up && s.qp && s.attempt < opt_.max_attempts) {
    WIREUP_LOG(warn, "rank %u: %s: the peer never got our RTU; reconnecting", opt_.rank,
               pair_name(s.peer, s.lane, s.attempt).c_str());
    tear_down_established(s);
    ++stats_.repairs;
    ++stats_.retries;
    retry_at_.emplace(now() + backoff(s.attempt), key(s.peer, s.lane));
    return answer_notice(ev, RejectCode::repair_accepted, s, "torn down, reconnecting");
  }
  ++stats_.repairs_refused;
  if (wiring_up && s.qp) {
    // Not handed over yet, but the pair's attempts are used up: it fails here as well.
    answer_notice(ev, RejectCode::repair_refused, s, "no attempts left");
    tear_down_established(s);
    return give_up(s, rtu_lost_failure(s, 0,
                                       "the peer never got our RTU for attempt " + std::to_string(s.attempt) +
                                           " and no attempts are left"));
  }
  // The lane is the transport's already (wireup ended, or it took the QP): tell it.
  WIREUP_LOG(warn, "rank %u: %s: the peer never got our RTU and the lane was already handed over: reported as "
             "disconnected", opt_.rank, pair_name(s.peer, s.lane, s.attempt).c_str());
  answer_notice(ev, RejectCode::repair_refused, s, "handed over: reported to the transport");
  if (!s.disconnected && s.id) {
    s.disconnected = true;
    ++stats_.disconnects;
    (void)s.id->disconnect();  // the peer's CM answers our DREQ: the CM side ends cleanly
  }
  if (steady_cb_) steady_cb_(SteadyEvent{s.peer, s.lane, prov::CmEventType::disconnected, -ECONNRESET, true});
}

}  // namespace wireup
