// Interface addresses: live (getifaddrs) or from a table (tests, captured layouts).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "host/netdev.h"

namespace wireup::host {
namespace {

bool v6_link_local(const in6_addr& a) { return a.s6_addr[0] == 0xfe && (a.s6_addr[1] & 0xc0) == 0x80; }

std::optional<IfAddr> from_text(const std::string& text) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return IfAddr{AF_INET, text, false};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IfAddr{AF_INET6, text, v6_link_local(v6)};
  return std::nullopt;
}

}  // namespace

AddrLookup live_addresses() {
  return [](const std::string& ifname) {
    std::vector<IfAddr> out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;  // no address is what the caller reports
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || ifname != i->ifa_name) continue;
      char buf[INET6_ADDRSTRLEN];
      if (i->ifa_addr->sa_family == AF_INET) {
        const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
        if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) out.push_back({AF_INET, buf, false});
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
        if (inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf))
          out.push_back({AF_INET6, buf, v6_link_local(sin6->sin6_addr)});
      }
    }
    freeifaddrs(list);
    return out;
  };
}

Result<AddrLookup> table_addresses(const std::map<std::string, std::vector<std::string>>& table) {
  auto parsed = std::make_shared<std::map<std::string, std::vector<IfAddr>>>();
  for (const auto& [ifname, texts] : table)
    for (const std::string& t : texts) {
      std::optional<IfAddr> a = from_text(t);
      if (!a)
        return Error::make(ErrorCode::invalid_argument, "table_addresses",
                           "\"" + t + "\" (interface " + ifname + ") is not an IPv4 or IPv6 address");
      (*parsed)[ifname].push_back(*a);
    }
  return AddrLookup([parsed](const std::string& ifname) {
    auto it = parsed->find(ifname);
    return it != parsed->end() ? it->second : std::vector<IfAddr>{};
  });
}

Result<AddrLookup> file_addresses(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::make(ErrorCode::invalid_argument, "file_addresses", path + ": cannot be read");
  std::map<std::string, std::vector<std::string>> table;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream l(line);
    std::string ifname, addr, extra;
    if (!(l >> ifname)) continue;
    if (!(l >> addr) || (l >> extra))
      return Error::make(ErrorCode::invalid_argument, "file_addresses",
                         path + ":" + std::to_string(n) + ": expected \"<interface> <address>\"");
    if (!from_text(addr))
      return Error::make(ErrorCode::invalid_argument, "file_addresses",
                         path + ":" + std::to_string(n) + ": \"" + addr + "\" is not an IPv4 or IPv6 address");
    table[ifname].push_back(addr);
  }
  return table_addresses(table);
}

}  // namespace wireup::host
