// The meeting point of a cross-node case's two halves (tests/twonode): the role of this
// process, and small files in TWONODE_DIR named after the running test.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/conformance/harness.h"

namespace wireup::conf {

constexpr uint32_t kMellanox = 0x15b3;

inline bool server() {
  const char* r = std::getenv("TWONODE_ROLE");
  return r && std::string(r) == "server";
}
inline std::string tag() {
  return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
}
inline std::filesystem::path file(const std::string& what) {
  const char* d = std::getenv("TWONODE_DIR");
  return std::filesystem::path(d ? d : ".") / (tag() + "." + what);
}
inline void put(const std::string& what, const std::string& text) {
  const std::filesystem::path p = file(what), tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  std::filesystem::rename(tmp, p);
}
// The other side's mark, or "" after 30 s.
inline std::string get(const std::string& what) {
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(file(what));
    std::string s;
    if (in >> s) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}
inline std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 7 * i);
  return v;
}
// The server's listener address as the client reaches it: the peer's IP, the port from the file.
inline prov::SockAddr remote_listener() {
  const char* peer = std::getenv("WIREUP_VM_PEER_ADDR");
  auto a = prov::SockAddr::parse(std::string(peer ? peer : "") + ":" + get("port"));
  return a ? *a : prov::SockAddr{};
}

#define REQUIRE_ENV()                                                                   \
  if (!std::getenv("TWONODE_ROLE") || !std::getenv("TWONODE_DIR") ||                     \
      (!server() && !std::getenv("WIREUP_VM_PEER_ADDR")))                                \
  FAIL() << "TWONODE_ROLE, TWONODE_DIR (and on the client WIREUP_VM_PEER_ADDR) must be set " \
            "(tests/twonode/suite.sh)"

}  // namespace wireup::conf
