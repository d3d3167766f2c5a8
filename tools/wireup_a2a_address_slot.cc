#include "wireup_a2a_address_slot.h"

#include <algorithm>
#include <string>

namespace wireup::a2a {

Problem put_address(std::span<uint8_t> slot, std::span<const uint8_t> address) {
  if (slot.size() != kAddressSlot) return "an address slot of " + std::to_string(slot.size()) + " bytes";
  if (address.size() > WIREUP_RAILS_ADDRESS_MAX)
    return "an address of " + std::to_string(address.size()) + " bytes (at most " +
           std::to_string(WIREUP_RAILS_ADDRESS_MAX) + ")";
  std::fill(slot.begin(), slot.end(), uint8_t{0});
  slot[0] = uint8_t(address.size() & 0xff);
  slot[1] = uint8_t(address.size() >> 8);
  std::copy(address.begin(), address.end(), slot.begin() + 2);
  return {};
}

Expected<std::vector<uint8_t>> take_address(std::span<const uint8_t> slot) {
  using Out = Expected<std::vector<uint8_t>>;
  if (slot.size() != kAddressSlot) return Out::failure("an address slot of " + std::to_string(slot.size()) + " bytes");
  const size_t len = size_t(slot[0]) | size_t(slot[1]) << 8;
  if (len == 0 || len > WIREUP_RAILS_ADDRESS_MAX)
    return Out::failure("an address slot claiming " + std::to_string(len) + " bytes");
  return std::vector<uint8_t>(slot.begin() + 2, slot.begin() + 2 + std::ptrdiff_t(len));
}

}  // namespace wireup::a2a
