// The sweep's fabric on the simulated provider: one SimFabric per run, each node's provider
// wrapped; what is left behind is read from the fabric's live-object counts.
#include "fault/provider.h"
#include "provider/sim/fabric.h"
#include "tests/fault/sweep.h"

namespace wireup::fsweep {
namespace {

class SimSweepFabric final : public SweepFabric, conf::TestFabric, etest::EngineFabric {
 public:
  SimSweepFabric(std::shared_ptr<fault::Plan> plan, uint32_t nodes) : fab_(prov::sim::SimConfig{.seed = 42}) {
    for (uint32_t i = 0; i < nodes; ++i) {
      fab_.add_node();
      wrapped_.push_back(fault::wrap(fab_.provider(i), plan));
    }
  }
  conf::TestFabric& conformance() override { return *this; }
  etest::EngineFabric& engine() override { return *this; }
  std::string leftovers() const override {
    const prov::sim::SimStats& s = fab_.stats();
    std::string out;
    auto add = [&](const char* what, uint64_t n) {
      if (n != 0) out += std::to_string(n) + " " + what + " ";
    };
    add("ids", s.ids_alive);
    add("channels", s.channels_alive);
    add("QPs", s.qps_alive);
    add("CQs", s.cqs_alive);
    add("PDs", s.pds_alive);
    add("ids destroyed with un-acked events", s.destroyed_with_unacked);
    add("channels destroyed with ids", s.channels_destroyed_with_ids);
    return out;
  }

  std::string name() const override { return "fault(sim)"; }
  prov::Provider& provider(int node) override { return *wrapped_.at(static_cast<size_t>(node)); }
  prov::Provider& provider(uint32_t node) override { return *wrapped_.at(node); }
  prov::SockAddr address(int node) override { return fab_.address(static_cast<uint32_t>(node)); }
  prov::SockAddr address(uint32_t node) override { return fab_.address(node); }
  bool has_data_path() const override { return true; }
  bool calls_can_block() const override { return false; }

 private:
  prov::sim::SimFabric fab_;
  std::vector<std::unique_ptr<prov::Provider>> wrapped_;  // after fab_: destroyed first
};

}  // namespace

Result<std::unique_ptr<SweepFabric>> make_sweep_fabric(std::shared_ptr<fault::Plan> plan, uint32_t nodes) {
  return std::unique_ptr<SweepFabric>(new SimSweepFabric(std::move(plan), nodes));
}

}  // namespace wireup::fsweep
