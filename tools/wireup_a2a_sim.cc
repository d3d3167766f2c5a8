// The sim driver: N virtual ranks in this process, one engine per node of a SimFabric, in
// virtual time. Wall time and phases are virtual (the latency model's), so the summary is a
// projection of the job on the modelled hardware, not a measurement of this machine.
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "provider/sim/fabric.h"
#include "wireup_a2a.h"

namespace wireup::a2a {
namespace {

using prov::sim::LatencyModel;
using prov::sim::SimDeviceSpec;

// Engines only look at their channels when the fabric makes one readable; timers inside them
// (retry backoff, the wireup deadline) are served by sweeping every unfinished engine this
// often in virtual time, which delays a retry by at most this much.
constexpr Nanos kSweep = std::chrono::milliseconds(5);

LatencyModel model(const std::string& name) {
  if (name == "rxe_vm") return LatencyModel::rxe_vm();
  if (name == "zero") return LatencyModel::zero();
  return LatencyModel::hardware();
}

uint64_t key_from(uint64_t seed) {  // splitmix64: a fixed, non-zero key per seed
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) | 1;
}

struct SimRank {
  RankEngine re;
  Nanos done_at{-1};
  bool dead = false;
};

void cross_check_all(std::vector<SimRank>& ranks, const std::set<uint32_t>& dead, std::vector<CheckCounts>& out) {
  std::vector<std::unordered_map<uint64_t, QpnPair>> seen(ranks.size());
  auto k = [](uint32_t peer, uint32_t lane) { return (uint64_t(peer) << 32) | lane; };
  for (size_t r = 0; r < ranks.size(); ++r)
    if (!dead.count(uint32_t(r)))
      for (const ConnResult& c : ranks[r].re.engine->results()) seen[r][k(c.peer, c.lane)] = {c.local_qpn, c.remote_qpn};
  for (uint32_t a = 0; a < ranks.size(); ++a) {
    for (auto& [key, mine] : seen[a]) {
      const uint32_t b = uint32_t(key >> 32), lane = uint32_t(key);
      if (dead.count(b)) continue;
      auto it = seen[b].find(k(a, lane));
      const QpnPair theirs = it == seen[b].end() ? QpnPair{} : it->second;
      // cross_check counts on the lower rank; a lane the lower rank lacks is counted from here.
      if (a < b) cross_check(a, b, lane, mine, theirs, out[a]);
      else if (it == seen[b].end()) cross_check(b, a, lane, theirs, mine, out[b]);
    }
  }
}

void data_check_all(std::vector<SimRank>& ranks, const std::set<uint32_t>& dead, std::vector<CheckCounts>& out) {
  std::vector<std::unique_ptr<DataCheck>> dc(ranks.size());
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    if (dead.count(r)) continue;
    dc[r] = std::make_unique<DataCheck>(*ranks[r].re.engine, *ranks[r].re.factory, r, dead);
    if (Status s = dc[r]->post_recvs(); !s) out[r].problem(s.message()), ++out[r].errors, dc[r].reset();
  }
  for (uint32_t r = 0; r < ranks.size(); ++r)
    if (dc[r])
      if (Status s = dc[r]->post_sends(); !s) out[r].problem(s.message()), ++out[r].errors;
  // The simulated data path completes at once: two passes see every completion.
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    if (!dc[r]) continue;
    bool complete = false;
    for (int pass = 0; pass < 2 && !complete; ++pass) {
      auto p = dc[r]->poll(out[r]);
      if (!p) out[r].problem(p.error().message()), ++out[r].errors;
      complete = !p || *p;
    }
    if (!complete) dc[r]->give_up(out[r]);
  }
}

}  // namespace

