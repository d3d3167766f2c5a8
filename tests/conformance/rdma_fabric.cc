// The conformance fabric on the live rdma provider: one provider is both nodes (the VM has
// one rxe device), the address is the device's netdev address (tests/support/rdma_under_test.h).
#include "tests/conformance/harness.h"
#include "tests/support/rdma_under_test.h"

namespace wireup::conf {
namespace {

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
  auto t = testing::rdma_under_test("make_fabric");
  if (!t) return t.error();
  return std::unique_ptr<TestFabric>(new RdmaFabric(std::move(t->provider), t->address));
}

}  // namespace wireup::conf
