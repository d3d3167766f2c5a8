// Drives many engines on one simulated fabric (src/provider/sim) in virtual time, progressing
// only the engines that have something to do: a readable channel (SimFabric::take_ready) or a
// due timer (Engine::next_wakeup). Used by the engine's sim tests, the benchmarks and the
// all-to-all runner's sim mode, so that thousands of virtual ranks cost what their events
// cost rather than ranks x events.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "common/status.h"
#include "provider/sim/fabric.h"
#include "wireup/engine.h"

namespace wireup {

struct SimDriveReport {
  uint64_t progress_calls = 0;
  uint64_t fabric_steps = 0;     // fabric events handled
  uint64_t clock_advances = 0;   // jumps of the clock to an engine's timer
  Nanos virtual_end{0};  // the fabric clock when the last engine was done
  double wall_s = 0;     // this process's wall time for the drive
};

struct SimDriveOptions {
  Nanos bound{0};  // of virtual time: fails with timed_out when it passes first
  // Also wait out each engine's RTU linger (done() and the setup channel closed), as a job
  // whose ranks keep progressing after wireup does.
  bool until_setup_closed = false;
  // Also required before rank r counts as finished: an on-demand engine is done() whenever
  // nothing is open, e.g. before the requests it will accept have come, so the caller says
  // what it waits for (say, every lane it expects ready: wireup_a2a's lane ledger). Checked
  // after each of its progress() calls; once true the rank stays finished. Unset: done() alone.
  std::function<bool(uint32_t rank)> settled;
  // A scripted intervention (a process dying, say) when the clock reaches `at`: called once;
  // it may set entries of the engine table to nullptr (that rank is no longer driven).
  Nanos at = Nanos::max();
  std::function<void(std::vector<Engine*>&)> intervene;
};

// engines[i] runs on node i of `fab`; nullptr = no engine there (a dead process). Runs until
// every engine is done(), or fails with timed_out when `bound` of virtual time passes first.
Result<SimDriveReport> sim_drive(prov::sim::SimFabric& fab, const std::vector<Engine*>& engines, Nanos bound);
// The same loop with options; `engines` is the table an intervention edits.
Result<SimDriveReport> sim_drive(prov::sim::SimFabric& fab, std::vector<Engine*>& engines, const SimDriveOptions& o);

}  // namespace wireup
