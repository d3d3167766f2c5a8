// wireup_churn --provider sim: the same cycles on the simulated fabric, one node (and one
// context) per rank, through the C API's own code (src/testsupport/capi_seam.h); the counts
// are the fabric's live objects of every node (ids, QPs, CQs, PDs), no kernel involved.
#include <map>

#include "provider/sim/fabric.h"
#include "testsupport/capi_seam.h"
#include "wireup_churn.h"

namespace wireup_churn {
namespace {

using namespace wireup;
namespace seam = wireup::capi_seam;

// The transport on the seam: its QPs are prov::Qp objects of its node's device.
struct SeamTransport final : Transport {
  std::unique_ptr<prov::Pd> pd;
  std::unique_ptr<prov::Cq> cq;
  std::map<prov::Qp*, std::unique_ptr<prov::Qp>> owned;  // after pd, cq: destroyed first

  explicit SeamTransport(prov::Device& dev) {
    auto p = dev.alloc_pd();
    auto c = dev.create_cq(1024, false);
    if (!p || !c) {
      fail("alloc_pd/create_cq on the sim");
      return;
    }
    pd = std::move(p).value();
    cq = std::move(c).value();
  }
  ibv_qp* make_qp() override {
    prov::QpInitAttr a;
    a.send_cq = a.recv_cq = cq.get();
    a.caps = prov::QpCaps{4, 4, 1, 1, 0};
    auto q = pd->create_qp(a);
    if (!q) {
      errno = ENOMEM;
      return nullptr;
    }
    prov::Qp* raw = q->get();
    owned.emplace(raw, std::move(q).value());
    return seam::as_ibv_qp(raw);
  }
  int destroy_qp(ibv_qp* q) override { return owned.erase(seam::seam_qp(q)) == 1 ? 0 : EINVAL; }
};

class SimBackend final : public Backend {
 public:
  bool open(const Options& o) override {
    ctx_.assign(o.ranks, nullptr);
    for (uint32_t r = 0; r < o.ranks; ++r) {
      fab_.add_node();
      auto devs = fab_.provider(r).devices();
      if (!devs || devs->empty()) return false;
      dev_.push_back(devs->front());
      const std::string ip = fab_.address(r).to_string();
      const char* overrides[] = {"engine.mode=on_demand", "log.level=error"};
      wireup_context_params_t cp;
      wireup_context_params_init(&cp);
      cp.listen_ip = ip.c_str();
      cp.config_overrides = overrides;
      cp.num_config_overrides = 2;
      if (seam::context_create(fab_.provider(r), *dev_[r], &cp, &ctx_[r]) != WIREUP_OK) {
        std::fprintf(stderr, "wireup_churn: %s\n", wireup_last_error(nullptr));
        return false;
      }
    }
    return true;
  }
  wireup_context_t* context(uint32_t rank) override { return ctx_.at(rank); }
  std::unique_ptr<Transport> transport(uint32_t rank) override {
    return std::make_unique<SeamTransport>(*dev_.at(rank));
  }
  bool drive(const std::vector<wireup_t*>& ws, const std::function<bool()>& until) override {
    seam::DriveOptions o;
    o.bound = std::chrono::seconds(600);  // virtual
    o.until = until;
    if (Status s = seam::drive(fab_, ws, o); !s) {
      fail("drive: %s", s.message().c_str());
      return false;
    }
    return true;
  }
  Counts measure() override {
    const prov::sim::SimStats& s = fab_.stats();
    Counts c;
    c.cm_id = static_cast<long>(s.ids_alive);
    c.qp = static_cast<long>(s.qps_alive);
    c.cq = static_cast<long>(s.cqs_alive);
    c.pd = static_cast<long>(s.pds_alive);
    c.mr = 0;  // the sim keeps no count of MRs; the churn registers none
    c.virtual_s = std::chrono::duration<double>(fab_.now()).count();
    measure_process(c);
    return c;
  }
  void close() override {
    for (wireup_context_t* c : ctx_) wireup_context_destroy(c);
    ctx_.clear();
  }

 private:
  prov::sim::SimFabric fab_{prov::sim::SimConfig{.seed = 7}};
  std::vector<prov::Device*> dev_;
  std::vector<wireup_context_t*> ctx_;
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace wireup_churn
