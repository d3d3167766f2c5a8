// wireup_churn across the two guests of scripts/vm/pair.sh: one process per node, meeting
// through files in the pair directory (the shared build tree), no launcher (as
// tests/twonode/node_ranks.cc). Each file is written under a temporary name and renamed, so the
// other node never reads half of one.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "wireup_churn.h"

namespace wireup_churn {
namespace {

bool write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp);
    o << text;
    if (!o) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}

bool unhex(const std::string& s, std::vector<uint8_t>& out) {
  if (s.size() % 2 != 0) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    char* end = nullptr;
    const std::string byte = s.substr(i, 2);
    const unsigned long v = std::strtoul(byte.c_str(), &end, 16);
    if (end == nullptr || *end != '\0') return false;
    out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

}  // namespace

std::string PairLink::file(const char* what, uint32_t n) const {
  return dir + "/" + tag + "." + what + "." + std::to_string(n);
}

bool PairLink::publish(const std::map<uint32_t, std::vector<uint8_t>>& addrs, uint64_t gen) const {
  std::string text = "gen " + std::to_string(gen) + "\n";
  for (const auto& [rank, a] : addrs) text += std::to_string(rank) + " " + hex(a) + "\n";
  text += "end\n";
  return write_file(file("addr", node), text);
}

bool PairLink::read(std::map<uint32_t, std::vector<uint8_t>>& addrs, uint64_t gen) const {
  const std::string text = read_file(file("addr", 3 - node));
  if (text.size() < 4 || text.compare(text.size() - 4, 4, "end\n") != 0) return false;  // not written yet
  std::istringstream in(text);
  std::string word;
  uint64_t g = 0;
  if (!(in >> word >> g) || word != "gen" || g < gen) return false;
  std::map<uint32_t, std::vector<uint8_t>> got;
  uint32_t rank = 0;
  std::string h;
  while (in >> word && word != "end") {
    rank = static_cast<uint32_t>(std::strtoul(word.c_str(), nullptr, 10));
    if (!(in >> h) || !unhex(h, got[rank])) {
      fail("%s: malformed line for rank %u", file("addr", 3 - node).c_str(), rank);
      return false;
    }
  }
  addrs = std::move(got);
  return true;
}

void PairLink::arrive(uint64_t step) const {
  if (!write_file(file("step", node), std::to_string(step) + "\n"))
    fail("cannot write %s", file("step", node).c_str());
}

bool PairLink::reached(uint64_t step) const {
  const std::string s = read_file(file("step", 3 - node));
  if (s.empty() || s.back() != '\n') return false;
  return std::strtoull(s.c_str(), nullptr, 10) >= step;
}

}  // namespace wireup_churn
