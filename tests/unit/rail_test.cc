// The multi-rail address (rail_address.h) and the rail pairing rule (rail_pairing.h).
#include <gtest/gtest.h>

#include <map>

#include "wireup/address.h"
#include "wireup/rail_address.h"
#include "wireup/rail_pairing.h"
#include "wireup/rail_routes.h"

namespace wireup {
namespace {

RailAddress ra(const char* text, uint8_t prefix) { return {prov::SockAddr::parse(text).value(), prefix}; }
LocalRail up(const char* text, uint8_t prefix) { return {ra(text, prefix), RailState::up}; }

TEST(RailAddress, OneRailIsTheFormatOneAddress) {
  const RailAddress one = ra("10.0.0.1:7471", 24);
  const std::vector<uint8_t> b = encode_rails(std::span(&one, 1));
  EXPECT_EQ(b, encode_address(one.addr));
  EXPECT_EQ(b.size(), 8u);
  Result<std::vector<RailAddress>> back = decode_rails(b);
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].addr, one.addr);
  EXPECT_EQ((*back)[0].prefix_len, 0);  // format 1 carries no prefix
}

TEST(RailAddress, SeveralRailsRoundTripInFormatTwo) {
  const std::vector<RailAddress> rails = {ra("10.0.1.1:7471", 24), ra("[fd00::2]:9000", 64), ra("10.0.2.1:7472", 16)};
  const std::vector<uint8_t> b = encode_rails(rails);
  ASSERT_EQ(b.size(), 2u + 8 + 20 + 8);
  EXPECT_EQ(b[0], 2);
  EXPECT_EQ(b[1], 3);
  Result<std::vector<RailAddress>> back = decode_rails(b);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, rails);
}

TEST(RailAddress, EncodeRefusesWhatItCannotSay) {
  EXPECT_TRUE(encode_rails({}).empty());
  const std::vector<RailAddress> too_many(kMaxRails + 1, ra("10.0.0.1:1", 24));
  EXPECT_TRUE(encode_rails(too_many).empty());
  const std::vector<RailAddress> long_prefix = {ra("10.0.0.1:1", 33), ra("10.0.0.2:1", 24)};
  EXPECT_TRUE(encode_rails(long_prefix).empty());
  const std::vector<RailAddress> max = std::vector<RailAddress>(kMaxRails, ra("[fd00::1]:1", 64));
  EXPECT_EQ(encode_rails(max).size(), kRailAddressBytesMax);
}

TEST(RailAddress, DecodeNamesWhatIsWrongAndWhere) {
  const std::vector<RailAddress> rails = {ra("10.0.1.1:7471", 24), ra("10.0.2.1:7471", 24)};
  std::vector<uint8_t> b = encode_rails(rails);
  auto detail = [](std::vector<uint8_t> bytes) {
    Result<std::vector<RailAddress>> r = decode_rails(bytes);
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().detail;
  };
  EXPECT_EQ(detail({}), "0 bytes, at least 4 needed");
  EXPECT_EQ(detail({3, 2}), "format version 3, expected 1 or 2");
  EXPECT_EQ(detail({2}), "format 2 with no rail count");
  EXPECT_EQ(detail({2, 1}), "format 2 with 1 rails, expected 2 to 16");
  std::vector<uint8_t> cut(b.begin(), b.end() - 1);
  EXPECT_EQ(detail(cut), "rail 1: ends after 17 bytes");
  std::vector<uint8_t> fam = b;
  fam[2 + 8] = 5;
  EXPECT_EQ(detail(fam), "rail 1: family 5, expected 4 or 6");
  std::vector<uint8_t> pre = b;
  pre[3] = 40;
  EXPECT_EQ(detail(pre), "rail 0: prefix length 40 for an IPv4 address");
  std::vector<uint8_t> port0 = b;
  port0[4] = port0[5] = 0;
  EXPECT_EQ(detail(port0), "rail 0: port 0: the peer published an address it does not listen on");
  std::vector<uint8_t> extra = b;
  extra.push_back(0);
  EXPECT_EQ(detail(extra), "1 bytes after the last of 2 rails");
}

