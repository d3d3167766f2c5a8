// Rail pairing (see rail_pairing.h for the rule).
#include "wireup/rail_pairing.h"

#include <arpa/inet.h>

#include <cstring>

namespace wireup {

const char* to_string(PairingBasis b) {
  switch (b) {
    case PairingBasis::same_subnet: return "same_subnet";
    case PairingBasis::routed: return "routed";
    case PairingBasis::unreachable: return "unreachable";
  }
  return "?";
}

const char* to_string(RailState s) {
  switch (s) {
    case RailState::up: return "up";
    case RailState::port_down: return "port down";
    case RailState::lost: return "lost";
  }
  return "?";
}

namespace {

// The address bytes in network order (4 or 16).
std::span<const uint8_t> ip_bytes(const prov::SockAddr& a) {
  if (a.family() == AF_INET)
    return {reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(a.get())->sin_addr), 4};
  return {reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(a.get())->sin6_addr), 16};
}

std::string ip_text(const RailAddress& r) {
  std::string s = r.addr.to_string();
  const size_t colon = s.rfind(':');  // drop the port: "10.0.1.1:7471", "[fe80::1]:7471"
  if (colon != std::string::npos) s.resize(colon);
  return r.prefix_len ? s + "/" + std::to_string(r.prefix_len) : s;
}

std::string rails_text(std::span<const RailAddress> rails) {
  std::string s;
  for (const RailAddress& r : rails) s += (s.empty() ? "" : ", ") + ip_text(r);
  return s;
}

std::string local_text(std::span<const LocalRail> mine) {
  std::string s;
  for (const LocalRail& r : mine) s += (s.empty() ? "" : ", ") + ip_text(r.address) +
                                     (r.state == RailState::up ? "" : std::string(" (") + to_string(r.state) + ")");
  return s;
}

PeerPairing choose(std::span<const LocalRail> mine, std::span<const RailAddress> theirs,
                   const std::function<bool(uint32_t, uint32_t)>& reaches, PairingBasis basis) {
  PeerPairing out;
  std::vector<uint32_t> used(theirs.size(), 0);
  for (uint32_t l = 0; l < mine.size(); ++l) {
    if (mine[l].state != RailState::up) continue;
    int best = -1;
    for (uint32_t k = 0; k < theirs.size(); ++k) {
      const uint32_t p = static_cast<uint32_t>((l + k) % theirs.size());  // from the same index on
      if (reaches(l, p) && (best < 0 || used[p] < used[static_cast<uint32_t>(best)])) best = static_cast<int>(p);
    }
    if (best < 0) continue;
    out.pairs.push_back({l, static_cast<uint32_t>(best)});
    ++used[static_cast<uint32_t>(best)];
  }
  if (out.pairs.empty()) return out;
  out.basis = basis;
  for (const RailPair& p : out.pairs)
    out.why += (out.why.empty() ? "" : ", ") + ip_text(mine[p.local].address) + " -> " + ip_text(theirs[p.peer]);
  out.why = std::string(basis == PairingBasis::same_subnet ? "same subnet: " : "no common subnet, routed: ") + out.why;
  return out;
}

}  // namespace

bool same_subnet(const RailAddress& a, const RailAddress& b) {
  if (a.addr.family() != b.addr.family() || a.prefix_len == 0) return false;
  if (b.prefix_len != 0 && b.prefix_len != a.prefix_len) return false;
  const std::span<const uint8_t> x = ip_bytes(a.addr), y = ip_bytes(b.addr);
  unsigned bits = a.prefix_len;
  for (size_t i = 0; i < x.size() && bits > 0; ++i, bits = bits >= 8 ? bits - 8 : 0) {
    const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((x[i] & mask) != (y[i] & mask)) return false;
  }
  return true;
}

PeerPairing pair_by_subnet(std::span<const LocalRail> mine, std::span<const RailAddress> theirs) {
  PeerPairing p = choose(
      mine, theirs, [&](uint32_t l, uint32_t r) { return same_subnet(mine[l].address, theirs[r]); },
      PairingBasis::same_subnet);
  if (p.pairs.empty())
    p.why = "no rail here (" + local_text(mine) + ") shares a subnet with the peer's (" + rails_text(theirs) + ")";
  return p;
}

PeerPairing pair_by_route(std::span<const LocalRail> mine, std::span<const RailAddress> theirs,
                          const std::function<bool(uint32_t local, uint32_t peer)>& resolved) {
  PeerPairing p = choose(mine, theirs, resolved, PairingBasis::routed);
  if (p.pairs.empty())
    p.why = "no rail here (" + local_text(mine) + ") reaches any of the peer's (" + rails_text(theirs) +
            "): no common subnet and no route resolved";
  return p;
}

RailPair lane_pair(const PeerPairing& p, uint32_t lane, uint32_t offset) {
  return p.pairs[(static_cast<size_t>(lane) + offset) % p.pairs.size()];
}

}  // namespace wireup
