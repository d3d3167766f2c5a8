// Parts of wireup_info shared between its files (the tool is wireup_info.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "host/netdev.h"
#include "topo/rank.h"

namespace wireup::info {

struct ChoiceOptions {
  std::string topology;              // --topology FILE.xml; empty = this machine
  std::string cpus;                  // --cpus LIST; empty = this process's binding
  std::string gpu;                   // --gpu ID
  std::vector<std::string> devices;  // --devices; empty = what the machine (or XML) has
  std::optional<int> local_rank;     // --local-rank
  std::optional<int> rails;          // --rails N|all (topo::RailCount's value); default device.rails
};

// The RDMA devices of this machine through the rdma provider: ports, state, vendor, ECE.
// Returns the exit status (1 when the provider cannot list devices, with its sentence).
int print_live_devices(const config::Settings& settings);

// The candidates of this machine as the rank function wants them (name, PCI bus id, state of
// the configured port), or the provider's error.
Result<std::vector<topo::Candidate>> live_candidates(const config::Settings& settings);

// Per device and port under `root` (a sysfs tree), the netdev it maps to, why, and the address;
// with `rails` (topo::RailCount's value) also the rail set those devices give (no topology in a
// capture: every device is unplaced, cards come from the PCI bus ids the tree links to).
int print_sysfs(const std::string& root, std::optional<int> rails, const ChoiceOptions& opts,
                const config::Settings& settings);
// The rail set of `in`, printed as explain_choice does (`from`: where the count came from).
void print_rails(const topo::RankInput& in, int count, const char* from);
// The netdev lines of one port (print_sysfs's body, reused by the live listing).
void print_port_netdev(const std::string& root, const std::string& device, int port, const host::AddrLookup& addrs,
                       const char* indent);

// Explain which device this process (or the one described by opts) gets, and why.
int explain_choice(const ChoiceOptions& opts, const config::Settings& settings);

}  // namespace wireup::info
