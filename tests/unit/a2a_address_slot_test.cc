// wireup_a2a's MPI address slots (tools/wireup_a2a_address_slot.h): pure, on the host.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "wireup_a2a_address_slot.h"

namespace wireup::a2a {
namespace {

std::vector<uint8_t> bytes(size_t n) {
  std::vector<uint8_t> a(n);
  std::iota(a.begin(), a.end(), uint8_t{1});
  return a;
}

// One rail (8 bytes), three IPv4 rails (26: past WIREUP_ADDRESS_MAX), the longest any rank
// publishes (16 IPv6 rails with liveness, past what one length byte counts): each comes back whole.
TEST(A2aAddressSlot, EveryAddressLengthRoundTrips) {
  static_assert(kAddressSlot > WIREUP_RAILS_ADDRESS_MAX);
  for (size_t n : {size_t{8}, size_t{WIREUP_ADDRESS_MAX}, size_t{26}, size_t{255}, size_t{256},
                   size_t{WIREUP_RAILS_ADDRESS_MAX}}) {
    std::vector<uint8_t> slot(kAddressSlot, 0xee);
    ASSERT_EQ(put_address(slot, bytes(n)), "") << n;
    auto back = take_address(slot);
    ASSERT_TRUE(back) << n << ": " << back.error();
    EXPECT_EQ(*back, bytes(n)) << n;
  }
}

TEST(A2aAddressSlot, TooLongOrMalformedIsRefusedWithTheLength) {
  std::vector<uint8_t> slot(kAddressSlot, 0);
  const Problem p = put_address(slot, bytes(WIREUP_RAILS_ADDRESS_MAX + 1));
  EXPECT_NE(p.find("327 bytes"), std::string::npos) << p;
  EXPECT_FALSE(take_address(slot)) << "an empty slot holds no address";
  slot[0] = 0x48, slot[1] = 0x01;  // 328
  auto bad = take_address(slot);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("328"), std::string::npos) << bad.error();
  std::vector<uint8_t> short_slot(1 + WIREUP_ADDRESS_MAX, 0);
  EXPECT_NE(put_address(short_slot, bytes(8)), "");
}

}  // namespace
}  // namespace wireup::a2a
