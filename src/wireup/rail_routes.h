// The engine's rails: this process's listen addresses (rail 0 first) and, for each peer that
// published several rails or whom several local rails could reach, the pairing of
// rail_pairing.h, so that each lane knows which local rail it leaves from and which of the
// peer's addresses it goes to.
//
// One rail on both ends keeps no entry when our rail reaches the peer's address (its subnet,
// else a route out of our rail's netdev): the lane goes from rail 0 to the peer's only address,
// exactly as a single-rail engine always did. Only a peer it does not reach is kept, as
// unreachable.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "provider/provider.h"
#include "wireup/rail_pairing.h"

namespace wireup {

class RailRoutes {
 public:
  // Whether `from` (a local rail's address) reaches `to` (a peer rail's): asked only for a
  // peer with which no rail shares a subnet. Null: every such pair is taken as routed, and
  // the CM's address resolution of each lane decides (ADDR_ERROR / ROUTE_ERROR otherwise).
  using RouteCheck = std::function<bool(const prov::SockAddr& from, const prov::SockAddr& to)>;

  RailRoutes() = default;
  RailRoutes(std::vector<LocalRail> mine, RouteCheck check) : mine_(std::move(mine)), check_(std::move(check)) {}

  size_t size() const { return mine_.size(); }
  const std::vector<LocalRail>& local() const { return mine_; }
  bool several() const { return mine_.size() > 1; }

  // The peer's published rails: paired now (subnet, else route). Returns the pairing, or
  // nullptr when both ends have one rail and ours reaches the peer's (nothing kept).
  const PeerPairing* set_peer(uint32_t rank, std::span<const RailAddress> theirs);
  // nullptr: one rail on both ends that reach each other (rail 0 to the peer table's address).
  const PeerPairing* pairing(uint32_t rank) const;

  struct Route {
    uint32_t rail = 0;       // the local rail
    prov::SockAddr remote;   // the peer's address on the paired rail
  };
  // The route lane `lane` to `rank` takes, for this process's rank `self`; nullopt when the
  // peer has no entry (one rail on both ends) or is unreachable. Lanes stripe from the sum of
  // both ranks (lane_pair's offset): from the peer's rank alone, every peer that initiates
  // towards one rank would pick the same pair for its lane 0, and that rank's single-lane
  // peers would pile onto one rail whenever it is the passive side. `shift`: how many pairs
  // on from the striped one (a lane whose attempts got no answer moves on, Pair::rail_shift).
  std::optional<Route> route(uint32_t rank, uint32_t lane, uint32_t self, uint32_t shift = 0) const;
  // The local rail whose device is `dev` (by the listeners' devices the engine recorded), else 0.
  uint32_t rail_of(const prov::Device* dev) const;
  // Rail `rail` listens on `dev`'s port `port` (the listener's, after its bind).
  void set_device(uint32_t rail, const prov::Device* dev, uint8_t port);

  RailState state(uint32_t rail) const { return rail < mine_.size() ? mine_[rail].state : RailState::lost; }
  // Rail `rail`'s device is gone: it carries nothing from now on, and every peer is paired
  // again over the rails left. Returns whether a rail is left (up, or only its port down).
  bool lose(uint32_t rail);
  bool any_left() const;

  // A port event's effect on its rail. A port going down is not a device going away (see
  // device_watch.cc for what mlx5 and rxe do): the rail's connections stay, the port may come
  // back within the wireup, so the change is reversible and fails nothing.
  enum class PortChange : uint8_t {
    none,   // one rail, a lost rail, or the state the rail already had: nothing changed
    moved,  // port_down, another rail up: new attempts leave from the rails up
    kept,   // port_down, no other rail up: the rails whose port is down still carry, and each
            // attempt's CM decides (as with one rail: a flap must not cost the whole wireup)
    back,   // port_up: the rail carries new attempts again
  };
  PortChange port_down(uint32_t rail);
  PortChange port_up(uint32_t rail);
  // The local rail listening on device `name`'s port `port` (device_watch.h's names_port).
  std::optional<uint32_t> rail_on_port(const std::string& name, uint8_t port) const;
  // The local rail whose device is named `name`, if a listener was bound to it.
  std::optional<uint32_t> rail_named(const std::string& name) const;

  void release() { std::unordered_map<uint32_t, Entry>().swap(peers_); }

 private:
  struct Entry {
    std::vector<RailAddress> theirs;
    PeerPairing pairing;
  };
  // Pairs over the rails up; with none of them reaching the peer, over those whose port is
  // down too (a peer is given up only when no rail could ever reach it).
  PeerPairing pair(std::span<const RailAddress> theirs) const;
  PeerPairing pair_over(std::span<const LocalRail> mine, std::span<const RailAddress> theirs) const;
  void pair_again();
  bool any_up() const;
  std::vector<LocalRail> mine_;
  struct Bound {
    const prov::Device* device = nullptr;
    uint8_t port = 0;
  };
  std::vector<Bound> bound_;  // by rail, as the listeners were bound
  RouteCheck check_;
  std::unordered_map<uint32_t, Entry> peers_;
};

}  // namespace wireup
