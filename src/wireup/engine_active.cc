// The active side (starting connects within the window, granting QPs), and how every pair
// settles: established (migrated, recorded), failed (retried or given up), expired.
#include <algorithm>
#include <cerrno>
#include <limits>

#include "common/log.h"
#include "wireup/engine.h"

namespace wireup {

cm::Spec Engine::spec_for(const Pair& p, uint64_t nonce) const {
  cm::Spec spec;
  spec.peer = p.peer;
  spec.lane = p.lane;
  spec.tag = pairs_.index(p);
  // The lane's rail pair: our rail's source address, the peer's address on its rail. The
  // passive side needs it too: a rtu_lost notice goes to the active peer's listener.
  if (auto r = rails_.route(p.peer, p.lane, opt().rank, p.rail_shift)) {
    spec.profile = &fixed_.profiles[r->rail];
    spec.remote = r->remote;
  } else {
    spec.profile = &fixed_.profiles[0];
    if (auto a = peers_.address(p.peer)) spec.remote = *a;
  }
  const Wire& w = fixed_.wire;
  static_assert(kWireHeaderSize <= cm::PrivateData::kCapacity);
  (void)spec.private_data.assign(p.role == cm::Role::active ? w.request(p.peer, p.lane, p.attempt, nonce)
                                                            : w.accept(p.peer, p.lane, p.attempt, nonce));
  return spec;
}

// `t`: progress()'s clock reading, for what is due; each connection stamps its own start.
int Engine::start_connects(Nanos t) {
  int work = 0;
  // The rails take turns, one start each, as long as any can start: the starts interleave
  // over the rails as the lanes stripe over them (one rail: its queue in order, as ever).
  static_assert(kMaxRails < 32, "one bit per rail below");
  uint32_t open = (1u << admission_.rails()) - 1;  // rails that may start more
  while (open != 0) {
    for (uint32_t rail = 0; rail < admission_.rails(); ++rail) {
      if (!(open & (1u << rail))) continue;
      switch (start_next(rail, t)) {
        case StartStep::started: ++work; break;
        case StartStep::skipped: break;
        case StartStep::blocked: open &= ~(1u << rail); break;
      }
    }
  }
  return work;
}

Engine::StartStep Engine::start_next(uint32_t rail, Nanos t) {
  if (!admission_.connect_room(rail)) return StartStep::blocked;
  Pair* p = nullptr;
  uint64_t i = 0;
  if (admission_.next_connect_waiter(rail, &i)) {
    p = pairs_.at(i);  // due earlier, while this rail's window was full
  } else if (auto due = retries_.pop_due(t)) {
    i = *due;
    p = pairs_.at(i);
  } else if (!pairs_.all_started(rail)) {
    // Start order is nearest peer first, so the due times along it only grow (incast.h):
    // the head not being due means no later first attempt on this rail is.
    const Nanos first_due = first_connect_due(rail);
    if (first_due > t) return StartStep::blocked;
    p = pairs_.next_to_start(rail);
    if (p != nullptr) i = pairs_.index(*p);
    if (first_due != Nanos::min()) ++stats_[Counter::connects_paced];
  } else {
    return StartStep::blocked;
  }
  // Moved on meanwhile (on demand: it may have become the passive side of a crossing, or be
  // waiting for its address).
  if (p == nullptr || p->state() != PairState::waiting || p->role != cm::Role::active || p->awaiting_address)
    return StartStep::skipped;
  // Its lane runs on another rail (a retry due, or a rail lost since it queued): it waits for
  // that rail's window, not this one's.
  if (const uint32_t its = rail_for(*p); its != rail) {
    admission_.wait_for_connect(its, i);
    return StartStep::skipped;
  }
  ++p->attempt;
  ++stats_[Counter::connects_started];
  ++stats_.rail(rail).connects_started;
  if (p->attempt > 1) ++stats_.rail(rail).retries;
  auto c = cm::Connection::start(prov_, *channels_.setup->channel, spec_for(*p, fixed_.wire.fresh_nonce()), this);
  // The connection's own start stamp (no second reading): later than t by the connects this
  // loop has started before it.
  if (p->first_start == cm::kUnset) p->first_start = c ? (*c)->timings().start : t;
  if (!c) {
    // On `rail`: a start refused because its device is going away (ENODEV) loses that rail.
    fail_pair(*p, cm::Failure{cm::FailKind::local_error, 0, {}, c.error()}, rail);
    return StartStep::started;
  }
  (void)admission_.try_acquire_connect(rail);  // room checked above
  pairs_.become(*p, Connecting{std::move(c).value(), false, static_cast<uint8_t>(rail), nullptr});
  return StartStep::started;
}

Nanos Engine::first_connect_due(uint32_t rail) const {
  const Pair* p = pairs_.peek_next_to_start(rail);
  const EngineOptions& o = opt();
  if (p == nullptr || !fixed_.pacing.on) return Nanos::min();
  // Paced per listener of the peer: with several rails, per the one this lane goes to.
  const uint64_t slot = incast::rail_slot(o.rank, p->peer, p->lane, o.nranks, rails_paired(p->peer));
  const Nanos d = incast::delay(fixed_.pacing, slot);
  return d > Nanos{0} ? life_.started_at + d : Nanos::min();
}

int Engine::grant_qps() {
  int work = 0;
  // Passive first: accepting is what lets the peers' connects (and so their windows) finish.
  for (cm::Role role : {cm::Role::passive, cm::Role::active}) {
    for (uint32_t rail = 0; rail < admission_.rails(); ++rail) {
      uint64_t i = 0;
      while (admission_.next_waiter(rail, role, &i)) {
        Pair* p = pairs_.at(i);
        auto* cs = p ? p->as<Connecting>() : nullptr;
        // A key left behind by an attempt that is gone (or runs on another rail now) is stale.
        if (cs == nullptr || cs->holds_qp_place || cs->rail != rail) continue;
        cm::Connection& c = *cs->conn;
        if (c.state() != cm::State::route_resolved && c.state() != cm::State::requested) continue;
        (void)admission_.try_acquire_qp(rail, role);  // next_waiter() checked the room
        cs->holds_qp_place = true;
        Status st = role == cm::Role::active ? c.connect(fixed_.factory) : c.accept(fixed_.factory);
        if (!st) WIREUP_LOG(debug, "rank %u lane %u: %s", p->peer, p->lane, st.message().c_str());
        after_event(*p);
        ++work;
      }
    }
  }
  return work;
}

void Engine::after_event(Pair& p) {
  auto* cs = p.as<Connecting>();
  if (cs == nullptr) return;
  switch (cs->conn->state()) {
    case cm::State::route_resolved:
    case cm::State::requested:
      if (!cs->holds_qp_place) admission_.wait_for_qp(cs->rail, p.role, pairs_.index(p));
      return;
    case cm::State::established:
      return establish(p);
    case cm::State::failed:
      return settle_failure(p);
    default:
      return;
  }
}

void Engine::release_state(Pair& p) {
  if (auto* cs = p.as<Connecting>()) {
    if (p.role == cm::Role::active) admission_.release_connect(cs->rail);
    if (cs->holds_qp_place) admission_.release_qp(cs->rail, p.role);
    cs->holds_qp_place = false;
    retire(std::move(cs->conn));
  }
  // A probing pair's rtu_lost notice, a failed one's abandon: they end with the state.
  retire(notices_.close(pairs_.index(p)));
}

std::unique_ptr<cm::Failure> Engine::take_last(Pair& p) {
  if (auto* w = p.as<Waiting>()) return std::move(w->last);
  if (auto* c = p.as<Connecting>()) return std::move(c->last);
  if (p.state() != PairState::probing) return nullptr;
  const Notices::Notice* n = notices_.find(pairs_.index(p));
  return n != nullptr ? std::make_unique<cm::Failure>(n->unreachable) : nullptr;
}

void Engine::abandon_attempt(Pair& p) {
  Waiting w{take_last(p)};
  release_state(p);
  pairs_.become(p, std::move(w));
}

void Engine::establish(Pair& p) {
  auto& cs = *p.as<Connecting>();
  std::unique_ptr<cm::Connection> c = std::move(cs.conn);
  const uint32_t rail = cs.rail;
  if (p.role == cm::Role::active) admission_.release_connect(rail);
  if (cs.holds_qp_place) admission_.release_qp(rail, p.role);
  LinkInfo l;
  if (c->qp()) {
    l.device = c->qp()->device().info().name.c_str();
    l.rail = rails_.rail_of(&c->qp()->device());
  }
  l.ece = c->ece();
  l.qp = c->qp_given();
  l.peer_srq = c->peer_srq();
  const std::optional<uint16_t> link = records_.intern(l);
  if (!link) {
    Waiting w{std::move(cs.last)};
    retire(std::move(c));
    pairs_.become(p, std::move(w));
    return fail_pair(p, cm::Failure{cm::FailKind::local_error, 0, {},
                                    Error::make(ErrorCode::resource_exhausted, "Engine::establish",
                                                "65,536 distinct device/ECE/QP-attribute outcomes in the result table")});
  }
  // Every event of the id was acked before we got here: the migration cannot block.
  if (Status m = c->migrate(*channels_.steady, prov::Route(static_cast<prov::CmEventSink*>(this), pairs_.index(p))); !m) {
    Waiting w{std::move(cs.last)};
    retire(std::move(c));
    pairs_.become(p, std::move(w));
    cm::Failure f{cm::FailKind::local_error, 0, {}, m.error()};
    f.after_peer_established = p.role == cm::Role::passive;  // the active side has its lane
    return fail_pair(p, f, rail);
  }
  if (p.role == cm::Role::active) {
    ++stats_[Counter::established_active];
    ++stats_.rail(rail).established_active;
    // Its ESTABLISHED stamp (rdma_establish just returned; the migration came since).
    const Nanos at = c->timings().established;
    life_.last_active_established = at != cm::kUnset ? at : now();
  } else {
    ++stats_[Counter::established_passive];
    ++stats_.rail(rail).established_passive;
  }
  stats_.record(*c);
  ConnResult r;
  r.peer = p.peer;
  r.lane = p.lane;
  r.role = p.role;
  r.local_qpn = c->qp() ? c->qp()->qpn() : 0;
  r.remote_qpn = c->remote_qpn();
  r.link = *link;
  r.timings = ResultTimings(c->timings(), p.first_start);
  r.attempts = static_cast<uint16_t>(std::min<uint32_t>(p.attempt, std::numeric_limits<uint16_t>::max()));
  // Keep only what an established connection needs; the state machine goes.
  Established e;
  e.result = records_.put_result(pairs_.index(p), r);
  e.qp = c->take_qp();
  e.id = c->take_id();
  retire(std::move(c));
  pairs_.become(p, std::move(e));
  records_.lane(LaneEvent{p.peer, p.lane, LaneEvent::Kind::ready, p.as<Established>()->result});
}

void Engine::settle_failure(Pair& p) {
  const Connecting& cs = *p.as<Connecting>();
  const cm::Connection& c = *cs.conn;
  cm::Failure f = failure_of(c);
  if (f.kind == cm::FailKind::rejected) ++stats_.rail(cs.rail).rejects_received;
  // The id's device says the rail; an id whose device is gone already says nothing, and the
  // attempt's own rail stands in (a removal must not be taken for the whole device's).
  std::optional<uint32_t> rail = cs.rail;
  if (c.id() != nullptr && c.id()->device() != nullptr) rail = rails_.rail_of(c.id()->device());
  abandon_attempt(p);
  fail_pair(p, f, rail);
}

void Engine::fail_pair(Pair& p, const cm::Failure& f, std::optional<uint32_t> rail) {
  // Not a failure: the lane is made by the peer's crossing request instead.
  if (p.role == cm::Role::active && yield_to_crossing(p, f)) return;
  stats_.failure(f.kind);
  if (f.kind == cm::FailKind::rejected) stats_.reject_received(f.status);
  // A local call refused because the device is going away counts as its removal: on rxe,
  // rdma_init_qp_attr answered ENXIO for a CONNECT_RESPONSE handled while `rdma link delete`
  // ran, before that id's own DEVICE_REMOVAL (tests/vm/device).
  const bool device_gone = f.kind == cm::FailKind::device_removal ||
                           (f.kind == cm::FailKind::local_error && (f.error.err == ENODEV || f.error.err == ENXIO));
  // Any local failure of an attempt on a rail already lost is that loss: the sim refuses
  // rdma_resolve_route on an id of a removed device (EINVAL, "id is DEVICE_REMOVAL") after the
  // device's DEVICE_FATAL took the rail down.
  const bool on_lost_rail = rail && rails_.state(*rail) == RailState::lost;
  if (device_gone || (on_lost_rail && f.kind == cm::FailKind::local_error)) {
    if (device_gone) ++stats_[Counter::device_removals];
    // One rail of several: only that rail is gone; this pair goes on over the others (the
    // active side with its next attempt, on the pair's new route; the passive side waits for
    // the peer's), within its attempts.
    if (rail && rails_.several() && lose_rail(*rail, "its device was removed (" + f.describe() + ")")) {
      if (!p.open()) return;  // its peer is out of reach now: given up by lose_rail
      // After the peer's ESTABLISHED the peer holds the lane on the lost rail, and loses it by
      // its own DEVICE_REMOVAL there: a lane established on a lost rail is lost on both ends.
      if (p.role == cm::Role::passive && f.after_peer_established)
        return give_up(p, f, PeerError::Cause::device_removed);
      if (p.role == cm::Role::passive) {
        pairs_.become(p, Waiting{std::make_unique<cm::Failure>(f)});
        // Our REP may have reached the peer, which then holds the lane established and never
        // retries it: ask it over a rail left, as for lost RTUs (repair.h), instead of waiting
        // for the wireup deadline (seen in the VM: 60 s for one lane). A peer that never got
        // the REP says so and retries on its own.
        start_notice(p);
        return;
      }
      if (p.attempt < opt().max_attempts) {
        ++stats_[Counter::retries];
        const Nanos at = retries_.schedule(pairs_.index(p), p.attempt, now());
        WIREUP_LOG(info, "rank %u lane %u attempt %u: rail %u lost (%s); the next attempt in %.1f ms takes rail %u",
                   p.peer, p.lane, p.attempt, *rail, f.describe().c_str(),
                   std::chrono::duration<double, std::milli>(at - now()).count(), rail_for(p));
        return;
      }
      return give_up(p, f, PeerError::Cause::device_removed);
    }
    // Final, on either side: this id's device is gone, and with it every other pair's.
    give_up(p, f, PeerError::Cause::device_removed);
    return lose_device("the device was removed (DEVICE_REMOVAL on a connecting id)");
  }
  if (p.role == cm::Role::passive) {
    // An ECE refusal, ours (reject_ece sent) or the peer's (REJ 35 to our REP), is final on
    // both sides: the active side never retries reason 35, so nothing better can come.
    const bool ece_final = f.kind == cm::FailKind::ece_rejected ||
                           (f.kind == cm::FailKind::rejected && f.status == prov::reject_reason::vendor_option);
    if (ece_final) return give_up(p, f);
    // The peer drives retries of its own pairs; stay ready for its next attempt and report
    // this failure only if nothing better arrives before the deadline.
    pairs_.become(p, Waiting{std::make_unique<cm::Failure>(f)});
    // UNREACHABLE on the passive side means our REP retries ran out: either every REP was
    // lost (the peer will retry with a newer attempt) or every RTU was (the peer is
    // established and would never retry). Only the peer knows which: ask it (repair.h).
    if (f.kind == cm::FailKind::unreachable) start_notice(p);
    // A local failure after ESTABLISHED (the QP to RTS, the migration): the peer's RTU came,
    // so it holds the lane and will never retry; the same notice tells it ours is gone.
    if (f.after_peer_established) start_notice(p);
    return;
  }
  // On demand the peer may not have seen our disconnect of the lane yet (its DISCONNECTED and
  // our new REQ travel apart): a duplicate is retried, within the attempts.
  if (opt().on_demand && peer_reject_code(f) == RejectCode::duplicate && p.attempt < opt().max_attempts) {
    ++stats_[Counter::retries];
    (void)retries_.schedule(pairs_.index(p), p.attempt, now());
    return;
  }
  next_rail_after(p, f);
  if (retries_.after_failure(pairs_.index(p), f, p.attempt, now()).retry) {
    ++stats_[Counter::retries];
    WIREUP_LOG(info, "rank %u lane %u attempt %u: %s; retrying", p.peer, p.lane, p.attempt, f.describe().c_str());
    return;
  }
  give_up(p, f);
}

void Engine::give_up(Pair& p, const cm::Failure& f, PeerError::Cause cause) {
  release_state(p);
  PeerError e{p.peer, p.lane, p.role, p.attempt, cause, peer_reject_code(f), f};
  WIREUP_LOG(warn, "wireup: %s", e.describe().c_str());
  const bool owes = owes_abandon(p, f, cause);
  pairs_.become(p, Failed{records_.put_error(pairs_.index(p), std::move(e))});
  records_.lane(LaneEvent{p.peer, p.lane, LaneEvent::Kind::failed, p.as<Failed>()->error});
  ++stats_[Counter::failed];
  if (owes) announce_abandon(p);
}

void Engine::expire() {
  for (Pair& p : pairs_) {
    if (!p.open()) continue;
    expire_pair(p);
  }
  retries_.clear();
  notices_.drop_retries();
  admission_.drop_waiters();
}

void Engine::expire_pair(Pair& p) {
  std::unique_ptr<cm::Failure> last = take_last(p);
  release_state(p);
  pairs_.become(p, Waiting{});
  cm::Failure f;
  PeerError::Cause cause = PeerError::Cause::failed;
  if (last && p.role == cm::Role::passive) {
    f = *last;
  } else {
    const bool active = p.role == cm::Role::active;
    cause = active ? PeerError::Cause::timed_out : PeerError::Cause::peer_never_connected;
    f.kind = cm::FailKind::timed_out;
    const char* why = !active ? "the peer never connected before the wireup timeout"
                      : p.awaiting_address ? "no address for the peer before the timeout (the address callback "
                                             "was asked and add_peer() never came)"
                                           : "no connection before the wireup timeout";
    f.error = Error::make(ErrorCode::timed_out, "wireup", why);
    f.error.peer = "rank " + std::to_string(p.peer);
  }
  // The transport never answered: the next connect() asks it again.
  if (p.awaiting_address) od_.forget_ask(p.peer);
  p.awaiting_address = false;
  stats_.failure(cm::FailKind::timed_out);
  give_up(p, f, cause);
}

}  // namespace wireup
