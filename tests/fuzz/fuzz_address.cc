// libFuzzer target: wireup::decode_address and decode_rails, the listen address(es) a peer
// publishes through the transport's out-of-band exchange (any bytes of any length).
// Properties: decode never crashes; an address that decodes re-encodes to exactly the input
// (8 or 20 bytes, one spelling per address), decodes back to an equal address, and its text
// form parses back to it too.
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.h"
#include "provider/types.h"
#include "wireup/address.h"
#include "wireup/rail_address.h"

namespace {

// decode_rails: never crashes; what decodes re-encodes to exactly the input (format 1 for one
// rail, format 2 for several: one spelling each) and decodes back equal.
void check_rails(std::span<const uint8_t> in) {
  auto rails = wireup::decode_rails(in);
  if (!rails) {
    FUZZ_CHECK(rails.error().code == wireup::ErrorCode::invalid_argument);
    FUZZ_CHECK(!rails.error().message().empty());
    return;
  }
  FUZZ_CHECK(!rails->empty() && rails->size() <= wireup::kMaxRails);
  const std::vector<uint8_t> bytes = wireup::encode_rails(*rails);
  FUZZ_CHECK(bytes.size() <= wireup::kRailAddressBytesMax);
  FUZZ_CHECK(bytes == std::vector<uint8_t>(in.begin(), in.end()));
  auto again = wireup::decode_rails(bytes);
  FUZZ_CHECK(again.is_ok() && *again == *rails);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  check_rails(in);
  auto decoded = wireup::decode_address(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().code == wireup::ErrorCode::invalid_argument);
    FUZZ_CHECK(!decoded.error().message().empty());
    return 0;
  }
  const wireup::prov::SockAddr& a = *decoded;
  FUZZ_CHECK(a.family() == AF_INET || a.family() == AF_INET6);
  FUZZ_CHECK(a.port() != 0);

  const std::vector<uint8_t> bytes = wireup::encode_address(a);
  FUZZ_CHECK(bytes.size() <= wireup::kAddressBytesMax);
  FUZZ_CHECK(bytes == std::vector<uint8_t>(in.begin(), in.end()));
  auto again = wireup::decode_address(bytes);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(*again == a);

  auto parsed = wireup::prov::SockAddr::parse(a.to_string());
  FUZZ_CHECK(parsed.is_ok());
  FUZZ_CHECK(*parsed == a);
  return 0;
}
