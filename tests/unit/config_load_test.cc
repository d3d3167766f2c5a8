// Loading: precedence, sources, and the exact wording of every kind of error.
#include <gtest/gtest.h>

#include <fstream>

#include "config/config.h"

namespace wireup::config {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

LoadOptions with_file(const std::string& path, EnvMap env = {}) {
  LoadOptions o;
  o.file = path;
  o.env = std::move(env);
  o.search_paths.clear();
  return o;
}

LoadOptions nothing() {
  LoadOptions o;
  o.search_paths.clear();
  return o;
}

TEST(ConfigLoad, NoFileGivesTheDefaultsEverywhere) {
  Result<Config> c = load(nothing());
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->settings(), Settings{});
  EXPECT_EQ(c->file(), "");
  for (const Entry& e : c->entries()) EXPECT_EQ(e.source.describe(), "default") << e.param->name();
}

TEST(ConfigLoad, FileValuesLandInSettingsWithFileAndLine) {
  const std::string path = write_file("values.toml",
                                      "[engine]\n"
                                      "connect_window = 256\n"
                                      "backoff_jitter = 0.5\n"
                                      "[ece]\n"
                                      "options = \"0x1f\"\n"
                                      "[qp]\n"
                                      "path_mtu = 4096\n"
                                      "[device]\n"
                                      "exclude = [\"mlx5_3\"]\n");
  Result<Config> c = load(with_file(path));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->settings().engine.connect_window, 256);
  EXPECT_DOUBLE_EQ(c->settings().engine.backoff_jitter, 0.5);
  EXPECT_EQ(c->settings().ece.options, 0x1fu);
  EXPECT_EQ(c->settings().qp.path_mtu, PathMtu::mtu_4096);
  EXPECT_EQ(c->settings().device.exclude, std::vector<std::string>{"mlx5_3"});
  EXPECT_EQ(c->entry("engine.connect_window")->source.describe(), path + ":2");
  EXPECT_EQ(c->entry("qp.path_mtu")->source.describe(), path + ":7");
  EXPECT_EQ(c->entry("engine.lanes")->source.describe(), "default");
}

TEST(ConfigLoad, EnvironmentBeatsApiBeatsFile) {
  const std::string path = write_file("prec.toml", "[engine]\nlanes = 2\nmax_attempts = 3\nconnect_window = 8\n");
  LoadOptions o = with_file(path, {{"WIREUP_ENGINE_LANES", "4"}});
  o.overrides = {{"engine.lanes", "3"}, {"engine.max_attempts", "9"}};
  Result<Config> c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->settings().engine.lanes, 4);
  EXPECT_EQ(c->entry("engine.lanes")->source.describe(), "env WIREUP_ENGINE_LANES");
  EXPECT_EQ(c->settings().engine.max_attempts, 9);
  EXPECT_EQ(c->entry("engine.max_attempts")->source.describe(), "api");
  EXPECT_EQ(c->settings().engine.connect_window, 8);
}

TEST(ConfigLoad, WrongTypeNamesFileLineKeyAndExpectedType) {
  const std::string path = write_file("bad_type.toml", "[engine]\n\nconnect_window = \"abc\"\n");
  EXPECT_EQ(check(with_file(path)),
            std::vector<std::string>{path + ":3: key 'engine.connect_window': expected integer in "
                                            "[1, 65536], got string \"abc\""});
}

TEST(ConfigLoad, OutOfRangeIsRejectedNotClamped) {
  const std::string path = write_file("range.toml",
                                      "[engine]\nconnect_window = 70000\nbackoff_jitter = 1.5\n"
                                      "[ece]\noptions = \"0x1ffffffff\"\nvendor_id = -1\n");
  std::vector<std::string> errs = check(with_file(path));
  ASSERT_EQ(errs.size(), 4u);
  EXPECT_EQ(errs[0], path + ":2: key 'engine.connect_window': expected integer in [1, 65536], got integer 70000");
  EXPECT_EQ(errs[1], path + ":3: key 'engine.backoff_jitter': expected number in [0, 1], got float 1.5");
  EXPECT_NE(errs[2].find(":5: key 'ece.options': expected unsigned 32-bit integer"), std::string::npos);
  EXPECT_NE(errs[3].find(":6: key 'ece.vendor_id'"), std::string::npos);
  EXPECT_FALSE(load(with_file(path)));
}

