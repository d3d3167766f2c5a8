#include "wireup/rail_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "wireup/address.h"

namespace wireup {
namespace {

Error bad(std::string what) { return Error::make(ErrorCode::invalid_argument, "decode address", std::move(what)); }

unsigned max_prefix(int family) { return family == AF_INET ? 32 : 128; }

}  // namespace

std::vector<uint8_t> encode_rails(std::span<const RailAddress> rails) {
  if (rails.empty() || rails.size() > kMaxRails) return {};
  for (const RailAddress& r : rails)
    if ((r.addr.family() != AF_INET && r.addr.family() != AF_INET6) || r.prefix_len > max_prefix(r.addr.family()))
      return {};
  if (rails.size() == 1) return encode_address(rails[0].addr);
  std::vector<uint8_t> out{2, static_cast<uint8_t>(rails.size())};
  for (const RailAddress& r : rails) {
    // Format 1's bytes after its version byte are family, port, address: insert the prefix.
    const std::vector<uint8_t> one = encode_address(r.addr);
    out.push_back(one[1]);
    out.push_back(r.prefix_len);
    out.insert(out.end(), one.begin() + 2, one.end());
  }
  return out;
}

Result<std::vector<RailAddress>> decode_rails(std::span<const uint8_t> b) {
  if (b.empty()) return bad("0 bytes, at least 4 needed");
  if (b[0] == 1) {
    Result<prov::SockAddr> one = decode_address(b);
    if (!one) return one.error();
    return std::vector<RailAddress>{{*one, 0}};
  }
  if (b[0] != 2) return bad("format version " + std::to_string(b[0]) + ", expected 1 or 2");
  if (b.size() < 2) return bad("format 2 with no rail count");
  const size_t n = b[1];
  if (n < 2 || n > kMaxRails)
    return bad("format 2 with " + std::to_string(n) + " rails, expected 2 to " + std::to_string(kMaxRails));
  std::vector<RailAddress> out;
  size_t at = 2;
  for (size_t i = 0; i < n; ++i) {
    const std::string rail = "rail " + std::to_string(i) + ": ";
    if (b.size() < at + 4) return bad(rail + "ends after " + std::to_string(b.size()) + " bytes");
    const uint8_t family = b[at], prefix = b[at + 1];
    if (family != 4 && family != 6) return bad(rail + "family " + std::to_string(family) + ", expected 4 or 6");
    const size_t len = 4 + (family == 4 ? 4u : 16u);
    if (b.size() < at + len) return bad(rail + "ends after " + std::to_string(b.size()) + " bytes");
    std::vector<uint8_t> one{1, family};
    one.insert(one.end(), b.begin() + static_cast<std::ptrdiff_t>(at + 2), b.begin() + static_cast<std::ptrdiff_t>(at + len));
    Result<prov::SockAddr> a = decode_address(one);
    if (!a) return bad(rail + a.error().detail);
    if (prefix > max_prefix(a->family()))
      return bad(rail + "prefix length " + std::to_string(prefix) + " for an IPv" + std::to_string(family) + " address");
    out.push_back({*a, prefix});
    at += len;
  }
  if (at != b.size())
    return bad(std::to_string(b.size() - at) + " bytes after the last of " + std::to_string(n) + " rails");
  return out;
}

}  // namespace wireup
