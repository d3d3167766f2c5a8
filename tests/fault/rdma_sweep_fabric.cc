// The sweep's fabric on the live rdma provider (inside the soft-RoCE VM): one provider per
// run, wrapped; every node is that one device (tests/support/rdma_under_test.h). What the kernel still holds
// is counted by the churn tests (tools/wireup_churn) with `rdma resource`; in-process here,
// only LSan can tell.
#include "fault/provider.h"
#include "tests/fault/sweep.h"
#include "tests/support/rdma_under_test.h"

namespace wireup::fsweep {
namespace {

class RdmaSweepFabric final : public SweepFabric, conf::TestFabric, etest::EngineFabric {
 public:
  RdmaSweepFabric(std::unique_ptr<prov::Provider> p, prov::SockAddr a) : p_(std::move(p)), addr_(a) {}
  conf::TestFabric& conformance() override { return *this; }
  etest::EngineFabric& engine() override { return *this; }
  std::string leftovers() const override { return {}; }

  std::string name() const override { return "fault(rdma)"; }
  prov::Provider& provider(int) override { return *p_; }
  prov::Provider& provider(uint32_t) override { return *p_; }
  prov::SockAddr address(int) override { return addr_; }
  prov::SockAddr address(uint32_t) override { return addr_; }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return true; }

 private:
  std::unique_ptr<prov::Provider> p_;
  prov::SockAddr addr_;
};

}  // namespace

Result<std::unique_ptr<SweepFabric>> make_sweep_fabric(std::shared_ptr<fault::Plan> plan, uint32_t) {
  auto t = testing::rdma_under_test("make_sweep_fabric");
  if (!t) return t.error();
  return std::unique_ptr<SweepFabric>(new RdmaSweepFabric(fault::wrap(std::move(t->provider), std::move(plan)), t->address));
}

}  // namespace wireup::fsweep
