// One rank on demand through the public API (wireup_a2a_ondemand.h).
#include "wireup_a2a_ondemand.h"

#include <chrono>

namespace wireup::a2a {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

OnDemandRank::OnDemandRank(wireup::Wireup& w, const PatternPlan& plan, uint32_t me, uint32_t lanes,
                           const std::set<uint32_t>& dead)
    : w_(w), ledger_(plan, me, lanes, dead) {
  w_.on_lane_event([this](const wireup_lane_event_t& ev) {
    if (ev.type == WIREUP_LANE_EVENT_READY) ledger_.ready(ev.peer, ev.lane, now_ns());
    else if (ev.type == WIREUP_LANE_EVENT_FAILED) ledger_.failed(ev.peer, ev.lane);
  });
}

Problem OnDemandRank::ask_all() {
  for (uint32_t q : ledger_.asks()) {
    ledger_.asked(q, now_ns());
    try {
      w_.connect(q);
    } catch (const std::exception& e) {
      return "connect(" + std::to_string(q) + "): " + e.what();
    }
  }
  return {};
}

void OnDemandRank::report(RankReport& r) const {
  r.lanes_asked = ledger_.lanes_asked();
  r.ask_to_ready = ledger_.ask_to_ready();
  const wireup_counters_t c = w_.counters();
  r.crossed_won = c.crossed_won;
  r.crossed_yielded = c.crossed_yielded;
  std::vector<std::pair<uint32_t, uint32_t>> held;
  for (const wireup_result_t& x : w_.results()) held.emplace_back(x.peer, x.lane);
  ledger_.check(held, r.check);
}

}  // namespace wireup::a2a
