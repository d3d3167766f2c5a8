// The device this process uses: the provider's devices, the configured port's state, the
// local rank and include/exclude, ranked by src/topo (hwloc locality when it can matter).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/settings.h"
#include "host/local_rank.h"
#include "provider/provider.h"
#include "topo/rails.h"
#include "topo/rank.h"

namespace wireup::host {

struct DeviceChoice {
  prov::Device* device = nullptr;  // owned by the provider
  std::string why;                 // "rxe0 (machine): only usable device", for logs and summaries
};

// Locality (hwloc, seconds per process in the TCG VM) is loaded only when more than one device
// is usable: it orders usable devices, it never makes one usable.
Result<DeviceChoice> choose_device(prov::Provider& p, const config::Settings& s, const LocalRank& local_rank);

// The rail set (topo/rails.h) of device.rails devices, rail 0 first, each open on the provider.
// With device.rails = 1 it is choose_device's one device.
Result<std::vector<DeviceChoice>> choose_rail_devices(prov::Provider& p, const config::Settings& s,
                                                      const LocalRank& local_rank);

// What the ranking gets from the configuration and the provider's devices (no locality yet).
topo::RankInput rank_input(const config::Settings& s, const LocalRank& local_rank,
                           std::span<prov::Device* const> devices);

// device.rails as the rail set takes it.
topo::RailCount rail_count(const config::Settings& s);

}  // namespace wireup::host
