// A minimal connection driver over the provider API of a SimFabric: every node listens, and
// each planned (from, to) pair runs the application-owned-QP flow once (resolve, QP to INIT,
// connect; passive: QP to RTS, accept; active: RTR/RTS, establish). No retries, no policy:
// it exists to exercise and measure the simulated fabric at scale (tests, benchmarks) before
// and apart from the real engine.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "provider/sim/fabric.h"

namespace wireup::prov::sim {

struct MeshOptions {
  uint16_t port = 7471;          // every node listens here
  int backlog = 1024;
  bool create_qps = true;        // false: CM only (QPN 0 in the REQ/REP)
  int resolve_timeout_ms = 2000;
};

struct MeshReport {
  uint64_t planned = 0;
  uint64_t established = 0;           // both sides saw their last event
  uint64_t failed = 0;
  std::map<std::string, uint64_t> failures;  // "REJECTED 28", "UNREACHABLE -110", ...
  Nanos last_established{0};          // virtual time of the last ESTABLISHED
  uint64_t cm_events = 0;             // events handled by the driver
};

class SimMesh {
 public:
  explicit SimMesh(SimFabric& fab, MeshOptions o = {});
  ~SimMesh();  // tears down in order: QPs, ids, listeners, channels, CQs, PDs
  SimMesh(const SimMesh&) = delete;
  SimMesh& operator=(const SimMesh&) = delete;

  // Every node's channel, listener, PD and CQ. Call once, after adding the nodes.
  Status listen_all();
  // Plans (and starts) one connection from node `from` to node `to`.
  Status connect(uint32_t from, uint32_t to);
  // Runs the fabric until every planned connection is settled or the clock reaches `until`.
  MeshReport run(Nanos until);
  const MeshReport& report() const { return report_; }

 private:
  struct Conn;
  struct NodeState;
  void handle(uint32_t node, CmEvent& ev);
  void on_active(Conn& c, CmEvent& ev);
  void on_request(uint32_t node, CmEvent& ev);
  void on_passive(Conn& c, CmEvent& ev);
  void fail(Conn& c, const CmEvent& ev);
  Status make_qp(uint32_t node, CmId& id, std::unique_ptr<Qp>* out);
  Status to_state(Qp& qp, CmId& id, QpState s);

  SimFabric& fab_;
  MeshOptions opt_;
  std::vector<std::unique_ptr<NodeState>> nodes_;
  std::vector<std::unique_ptr<Conn>> conns_;
  MeshReport report_;
};

}  // namespace wireup::prov::sim
