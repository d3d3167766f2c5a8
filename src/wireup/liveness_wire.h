// The liveness service's datagrams on the wire, sealed with the job's MAC (mac.h) so that
// nothing outside the job can make a rank suspect or bury another:
//
//   bytes 0-1  magic "WL"          4-7    from (little-endian, as every field)
//   byte  2    version (1)         8-11   subject (suspect, dead)
//   byte  3    kind (1..3)         12-15  root (dead)
//   byte  16   tree (dead: 0, 1)   17     digest count n (0..8)   18-19: zero
//   20 ..      n ranks (4 bytes each), then the 16-byte tag over everything before it
//
// So 36 to 68 bytes. open() names the first thing wrong; the caller counts it and drops the
// datagram (never more than that: a stranger's or a corrupt datagram is no one's death).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "wireup/liveness.h"
#include "wireup/mac.h"

namespace wireup::liveness {

inline constexpr size_t kWireHeader = 20;
inline constexpr size_t kWireMax = kWireHeader + 4 * Msg::kMaxDigest + kMacTagSize;

// Why a datagram was dropped (counted per reason).
enum class Bad : uint8_t { short_or_long, magic, version, kind, digest, tag, rank, count_ };
const char* to_string(Bad b);

std::vector<uint8_t> seal(const Msg& m, const MacKey& key);
// The message, or why not; `nranks` bounds every rank named in it.
struct Opened {
  bool ok = false;
  Bad why = Bad::short_or_long;
  Msg msg;
};
Opened open(std::span<const uint8_t> bytes, const MacKey& key, uint32_t nranks);

}  // namespace wireup::liveness