TEST(RailPairing, SameSubnetUsesBothPrefixes) {
  EXPECT_TRUE(same_subnet(ra("10.0.1.1:1", 24), ra("10.0.1.200:1", 24)));
  EXPECT_TRUE(same_subnet(ra("10.0.1.1:1", 24), ra("10.0.1.200:1", 0)));  // peer's prefix unknown
  EXPECT_FALSE(same_subnet(ra("10.0.1.1:1", 24), ra("10.0.2.1:1", 24)));
  EXPECT_FALSE(same_subnet(ra("10.0.1.1:1", 24), ra("10.0.1.2:1", 16)));  // the subnets disagree
  EXPECT_FALSE(same_subnet(ra("10.0.1.1:1", 0), ra("10.0.1.2:1", 24)));   // ours unknown: no claim
  EXPECT_TRUE(same_subnet(ra("10.0.1.1:1", 20), ra("10.0.14.1:1", 20)));  // 10.0.0.0/20
  EXPECT_FALSE(same_subnet(ra("10.0.1.1:1", 20), ra("10.0.16.1:1", 20)));
  EXPECT_TRUE(same_subnet(ra("[fd00:1::1]:1", 64), ra("[fd00:1::9]:1", 64)));
  EXPECT_FALSE(same_subnet(ra("[fd00:1::1]:1", 64), ra("[fd00:2::1]:1", 64)));
  EXPECT_FALSE(same_subnet(ra("10.0.1.1:1", 8), ra("[fd00:1::1]:1", 8)));
}

TEST(RailPairing, RailsPairBySubnetNotByPosition) {
  // This node lists its rails as (subnet 1, subnet 2); the peer lists them the other way round.
  const std::vector<LocalRail> mine = {up("10.0.1.1:7471", 24), up("10.0.2.1:7471", 24)};
  const std::vector<RailAddress> theirs = {ra("10.0.2.2:7471", 24), ra("10.0.1.2:7471", 24)};
  PeerPairing p = pair_by_subnet(mine, theirs);
  EXPECT_EQ(p.basis, PairingBasis::same_subnet);
  EXPECT_EQ(p.pairs, (std::vector<RailPair>{{0, 1}, {1, 0}}));
  EXPECT_EQ(p.why, "same subnet: 10.0.1.1/24 -> 10.0.1.2/24, 10.0.2.1/24 -> 10.0.2.2/24");
  // Lanes stripe, starting at the peer's rank.
  EXPECT_EQ(lane_pair(p, 0, 0), (RailPair{0, 1}));
  EXPECT_EQ(lane_pair(p, 1, 0), (RailPair{1, 0}));
  EXPECT_EQ(lane_pair(p, 0, 1), (RailPair{1, 0}));
  EXPECT_EQ(lane_pair(p, 3, 6), (RailPair{1, 0}));
}

TEST(RailPairing, OneFlatSubnetSpreadsOverDistinctRails) {
  const std::vector<LocalRail> mine = {up("10.0.0.1:1", 16), up("10.0.0.2:1", 16)};
  const std::vector<RailAddress> theirs = {ra("10.0.0.3:1", 16), ra("10.0.0.4:1", 16)};
  PeerPairing p = pair_by_subnet(mine, theirs);
  EXPECT_EQ(p.pairs, (std::vector<RailPair>{{0, 0}, {1, 1}}));
}

TEST(RailPairing, ARailThatReachesNothingCarriesNoLane) {
  // Our rail 1 is in a subnet the peer has no rail in; the peer has one rail.
  const std::vector<LocalRail> mine = {up("10.0.1.1:1", 24), up("10.0.9.1:1", 24)};
  const std::vector<RailAddress> theirs = {ra("10.0.1.7:1", 24)};
  PeerPairing p = pair_by_subnet(mine, theirs);
  EXPECT_EQ(p.pairs, (std::vector<RailPair>{{0, 0}}));
  for (uint32_t lane = 0; lane < 4; ++lane) EXPECT_EQ(lane_pair(p, lane, 5).local, 0u);
}

