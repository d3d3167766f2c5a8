#include "wireup/peer_table.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace wireup {

void PeerTable::pack(const prov::SockAddr& a, uint8_t* out) {
  const uint16_t port = a.port();
  std::memcpy(out + 1, &port, 2);
  if (a.family() == AF_INET) {
    out[0] = 4;
    std::memcpy(out + 3, &reinterpret_cast<const sockaddr_in*>(a.get())->sin_addr, 4);
  } else if (a.family() == AF_INET6) {
    out[0] = 6;
    std::memcpy(out + 3, &reinterpret_cast<const sockaddr_in6*>(a.get())->sin6_addr, 16);
  } else {
    out[0] = 0;
  }
}

prov::SockAddr PeerTable::unpack(const uint8_t* in) {
  prov::SockAddr a;
  uint16_t port = 0;
  std::memcpy(&port, in + 1, 2);
  if (in[0] == 4) {
    auto* s = reinterpret_cast<sockaddr_in*>(a.get());
    s->sin_family = AF_INET;
    std::memcpy(&s->sin_addr, in + 3, 4);
  } else if (in[0] == 6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(a.get());
    s->sin6_family = AF_INET6;
    std::memcpy(&s->sin6_addr, in + 3, 16);
  }
  a.set_port(port);
  return a;
}

void PeerTable::widen(uint8_t stride) {
  if (stride <= stride_) return;
  std::vector<uint8_t> w(ranks_.size() * stride, 0);
  for (size_t i = 0; i < ranks_.size() && !addrs_.empty(); ++i)
    std::memcpy(&w[i * stride], &addrs_[i * stride_], stride_);
  addrs_.swap(w);
  stride_ = stride;
}

void PeerTable::assign(std::vector<std::pair<uint32_t, prov::SockAddr>> sorted_by_rank) {
  ranks_.clear();
  addrs_.clear();
  stride_ = kIpv4Record;
  for (auto& [r, a] : sorted_by_rank) stride_ = std::max(stride_, record_size(a));
  ranks_.reserve(sorted_by_rank.size());
  addrs_.assign(sorted_by_rank.size() * stride_, 0);
  for (auto& [r, a] : sorted_by_rank) {
    pack(a, &addrs_[ranks_.size() * stride_]);
    ranks_.push_back(r);
  }
}

void PeerTable::insert(uint32_t rank, const prov::SockAddr& a) {
  if (addrs_.size() != ranks_.size() * stride_) addrs_.resize(ranks_.size() * stride_, 0);  // after a release
  widen(record_size(a));
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  const auto at = static_cast<size_t>(it - ranks_.begin());
  if (it == ranks_.end() || *it != rank) {
    ranks_.insert(it, rank);
    addrs_.insert(addrs_.begin() + static_cast<std::ptrdiff_t>(at * stride_), stride_, uint8_t{0});
  }
  std::memset(&addrs_[at * stride_], 0, stride_);
  pack(a, &addrs_[at * stride_]);
}

std::optional<prov::SockAddr> PeerTable::address(uint32_t rank) const {
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end() || *it != rank || addrs_.empty()) return std::nullopt;
  const uint8_t* rec = &addrs_[static_cast<size_t>(it - ranks_.begin()) * stride_];
  if (rec[0] == 0) return std::nullopt;  // released, then another rank inserted
  return unpack(rec);
}

}  // namespace wireup
