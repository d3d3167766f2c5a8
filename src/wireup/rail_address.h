// The published address of a process with several rails: every rail's listen address and the
// length of its subnet's prefix, so that a peer can pair rails by subnet (rail_pairing.h).
//
// One rail is published in address.h's format 1 (8 or 20 bytes), so a process with one rail
// publishes exactly what earlier versions did and reads theirs. Several rails use format 2:
//
//   byte 0: format version (2)   byte 1: rail count n (2..16)
//   n times: family (4 or 6), prefix length (0..32 or 0..128; 0 = unknown),
//            port (2 bytes, big-endian), address (4 or 16 bytes)
//
// so at most 2 + 16 * 20 = 322 bytes. Rails are listed in the publisher's rail order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "provider/types.h"

namespace wireup {

inline constexpr size_t kMaxRails = 16;
inline constexpr size_t kRailAddressBytesMax = 2 + kMaxRails * 20;

struct RailAddress {
  prov::SockAddr addr;     // the rail's listener: IP and port
  uint8_t prefix_len = 0;  // its subnet's prefix length; 0 = unknown (format 1 carries none)
  bool operator==(const RailAddress&) const = default;
};

// Format 1 for one rail (its prefix is not carried), format 2 for several. Empty on a family
// other than IPv4/IPv6, no rail, more than kMaxRails, or a prefix longer than the family's.
std::vector<uint8_t> encode_rails(std::span<const RailAddress> rails);
// Either format. The error names what is wrong and at which rail, for the caller to attach a rank.
Result<std::vector<RailAddress>> decode_rails(std::span<const uint8_t> bytes);

}  // namespace wireup
