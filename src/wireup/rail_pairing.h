// Which of this process's rails carries each lane to a peer, and to which of the peer's rails.
//
// Rails pair by reachability, never by name or position in a list (nodes whose NICs are named
// or ordered differently must still pair, and a rail that cannot reach a peer's rail must not
// be tried: NCCL's position pairing hangs or times out in both cases):
//  1. same subnet: a local rail pairs with the peer's rails in its subnet (its prefix, and the
//     peer's when the peer published one);
//  2. only when no rail shares a subnet with any of the peer's: the pairs whose route resolved
//     (the engine resolves them, rdma_resolve_addr from the rail's address; pure here);
//  3. no pair at all: the peer is unreachable, and the reason names the rails on both sides.
// Each local rail takes at most one peer rail, the least used of those it reaches (ties: the
// one at the same index, which only decides between rails that all reach each other), so
// that lanes spread over distinct rails on both ends. Lanes stripe over the pairs, starting at
// an offset of ranks (the engine gives the sum of both ranks, rail_routes.h) so that
// single-lane peers spread over the rails too.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "wireup/rail_address.h"

namespace wireup {

// Where a local rail stands. Only `up` rails are paired (choose below); rail_routes.h decides
// when a `port_down` one is taken anyway (no rail up reaches the peer).
enum class RailState : uint8_t {
  up,         // carries lanes
  port_down,  // its port reported PORT_ERR: no new attempt leaves from it until PORT_ACTIVE
  lost,       // its device is gone (DEVICE_REMOVAL, DEVICE_FATAL): never again
};
const char* to_string(RailState s);

struct LocalRail {
  RailAddress address;  // the rail's listen address and its subnet's prefix length
  RailState state = RailState::up;
};

enum class PairingBasis : uint8_t { same_subnet, routed, unreachable };
const char* to_string(PairingBasis b);

struct RailPair {
  uint32_t local = 0;  // index into this process's rails
  uint32_t peer = 0;   // index into the peer's published rails
  bool operator==(const RailPair&) const = default;
};

struct PeerPairing {
  PairingBasis basis = PairingBasis::unreachable;
  std::vector<RailPair> pairs;  // in local rail order; empty when unreachable
  std::string why;              // one sentence for logs, results and the runner's summary
};

// True when `a` and `b` are in one subnet: equal under a's prefix, and the prefixes agree
// where b's is known. A prefix of 0 on `a` never matches (nothing is known).
bool same_subnet(const RailAddress& a, const RailAddress& b);

// Step 1, or `unreachable` when no pair shares a subnet (then the engine resolves routes).
PeerPairing pair_by_subnet(std::span<const LocalRail> mine, std::span<const RailAddress> theirs);

// Step 2: the pairs `resolved` says have a route, chosen by the same rule.
PeerPairing pair_by_route(std::span<const LocalRail> mine, std::span<const RailAddress> theirs,
                          const std::function<bool(uint32_t local, uint32_t peer)>& resolved);

// The pair lane `lane` takes, striping from `offset` (rail_routes.h: the sum of both ranks);
// the pairing must not be unreachable.
RailPair lane_pair(const PeerPairing& p, uint32_t lane, uint32_t offset);

}  // namespace wireup
