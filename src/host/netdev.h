// Which network interface a device port maps to, and the address to listen on there.
//
// From sysfs (the root is a parameter, so captured layouts of other machines can be read):
//  - RoCE (link_layer Ethernet): the netdevs the port's GID table names,
//    class/infiniband/<dev>/ports/<N>/gid_attrs/ndevs/<K> (one per GID entry; a bond's GIDs
//    name the bond, a VLAN's GIDs name the VLAN interface), in GID index order. Kernels
//    without gid_attrs (before 4.5): the device's own netdevs, as for IB below.
//  - InfiniBand: the IPoIB interfaces of the device, class/infiniband/<dev>/device/net/<if>,
//    whose dev_port (dev_id on kernels before 3.15, hex) is the port number - 1. Interfaces
//    are those of the PCI function, so a dual-port HCA (mlx4) lists ib0 and ib1 there.
//    P_Key children (ib0.8001, with `parent` and `pkey` files) come after their parent: found
//    there too on old kernels, in class/net by their `parent` file on newer ones (where only
//    ipoib_parent_init ties an interface to the HCA's device).
// The address: the first IPv4 address over those netdevs in order, else the first global
// IPv6 one. Link-local IPv6 is never chosen: it needs a scope id (an interface index of this
// host) that a peer cannot use to reach it; the error says so (set listen_ip).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace wireup::host {

// "/sys", or $WIREUP_SYSFS_ROOT (for tests and for checking a layout captured elsewhere).
std::string sysfs_root();

struct NetdevCandidate {
  std::string netdev;
  std::string why;  // "GID 0 (RoCE v2)", "IPoIB, dev_port 1 = port 2"
};

struct PortNetdevs {
  std::string device;
  int port = 1;
  std::string link_layer;                // as sysfs says: "InfiniBand", "Ethernet"
  std::vector<NetdevCandidate> netdevs;  // best first; never empty on success
  std::vector<std::string> skipped;      // interfaces looked at and not taken, each with why
};

// The netdevs of (device, port) under `root`; the error names the file or directory missing
// and what it means ("no IPoIB interface for port 2: load ib_ipoib, or set listen_ip").
Result<PortNetdevs> port_netdevs(const std::string& root, const std::string& device, int port);

// Every device and port present under `root` (class/infiniband/*/ports/*), sorted.
std::vector<std::pair<std::string, int>> sysfs_ports(const std::string& root);

// ---- interface addresses ------------------------------------------------------------------
struct IfAddr {
  int family = 0;           // AF_INET, AF_INET6
  std::string text;         // "10.0.0.1", "fd00::1", "fe80::1"
  bool link_local = false;  // IPv6 fe80::/10
  uint8_t prefix_len = 0;   // the subnet's prefix length (netmask); 0 = unknown
};
// Addresses of one interface, in the order the system lists them.
using AddrLookup = std::function<std::vector<IfAddr>(const std::string& ifname)>;

AddrLookup live_addresses();  // getifaddrs(3), at each call
// A fixed table: interface -> addresses as text, IPv4 or IPv6 with an optional "/prefix"
// ("10.0.2.1/24"; invalid text is an error).
Result<AddrLookup> table_addresses(const std::map<std::string, std::vector<std::string>>& table);
// A table from a file of "<ifname> <address>" lines ('#' comments): captured layouts carry one.
Result<AddrLookup> file_addresses(const std::string& path);

struct ListenChoice {
  std::string ip;      // "10.0.0.1", "fd00::5"
  std::string netdev;  // where it was found
  uint8_t prefix_len = 0;  // its subnet's prefix length; 0 = unknown
  std::string why;     // "mlx5_0 port 1 -> bond0 (GID 0 (RoCE v2)) -> 10.0.0.1 (IPv4)"
};

// The address of the best netdev, by the rule above; the error lists every netdev and what
// it had, and ends with "set listen_ip".
Result<ListenChoice> listen_address(const PortNetdevs& p, const AddrLookup& addrs);

// port_netdevs, then listen_address.
Result<ListenChoice> device_listen_address(const std::string& root, const std::string& device, int port,
                                           const AddrLookup& addrs);

}  // namespace wireup::host
