// --mode on-demand on the public API (the rdma drivers): the asks of this rank's pattern made
// right after start(), the lane events feeding its ledger, and what it reports.
#pragma once

#include <set>

#include "wireup/wireup.hpp"
#include "wireup_a2a_pattern.h"

namespace wireup::a2a {

class OnDemandRank {
 public:
  // Registers the lane handler on `w` (before start()). `plan` must outlive this.
  OnDemandRank(wireup::Wireup& w, const PatternPlan& plan, uint32_t me, uint32_t lanes, const std::set<uint32_t>& dead);
  // connect() to every rank this one asks for, at once (after start()); "" or what failed.
  Problem ask_all();
  // Every lane this rank must see is READY or FAILED (LaneLedger::settled).
  bool settled() const { return ledger_.settled(); }
  // Lanes asked, ask-to-ready times, the crossing counters, and the pattern check of the
  // results this rank holds (a lane twice, a rank nobody asked for) into r.check.
  void report(RankReport& r) const;

 private:
  wireup::Wireup& w_;
  LaneLedger ledger_;
};

}  // namespace wireup::a2a