int run_sim(const Options& o) {
  auto cfg = load_config(o);
  if (!cfg) return std::fprintf(stderr, "wireup_a2a: %s\n", cfg.error().message().c_str()), 1;
  const config::Settings& s = cfg->settings();
  const uint32_t n = o.sim_ranks;
  const uint32_t lanes = uint32_t(s.engine.lanes);
  if (o.kill_rank >= int64_t(n)) return std::fprintf(stderr, "wireup_a2a: --kill-rank is not a rank of this job\n"), 2;

  prov::sim::SimConfig sc;
  sc.seed = o.sim_seed;
  sc.latency = model(o.sim_latency);
  prov::sim::SimFabric fab(sc);  // declared before the engines: outlives them
  prov::sim::SimNodeSpec spec;
  spec.devices = {o.sim_latency == "rxe_vm" ? SimDeviceSpec::rxe() : SimDeviceSpec::mlx5()};
  std::vector<SimRank> ranks(n);
  const uint64_t key = o.job_key ? o.job_key : s.engine.job_key ? s.engine.job_key : key_from(o.sim_seed);
  std::vector<Peer> table;
  for (uint32_t r = 0; r < n; ++r) {
    fab.add_node(spec);
    auto e = make_engine(fab.provider(r), s, r, n, fab.address(r), key);
    if (!e) return std::fprintf(stderr, "wireup_a2a: %s\n", e.error().message().c_str()), 1;
    ranks[r].re = std::move(e).value();
    table.push_back(Peer{r, ranks[r].re.engine->local_address()});
  }
  // Connection timings and the engine's first-attempt stamps use 0 as "not yet": start after
  // the virtual epoch so that nothing happens at t = 0.
  fab.run_until(fab.now() + std::chrono::milliseconds(1));
  for (uint32_t r = 0; r < n; ++r) {
    Status st = ranks[r].re.engine->set_peers(table);
    if (st) st = ranks[r].re.engine->start();
    if (!st) return std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", r, st.message().c_str()), 1;
  }
  const uint64_t planned = uint64_t(n) * (n - 1) / 2 * lanes;
  std::set<uint32_t> dead;
  const Nanos t0 = fab.now();
  if (o.kill_rank >= 0) {
    dead.insert(uint32_t(o.kill_rank));
    if (o.kill_after_ms >= 0) fab.kill_node(uint32_t(o.kill_rank), t0 + std::chrono::milliseconds(o.kill_after_ms));
  }
  if (!o.json)
    std::fprintf(stderr, "[a2a] sim: %u ranks x %u lanes = %llu connections, latency model %s\n", n, lanes,
                 (unsigned long long)planned, o.sim_latency.c_str());

  // --- the event loop -----------------------------------------------------------------------
  const auto real0 = std::chrono::steady_clock::now();
  auto last_print = real0;
  uint32_t live_left = n - uint32_t(dead.size());
  std::vector<uint32_t> queue(n), next;
  for (uint32_t r = 0; r < n; ++r) queue[r] = r;
  std::vector<uint8_t> queued(n, 1);
  Nanos next_sweep = t0 + kSweep;
  const Nanos bound = t0 + s.engine.wireup_timeout + std::chrono::seconds(60);
  int errors = 0;
  while (live_left > 0) {
    for (uint32_t r : queue) {
      queued[r] = 0;
      SimRank& sr = ranks[r];
      if (sr.dead || sr.done_at.count() >= 0) continue;
      if (o.kill_rank == int(r) && o.kill_after_ms >= 0 && fab.now() >= t0 + std::chrono::milliseconds(o.kill_after_ms)) {
        sr.dead = true;
        continue;
      }
      auto w = sr.re.engine->progress();
      if (!w) std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", r, w.error().message().c_str()), ++errors;
      const Engine& e = *sr.re.engine;
      if (o.kill_rank == int(r) && o.kill_after_conns > 0 &&
          e.stats().established_active + e.stats().established_passive >= uint64_t(o.kill_after_conns)) {
        fab.kill_node(r, fab.now());
        sr.dead = true;
        continue;
      }
      if (!w || e.done()) {
        sr.done_at = fab.now();
        if (!dead.count(r)) --live_left;
      } else if (*w > 0 && !queued[r]) {
        next.push_back(r), queued[r] = 1;
      }
    }
    queue.swap(next);
    next.clear();
    if (o.kill_rank >= 0 && ranks[uint32_t(o.kill_rank)].done_at.count() >= 0 && !ranks[uint32_t(o.kill_rank)].dead) {
      ranks[uint32_t(o.kill_rank)].dead = true;  // done before its trigger: it dies now
      fab.kill_node(uint32_t(o.kill_rank), fab.now());
    }
    while (queue.empty() && live_left > 0) {
      if (fab.now() > bound) {
        std::fprintf(stderr, "wireup_a2a: sim: engines not done %lld s of virtual time after start\n",
                     (long long)std::chrono::duration_cast<std::chrono::seconds>(fab.now() - t0).count());
        return 1;
      }
      if (fab.next_time() <= next_sweep) {
        fab.step();
      } else {
        fab.run_until(next_sweep);
        next_sweep += kSweep;
        for (uint32_t r = 0; r < n; ++r)
          if (!ranks[r].dead && ranks[r].done_at.count() < 0 && !queued[r]) queue.push_back(r), queued[r] = 1;
      }
      for (const prov::sim::SimFabric::Ready& rd : fab.take_ready())
        if (rd.node < n && !queued[rd.node]) queue.push_back(rd.node), queued[rd.node] = 1;
    }
    const auto now = std::chrono::steady_clock::now();
    if (o.progress && now - last_print >= std::chrono::seconds(1)) {
      uint64_t up = 0, retries = 0;
      for (const SimRank& sr : ranks) up += sr.re.engine->stats().established_active, retries += sr.re.engine->stats().retries;
      progress_line(up, planned, retries, std::chrono::duration<double>(fab.now() - t0).count());
      last_print = now;
    }
  }

  // --- checks and the summary ---------------------------------------------------------------
  std::vector<CheckCounts> checks(n);
  if (o.verify) {
    cross_check_all(ranks, dead, checks);
    data_check_all(ranks, dead, checks);
  }
  std::vector<RankReport> reports;
  double wall = 0;
  for (uint32_t r = 0; r < n; ++r) {
    if (dead.count(r)) continue;
    const double secs = std::chrono::duration<double>(ranks[r].done_at - t0).count();
    wall = std::max(wall, secs);
    reports.push_back(make_report(r, ranks[r].re, secs, dead));
    reports.back().check = checks[r];
  }
  if (errors) reports[0].check.errors += uint64_t(errors), reports[0].check.problem("engine progress failed (see above)");
  JobInfo job{n, lanes, "sim", "sim, latency model " + o.sim_latency + ", seed " + std::to_string(o.sim_seed), wall,
              o.verify, dead};
  Summary sum = summarize(job, reports);
  print_summary(sum, o.json);
  if (!o.json)
    std::fprintf(stderr, "[a2a] sim: %.1f s of real time for %.3f s of virtual time\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - real0).count(), wall);
  for (SimRank& sr : ranks) sr.re.engine.reset(), sr.re.factory.reset();  // before the fabric
  return exit_status(sum);
}

}  // namespace wireup::a2a
