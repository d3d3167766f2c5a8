// The conformance fabric on the live rdma provider: one provider is both nodes (the VM has
// one rxe device), the address is the device's netdev address (WIREUP_VM_ADDR in the VM).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstdlib>

#include "tests/conformance/harness.h"

namespace wireup::conf {
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

class RdmaFabric final : public TestFabric {
 public:
  RdmaFabric(std::unique_ptr<prov::Provider> p, prov::SockAddr addr)
      : p_(std::move(p)), addr_(addr) {}
  std::string name() const override { return "rdma"; }
  prov::Provider& provider(int) override { return *p_; }
  prov::SockAddr address(int) override { return addr_; }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return true; }

 private:
  std::unique_ptr<prov::Provider> p_;
  prov::SockAddr addr_;
};

}  // namespace

Result<std::unique_ptr<TestFabric>> make_fabric() {
  auto p = prov::create_rdma_provider();
  if (!p) return p.error();
  prov::SockAddr addr;
  if (const char* env = std::getenv("WIREUP_VM_ADDR")) {
    auto a = prov::SockAddr::parse(env);
    if (!a) return a.error();
    addr = *a;
  } else {
    auto devs = (*p)->devices();
    if (!devs) return devs.error();
    for (prov::Device* d : *devs)
      if (uint32_t ip = ipv4_of(d->info().netdev); ip != 0) {
        addr = prov::SockAddr::ipv4(ip, 0);
        break;
      }
    if (addr.empty())
      return Error::make(ErrorCode::no_device, "make_fabric",
                         "no RDMA device with an IPv4 address on its netdev; set WIREUP_VM_ADDR");
  }
  return std::unique_ptr<TestFabric>(new RdmaFabric(std::move(p).value(), addr));
}

}  // namespace wireup::conf
