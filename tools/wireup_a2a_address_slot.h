// The MPI driver's address exchange: one MPI_Allgather of fixed-size slots, each a length (two
// bytes, little-endian) and then the rank's published address. The slot holds the longest
// address any rank may publish, WIREUP_RAILS_ADDRESS_MAX (16 IPv6 rails with liveness): a rank
// with three IPv4 rails already publishes more than WIREUP_ADDRESS_MAX, and more than one length
// byte counts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "wireup_a2a.h"

namespace wireup::a2a {

inline constexpr size_t kAddressSlot = 2 + WIREUP_RAILS_ADDRESS_MAX;

// Writes `address` into `slot` (kAddressSlot bytes); "" or why it does not fit.
Problem put_address(std::span<uint8_t> slot, std::span<const uint8_t> address);
// The address in `slot`, or why the slot does not hold one.
Expected<std::vector<uint8_t>> take_address(std::span<const uint8_t> slot);

}  // namespace wireup::a2a
