// Google Benchmark suites for the engine (issue #7). Every figure that is a claim comes with
// its baseline measured in the same run:
//  - EngineVsMesh: CPU per connection of the engine against SimMesh, the minimal driver that
//    makes the same provider calls (resolve, QP, INIT/RTR/RTS, connect/accept/establish) with
//    no policy at all, on the zero latency model; the difference is the engine's overhead.
//  - Bytes per connection: live heap after wireup, engine job against mesh job.
//  - HubPeers / HubScaling: one rank wiring P peers, projected (virtual) time on the VM-
//    measured latency model, and T(4096)/T(512).
//  - AllToAllProjected: N virtual ranks all-to-all, projected wireup time against a critical-
//    path lower bound computed from the same latency model.
//  - Ece / PrivateData: the pure functions on the per-connection path.
#include <benchmark/benchmark.h>

#include "cpu_time.h"
#include "live_heap.h"
#include "massif_mark.h"
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

#include "ece/policy.h"
#include "provider/sim/fabric.h"
#include "provider/sim/mesh.h"
#include "qp/factory.h"
#include "wireup/engine.h"
#include "wireup/options.h"
#include "wireup/plan.h"
#include "wireup/private_data.h"
#include "wireup/wire.h"
#include "testsupport/sim_drive.h"


