#include "host/port.h"

namespace wireup::host {

PortUse port_use(const prov::DeviceInfo& dev, int port) {
  for (const prov::PortInfo& p : dev.ports) {
    if (p.port_num != port) continue;
    PortUse u;
    u.text = prov::to_string(p.state);
    if (p.state == prov::PortState::unknown) u.status = topo::PortStatus::unknown;
    else if (p.state == prov::PortState::active || p.state == prov::PortState::active_defer)
      u.status = topo::PortStatus::active;
    else
      u.status = topo::PortStatus::inactive;
    return u;
  }
  return PortUse{topo::PortStatus::inactive, "absent"};
}

topo::Candidate candidate(const prov::DeviceInfo& dev, int port) {
  topo::Candidate c;
  c.name = dev.name;
  c.pci_busid = dev.pci_bus_id;
  PortUse u = port_use(dev, port);
  c.port = u.status;
  c.port_text = std::move(u.text);
  return c;
}

}  // namespace wireup::host
