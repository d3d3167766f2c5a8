// The listen address a rank publishes through the transport's out-of-band exchange:
// opaque bytes to the transport, a fixed little format to us.
//
//   byte 0: format version (1)   byte 1: 4 or 6 (family)   bytes 2-3: port, big-endian
//   then 4 (IPv4) or 16 (IPv6) address bytes: 8 or 20 bytes in all.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "provider/types.h"

namespace wireup {

inline constexpr size_t kAddressBytesMax = 20;

std::vector<uint8_t> encode_address(const prov::SockAddr& a);
// The error names what is wrong (length, version, family) for the caller to attach a rank to.
Result<prov::SockAddr> decode_address(std::span<const uint8_t> bytes);

}  // namespace wireup
