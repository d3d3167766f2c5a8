#include "tests/engine/rails_sim_job.h"

#include <string>

namespace wireup::etest::rails_sim {
namespace {

prov::sim::SimConfig seeded(uint64_t seed) {
  prov::sim::SimConfig cfg;
  cfg.seed = seed;
  return cfg;
}

prov::sim::SimNodeSpec node_with(uint32_t devices) {
  prov::sim::SimNodeSpec s;
  s.devices.clear();
  for (uint32_t d = 0; d < devices; ++d) s.devices.push_back(prov::sim::SimDeviceSpec::mlx5("mlx5_" + std::to_string(d)));
  return s;
}

}  // namespace

RailsJob::RailsJob(uint32_t ranks, uint32_t lanes, uint64_t seed, const OptionsHook& more, Shape shape)
    : f((ranks + shape.ranks_per_node - 1) / shape.ranks_per_node, seeded(seed), node_with(shape.devices),
        shape.ranks_per_node),
      job(make_job(f, ranks, lanes, [&](EngineOptions& o) {
        o.rails = every_rail(f, o.rank, shape.devices);
        if (more) more(o);
      })) {}

std::vector<RailAddress> every_rail(SimEngineFabric& f, uint32_t rank, uint32_t devices) {
  std::vector<RailAddress> rails;
  for (uint32_t d = 0; d < devices; ++d) rails.push_back(RailAddress{f.fabric().address(f.node_of(rank), d), kPrefix});
  return rails;
}

std::map<uint32_t, size_t> by_rail(const Engine& e, uint32_t only_peer) {
  std::map<uint32_t, size_t> n;
  for (const ConnResult& r : e.results()) {
    if (r.withdrawn || (only_peer != ~0u && r.peer != only_peer)) continue;
    const LinkInfo& l = e.link(r);
    EXPECT_EQ(std::string(l.device), "mlx5_" + std::to_string(l.rail)) << "to rank " << r.peer << " lane " << r.lane;
    ++n[l.rail];
  }
  return n;
}

}  // namespace wireup::etest::rails_sim
