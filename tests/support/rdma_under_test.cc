#include "tests/support/rdma_under_test.h"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <cstdlib>
#include <string>

namespace wireup::testing {
namespace {

// The first IPv4 address of `netdev`, 0 if none.
uint32_t ipv4_of(const std::string& netdev) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return 0;
  uint32_t found = 0;
  for (ifaddrs* i = list; i != nullptr && found == 0; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && netdev == i->ifa_name)
      found = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
  freeifaddrs(list);
  return found;
}

}  // namespace

Result<RdmaUnderTest> rdma_under_test(const char* who) {
  auto p = prov::create_rdma_provider();
  if (!p) return p.error();
  RdmaUnderTest t{std::move(p).value(), {}};
  if (const char* env = std::getenv("WIREUP_VM_ADDR")) {
    auto a = prov::SockAddr::parse(env);
    if (!a) return Error::make(ErrorCode::invalid_argument, who, std::string("WIREUP_VM_ADDR: ") + a.error().message());
    t.address = *a;
    return t;
  }
  auto devs = t.provider->devices();
  if (!devs) return devs.error();
  for (prov::Device* d : *devs)
    if (uint32_t ip = ipv4_of(d->info().netdev); ip != 0) {
      t.address = prov::SockAddr::ipv4(ip, 0);
      return t;
    }
  return Error::make(ErrorCode::no_device, who,
                     "no RDMA device with an IPv4 address on its netdev (set WIREUP_VM_ADDR to the IPv4 "
                     "address of an RDMA netdev; the soft-RoCE VM sets it)");
}

}  // namespace wireup::testing
