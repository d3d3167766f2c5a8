// Every shipped tuning file is valid; every deliberately bad one fails with the messages it
// announces in its own "# expect: ..." comments (so a bad file documents what it tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "config/config.h"

namespace wireup::config {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> toml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".toml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "\n  " + x;
  return s;
}

TEST(ConfigExamples, EveryExampleTuningFileIsValid) {
  const fs::path dir = fs::path(WIREUP_SOURCE_DIR) / "config/examples";
  std::vector<fs::path> files = toml_files(dir);
  for (const char* must : {"infiniband-connectx.toml", "roce.toml", "soft-roce-vm.toml", "large-job-10k.toml"})
    EXPECT_TRUE(fs::exists(dir / must)) << (dir / must) << " is missing";
  for (const fs::path& f : files)
    EXPECT_EQ(check_file(f.string()), std::vector<std::string>{}) << f << joined(check_file(f.string()));
}

TEST(ConfigExamples, EveryBadFileFailsWithTheAnnouncedMessages) {
  const fs::path dir = fs::path(WIREUP_SOURCE_DIR) / "tests/data/config";
  std::vector<fs::path> files = toml_files(dir);
  ASSERT_FALSE(files.empty()) << "no bad tuning files in " << dir;
  for (const fs::path& f : files) {
    std::vector<std::string> expect;
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# expect: ", 0) == 0) expect.push_back(f.string() + line.substr(10));
    ASSERT_FALSE(expect.empty()) << f << " announces no '# expect: ' lines";
    EXPECT_EQ(check_file(f.string()), expect) << f;
  }
}

}  // namespace
}  // namespace wireup::config
