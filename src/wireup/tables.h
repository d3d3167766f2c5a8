// The engine's two per-peer tables, laid out flat: both are filled once (set_peers, start)
// and never grow afterwards, so a sorted vector replaces a node per entry of std::map /
// std::unordered_map, and element addresses stay valid (connections point at their slot).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "provider/types.h"

namespace wireup {

// A map from a sorted, fixed key set to values, with the subset of the std::map interface
// the engine uses (find / at / iteration over (key, value) pairs). Built once by build().
template <class V>
class FlatTable {
 public:
  using value_type = std::pair<const uint64_t, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  // `keys` must be unique; they are sorted here. Every value starts default-constructed.
  void build(std::vector<uint64_t> keys) {
    std::sort(keys.begin(), keys.end());
    v_.clear();
    v_.reserve(keys.size());  // exact: no reallocation ever moves a value
    for (uint64_t k : keys) v_.emplace_back(k, V{});
  }
  iterator find(uint64_t k) {
    auto it = std::lower_bound(v_.begin(), v_.end(), k, [](const value_type& e, uint64_t x) { return e.first < x; });
    return it != v_.end() && it->first == k ? it : v_.end();
  }
  V& at(uint64_t k) {
    auto it = find(k);
    if (it == v_.end()) throw std::out_of_range("FlatTable::at");
    return it->second;
  }
  iterator begin() { return v_.begin(); }
  iterator end() { return v_.end(); }
  const_iterator begin() const { return v_.begin(); }
  const_iterator end() const { return v_.end(); }
  size_t size() const { return v_.size(); }
  void clear() { v_.clear(); }

 private:
  std::vector<value_type> v_;
};

// The peer table: ranks (sorted) for the whole life of the engine, addresses only while
// connecting (release_addresses() when wireup ends: an established pair never needs them).
// An address is kept as the sockaddr it is (at most 28 bytes), not as a 128-byte
// sockaddr_storage.
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
  // 0 or 1, as std::map::count.
  size_t count(uint32_t rank) const { return std::binary_search(ranks_.begin(), ranks_.end(), rank) ? 1 : 0; }
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

// A FIFO of keys over one vector: std::deque allocates a map and a 512-byte block even when
// empty, per queue and per engine. Storage is reused once the queue drains, and released on
// demand.
class KeyQueue {
 public:
  bool empty() const { return head_ == v_.size(); }
  uint64_t front() const { return v_[head_]; }
  void push_back(uint64_t k) { v_.push_back(k); }
  void pop_front() {
    if (++head_ == v_.size()) clear();
  }
  void clear() {
    v_.clear();
    head_ = 0;
  }
  void release() {
    std::vector<uint64_t>().swap(v_);
    head_ = 0;
  }

 private:
  std::vector<uint64_t> v_;
  size_t head_ = 0;
};

}  // namespace wireup
