// A set of CPUs by OS index (the numbers taskset, /proc/cpuinfo and hwloc's cpusets use).
// A plain value type so the ranking in rank.h stays a pure function with no hwloc in it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace wireup::topo {

class CpuSet {
 public:
  CpuSet() = default;
  // "0-3,8,10-11" (the cpulist format of taskset -c and /sys/.../cpulist).
  static Result<CpuSet> parse(std::string_view list);
  static CpuSet range(unsigned first, unsigned last);  // inclusive

  void set(unsigned cpu);
  bool test(unsigned cpu) const;
  bool empty() const { return words_.empty(); }
  unsigned count() const;
  bool includes(const CpuSet& sub) const;  // every CPU of sub is in this set
  bool intersects(const CpuSet& other) const;
  CpuSet operator|(const CpuSet& other) const;
  bool operator==(const CpuSet& other) const = default;
  // Back to the list format, "0-3,8".
  std::string to_list() const;

 private:
  // Invariant: the last word is non-zero (only set() grows it), so equal sets compare equal.
  std::vector<uint64_t> words_;
};

}  // namespace wireup::topo
