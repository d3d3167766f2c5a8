#include "od_job.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "cpu_time.h"
#include "live_heap.h"
#include "massif_mark.h"
#include "provider/sim/fabric.h"
#include "provider/sim/mesh.h"
#include "qp/factory.h"
#include "stencil.h"
#include "testsupport/sim_drive.h"
#include "wireup/engine.h"
#include "wireup/options.h"
#include "wireup/plan.h"

namespace wireup::bench {
namespace {

using namespace std::chrono_literals;
using prov::sim::SimConfig;
using prov::sim::SimFabric;


// One virtual rank. The factory is declared first: the engine (and the QPs it holds) goes
// before the PD and CQ they live on.
struct Rank {
  std::unique_ptr<qp::DefaultQpFactory> factory;
  std::unique_ptr<Engine> engine;
  std::vector<uint32_t> partners;  // every rank it ends up connected to: it asked, or was asked
  uint32_t ready = 0, failed = 0;
  uint64_t qps = 0;
};

struct Endpoint {
  uint32_t self, peer, local_qpn, remote_qpn;
  bool operator<(const Endpoint& o) const { return self != o.self ? self < o.self : peer < o.peer; }
};

// Both ends of every connection agree on it (QPNs crossed), none twice, none unasked.
std::string check_endpoints(std::vector<Endpoint>& ends, const std::vector<Rank>& ranks) {
  std::sort(ends.begin(), ends.end());
  for (size_t i = 0; i < ends.size(); ++i) {
    const Endpoint& e = ends[i];
    const std::string name = "rank " + std::to_string(e.self) + " to " + std::to_string(e.peer);
    if (i > 0 && !(ends[i - 1] < e)) return name + ": connected twice";
    const auto& ps = ranks[e.self].partners;
    if (!std::binary_search(ps.begin(), ps.end(), e.peer)) return name + ": connected, never asked for";
    auto other = std::lower_bound(ends.begin(), ends.end(), Endpoint{e.peer, e.self, 0, 0});
    if (other == ends.end() || other->self != e.peer || other->peer != e.self) return name + ": one side only";
    if (other->remote_qpn != e.local_qpn || other->local_qpn != e.remote_qpn) return name + ": QPNs do not cross";
  }
  return {};
}

}  // namespace

Nanos quantile(const std::vector<Nanos>& sorted, double q) {
  if (sorted.empty()) return Nanos{0};
  const auto rank = static_cast<size_t>(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

JobReport run_job(const JobSpec& spec) {
  const uint32_t n = spec.ranks;
  JobReport out;
  SimConfig cfg;
  cfg.latency = spec.latency;
  SimFabric fab(cfg);
  for (uint32_t i = 0; i < n; ++i) fab.add_node();

  // Everything the benchmark itself keeps is allocated before the heap's first reading.
  std::vector<Rank> ranks(n);
  if (spec.on_demand) {
    for (uint32_t a = 0; a < n; ++a)
      for (uint32_t b : spec.asks[a]) {
        ranks[a].partners.push_back(b);
        ranks[b].partners.push_back(a);
      }
    for (Rank& r : ranks) {
      std::sort(r.partners.begin(), r.partners.end());
      r.partners.erase(std::unique(r.partners.begin(), r.partners.end()), r.partners.end());
    }
    for (const auto& a : spec.asks) out.asks += a.size();
    out.expected_pairs = distinct_pairs(spec.asks).size();
  } else {
    for (uint32_t a = 0; a < n; ++a)
      for (uint32_t b = 0; b < n; ++b)
        if (b != a) ranks[a].partners.push_back(b);
    out.asks = uint64_t{n} * (n - 1);
    out.expected_pairs = out.asks / 2;
  }
  out.ask_to_ready.reserve(out.asks);
  std::vector<Nanos> asked_at(n, Nanos{0});
  std::vector<Engine*> drive(n);
  const int64_t heap0 = live_heap_bytes();

  std::vector<Peer> table(n);
  for (uint32_t i = 0; i < n; ++i) {
    Rank& r = ranks[i];
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = n;
    o.lanes = 1;
    o.job_key = 0xb0b;
    o.listen_addr = fab.address(i);
    o.on_demand = spec.on_demand;
    r.factory = std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64);
    auto e = Engine::create(fab.provider(i), o, [&r](const qp::QpRequest& q) {
      ++r.qps;
      return r.factory->create(q);
    });
    if (!e) {
      out.problem = "rank " + std::to_string(i) + ": " + e.error().message();
      return out;
    }
    r.engine = std::move(e).value();
    table[i] = Peer{i, r.engine->local_address()};
    drive[i] = r.engine.get();
    // An ask's sample is taken where it was asked; on demand a rank also gets the lanes its
    // peers asked for (ready too, but nobody's ask here unless it asked as well).
    const std::vector<uint32_t>* mine = spec.on_demand ? &spec.asks[i] : nullptr;
    r.engine->on_lane_event([&r, &fab, &out, &asked_at, mine, i](const LaneEvent& ev) {
      if (ev.kind != LaneEvent::Kind::ready) {
        ++r.failed;
        return;
      }
      ++r.ready;
      if (mine == nullptr || std::binary_search(mine->begin(), mine->end(), ev.peer))
        out.ask_to_ready.push_back(fab.now() - asked_at[i]);
    });
  }
  for (uint32_t i = 0; i < n; ++i) {
    Engine& e = *ranks[i].engine;
    Status s = Status::ok();
    if (spec.on_demand) {
      std::vector<Peer> known;  // only the ranks it will ask: the passive side needs none
      for (uint32_t q : spec.asks[i]) known.push_back(table[q]);
      s = e.set_peers(known);
    } else {
      s = e.set_peers(table);
    }
    if (s) s = e.start();
    if (!s) {
      out.problem = "rank " + std::to_string(i) + ": " + s.error().message();
      return out;
    }
  }
  std::vector<Peer>().swap(table);
  // The same instant for every ask: the clock does not move between these calls.
  const Nanos t0 = fab.now();
  for (uint32_t i = 0; i < n; ++i) {
    asked_at[i] = t0;
    if (!spec.on_demand) continue;
    for (uint32_t q : spec.asks[i])
      if (Status s = ranks[i].engine->connect(q); !s) {
        out.problem = "rank " + std::to_string(i) + ": " + s.error().message();
        return out;
      }
  }

  SimDriveOptions d;
  d.bound = 36000s;
  d.settled = [&ranks](uint32_t r) { return ranks[r].ready + ranks[r].failed >= ranks[r].partners.size(); };
  const double c0 = cpu_s();
  auto rep = sim_drive(fab, drive, d);
  out.drive_cpu_s = cpu_s() - c0;
  out.heap_bytes = live_heap_bytes() - heap0;
  massif_snapshot();  // every lane ready, nothing torn down yet
  if (!rep) {
    out.problem = "sim_drive: " + rep.error().message();
    return out;
  }
  out.virtual_end = rep->virtual_end - t0;
  const prov::sim::SimStats& sim = fab.stats();
  out.backlog_drops = sim.backlog_drops;
  out.backlog_peak = sim.backlog_peak;
  out.req_retransmits = sim.req_retransmits;
  out.ids_alive = sim.ids_alive;
  out.qps_alive = sim.qps_alive;
  out.cm_events = sim.cm_events_delivered;

  std::vector<Endpoint> ends;
  ends.reserve(out.expected_pairs * 2);
  uint64_t held_total = 0;
  for (uint32_t i = 0; i < n && out.problem.empty(); ++i) {
    Rank& r = ranks[i];
    const Engine& e = *r.engine;
    out.qps_created += r.qps;
    out.lanes_failed += r.failed + e.errors().size();
    out.crossed_won += e.stats()[Counter::crossed_won];
    out.crossed_yielded += e.stats()[Counter::crossed_yielded];
    out.retries += e.stats()[Counter::retries];
    uint64_t held = 0;
    for (const ConnResult& c : e.results())
      if (!c.withdrawn) {
        ends.push_back(Endpoint{i, c.peer, c.local_qpn, c.remote_qpn});
        ++held;
      }
    held_total += held;
    out.qps_held_max = std::max(out.qps_held_max, held);
    if (!e.errors().empty()) out.problem = "rank " + std::to_string(i) + ": " + e.errors().front().describe();
    else if (r.failed != 0) out.problem = "rank " + std::to_string(i) + ": a lane failed";
    else if (r.ready != r.partners.size())
      out.problem = "rank " + std::to_string(i) + ": " + std::to_string(r.ready) + " lanes ready, " +
                    std::to_string(r.partners.size()) + " expected";
  }
  out.qps_held_mean = double(held_total) / n;
  out.pairs = ends.size() / 2;
  std::sort(out.ask_to_ready.begin(), out.ask_to_ready.end());
  if (out.problem.empty()) out.problem = check_endpoints(ends, ranks);
  if (out.problem.empty() && out.pairs != out.expected_pairs)
    out.problem = std::to_string(out.pairs) + " pairs connected, " + std::to_string(out.expected_pairs) + " asked for";
  // Every QP and id is a connection's or a listener's: a crossing's loser gave its own back.
  if (out.problem.empty() && (out.qps_alive != 2 * out.pairs || out.ids_alive != 2 * out.pairs + n))
    out.problem = std::to_string(out.qps_alive) + " QPs and " + std::to_string(out.ids_alive) + " ids alive for " +
                  std::to_string(out.pairs) + " connections and " + std::to_string(n) + " listeners";
  if (out.problem.empty() && out.ask_to_ready.size() != out.asks)
    out.problem = std::to_string(out.ask_to_ready.size()) + " asks ready, " + std::to_string(out.asks) + " made";
  return out;
}

int64_t mesh_heap_bytes(const JobSpec& spec) {
  const uint32_t n = spec.ranks;
  SimConfig cfg;
  cfg.latency = spec.latency;
  SimFabric fab(cfg);
  for (uint32_t i = 0; i < n; ++i) fab.add_node();
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  if (spec.on_demand) {
    pairs = distinct_pairs(spec.asks);
  } else {
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < n; ++j)
        if (plan::initiates(i, j, n)) pairs.emplace_back(i, j);
  }
  const int64_t heap0 = live_heap_bytes();
  int64_t bytes = -1;
  {
    prov::sim::SimMesh mesh(fab);
    if (!mesh.listen_all()) return -1;
    for (auto [a, b] : pairs)
      if (!mesh.connect(a, b)) return -1;
    auto rep = mesh.run(fab.now() + 36000s);
    if (rep.established == pairs.size()) bytes = live_heap_bytes() - heap0;
  }
  return bytes;
}

}  // namespace wireup::bench
