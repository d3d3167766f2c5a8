// The C API's answers to misuse and to a machine without RDMA: clear statuses and messages,
// never a crash. Runs on the host (no device needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
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

// Several rails are taken (each rail's address from its device's port); one listen_ip for
// several rails is refused, naming both, before any device is opened.
TEST(CapiHost, OneListenIpForSeveralRailsIsRefused) {
  for (const char* v : {"device.rails=2", "device.rails=all"}) {
    std::vector<const char*> ov{v};
    wireup_context_params_t p;
    wireup_context_params_init(&p);
    p.config_overrides = ov.data();
    p.num_config_overrides = ov.size();
    p.listen_ip = "10.0.0.1";
    wireup_context_t* ctx = nullptr;
    EXPECT_EQ(wireup_context_create(&p, &ctx), WIREUP_ERR_CONFIG) << v;
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(last().find("listen_ip 10.0.0.1 with device.rails = "), std::string::npos) << last();
    EXPECT_NE(last().find("leave listen_ip NULL"), std::string::npos) << last();
  }
}

// Without listen_ip, several rails are a device choice like one: on a host without RDMA the
// same one sentence as for one rail; with devices, a context whose rail 0 is the device.
TEST(CapiHost, SeveralRailsAreTakenNotRefused) {
  std::vector<const char*> ov{"device.rails=2"};
  wireup_context_params_t p;
  wireup_context_params_init(&p);
  p.config_overrides = ov.data();
  p.num_config_overrides = ov.size();
  wireup_context_t* ctx = nullptr;
  const wireup_status_t s = wireup_context_create(&p, &ctx);
  if (s == WIREUP_ERR_NO_DEVICE) {
    EXPECT_NE(last().find("no RDMA device found on this machine"), std::string::npos) << last();
    return;
  }
  ASSERT_EQ(s, WIREUP_OK) << last();
  const size_t n = wireup_context_num_rails(ctx);
  EXPECT_GE(n, 1u);
  EXPECT_LE(n, 2u);
  EXPECT_EQ(wireup_context_rail_ibv_context(ctx, 0), wireup_context_ibv_context(ctx));
  EXPECT_STREQ(wireup_context_rail_device_name(ctx, 0), wireup_context_device_name(ctx));
  EXPECT_EQ(std::string(wireup_context_rail_listen_address(ctx, 0)).rfind(wireup_context_listen_address(ctx), 0), 0u);
  EXPECT_EQ(wireup_context_rail_ibv_context(ctx, n), nullptr);
  EXPECT_NE(std::string(wireup_context_last_error(ctx)).find("rail " + std::to_string(n) + " of " + std::to_string(n)),
            std::string::npos)
      << wireup_context_last_error(ctx);
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK);
}

