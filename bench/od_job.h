// One job of virtual ranks on the simulated fabric, on demand or eager, run to the end and
// checked: the benchmarks in on_demand_bench.cc are thin over this.
//
// On demand, every rank calls connect() on its `asks` at the same virtual instant, right
// after start(), and knows only the addresses of the ranks it asks (the passive side takes
// any authenticated rank of the job). Eager (bulk), every rank knows every address and
// start() is the ask. Each asked lane's ask-to-ready time is the virtual time from the ask to
// the lane's ready event (Engine::on_lane_event), at the rank that asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "provider/sim/latency_model.h"

namespace wireup::bench {

struct JobSpec {
  uint32_t ranks = 0;
  bool on_demand = true;
  // On demand: asks[r] = the peers rank r connect()s to (sorted). Eager: left empty (all).
  std::vector<std::vector<uint32_t>> asks;
  prov::sim::LatencyModel latency = prov::sim::LatencyModel::rxe_vm();
};

struct JobReport {
  // What the job connected, from the engines' results (withdrawn ones skipped).
  uint64_t pairs = 0;            // connections, each counted once (both ends agree: checked)
  uint64_t expected_pairs = 0;   // distinct pairs asked for (eager: R(R-1)/2)
  uint64_t asks = 0;             // lanes asked for, summed over the askers
  std::vector<Nanos> ask_to_ready;  // one per asked lane that became ready, sorted
  uint64_t lanes_failed = 0;     // failed lane events plus engine errors
  uint64_t qps_created = 0;      // by the factories, every rank (a crossing's loser may make one)
  uint64_t qps_held_max = 0;     // results of the busiest rank
  double qps_held_mean = 0;
  int64_t heap_bytes = 0;        // live heap after the drive minus before the engines (sim included)
  Nanos virtual_end{0};          // from the asks to the last rank finished
  double drive_cpu_s = 0;        // process CPU of the drive: every engine and the simulated fabric
  uint64_t backlog_drops = 0, backlog_peak = 0, req_retransmits = 0;
  uint64_t ids_alive = 0, qps_alive = 0;  // the fabric's, once every rank is finished
  uint64_t cm_events = 0;                 // rdma_cm events delivered, every rank
  uint64_t crossed_won = 0, crossed_yielded = 0, retries = 0;
  std::string problem;           // empty when every check passed
};

JobReport run_job(const JobSpec& spec);

// The same connections made by SimMesh (the minimal driver: no policy, no records) on a fresh
// fabric: its live heap after the run minus before it. The engine job's heap minus this is
// what the library itself holds (bench/live_heap.h counts both the same way).
int64_t mesh_heap_bytes(const JobSpec& spec);

// The q-quantile (0..1) of sorted samples, nearest rank; 0 for none.
Nanos quantile(const std::vector<Nanos>& sorted, double q);

}  // namespace wireup::bench
