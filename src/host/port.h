// Is a device's port usable: one rule for the C API, wireup_a2a and wireup_info.
#pragma once

#include <string>

#include "provider/types.h"
#include "topo/rank.h"

namespace wireup::host {

struct PortUse {
  topo::PortStatus status = topo::PortStatus::inactive;
  std::string text;  // the state as the provider names it ("ACTIVE", "DOWN"), or "absent"
};

// ACTIVE and ACTIVE_DEFER are usable; a state the provider could not read is unknown (ranked,
// with a notice); a port the device does not have is inactive ("absent").
PortUse port_use(const prov::DeviceInfo& dev, int port);

// The ranking's view of a device: name, PCI bus id and the state of `port` (unplaced).
topo::Candidate candidate(const prov::DeviceInfo& dev, int port);

}  // namespace wireup::host
