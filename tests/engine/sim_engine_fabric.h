// The engine tests' fabric on the sim provider, and a driver that progresses only the
// engines that have something to do (ready channels, due timers), so that hundreds of
// engines run in one process without sweeping all of them on every fabric event.
#pragma once

#include "provider/sim/fabric.h"
#include "tests/engine/engine_harness.h"

namespace wireup::etest {

class SimEngineFabric final : public EngineFabric {
 public:
  SimEngineFabric(uint32_t nodes, prov::sim::SimConfig cfg);
  // Every node as `spec` says (several devices: one rail each), and `ranks_per_node` ranks on
  // each: rank r runs on node r / ranks_per_node (its own listener port on the node's devices),
  // as the processes of a GPU node share its NICs.
  SimEngineFabric(uint32_t nodes, prov::sim::SimConfig cfg, const prov::sim::SimNodeSpec& spec,
                  uint32_t ranks_per_node = 1);
  std::string name() const override { return "sim"; }
  // The harness asks by rank (make_job: rank i is "node" i).
  prov::Provider& provider(uint32_t rank) override { return fab_.provider(node_of(rank)); }
  prov::SockAddr address(uint32_t rank) override { return fab_.address(node_of(rank)); }
  bool has_data_path() const override { return true; }
  prov::sim::SimFabric& fabric() { return fab_; }
  uint32_t node_of(uint32_t rank) const { return rank / ranks_per_node_; }

 private:
  prov::sim::SimFabric fab_;
  uint32_t ranks_per_node_ = 1;
};

struct DriveReport {
  uint64_t progress_calls = 0;
  uint64_t fabric_events = 0;
  Nanos virtual_time{0};
  double wall_s = 0;
};

// Runs every engine of `job` (rank i on node i) to done(), or until `bound` of virtual time.
Result<DriveReport> drive(SimEngineFabric& f, Job& job, Nanos bound, const std::vector<uint32_t>& dead = {});

}  // namespace wireup::etest
