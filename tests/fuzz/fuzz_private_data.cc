// libFuzzer target: wireup::decode and Wire::open of CM private data, any bytes of any length
// (a stranger's REQ reaches them before any resource exists).
// Properties: neither crashes; a message that decodes re-encodes to exactly the 32 bytes the
// tag covers (the format has one spelling per message) and decodes back to itself; a message
// that opens (its tag verifies under the key the seeds were sealed with) is exactly what
// sealing its header gives, so no second spelling of a message authenticates either.
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_check.h"
#include "wireup/wire.h"

namespace {

bool same(const wireup::WireHeader& a, const wireup::WireHeader& b) {
  return a.kind == b.kind && a.reason == b.reason && a.src_rank == b.src_rank && a.dst_rank == b.dst_rank &&
         a.lane == b.lane && a.attempt == b.attempt && a.nonce == b.nonce;
}

const wireup::Wire& wire() {
  static const wireup::Wire w = *wireup::Wire::create(kFuzzJobKey, 0, 1);
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  auto decoded = wireup::decode(in);
  auto opened = wire().open(in);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().code == wireup::ErrorCode::protocol_error);
    FUZZ_CHECK(!decoded.error().message().empty());
    FUZZ_CHECK(!opened.is_ok());
    return 0;
  }
  const wireup::WireHeader& h = *decoded;
  FUZZ_CHECK(size >= wireup::kWireHeaderSize);
  const auto bytes = wireup::encode(h);
  FUZZ_CHECK(std::memcmp(bytes.data(), data, wireup::kWireAuthenticated) == 0);
  auto again = wireup::decode(bytes);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(same(*again, h));
  FUZZ_CHECK(wireup::to_string(h.reason) != nullptr);
  if (opened) {
    FUZZ_CHECK(same(*opened, h));
    const auto sealed = wire().seal(h);
    FUZZ_CHECK(std::memcmp(sealed.data(), data, sealed.size()) == 0);
  } else {
    FUZZ_CHECK(!opened.error().message().empty());
  }
  return 0;
}
