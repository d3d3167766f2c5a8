// The RTU repair (repair.h), carried out: the passive side's notice and its answer, the
// active side's answer to a notice. The decisions themselves are repair::answer/settle.
#include <cerrno>

#include "common/log.h"
#include "wireup/engine.h"
#include "wireup/repair.h"

namespace wireup {

namespace {
std::string pair_name(uint32_t peer, uint32_t lane, uint32_t attempt) {
  return "rank " + std::to_string(peer) + " lane " + std::to_string(lane) + " attempt " + std::to_string(attempt);
}
}  // namespace

cm::Failure Engine::rtu_lost_failure(const Pair& p, int status, const std::string& why) const {
  cm::Failure f;
  f.kind = cm::FailKind::rtu_lost;
  f.status = status;
  f.error = Error::make(ErrorCode::connect_error, "RTU", why);
  f.error.peer = "rank " + std::to_string(p.peer) + " lane " + std::to_string(p.lane);
  return f;
}

// --- the passive side: the notice ----------------------------------------------------------

void Engine::start_notice(Pair& p) {
  if (!channels_.setup) return;
  const uint64_t key = pairs_.index(p);
  const Waiting* w = p.as<Waiting>();
  if (w == nullptr && p.state() != PairState::probing) return;
  Notices::Notice& n = notices_.open_probe(key, p.attempt, w != nullptr ? w->last.get() : nullptr);
  if (n.tries == 0 && n.unreachable.after_peer_established)
    WIREUP_LOG(warn, "rank %u: %s: our side failed after the peer's RTU (%s); telling the peer", opt().rank,
               pair_name(p.peer, p.lane, n.attempt).c_str(), n.unreachable.error.message().c_str());
  else if (n.tries == 0 && n.unreachable.kind == cm::FailKind::device_removal)
    WIREUP_LOG(warn, "rank %u: %s: its rail's device went with our REP out (%s); asking the peer over a rail left",
               opt().rank, pair_name(p.peer, p.lane, n.attempt).c_str(), n.unreachable.error.message().c_str());
  else if (n.tries == 0)
    WIREUP_LOG(warn, "rank %u: %s: our REP retries ran out (every REP or every RTU lost); asking the peer",
               opt().rank, pair_name(p.peer, p.lane, n.attempt).c_str());
  retire(notices_.begin_try(key, now()));
  ++stats_[Counter::rtu_lost_sent];
  const uint64_t nonce = fixed_.wire.fresh_nonce();
  cm::Spec spec = spec_for(p, nonce);
  (void)spec.private_data.assign(fixed_.wire.rtu_lost(p.peer, p.lane, n.attempt, nonce));
  pairs_.become(p, Probing{});
  auto c = cm::Connection::start(prov_, *channels_.setup->channel, spec, this);
  if (!c) return settle_notice(p, cm::Failure{cm::FailKind::local_error, 0, {}, c.error()});
  notices_.hold(key, std::move(c).value());
}

void Engine::settle_notice(Pair& p, const cm::Failure& a) {
  const uint64_t key = pairs_.index(p);
  const Notices::Notice& n = *notices_.find(key);
  const uint32_t attempt = n.attempt;  // copied: the notice closes below
  const std::string at = "attempt " + std::to_string(attempt);
  const repair::Settled s = repair::settle(a, n.tries, opt().max_attempts);
  using C = PeerError::Cause;
  switch (s.outcome) {
    case repair::Outcome::peer_reconnects: {
      WIREUP_LOG(info, "rank %u: %s: the peer never got our REP's answer through (RTU lost); it reconnects",
                 opt().rank, pair_name(p.peer, p.lane, attempt).c_str());
      retire(notices_.close(key));
      // Reported only if the newer attempt never comes before the deadline.
      pairs_.become(p, Waiting{std::make_unique<cm::Failure>(rtu_lost_failure(
          p, a.status, "our REP retries for " + at +
                           " ran out though the peer was established (its RTUs were lost); it tore the lane "
                           "down to reconnect, and no newer attempt arrived"))});
      return;
    }
    case repair::Outcome::peer_retries: {
      // The peer retries on its own: wait for it as for any lost REP.
      Waiting w{std::make_unique<cm::Failure>(n.unreachable)};
      retire(notices_.close(key));
      pairs_.become(p, std::move(w));
      return;
    }
    case repair::Outcome::ask_again:
      notices_.retry_at(key, retries_.due_after(n.tries, now()));
      return;
    case repair::Outcome::give_up:
      break;
  }
  std::string why;
  switch (s.cause) {
    case C::rtu_peer_cannot_reconnect:
      why = "the peer's RTU for " + at +
            " never arrived; the peer had the lane established and could not reconnect it (it reported the loss on "
            "its side)";
      break;
    case C::rtu_notice_refused:
      why = "our REP retries for " + at + " ran out and the peer refused the RTU-lost notice (" +
            to_string(s.peer_code) + "): it may hold the lane as connected";
      break;
    case C::rtu_listener_gone:
      why = "the peer's RTU for " + at +
            " never arrived and the peer's listener is gone (it finished its wireup): it may hold the lane as "
            "connected";
      break;
    default:
      why = "the peer's RTU for " + at + " never arrived and the RTU-lost notice could not be delivered (" +
            a.describe() + "): the peer may hold the lane as connected";
      break;
  }
  // Our own failure after the peer's RTU started the notice: it is the cause, and named.
  if (n.unreachable.after_peer_established)
    why = "our side failed after the peer's RTU for " + at + " (" + n.unreachable.error.message() + "); " + why;
  give_up(p, rtu_lost_failure(p, a.status, why), s.cause);
}

// --- the active side: the answer ------------------------------------------------------------

void Engine::tear_down_established(Pair& p) {
  // Only a lane not handed over (repair::ActiveView::can_take_back): nothing of the
  // transport's is on its QP, and dropping it hands it back (a wrapper's release hook). The
  // id's CM sends a DREQ to the peer's idle id, which the peer's CM answers.
  records_.withdraw(p.as<Established>()->result);
  pairs_.become(p, Waiting{});
}

void Engine::answer_notice(prov::CmEvent& ev, const GateVerdict& v) {
  ++stats_[Counter::rtu_lost_received];
  Pair* p = pairs_.find(v.header.src_rank, v.header.lane);
  if (p == nullptr) return refuse(ev, GateVerdict{Admit::refuse, v.header, true, RejectCode::unknown_rank, "no such pair"});
  // On demand the gate leaves roles to the pair: a notice is only for a lane we initiated.
  if (p->role != cm::Role::active || p->state() == PairState::idle)
    return refuse(ev, GateVerdict{Admit::refuse, v.header, true, RejectCode::wrong_role, "not a lane we initiated"});
  auto* e = p->as<Established>();
  const repair::Answer a = repair::answer(
      repair::ActiveView{p->state(), p->attempt, opt().max_attempts, pairs_.open() > 0 || opt().on_demand,
                         e != nullptr && e->qp && !records_.handed_over(e->result)},
      v.header.attempt);
  stats_.reject_sent(a.code);
  WIREUP_LOG(info, "rank %u: RTU-lost notice for %s: %s (%s)", opt().rank,
             pair_name(p->peer, p->lane, p->attempt).c_str(), to_string(a.code), a.why);
  if (Status st = ev.id->reject(fixed_.wire.reject(a.code, p->peer, p->lane, p->attempt, v.header.nonce)); !st)
    WIREUP_LOG(warn, "rank %u: %s", opt().rank, st.message().c_str());
  const std::string at = "attempt " + std::to_string(p->attempt);
  using A = repair::Action;
  switch (a.action) {
    case A::none:
      return;
    case A::abandon_and_retry:
      abandon_attempt(*p);
      ++stats_[Counter::retries];
      (void)retries_.schedule(pairs_.index(*p), p->attempt, now());
      return;
    case A::abandon_and_give_up:
      abandon_attempt(*p);
      return give_up(*p,
                     rtu_lost_failure(*p, 0, "the peer's REP retries for " + at +
                                                 " ran out before we connected, and no attempts are left"),
                     PeerError::Cause::rtu_no_attempts_left);
    case A::tear_down_and_retry:
      WIREUP_LOG(warn, "rank %u: %s: the peer never got our RTU; reconnecting", opt().rank,
                 pair_name(p->peer, p->lane, p->attempt).c_str());
      tear_down_established(*p);
      ++stats_[Counter::repairs];
      ++stats_[Counter::retries];
      (void)retries_.schedule(pairs_.index(*p), p->attempt, now());
      return;
    case A::tear_down_and_give_up:
      ++stats_[Counter::repairs_refused];
      tear_down_established(*p);
      return give_up(*p, rtu_lost_failure(*p, 0, "the peer never got our RTU for " + at + " and no attempts are left"),
                     PeerError::Cause::rtu_no_attempts_left);
    case A::report_handed_over:
      // The lane is the transport's already (wireup ended, or it took the QP): tell it.
      ++stats_[Counter::repairs_refused];
      // Unless it was told already: lost with our own device on that rail (the peer asks
      // because its side went with the same removal, REP out).
      if (const ConnResult* r = e != nullptr ? &records_.results()[e->result] : nullptr;
          r != nullptr && (r->withdrawn || r->lost != cm::FailKind::none)) {
        WIREUP_LOG(info, "rank %u: %s: the peer never got our RTU; the lane is gone here already (%s)", opt().rank,
                   pair_name(p->peer, p->lane, p->attempt).c_str(),
                   r->withdrawn ? "withdrawn with its device" : to_string(r->lost));
        return;
      }
      WIREUP_LOG(warn,
                 "rank %u: %s: the peer never got our RTU and the lane was already handed over: reported as "
                 "disconnected",
                 opt().rank, pair_name(p->peer, p->lane, p->attempt).c_str());
      if (e != nullptr && !e->disconnected && e->id) {
        e->disconnected = true;
        ++stats_[Counter::disconnects];
        (void)e->id->disconnect();  // the peer's CM answers our DREQ: the CM side ends cleanly
      }
      if (e != nullptr) records_.mark_lost(e->result, cm::FailKind::rtu_lost);
      records_.report(SteadyEvent{p->peer, p->lane, prov::CmEventType::disconnected, -ECONNRESET, true, SteadyEvent::Scope::connection});
      return;
  }
}

}  // namespace wireup
