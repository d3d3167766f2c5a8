// The listeners, one per rail on its own device, and the address that publishes them.
// Several rails: each peer's published rails paired with ours (rail_pairing.h's rule, kept in
// rail_routes.h), and the peers no rail of ours reaches given up at start with the reason.
// Each lane then leaves from its pair's local rail (its profile's source address) to the
// peer's address on the paired rail (Engine::spec_for); a passive lane runs on the rail whose
// listener the request reached, which the QP's device says (LinkInfo::rail). Each rail has its
// own windows and its own start order (admission.h, pair_table.h); a lost rail's waiters move.
#include "common/log.h"
#include "wireup/engine.h"
#include "wireup/rail_address.h"

namespace wireup {

Status Engine::listen() {
  // Rail 0 at listen_addr; the others at their own addresses, with the same port.
  WIREUP_TRY(listen_on(0, opt().listen_addr));
  for (uint32_t r = 1; r < rails_.size(); ++r) WIREUP_TRY(listen_on(r, rails_.local()[r].address.addr));
  return Status::ok();
}

Status Engine::listen_on(uint32_t rail, const prov::SockAddr& addr) {
  Setup& s = *channels_.setup;
  auto id = prov_.create_id(*s.channel, prov::PortSpace::tcp,
                            prov::Route(static_cast<prov::CmEventSink*>(this), kListenerTag - rail));
  if (!id) return id.error();
  s.listeners.push_back(std::move(id).value());
  prov::CmId& l = *s.listeners.back();
  if (opt().reuseaddr) WIREUP_TRY(l.set_reuseaddr(true));
  if (Status b = l.bind_addr(addr); !b) {
    if (!rails_.several()) return b;
    return Error(b.error()).with_peer("rail " + std::to_string(rail));
  }
  // Bound to the device's address: the id names the device whose async events are ours.
  if (prov::Device* d = l.device()) {
    rails_.set_device(rail, d, l.port_num());
    WIREUP_TRY(watch_.watch(*d, *this, opt().async_events));
  }
  WIREUP_TRY(l.listen(opt().backlog));
  bound_.push_back(RailAddress{l.local_addr(), rails_.local()[rail].address.prefix_len});
  return Status::ok();
}

std::vector<uint8_t> Engine::local_address() const {
  const Setup* s = channels_.setup.get();
  // One rail: format 1, what a single-rail engine always published; several: format 2.
  return s && !s->listeners.empty() && s->listeners[0] ? encode_rails(bound_) : std::vector<uint8_t>();
}

void Engine::pair_rails(uint32_t peer, std::span<const RailAddress> theirs) {
  const PeerPairing* p = rails_.set_peer(peer, theirs);
  if (p == nullptr) return;  // one rail on both ends: rail 0 to its only address
  if (p->basis == PairingBasis::unreachable) {
    WIREUP_LOG(warn, "rank %u: rank %u: %s", opt().rank, peer, p->why.c_str());
    return;
  }
  // A rail of ours the pairing left out carries nothing to this peer: said once per peer.
  if (p->pairs.size() < rails_.size())
    WIREUP_LOG(info, "rank %u: rank %u: %zu of our %zu rails used (%s)", opt().rank, peer, p->pairs.size(),
               rails_.size(), p->why.c_str());
  else
    WIREUP_LOG(debug, "rank %u: rank %u: %s", opt().rank, peer, p->why.c_str());
}

void Engine::give_up_unpaired() {
  for (Pair& p : pairs_) (void)give_up_if_unpaired(p);
}

bool Engine::give_up_if_unpaired(Pair& p) {
  const PeerPairing* pairing = rails_.pairing(p.peer);
  if (pairing == nullptr || pairing->basis != PairingBasis::unreachable || !p.open()) return false;
  cm::Failure f;
  f.kind = cm::FailKind::address_error;
  f.error = Error::make(ErrorCode::address_error, "rail pairing", pairing->why);
  f.error.peer = "rank " + std::to_string(p.peer) + " lane " + std::to_string(p.lane);
  give_up(p, f);
  return true;
}

uint32_t Engine::rail_for(const Pair& p) const {
  auto r = rails_.route(p.peer, p.lane, opt().rank, p.rail_shift);
  return r && r->rail < admission_.rails() ? r->rail : 0;
}

uint32_t Engine::rails_paired(uint32_t peer) const {
  const PeerPairing* pairing = rails_.pairing(peer);
  return pairing != nullptr && !pairing->pairs.empty() ? static_cast<uint32_t>(pairing->pairs.size()) : 1;
}

void Engine::next_rail_after(Pair& p, const cm::Failure& f) {
  // Silence, not a refusal: a REJ came from the peer's CM over this very pair, and a local
  // error says nothing of the path.
  switch (f.kind) {
    case cm::FailKind::unreachable:
    case cm::FailKind::address_error:
    case cm::FailKind::route_error:
    case cm::FailKind::connect_error:
      break;
    default:
      return;
  }
  const uint32_t n = rails_paired(p.peer);
  if (n < 2) return;
  const uint32_t from = rail_for(p);
  p.rail_shift = (p.rail_shift + 1) % n;
  WIREUP_LOG(info, "rank %u lane %u attempt %u: no answer over rail %u (%s); the next attempt takes rail %u", p.peer,
             p.lane, p.attempt, from, to_string(f.kind), rail_for(p));
}

uint32_t Engine::rail_of_request(const prov::CmEvent& ev) const {
  if (ev.listen_id == nullptr || !is_listener_tag(ev.listen_id->route().tag)) return 0;
  const uint32_t rail = rail_of_tag(ev.listen_id->route().tag);
  return rail < admission_.rails() ? rail : 0;
}

void Engine::move_waiters_off(uint32_t rail) {
  pairs_.move_starts(rail, [&](const Pair& p) { return rail_for(p); });
  for (uint64_t key : admission_.take_waiters(rail)) {
    Pair* p = pairs_.at(key);
    if (p == nullptr || !p->open()) continue;
    // Due, waiting for the lost rail's connect window: it waits for its new rail's instead.
    if (p->state() == PairState::waiting) {
      if (p->role == cm::Role::active) admission_.wait_for_connect(rail_for(*p), key);
      continue;
    }
    // Waiting for a QP place there: its id is on the lost device and can go no further. Its
    // places go back (to the lost rail, where they were counted); the active side tries again
    // at once on its new route (within its attempts), the passive side waits for the peer's.
    auto* cs = p->as<Connecting>();
    if (cs == nullptr || cs->holds_qp_place || cs->rail != rail) continue;
    abandon_attempt(*p);
    if (p->role == cm::Role::passive) continue;
    if (p->attempt < opt().max_attempts) {
      ++stats_[Counter::retries];
      admission_.wait_for_connect(rail_for(*p), key);
      continue;
    }
    cm::Failure f;
    f.kind = cm::FailKind::device_removal;
    f.error = Error::make(ErrorCode::device_removed, "rail " + std::to_string(rail) + " lost",
                          "its attempts ran out while it waited for a QP place on the lost rail");
    f.error.peer = "rank " + std::to_string(p->peer) + " lane " + std::to_string(p->lane);
    give_up(*p, f, PeerError::Cause::device_removed);
  }
}

bool Engine::lose_rail(uint32_t rail, const std::string& why) {
  if (watch_.lost()) return false;
  const bool was_left = rails_.state(rail) != RailState::lost;
  if (!rails_.lose(rail)) return false;  // the last rail: the device as a whole
  if (!was_left) return true;            // said already (every id of the device reports it)
  WIREUP_LOG(warn, "rank %u: rail %u (%s) lost: %s; its unsettled lanes move to the rails left", opt().rank, rail,
             rails_.local()[rail].address.addr.to_string().c_str(), why.c_str());
  // What waited on its windows now waits on the rails left.
  move_waiters_off(rail);
  // Peers no rail left reaches: their open pairs are given up, naming the rail.
  for (Pair& p : pairs_) {
    const PeerPairing* pairing = rails_.pairing(p.peer);
    if (pairing == nullptr || pairing->basis != PairingBasis::unreachable || !p.open()) continue;
    cm::Failure f;
    f.kind = cm::FailKind::device_removal;
    f.error = Error::make(ErrorCode::device_removed, "rail " + std::to_string(rail) + " lost", why + "; " + pairing->why);
    f.error.peer = "rank " + std::to_string(p.peer) + " lane " + std::to_string(p.lane);
    give_up(p, f, PeerError::Cause::device_removed);
  }
  return true;
}

uint32_t Engine::rail_of(const cm::Connection& c) const {
  const auto& pr = fixed_.profiles;
  for (size_t r = 0; r < pr.size(); ++r)
    if (&pr[r] == &c.profile()) return static_cast<uint32_t>(r);
  return 0;
}

// A port going down (PORT_ERR) is not a removal: the QPs of the rail stay in RTS and fail only
// if their traffic's retries run out, and the port may come back (PORT_ACTIVE) within the
// wireup (device_watch.cc names the kernel and rdma-core sources). So with another rail up
// the rail takes no new attempt until then, and what is under way on it moves; nothing is
// failed. With one rail, or none other up, everything stays where it is and each attempt's
// CM decides, as a single-rail engine always did: failing the wireup on a flap would lose
// lanes that would have connected a moment later.
void Engine::port_changed(const prov::DeviceEvent& ev, bool down) {
  const std::optional<uint32_t> rail = rails_.rail_on_port(ev.device, ev.port);
  if (!rail || !rails_.several() || watch_.lost()) {
    WIREUP_LOG(info, "rank %u: %s", opt().rank, ev.describe().c_str());
    return;
  }
  const std::string where = "rail " + std::to_string(*rail) + " (" + ev.device + " port " +
                            std::to_string(ev.port) + ", " +
                            (*rail < bound_.size() ? bound_[*rail].addr : rails_.local()[*rail].address.addr).to_string() +
                            ")";
  if (!down) {
    if (rails_.port_up(*rail) == RailRoutes::PortChange::back)
      WIREUP_LOG(warn, "rank %u: %s is up again (PORT_ACTIVE): it takes new attempts", opt().rank, where.c_str());
    else
      WIREUP_LOG(info, "rank %u: %s: %s", opt().rank, where.c_str(), ev.describe().c_str());
    return;
  }
  size_t established = 0;
  for (const Pair& p : pairs_)
    if (auto* e = p.as<Established>(); e && records_.link(records_.results()[e->result].link).rail == *rail) ++established;
  switch (rails_.port_down(*rail)) {
    case RailRoutes::PortChange::moved: {
      // First attempts queued behind this rail's window wait behind their new rail's instead
      //: each rail has its own start queue, and this one takes no new attempt while its port is down).
      pairs_.move_starts(*rail, [&](const Pair& p) { return rail_for(p); });
      const size_t moved = move_off(*rail);
      WIREUP_LOG(warn,
                 "rank %u: %s port down (PORT_ERR): new attempts leave from the rails up; %zu unsettled attempts "
                 "moved; %zu established lanes stay (their QPs stay in RTS: their traffic decides)",
                 opt().rank, where.c_str(), moved, established);
      return;
    }
    case RailRoutes::PortChange::kept:
      WIREUP_LOG(warn,
                 "rank %u: %s port down (PORT_ERR), and no other rail is up: attempts stay, each one's CM decides; "
                 "%zu established lanes stay",
                 opt().rank, where.c_str(), established);
      return;
    default:
      WIREUP_LOG(warn, "rank %u: %s: %s (%zu established lanes on it)", opt().rank, where.c_str(),
                 ev.describe().c_str(), established);
      return;
  }
}

size_t Engine::move_off(uint32_t rail) {
  size_t moved = 0;
  for (Pair& p : pairs_) {
    auto* cs = p.as<Connecting>();
    if (cs == nullptr || p.role != cm::Role::active || rail_of(*cs->conn) != rail) continue;
    // Only before the peer's answer: a REP in hand means the connection is nearly done (and
    // the peer holds its half); it is left to finish or fail on its own.
    const cm::State st = cs->conn->state();
    if (st != cm::State::resolving_addr && st != cm::State::resolving_route && st != cm::State::route_resolved &&
        st != cm::State::connecting)
      continue;
    // The next attempt is a new one on the wire (the peer takes it as superseding a half-open
    // one): it must fit in the attempts, else this one is left to its CM.
    if (p.attempt >= opt().max_attempts) continue;
    abandon_attempt(p);
    ++stats_[Counter::retries];
    (void)retries_.schedule(pairs_.index(p), p.attempt, now());
    ++moved;
  }
  return moved;
}

}  // namespace wireup