TEST(CapiHost, RailAccessorsRefuseANullContext) {
  EXPECT_EQ(wireup_context_num_rails(nullptr), 0u);
  EXPECT_EQ(wireup_context_rail_ibv_context(nullptr, 0), nullptr);
  EXPECT_EQ(last(), "wireup_context_rail_ibv_context: the context is NULL");
  EXPECT_EQ(wireup_context_rail_device_name(nullptr, 0), nullptr);
  EXPECT_EQ(wireup_context_rail_listen_address(nullptr, 0), nullptr);
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
  wireup_params_t p;
  wireup_params_init(&p);
  p.nranks = 2;
  p.lanes = 1;
  p.job_key = 7;
  p.qp_create = never;
  wireup_t* w = nullptr;
  EXPECT_EQ(wireup_create(nullptr, &p, &w), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(last(), "wireup_create: the context is NULL");

  uint8_t buf[WIREUP_ADDRESS_MAX];
  size_t len = sizeof buf;
  int work = -7;
  wireup_result_t r;
  WIREUP_STRUCT_INIT(&r);
  wireup_peer_error_t e;
  WIREUP_STRUCT_INIT(&e);
  EXPECT_EQ(wireup_local_address(nullptr, buf, &len), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last(), "wireup_local_address: the wireup handle is NULL");
  EXPECT_EQ(wireup_set_peers(nullptr, nullptr, 0), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_start(nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_set_job_key(nullptr, 7), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(last(), "wireup_set_job_key: the wireup handle is NULL");
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
  WIREUP_STRUCT_INIT(&c);
  wireup_tally_t t;
  WIREUP_STRUCT_INIT(&t);
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

namespace {

TEST(CapiHost, VersionIsTheHeadersOne) {
  unsigned major = 99, minor = 99, patch = 99;
  wireup_version(&major, &minor, &patch);
  EXPECT_EQ(major, unsigned(WIREUP_VERSION_MAJOR));
  EXPECT_EQ(minor, unsigned(WIREUP_VERSION_MINOR));
  EXPECT_EQ(patch, unsigned(WIREUP_VERSION_PATCH));
  EXPECT_STREQ(wireup_version_string(), WIREUP_VERSION_STRING);
  EXPECT_EQ(std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch), WIREUP_VERSION_STRING);
  unsigned only_minor = 99;
  wireup_version(nullptr, &only_minor, nullptr);  // any pointer may be NULL
  EXPECT_EQ(only_minor, unsigned(WIREUP_VERSION_MINOR));
  static_assert(WIREUP_VERSION == WIREUP_VERSION_MAJOR * 1000000 + WIREUP_VERSION_MINOR * 1000 + WIREUP_VERSION_PATCH);
  static_assert(WIREUP_VERSION_OF(0, 10, 0) > WIREUP_VERSION_OF(0, 9, 999), "comparable");
}

// A struct never initialized (struct_size 0) is refused, naming the struct and both sizes.
TEST(CapiHost, AStructWithoutItsSizeIsNamed) {
  wireup_context_params_t cp;
  std::memset(&cp, 0, sizeof cp);
  wireup_context_t* ctx = nullptr;
  EXPECT_EQ(wireup_context_create(&cp, &ctx), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(last().find("wireup_context_params_t"), std::string::npos) << last();
  EXPECT_NE(last().find("struct_size 0 is below the smallest layout (" + std::to_string(sizeof cp) + " bytes"),
            std::string::npos)
      << last();
  // Larger than this library's, with something set past its end: a newer caller's request
  // this library cannot honour.
  struct Newer {
    wireup_context_params_t known;
    uint64_t unknown;
  } newer;
  wireup_context_params_init(&newer.known);
  newer.known.struct_size = sizeof newer;
  newer.unknown = 1;
  EXPECT_EQ(wireup_context_create(&newer.known, &ctx), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("of the part it does not know is set"), std::string::npos) << last();
}

// Every value of every public enum has its own name, the one the stats JSON and the logs use;
// a value not listed reads "unknown".
TEST(CapiHost, EveryEnumValueHasItsName) {
  std::set<std::string> kinds;
  for (int k = WIREUP_ERROR_REJECTED; k <= WIREUP_ERROR_ABANDONED; ++k)
    EXPECT_TRUE(kinds.insert(wireup_error_kind_name(static_cast<wireup_error_kind_t>(k))).second) << k;
  EXPECT_FALSE(kinds.count("unknown"));
  EXPECT_STREQ(wireup_error_kind_name(WIREUP_ERROR_LOCAL), "local_error");
  EXPECT_STREQ(wireup_error_kind_name(WIREUP_ERROR_BAD_REPLY), "bad_reply");
  EXPECT_STREQ(wireup_error_kind_name(static_cast<wireup_error_kind_t>(0)), "unknown");
  EXPECT_STREQ(wireup_error_kind_name(static_cast<wireup_error_kind_t>(99)), "unknown");

  std::set<std::string> ece;
  for (int o = WIREUP_ECE_DISABLED; o <= WIREUP_ECE_REJECTED; ++o)
    EXPECT_TRUE(ece.insert(wireup_ece_outcome_name(static_cast<wireup_ece_outcome_t>(o))).second) << o;
  EXPECT_EQ(ece, (std::set<std::string>{"disabled", "negotiated", "unsupported", "vendor_mismatch", "rejected"}));
  EXPECT_STREQ(wireup_ece_outcome_name(static_cast<wireup_ece_outcome_t>(5)), "unknown");

  std::set<std::string> reasons;
  for (int r = WIREUP_REJECT_NONE; r <= WIREUP_REJECT_CROSSED; ++r)
    EXPECT_TRUE(reasons.insert(wireup_reject_reason_name(static_cast<wireup_reject_reason_t>(r))).second) << r;
  EXPECT_FALSE(reasons.count("unknown"));
  EXPECT_STREQ(wireup_reject_reason_name(WIREUP_REJECT_WRONG_JOB_KEY), "wrong_job_key");
  EXPECT_STREQ(wireup_reject_reason_name(WIREUP_REJECT_UNKNOWN), "unknown");

  EXPECT_STREQ(wireup_tally_group_name(WIREUP_TALLY_REJECTS_RECEIVED), "rejects_received");
  EXPECT_STREQ(wireup_tally_group_name(WIREUP_TALLY_REJECTS_SENT), "rejects_sent");
  EXPECT_STREQ(wireup_tally_group_name(WIREUP_TALLY_FAILURES), "failures");
  EXPECT_STREQ(wireup_tally_group_name(WIREUP_TALLY_ECE_OUTCOMES), "ece_outcomes");
  EXPECT_STREQ(wireup_tally_group_name(static_cast<wireup_tally_group_t>(0)), "unknown");
}

}  // namespace
