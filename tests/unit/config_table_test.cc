// The table agrees with itself, with Settings' initializers, and with config/default.toml.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "config/config.h"
#include "config/value_parse.h"

namespace wireup::config {
namespace {

const std::string kDefaultToml = std::string(WIREUP_SOURCE_DIR) + "/config/default.toml";

TEST(ConfigTable, NamesAreUniqueAndDocumented) {
  std::set<std::string> names, envs;
  for (const Param& p : params()) {
    EXPECT_TRUE(names.insert(p.name()).second) << "duplicate " << p.name();
    EXPECT_TRUE(envs.insert(p.env_name()).second) << "duplicate " << p.env_name();
    EXPECT_GE(p.help.size(), 20u) << p.name() << " needs a help text that says what it is for";
    EXPECT_NE(p.store, nullptr) << p.name();
    bool known = false;
    for (const Section& s : sections()) known |= s.name == p.section;
    EXPECT_TRUE(known) << p.name() << " is in a section missing from sections()";
  }
}

TEST(ConfigTable, DefaultsEqualSettingsInitializers) {
  LoadOptions o;
  o.search_paths.clear();
  Result<Config> c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  // Compare field by field through the table so a mismatch names the key.
  for (const Entry& e : c->entries()) {
    Settings from_table;
    e.param->store(from_table, e.value);
    EXPECT_TRUE(from_table == Settings{}) << e.param->name() << ": default " << e.param->default_toml
                                          << " differs from its initializer in settings.h";
  }
  EXPECT_EQ(c->settings(), Settings{});
}

TEST(ConfigTable, DefaultTomlIsTheGeneratedOne) {
  std::ifstream in(kDefaultToml);
  ASSERT_TRUE(in) << "cannot read " << kDefaultToml;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), default_toml())
      << kDefaultToml << " is stale; regenerate it with `wireup_info --default-toml > config/default.toml`";
}

TEST(ConfigTable, DefaultTomlHasEveryKeyWithItsDefaultAndNothingElse) {
  toml::table root;
  try {
    root = toml::parse_file(kDefaultToml);
  } catch (const toml::parse_error& e) {
    FAIL() << kDefaultToml << ": " << e.description();
  }
  for (const Param& p : params()) {
    const toml::node* node = root.at_path(p.name()).node();
    ASSERT_NE(node, nullptr) << kDefaultToml << " lacks " << p.name();
    toml::table def = toml::parse("v = " + std::string(p.default_toml));
    Parsed in_file = parse_toml(p, *node);
    Parsed in_table = parse_toml(p, *def.get("v"));
    ASSERT_TRUE(std::holds_alternative<Value>(in_file)) << p.name();
    EXPECT_TRUE(std::get<Value>(in_file) == std::get<Value>(in_table))
        << kDefaultToml << ": " << p.name() << " is not the table's default " << p.default_toml;
  }
  // And the other way: nothing in the file that the table does not know.
  EXPECT_EQ(check_file(kDefaultToml), std::vector<std::string>{});
}

TEST(ConfigDump, ShowsEveryKeyWithItsSourceAndReloads) {
  const std::string path = ::testing::TempDir() + "/dump_src.toml";
  std::ofstream(path) << "[cm]\ntos = 106\n";
  LoadOptions o;
  o.file = path;
  o.search_paths.clear();
  o.env = {{"WIREUP_QP_TIMEOUT", "18"}, {"WIREUP_ENGINE_JOB_KEY", "0x1234"}};
  o.overrides = {{"engine.lanes", "2"}};
  Result<Config> c = load(o);
  ASSERT_TRUE(c) << c.error().message();
  const std::string dump = c->dump();
  for (const Param& p : params())
    EXPECT_NE(dump.find("\n" + std::string(p.key) + " = "), std::string::npos) << p.name();
  EXPECT_NE(dump.find("tos = 106"), std::string::npos);
  EXPECT_NE(dump.find("# " + path + ":2\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("# env WIREUP_QP_TIMEOUT\n"), std::string::npos);
  EXPECT_NE(dump.find("# api\n"), std::string::npos);
  EXPECT_NE(dump.find("# default\n"), std::string::npos);
  // The job key authenticates connect requests; a dump goes into bug reports.
  EXPECT_EQ(dump.find("1234"), std::string::npos);
  EXPECT_NE(dump.find("job_key = \"<set, hidden>\""), std::string::npos);

  // Without the secret, the dump is a tuning file that reproduces the same settings.
  o.env.erase("WIREUP_ENGINE_JOB_KEY");
  c = load(o);
  ASSERT_TRUE(c);
  const std::string again = ::testing::TempDir() + "/dump_again.toml";
  std::ofstream(again) << c->dump();
  LoadOptions o2;
  o2.file = again;
  o2.search_paths.clear();
  Result<Config> c2 = load(o2);
  ASSERT_TRUE(c2) << c2.error().message();
  EXPECT_EQ(c2->settings(), c->settings());
}

}  // namespace
}  // namespace wireup::config
