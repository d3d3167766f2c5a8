// Engine tests on the live rdma provider: one device, one address, one listener per rank.
#include <cstdlib>

#include "tests/engine/engine_harness.h"

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
  const char* env = std::getenv("WIREUP_VM_ADDR");
  if (env == nullptr)
    return Error::make(ErrorCode::no_device, "make_engine_fabric",
                       "WIREUP_VM_ADDR is not set (the soft-RoCE VM sets it; elsewhere export the "
                       "IPv4 address of an RDMA netdev)");
  auto a = prov::SockAddr::parse(env);
  if (!a) return a.error();
  auto p = prov::create_rdma_provider();
  if (!p) return p.error();
  return std::unique_ptr<EngineFabric>(new RdmaEngineFabric(std::move(p).value(), *a));
}

}  // namespace wireup::etest
