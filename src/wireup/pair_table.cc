#include "wireup/pair_table.h"

namespace wireup {

const char* to_string(PairState s) {
  switch (s) {
    case PairState::waiting: return "waiting";
    case PairState::connecting: return "connecting";
    case PairState::established: return "established";
    case PairState::failed: return "failed";
    case PairState::probing: return "probing";
    case PairState::idle: return "idle";
  }
  return "?";
}

void PairTable::build(const std::vector<uint64_t>& active, const std::vector<uint64_t>& passive) {
  clear();
  by_key_.reserve(active.size() + passive.size());  // exact: bulk never adds afterwards
  auto make = [&](uint64_t k, cm::Role role) {
    Pair& p = pairs_.emplace_back();
    p.peer = key_peer(k);
    p.lane = key_lane(k);
    p.role = role;
    p.index = static_cast<uint32_t>(pairs_.size() - 1);
    by_key_.push_back(Key{k, p.index});
  };
  for (uint64_t k : active) make(k, cm::Role::active);
  for (uint64_t k : passive) make(k, cm::Role::passive);
  std::sort(by_key_.begin(), by_key_.end(), [](const Key& a, const Key& b) { return a.key < b.key; });
  for (uint32_t i = 0; i < active.size(); ++i) start_order_.push_back(i);  // made first, in start order
  open_ = pairs_.size();
}

Pair& PairTable::add(uint64_t key, cm::Role role) {
  Pair& p = pairs_.emplace_back();
  p.peer = key_peer(key);
  p.lane = key_lane(key);
  p.role = role;
  p.index = static_cast<uint32_t>(pairs_.size() - 1);
  auto it = std::lower_bound(by_key_.begin(), by_key_.end(), key, [](const Key& e, uint64_t k) { return e.key < k; });
  by_key_.insert(it, Key{key, p.index});
  ++open_;
  return p;
}

Pair* PairTable::find(uint64_t key) {
  return const_cast<Pair*>(static_cast<const PairTable*>(this)->find(key));
}

const Pair* PairTable::find(uint64_t key) const {
  auto it = std::lower_bound(by_key_.begin(), by_key_.end(), key, [](const Key& e, uint64_t k) { return e.key < k; });
  return it != by_key_.end() && it->key == key ? &pairs_[it->index] : nullptr;
}

Pair* PairTable::next_to_start() {
  while (!start_order_.empty()) {
    const uint32_t i = start_order_.front();
    start_order_.pop_front();
    if (Pair* p = at(i)) return p;
  }
  return nullptr;
}

const Pair* PairTable::peek_next_to_start() const {
  for (uint32_t i : start_order_)
    if (i < pairs_.size()) return &pairs_[i];
  return nullptr;
}

void PairTable::release_start_order() { std::deque<uint32_t>().swap(start_order_); }

void PairTable::clear() {
  pairs_.clear();
  std::vector<Key>().swap(by_key_);
  release_start_order();
  open_ = 0;
}

}  // namespace wireup
