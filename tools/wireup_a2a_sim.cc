// The sim driver: N virtual ranks in this process, one engine per node of a SimFabric, in
// virtual time. Wall time and phases are virtual (the latency model's), so the summary is a
// projection of the job on the modelled hardware, not a measurement of this machine.
#include <chrono>
#include <cstdio>
#include <optional>
#include <unordered_map>

#include "provider/sim/fabric.h"
#include "testsupport/sim_drive.h"
#include "wireup_a2a_pattern.h"
#include "wireup_a2a_sim.h"

namespace wireup::a2a {
namespace {

using prov::sim::LatencyModel;
using prov::sim::SimDeviceSpec;

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
  std::unique_ptr<LaneLedger> ledger;  // on demand
};

// On demand: every rank's lane events feed its ledger (virtual time), its address callback
// answers from the table (as a bootstrap would, one peer at a time), and right after start
// each rank asks for its pattern's peers at once.
Status ask_on_demand(std::vector<SimRank>& ranks, const std::vector<Peer>& table, const PatternPlan& plan,
                     prov::sim::SimFabric& fab, uint32_t lanes, const std::set<uint32_t>& dead) {
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    SimRank& sr = ranks[r];
    sr.ledger = std::make_unique<LaneLedger>(plan, r, lanes, dead);
    LaneLedger* l = sr.ledger.get();
    Engine* e = sr.re.engine.get();
    e->on_lane_event([l, &fab](const LaneEvent& ev) {
      if (ev.kind == LaneEvent::Kind::ready) l->ready(ev.peer, ev.lane, fab.now().count());
      else if (ev.kind == LaneEvent::Kind::failed) l->failed(ev.peer, ev.lane);
    });
    e->on_address_needed([e, &table](uint32_t peer) { (void)e->add_peer(table[peer]); });
  }
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    WIREUP_TRY(ranks[r].re.engine->start());
    for (uint32_t q : ranks[r].ledger->asks()) {
      ranks[r].ledger->asked(q, fab.now().count());
      WIREUP_TRY(ranks[r].re.engine->connect(q));
    }
  }
  return Status::ok();
}

// The ledger's part of rank r's report: asks, ask -> ready, crossings, the pattern check.
void report_on_demand(const SimRank& sr, RankReport& rep) {
  const LaneLedger& l = *sr.ledger;
  const Engine& e = *sr.re.engine;
  rep.lanes_asked = l.lanes_asked();
  rep.ask_to_ready = l.ask_to_ready();
  rep.crossed_won = e.stats()[Counter::crossed_won];
  rep.crossed_yielded = e.stats()[Counter::crossed_yielded];
  std::vector<std::pair<uint32_t, uint32_t>> held;
  for (const ConnResult& c : e.results())
    if (!c.withdrawn) held.emplace_back(c.peer, c.lane);
  l.check(held, rep.check);
}

// When a rank was done, in virtual time: its last connection, if none failed. A failed pair is
// settled at a retry's end or the wireup deadline, which nothing records: such a rank is taken
// as done when the whole job was.
Nanos done_at(const Engine& e, Nanos job_end) {
  if (!e.errors().empty() || e.results().empty()) return job_end;
  Nanos last{0};
  for (const ConnResult& c : e.results())
    if (!c.withdrawn) last = std::max(last, c.timings.get().established);
  return last;
}

