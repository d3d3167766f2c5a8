// `wireup_info --sysfs DIR`: per device and port of a sysfs tree (this machine's /sys, or a
// layout captured elsewhere), the netdev it maps to, why, and the address wireup would take.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "host/netdev.h"
#include "topo/rails.h"
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

namespace {

// The candidates a sysfs tree describes: each device's state of `port` (class/infiniband/DEV/
// ports/PORT/state, "4: ACTIVE") and its PCI function (the basename of the DEV/device link, as
// /sys links it; none for software devices such as rxe). No topology: every one unplaced.
std::vector<topo::Candidate> sysfs_candidates(const std::string& root, int port) {
  namespace fs = std::filesystem;
  static const std::regex kBusId("[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]");
  std::vector<topo::Candidate> out;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "class" / "infiniband", ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const fs::path dev = fs::path(root) / "class" / "infiniband" / name;
    topo::Candidate c;
    c.name = name;
    const fs::path link = fs::read_symlink(dev / "device", ec);
    if (!ec && std::regex_match(link.filename().string(), kBusId)) c.pci_busid = link.filename().string();
    std::ifstream f(dev / "ports" / std::to_string(port) / "state");
    std::string state;
    std::getline(f, state);
    const size_t colon = state.find(": ");
    c.port_text = colon == std::string::npos ? state : state.substr(colon + 2);
    c.port = state.empty() ? topo::PortStatus::unknown
             : c.port_text == "ACTIVE" ? topo::PortStatus::active : topo::PortStatus::inactive;
    c.where.unplaced_why = "a sysfs capture has no topology";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

int print_sysfs(const std::string& root, std::optional<int> rails, const ChoiceOptions& opts,
                const config::Settings& settings) {
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
  if (rails) {
    topo::RankInput in;
    in.devices = sysfs_candidates(root, settings.device.port);
    in.port = settings.device.port;
    in.include = settings.device.include;
    in.exclude = settings.device.exclude;
    in.local_rank = opts.local_rank.value_or(-1);
    print_rails(in, *rails, opts.rails ? "--rails" : "device.rails");
  }
  return 0;
}

}  // namespace wireup::info
