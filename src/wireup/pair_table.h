// The planned (peer, lane) pairs of one engine, each with exactly one state and the data that
// state owns:
//
//   waiting      nothing in flight. Active: its next attempt is due (start order or a retry).
//                Passive: ready for the peer's next REQ; `last` is what to report if none
//                comes before the deadline.
//   connecting   a cm::Connection owns the id (and the QP once made); `holds_qp_place` says
//                whether it counts against its rail's QP window.
//   established  only the id (migrated to the steady channel) and the QP until the transport
//                takes it; `result` is its record in Records.
//   failed       given up; `error` is its record in Records. On the active side an abandon
//                notice may tell the passive side meanwhile (Notices, notices.h, holds it).
//   probing      passive only: our REP retries ran out and a rtu_lost notice asks the active
//                side whether it is established (repair.h); Notices holds the notice.
//   idle         on demand only (EngineOptions::on_demand): nothing asked and nothing held, as
//                after a disconnect; connect() or the peer's request reopens it.
//
// Bulk: build() makes every planned pair at once, in key order, in one vector (so they are their
// own sorted index, and bulk pays nothing for on demand). On demand: add() appends one as it is
// asked for (or as the peer asks) to a deque after them, found through a sorted index of the
// added ones. Neither kind of growth moves a pair: its address and its index (the engine's
// tags) never change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <variant>
#include <vector>

#include "cm/connection.h"
#include "provider/provider.h"
#include "wireup/fifo.h"

namespace wireup {

enum class PairState : uint8_t { waiting, connecting, established, failed, probing, idle };
const char* to_string(PairState s);

// Whether a pair is open: wireup still owes an outcome for it (the engine is done() when none
// is). Established, failed and idle pairs are settled; the others are on their way.
constexpr bool is_open(PairState s) {
  return s == PairState::waiting || s == PairState::connecting || s == PairState::probing;
}

inline uint64_t pair_key(uint32_t peer, uint32_t lane) { return (uint64_t(peer) << 16) | lane; }
inline uint32_t key_peer(uint64_t k) { return static_cast<uint32_t>(k >> 16); }
inline uint16_t key_lane(uint64_t k) { return static_cast<uint16_t>(k & 0xffff); }

struct Waiting {
  std::unique_ptr<cm::Failure> last;  // passive: reported at the deadline if nothing better came
};
struct Connecting {
  std::unique_ptr<cm::Connection> conn;
  bool holds_qp_place = false;
  // The rail whose windows this attempt counts against (admission.h): an active lane's local
  // rail when it started, a passive one's listener. Its places go back there.
  uint8_t rail = 0;
  std::unique_ptr<cm::Failure> last;  // passive: an earlier attempt's failure, kept for the deadline
};
struct Established {
  std::unique_ptr<prov::CmId> id;  // declared before qp: destroyed after it
  std::unique_ptr<prov::Qp> qp;    // until the transport takes it
  uint32_t result = 0;
  bool disconnected = false;       // DISCONNECTED seen (or sent) on the steady channel
};
struct Failed {
  uint32_t error = 0;
};
struct Probing {};
struct Idle {};

class PairTable;

// The most pairs one process holds: a Pair's index has 27 bits (its rail shift and flag share
// the word). (nranks - 1) * lanes is checked against it when the engine is made.
inline constexpr uint64_t kMaxPairs = uint64_t{1} << 27;

struct Pair {
  using State = std::variant<Waiting, Connecting, Established, Failed, Probing, Idle>;

 private:
  // Changed only by PairTable::become, which keeps the count of open pairs.
  friend class PairTable;
  // First, so that the fields below fill the 7 bytes after its 1-byte index (the variant is
  // not a POD: [[no_unique_address]] lets them use its tail padding).
  [[no_unique_address]] State st;

 public:
  cm::Role role = cm::Role::active;
  uint16_t lane = 0;
  uint32_t peer = 0;
  uint32_t attempt = 0;       // active: attempts made; passive: newest attempt seen
  uint32_t index : 27 = 0;    // its place in the table, for ever (kMaxPairs, engine_checks.cc)
  // Active: how many rail pairs its attempts moved on from, each after an attempt that got no
  // answer (Engine::next_rail_after); the lane's rail pair is the striped one plus this.
  uint32_t rail_shift : 4 = 0;
  // On demand: the lane waits for the transport's answer to the address callback before its
  // first attempt can be queued (Engine::add_peer).
  uint32_t awaiting_address : 1 = 0;
  // Bulk: the first attempt (cm::kUnset until then). On demand: when it was asked for (by us,
  // or by the peer's first request), which its deadline counts from.
  Nanos first_start{-1};

