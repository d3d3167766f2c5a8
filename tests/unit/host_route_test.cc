// host/route.h: the route lookup out of one netdev that pairs rails with no common subnet.
#include <gtest/gtest.h>

#include <cstdlib>

#include "host/route.h"

namespace wireup::host {
namespace {

prov::SockAddr ip(const char* text) { return prov::SockAddr::parse(text).value(); }

TEST(HostRoute, LoopbackReachesItselfAndAnUnknownNetdevIsNoAnswer) {
  const prov::SockAddr lo = ip("127.0.0.1");
  EXPECT_EQ(route_out_of("lo", lo, ip("127.0.0.2")), std::optional<bool>(true));
  EXPECT_EQ(route_out_of("nosuchdev0", lo, lo), std::nullopt) << "no answer, not a no";
  EXPECT_EQ(route_out_of("", lo, lo), std::nullopt);
}

// The two-rail VM (scripts/vm/run.sh --rails 2): dummy0 holds 10.0.0.1/24, dummy1 10.0.2.1/24,
// no route joins them, so the route from each rail's address leaves through its own netdev for
// its own subnet only. tests/vm/rails-check.sh
// sets WIREUP_VM_RAILS.
TEST(HostRoute, InTheTwoRailVmEachNetdevReachesItsOwnSubnetOnly) {
  if (std::getenv("WIREUP_VM_RAILS") == nullptr)
    GTEST_SKIP() << "SKIPPED LOUDLY: needs the two-rail VM (tests/vm/rails-check.sh sets WIREUP_VM_RAILS)";
  const prov::SockAddr rail0 = ip("10.0.0.1"), rail1 = ip("10.0.2.1");
  EXPECT_EQ(route_out_of("dummy0", rail0, ip("10.0.0.5")), std::optional<bool>(true));
  EXPECT_EQ(route_out_of("dummy1", rail1, ip("10.0.2.5")), std::optional<bool>(true));
  EXPECT_EQ(route_out_of("dummy1", rail1, ip("10.0.0.5")), std::optional<bool>(false));
  EXPECT_EQ(route_out_of("dummy0", rail0, ip("10.0.2.5")), std::optional<bool>(false));
  EXPECT_EQ(route_out_of("dummy1", rail1, ip("192.0.2.77")), std::optional<bool>(false)) << "no route at all";
}

}  // namespace
}  // namespace wireup::host
