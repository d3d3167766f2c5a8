// libFuzzer target: wireup::liveness::open, the liveness service's datagram decoder. Any host
// that can reach a rank's UDP port reaches it, before anything is known of the sender.
// Two ways in, each on every input:
// - as received: open() never crashes; a datagram that opens is exactly what sealing its
//   message gives (one spelling per message: no second form authenticates), and every rank it
//   names is below nranks;
// - as a sender holding the job's key would make it: the input's last 16 bytes are replaced by
//   the right tag, so that mutations reach the checks behind the tag (a fuzzer cannot forge
//   SipHash). Such a datagram is never refused for its tag; if it opens, it re-seals to itself.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_check.h"
#include "wireup/liveness_wire.h"
#include "wireup/mac.h"

namespace {

namespace lv = wireup::liveness;

const wireup::MacKey& key() {
  static const wireup::MacKey k = *wireup::MacKey::derive(kFuzzJobKey);
  return k;
}

// The number of ranks the receiver knows: from the input's first byte, so that the rank check
// sees both sides of its bound (1..256 ranks, or 65,536).
uint32_t nranks_for(std::span<const uint8_t> in) {
  if (in.empty()) return 1;
  return in[0] == 0xff ? 65536u : uint32_t(in[0]) + 1;
}

void check_opened(const lv::Opened& o, std::span<const uint8_t> bytes, uint32_t nranks) {
  if (!o.ok) {
    FUZZ_CHECK(o.why < lv::Bad::count_);
    FUZZ_CHECK(std::strcmp(lv::to_string(o.why), "unknown") != 0);
    return;
  }
  const lv::Msg& m = o.msg;
  FUZZ_CHECK(m.from < nranks && m.subject < nranks && m.root < nranks);
  FUZZ_CHECK(m.ndigest <= lv::Msg::kMaxDigest && m.mirror <= 1);
  for (size_t i = 0; i < m.ndigest; ++i) FUZZ_CHECK(m.digest[i] < nranks);
  const std::vector<uint8_t> again = lv::seal(m, key());
  FUZZ_CHECK(again.size() == bytes.size());
  FUZZ_CHECK(std::memcmp(again.data(), bytes.data(), bytes.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  const uint32_t nranks = nranks_for(in);
  check_opened(lv::open(in, key(), nranks), in, nranks);

  if (size < wireup::kMacTagSize) return 0;
  std::vector<uint8_t> retagged(data, data + size);
  const auto body = std::span<const uint8_t>(retagged).first(size - wireup::kMacTagSize);
  const auto tag = key().tag(body);
  std::memcpy(retagged.data() + body.size(), tag.data(), tag.size());
  const lv::Opened o = lv::open(retagged, key(), nranks);
  FUZZ_CHECK(o.ok || o.why != lv::Bad::tag);
  check_opened(o, retagged, nranks);
  return 0;
}
