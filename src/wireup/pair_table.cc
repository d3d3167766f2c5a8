#include "wireup/pair_table.h"

namespace wireup {

const char* to_string(PairState s) {
  switch (s) {
    case PairState::waiting: return "waiting";
    case PairState::connecting: return "connecting";
    case PairState::established: return "established";
    case PairState::failed: return "failed";
    case PairState::probing: return "probing";
  }
  return "?";
}

void PairTable::build(const std::vector<uint64_t>& active, const std::vector<uint64_t>& passive) {
  std::vector<std::pair<uint64_t, cm::Role>> keys;
  keys.reserve(active.size() + passive.size());
  for (uint64_t k : active) keys.emplace_back(k, cm::Role::active);
  for (uint64_t k : passive) keys.emplace_back(k, cm::Role::passive);
  std::sort(keys.begin(), keys.end());
  pairs_.clear();
  pairs_.reserve(keys.size());  // exact: no reallocation ever moves a pair
  for (auto [k, role] : keys) {
    Pair& p = pairs_.emplace_back();
    p.peer = key_peer(k);
    p.lane = key_lane(k);
    p.role = role;
  }
  start_order_.clear();
  start_order_.reserve(active.size());
  for (uint64_t k : active) start_order_.push_back(index(*find(k)));
  next_start_ = 0;
  open_ = pairs_.size();
}

Pair* PairTable::find(uint64_t key) {
  return const_cast<Pair*>(static_cast<const PairTable*>(this)->find(key));
}

const Pair* PairTable::find(uint64_t key) const {
  auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                             [](const Pair& p, uint64_t k) { return p.key() < k; });
  return it != pairs_.end() && it->key() == key ? &*it : nullptr;
}

Pair* PairTable::next_to_start() {
  while (next_start_ < start_order_.size()) {
    Pair* p = at(start_order_[next_start_++]);
    if (p != nullptr) return p;
  }
  return nullptr;
}

const Pair* PairTable::peek_next_to_start() const {
  for (size_t i = next_start_; i < start_order_.size(); ++i)
    if (start_order_[i] < pairs_.size()) return &pairs_[start_order_[i]];
  return nullptr;
}

void PairTable::release_start_order() {
  std::vector<uint64_t>().swap(start_order_);
  next_start_ = 0;
}

void PairTable::clear() {
  pairs_.clear();
  release_start_order();
  open_ = 0;
}

}  // namespace wireup
