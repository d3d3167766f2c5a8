#include "wireup/address.h"

#include <arpa/inet.h>

#include <cstring>

namespace wireup {
namespace {
Error bad(std::string what) { return Error::make(ErrorCode::invalid_argument, "decode address", std::move(what)); }
}  // namespace

std::vector<uint8_t> encode_address(const prov::SockAddr& a) {
  std::vector<uint8_t> out;
  if (a.family() != AF_INET && a.family() != AF_INET6) return out;
  out.push_back(1);
  out.push_back(a.family() == AF_INET ? 4 : 6);
  out.push_back(static_cast<uint8_t>(a.port() >> 8));
  out.push_back(static_cast<uint8_t>(a.port() & 0xff));
  if (a.family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a.get());
    auto* p = reinterpret_cast<const uint8_t*>(&in->sin_addr);
    out.insert(out.end(), p, p + 4);
  } else {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(a.get());
    auto* p = reinterpret_cast<const uint8_t*>(&in6->sin6_addr);
    out.insert(out.end(), p, p + 16);
  }
  return out;
}

Result<prov::SockAddr> decode_address(std::span<const uint8_t> b) {
  if (b.size() < 4) return bad(std::to_string(b.size()) + " bytes, at least 4 needed");
  if (b[0] != 1) return bad("format version " + std::to_string(b[0]) + ", expected 1");
  if (b[1] != 4 && b[1] != 6) return bad("family " + std::to_string(b[1]) + ", expected 4 or 6");
  size_t want = b[1] == 4 ? 8 : 20;
  if (b.size() != want)
    return bad(std::to_string(b.size()) + " bytes for an IPv" + std::to_string(b[1]) + " address, expected " +
               std::to_string(want));
  uint16_t port = static_cast<uint16_t>((b[2] << 8) | b[3]);
  if (port == 0) return bad("port 0: the peer published an address it does not listen on");
  prov::SockAddr a;
  if (b[1] == 4) {
    uint32_t ip = (uint32_t(b[4]) << 24) | (uint32_t(b[5]) << 16) | (uint32_t(b[6]) << 8) | b[7];
    return prov::SockAddr::ipv4(ip, port);
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(a.get());
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, &b[4], 16);
  return a;
}

}  // namespace wireup
