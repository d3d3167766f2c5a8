// What the two rdma drivers (bootstrap mpi: wireup_a2a_mpi.cc, bootstrap pmix:
// wireup_a2a_pmix.cc) share: timing, a step's failure as a Problem, the job key, the victim.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#include "wireup_a2a_pattern.h"
#include "wireup_a2a_rdma.h"

namespace wireup::a2a {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
// CLOCK_REALTIME in seconds: comparable between the processes of one node (the killed-rank
// test measures death -> given up across processes with it).
double realtime_s();

// Runs `step`; what it throws (wireup::Exception, a verbs failure) becomes the rank's problem.
template <class F>
Problem attempt(F&& step) {
  try {
    step();
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

struct WireupRun {
  double seconds = 0;
  double user_s = 0, sys_s = 0;  // this process's CPU time meanwhile
  Problem error;
};
std::pair<double, double> cpu_seconds();  // user, system

// --job-key, else 0 when the configuration has one (every rank's wireup_create takes its own),
// else a random one (rank 0 draws it and the bootstrap hands it out).
uint64_t pick_job_key(const Options& o, wireup::Context& ctx);

// Bulk or on demand (the configured engine.mode, which --mode sets and WIREUP_ENGINE_MODE
// overrides) and, on demand, the whole job's pattern (--pattern, --seed). "" or why not.
Problem job_shape(const Options& o, RdmaRank& rr, uint32_t nranks, bool& on_demand, std::optional<PatternPlan>& plan);

// The victim of --kill-rank: wires up like everyone else and _exit()s at the trigger, like a
// crashed process, saying when (CLOCK_REALTIME) on stderr.
[[noreturn]] void run_victim(const Options& o, wireup::Wireup& e, int rank);

}  // namespace wireup::a2a
