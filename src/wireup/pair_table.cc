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
  std::vector<std::pair<uint64_t, cm::Role>> keys;
  keys.reserve(active.size() + passive.size());
  for (uint64_t k : active) keys.emplace_back(k, cm::Role::active);
  for (uint64_t k : passive) keys.emplace_back(k, cm::Role::passive);
  std::sort(keys.begin(), keys.end());
  // Made in key order: the bulk pairs are their own sorted index (no second one per pair).
  built_.reserve(keys.size());  // exact: no reallocation ever moves a pair
  for (auto [k, role] : keys) {
    Pair& p = built_.emplace_back();
    p.peer = key_peer(k);
    p.lane = key_lane(k);
    p.role = role;
    p.index = static_cast<uint32_t>(built_.size() - 1);
  }
  start_order_.assign(1, {});
  start_order_[0].reserve(active.size());
  for (uint64_t k : active) start_order_[0].push_back(find(k)->index);
  open_ = built_.size();
}

Pair& PairTable::add(uint64_t key, cm::Role role) {
  if (!added_pairs_) added_pairs_ = std::make_unique<std::deque<Pair>>();
  Pair& p = added_pairs_->emplace_back();
  p.peer = key_peer(key);
  p.lane = key_lane(key);
  p.role = role;
  p.index = static_cast<uint32_t>(size() - 1);
  auto it = std::lower_bound(added_.begin(), added_.end(), key, [](const Key& e, uint64_t k) { return e.key < k; });
  added_.insert(it, Key{key, p.index});
  ++open_;
  return p;
}

Pair* PairTable::find(uint64_t key) {
  return const_cast<Pair*>(static_cast<const PairTable*>(this)->find(key));
}

const Pair* PairTable::find(uint64_t key) const {
  auto b = std::lower_bound(built_.begin(), built_.end(), key, [](const Pair& p, uint64_t k) { return p.key() < k; });
  if (b != built_.end() && b->key() == key) return &*b;
  if (added_.empty()) return nullptr;
  auto it = std::lower_bound(added_.begin(), added_.end(), key, [](const Key& e, uint64_t k) { return e.key < k; });
  return it != added_.end() && it->key == key ? at(it->index) : nullptr;
}

Pair* PairTable::next_to_start(uint32_t q) {
  if (q >= start_order_.size()) return nullptr;
  Fifo<uint32_t>& order = start_order_[q];
  while (!order.empty()) {
    const uint32_t i = order.front();
    order.pop_front();
    if (Pair* p = at(i)) return p;
  }
  return nullptr;
}

const Pair* PairTable::peek_next_to_start(uint32_t q) const {
  if (q >= start_order_.size()) return nullptr;
  for (uint32_t i : start_order_[q])
    if (const Pair* p = at(i)) return p;
  return nullptr;
}

bool PairTable::all_started() const {
  return std::all_of(start_order_.begin(), start_order_.end(), [](const Fifo<uint32_t>& f) { return f.empty(); });
}

void PairTable::queue_start(const Pair& p, uint32_t q) {
  if (q >= start_order_.size()) start_order_.resize(q + 1);
  start_order_[q].push_back(p.index);
}

void PairTable::release_start_order() {
  for (Fifo<uint32_t>& f : start_order_) f.release();
}

void PairTable::clear() {
  std::vector<Pair>().swap(built_);
  added_pairs_.reset();
  std::vector<Key>().swap(added_);
  release_start_order();
  open_ = 0;
}

}  // namespace wireup
