// The engine's rails and each peer's pairing (rail_routes.h).
#include "wireup/rail_routes.h"

#include <algorithm>

namespace wireup {

const PeerPairing* RailRoutes::set_peer(uint32_t rank, std::span<const RailAddress> theirs) {
  if (mine_.size() <= 1 && theirs.size() <= 1) {
    peers_.erase(rank);
    return nullptr;
  }
  Entry e;
  e.theirs.assign(theirs.begin(), theirs.end());
  e.pairing = pair(theirs);
  auto [it, fresh] = peers_.insert_or_assign(rank, std::move(e));
  (void)fresh;
  return &it->second.pairing;
}

PeerPairing RailRoutes::pair(std::span<const RailAddress> theirs) const {
  PeerPairing p = pair_by_subnet(mine_, theirs);
  if (p.basis != PairingBasis::unreachable) return p;
  // Step 2: only when no rail shares a subnet with any of the peer's.
  p = pair_by_route(mine_, theirs, [&](uint32_t l, uint32_t r) {
    return !check_ || check_(mine_[l].address.addr, theirs[r].addr);
  });
  if (!check_ && p.basis == PairingBasis::routed) p.why += " (routes not checked: the CM's address resolution decides)";
  return p;
}

bool RailRoutes::take_down(uint32_t rail) {
  if (rail < mine_.size() && mine_[rail].up) {
    mine_[rail].up = false;
    for (auto& [rank, e] : peers_) e.pairing = pair(e.theirs);
  }
  return any_up();
}

bool RailRoutes::any_up() const {
  return std::any_of(mine_.begin(), mine_.end(), [](const LocalRail& r) { return r.up; });
}

std::optional<uint32_t> RailRoutes::rail_named(const std::string& name) const {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i] != nullptr && devices_[i]->info().name == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

const PeerPairing* RailRoutes::pairing(uint32_t rank) const {
  auto it = peers_.find(rank);
  return it != peers_.end() ? &it->second.pairing : nullptr;
}

std::optional<RailRoutes::Route> RailRoutes::route(uint32_t rank, uint32_t lane, uint32_t self) const {
  auto it = peers_.find(rank);
  if (it == peers_.end() || it->second.pairing.pairs.empty()) return std::nullopt;
  const RailPair p = lane_pair(it->second.pairing, lane, rank + self);
  return Route{p.local, it->second.theirs[p.peer].addr};
}

uint32_t RailRoutes::rail_of(const prov::Device* dev) const {
  auto it = std::find(devices_.begin(), devices_.end(), dev);
  return dev != nullptr && it != devices_.end() ? static_cast<uint32_t>(it - devices_.begin()) : 0;
}

void RailRoutes::set_device(uint32_t rail, const prov::Device* dev) {
  if (devices_.size() <= rail) devices_.resize(rail + 1, nullptr);
  devices_[rail] = dev;
}

}  // namespace wireup
