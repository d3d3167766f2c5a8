// Where an I/O device sits in the machine, as plain data: what Topology extracts from hwloc
// and what the pure ranking in rank.h consumes. Tests can build one by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/cpuset.h"

namespace wireup::topo {

// A PCI-to-PCI bridge: a root port, or a port of a PCIe switch. Host bridges are left out:
// everything under one host bridge shares it, so it says nothing about nearness.
struct PciBridge {
  uint64_t id = 0;     // unique within one topology (hwloc gp_index); bus ids may repeat in XML
  std::string busid;   // "0000:80:03.0"
  bool operator==(const PciBridge&) const = default;
};

struct Placement {
  bool placed = false;
  std::string pci_busid;           // the PCI function the device belongs to
  std::vector<PciBridge> bridges;  // nearest first
  std::vector<unsigned> numa_nodes;  // OS indexes of the NUMA nodes local to the device
  CpuSet numa_cpus;                // the CPUs of those NUMA nodes
  int package = -1;                // OS index of the package the device hangs off, -1 if none
  CpuSet package_cpus;
  std::string unplaced_why;        // set when !placed: why hwloc could not place it
};

// "NUMA node 1" / "NUMA nodes 0,1" / "no NUMA node".
std::string numa_text(const Placement& p);

}  // namespace wireup::topo
