// Whether a rail reaches a peer's address by a route: asked only for a peer with which no
// rail of ours shares a subnet (wireup/rail_pairing.h, step 2).
//
// The kernel's route from the rail's address to the peer's (RTM_GETROUTE with the source and
// the destination, what `ip route get TO from FROM` prints) must leave through the rail's own
// netdev: a route out of another interface (the management network's default route, another
// rail's subnet) is not this rail's. Binding a socket to the netdev instead (SO_BINDTODEVICE,
// connect) answers yes for any destination: with an output interface given and no route
// through it, the kernel assumes the destination is on that link (net/ipv4/route.c,
// ip_route_output_key_hash_rcu), which is also why rdma_resolve_addr would go on to ARP for
// it there and time out (seen in the two-rail VM: dummy1 "reached" 10.0.0.5 that way).
#pragma once

#include <optional>
#include <string>

#include "provider/types.h"

namespace wireup::host {

// true / false: the route from `from` to `to` leaves through `netdev` or not (no route: false);
// nullopt: the question could not be asked (no such netdev, netlink refused): the caller lets
// the CM's own resolution decide.
std::optional<bool> route_out_of(const std::string& netdev, const prov::SockAddr& from, const prov::SockAddr& to);

}  // namespace wireup::host
