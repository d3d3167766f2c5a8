// The C API's answers to misuse and to a machine without RDMA: clear statuses and messages,
// never a crash. Runs on the host (no device needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "wireup/wireup.h"
#include "wireup/wireup.hpp"

namespace {

std::string last() { return wireup_last_error(nullptr); }

wireup_status_t create_with(std::initializer_list<const char*> overrides, const char* file = nullptr) {
  std::vector<const char*> ov(overrides);
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  p.config_overrides = ov.data();
  p.num_config_overrides = ov.size();
  p.config_file = file;
  wireup_context_t* ctx = nullptr;
  wireup_status_t s = wireup_context_create(&p, &ctx);
  if (s == WIREUP_OK) EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
  else EXPECT_EQ(ctx, nullptr) << "output set on failure";
  return s;
}

int never(void*, const wireup_qp_request_t*, ibv_qp**) { return 95; }

TEST(CapiHost, EveryStatusHasItsOwnText) {
  std::set<std::string> seen;
  for (int s = WIREUP_OK; s <= WIREUP_ERR_INTERNAL; ++s) {
    std::string t = wireup_strerror(static_cast<wireup_status_t>(s));
    EXPECT_NE(t, "unknown wireup status") << s;
    EXPECT_TRUE(seen.insert(t).second) << "two statuses share \"" << t << "\"";
  }
  EXPECT_STREQ(wireup_strerror(static_cast<wireup_status_t>(999)), "unknown wireup status");
}

TEST(CapiHost, ContextCreateNeedsAnOutput) {
  EXPECT_EQ(wireup_context_create(nullptr, nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last(), "wireup_context_create: out is NULL");
}

TEST(CapiHost, UnknownProviderIsNamed) {
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  p.provider = "verbs";
  wireup_context_t* ctx = nullptr;
  EXPECT_EQ(wireup_context_create(&p, &ctx), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("unknown provider \"verbs\" (the C API offers: rdma)"), std::string::npos) << last();
}

TEST(CapiHost, MalformedOverrideIsNamed) {
  EXPECT_EQ(create_with({"engine.lanes=2", "engine.lanes"}), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("entry 1 (\"engine.lanes\") is not \"section.key=value\""), std::string::npos) << last();
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  p.num_config_overrides = 3;  // with no array
  wireup_context_t* ctx = nullptr;
  EXPECT_EQ(wireup_context_create(&p, &ctx), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("config_overrides"), std::string::npos) << last();
}

TEST(CapiHost, ConfigErrorsComeBeforeTheDeviceAndAreAllListed) {
  EXPECT_EQ(create_with({"engine.connect_window=abc", "engine.nosuchkey=1"}), WIREUP_ERR_CONFIG);
  EXPECT_NE(last().find("engine.connect_window"), std::string::npos) << last();
  EXPECT_NE(last().find("nosuchkey"), std::string::npos) << last();
}

TEST(CapiHost, NamedConfigFileMustExist) {
  EXPECT_EQ(create_with({}, "/nonexistent/wireup.toml"), WIREUP_ERR_CONFIG);
  EXPECT_NE(last().find("/nonexistent/wireup.toml"), std::string::npos) << last();
}

TEST(CapiHost, NoDeviceFailsWithOneClearSentence) {
  wireup_context_t* ctx = nullptr;
  wireup_status_t s = wireup_context_create(nullptr, &ctx);
  if (s == WIREUP_OK) {
    wireup_context_destroy(ctx);
    GTEST_SKIP() << "SKIPPED LOUDLY: this machine has an RDMA device";
  }
  EXPECT_EQ(s, WIREUP_ERR_NO_DEVICE) << last();
  EXPECT_NE(last().find("no RDMA device found on this machine"), std::string::npos) << last();
  EXPECT_EQ(ctx, nullptr);
}

TEST(CapiHost, NullHandlesAreRefusedByName) {
  const wireup_params_t p{0, 2, 1, 7, nullptr};
  wireup_t* w = nullptr;
  EXPECT_EQ(wireup_create(nullptr, &p, never, nullptr, &w), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(last(), "wireup_create: the context is NULL");

  uint8_t buf[WIREUP_ADDRESS_MAX];
  size_t len = sizeof buf;
  int work = -7;
  wireup_result_t r;
  wireup_peer_error_t e;
  EXPECT_EQ(wireup_local_address(nullptr, buf, &len), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last(), "wireup_local_address: the wireup handle is NULL");
  EXPECT_EQ(wireup_set_peers(nullptr, nullptr, 0), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_start(nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_progress(nullptr, &work), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(work, -7) << "output written on failure";
  EXPECT_EQ(last(), "wireup_progress: the wireup handle is NULL");
  EXPECT_EQ(wireup_wait(nullptr, 0), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_fd(nullptr), -1);
  EXPECT_EQ(wireup_done(nullptr), -1);
  EXPECT_EQ(wireup_result_count(nullptr), 0u);
  EXPECT_EQ(wireup_error_count(nullptr), 0u);
  EXPECT_EQ(wireup_result_get(nullptr, 0, &r), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_error_get(nullptr, 0, &e), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_on_event(nullptr, nullptr, nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_on_device_event(nullptr, nullptr, nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_stats_json(nullptr, nullptr, &len), WIREUP_ERR_INVALID_ARGUMENT);
  wireup_counters_t c;
  wireup_tally_t t;
  uint64_t samples[4];
  size_t n = 4;
  EXPECT_EQ(wireup_counters_get(nullptr, &c), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last(), "wireup_counters_get: the wireup handle is NULL");
  EXPECT_EQ(wireup_tally_count(nullptr), 0u);
  EXPECT_EQ(wireup_tally_get(nullptr, 0, &t), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_phase_samples(nullptr, WIREUP_PHASE_TOTAL, samples, &n), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(n, 4u) << "output written on failure";
  EXPECT_EQ(last(), "wireup_phase_samples: the wireup handle is NULL");
  wireup_destroy(nullptr);

  EXPECT_EQ(wireup_context_device_name(nullptr), nullptr);
  EXPECT_EQ(last(), "wireup_context_device_name: the context is NULL");
  EXPECT_EQ(wireup_context_ibv_context(nullptr), nullptr);
  EXPECT_EQ(wireup_context_listen_address(nullptr), nullptr);
  EXPECT_EQ(wireup_context_config_dump(nullptr), nullptr);
  EXPECT_EQ(wireup_context_listen_source(nullptr), nullptr);
  EXPECT_EQ(last(), "wireup_context_listen_source: the context is NULL");
  EXPECT_EQ(wireup_context_config_value(nullptr, "engine.lanes"), nullptr);
  EXPECT_EQ(last(), "wireup_context_config_value: the context is NULL");
  EXPECT_EQ(wireup_context_destroy(nullptr), WIREUP_OK);
  EXPECT_EQ(std::string(wireup_context_last_error(nullptr)), last());
}

TEST(CapiHost, PhaseNamesAreTheStatsNames) {
  EXPECT_STREQ(wireup_phase_name(WIREUP_PHASE_RESOLVE_ADDR), "resolve_addr");
  EXPECT_STREQ(wireup_phase_name(WIREUP_PHASE_TOTAL), "total");
  std::set<std::string> seen;
  for (int p = 0; p < WIREUP_PHASE_COUNT; ++p) {
    ASSERT_NE(wireup_phase_name(static_cast<wireup_phase_t>(p)), nullptr) << p;
    EXPECT_TRUE(seen.insert(wireup_phase_name(static_cast<wireup_phase_t>(p))).second) << p;
  }
  EXPECT_EQ(wireup_phase_name(WIREUP_PHASE_COUNT), nullptr);
  EXPECT_EQ(wireup_phase_name(static_cast<wireup_phase_t>(-1)), nullptr);
}

// A launcher variable that is set but is not a local rank stops the context, naming it; it is
// checked before the devices, so this runs on a host without RDMA.
TEST(CapiHost, LauncherLocalRankThatIsNotANumberIsNamed) {
  ASSERT_EQ(setenv("OMPI_COMM_WORLD_LOCAL_RANK", "abc", 1), 0);
  EXPECT_EQ(create_with({}), WIREUP_ERR_CONFIG);
  const std::string m = last();
  EXPECT_NE(m.find("wireup_context_create: "), std::string::npos) << m;
  EXPECT_NE(m.find("OMPI_COMM_WORLD_LOCAL_RANK=\"abc\" is not a local rank"), std::string::npos) << m;
  // An explicit local rank means the launcher's variable is not read: the failure is the next one.
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  p.local_rank = 0;
  wireup_context_t* ctx = nullptr;
  const wireup_status_t s = wireup_context_create(&p, &ctx);
  if (s == WIREUP_OK) wireup_context_destroy(ctx);
  EXPECT_EQ(last().find("OMPI_COMM_WORLD_LOCAL_RANK"), std::string::npos) << last();
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(CapiHost, CxxFaceThrowsWithStatusAndMessage) {
  try {
    wireup::ContextParams p;
    p.overrides = {"engine.lanes=zero"};
    wireup::Context ctx(p);
    FAIL() << "a bad override was accepted";
  } catch (const wireup::Exception& e) {
    EXPECT_EQ(e.status(), WIREUP_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find("engine.lanes"), std::string::npos) << e.what();
  }
}

}  // namespace
