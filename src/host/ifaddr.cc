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

// The number of leading one bits of a netmask (a non-contiguous mask counts up to its first 0).
uint8_t prefix_of(const uint8_t* mask, size_t bytes) {
  uint8_t n = 0;
  for (size_t i = 0; i < bytes; ++i)
    for (int b = 7; b >= 0; --b) {
      if (!(mask[i] >> b & 1)) return n;
      ++n;
    }
  return n;
}

// "10.0.0.1" or "10.0.0.1/24" (a prefix longer than the family's is refused).
std::optional<IfAddr> from_text(const std::string& given) {
  std::string text = given;
  int prefix = 0;
  if (const size_t slash = text.find('/'); slash != std::string::npos) {
    const std::string len = text.substr(slash + 1);
    if (len.empty() || len.size() > 3 || len.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    prefix = std::stoi(len);
    text.resize(slash);
  }
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1 && prefix <= 32)
    return IfAddr{AF_INET, text, false, static_cast<uint8_t>(prefix)};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1 && prefix <= 128)
    return IfAddr{AF_INET6, text, v6_link_local(v6), static_cast<uint8_t>(prefix)};
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
        const auto* mask = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask);
        const uint8_t prefix = mask ? prefix_of(reinterpret_cast<const uint8_t*>(&mask->sin_addr), 4) : 0;
        if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) out.push_back({AF_INET, buf, false, prefix});
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
        const auto* mask = reinterpret_cast<const sockaddr_in6*>(i->ifa_netmask);
        const uint8_t prefix = mask ? prefix_of(mask->sin6_addr.s6_addr, 16) : 0;
        if (inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf))
          out.push_back({AF_INET6, buf, v6_link_local(sin6->sin6_addr), prefix});
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
