// src/host/port: which port states are usable, and the ranking's view of a device.
#include <gtest/gtest.h>

#include "host/port.h"

namespace wireup::host {
namespace {

prov::DeviceInfo two_ports(prov::PortState p1, prov::PortState p2) {
  prov::DeviceInfo d;
  d.name = "mlx4_0";
  d.pci_bus_id = "0000:05:00.0";
  d.ports = {prov::PortInfo{1, p1, "InfiniBand", 4096}, prov::PortInfo{2, p2, "InfiniBand", 4096}};
  return d;
}

TEST(HostPort, ActiveAndActiveDeferAreUsable) {
  EXPECT_EQ(port_use(two_ports(prov::PortState::active, prov::PortState::down), 1).status, topo::PortStatus::active);
  EXPECT_EQ(port_use(two_ports(prov::PortState::down, prov::PortState::active_defer), 2).status,
            topo::PortStatus::active);
}

TEST(HostPort, TheConfiguredPortIsTheOneJudged) {
  const prov::DeviceInfo d = two_ports(prov::PortState::active, prov::PortState::down);
  PortUse u = port_use(d, 2);
  EXPECT_EQ(u.status, topo::PortStatus::inactive);
  EXPECT_EQ(u.text, prov::to_string(prov::PortState::down));
}

TEST(HostPort, UnknownStaysUnknownAndAMissingPortIsAbsent) {
  EXPECT_EQ(port_use(two_ports(prov::PortState::unknown, prov::PortState::down), 1).status,
            topo::PortStatus::unknown);
  PortUse u = port_use(two_ports(prov::PortState::active, prov::PortState::active), 3);
  EXPECT_EQ(u.status, topo::PortStatus::inactive);
  EXPECT_EQ(u.text, "absent");
}

TEST(HostPort, CandidateCarriesNameBusIdAndState) {
  topo::Candidate c = candidate(two_ports(prov::PortState::down, prov::PortState::active), 2);
  EXPECT_EQ(c.name, "mlx4_0");
  EXPECT_EQ(c.pci_busid, "0000:05:00.0");
  EXPECT_EQ(c.port, topo::PortStatus::active);
  EXPECT_FALSE(c.where.placed);
}

}  // namespace
}  // namespace wireup::host
