#include "capi/device_choice.h"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <cerrno>
#include <cstdlib>

#include "common/log.h"
#include "topo/rank.h"
#include "topo/topology.h"

namespace wireup::capi {
namespace {

int launcher_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"}) {
    const char* v = std::getenv(var);
    if (v == nullptr) continue;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n >= 0 && n < (1 << 24)) return static_cast<int>(n);
    WIREUP_LOG(warn, "%s=%s is not a local rank; devices are not spread by local rank", var, v);
    return -1;
  }
  return -1;
}

topo::PortStatus port_status(const prov::DeviceInfo& info, int port) {
  for (const prov::PortInfo& p : info.ports) {
    if (p.port_num != port) continue;
    if (p.state == prov::PortState::unknown) return topo::PortStatus::unknown;
    bool up = p.state == prov::PortState::active || p.state == prov::PortState::active_defer;
    return up ? topo::PortStatus::active : topo::PortStatus::inactive;
  }
  return topo::PortStatus::inactive;  // no such port on this device
}

}  // namespace

Result<DeviceChoice> choose_device(prov::rdma::RdmaProvider& p, const config::Settings& s, int local_rank) {
  Result<std::vector<prov::Device*>> devs = p.devices();
  if (!devs) return devs.error();
  Result<topo::Topology> t = topo::Topology::load_live();
  if (!t) return t.error();

  topo::RankInput in;
  in.port = s.device.port;
  in.include = s.device.include;
  in.exclude = s.device.exclude;
  in.local_rank = local_rank >= 0 ? local_rank : s.device.local_rank >= 0 ? s.device.local_rank : launcher_local_rank();
  for (prov::Device* d : *devs) {
    topo::Candidate c;
    c.name = d->info().name;
    c.pci_busid = d->info().pci_bus_id;
    c.port = port_status(d->info(), s.device.port);
    c.where = t->place_device(c.name, c.pci_busid);
    in.devices.push_back(std::move(c));
  }
  if (Result<topo::CpuSet> b = t->process_binding()) {
    in.binding = *b;
  } else {
    // Unknown binding only means no device counts as nearer to our CPUs; say so and go on.
    WIREUP_LOG(warn, "CPU binding unknown (%s): devices ranked without it", b.error().message().c_str());
  }

  Result<topo::Ranking> r = topo::rank_devices(in);
  if (!r) return r.error();
  for (const std::string& n : r->notices) WIREUP_LOG(info, "device choice: %s", n.c_str());
  const topo::Choice& best = r->order.front();
  for (prov::Device* d : *devs)
    if (d->info().name == best.device)
      return DeviceChoice{static_cast<prov::rdma::RdmaDevice*>(d), best.device + " (" + to_string(best.nearness) +
                                                                      "): " + best.why};
  return Error::make(ErrorCode::no_device, "choose_device", "ranked device " + best.device + " is not open");
}

Result<std::string> netdev_ipv4(const prov::DeviceInfo& dev) {
  if (dev.netdev.empty())
    return Error::make(ErrorCode::address_error, "netdev_ipv4",
                       "device " + dev.name + " has no network interface to take an address from: set listen_ip");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error::from_errno("getifaddrs", errno);
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || dev.netdev != i->ifa_name) continue;
    char buf[INET_ADDRSTRLEN];
    const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf) != nullptr) found = buf;
  }
  freeifaddrs(list);
  if (found.empty())
    return Error::make(ErrorCode::address_error, "netdev_ipv4",
                       "interface " + dev.netdev + " of device " + dev.name + " has no IPv4 address: set listen_ip");
  return found;
}

}  // namespace wireup::capi
