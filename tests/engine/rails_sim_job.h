// The rails tests' one setup: a job on the simulated fabric whose nodes all have the same
// devices and whose ranks each take every device of their node as a rail. Device d of node i is
// at 10.(16 d).0.(i + 1) (provider/sim/spec.h), so with a /12 prefix each device is its own
// subnet, as NICs on separate networks (one per rail) are.
#pragma once

#include <map>

#include "tests/engine/sim_engine_fabric.h"

namespace wireup::etest::rails_sim {

inline constexpr uint8_t kPrefix = 12;  // 10.0.0.0/12, 10.16.0.0/12, ...: one subnet per device

struct Shape {
  uint32_t devices = 2;         // per node: mlx5_0 .. mlx5_<devices - 1>
  uint32_t ranks_per_node = 1;  // rank r on node r / ranks_per_node
};

// `ranks` ranks with `lanes` per pair, started; `more` may change a rank's options after its
// rails are set (a rank with other rails, a route check).
struct RailsJob {
  SimEngineFabric f;
  Result<Job> job;  // after the fabric, so that its engines go first

  RailsJob(uint32_t ranks, uint32_t lanes, uint64_t seed, const OptionsHook& more = {}, Shape shape = {});
};

// Rank `rank`'s rails: every device of its node, in device order.
std::vector<RailAddress> every_rail(SimEngineFabric& f, uint32_t rank, uint32_t devices);

// One engine's live results counted by rail (only those to `only_peer`, if given), checking
// that each result's device is its rail's (mlx5_<rail>).
std::map<uint32_t, size_t> by_rail(const Engine& e, uint32_t only_peer = ~0u);

}  // namespace wireup::etest::rails_sim
