// wireup_a2a's on-demand pattern and lane ledger (tools/wireup_a2a_pattern.h), and the
// report fields they add: pure, on the host.
#include <gtest/gtest.h>

#include <set>

#include "wireup_a2a_pattern.h"

namespace wireup::a2a {
namespace {

PatternPlan plan_of(const std::string& text, uint32_t n, uint64_t seed = 1) {
  auto p = parse_pattern(text);
  EXPECT_TRUE(p) << p.error();
  auto plan = PatternPlan::make(*p, n, seed);
  EXPECT_TRUE(plan) << plan.error();
  return *plan;
}

TEST(A2aPattern, ParsesAndRefusesWithTheOptionNamed) {
  EXPECT_EQ(parse_pattern("all")->text(), "all");
  EXPECT_EQ(parse_pattern("ring:2")->text(), "ring:2");
  EXPECT_EQ(parse_pattern("random:3")->text(), "random:3");
  for (const char* bad : {"random", "random:", "random:0", "ring:x", "star:3", "random:3x", ""}) {
    auto p = parse_pattern(bad);
    ASSERT_FALSE(p) << bad;
    EXPECT_NE(p.error().find("--pattern"), std::string::npos) << p.error();
  }
  auto too_many = PatternPlan::make(*parse_pattern("random:8"), 8, 1);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().find("K must be below"), std::string::npos) << too_many.error();
}

TEST(A2aPattern, RandomIsDeterministicDistinctAndCountsPairsAndCrossings) {
  const PatternPlan a = plan_of("random:3", 300, 7), b = plan_of("random:3", 300, 7), c = plan_of("random:3", 300, 8);
  bool differs = false;
  uint64_t ordered = 0, mutual = 0;
  for (uint32_t r = 0; r < 300; ++r) {
    EXPECT_EQ(a.asks(r), b.asks(r)) << "rank " << r << ": the same seed must give the same draw";
    differs = differs || a.asks(r) != c.asks(r);
    const std::set<uint32_t> s(a.asks(r).begin(), a.asks(r).end());
    EXPECT_EQ(s.size(), 3u) << "rank " << r;
    EXPECT_FALSE(s.count(r)) << "rank " << r << " asks itself";
    for (uint32_t q : a.asks(r)) ordered += 1, mutual += a.asks(q, r) ? 1 : 0;
  }
  EXPECT_TRUE(differs) << "another seed must give another pattern";
  EXPECT_EQ(a.crossing(), mutual / 2);
  EXPECT_EQ(a.pairs(), ordered - a.crossing());
  EXPECT_GT(a.crossing(), 0u);
}

TEST(A2aPattern, RingAndAll) {
  const PatternPlan ring = plan_of("ring:2", 4);
  EXPECT_EQ(ring.asks(3), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(ring.pairs(), 6u);     // 8 asks, (0,2) and (1,3) asked from both ends
  EXPECT_EQ(ring.crossing(), 2u);
  const PatternPlan all = plan_of("all", 5);
  EXPECT_EQ(all.pairs(), 10u);
  EXPECT_EQ(all.crossing(), 10u);  // every pair asked by both ends
  EXPECT_EQ(all.partners(2), (std::vector<uint32_t>{0, 1, 3, 4}));
}

TEST(A2aLedger, SettledOnlyWhenEveryLaneOfEveryPartnerCame) {
  const PatternPlan ring = plan_of("ring:1", 4);  // 1 asks 2; 0 asks 1
  LaneLedger l(ring, 1, 2, {});
  EXPECT_EQ(l.asks(), (std::vector<uint32_t>{2}));
  l.asked(2, 1000);
  EXPECT_FALSE(l.settled());
  l.ready(2, 0, 1500);
  l.failed(2, 1);
  EXPECT_FALSE(l.settled()) << "rank 0's ask of rank 1 has not arrived";
  l.ready(0, 0, 9000);
  l.ready(0, 1, 9000);
  EXPECT_TRUE(l.settled());
  EXPECT_EQ(l.ask_to_ready(), (std::vector<int64_t>{500})) << "only lanes this rank asked are timed";
}

TEST(A2aLedger, AVictimsOwnAsksAreNotAwaitedButOursOfItAre) {
  const PatternPlan ring = plan_of("ring:1", 4);  // 0 asks 1, 1 asks 2, 3 asks 0
  LaneLedger r0(ring, 0, 1, {3});
  r0.ready(1, 0, 5);
  EXPECT_TRUE(r0.settled()) << "rank 3 is dead: its ask of rank 0 never comes";
  LaneLedger r2(ring, 2, 1, {3});  // 2 asks 3 (dead): must see it fail
  r2.ready(1, 0, 5);
  EXPECT_FALSE(r2.settled());
  r2.failed(3, 0);
  EXPECT_TRUE(r2.settled());
}

TEST(A2aLedger, CheckNamesALaneConnectedTwiceAndAPairNobodyAsked) {
  const PatternPlan ring = plan_of("ring:1", 5);  // rank 1's partners: 0, 2
  LaneLedger l(ring, 1, 2, {});
  CheckCounts ok;
  l.check({{0, 0}, {0, 1}, {2, 0}, {2, 1}}, ok);
  EXPECT_EQ(ok.pattern_dup + ok.pattern_extra, 0u);
  CheckCounts bad;
  l.check({{0, 0}, {0, 0}, {2, 1}, {4, 0}, {2, 7}}, bad);
  EXPECT_EQ(bad.pattern_dup, 1u);
  EXPECT_EQ(bad.pattern_extra, 2u);  // rank 4, and lane 7 of a 2-lane job
  ASSERT_EQ(bad.problems.size(), 3u);
  EXPECT_NE(bad.problems[0].find("rank 1 <-> rank 0 lane 0: connected more than once"), std::string::npos);
  EXPECT_NE(bad.problems[1].find("rank 4 lane 0: connected, but neither end asked for it"), std::string::npos);
}

TEST(A2aReport, OnDemandFieldsSurviveTheWire) {
  RankReport r;
  r.rank = 3;
  r.lanes_asked = 6, r.crossed_won = 2, r.crossed_yielded = 1;
  r.ask_to_ready = {100, 2000, 30000};
  r.check.pattern_dup = 1, r.check.pattern_extra = 4;
  auto back = deserialize(serialize(r));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->lanes_asked, 6u);
  EXPECT_EQ(back->crossed_won, 2u);
  EXPECT_EQ(back->crossed_yielded, 1u);
  EXPECT_EQ(back->ask_to_ready, r.ask_to_ready);
  EXPECT_EQ(back->check.pattern_dup, 1u);
  EXPECT_EQ(back->check.pattern_extra, 4u);
}

TEST(A2aSummary, OnDemandPlansThePatternAndFailsOnAPatternViolation) {
  JobInfo job;
  job.ranks = 4, job.lanes = 1, job.provider = "sim", job.mode = "sim", job.verified = false;
  job.on_demand = true;
  job.pattern = pattern_info(plan_of("ring:1", 4), {});
  RankReport r;
  r.active_to_live = 4;
  r.ask_to_ready = {1000, 3000};
  Summary s = summarize(job, {r});
  EXPECT_EQ(s.planned, 4u);
  EXPECT_EQ(exit_status(s), 0);
  EXPECT_EQ(s.ask_to_ready.n, 2u);
  EXPECT_NE(to_json(s).find("\"engine_mode\":\"on_demand\""), std::string::npos);
  r.check.pattern_extra = 1;
  EXPECT_EQ(exit_status(summarize(job, {r})), 1) << "a connection nobody asked for fails the job";
}

// The engine's per-rail stats (its JSON's "rails" and "window_peaks") reach the summary: counts
// summed over the ranks, window peaks the most one rank reached, one text line with several rails.
TEST(A2aSummary, RailsCountsAndWindowPeaksFromTheStatsJson) {
  const std::string json =
      R"({"connects_started":5,"window_peaks":{"connects":2,"qps_active":2,"qps_passive":1},"rails":[)"
      R"({"rail":0,"connects_started":3,"retries":1,"established_active":2,"established_passive":1,)"
      R"("rejects_received":1,"window_peaks":{"connects":1,"qps_active":1,"qps_passive":1}},)"
      R"({"rail":1,"connects_started":2,"retries":0,"established_active":2,"established_passive":0,)"
      R"("rejects_received":0,"window_peaks":{"connects":1,"qps_active":1,"qps_passive":0}}]})";
  RankReport a;
  read_rail_stats(json, a);
  ASSERT_EQ(a.rails.size(), 2u);
  EXPECT_EQ(a.rails[0].established, 3u);
  EXPECT_EQ(a.connect_peak_total, 2u);
  auto back = deserialize(serialize(a));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->rails[0].connects_started, 3u);
  EXPECT_EQ(back->rails[0].retries, 1u);
  EXPECT_EQ(back->rails[0].rejects_received, 1u);
  EXPECT_EQ(back->rails[1].qp_peak_active, 1u);
  EXPECT_EQ(back->connect_peak_total, 2u);
  RankReport b = *back;
  b.rank = 1;
  b.rails[1].connect_peak = 4;
  JobInfo job;
  job.ranks = 2, job.lanes = 1, job.provider = "sim", job.mode = "sim";
  const Summary s = summarize(job, {*back, b});
  EXPECT_EQ(s.rails.at(0).connects_started, 6u);
  EXPECT_EQ(s.rails.at(1).connect_peak, 4u);
  EXPECT_EQ(s.connect_peak_total, 2u);
  EXPECT_NE(human(s).find("rail windows rail 0: 6 connects (2 retries), 6 established, 2 rejects, peak 1 connects 1+1 "
                          "QPs; rail 1: 4 connects (0 retries), 4 established, 0 rejects, peak 4 connects 1+0 QPs; "
                          "all rails peak 2 connects\n"),
            std::string::npos)
      << human(s);
  EXPECT_NE(to_json(s).find(R"("rails":[{"rail":0,"connects_started":6,)"), std::string::npos) << to_json(s);
}

}  // namespace
}  // namespace wireup::a2a
