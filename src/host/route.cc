#include "host/route.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace wireup::host {
namespace {

// The address bytes of `a` (4 or 16) as the sockaddr holds them (network order).
std::pair<const void*, size_t> ip_bytes(const prov::SockAddr& a) {
  if (a.family() == AF_INET) return {&reinterpret_cast<const sockaddr_in*>(a.get())->sin_addr, 4};
  return {&reinterpret_cast<const sockaddr_in6*>(a.get())->sin6_addr, 16};
}

struct Request {
  nlmsghdr h;
  rtmsg r;
  std::array<char, 64> attrs;
};

void add_attr(Request& q, unsigned short type, const void* data, size_t len) {
  auto* rta = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&q) + NLMSG_ALIGN(q.h.nlmsg_len));
  rta->rta_type = type;
  rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
  std::memcpy(RTA_DATA(rta), data, len);
  q.h.nlmsg_len = NLMSG_ALIGN(q.h.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

// The closing of the netlink socket, whichever way the lookup ends.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<bool> route_out_of(const std::string& netdev, const prov::SockAddr& from, const prov::SockAddr& to) {
  const unsigned ifindex = netdev.empty() ? 0 : if_nametoindex(netdev.c_str());
  if (ifindex == 0 || from.family() != to.family() || (to.family() != AF_INET && to.family() != AF_INET6))
    return std::nullopt;
  Fd s{::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)};
  if (s.fd < 0) return std::nullopt;
  Request q{};
  q.h.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  q.h.nlmsg_type = RTM_GETROUTE;
  q.h.nlmsg_flags = NLM_F_REQUEST;
  q.h.nlmsg_seq = 1;
  q.r.rtm_family = static_cast<unsigned char>(to.family());
  const auto [dst, len] = ip_bytes(to);
  q.r.rtm_dst_len = static_cast<unsigned char>(len * 8);
  q.r.rtm_src_len = static_cast<unsigned char>(len * 8);
  add_attr(q, RTA_DST, dst, len);
  add_attr(q, RTA_SRC, ip_bytes(from).first, len);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(s.fd, &q, q.h.nlmsg_len, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0)
    return std::nullopt;
  alignas(nlmsghdr) std::array<char, 8192> buf{};
  const ssize_t n = ::recv(s.fd, buf.data(), buf.size(), 0);
  if (n <= 0) return std::nullopt;
  auto* h = reinterpret_cast<nlmsghdr*>(buf.data());
  if (!NLMSG_OK(h, static_cast<unsigned>(n))) return std::nullopt;
  if (h->nlmsg_type == NLMSG_ERROR) {
    const int err = -reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
    if (err == ENETUNREACH || err == EHOSTUNREACH) return false;  // no route at all
    return std::nullopt;
  }
  if (h->nlmsg_type != RTM_NEWROUTE) return std::nullopt;
  auto* r = reinterpret_cast<rtmsg*>(NLMSG_DATA(h));
  int attr_len = static_cast<int>(RTM_PAYLOAD(h));
  for (auto* a = RTM_RTA(r); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
    if (a->rta_type != RTA_OIF) continue;
    int oif = 0;
    std::memcpy(&oif, RTA_DATA(a), sizeof oif);
    return static_cast<unsigned>(oif) == ifindex;
  }
  return std::nullopt;
}

}  // namespace wireup::host