TEST(ConfigLoad, UnknownKeysAndSectionsAreReportedWithSuggestions) {
  const std::string path = write_file("unknown.toml",
                                      "lanes = 2\n"
                                      "[engine]\n"
                                      "conect_window = 8\n"
                                      "[engin]\n"
                                      "lanes = 2\n");
  std::vector<std::string> errs = check(with_file(path));
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], path + ":1: key 'lanes' is outside any section (it belongs under [engine])");
  EXPECT_EQ(errs[1], path + ":3: unknown key 'engine.conect_window' (did you mean 'engine.connect_window'?)");
  EXPECT_EQ(errs[2], path + ":4: unknown section 'engin' (did you mean 'engine'?)");
}

TEST(ConfigLoad, SyntaxErrorNamesLineAndColumn) {
  const std::string path = write_file("syntax.toml", "[engine]\nlanes = = 2\n");
  std::vector<std::string> errs = check(with_file(path));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].rfind(path + ":2:", 0), 0u) << errs[0];
  EXPECT_NE(errs[0].find("TOML syntax error"), std::string::npos);
}

TEST(ConfigLoad, EnvironmentErrorsNameTheVariable) {
  LoadOptions o = nothing();
  o.env = {{"WIREUP_ENGINE_CONNECT_WINDOW", "lots"},
           {"WIREUP_ENGINE_CONECT_WINDOW", "8"},
           {"WIREUP_FOO_BAR", "1"},
           {"WIREUP_LOG", "debug"},   // read by common/log.cc, not a parameter
           {"WIREUP_IN_VM", "1"},     // set by scripts/vm in the guest
           {"WIREUP_VM_ADDR", "10.0.0.1"},
           {"WIREUP_JOBS", "2"},      // the scripts' parallelism
           {"WIREUP_SYSFS_ROOT", "/tmp/sysfs"},  // src/host's test-only sysfs root
           {"PATH", "/usr/bin"}};     // not ours
  std::vector<std::string> errs = check(o);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], "env WIREUP_ENGINE_CONECT_WINDOW: unknown variable (did you mean WIREUP_ENGINE_CONNECT_WINDOW?)");
  EXPECT_EQ(errs[1], "env WIREUP_ENGINE_CONNECT_WINDOW: key 'engine.connect_window': expected integer in "
                     "[1, 65536], got \"lots\"");
  EXPECT_EQ(errs[2], "env WIREUP_FOO_BAR: unknown variable");
}

TEST(ConfigLoad, ApiErrorsAreReported) {
  LoadOptions o = nothing();
  o.overrides = {{"engine.lane", "2"}, {"qp.timeout", "32"}};
  std::vector<std::string> errs = check(o);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0], "api: unknown key 'engine.lane' (did you mean 'engine.lanes'?)");
  EXPECT_EQ(errs[1], "api: key 'qp.timeout': expected integer in [0, 31], got \"32\"");
}