  PairState state() const { return static_cast<PairState>(st.index()); }
  bool open() const { return is_open(state()); }
  uint64_t key() const { return pair_key(peer, lane); }
  template <class S>
  S* as() { return std::get_if<S>(&st); }
  template <class S>
  const S* as() const { return std::get_if<S>(&st); }
};
static_assert(std::variant_size_v<Pair::State> == 6, "one alternative per PairState");
// 24 bytes of state (the largest alternative), its index, then the pair's own 23 bytes in the
// variant's tail padding and after it (the address flag shares the index's word: the key's
// fields, read by every lookup, stay whole).
static_assert(sizeof(Pair) <= 48, "a Pair grew");

class PairTable {
 public:
  // Bulk: `active` in start order (lane-major), `passive` in any order; keys must be distinct.
  void build(const std::vector<uint64_t>& active, const std::vector<uint64_t>& passive);
  // On demand: a new pair (its key must not be in the table), open, waiting; not queued.
  Pair& add(uint64_t key, cm::Role role);

  Pair* find(uint64_t key);
  const Pair* find(uint64_t key) const;
  Pair* find(uint32_t peer, uint32_t lane) { return find(pair_key(peer, lane)); }
  const Pair* find(uint32_t peer, uint32_t lane) const { return find(pair_key(peer, lane)); }
  // A pair's index never changes: the engine's internal tags (connection tags, steady routes,
  // queues) are indexes, so that an event finds its pair in O(1).
  uint32_t index(const Pair& p) const { return p.index; }
  Pair* at(uint64_t index) {
    if (index < built_.size()) return &built_[index];
    index -= built_.size();
    return index < added_count() ? &(*added_pairs_)[index] : nullptr;
  }
  const Pair* at(uint64_t index) const { return const_cast<PairTable*>(this)->at(index); }

  // Every pair, built ones first, by index.
  template <class T, class Table>
  class Iter {
   public:
    Iter(Table* t, size_t i) : t_(t), i_(i) {}
    T& operator*() const { return *t_->at(i_); }
    T* operator->() const { return t_->at(i_); }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Table* t_;
    size_t i_;
  };
  using iterator = Iter<Pair, PairTable>;
  using const_iterator = Iter<const Pair, const PairTable>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size()}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  size_t size() const { return built_.size() + added_count(); }

  // First attempts wait in start order, one queue per rail (the rail of each pair's lane, so
  // that one rail's full window or paced listener never holds back another's starts); build()
  // puts them all in queue 0, split_start_order() spreads them.
  // The next active pair in rail `q`'s start order, or null when all its pairs were started.
  Pair* next_to_start(uint32_t q = 0);
  // The pair next_to_start(q) would return, left in place (null when all were started).
  const Pair* peek_next_to_start(uint32_t q = 0) const;
  bool all_started() const;
  bool all_started(uint32_t q) const { return q >= start_order_.size() || start_order_[q].empty(); }
  uint32_t start_queues() const { return static_cast<uint32_t>(start_order_.size()); }
  // On demand: queues a pair's first attempt behind those already queued on rail `q`.
  void queue_start(const Pair& p, uint32_t q = 0);
  // Spreads queue 0 over `queues` queues by `queue_of`, each keeping the start order.
  template <class F>
  void split_start_order(uint32_t queues, F queue_of) {
    Fifo<uint32_t> all = std::move(start_order_[0]);
    start_order_.assign(queues, {});
    for (uint32_t i : all) queue_start(*at(i), queue_of(*at(i)));
  }
  // Rail `q` carries nothing more: its queued first attempts join the queues `queue_of` says
  // (behind what those hold), in their order.
  template <class F>
  void move_starts(uint32_t q, F queue_of) {
    if (q >= start_order_.size()) return;
    Fifo<uint32_t> moved = std::move(start_order_[q]);
    start_order_[q] = {};
    for (uint32_t i : moved)
      if (const Pair* p = at(i)) queue_start(*p, queue_of(*p));
  }

  // Replaces a pair's state (and destroys what the old one owned: retire connections first).
  // The one way a pair changes state, so that the count of open pairs follows every change.
  template <class S>
  S& become(Pair& p, S s = {}) {
    const bool was = p.open();
    S& now = p.st.template emplace<S>(std::move(s));
    if (was != p.open()) was ? --open_ : ++open_;
    return now;
  }

  // The pairs that are is_open(); kept by become(), build() and add().
  size_t open() const { return open_; }

  // Wireup over: the start order is not needed any more.
  void release_start_order();
  void clear();

 private:
  struct Key {
    uint64_t key;
    uint32_t index;
  };
  size_t added_count() const { return added_pairs_ ? added_pairs_->size() : 0; }

  // Bulk pairs in one exact-size vector, sorted by key (their own index: indexes 0..); pairs
  // added on demand after them in a deque (growth moves none), found through `added_`. The
  // deque is made by the first add(): an empty std::deque already holds ~570 bytes (and 80
  // in place), which bulk would pay for nothing.
  std::vector<Pair> built_;
  std::unique_ptr<std::deque<Pair>> added_pairs_;
  std::vector<Key> added_;  // sorted by key
  std::vector<Fifo<uint32_t>> start_order_ = std::vector<Fifo<uint32_t>>(1);  // by rail: indexes, consumed from the front
  size_t open_ = 0;
};

}  // namespace wireup
