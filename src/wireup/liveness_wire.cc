#include "wireup/liveness_wire.h"

#include <cstring>

namespace wireup::liveness {

namespace {
constexpr uint8_t kMagic0 = 'W', kMagic1 = 'L', kVersion = 1;

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
}  // namespace

const char* to_string(Bad b) {
  switch (b) {
    case Bad::short_or_long: return "length";
    case Bad::magic: return "magic";
    case Bad::version: return "version";
    case Bad::kind: return "kind";
    case Bad::digest: return "digest";
    case Bad::tag: return "tag";
    case Bad::rank: return "rank";
    case Bad::count_: break;
  }
  return "unknown";
}

std::vector<uint8_t> seal(const Msg& m, const MacKey& key) {
  const size_t n = std::min<size_t>(m.ndigest, Msg::kMaxDigest);
  std::vector<uint8_t> b(kWireHeader + 4 * n);
  b[0] = kMagic0;
  b[1] = kMagic1;
  b[2] = kVersion;
  b[3] = static_cast<uint8_t>(m.kind);
  put32(&b[4], m.from);
  put32(&b[8], m.subject);
  put32(&b[12], m.root);
  b[16] = m.mirror;
  b[17] = static_cast<uint8_t>(n);
  for (size_t i = 0; i < n; ++i) put32(&b[kWireHeader + 4 * i], m.digest[i]);
  const auto tag = key.tag(b);
  b.insert(b.end(), tag.begin(), tag.end());
  return b;
}

Opened open(std::span<const uint8_t> b, const MacKey& key, uint32_t nranks) {
  Opened o;
  auto bad = [&](Bad why) {
    o.why = why;
    return o;
  };
  if (b.size() < kWireHeader + kMacTagSize || b.size() > kWireMax) return bad(Bad::short_or_long);
  if (b[0] != kMagic0 || b[1] != kMagic1) return bad(Bad::magic);
  if (b[2] != kVersion) return bad(Bad::version);
  if (b[3] < 1 || b[3] > 3) return bad(Bad::kind);
  const size_t n = b[17];
  if (n > Msg::kMaxDigest || b[16] > 1 || b[18] != 0 || b[19] != 0) return bad(Bad::digest);
  if (b.size() != kWireHeader + 4 * n + kMacTagSize) return bad(Bad::short_or_long);
  const auto body = b.first(b.size() - kMacTagSize);
  if (!key.verify(body, std::span<const uint8_t, kMacTagSize>(b.data() + body.size(), kMacTagSize))) return bad(Bad::tag);
  Msg& m = o.msg;
  m.kind = static_cast<Kind>(b[3]);
  m.from = get32(&b[4]);
  m.subject = get32(&b[8]);
  m.root = get32(&b[12]);
  m.mirror = b[16];
  m.ndigest = static_cast<uint8_t>(n);
  for (size_t i = 0; i < n; ++i) m.digest[i] = get32(&b[kWireHeader + 4 * i]);
  bool in_range = m.from < nranks && m.subject < nranks && m.root < nranks;
  for (size_t i = 0; i < n; ++i) in_range = in_range && m.digest[i] < nranks;
  if (!in_range) return bad(Bad::rank);
  o.ok = true;
  return o;
}

}  // namespace wireup::liveness
