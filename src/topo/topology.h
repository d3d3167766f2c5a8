// One hwloc topology: the live machine, or a machine described by an XML file (lstopo --of
// xml), so that `wireup_info --topology` can explain a choice for a node we are not on.
//
// Loading changes nothing global: no binding is applied, no environment is set. The object
// owns the hwloc_topology_t and destroys it; it is move-only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "topo/cpuset.h"
#include "topo/placement.h"
#include "topo/rank.h"

struct hwloc_topology;  // hwloc_topology_t, kept out of this header

namespace wireup::topo {

// An RDMA device as hwloc reports it (an OpenFabrics OS device).
struct FabricDevice {
  std::string name;        // "mlx5_0"
  std::string pci_busid;   // "0000:04:00.0"; empty when it has no PCI function
  // Port number -> IB port state number from hwloc's "Port<N>State" info (4 = ACTIVE).
  // Only XML files carry it; on the live machine the provider knows the port states.
  std::map<int, int> port_states;
};

class Topology {
 public:
  static Result<Topology> load_live();
  static Result<Topology> load_xml(const std::string& path);

  Topology(Topology&&) noexcept = default;
  Topology& operator=(Topology&&) noexcept = default;
  ~Topology() = default;

  // "this machine" or the XML path, for messages.
  const std::string& origin() const { return origin_; }
  bool is_live() const { return live_; }

  // Where the RDMA device `name` sits: found as an OpenFabrics OS device by name, else by its
  // PCI bus id when one is given. Never fails: a device neither finds is returned unplaced,
  // with the reason in Placement::unplaced_why.
  Placement place_device(std::string_view name, std::string_view pci_busid = {}) const;

  // A GPU named by its OS device ("cuda0", "nvml0", "card0", "rsmi0") or its PCI bus id
  // ("0000:84:00.0" or "84:00.0"). invalid_argument, listing the GPUs there are, if unknown.
  Result<Placement> place_gpu(std::string_view id) const;

  std::vector<FabricDevice> fabric_devices() const;
  // Those devices as ranking candidates, placed, with the state of `port` from hwloc's
  // "Port<N>State" info (XML exports carry it; unknown when absent).
  std::vector<Candidate> candidates(int port) const;
  // OS devices that can be a GPU (GPU and co-processor types), for listings and errors.
  std::vector<std::string> gpu_names() const;

  CpuSet machine_cpus() const;
  // The CPU binding of this process. invalid_argument on an XML topology: its CPUs are not
  // the ones this process runs on, so the binding must be given explicitly.
  Result<CpuSet> process_binding() const;

 private:
  struct Deleter {
    void operator()(hwloc_topology* t) const;
  };
  Topology(hwloc_topology* t, std::string origin, bool live);

  std::unique_ptr<hwloc_topology, Deleter> topo_;
  std::string origin_;
  bool live_ = false;
};

}  // namespace wireup::topo
