// Engine tests on the live rdma provider: one device, one address, one listener per rank.
#include "tests/engine/engine_harness.h"
#include "tests/support/rdma_under_test.h"

namespace wireup::etest {
namespace {

class RdmaEngineFabric final : public EngineFabric {
 public:
  RdmaEngineFabric(std::unique_ptr<prov::Provider> p, prov::SockAddr a) : p_(std::move(p)), addr_(a) {}
  std::string name() const override { return "rdma"; }
  prov::Provider& provider(uint32_t) override { return *p_; }
  prov::SockAddr address(uint32_t) override { return addr_; }
  bool has_data_path() const override { return true; }

 private:
  std::unique_ptr<prov::Provider> p_;
  prov::SockAddr addr_;
};

}  // namespace

Result<std::unique_ptr<EngineFabric>> make_engine_fabric(uint32_t) {
  auto t = testing::rdma_under_test("make_engine_fabric");
  if (!t) return t.error();
  return std::unique_ptr<EngineFabric>(new RdmaEngineFabric(std::move(t->provider), t->address));
}

}  // namespace wireup::etest
