#include "tests/engine/sim_engine_fabric.h"

#include <queue>
#include <unordered_map>

namespace wireup::etest {

SimEngineFabric::SimEngineFabric(uint32_t nodes, prov::sim::SimConfig cfg) : fab_(std::move(cfg)) {
  for (uint32_t i = 0; i < nodes; ++i) fab_.add_node();
}

Result<std::unique_ptr<EngineFabric>> make_engine_fabric(uint32_t nodes) {
  prov::sim::SimConfig cfg;
  cfg.seed = 42;
  return std::unique_ptr<EngineFabric>(new SimEngineFabric(nodes, cfg));
}

Result<DriveReport> drive(SimEngineFabric& f, Job& job, Nanos bound, const std::vector<uint32_t>& dead) {
  auto& fab = f.fabric();
  const auto wall0 = std::chrono::steady_clock::now();
  const Nanos until = fab.now() + bound;
  const size_t n = job.ranks.size();
  std::vector<char> is_dead(n, 0);
  for (uint32_t d : dead) is_dead[d] = 1;
  std::unordered_map<prov::EventChannel*, uint32_t> owner;  // rebuilt lazily
  auto refresh_owner = [&] {
    owner.clear();
    for (uint32_t r = 0; r < n; ++r)
      for (auto* c : job.ranks[r].engine->channels()) owner[c] = r;
  };
  refresh_owner();
  using Timer = std::pair<Nanos, uint32_t>;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::vector<uint32_t> dirty;
  std::vector<char> queued(n, 0);
  for (uint32_t r = 0; r < n; ++r)
    if (!is_dead[r]) dirty.push_back(r);
  size_t remaining = n - dead.size();
  std::vector<char> done(n, 0);
  DriveReport rep;
  while (remaining > 0) {
    for (uint32_t r : dirty) {
      queued[r] = 0;
      Engine& e = *job.ranks[r].engine;
      auto w = e.progress();
      if (!w) return Error(w.error()).with_peer("rank " + std::to_string(r));
      ++rep.progress_calls;
      if (!done[r] && e.done()) {
        done[r] = 1;
        --remaining;
      }
      Nanos wake = e.next_wakeup();
      if (wake != Nanos::max()) timers.push({wake, r});
    }
    dirty.clear();
    if (remaining == 0) break;
    auto mark = [&](uint32_t r) {
      if (!queued[r] && !is_dead[r]) {
        queued[r] = 1;
        dirty.push_back(r);
      }
    };
    for (auto& rd : fab.take_ready()) {
      auto it = owner.find(rd.channel);
      if (it == owner.end()) {
        refresh_owner();  // a setup channel closed and addresses were reused
        it = owner.find(rd.channel);
      }
      if (it != owner.end()) mark(it->second);
    }
    while (!timers.empty() && timers.top().first <= fab.now()) {
      mark(timers.top().second);
      timers.pop();
    }
    if (!dirty.empty()) continue;
    const Nanos next_timer = timers.empty() ? Nanos::max() : timers.top().first;
    const Nanos next_event = fab.next_time();
    if (next_timer == Nanos::max() && next_event == Nanos::max())
      return Error::make(ErrorCode::invalid_state, "drive",
                         std::to_string(remaining) + " engines not done and nothing scheduled");
    if (std::min(next_timer, next_event) > until)
      return Error::make(ErrorCode::timed_out, "drive", std::to_string(remaining) + " engines not done in time");
    if (next_event <= next_timer) {
      fab.step();
      ++rep.fabric_events;
    } else {
      fab.run_until(next_timer);
    }
  }
  rep.virtual_time = fab.now();
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return rep;
}

}  // namespace wireup::etest
