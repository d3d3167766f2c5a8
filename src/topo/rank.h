// Choosing the RDMA device for this process: a pure function of the candidate devices, where
// each one sits, the process's CPU binding and (optionally) its GPU.
//
// Nearness, best first:
//   same_pci_switch  the device and the GPU share a PCI bridge (GPUDirect traffic stays
//                    below the root complex)
//   same_numa        the device's NUMA node holds every CPU of the binding (or the GPU)
//   same_package     the same package, another NUMA node
//   machine          anywhere else in the machine
//   unplaced         hwloc cannot place the device (rxe, siw: no PCI function behind it);
//                    it is as near to one CPU as to any other, so it ties with `machine`
// With a GPU, nearness is measured to the GPU, and nearness to the CPU binding breaks ties.
//
// Then, in this order:
//  - devices in `exclude`, devices not in a non-empty `include`, and devices whose port is not
//    ACTIVE are dropped, each recorded in Ranking::skipped with the reason;
//  - the rest are sorted by nearness (stable: ties keep the caller's order, which must be the
//    same in every process of the node — the provider's device order is);
//  - the group of equally near best devices is rotated by local_rank % group size, so that
//    the processes of a node spread over them instead of all taking the first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "topo/cpuset.h"
#include "topo/placement.h"

namespace wireup::topo {

enum class Nearness : uint8_t { same_pci_switch, same_numa, same_package, machine, unplaced };
const char* to_string(Nearness n);

enum class PortStatus : uint8_t { active, inactive, unknown };

struct Candidate {
  std::string name;                     // "mlx5_0"
  std::string pci_busid;                // from the provider; lets hwloc place a device it names differently
  PortStatus port = PortStatus::unknown;
  std::string port_text;                // the port state as the provider named it: "DOWN"
  Placement where;                      // Topology::place(), or built by hand in tests
};

struct Gpu {
  std::string name;  // what the user asked for: "cuda0", "0000:84:00.0"
  Placement where;
};

struct RankInput {
  std::vector<Candidate> devices;
  CpuSet binding;           // empty = unknown: no device is nearer than another to the CPUs
  std::optional<Gpu> gpu;
  int local_rank = -1;      // < 0 = unknown: no spreading (a notice says so)
  int port = 1;             // the port the states refer to, for messages
  std::vector<std::string> include;
  std::vector<std::string> exclude;
};

struct Choice {
  std::string device;
  Nearness nearness = Nearness::machine;
  std::string why;  // one sentence, e.g. "mlx5_0 and GPU cuda0 share PCI bridge 0000:80:03.0"
  int tier = 0;     // 0 = the best group of equally near devices, 1 = the next, ...
  std::string pci_busid;  // the candidate's, when known (rails.h tells HCAs apart by it)
};

enum class SkipReason : uint8_t { excluded, not_included, port_inactive };
const char* to_string(SkipReason r);

struct Skipped {
  std::string device;
  SkipReason reason;
  std::string why;
};

struct Ranking {
  std::vector<Choice> order;        // best first; order[0] is this process's device
  std::vector<Skipped> skipped;
  std::vector<std::string> notices; // things a user should know: unplaced devices, unknown ports
};

// The ordered choice, or no_device naming why every candidate was dropped.
Result<Ranking> rank_devices(const RankInput& in);

// The same filtering and order, without spreading: ties keep the caller's order, and no notice
// about the local rank. For callers that spread the processes themselves (rails.h).
Result<Ranking> order_devices(const RankInput& in);

}  // namespace wireup::topo
