// Google Benchmark of the sim fabric's core: fabric events per second, CM events and
// connections per second of wall time, and heap bytes per node and per connection.
//
// Heap bytes are counted by replacing the global operator new/delete in this binary (live
// bytes = allocated - freed, by malloc_usable_size), so they include every container the sim
// and the driver keep, not an estimate from sizeof.
#include <benchmark/benchmark.h>

#include "live_heap.h"
#include <malloc.h>

#include <atomic>
#include <memory>
#include <cstdlib>
#include <new>

#include "provider/sim/fabric.h"
#include "provider/sim/mesh.h"
#include "provider/sim/queue.h"


namespace wireup::prov::sim {
namespace {

// N nodes, each connecting to the next `fanout` (the scale shape), hardware latencies.
void BM_SimMesh(benchmark::State& state) {
  const auto nodes = static_cast<uint32_t>(state.range(0));
  const auto fanout = static_cast<uint32_t>(state.range(1));
  uint64_t events = 0, cm_events = 0, connections = 0;
  double per_node = 0, per_conn = 0, virt = 0;
  for (auto _ : state) {
    const int64_t live0 = wireup::bench::live_heap_bytes();
    auto fabp = std::make_unique<SimFabric>(SimConfig{.seed = 1});
    SimFabric& fab = *fabp;
    for (uint32_t i = 0; i < nodes; ++i) fab.provider(fab.add_node());
    const int64_t live1 = wireup::bench::live_heap_bytes();
    auto meshp = std::make_unique<SimMesh>(fab);
    SimMesh& mesh = *meshp;
    if (!mesh.listen_all()) state.SkipWithError("listen_all failed");
    const int64_t live2 = wireup::bench::live_heap_bytes();
    for (uint32_t i = 0; i < nodes; ++i)
      for (uint32_t k = 1; k <= fanout; ++k) (void)mesh.connect(i, (i + k) % nodes);
    MeshReport r = mesh.run(std::chrono::seconds(600));
    const int64_t live3 = wireup::bench::live_heap_bytes();
    if (r.established != r.planned) state.SkipWithError("not every connection was established");
    events += fab.stats().events_processed;
    cm_events += r.cm_events;
    connections += r.established;
    per_node = static_cast<double>(live1 - live0) / nodes;
    per_conn = static_cast<double>(live3 - live2) / static_cast<double>(r.established);
    virt = std::chrono::duration<double>(r.last_established).count();
    state.PauseTiming();  // teardown is not what is measured
    meshp.reset();
    fabp.reset();
    state.ResumeTiming();
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["cm_events_per_s"] = benchmark::Counter(static_cast<double>(cm_events), benchmark::Counter::kIsRate);
  state.counters["connections_per_s"] = benchmark::Counter(static_cast<double>(connections), benchmark::Counter::kIsRate);
  state.counters["bytes_per_node"] = per_node;            // fabric node + devices + provider view
  state.counters["bytes_per_connection"] = per_conn;      // 2 ids, 2 QPs, driver, fabric leftovers
  state.counters["virtual_s"] = virt;                     // projected wire-up time (hardware model)
}
BENCHMARK(BM_SimMesh)->Args({256, 8})->Args({1024, 8})->Args({4096, 8})->Unit(benchmark::kMillisecond);

// The bare event queue: schedule and pop timers in time order.
void BM_SimEventQueue(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  uint64_t popped = 0;
  for (auto _ : state) {
    EventQueue q;
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < n; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: scattered times
      q.push(Timer{Nanos(static_cast<int64_t>(x % 1000000000)), 0, TimerKind::message, 0, 0, 0});
    }
    while (!q.empty()) {
      benchmark::DoNotOptimize(q.pop());
      ++popped;
    }
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(popped), benchmark::Counter::kIsRate);
  state.counters["bytes_per_event"] = static_cast<double>(sizeof(Timer));
}
BENCHMARK(BM_SimEventQueue)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wireup::prov::sim

BENCHMARK_MAIN();
