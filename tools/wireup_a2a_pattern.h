// On-demand runs of wireup_a2a (--mode on-demand --pattern all|ring:K|random:K): which ranks
// each rank asks for, computed the same on every rank from the pattern and its seed, and one
// rank's bookkeeping of its lanes (asks, lane events, ask-to-ready times, the check of what
// it ended up connected to). Pure: no API, no clock; the drivers feed it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "wireup_a2a.h"

namespace wireup::a2a {

struct Pattern {
  enum class Kind : uint8_t { all, ring, random };
  Kind kind = Kind::all;
  uint32_t k = 0;  // ring:K, random:K: peers per rank
  std::string text() const;  // "all", "ring:3", "random:3"
};
// "all" | "ring:K" | "random:K" (K >= 1), or the sentence naming what is wrong.
Expected<Pattern> parse_pattern(const std::string& s);

// The whole job's asks. all: every rank asks every other; ring:K: rank r asks r+1..r+K
// (mod n); random:K: K distinct others drawn from a generator seeded by (seed, r), so every
// rank computes every other rank's draw. A pair both ends chose is a crossing pair.
class PatternPlan {
 public:
  // K >= n is refused: a rank has only n-1 peers.
  static Expected<PatternPlan> make(const Pattern& p, uint32_t nranks, uint64_t seed);
  uint32_t ranks() const { return uint32_t(asks_.size()); }
  const std::vector<uint32_t>& asks(uint32_t r) const { return asks_[r]; }  // sorted
  bool asks(uint32_t a, uint32_t b) const;                                  // a asks b
  // Ranks r asks or that ask r, sorted: the pairs r must end up connected to.
  const std::vector<uint32_t>& partners(uint32_t r) const { return partners_[r]; }
  uint64_t pairs() const { return pairs_; }        // distinct unordered pairs asked
  uint64_t crossing() const { return crossing_; }  // pairs asked by both ends
  std::string text() const { return text_; }

 private:
  std::vector<std::vector<uint32_t>> asks_, partners_;
  uint64_t pairs_ = 0, crossing_ = 0;
  std::string text_;
};

// What the summary says about the pattern of the job.
JobInfo::Pattern pattern_info(const PatternPlan& plan, const std::set<uint32_t>& dead);

// One rank's lanes on demand. A lane is settled at its first READY or FAILED event; the rank
// is settled when every lane of every partner is, except those of a victim (--kill-rank) it
// did not ask itself: nothing of the victim's asks has to arrive.
class LaneLedger {
 public:
  LaneLedger(const PatternPlan& plan, uint32_t me, uint32_t lanes, const std::set<uint32_t>& dead);
  const std::vector<uint32_t>& asks() const { return plan_.asks(me_); }
  void asked(uint32_t peer, int64_t at_ns);   // connect(peer) was called then
  void ready(uint32_t peer, uint32_t lane, int64_t at_ns);
  void failed(uint32_t peer, uint32_t lane);
  bool settled() const { return unsettled_ == 0; }
  uint64_t lanes_asked() const { return uint64_t(asks().size()) * lanes_; }
  // connect() -> READY of each lane this rank asked, in ns (the asker's measure).
  const std::vector<int64_t>& ask_to_ready() const { return ask_to_ready_; }
  // `held`: (peer, lane) of every connection this rank holds at the end. Counts a lane held
  // twice (pattern_dup) and one with a rank outside the pattern (pattern_extra), each named.
  void check(const std::vector<std::pair<uint32_t, uint32_t>>& held, CheckCounts& c) const;

 private:
  struct Lane {
    int64_t asked_at = -1;
    bool settled = false;
  };
  Lane* lane(uint32_t peer, uint32_t l);
  void settle(Lane& x);
  const PatternPlan& plan_;
  uint32_t me_, lanes_;
  std::unordered_map<uint64_t, Lane> lanes_of_;  // peer * lanes + lane, partners only
  size_t unsettled_ = 0;
  std::vector<int64_t> ask_to_ready_;
};

}  // namespace wireup::a2a