TEST(ConfigLoad, TextValuesFromTheEnvironment) {
  LoadOptions o = nothing();
  o.env = {{"WIREUP_CM_REUSEADDR", "yes"},
           {"WIREUP_DEVICE_INCLUDE", "mlx5_0, mlx5_1"},
           {"WIREUP_ENGINE_WIREUP_TIMEOUT_MS", "5m"},
           {"WIREUP_ENGINE_BACKOFF_MAX_MS", "2s"},
           {"WIREUP_ENGINE_JOB_KEY", "0xfeedfacecafebeef"},
           {"WIREUP_ECE_MODE", "required"},
           {"WIREUP_LOG_LEVEL", "debug"}};
  Result<Config> c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  const Settings& s = c->settings();
  EXPECT_TRUE(s.cm.reuseaddr);
  EXPECT_EQ(s.device.include, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(s.engine.wireup_timeout, milliseconds(300000));
  EXPECT_EQ(s.engine.backoff_max, milliseconds(2000));
  EXPECT_EQ(s.engine.job_key, 0xfeedfacecafebeefull);
  EXPECT_EQ(s.ece.mode, EceMode::required);
  EXPECT_EQ(s.log.level, log::Level::debug);
}

TEST(ConfigLoad, MalformedTextValuesAreRejected) {
  for (auto [var, text] : std::vector<std::pair<std::string, std::string>>{
           {"WIREUP_CM_REUSEADDR", "maybe"},
           {"WIREUP_DEVICE_INCLUDE", "mlx5_0,,mlx5_1"},
           {"WIREUP_ENGINE_WIREUP_TIMEOUT_MS", "2h"},
           {"WIREUP_ENGINE_LANES", "4x"},
           {"WIREUP_ENGINE_BACKOFF_JITTER", "0.25.1"},
           {"WIREUP_ECE_MODE", "AUTO"},
           {"WIREUP_QP_PATH_MTU", "9000"}}) {
    LoadOptions o = nothing();
    o.env = {{var, text}};
    std::vector<std::string> errs = check(o);
    ASSERT_EQ(errs.size(), 1u) << var;
    EXPECT_EQ(errs[0].rfind("env " + var + ": key '", 0), 0u) << errs[0];
    EXPECT_NE(errs[0].find("got \"" + text + "\""), std::string::npos) << errs[0];
  }
}

TEST(ConfigLoad, FileSelection) {
  const std::string a = write_file("a.toml", "[engine]\nlanes = 2\n");
  const std::string b = write_file("b.toml", "[engine]\nlanes = 3\n");
  LoadOptions o;
  o.search_paths = {::testing::TempDir() + "/absent.toml", b};
  Result<Config> c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->file(), b);  // first existing path on the search list
  o.env = {{"WIREUP_CONFIG", a}};
  c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->settings().engine.lanes, 2);  // WIREUP_CONFIG beats the search path
  o.env = {{"WIREUP_CONFIG", "/nonexistent/wireup.toml"}};
  std::vector<std::string> errs = check(o);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "/nonexistent/wireup.toml: cannot read (WIREUP_CONFIG=/nonexistent/wireup.toml): "
                     "No such file or directory");
}

TEST(ConfigLoad, CrossKeyRulesNameBothKeysAndTheirSources) {
  LoadOptions o = nothing();
  o.env = {{"WIREUP_ENGINE_BACKOFF_INITIAL_MS", "100"}, {"WIREUP_ENGINE_BACKOFF_MAX_MS", "10"}};
  o.overrides = {{"ece.options", "0x3"}, {"ece.required_options", "0x4"}};
  std::vector<std::string> errs = check(o);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0], "engine.backoff_max_ms = 10 (env WIREUP_ENGINE_BACKOFF_MAX_MS) is below "
                     "engine.backoff_initial_ms = 100 (env WIREUP_ENGINE_BACKOFF_INITIAL_MS)");
  EXPECT_EQ(errs[1], "ece.required_options = \"0x4\" (api) asks for bits that ece.options = \"0x3\" (api) "
                     "does not offer");
}

TEST(ConfigLoad, ResultErrorListsEveryProblem) {
  LoadOptions o = nothing();
  o.env = {{"WIREUP_FOO", "1"}, {"WIREUP_BAR", "2"}};
  Result<Config> c = load(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::config_error);
  EXPECT_NE(c.error().detail.find("2 errors\n  env WIREUP_BAR: unknown variable\n  env WIREUP_FOO"),
            std::string::npos) << c.error().detail;
}

}  // namespace
}  // namespace wireup::config
