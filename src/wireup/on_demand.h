// What on demand (EngineOptions::on_demand) keeps beside the pair table: the address asks
// not answered yet, every ask's deadline, and the rule for requests that cross.
//
// Each ask of a lane (connect(), the eager ring, the peer's first request) gives its pair a
// deadline, first_start + wireup_timeout. The deadlines are queued in ask order, which is
// deadline order (one timeout for all), so the front is always the next one due and a pop is
// O(1). A pair asked again gets a new entry; the old one is stale and skipped when it comes
// up, and dropped early once stale entries outnumber the open pairs: the queue stays within
// the open pairs plus a constant however often a transport connects and disconnects.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "wireup/fifo.h"
#include "wireup/pair_table.h"

namespace wireup {

class OnDemandAsks {
 public:
  // Asked for a peer whose address the engine lacks.
  using AddressCallback = std::function<void(uint32_t peer)>;

  explicit OnDemandAsks(Nanos wireup_timeout) : timeout_(wireup_timeout) {}

  void on_address_needed(AddressCallback cb) { address_cb_ = std::move(cb); }
  bool can_ask_address() const { return static_cast<bool>(address_cb_); }
  // The callback, once per peer until forget_ask(peer). It may answer (add_peer) before it
  // returns. Returns whether it was called.
  bool ask_address(uint32_t peer);
  // The peer's address came (add_peer), or the ask timed out: a later ask calls the callback
  // again.
  void forget_ask(uint32_t peer);
  bool address_asked(uint32_t peer) const;

  // Queues the deadline of `p`'s ask (its first_start + the timeout).
  void note_deadline(const PairTable& pairs, const Pair& p);
  // The next deadline in the queue, live or stale (waking for a stale one costs one pop);
  // Nanos::max() when none.
  Nanos next_deadline() const { return deadlines_.empty() ? Nanos::max() : deadlines_.front().first; }
  // The index of the next pair whose deadline is due at `t` and still its own (open, not asked
  // again since), its entry consumed; stale entries on the way are dropped.
  std::optional<uint32_t> pop_due(const PairTable& pairs, Nanos t);
  size_t deadlines_queued() const { return deadlines_.size(); }

 private:
  // Stale entries allowed beyond twice the open pairs before the queue is swept.
  static constexpr size_t kSlack = 64;
  using Deadline = std::pair<Nanos, uint32_t>;  // (due, pair index)
  bool live(const PairTable& pairs, const Deadline& d) const;

  Nanos timeout_;
  AddressCallback address_cb_;
  std::vector<uint32_t> address_asked_;  // sorted
  Fifo<Deadline> deadlines_;
};

// A request from the peer for a lane on demand, as the lane stands here.
enum class RequestFor : uint8_t {
  new_passive,  // nothing asked here (idle, failed, or never seen): reopen it as the passive side
  this_pair,    // we are passive for it, or it is established: the gate's pair checks decide
  crossed_won,  // we asked too and our request is the one both keep: refuse theirs (crossed)
  crossed_lost  // we asked too and theirs is kept: withdraw ours and accept theirs
};
const char* to_string(RequestFor r);

// Crossing requests: both sides apply the same rule (`we_initiate`, plan::initiates), so
// exactly one of the two requests survives and no retry is spent on either.
constexpr RequestFor classify_request(PairState s, cm::Role role, bool we_initiate) {
  if (s == PairState::idle || s == PairState::failed) return RequestFor::new_passive;
  if (role == cm::Role::passive || s == PairState::established) return RequestFor::this_pair;
  return we_initiate ? RequestFor::crossed_won : RequestFor::crossed_lost;
}

}  // namespace wireup