TEST(RailPairing, ADownRailMovesItsLanesToTheOthers) {
  std::vector<LocalRail> mine = {up("10.0.1.1:1", 24), up("10.0.2.1:1", 24)};
  const std::vector<RailAddress> theirs = {ra("10.0.1.2:1", 24), ra("10.0.2.2:1", 24)};
  mine[0].state = RailState::lost;
  PeerPairing p = pair_by_subnet(mine, theirs);
  EXPECT_EQ(p.pairs, (std::vector<RailPair>{{1, 1}}));
  mine[1].state = RailState::port_down;
  p = pair_by_subnet(mine, theirs);
  EXPECT_EQ(p.basis, PairingBasis::unreachable);
  EXPECT_EQ(p.why, "no rail here (10.0.1.1/24 (lost), 10.0.2.1/24 (port down)) shares a subnet with the peer's "
                   "(10.0.1.2/24, 10.0.2.2/24)");
}

TEST(RailPairing, RoutedOnlyWhereTheRouteResolved) {
  const std::vector<LocalRail> mine = {up("10.1.0.1:1", 24), up("10.2.0.1:1", 24)};
  const std::vector<RailAddress> theirs = {ra("10.3.0.1:1", 24), ra("10.4.0.1:1", 24)};
  ASSERT_EQ(pair_by_subnet(mine, theirs).basis, PairingBasis::unreachable);
  // Only our rail 1 has a route, and only to their rail 0.
  PeerPairing p = pair_by_route(mine, theirs, [](uint32_t l, uint32_t r) { return l == 1 && r == 0; });
  EXPECT_EQ(p.basis, PairingBasis::routed);
  EXPECT_EQ(p.pairs, (std::vector<RailPair>{{1, 0}}));
  EXPECT_EQ(p.why, "no common subnet, routed: 10.2.0.1/24 -> 10.3.0.1/24");
  p = pair_by_route(mine, theirs, [](uint32_t, uint32_t) { return false; });
  EXPECT_EQ(p.basis, PairingBasis::unreachable);
  EXPECT_NE(p.why.find("no common subnet and no route resolved"), std::string::npos);
}

TEST(RailRoutes, OneRailOnBothEndsKeepsNothing) {
  RailRoutes r({up("10.0.0.1:0", 24)}, nullptr);
  const RailAddress peer = ra("10.0.0.2:7471", 0);
  EXPECT_EQ(r.set_peer(5, std::span(&peer, 1)), nullptr);
  EXPECT_EQ(r.pairing(5), nullptr);
  EXPECT_FALSE(r.route(5, 0, 0).has_value()) << "the lane goes to the peer table's address, as with one rail";
}

TEST(RailRoutes, OneRailEachKeepsOnlyAPeerItDoesNotReach) {
  // Same subnet: no route is looked up, nothing kept.
  int asked = 0;
  RailRoutes same({up("10.0.0.1:0", 24)}, [&](const prov::SockAddr&, const prov::SockAddr&) { return ++asked, false; });
  const RailAddress near = ra("10.0.0.9:7471", 0);
  EXPECT_EQ(same.set_peer(5, std::span(&near, 1)), nullptr);
  EXPECT_EQ(asked, 0);
  // Another subnet with a route out of our netdev: taken, nothing kept.
  RailRoutes routed({up("10.0.0.1:0", 24)}, [](const prov::SockAddr&, const prov::SockAddr&) { return true; });
  const RailAddress far = ra("10.0.2.1:7471", 0);
  EXPECT_EQ(routed.set_peer(6, std::span(&far, 1)), nullptr);
  EXPECT_FALSE(routed.route(6, 0, 0).has_value());
  // Another subnet, no route (the local ranks took NICs on fabrics that do not route to each
  // other): kept as unreachable, so the engine gives its lanes up at start.
  RailRoutes none({up("10.0.0.1:0", 24)}, [](const prov::SockAddr&, const prov::SockAddr&) { return false; });
  const PeerPairing* p = none.set_peer(7, std::span(&far, 1));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->basis, PairingBasis::unreachable);
  EXPECT_EQ(none.pairing(7), p);
  EXPECT_FALSE(none.route(7, 0, 0).has_value());
  EXPECT_NE(p->why.find("10.0.0.1/24"), std::string::npos) << p->why;
  EXPECT_NE(p->why.find("10.0.2.1"), std::string::npos) << p->why;
  EXPECT_NE(p->why.find("device.rails = \"all\""), std::string::npos) << p->why;
  // Its address published again, now in our subnet: the entry goes.
  EXPECT_EQ(none.set_peer(7, std::span(&near, 1)), nullptr);
  EXPECT_EQ(none.pairing(7), nullptr);
}

