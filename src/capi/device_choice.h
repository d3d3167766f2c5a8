// Which device a context uses and where it listens: the rdma provider's devices, ranked by
// src/topo against the live machine, and the first IPv4 address of the winner's netdev.
#pragma once

#include <string>

#include "common/status.h"
#include "config/settings.h"
#include "provider/rdma/rdma.h"

namespace wireup::capi {

struct DeviceChoice {
  prov::rdma::RdmaDevice* device = nullptr;
  std::string why;  // the ranking's sentence, for logs
};

// local_rank < 0: device.local_rank, else the launcher's variables.
Result<DeviceChoice> choose_device(prov::rdma::RdmaProvider& p, const config::Settings& s, int local_rank);

// The first IPv4 address of `netdev` (getifaddrs); the error names the device and interface.
Result<std::string> netdev_ipv4(const prov::DeviceInfo& dev);

}  // namespace wireup::capi
