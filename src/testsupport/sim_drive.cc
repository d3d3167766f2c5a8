#include "testsupport/sim_drive.h"

#include <queue>
#include <unordered_map>

namespace wireup {

Result<SimDriveReport> sim_drive(prov::sim::SimFabric& fab, const std::vector<Engine*>& engines, Nanos bound) {
  std::vector<Engine*> table = engines;
  SimDriveOptions o;
  o.bound = bound;
  return sim_drive(fab, table, o);
}

Result<SimDriveReport> sim_drive(prov::sim::SimFabric& fab, std::vector<Engine*>& engines, const SimDriveOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  const Nanos until = fab.now() + o.bound;
  bool intervention_due = static_cast<bool>(o.intervene);
  const size_t n = engines.size();
  std::unordered_map<prov::EventChannel*, uint32_t> owner;
  auto refresh_owner = [&] {
    owner.clear();
    for (uint32_t r = 0; r < n; ++r)
      if (engines[r])
        for (auto* c : engines[r]->channels()) owner[c] = r;
  };
  refresh_owner();
  using Timer = std::pair<Nanos, uint32_t>;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::vector<uint32_t> dirty;
  std::vector<char> queued(n, 0), done(n, 0);
  // Each engine's earliest queued timer: a later wakeup adds nothing (when the earlier one
  // fires, progress() runs and next_wakeup() is asked again), so it is not queued; without
  // this, every progress() call would queue the wireup deadline once more.
  std::vector<Nanos> armed(n, Nanos::max());
  size_t remaining = 0;
  for (uint32_t r = 0; r < n; ++r)
    if (engines[r]) {
      dirty.push_back(r);
      ++remaining;
    }
  auto mark = [&](uint32_t r) {
    if (!queued[r] && engines[r]) {
      queued[r] = 1;
      dirty.push_back(r);
    }
  };
  auto finished = [&](const Engine& e, uint32_t r) {
    return e.done() && !(o.until_setup_closed && e.setup_channel_open()) && (!o.settled || o.settled(r));
  };
  SimDriveReport rep;
  while (remaining > 0) {
    if (intervention_due && fab.now() >= o.at) {
      intervention_due = false;
      o.intervene(engines);
      for (uint32_t r = 0; r < n; ++r)
        if (!engines[r] && !done[r]) {
          done[r] = 1;  // no longer driven
          --remaining;
        }
      refresh_owner();
      if (remaining == 0) break;
    }
    for (uint32_t r : dirty) {
      queued[r] = 0;
      if (!engines[r]) continue;
      Engine& e = *engines[r];
      auto w = e.progress();
      if (!w) return Error(w.error()).with_peer("rank " + std::to_string(r));
      ++rep.progress_calls;
      if (!done[r] && finished(e, r)) {
        done[r] = 1;
        --remaining;
      }
      if (Nanos wake = e.next_wakeup(); wake < armed[r]) {
        armed[r] = wake;
        timers.push({wake, r});
      }
    }
    dirty.clear();
    if (remaining == 0) break;
    for (auto& rd : fab.take_ready()) {
      auto it = owner.find(rd.channel);
      if (it == owner.end()) {
        refresh_owner();
        it = owner.find(rd.channel);
      }
      if (it != owner.end()) mark(it->second);
    }
    while (!timers.empty() && timers.top().first <= fab.now()) {
      auto [at, r] = timers.top();
      timers.pop();
      if (at != armed[r]) continue;  // superseded by an earlier timer that already fired
      armed[r] = Nanos::max();
      mark(r);
    }
    if (!dirty.empty()) continue;
    Nanos next_timer = timers.empty() ? Nanos::max() : timers.top().first;
    if (intervention_due) next_timer = std::min(next_timer, o.at);
    const Nanos next_event = fab.next_time();
    if (next_timer == Nanos::max() && next_event == Nanos::max())
      return Error::make(ErrorCode::invalid_state, "sim_drive",
                         std::to_string(remaining) + " engines not done and nothing scheduled");
    if (std::min(next_timer, next_event) > until)
      return Error::make(ErrorCode::timed_out, "sim_drive",
                         std::to_string(remaining) + " engines not done within the bound");
    if (next_event <= next_timer) {
      fab.step();
      ++rep.fabric_steps;
    } else {
      fab.run_until(next_timer);
      ++rep.clock_advances;
    }
  }
  rep.virtual_end = fab.now();
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return rep;
}

}  // namespace wireup
