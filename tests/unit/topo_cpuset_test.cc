#include <gtest/gtest.h>

#include "topo/cpuset.h"

namespace wireup::topo {
namespace {

TEST(CpuSet, ParsesAndPrintsTheCpulistFormat) {
  Result<CpuSet> s = CpuSet::parse("0-3,8,10-11,64");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->count(), 8u);
  EXPECT_TRUE(s->test(64));
  EXPECT_FALSE(s->test(9));
  EXPECT_EQ(s->to_list(), "0-3,8,10-11,64");
  EXPECT_EQ(CpuSet::parse("3,1,2")->to_list(), "1-3");
}

TEST(CpuSet, RejectsMalformedListsNamingTheItem) {
  for (const char* bad : {"", "a", "1-", "3-1", "1,,2", "0-99999999", "-1"}) {
    Result<CpuSet> s = CpuSet::parse(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(s.error().detail.find(std::string("\"") + bad + "\""), std::string::npos) << s.error().detail;
  }
}

TEST(CpuSet, InclusionAndIntersection) {
  const CpuSet pkg = CpuSet::range(0, 15), some = CpuSet::parse("2,5").value(), far = CpuSet::parse("70").value();
  EXPECT_TRUE(pkg.includes(some));
  EXPECT_FALSE(some.includes(pkg));
  EXPECT_FALSE(pkg.includes(far));
  EXPECT_TRUE(pkg.includes(CpuSet{}));
  EXPECT_TRUE(pkg.intersects(some));
  EXPECT_FALSE(pkg.intersects(far));
  EXPECT_EQ((some | far).to_list(), "2,5,70");
  EXPECT_EQ(CpuSet::range(0, 3), CpuSet::parse("0-3").value());
}

}  // namespace
}  // namespace wireup::topo
