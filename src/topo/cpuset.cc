#include "topo/cpuset.h"

#include <bit>
#include <charconv>

namespace wireup::topo {
namespace {

// Large enough for any machine hwloc supports today, small enough that "0-4294967295" in a
// typo cannot make us allocate half a gigabyte.
constexpr unsigned kMaxCpu = 1u << 20;

bool parse_uint(std::string_view s, unsigned& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<CpuSet> CpuSet::parse(std::string_view list) {
  CpuSet out;
  const std::string whole(list);
  auto bad = [&](std::string_view item, const char* why) {
    return Error::make(ErrorCode::invalid_argument, "cpu list",
                       "\"" + whole + "\": item \"" + std::string(item) + "\" " + why +
                           " (expected a list like 0-3,8)");
  };
  if (list.empty()) return bad(list, "is empty");
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const size_t dash = item.find('-');
    unsigned lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_uint(item, lo)) return bad(item, "is not a CPU number");
      hi = lo;
    } else if (!parse_uint(item.substr(0, dash), lo) || !parse_uint(item.substr(dash + 1), hi)) {
      return bad(item, "is not a range of CPU numbers");
    }
    if (hi < lo) return bad(item, "runs backwards");
    if (hi >= kMaxCpu) return bad(item, "names a CPU beyond 2^20");
    for (unsigned c = lo; c <= hi; ++c) out.set(c);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

CpuSet CpuSet::range(unsigned first, unsigned last) {
  CpuSet s;
  for (unsigned c = first; c <= last; ++c) s.set(c);
  return s;
}

void CpuSet::set(unsigned cpu) {
  if (cpu / 64 >= words_.size()) words_.resize(cpu / 64 + 1, 0);
  words_[cpu / 64] |= uint64_t{1} << (cpu % 64);
}

bool CpuSet::test(unsigned cpu) const {
  return cpu / 64 < words_.size() && (words_[cpu / 64] >> (cpu % 64) & 1) != 0;
}

unsigned CpuSet::count() const {
  unsigned n = 0;
  for (uint64_t w : words_) n += static_cast<unsigned>(std::popcount(w));
  return n;
}

bool CpuSet::includes(const CpuSet& sub) const {
  for (size_t i = 0; i < sub.words_.size(); ++i) {
    const uint64_t mine = i < words_.size() ? words_[i] : 0;
    if ((sub.words_[i] & ~mine) != 0) return false;
  }
  return true;
}

bool CpuSet::intersects(const CpuSet& other) const {
  for (size_t i = 0; i < words_.size() && i < other.words_.size(); ++i)
    if ((words_[i] & other.words_[i]) != 0) return true;
  return false;
}

CpuSet CpuSet::operator|(const CpuSet& other) const {
  CpuSet out = *this;
  if (other.words_.size() > out.words_.size()) out.words_.resize(other.words_.size(), 0);
  for (size_t i = 0; i < other.words_.size(); ++i) out.words_[i] |= other.words_[i];
  return out;
}

std::string CpuSet::to_list() const {
  std::string out;
  const unsigned end = static_cast<unsigned>(words_.size() * 64);
  for (unsigned c = 0; c < end; ++c) {
    if (!test(c)) continue;
    unsigned last = c;
    while (last + 1 < end && test(last + 1)) ++last;
    out += (out.empty() ? "" : ",") + std::to_string(c);
    if (last > c) out += "-" + std::to_string(last);
    c = last;
  }
  return out;
}

}  // namespace wireup::topo
