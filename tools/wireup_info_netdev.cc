// `wireup_info --sysfs DIR`: per device and port of a sysfs tree (this machine's /sys, or a
// layout captured elsewhere), the netdev it maps to, why, and the address wireup would take.
#include <cstdio>
#include <filesystem>

#include "host/netdev.h"
#include "wireup_info.h"

namespace wireup::info {

void print_port_netdev(const std::string& root, const std::string& device, int port, const host::AddrLookup& addrs,
                       const char* indent) {
  Result<host::PortNetdevs> p = host::port_netdevs(root, device, port);
  if (!p) {
    std::printf("%snetdev     none: %s\n", indent, p.error().message().c_str());
    return;
  }
  for (size_t i = 0; i < p->netdevs.size(); ++i)
    std::printf("%s%-10s %s (%s)\n", indent, i == 0 ? "netdev" : "also", p->netdevs[i].netdev.c_str(),
                p->netdevs[i].why.c_str());
  for (const std::string& s : p->skipped) std::printf("%sskipped    %s\n", indent, s.c_str());
  Result<host::ListenChoice> l = host::listen_address(*p, addrs);
  if (l)
    std::printf("%saddress    %s: %s\n", indent, l->ip.c_str(), l->why.c_str());
  else
    std::printf("%saddress    none: %s\n", indent, l.error().message().c_str());
}

int print_sysfs(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(fs::path(root) / "class" / "infiniband", ec)) {
    std::fprintf(stderr, "wireup_info: --sysfs %s: no class/infiniband in it (give the directory /sys would be)\n",
                 root.c_str());
    return 1;
  }
  // A captured layout carries what getifaddrs said there; else this machine's addresses.
  const std::string table = (fs::path(root) / "ifaddrs").string();
  host::AddrLookup addrs = host::live_addresses();
  std::string from = "this machine (getifaddrs)";
  if (fs::exists(table, ec)) {
    Result<host::AddrLookup> t = host::file_addresses(table);
    if (!t) return std::fprintf(stderr, "wireup_info: %s\n", t.error().message().c_str()), 1;
    addrs = *t, from = table;
  }
  std::printf("sysfs:      %s\naddresses:  %s\n", root.c_str(), from.c_str());
  const auto ports = host::sysfs_ports(root);
  if (ports.empty()) std::printf("no device has a port under %s/class/infiniband\n", root.c_str());
  for (const auto& [dev, port] : ports) {
    Result<host::PortNetdevs> p = host::port_netdevs(root, dev, port);
    std::printf("%s port %d (%s):\n", dev.c_str(), port,
                p && !p->link_layer.empty() ? p->link_layer.c_str() : "link layer unknown");
    print_port_netdev(root, dev, port, addrs, "  ");
  }
  return 0;
}

}  // namespace wireup::info
