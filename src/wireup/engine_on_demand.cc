// On demand (EngineOptions::on_demand): lanes asked for one peer at a time, crossing requests,
// addresses that come later, per-ask deadlines, and disconnecting one peer.
//
// Who initiates is who asked. When both sides ask for a lane at once, both requests are on the
// wire; the rule both apply is the plan's (plan::initiates): that side's request is the one
// kept. The other side, on the winner's REQ, withdraws its own attempt (its QP goes back
// through the factory's release) and accepts; the winner refuses the loser's REQ with
// RejectCode::crossed, on which the loser waits for the winner's request as the passive side.
// Either way exactly one connection per (pair, lane) is made, and no retry is spent on it.
#include <algorithm>

#include "common/log.h"
#include "wireup/address.h"
#include "wireup/engine.h"
#include "wireup/on_demand.h"
#include "wireup/rail_address.h"
#include "wireup/plan.h"

namespace wireup {
namespace {

Error misuse(const char* call, const std::string& what) { return Error::make(ErrorCode::invalid_state, call, what); }

}  // namespace

Status Engine::check_peer_call(const char* call, uint32_t peer) const {
  if (!opt().on_demand) return misuse(call, "needs engine.mode = on_demand (this engine connects in bulk)");
  if (!life_.started) return misuse(call, "start() not called");
  if (!channels_.setup) return misuse(call, "the engine is closed");
  if (peer >= opt().nranks)
    return Error::make(ErrorCode::invalid_argument, call,
                       "rank " + std::to_string(peer) + " >= nranks " + std::to_string(opt().nranks));
  if (peer == opt().rank) return Error::make(ErrorCode::invalid_argument, call, "rank " + std::to_string(peer) + " is this rank");
  if (watch_.lost()) return misuse(call, "this rank's device was removed");
  return Status::ok();
}

void Engine::open_lane(Pair& p, cm::Role role) {
  release_state(p);
  p.role = role;
  p.attempt = 0;  // a new conversation: the peer counts its attempts from 1 again
  p.awaiting_address = false;
  pairs_.become(p, Waiting{});
  p.first_start = now();
  od_.note_deadline(pairs_, p);
}

Pair& Engine::lane_for(uint32_t peer, uint32_t lane, cm::Role role) {
  if (Pair* p = pairs_.find(peer, lane)) {
    open_lane(*p, role);
    return *p;
  }
  Pair& p = pairs_.add(pair_key(peer, lane), role);
  p.first_start = now();
  od_.note_deadline(pairs_, p);
  return p;
}

Status Engine::connect(uint32_t peer) {
  WIREUP_TRY(check_peer_call("Engine::connect", peer));
  const bool known = peers_.address(peer).has_value();
  if (!known && !od_.can_ask_address())
    return misuse("Engine::connect", "no address for rank " + std::to_string(peer) +
                                         ": add_peer() it first, or register an address callback");
  size_t asked = 0;
  for (uint32_t lane = 0; lane < opt().lanes; ++lane) {
    Pair* have = pairs_.find(peer, lane);
    // A lane reported lost after hand-over (engine_repair.cc) is established but over: closed
    // first, then asked again like an idle one.
    if (have && have->state() == PairState::established && have->as<Established>()->disconnected) close_lane(*have);
    const PairState s = have ? have->state() : PairState::idle;
    if (s != PairState::idle && s != PairState::failed) continue;  // asked for already, or ready
    Pair& p = lane_for(peer, lane, cm::Role::active);
    ask_lane(p, known);
    ++asked;
  }
  if (asked > 0 && !known) od_.ask_address(peer);  // may call add_peer() before it returns
  return Status::ok();
}

void Engine::ask_lane(Pair& p, bool address_known) {
  ++stats_[Counter::asks];
  if (address_known) {
    if (give_up_if_unpaired(p)) return;
    pairs_.queue_start(p, rail_for(p));
  } else {
    p.awaiting_address = true;
  }
}

Status Engine::add_peer(const Peer& peer) {
  const char* call = "Engine::add_peer";
  if (peer.rank >= opt().nranks)
    return Error::make(ErrorCode::invalid_argument, call,
                       "rank " + std::to_string(peer.rank) + " >= nranks " + std::to_string(opt().nranks));
  if (life_.started && !opt().on_demand) return misuse(call, "a bulk engine's peer table is fixed at start()");
  auto a = decode_rails(peer.address);
  if (!a) return Error::make(ErrorCode::invalid_argument, call, "rank " + std::to_string(peer.rank) + ": " + a.error().detail);
  if (peer.rank == opt().rank) return Status::ok();  // our own, as a table would list it
  peers_.insert(peer.rank, a->front().addr);
  pair_rails(peer.rank, *a);
  od_.forget_ask(peer.rank);
  for (uint32_t lane = 0; lane < opt().lanes; ++lane) {
    Pair* p = pairs_.find(peer.rank, lane);
    if (p == nullptr || !p->awaiting_address) continue;
    p->awaiting_address = false;
    if (p->role == cm::Role::active && give_up_if_unpaired(*p)) continue;
    if (p->state() == PairState::waiting && p->role == cm::Role::active) pairs_.queue_start(*p, rail_for(*p));
  }
  return Status::ok();
}

void Engine::close_lane(Pair& p) {
  if (p.state() == PairState::idle) return;
  if (auto* e = p.as<Established>()) {
    if (e->id && !e->disconnected) {
      e->disconnected = true;
      (void)e->id->disconnect();  // the peer's CM gets the DREQ: its side sees DISCONNECTED
    }
    // A QP never handed over goes back now (withdrawn: the result was never a connection the
    // transport had); one handed over or taken stays the transport's. The id waits for the
    // end of the event loop.
    if (e->qp && !records_.handed_over(e->result)) records_.withdraw(e->result);
    removed_.push_back(Removed{std::move(e->id), std::move(e->qp)});
    ++stats_[Counter::lanes_closed];
  }
  release_state(p);
  p.awaiting_address = false;
  p.attempt = 0;
  pairs_.become(p, Idle{});
  records_.lane(LaneEvent{p.peer, p.lane, LaneEvent::Kind::closed, records_.result_slot(pairs_.index(p))});
}

Status Engine::disconnect(uint32_t peer) {
  WIREUP_TRY(check_peer_call("Engine::disconnect", peer));
  for (uint32_t lane = 0; lane < opt().lanes; ++lane)
    if (Pair* p = pairs_.find(peer, lane)) close_lane(*p);
  return Status::ok();
}

LaneState Engine::lane_state(uint32_t peer, uint32_t lane) const {
  const Pair* p = pairs_.find(peer, lane);
  if (p == nullptr) return LaneState::idle;
  switch (p->state()) {
    case PairState::idle: return LaneState::idle;
    case PairState::established: return p->as<Established>()->disconnected ? LaneState::idle : LaneState::ready;
    case PairState::failed: return LaneState::failed;
    default: return LaneState::connecting;
  }
}

Status Engine::start_on_demand() {
  const EngineOptions& o = opt();
  // The eager ring: both sides know it, so its roles come from the plan as in bulk (no
  // crossing): we initiate to the ranks ahead on the ring and expect those behind.
  std::vector<std::pair<uint32_t, cm::Role>> ring;
  const uint32_t k = std::min(o.eager_ring, o.nranks / 2);
  for (uint32_t d = 1; d <= k; ++d)
    for (uint32_t q : {(o.rank + d) % o.nranks, (o.rank + o.nranks - d) % o.nranks})
      if (q != o.rank) ring.emplace_back(q, plan::initiates(o.rank, q, o.nranks) ? cm::Role::active : cm::Role::passive);
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  std::vector<uint32_t> need_address;
  for (uint32_t lane = 0; lane < o.lanes; ++lane)
    for (auto [q, role] : ring) {
      Pair& p = lane_for(q, lane, role);
      if (role == cm::Role::passive) continue;
      const bool known = peers_.address(q).has_value();
      ask_lane(p, known);
      if (!known && lane == 0) need_address.push_back(q);
    }
  if (!need_address.empty() && !od_.can_ask_address())
    return misuse("Engine::start", "no address for rank " + std::to_string(need_address.front()) +
                                       " of the eager ring: list it, or register an address callback");
  for (uint32_t q : need_address) od_.ask_address(q);
  for (uint32_t q : o.eager_peers) WIREUP_TRY(connect(q));
  return Status::ok();
}

Pair* Engine::on_demand_request(GateVerdict& v) {
  const uint32_t src = v.header.src_rank;
  Pair* p = pairs_.find(src, v.header.lane);
  if (p == nullptr) return &lane_for(src, v.header.lane, cm::Role::passive);
  switch (classify_request(p->state(), p->role, plan::initiates(opt().rank, src, opt().nranks))) {
    case RequestFor::new_passive:
      open_lane(*p, cm::Role::passive);
      return p;
    case RequestFor::this_pair:
      return p;  // check_pair decides
    case RequestFor::crossed_won:
      ++stats_[Counter::crossed_won];
      v.admit = Admit::refuse;
      v.code = RejectCode::crossed;
      v.why = "our own request for the lane crosses it and is the one kept";
      return p;
    case RequestFor::crossed_lost:
      ++stats_[Counter::crossed_yielded];
      WIREUP_LOG(debug, "rank %u: rank %u lane %u: our request crosses the peer's, which is kept", opt().rank, src,
                 v.header.lane);
      wait_as_passive(*p);  // our attempt goes (its QP back to the transport)
      return p;
  }
  return p;
}

void Engine::wait_as_passive(Pair& p) {
  // first_start stays: the deadline still counts from our ask.
  release_state(p);
  p.role = cm::Role::passive;
  p.attempt = 0;
  p.awaiting_address = false;
  pairs_.become(p, Waiting{});
}

bool Engine::yield_to_crossing(Pair& p, const cm::Failure& f) {
  if (!opt().on_demand || peer_reject_code(f) != RejectCode::crossed) return false;
  // The peer's request is the one kept (its REJ authenticated as the answer to ours): wait
  // for it as the passive side, within the same deadline.
  ++stats_[Counter::crossed_yielded];
  wait_as_passive(p);
  return true;
}

int Engine::expire_due(Nanos t) {
  int work = 0;
  while (std::optional<uint32_t> i = od_.pop_due(pairs_, t)) {
    expire_pair(*pairs_.at(*i));
    ++work;
  }
  return work;
}

void Engine::close_steady_lane(Pair& p) {
  // On demand the peer's disconnect frees the lane for a later connect, by either side.
  WIREUP_LOG(info, "rank %u: rank %u lane %u disconnected; the lane is idle", opt().rank, p.peer, p.lane);
  close_lane(p);
}

}  // namespace wireup
