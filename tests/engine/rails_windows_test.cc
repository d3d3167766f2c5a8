// Per-rail windows on the simulated fabric (admission.h): each rail has its own connect and QP
// windows, so with a window of 1 both rails carry a connect at once, and a rail whose peer side
// is slow holds back only its own lanes.
#include <algorithm>
#include <map>

#include "provider/sim/spec.h"
#include "tests/engine/rails_sim_job.h"

namespace wireup::etest {
namespace {

using namespace std::chrono_literals;

using rails_sim::by_rail;
using rails_sim::RailsJob;

constexpr auto kActive = static_cast<int>(cm::Role::active);

void windows_of_one(EngineOptions& o) {
  o.connect_window = 1;
  o.qp_window = 1;
}

// 6 ranks x 4 lanes: every rank initiates to 2 or 3 peers, 2 lanes of each on either rail.
TEST(RailsWindows, AWindowOfOnePerRailCarriesOneConnectOnEachRailAtOnce) {
  RailsJob j(6, 4, 21, windows_of_one);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  ASSERT_TRUE(drive(j.f, *job, 120s));
  for (uint32_t i = 0; i < 6; ++i) {
    const Engine& e = *job->ranks[i].engine;
    EXPECT_TRUE(e.errors().empty()) << "rank " << i;
    EXPECT_EQ(by_rail(e), (std::map<uint32_t, size_t>{{0, 10}, {1, 10}})) << "rank " << i;
    const Stats& s = e.stats();
    for (uint32_t r = 0; r < 2; ++r) {
      EXPECT_EQ(s.window_peaks(r).connects, 1u) << "rank " << i << " rail " << r;
      EXPECT_EQ(s.window_peaks(r).qps[kActive], 1u) << "rank " << i << " rail " << r;
      EXPECT_GT(s.rails()[r].connects_started, 0u) << "rank " << i << " rail " << r;
    }
    EXPECT_EQ(s.window_peaks_total().connects, 2u) << "rank " << i << ": both rails' windows in use at once";
    // The per-rail counts add up to the totals.
    const std::vector<RailCounts> rs = s.rails();
    ASSERT_EQ(rs.size(), 2u);
    EXPECT_EQ(rs[0].connects_started + rs[1].connects_started, s[Counter::connects_started]);
    EXPECT_EQ(rs[0].established_active + rs[1].established_active, s[Counter::established_active]);
    EXPECT_EQ(rs[0].established_passive + rs[1].established_passive, s[Counter::established_passive]);
    EXPECT_NE(s.to_json().find("\"rails\":[{\"rail\":0,"), std::string::npos) << s.to_json();
  }
  expect_consistent(*job, 4);
}

// Rank 1's rail-1 side answers slowly (every REQ to its rail-1 address takes 300 ms more): rank
// 0 initiates all 8 lanes to rank 1 (2 ranks: the lower one initiates), odd lanes on rail 0,
// even ones on rail 1, one connect at a time per rail. Rail 0's lanes must not wait for rail 1's.
TEST(RailsWindows, ASlowRailDoesNotHoldBackTheOthersLanes) {
  RailsJob j(2, 8, 22, windows_of_one);
  auto& job = j.job;
  ASSERT_TRUE(job) << job.error().message();
  prov::sim::MessageRule slow;
  slow.types = prov::sim::msg_bit(prov::sim::CmMsg::req);
  slow.dst_ip = prov::sim::sim_ipv4(1, 1);
  slow.delay = 300ms;
  j.f.fabric().faults().rules.push_back(slow);
  const Nanos start = j.f.fabric().clock().now();
  ASSERT_TRUE(drive(j.f, *job, 120s));
  const Engine& e = *job->ranks[0].engine;
  ASSERT_TRUE(e.errors().empty()) << e.errors().front().describe();
  EXPECT_EQ(by_rail(e), (std::map<uint32_t, size_t>{{0, 4}, {1, 4}}));
  std::map<uint32_t, Nanos> last;  // by rail: when its last lane was established
  for (const ConnResult& r : e.results()) {
    ASSERT_EQ(r.role, cm::Role::active);
    const Nanos at = r.timings.get().established - start;
    Nanos& l = last[e.link(r).rail];
    l = std::max(l, at);
  }
  EXPECT_GE(last[1], 4 * 300ms) << "rail 1's four connects, one at a time, each 300 ms slower";
  EXPECT_LT(last[0], 100ms) << "rail 0's lanes waited for the slow rail (established by "
                            << std::chrono::duration<double, std::milli>(last[0]).count() << " ms)";
  EXPECT_EQ(e.stats().window_peaks_total().connects, 2u);
  expect_consistent(*job, 8);
}

}  // namespace
}  // namespace wireup::etest
