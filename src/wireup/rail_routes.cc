// The engine's rails and each peer's pairing (rail_routes.h).
#include "wireup/rail_routes.h"

#include <algorithm>

#include "wireup/device_watch.h"

namespace wireup {

const PeerPairing* RailRoutes::set_peer(uint32_t rank, std::span<const RailAddress> theirs) {
  if (mine_.size() <= 1 && theirs.size() <= 1) {
    peers_.erase(rank);
    // One rail on both ends: nothing to choose, and nothing kept for a peer our rail reaches (a
    // one-rail job of 10^4 ranks keeps no entry per peer; in one subnet, no route is looked
    // up either). A peer in another subnet with no route out of our rail's netdev is kept as
    // unreachable, so that its lanes are given up at start with the reason: two NICs per node
    // on fabrics that do not route to each other, each rank on the one its local rank took,
    // would otherwise send REQs into silence until the CM's retries ran out.
    // (Our prefix unknown, as with listen_ip: nothing to go by, the CM decides as ever.)
    if (mine_.size() != 1 || theirs.size() != 1 || mine_[0].address.prefix_len == 0 ||
        same_subnet(mine_[0].address, theirs[0]))
      return nullptr;
    PeerPairing p = pair_over(mine_, theirs);
    if (p.basis != PairingBasis::unreachable) return nullptr;
    p.why += "; with one rail each, a fabric whose subnets do not route to each other needs device.rails = \"all\"";
    Entry e;
    e.theirs.assign(theirs.begin(), theirs.end());
    e.pairing = std::move(p);
    return &peers_.insert_or_assign(rank, std::move(e)).first->second.pairing;
  }
  Entry e;
  e.theirs.assign(theirs.begin(), theirs.end());
  e.pairing = pair(theirs);
  auto [it, fresh] = peers_.insert_or_assign(rank, std::move(e));
  (void)fresh;
  return &it->second.pairing;
}

PeerPairing RailRoutes::pair(std::span<const RailAddress> theirs) const {
  PeerPairing p = pair_over(mine_, theirs);
  const bool some_port_down =
      std::any_of(mine_.begin(), mine_.end(), [](const LocalRail& r) { return r.state == RailState::port_down; });
  if (p.basis != PairingBasis::unreachable || !some_port_down) return p;
  // No rail up reaches the peer, but one whose port is down would: its attempts go there and
  // their CM decides (the port may come back; given up now, the peer would be lost for good).
  std::vector<LocalRail> fallback = mine_;
  for (LocalRail& r : fallback)
    if (r.state == RailState::port_down) r.state = RailState::up;
  PeerPairing q = pair_over(fallback, theirs);
  if (q.basis == PairingBasis::unreachable) return p;
  q.why += " (through a rail whose port is down: no rail up reaches the peer)";
  return q;
}

PeerPairing RailRoutes::pair_over(std::span<const LocalRail> mine, std::span<const RailAddress> theirs) const {
  PeerPairing p = pair_by_subnet(mine, theirs);
  if (p.basis != PairingBasis::unreachable) return p;
  // Step 2: only when no rail shares a subnet with any of the peer's.
  p = pair_by_route(mine, theirs, [&](uint32_t l, uint32_t r) {
    return !check_ || check_(mine[l].address.addr, theirs[r].addr);
  });
  if (!check_ && p.basis == PairingBasis::routed) p.why += " (routes not checked: the CM's address resolution decides)";
  return p;
}

void RailRoutes::pair_again() {
  for (auto& [rank, e] : peers_) e.pairing = pair(e.theirs);
}

bool RailRoutes::lose(uint32_t rail) {
  if (rail < mine_.size() && mine_[rail].state != RailState::lost) {
    mine_[rail].state = RailState::lost;
    pair_again();
  }
  return any_left();
}

bool RailRoutes::any_left() const {
  return std::any_of(mine_.begin(), mine_.end(), [](const LocalRail& r) { return r.state != RailState::lost; });
}

bool RailRoutes::any_up() const {
  return std::any_of(mine_.begin(), mine_.end(), [](const LocalRail& r) { return r.state == RailState::up; });
}

RailRoutes::PortChange RailRoutes::port_down(uint32_t rail) {
  if (!several() || rail >= mine_.size() || mine_[rail].state != RailState::up) return PortChange::none;
  mine_[rail].state = RailState::port_down;
  pair_again();
  return any_up() ? PortChange::moved : PortChange::kept;
}

RailRoutes::PortChange RailRoutes::port_up(uint32_t rail) {
  if (!several() || rail >= mine_.size() || mine_[rail].state != RailState::port_down) return PortChange::none;
  mine_[rail].state = RailState::up;
  pair_again();
  return PortChange::back;
}

std::optional<uint32_t> RailRoutes::rail_on_port(const std::string& name, uint8_t port) const {
  for (size_t i = 0; i < bound_.size(); ++i)
    if (bound_[i].device != nullptr && bound_[i].device->info().name == name && names_port(port, bound_[i].port))
      return static_cast<uint32_t>(i);
  return std::nullopt;
}

std::optional<uint32_t> RailRoutes::rail_named(const std::string& name) const {
  for (size_t i = 0; i < bound_.size(); ++i)
    if (bound_[i].device != nullptr && bound_[i].device->info().name == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

const PeerPairing* RailRoutes::pairing(uint32_t rank) const {
  auto it = peers_.find(rank);
  return it != peers_.end() ? &it->second.pairing : nullptr;
}

std::optional<RailRoutes::Route> RailRoutes::route(uint32_t rank, uint32_t lane, uint32_t self,
                                                   uint32_t shift) const {
  auto it = peers_.find(rank);
  if (it == peers_.end() || it->second.pairing.pairs.empty()) return std::nullopt;
  const RailPair p = lane_pair(it->second.pairing, lane, rank + self + shift);
  return Route{p.local, it->second.theirs[p.peer].addr};
}

uint32_t RailRoutes::rail_of(const prov::Device* dev) const {
  if (dev == nullptr) return 0;
  auto it = std::find_if(bound_.begin(), bound_.end(), [&](const Bound& b) { return b.device == dev; });
  return it != bound_.end() ? static_cast<uint32_t>(it - bound_.begin()) : 0;
}

void RailRoutes::set_device(uint32_t rail, const prov::Device* dev, uint8_t port) {
  if (bound_.size() <= rail) bound_.resize(rail + 1);
  bound_[rail] = Bound{dev, port};
}

}  // namespace wireup
