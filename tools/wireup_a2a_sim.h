// The sim driver's side of wireup_a2a: engines on the simulated fabric, built from the
// library's internals (the sim is test support, not part of the public API). The rdma path
// never includes this header.
#pragma once

#include <memory>
#include <set>
#include <utility>

#include "common/status.h"
#include "config/config.h"
#include "qp/factory.h"
#include "wireup/engine.h"
#include "wireup_a2a.h"

namespace wireup::a2a {

static_assert(kPhases == wireup::kSampledPhases, "the report's phases are the engine's sampled ones");

// --config, WIREUP_* and the runner's overrides ("section.key=value"), as the C API loads them.
Result<config::Config> load_config(const Options& o);

using LaneSet = std::set<std::pair<uint32_t, uint32_t>>;  // (peer, lane)
struct RankEngine {
  std::unique_ptr<qp::DefaultQpFactory> factory;  // declared first: outlives the engine's QPs
  std::unique_ptr<Engine> engine;
  // Established lanes the peer disconnected (steady channel), e.g. because its process died.
  std::shared_ptr<LaneSet> disconnected = std::make_shared<LaneSet>();
};
Result<RankEngine> make_engine(prov::Provider& p, const config::Settings& s, uint32_t rank,
                               uint32_t nranks, const prov::SockAddr& listen, uint64_t job_key);

RankReport make_report(uint32_t rank, const RankEngine& re, double wireup_s, const std::set<uint32_t>& dead);

// The SEND check's verbs on the engine's QPs and the factory's PD and CQ.
class EngineDataPath : public DataPath {
 public:
  // Connections to peers outside `skip` (dead ranks) take part.
  EngineDataPath(RankEngine& re, const std::set<uint32_t>& skip);
  const std::vector<DataLane>& lanes() const { return lanes_; }
  Problem register_buffer(char* buf, size_t len) override;
  Problem post_recv(size_t i, uint64_t wr_id, char* addr, uint32_t len) override;
  Problem post_send(size_t i, uint64_t wr_id, const char* addr, uint32_t len) override;
  int poll(Completion* wc, int n, Problem& error) override;
  // The one-sided check is reported as not run on the sim (never as passed).
  std::string one_sided_missing() const override {
    return "the sim provider's QPs carry SEND only (no RDMA WRITE/READ in its data path yet)";
  }

 private:
  qp::DefaultQpFactory& factory_;
  std::vector<const ConnResult*> conns_;
  std::vector<prov::Qp*> qps_;  // conns_' QPs (Engine::qp)
  std::vector<DataLane> lanes_;
  std::unique_ptr<prov::Mr> mr_;
  prov::Cq* cq_ = nullptr;
};

}  // namespace wireup::a2a
