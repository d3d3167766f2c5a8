// The passive side (requests through the gate, refusals), the steady channel, and close().
#include "common/log.h"
#include "wireup/engine.h"

namespace wireup {

using prov::CmEventType;

void Engine::refuse(prov::CmEvent& ev, const GateVerdict& v) {
  if (v.stranger()) ++stats_[Counter::strangers];
  stats_.reject_sent(v.code);
  const std::string source = ev.id->peer_addr().to_string();
  // A crossing is on-demand business as usual, not worth a warning.
  const bool routine = v.code == RejectCode::crossed;
  switch (routine ? StrangerLog::Verdict::seen : strangers_.note(source)) {
    case StrangerLog::Verdict::log:
      WIREUP_LOG(warn, "rank %u: rejected request from %s: %s (%s)", opt().rank, source.c_str(), to_string(v.code),
                 v.why.c_str());
      break;
    case StrangerLog::Verdict::seen:
      break;
    case StrangerLog::Verdict::unlogged:
      ++stats_[Counter::strangers_unlogged];
      break;
  }
  // A request that authenticated gets a sealed answer naming its pair: its sender can trust
  // the reason. Anyone else learns the code and our rank only.
  const Wire& w = fixed_.wire;
  const WireHeader& h = v.header;
  if (Status s = ev.id->reject(v.authentic ? w.reject(v.code, h.src_rank, h.lane, h.attempt, h.nonce)
                                           : w.refuse_stranger(v.code));
      !s)
    WIREUP_LOG(warn, "rank %u: %s", opt().rank, s.message().c_str());
}

void Engine::handle_request(prov::CmEvent& ev) {
  // Everything below decides from the private data alone: no QP, no memory, no state is
  // allocated for a request until it is known to come from a planned peer of this job.
  GateVerdict v = check_request(gate(), ev.private_data);
  if (v.admit == Admit::rtu_notice) return answer_notice(ev, v);
  if (v.admit == Admit::abandon) return handle_abandon(ev, v);
  Pair* p = nullptr;
  if (v.admit == Admit::connect)
    p = opt().on_demand ? on_demand_request(v) : pairs_.find(v.header.src_rank, v.header.lane);
  if (p != nullptr) v = check_pair(std::move(v), p->state(), p->attempt);
  if (v.admit != Admit::connect || p == nullptr) return refuse(ev, v);
  // A newer attempt supersedes our half-open one (the peer has given up on it), and answers
  // a rtu_lost question we may have asked (the peer is retrying).
  if (p->state() == PairState::connecting) ++stats_[Counter::superseded];
  std::unique_ptr<cm::Failure> last = take_last(*p);
  release_state(*p);
  p->attempt = v.header.attempt;
  auto c = cm::Connection::from_request(prov_, ev, spec_for(*p, v.header.nonce), this);
  if (p->first_start == cm::kUnset) p->first_start = c->timings().start;  // its one reading
  // Its QP place is its listener's rail's (admission.h).
  const auto rail = static_cast<uint8_t>(rail_of_request(ev));
  pairs_.become(*p, Connecting{std::move(c), false, rail, std::move(last)});
  after_event(*p);  // queues it for a QP; grant_qps() accepts within the QP window
}

void Engine::answer_steady(prov::CmEvent& ev) {
  // Only established ids live on the steady channel; their tag is their pair's index.
  Pair* p = pairs_.at(ev.id->route().tag);
  auto* e = p ? p->as<Established>() : nullptr;
  if (e == nullptr) return;
  // Our own disconnects (close(), on demand's disconnect()) set `disconnected` first: only
  // the peer's DREQ (or a connection the CM found dead) counts towards its peer going down.
  const bool dropped = ev.type == CmEventType::disconnected && !e->disconnected;
  if (dropped) {
    e->disconnected = true;
    ++stats_[Counter::disconnects];
    // Answer the DREQ so the peer's DISCONNECTED does not wait for its DREQ timeout.
    (void)e->id->disconnect();
  }
  // In bulk the peer's DREQ ends the connection for good (on demand the lane closes instead,
  // and its LANE_CLOSED says so).
  if (dropped && !opt().on_demand) records_.mark_lost(e->result, cm::FailKind::disconnected);
  records_.report(SteadyEvent{p->peer, p->lane, ev.type, ev.status, false, SteadyEvent::Scope::connection});
  if (dropped) lane_dropped(*p);
  if (ev.type == CmEventType::device_removal) return remove_established(*p);
  if (ev.type == CmEventType::disconnected && opt().on_demand) return close_steady_lane(*p);
  if (ev.type == CmEventType::addr_change) {
    ++stats_[Counter::addr_changes];
    WIREUP_LOG(warn, "rank %u: ADDR_CHANGE on the connection to rank %u lane %u (%s)", opt().rank, p->peer, p->lane,
               ev.id->local_addr().to_string().c_str());
  }
}

int Engine::drain_steady() {
  if (!channels_.steady) return 0;
  const int n = prov::dispatch(*channels_.steady, 256);
  stats_[Counter::events] += static_cast<uint64_t>(n);
  return n;
}

Status Engine::close(Nanos drain) {
  size_t waiting = 0;
  for (Pair& p : pairs_) {
    auto* e = p.as<Established>();
    if (e == nullptr || !e->id || e->disconnected) continue;
    e->disconnected = true;  // ours: the DISCONNECTED it brings says nothing of the peer
    if (Status st = e->id->disconnect(); st) ++waiting;
  }
  const Nanos until = now() + drain;
  size_t seen = 0;
  SteadyCallback user;
  user = records_.exchange_callback([&](const SteadyEvent& e) {
    if (e.type == CmEventType::disconnected) ++seen;
    if (user) user(e);
  });
  Status waited = Status::ok();
  while (waited && seen < waiting && now() < until) {
    drain_steady();
    if (seen >= waiting) break;
    prov::EventChannel* ch[] = {channels_.steady.get()};
    waited = prov_.wait(ch, until - now());
  }
  records_.exchange_callback(std::move(user));
  if (seen < waiting)
    WIREUP_LOG(info, "rank %u: %zu of %zu disconnects unanswered after the drain", opt().rank, waiting - seen,
               waiting);
  teardown();
  return waited;
}

}  // namespace wireup
