// src/host/local_rank: strict parsing and the order of the sources.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "host/local_rank.h"

namespace wireup::host {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it != vars.end() ? it->second.c_str() : nullptr;
  };
}

TEST(HostLocalRank, ParsesPlainDecimals) {
  EXPECT_EQ(*parse_local_rank("x", "0"), 0);
  EXPECT_EQ(*parse_local_rank("x", "17"), 17);
  EXPECT_EQ(*parse_local_rank("x", "65535"), 65535);
}

TEST(HostLocalRank, RefusesWhatIsNotALocalRank) {
  for (const char* bad : {"abc", "", "-1", "+1", " 1", "1 ", "1x", "0x1", "65536", "99999999999999999999", "1.0"}) {
    Result<int> r = parse_local_rank("SLURM_LOCALID", bad);
    ASSERT_FALSE(r) << "\"" << bad << "\" was taken";
    EXPECT_EQ(r.code(), ErrorCode::config_error);
    EXPECT_NE(r.error().message().find("SLURM_LOCALID=\"" + std::string(bad) + "\""), std::string::npos)
        << r.error().message();
  }
}

TEST(HostLocalRank, AbcFromTheLauncherIsAnErrorNamingTheVariable) {
  Result<LocalRank> r = resolve_local_rank(-1, "explicit", -1, env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "abc"}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), ErrorCode::config_error);
  const std::string m = r.error().message();
  EXPECT_NE(m.find("environment variable OMPI_COMM_WORLD_LOCAL_RANK=\"abc\" is not a local rank"), std::string::npos)
      << m;
  EXPECT_NE(m.find("0..65535"), std::string::npos) << m;
}

TEST(HostLocalRank, ExplicitThenConfigThenLauncherInOrder) {
  const GetEnv env = env_of({{"MPI_LOCALRANKID", "3"}, {"SLURM_LOCALID", "5"}, {"PMIX_LOCAL_RANK", "7"}});
  Result<LocalRank> r = resolve_local_rank(1, "--local-rank", 2, env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->value, 1);
  EXPECT_EQ(r->source, "--local-rank");
  r = resolve_local_rank(-1, "--local-rank", 2, env);
  EXPECT_EQ(r->value, 2);
  EXPECT_EQ(r->source, "device.local_rank");
  r = resolve_local_rank(-1, "--local-rank", -1, env);
  EXPECT_EQ(r->value, 3);  // MPI_LOCALRANKID comes before SLURM_LOCALID and PMIX_LOCAL_RANK
  EXPECT_EQ(r->source, "env MPI_LOCALRANKID");
}

TEST(HostLocalRank, AGoodEarlierSourceHidesABadLaterOne) {
  // Only the variable actually used is judged: a stale PMIX_LOCAL_RANK behind a good
  // OMPI_COMM_WORLD_LOCAL_RANK is not this process's business.
  Result<LocalRank> r =
      resolve_local_rank(-1, "x", -1, env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"PMIX_LOCAL_RANK", "abc"}}));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, 4);
  // An explicit rank means the environment is never read.
  r = resolve_local_rank(0, "x", -1, env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "abc"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->value, 0);
}

TEST(HostLocalRank, NoSourceIsUnknownNotAnError) {
  Result<LocalRank> r = resolve_local_rank(-1, "x", -1, env_of({}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->value, -1);
  EXPECT_EQ(r->source.rfind("none", 0), 0u) << r->source;
}

}  // namespace
}  // namespace wireup::host