TEST(RailRoutes, LanesStripeOverThePairsInTheirSubnets) {
  // Names crossed on the peer: its first rail is in our second rail's subnet.
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, nullptr);
  const std::vector<RailAddress> peer{ra("10.0.2.7:7000", 24), ra("10.0.1.7:7001", 24)};
  const PeerPairing* p = r.set_peer(3, peer);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->basis, PairingBasis::same_subnet);
  for (uint32_t lane = 0; lane < 4; ++lane) {
    auto route = r.route(3, lane, 0);
    ASSERT_TRUE(route.has_value());
    EXPECT_EQ(route->rail, (lane + 3) % 2) << "lane " << lane;
    EXPECT_EQ(route->remote, route->rail == 0 ? peer[1].addr : peer[0].addr) << "lane " << lane;
  }
}

TEST(RailRoutes, AShiftedLaneTakesTheNextPair) {
  // A lane whose attempts got no answer moves on by whole pairs (Pair::rail_shift), wrapping.
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24), up("10.0.3.1:0", 24)}, nullptr);
  const std::vector<RailAddress> peer{ra("10.0.1.7:7000", 24), ra("10.0.2.7:7001", 24), ra("10.0.3.7:7002", 24)};
  ASSERT_NE(r.set_peer(4, peer), nullptr);
  for (uint32_t lane = 0; lane < 3; ++lane)
    for (uint32_t shift = 0; shift < 3; ++shift) {
      auto route = r.route(4, lane, 1, shift);
      ASSERT_TRUE(route.has_value());
      EXPECT_EQ(route->rail, (lane + 5 + shift) % 3) << "lane " << lane << " shift " << shift;
      EXPECT_EQ(route->remote, peer[route->rail].addr) << "lane " << lane << " shift " << shift;
    }
}

TEST(RailRoutes, NoSubnetAsksTheRouteCheckElseUnreachable) {
  std::vector<std::pair<std::string, std::string>> asked;
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, [&](const prov::SockAddr& a, const prov::SockAddr& b) {
    asked.emplace_back(a.to_string(), b.to_string());
    return false;
  });
  const std::vector<RailAddress> peer{ra("192.168.0.7:7000", 24), ra("192.168.1.7:7001", 24)};
  const PeerPairing* p = r.set_peer(1, peer);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->basis, PairingBasis::unreachable);
  EXPECT_EQ(asked.size(), 4u) << "every local rail against every peer rail";
  EXPECT_FALSE(r.route(1, 0, 0).has_value());
  // Without a check every pair is taken as routed, and the reason says the CM decides.
  RailRoutes unchecked({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, nullptr);
  p = unchecked.set_peer(1, peer);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->basis, PairingBasis::routed);
  EXPECT_NE(p->why.find("routes not checked"), std::string::npos) << p->why;
}

// The lanes each rail gets of lanes 0..3 to rank 3 (rank 0 here).
std::map<uint32_t, int> rails_of_lanes(const RailRoutes& r) {
  std::map<uint32_t, int> n;
  for (uint32_t lane = 0; lane < 4; ++lane)
    if (auto route = r.route(3, lane, 0)) ++n[route->rail];
  return n;
}

