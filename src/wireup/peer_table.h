// The peer table: ranks (sorted) for the whole life of the engine, addresses only while
// connecting (bulk: release_addresses() when wireup ends: an established pair never needs them;
// on demand: kept, and one rank at a time may be added).
// An address is kept as the sockaddr it is (at most 28 bytes), not as a 128-byte
// sockaddr_storage.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "provider/types.h"

namespace wireup {

class PeerTable {
 public:
  void assign(std::vector<std::pair<uint32_t, prov::SockAddr>> sorted_by_rank) {
    ranks_.clear();
    addrs_.clear();
    ranks_.reserve(sorted_by_rank.size());
    addrs_.reserve(sorted_by_rank.size());
    for (auto& [r, a] : sorted_by_rank) {
      ranks_.push_back(r);
      Addr c{};
      std::memcpy(&c, a.get(), std::min<size_t>(a.len(), sizeof c));
      addrs_.push_back(c);
    }
  }
  // Adds or replaces one rank's address (on demand: peers learnt one at a time).
  void insert(uint32_t rank, const prov::SockAddr& a) {
    Addr c{};
    std::memcpy(&c, a.get(), std::min<size_t>(a.len(), sizeof c));
    auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
    const auto at = static_cast<size_t>(it - ranks_.begin());
    if (it != ranks_.end() && *it == rank) {
      addrs_[at] = c;
      return;
    }
    ranks_.insert(it, rank);
    addrs_.insert(addrs_.begin() + static_cast<std::ptrdiff_t>(at), c);
  }
  bool contains(uint32_t rank) const { return std::binary_search(ranks_.begin(), ranks_.end(), rank); }
  // nullopt for an unknown rank or after release_addresses().
  std::optional<prov::SockAddr> address(uint32_t rank) const {
    auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
    if (it == ranks_.end() || *it != rank || addrs_.empty()) return std::nullopt;
    return prov::SockAddr::from(&addrs_[static_cast<size_t>(it - ranks_.begin())].sa);
  }
  const std::vector<uint32_t>& ranks() const { return ranks_; }
  void release_addresses() { std::vector<Addr>().swap(addrs_); }

 private:
  union Addr {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
  };
  std::vector<uint32_t> ranks_;
  std::vector<Addr> addrs_;  // parallel to ranks_
};

}  // namespace wireup