void cross_check_all(std::vector<SimRank>& ranks, const std::set<uint32_t>& dead, std::vector<CheckCounts>& out) {
  std::vector<std::unordered_map<uint64_t, QpnPair>> seen(ranks.size());
  auto k = [](uint32_t peer, uint32_t lane) { return (uint64_t(peer) << 32) | lane; };
  for (size_t r = 0; r < ranks.size(); ++r)
    if (!dead.count(uint32_t(r)))
      for (const ConnResult& c : ranks[r].re.engine->results())
        if (!c.withdrawn) seen[r][k(c.peer, c.lane)] = {c.local_qpn, c.remote_qpn};
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
  std::vector<std::unique_ptr<EngineDataPath>> path(ranks.size());
  std::vector<std::unique_ptr<DataCheck>> dc(ranks.size());
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    if (dead.count(r)) continue;
    path[r] = std::make_unique<EngineDataPath>(ranks[r].re, dead);
    out[r].one_sided_skipped = path[r]->one_sided_missing();
    dc[r] = std::make_unique<DataCheck>(path[r]->lanes(), *path[r], r);
    if (Problem p = dc[r]->post_recvs(); !p.empty()) out[r].problem(p), ++out[r].errors, dc[r].reset();
  }
  for (uint32_t r = 0; r < ranks.size(); ++r)
    if (path[r] && !path[r]->one_sided_missing().empty()) {
      std::fprintf(stderr, "wireup_a2a: the one-sided check (RDMA WRITE and READ both ways) is NOT RUN: %s\n",
                   path[r]->one_sided_missing().c_str());
      break;
    }
  for (uint32_t r = 0; r < ranks.size(); ++r)
    if (dc[r])
      if (Problem p = dc[r]->post_sends(); !p.empty()) out[r].problem(p), ++out[r].errors;
  // The simulated data path completes at once: every completion is there for the polling
  // (a poll takes at most 64).
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    if (!dc[r]) continue;
    bool complete = false;
    for (size_t pass = 0; pass < 2 * dc[r]->size() / 64 + 2 && !complete; ++pass) {
      auto p = dc[r]->poll(out[r]);
      if (!p) out[r].problem(p.error()), ++out[r].errors;
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
  if (o.kill_after_conns > 0)
    return std::fprintf(stderr, "wireup_a2a: --kill-after-conns is for mpirun; on sim, a node dies at a time: --kill-after-ms\n"), 2;

  auto od = engine_mode(o, s.engine.mode == config::EngineMode::on_demand ? "on_demand" : "bulk");
  if (!od) return std::fprintf(stderr, "wireup_a2a: %s\n", od.error().c_str()), 2;
  std::optional<PatternPlan> plan;
  if (*od) {
    auto pattern = parse_pattern(o.pattern);
    auto p = pattern ? PatternPlan::make(*pattern, n, o.sim_seed) : Expected<PatternPlan>::failure(pattern.error());
    if (!p) return std::fprintf(stderr, "wireup_a2a: %s\n", p.error().c_str()), 2;
    plan = std::move(*p);
  }

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
  const uint64_t planned = (plan ? plan->pairs() : uint64_t(n) * (n - 1) / 2) * lanes;
  std::set<uint32_t> dead;
  if (o.kill_rank >= 0) dead.insert(uint32_t(o.kill_rank));
  const Nanos t0 = fab.now();
  for (uint32_t r = 0; r < n && !plan; ++r) {
    Status st = ranks[r].re.engine->set_peers(table);
    if (st) st = ranks[r].re.engine->start();
    if (!st) return std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", r, st.message().c_str()), 1;
  }
  if (plan)
    if (Status st = ask_on_demand(ranks, table, *plan, fab, lanes, dead); !st)
      return std::fprintf(stderr, "wireup_a2a: %s\n", st.message().c_str()), 1;
  if (!o.json)
    std::fprintf(stderr, "[a2a] sim: %u ranks x %u lanes = %llu connections%s%s, latency model %s\n", n, lanes,
                 (unsigned long long)planned, plan ? ", on demand, pattern " : "", plan ? plan->text().c_str() : "",
                 o.sim_latency.c_str());

  // --- the event loop: only engines with a ready channel or a due timer are progressed ------
  std::vector<Engine*> engines;
  for (SimRank& sr : ranks) engines.push_back(sr.re.engine.get());
  const Nanos bound = s.engine.wireup_timeout + std::chrono::seconds(60);
  SimDriveReport total;
  SimDriveOptions so;
  if (plan) so.settled = [&ranks](uint32_t r) { return ranks[r].ledger->settled(); };
  auto drive = [&](Nanos for_at_most) -> Status {
    so.bound = for_at_most;
    auto d = sim_drive(fab, engines, so);
    if (!d) return d.error();
    total.progress_calls += d->progress_calls, total.fabric_steps += d->fabric_steps, total.wall_s += d->wall_s;
    total.virtual_end = d->virtual_end;
    return Status::ok();
  };
  if (o.kill_rank >= 0) {
    // Up to the victim's death, then without it: its node stops and its engine is never
    // progressed again, as if its process were gone.
    const Nanos kill_at = t0 + std::chrono::milliseconds(o.kill_after_ms);
    if (Status st = drive(kill_at - t0); !st && st.code() != ErrorCode::timed_out)
      return std::fprintf(stderr, "wireup_a2a: sim: %s\n", st.message().c_str()), 1;
    if (fab.now() < kill_at) fab.run_until(kill_at);
    fab.kill_node(uint32_t(o.kill_rank), fab.now());
    engines[size_t(o.kill_rank)] = nullptr;
  }
  if (Status st = drive(bound); !st) return std::fprintf(stderr, "wireup_a2a: sim: %s\n", st.message().c_str()), 1;

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
    const double secs = std::chrono::duration<double>(done_at(*ranks[r].re.engine, total.virtual_end) - t0).count();
    wall = std::max(wall, secs);
    reports.push_back(make_report(r, ranks[r].re, secs, dead));
    reports.back().check = checks[r];
    if (plan) report_on_demand(ranks[r], reports.back());
  }
  JobInfo job{n, lanes, "sim", "sim, latency model " + o.sim_latency + ", seed " + std::to_string(o.sim_seed), wall,
              o.verify, dead};
  if (plan) job.on_demand = true, job.pattern = pattern_info(*plan, dead);
  Summary sum = summarize(job, reports);
  print_summary(sum, o.json);
  if (!o.json)
    std::fprintf(stderr, "[a2a] sim: %.1f s of real time for %.3f s of virtual time (%llu progress calls)\n",
                 total.wall_s, wall, (unsigned long long)total.progress_calls);
  for (SimRank& sr : ranks) sr.re.engine.reset(), sr.re.factory.reset();  // before the fabric
  return exit_status(sum);
}

}  // namespace wireup::a2a
