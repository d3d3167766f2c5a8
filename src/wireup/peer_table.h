// The peer table: ranks (sorted) for the whole life of the engine, addresses only while
// connecting (bulk: release_addresses() when wireup ends: an established pair never needs them;
// on demand: kept, and one rank at a time may be added).
// An address is kept as the few bytes it is: family, port and IP, one fixed-size record per
// rank in one flat array (7 bytes while every peer is IPv4, 19 once one is IPv6), not as a
// 28-byte sockaddr union or a 128-byte sockaddr_storage.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "provider/types.h"

namespace wireup {

class PeerTable {
 public:
  void assign(std::vector<std::pair<uint32_t, prov::SockAddr>> sorted_by_rank);
  // Adds or replaces one rank's address (on demand: peers learnt one at a time).
  void insert(uint32_t rank, const prov::SockAddr& a);
  bool contains(uint32_t rank) const { return std::binary_search(ranks_.begin(), ranks_.end(), rank); }
  // nullopt for an unknown rank, one without a known IPv4/IPv6 address, or after
  // release_addresses().
  std::optional<prov::SockAddr> address(uint32_t rank) const;
  const std::vector<uint32_t>& ranks() const { return ranks_; }
  void release_addresses() {
    std::vector<uint8_t>().swap(addrs_);
    stride_ = kIpv4Record;
  }

 private:
  // A record, unaligned (read and written with memcpy): family (4 or 6; 0: none known, as
  // for another family), port in host order (2 bytes), then the 4 or 16 address bytes as in
  // the sockaddr (network order).
  static constexpr uint8_t kIpv4Record = 7;
  static constexpr uint8_t kIpv6Record = 19;
  static uint8_t record_size(const prov::SockAddr& a) { return a.family() == AF_INET6 ? kIpv6Record : kIpv4Record; }
  static void pack(const prov::SockAddr& a, uint8_t* out);
  static prov::SockAddr unpack(const uint8_t* in);
  // Grows every record to `stride` (the first IPv6 peer of an IPv4 table).
  void widen(uint8_t stride);

  std::vector<uint32_t> ranks_;
  std::vector<uint8_t> addrs_;  // ranks_.size() records of stride_ bytes, parallel to ranks_
  uint8_t stride_ = kIpv4Record;
};

}  // namespace wireup