namespace wireup {
namespace {

using namespace std::chrono_literals;
using prov::sim::LatencyModel;
using prov::sim::SimConfig;
using prov::sim::SimFabric;

using wireup::bench::cpu_s;

struct EngineJob {
  std::vector<std::unique_ptr<qp::DefaultQpFactory>> factories;
  std::vector<std::unique_ptr<Engine>> engines;
  ~EngineJob() { engines.clear(); }  // QPs before the factories' PDs and CQs
};

// n ranks on nodes 0..n-1 of `fab`; `peers_of(i)` = the ranks i knows (all, by default).
// `paced` = false switches incast pacing off (cm.incast = "off"): the before/after switch.
std::unique_ptr<EngineJob> make_job(SimFabric& fab, uint32_t n, uint32_t lanes, bool hub = false, bool paced = true) {
  auto job = std::make_unique<EngineJob>();
  std::vector<Peer> table;
  for (uint32_t i = 0; i < n; ++i) {
    EngineOptions o = engine_defaults();
    o.rank = i;
    o.nranks = n;
    o.lanes = lanes;
    o.job_key = 0xb0b;
    o.listen_addr = fab.address(i);
    o.wireup_timeout = 3600s;
    o.incast.on = paced;
    job->factories.push_back(std::make_unique<qp::DefaultQpFactory>(prov::QpCaps{8, 8, 1, 1, 0}, 64));
    auto e = Engine::create(fab.provider(i), o, job->factories.back()->hook());
    if (!e) std::abort();
    table.push_back(Peer{i, (*e)->local_address()});
    job->engines.push_back(std::move(e).value());
  }
  for (uint32_t i = 0; i < n; ++i) {
    Status s = (hub && i != 0) ? job->engines[i]->set_peers(std::vector<Peer>{table[0], table[i]})
                               : job->engines[i]->set_peers(table);
    if (!s || !job->engines[i]->start()) std::abort();
  }
  return job;
}

SimDriveReport run(SimFabric& fab, EngineJob& job) {
  std::vector<Engine*> v;
  for (auto& e : job.engines) v.push_back(e.get());
  auto r = sim_drive(fab, v, 36000s);
  if (!r) {
    std::fprintf(stderr, "sim_drive: %s\n", r.error().message().c_str());
    std::abort();
  }
  return *r;
}

void add_nodes(SimFabric& fab, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) fab.add_node();
}

// The same all-to-all pairs as the engine's plan, through SimMesh.
uint64_t mesh_all_to_all(SimFabric& fab, prov::sim::SimMesh& mesh, uint32_t n) {
  uint64_t planned = 0;
  if (!mesh.listen_all()) std::abort();
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (plan::initiates(i, j, n)) {
        if (!mesh.connect(i, j)) std::abort();
        ++planned;
      }
  auto rep = mesh.run(fab.now() + 36000s);
  if (rep.established != planned) std::abort();
  return planned;
}

// One connection's messages between rank 17 (active) and rank 4000: the REQ sealed and
// opened, the REP sealed and opened as its answer. BM_WireMacPerConnection times it alone.
void seal_and_open_one_connection(Wire& a, const Wire& b) {
  const uint64_t n = a.fresh_nonce();
  const WireBytes req = a.request(4000, 3, 2, n);
  auto in = b.open(req);
  const WireBytes rep = b.accept(17, 3, 2, in->nonce);
  auto out = a.open_answer(rep, n);
  benchmark::DoNotOptimize(out);
}

// The four MACs of `conns` connections, the same calls the engine makes: added to SimMesh's
// time for a like-for-like ratio, as SimMesh authenticates nothing.
double mac_cpu_s(double conns) {
  Wire a = *Wire::create(0x5eed5eed12345678ULL, 17, 1);
  const Wire b = *Wire::create(0x5eed5eed12345678ULL, 4000, 1);
  const double t0 = cpu_s();
  for (double i = 0; i < conns; ++i) seal_and_open_one_connection(a, b);
  return cpu_s() - t0;
}

void BM_EngineVsMesh(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const double conns = double(n) * (n - 1) / 2;
  double mesh_cpu = 0, engine_cpu = 0, mac_cpu = 0;
  int64_t mesh_bytes = 0, engine_bytes = 0, mesh_allocs = 0, engine_allocs = 0;
  for (auto _ : state) {
    {
      SimConfig cfg;
      cfg.latency = LatencyModel::zero();
      const int64_t b0 = wireup::bench::live_heap_bytes();
      const double t0 = cpu_s();
      SimFabric fab(cfg);
      add_nodes(fab, n);
      const int64_t a0 = wireup::bench::allocations();
      prov::sim::SimMesh mesh(fab);
      mesh_all_to_all(fab, mesh, n);
      mesh_allocs = wireup::bench::allocations() - a0;
      mesh_cpu += cpu_s() - t0;
      mesh_bytes = wireup::bench::live_heap_bytes() - b0;
      wireup::bench::massif_snapshot();  // snapshot .0: SimMesh done, nothing torn down
    }
    {
      SimConfig cfg;
      cfg.latency = LatencyModel::zero();
      const int64_t b0 = wireup::bench::live_heap_bytes();
      const double t0 = cpu_s();
      SimFabric fab(cfg);
      add_nodes(fab, n);
      const int64_t a0 = wireup::bench::allocations();
      auto job = make_job(fab, n, 1);
      run(fab, *job);
      engine_allocs = wireup::bench::allocations() - a0;
      engine_cpu += cpu_s() - t0;
      engine_bytes = wireup::bench::live_heap_bytes() - b0;
      wireup::bench::massif_snapshot();  // snapshot .1: wireup ended, nothing torn down
    }
    mac_cpu += mac_cpu_s(conns);
  }
  const double it = double(state.iterations());
  state.counters["connections"] = conns;
  state.counters["mesh_us_per_conn"] = mesh_cpu / it / conns * 1e6;
  state.counters["engine_us_per_conn"] = engine_cpu / it / conns * 1e6;
  state.counters["overhead_us_per_conn"] = (engine_cpu - mesh_cpu) / it / conns * 1e6;
  state.counters["engine_over_mesh"] = engine_cpu / mesh_cpu;
  // Like for like: SimMesh plus the four MACs per connection the engine's wire makes.
  state.counters["mesh_mac_us_per_conn"] = (mesh_cpu + mac_cpu) / it / conns * 1e6;
  state.counters["engine_over_mesh_mac"] = engine_cpu / (mesh_cpu + mac_cpu);
  // Per connection = per pair; each pair has two endpoints (one per rank).
  state.counters["mesh_bytes_per_conn"] = double(mesh_bytes) / conns;
  state.counters["engine_bytes_per_conn"] = double(engine_bytes) / conns;
  state.counters["overhead_bytes_per_conn"] = double(engine_bytes - mesh_bytes) / conns;
  // Heap allocations per connection after the fabric's nodes exist (the fabric's own count
  // in both: its ids, QPs, events).
  state.counters["mesh_allocs_per_conn"] = double(mesh_allocs) / conns;
  state.counters["engine_allocs_per_conn"] = double(engine_allocs) / conns;
}
BENCHMARK(BM_EngineVsMesh)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(1);

struct HubRun {
  Nanos time{0};
  uint64_t backlog_drops = 0;  // REQs the hub's (or any) listener dropped at a full backlog
  uint64_t req_retransmits = 0;
  uint64_t backlog_peak = 0;   // most REQs ever waiting on one listener (the margin left)
};

HubRun hub_run(uint32_t peers, bool paced) {
  SimConfig cfg;
  cfg.latency = LatencyModel::rxe_vm();
  SimFabric fab(cfg);
  add_nodes(fab, peers + 1);
  auto job = make_job(fab, peers + 1, 1, true, paced);
  const Nanos t0 = fab.now();
  run(fab, *job);
  const prov::sim::SimStats& s = fab.stats();
  return HubRun{fab.now() - t0, s.backlog_drops, s.req_retransmits, s.backlog_peak};
}

// Arg 1: incast pacing on (the default configuration); 0: off (cm.incast = "off").
void BM_HubPeers(benchmark::State& state) {
  const uint32_t peers = static_cast<uint32_t>(state.range(0));
  HubRun r;
  for (auto _ : state) r = hub_run(peers, state.range(1) != 0);
  state.counters["peers"] = peers;
  state.counters["projected_s"] = r.time.count() / 1e9;
  state.counters["projected_us_per_peer"] = r.time.count() / 1e3 / peers;
  state.counters["backlog_drops"] = double(r.backlog_drops);
  state.counters["req_retransmits"] = double(r.req_retransmits);
  state.counters["backlog_peak"] = double(r.backlog_peak);
}
BENCHMARK(BM_HubPeers)->ArgsProduct({{512, 1024, 2048, 4096}, {1, 0}})->ArgNames({"peers", "paced"})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// Arg 1: pacing on; 0: off, in the same binary and run, so before/after is one command.
void BM_HubScaling(benchmark::State& state) {
  const bool paced = state.range(0) != 0;
  HubRun big, small;
  for (auto _ : state) {
    big = hub_run(4096, paced);
    small = hub_run(512, paced);
  }
  state.counters["T4096_over_T512"] = double(big.time.count()) / double(small.time.count());  // goal <= 8.2
  state.counters["backlog_drops"] = double(big.backlog_drops + small.backlog_drops);  // goal 0
  state.counters["req_retransmits"] = double(big.req_retransmits + small.req_retransmits);
  state.counters["backlog_peak"] = double(std::max(big.backlog_peak, small.backlog_peak));
}
BENCHMARK(BM_HubScaling)->Arg(1)->Arg(0)->ArgName("paced")->Unit(benchmark::kMillisecond)->Iterations(1);

// A lower bound for an all-to-all of n ranks on model m: the busiest rank's serialized CPU
// (events it must handle, QP creations and modifies it must make) or one connection's latency
// chain, whichever is longer.
Nanos critical_path_bound(const LatencyModel& m, uint32_t n) {
  const int64_t pairs = n - 1;
  const int64_t active = pairs / 2 + pairs % 2, passive = pairs - active;
  // Active: ADDR_RESOLVED, ROUTE_RESOLVED, CONNECT_RESPONSE; passive: CONNECT_REQUEST, ESTABLISHED.
  Nanos cpu = (3 * active + 2 * passive) * m.cpu_per_event + pairs * (m.create_qp + 3 * m.modify_qp) +
              active * m.create_id;
  Nanos chain = m.resolve_addr + m.resolve_route + 2 * m.create_qp + 6 * m.modify_qp + 3 * m.cm_message +
                5 * m.cpu_per_event;
  return std::max(cpu, chain);
}

void BM_AllToAllProjected(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const bool paced = state.range(1) != 0;
  SimDriveReport rep;
  prov::sim::SimStats sim;
  Nanos bound{0};
  for (auto _ : state) {
    SimConfig cfg;
    cfg.latency = LatencyModel::rxe_vm();
    bound = critical_path_bound(cfg.latency, n);
    SimFabric fab(cfg);
    add_nodes(fab, n);
    auto job = make_job(fab, n, 1, false, paced);
    rep = run(fab, *job);
    sim = fab.stats();
  }
  state.counters["ranks"] = n;
  state.counters["backlog_drops"] = double(sim.backlog_drops);
  state.counters["req_retransmits"] = double(sim.req_retransmits);
  state.counters["backlog_peak"] = double(sim.backlog_peak);
  state.counters["connections"] = double(n) * (n - 1) / 2;
  state.counters["projected_s"] = rep.virtual_end.count() / 1e9;
  state.counters["bound_s"] = bound.count() / 1e9;
  state.counters["projected_over_bound"] = double(rep.virtual_end.count()) / double(bound.count());
  state.counters["sim_wall_s"] = rep.wall_s;
}
BENCHMARK(BM_AllToAllProjected)->ArgsProduct({{64, 128, 256, 512, 1024}, {1, 0}})->ArgNames({"ranks", "paced"})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_EceNegotiation(benchmark::State& state) {
  ece::Policy p{ece::Mode::auto_, 0, 0, 0};
  prov::Ece dev{0x15b3, 0x7}, offer{0x15b3, 0x3};
  for (auto _ : state) {
    auto o = ece::offer(p, dev);
    auto d = ece::on_request(p, dev, offer);
    auto r = ece::on_reply(p, o, prov::Ece{0x15b3, d.accepted});
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EceNegotiation);

void BM_PrivateDataCodec(benchmark::State& state) {
  WireHeader h;
  h.src_rank = 17;
  h.dst_rank = 4000;
  h.lane = 3;
  h.attempt = 2;
  for (auto _ : state) {
    auto b = encode(h);
    auto d = decode(b);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_PrivateDataCodec);

// What authentication costs one connection: the REQ sealed (active) and opened (passive),
// the REP sealed (passive) and opened as the answer to that REQ (active). Compare with
// BM_PrivateDataCodec (the same messages without the MAC) and BM_EngineVsMesh's per-connection time.
void BM_WireMacPerConnection(benchmark::State& state) {
  Wire a = *Wire::create(0x5eed5eed12345678ULL, 17, 1);
  const Wire b = *Wire::create(0x5eed5eed12345678ULL, 4000, 1);
  for (auto _ : state) seal_and_open_one_connection(a, b);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WireMacPerConnection);

}  // namespace
}  // namespace wireup

BENCHMARK_MAIN();
