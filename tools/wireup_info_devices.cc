// Live device listing through the rdma provider. ECE support is probed the only way verbs
// offers, on a scratch RC QP: ibv_query_ece (EOPNOTSUPP = no ECE verbs, as on rxe), then
// ibv_set_ece (mlx5 answers query even without the ECE capability, and set EOPNOTSUPP:
// rdma-core providers/mlx5/verbs.c).
#include <cinttypes>
#include <cstdio>

#include "host/netdev.h"
#include "host/port.h"
#include "provider/provider.h"
#include "wireup_info.h"

namespace wireup::info {
namespace {

std::string ece_support(prov::Device& dev) {
  Result<std::unique_ptr<prov::Pd>> pd = dev.alloc_pd();
  if (!pd) return "unknown (" + pd.error().message() + ")";
  Result<std::unique_ptr<prov::Cq>> cq = dev.create_cq(1, false);
  if (!cq) return "unknown (" + cq.error().message() + ")";
  prov::QpInitAttr attr;
  attr.send_cq = cq->get();
  attr.recv_cq = cq->get();
  attr.caps.max_send_wr = attr.caps.max_recv_wr = 1;
  Result<std::unique_ptr<prov::Qp>> qp = (*pd)->create_qp(attr);
  if (!qp) return "unknown (" + qp.error().message() + ")";
  Result<prov::Ece> ece = (*qp)->query_ece();
  if (ece.is_ok()) {
    Status set = (*qp)->set_ece(prov::Ece{ece->vendor_id, ece->options != 0 ? ece->options : 1});
    if (!set && set.code() == ErrorCode::not_supported) return "no (ibv_set_ece: EOPNOTSUPP)";
    if (!set) return "unknown (" + set.error().message() + ")";
    char buf[64];
    std::snprintf(buf, sizeof buf, "yes (vendor 0x%x, options 0x%x)", ece->vendor_id, ece->options);
    return buf;
  }
  if (ece.code() == ErrorCode::not_supported) return "no";
  return "unknown (" + ece.error().message() + ")";
}

}  // namespace

Result<std::vector<topo::Candidate>> live_candidates(const config::Settings& settings) {
  Result<std::unique_ptr<prov::Provider>> p = prov::create_rdma_provider();
  if (!p) return p.error();
  Result<std::vector<prov::Device*>> devs = (*p)->devices();
  if (!devs) return devs.error();
  std::vector<topo::Candidate> out;
  for (prov::Device* d : *devs) out.push_back(host::candidate(d->info(), settings.device.port));
  return out;
}

int print_live_devices(const config::Settings&) {
  Result<std::unique_ptr<prov::Provider>> p = prov::create_rdma_provider();
  if (!p) {
    std::printf("devices: %s\n", p.error().message().c_str());
    return 1;
  }
  Result<std::vector<prov::Device*>> devs = (*p)->devices();
  if (!devs) {
    std::printf("devices: %s\n", devs.error().message().c_str());
    return 1;
  }
  std::printf("devices (rdma provider):\n");
  for (prov::Device* d : *devs) {
    const prov::DeviceInfo& i = d->info();
    std::printf("  %-10s %-10s vendor 0x%04x part 0x%04x fw %s pci %s%s%s\n", i.name.c_str(), i.transport.c_str(),
                i.vendor_id, i.vendor_part_id, i.fw_ver.empty() ? "-" : i.fw_ver.c_str(),
                i.pci_bus_id.empty() ? "none" : i.pci_bus_id.c_str(), i.netdev.empty() ? "" : " netdev ",
                i.netdev.c_str());
    for (const prov::PortInfo& port : i.ports)
      std::printf("    port %u: %-12s %-10s mtu %u\n", port.port_num, prov::to_string(port.state),
                  port.link_layer.c_str(), port.active_mtu);
    std::printf("    ECE: %s\n", ece_support(*d).c_str());
    for (const prov::PortInfo& port : i.ports) {  // what --sysfs shows, for this machine
      std::printf("    port %u interfaces:\n", port.port_num);
      print_port_netdev(host::sysfs_root(), i.name, port.port_num, host::live_addresses(), "      ");
    }
  }
  return 0;
}

}  // namespace wireup::info
