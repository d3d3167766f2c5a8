#include "tests/engine/sim_engine_fabric.h"

#include "testsupport/sim_drive.h"

namespace wireup::etest {

SimEngineFabric::SimEngineFabric(uint32_t nodes, prov::sim::SimConfig cfg) : fab_(std::move(cfg)) {
  for (uint32_t i = 0; i < nodes; ++i) fab_.add_node();
}

SimEngineFabric::SimEngineFabric(uint32_t nodes, prov::sim::SimConfig cfg, const prov::sim::SimNodeSpec& spec,
                                 uint32_t ranks_per_node)
    : fab_(std::move(cfg)), ranks_per_node_(ranks_per_node == 0 ? 1 : ranks_per_node) {
  for (uint32_t i = 0; i < nodes; ++i) fab_.add_node(spec);
}

Result<std::unique_ptr<EngineFabric>> make_engine_fabric(uint32_t nodes) {
  prov::sim::SimConfig cfg;
  cfg.seed = 42;
  return std::unique_ptr<EngineFabric>(new SimEngineFabric(nodes, cfg));
}

Result<DriveReport> drive(SimEngineFabric& f, Job& job, Nanos bound, const std::vector<uint32_t>& dead) {
  std::vector<Engine*> engines;
  for (uint32_t r = 0; r < job.ranks.size(); ++r) engines.push_back(job.ranks[r].engine.get());
  for (uint32_t d : dead) engines[d] = nullptr;
  auto r = sim_drive(f.fabric(), engines, bound);
  if (!r) return r.error();
  return DriveReport{r->progress_calls, r->fabric_steps, r->virtual_end, r->wall_s};
}

}  // namespace wireup::etest
