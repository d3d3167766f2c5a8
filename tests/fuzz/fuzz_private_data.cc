// libFuzzer target: wireup::decode of CM private data, any bytes of any length (a stranger's
// REQ reaches the decoder before any resource exists).
// Properties: decode never crashes; a header that decodes re-encodes to exactly the 32 bytes
// it was read from (the format has one spelling per header) and decodes back to itself.
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_check.h"
#include "wireup/private_data.h"

namespace {

bool same(const wireup::WireHeader& a, const wireup::WireHeader& b) {
  return a.kind == b.kind && a.reason == b.reason && a.job_key == b.job_key && a.src_rank == b.src_rank &&
         a.dst_rank == b.dst_rank && a.lane == b.lane && a.attempt == b.attempt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto decoded = wireup::decode(std::span<const uint8_t>(data, size));
  if (!decoded) {
    FUZZ_CHECK(decoded.error().code == wireup::ErrorCode::protocol_error);
    FUZZ_CHECK(!decoded.error().message().empty());
    return 0;
  }
  const wireup::WireHeader& h = *decoded;
  FUZZ_CHECK(size >= wireup::kWireHeaderSize);
  const auto bytes = wireup::encode(h);
  FUZZ_CHECK(std::memcmp(bytes.data(), data, bytes.size()) == 0);
  auto again = wireup::decode(bytes);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(same(*again, h));
  FUZZ_CHECK(wireup::to_string(h.reason) != nullptr);
  return 0;
}