TEST(RailRoutes, APortDownRailTakesNoLaneUntilItComesBack) {
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, nullptr);
  const std::vector<RailAddress> peer{ra("10.0.1.7:7000", 24), ra("10.0.2.7:7000", 24)};
  ASSERT_NE(r.set_peer(3, peer), nullptr);
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{0, 2}, {1, 2}}));
  EXPECT_EQ(r.port_down(1), RailRoutes::PortChange::moved);
  EXPECT_EQ(r.state(1), RailState::port_down);
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{0, 4}}));
  EXPECT_EQ(r.pairing(3)->basis, PairingBasis::same_subnet);
  EXPECT_EQ(r.port_down(1), RailRoutes::PortChange::none) << "a second PORT_ERR changes nothing";
  EXPECT_EQ(r.port_up(1), RailRoutes::PortChange::back);
  EXPECT_EQ(r.state(1), RailState::up);
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{0, 2}, {1, 2}}));
  EXPECT_EQ(r.port_up(1), RailRoutes::PortChange::none);
}

TEST(RailRoutes, WithOneRailAPortDownChangesNothing) {
  RailRoutes r({up("10.0.1.1:0", 24)}, nullptr);
  EXPECT_EQ(r.port_down(0), RailRoutes::PortChange::none);
  EXPECT_EQ(r.state(0), RailState::up) << "one rail: the CM decides, as before";
}

TEST(RailRoutes, WithNoOtherRailUpThePortDownRailsStillCarry) {
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, nullptr);
  const std::vector<RailAddress> peer{ra("10.0.1.7:7000", 24), ra("10.0.2.7:7000", 24)};
  ASSERT_NE(r.set_peer(3, peer), nullptr);
  EXPECT_EQ(r.port_down(1), RailRoutes::PortChange::moved);
  EXPECT_EQ(r.port_down(0), RailRoutes::PortChange::kept);
  EXPECT_TRUE(r.any_left());
  // Both down: the lanes stripe over both as if up (nothing is given up on a flap).
  EXPECT_NE(r.pairing(3)->basis, PairingBasis::unreachable);
  EXPECT_NE(r.pairing(3)->why.find("port is down"), std::string::npos) << r.pairing(3)->why;
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{0, 2}, {1, 2}}));
  // Rail 0 back: it alone carries, rail 1 still down.
  EXPECT_EQ(r.port_up(0), RailRoutes::PortChange::back);
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{0, 4}}));
}

TEST(RailRoutes, APeerOnlyAPortDownRailReachesIsKeptThere) {
  // No route between the subnets: only rail 1 reaches the peer.
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, [](const prov::SockAddr&, const prov::SockAddr&) {
    return false;
  });
  const RailAddress peer = ra("10.0.2.7:7000", 24);  // one rail, in our rail 1's subnet
  ASSERT_NE(r.set_peer(3, std::span(&peer, 1)), nullptr);
  EXPECT_EQ(r.port_down(1), RailRoutes::PortChange::moved);
  EXPECT_EQ(r.pairing(3)->basis, PairingBasis::same_subnet) << "not unreachable: the port may come back";
  EXPECT_EQ(rails_of_lanes(r), (std::map<uint32_t, int>{{1, 4}}));
  // Its device gone, the rail is lost for good and the peer unreachable.
  EXPECT_TRUE(r.lose(1));
  EXPECT_EQ(r.state(1), RailState::lost);
  EXPECT_EQ(r.pairing(3)->basis, PairingBasis::unreachable);
  EXPECT_NE(r.pairing(3)->why.find("(lost)"), std::string::npos) << r.pairing(3)->why;
}

TEST(RailRoutes, ALostRailIgnoresPortEvents) {
  RailRoutes r({up("10.0.1.1:0", 24), up("10.0.2.1:0", 24)}, nullptr);
  EXPECT_TRUE(r.lose(1));
  EXPECT_EQ(r.port_up(1), RailRoutes::PortChange::none);
  EXPECT_EQ(r.port_down(1), RailRoutes::PortChange::none);
  EXPECT_EQ(r.state(1), RailState::lost);
  // Rail 0 is the only one left: its port down is kept (the CM decides), and lost it is the end.
  EXPECT_EQ(r.port_down(0), RailRoutes::PortChange::kept);
  EXPECT_FALSE(r.lose(0));
}

}  // namespace
}  // namespace wireup
