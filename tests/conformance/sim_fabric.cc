// The conformance fabric on the simulated provider: two virtual nodes of one SimFabric, each
// with a ConnectX-like device with ECE (device 0, the one the addresses name), a soft-RoCE
// device without ECE verbs (device 1) and a ConnectX-like device without the ECE capability
// (device 2), so every answer of the ECE verbs is exercised.
#include "provider/sim/fabric.h"
#include "tests/conformance/harness.h"

namespace wireup::conf {
namespace {

using prov::sim::SimDeviceSpec;
using prov::sim::SimFabric;

class SimTestFabric final : public TestFabric {
 public:
  SimTestFabric() : fab_(prov::sim::SimConfig{.seed = 0x5eed}) {
    prov::sim::SimNodeSpec spec;
    spec.devices = {SimDeviceSpec::mlx5(), SimDeviceSpec::rxe(), SimDeviceSpec::mlx5_no_ece()};
    fab_.add_node(spec);  // node 0: passive
    fab_.add_node(spec);  // node 1: active
  }
  std::string name() const override { return "sim"; }
  prov::Provider& provider(int node) override { return fab_.provider(static_cast<uint32_t>(node)); }
  prov::SockAddr address(int node) override { return fab_.address(static_cast<uint32_t>(node)); }
  bool has_data_path() const override { return true; }
  // A single-threaded simulation cannot block: migrate refuses instead (invalid_state).
  bool calls_can_block() const override { return false; }

 private:
  SimFabric fab_;
};

}  // namespace

Result<std::unique_ptr<TestFabric>> make_fabric() {
  return std::unique_ptr<TestFabric>(new SimTestFabric());
}

}  // namespace wireup::conf
