// The fault sweep: a scenario run once to count the calls it makes of each kind, then once
// per (kind, n) with the n-th call of that kind failed (fault/provider.h). Each run must end
// with every failure named (the call and its errno in a Status or a peer error), the
// connections that were made still carrying a SEND both ways, and nothing left behind in the
// provider's own accounting (sim: its live-object counts; everywhere: LSan under
// scripts/sanitize.sh).
#pragma once

#include <memory>
#include <string>

#include "fault/plan.h"
#include "tests/conformance/harness.h"
#include "tests/engine/engine_harness.h"

namespace wireup::fsweep {

// One run's fabric, every provider of it wrapped by the fault provider with one plan.
class SweepFabric {
 public:
  virtual ~SweepFabric() = default;
  virtual conf::TestFabric& conformance() = 0;  // nodes 0 and 1
  virtual etest::EngineFabric& engine() = 0;    // as many nodes as asked
  // What the provider still holds once every object of the run is gone ("" when nothing;
  // only the sim can tell in-process).
  virtual std::string leftovers() const = 0;
};

// Defined once per provider binary (sim_sweep_fabric.cc, rdma_sweep_fabric.cc); an error
// says why the fabric cannot exist here.
Result<std::unique_ptr<SweepFabric>> make_sweep_fabric(std::shared_ptr<fault::Plan> plan, uint32_t nodes);

// What one run came to.
struct Outcome {
  bool connected_all = false;  // the scenario finished as if nothing had failed
  std::string failure;         // the failure(s) the scenario reported, "" when none
  std::string problem;         // what the run broke of the rules above, "" when nothing
};

// The scenarios: a conformance pair (the ext-QP flow, a SEND each way, an RDMA WRITE and a
// READ), and an engine all-to-all (3 ranks, 2 lanes) followed by a SEND on every connection.
Outcome run_pair(SweepFabric& f, fault::Plan& plan);
Outcome run_engine(SweepFabric& f, fault::Plan& plan);

// Whether `text` names the failure `plan` injected: its call, and its errno (by name or
// number) or its event status.
bool names_injected(const fault::Plan& plan, const std::string& text);

}  // namespace wireup::fsweep
