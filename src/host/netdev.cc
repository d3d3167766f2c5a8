#include "host/netdev.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <sys/socket.h>

namespace wireup::host {
namespace fs = std::filesystem;
namespace {

constexpr int kArphrdInfiniband = 32;  // ARPHRD_INFINIBAND, /sys/class/net/<if>/type of IPoIB

// The first line of a sysfs file, trailing blanks cut; nullopt if it cannot be read (sysfs
// answers EINVAL for an unused GID entry's ndevs: the same as absent here).
std::optional<std::string> read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  if (!in || !std::getline(in, s)) return std::nullopt;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::optional<long> parse_num(const std::string& s, int base) {
  std::string_view v = s;
  if (base == 16 && (v.starts_with("0x") || v.starts_with("0X"))) v.remove_prefix(2);
  long n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n, base);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

// Entries of a directory with numeric names, in numeric order (gid_attrs/ndevs/0..N).
std::vector<long> numeric_entries(const fs::path& dir) {
  std::vector<long> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (auto n = parse_num(e.path().filename().string(), 10)) out.push_back(*n);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sorted_names(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// RoCE: the GID table's netdevs, each once, in GID index order.
void from_gid_table(const fs::path& port_dir, PortNetdevs& out) {
  const fs::path ndevs = port_dir / "gid_attrs" / "ndevs";
  for (long k : numeric_entries(ndevs)) {
    std::optional<std::string> nd = read_line(ndevs / std::to_string(k));
    if (!nd || nd->empty()) continue;  // unused GID entry
    auto seen = std::find_if(out.netdevs.begin(), out.netdevs.end(),
                             [&](const NetdevCandidate& c) { return c.netdev == *nd; });
    if (seen != out.netdevs.end()) continue;
    std::string why = "GID " + std::to_string(k);
    if (auto type = read_line(port_dir / "gid_attrs" / "types" / std::to_string(k)); type && !type->empty())
      why += " (" + *type + ")";
    out.netdevs.push_back({*nd, std::move(why)});
  }
}

// The device's own netdevs whose dev_port (or dev_id) is port - 1. `ipoib`: only IPoIB ones.
void from_device_net(const fs::path& dev_dir, int port, bool ipoib, PortNetdevs& out) {
  const fs::path net = dev_dir / "device" / "net";
  std::vector<NetdevCandidate> parents, children;
  for (const std::string& ifname : sorted_names(net)) {
    const fs::path d = net / ifname;
    std::optional<long> index;
    std::string how;
    if (auto dp = read_line(d / "dev_port")) {
      index = parse_num(*dp, 10), how = "dev_port " + *dp;
    } else if (auto di = read_line(d / "dev_id")) {
      index = parse_num(*di, 16), how = "dev_id " + *di + " (no dev_port: kernel before 3.15)";
    }
    if (!index) {
      out.skipped.push_back(ifname + ": neither dev_port nor dev_id is readable");
      continue;
    }
    if (*index != port - 1) {
      out.skipped.push_back(ifname + ": " + how + " is port " + std::to_string(*index + 1));
      continue;
    }
    if (ipoib) {
      if (auto type = read_line(d / "type"); type && parse_num(*type, 10) != kArphrdInfiniband) {
        out.skipped.push_back(ifname + ": type " + *type + ", not IPoIB (32)");
        continue;
      }
    }
    std::optional<std::string> parent = read_line(d / "parent");
    std::string why = std::string(ipoib ? "IPoIB" : "device netdev") + ", " + how + " = port " + std::to_string(port);
    if (parent) {
      if (auto pkey = read_line(d / "pkey")) why += ", P_Key " + *pkey;
      why += ", child of " + *parent;
      children.push_back({ifname, std::move(why)});
    } else {
      parents.push_back({ifname, std::move(why)});
    }
  }
  // P_Key children made on newer kernels are virtual netdevs (class/net, not the PCI
  // function's): found by their `parent` file naming one of this port's interfaces.
  if (ipoib) {
    const fs::path class_net = fs::path(dev_dir).parent_path().parent_path() / "net";
    for (const std::string& ifname : sorted_names(class_net)) {
      std::optional<std::string> parent = read_line(class_net / ifname / "parent");
      if (!parent) continue;
      auto named = [&](const NetdevCandidate& c) { return c.netdev == ifname; };
      auto is_parent = [&](const NetdevCandidate& c) { return c.netdev == *parent; };
      if (std::none_of(parents.begin(), parents.end(), is_parent) || std::any_of(children.begin(), children.end(), named))
        continue;
      std::string why = "IPoIB child of " + *parent;
      if (auto pkey = read_line(class_net / ifname / "pkey")) why += ", P_Key " + *pkey;
      children.push_back({ifname, why + " (class/net/" + ifname + "/parent)"});
    }
  }
  out.netdevs.insert(out.netdevs.end(), parents.begin(), parents.end());
  out.netdevs.insert(out.netdevs.end(), children.begin(), children.end());
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& k : v) s += (s.empty() ? "" : "; ") + k;
  return s;
}

}  // namespace

std::string sysfs_root() {
  const char* r = std::getenv("WIREUP_SYSFS_ROOT");
  return r != nullptr && *r != '\0' ? r : "/sys";
}

Result<PortNetdevs> port_netdevs(const std::string& root, const std::string& device, int port) {
  const fs::path dev_dir = fs::path(root) / "class" / "infiniband" / device;
  const fs::path port_dir = dev_dir / "ports" / std::to_string(port);
  const std::string where = device + " port " + std::to_string(port);
  std::error_code ec;
  if (!fs::is_directory(dev_dir, ec))
    return Error::make(ErrorCode::no_device, "port_netdevs", dev_dir.string() + " does not exist");
  if (!fs::is_directory(port_dir, ec))
    return Error::make(ErrorCode::no_device, "port_netdevs",
                       where + ": " + port_dir.string() + " does not exist (check device.port)");
  PortNetdevs out;
  out.device = device;
  out.port = port;
  out.link_layer = read_line(port_dir / "link_layer").value_or("");
  if (out.link_layer == "InfiniBand") {
    from_device_net(dev_dir, port, true, out);
    if (out.netdevs.empty())
      return Error::make(ErrorCode::address_error, "port_netdevs",
                         where + " (InfiniBand) has no IPoIB interface in " + (dev_dir / "device" / "net").string() +
                             " with dev_port " + std::to_string(port - 1) +
                             (out.skipped.empty() ? std::string() : " (seen: " + joined(out.skipped) + ")") +
                             ": load ib_ipoib and configure the interface, or set listen_ip");
    return out;
  }
  from_gid_table(port_dir, out);
  if (out.netdevs.empty()) {
    from_device_net(dev_dir, port, false, out);
    for (NetdevCandidate& c : out.netdevs) c.why += " (no GID names a netdev)";
  }
  if (out.netdevs.empty())
    return Error::make(ErrorCode::address_error, "port_netdevs",
                       where + " (" + (out.link_layer.empty() ? "link layer unknown" : out.link_layer) +
                           "): no GID entry in " + (port_dir / "gid_attrs" / "ndevs").string() +
                           " names a netdev, and device/net has none for this port: set listen_ip");
  return out;
}

std::vector<std::pair<std::string, int>> sysfs_ports(const std::string& root) {
  std::vector<std::pair<std::string, int>> out;
  const fs::path ib = fs::path(root) / "class" / "infiniband";
  for (const std::string& dev : sorted_names(ib))
    for (long p : numeric_entries(ib / dev / "ports")) out.emplace_back(dev, int(p));
  return out;
}

Result<ListenChoice> listen_address(const PortNetdevs& p, const AddrLookup& addrs) {
  const std::string where = p.device + " port " + std::to_string(p.port);
  std::vector<std::vector<IfAddr>> all;
  for (const NetdevCandidate& c : p.netdevs) all.push_back(addrs(c.netdev));
  auto pick = [&](auto&& ok, const char* kind) -> std::optional<ListenChoice> {
    for (size_t i = 0; i < all.size(); ++i)
      for (const IfAddr& a : all[i])
        if (ok(a)) {
          std::string why = where + " -> " + p.netdevs[i].netdev + " (" + p.netdevs[i].why + ") -> " + a.text + " (" +
                            kind + ")";
          for (size_t k = 0; k < i; ++k) why += (k ? ", " : "; passed over: ") + p.netdevs[k].netdev;
          if (i > 0) why += std::string(" (no ") + (a.family == AF_INET ? "IPv4" : "usable address") + ")";
          return ListenChoice{a.text, p.netdevs[i].netdev, a.prefix_len, std::move(why)};
        }
    return std::nullopt;
  };
  if (auto c = pick([](const IfAddr& a) { return a.family == AF_INET; }, "IPv4")) return *c;
  if (auto c = pick([](const IfAddr& a) { return a.family == AF_INET6 && !a.link_local; },
                    "IPv6, no IPv4 on these interfaces"))
    return *c;
  std::string seen;
  for (size_t i = 0; i < all.size(); ++i) {
    seen += (i ? "; " : "") + p.netdevs[i].netdev + ": ";
    if (all[i].empty()) seen += "no address";
    for (size_t k = 0; k < all[i].size(); ++k)
      seen += (k ? ", " : "") + all[i][k].text + (all[i][k].link_local ? " (link-local: no scope a peer can use)" : "");
  }
  return Error::make(ErrorCode::address_error, "listen_address",
                     where + " has no IPv4 or global IPv6 address on its interfaces (" + seen + "): set listen_ip");
}

Result<ListenChoice> device_listen_address(const std::string& root, const std::string& device, int port,
                                           const AddrLookup& addrs) {
  Result<PortNetdevs> p = port_netdevs(root, device, port);
  if (!p) return p.error();
  return listen_address(*p, addrs);
}

}  // namespace wireup::host
