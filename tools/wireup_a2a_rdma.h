// The rdma path's rank, as a transport builds it: a wireup::Context, its own PD and CQ on the
// context's ibv_context, an RC QP per connection from its factory, and the wireup handle.
// Public API only (include/wireup/wireup.hpp) and libibverbs.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "wireup/wireup.hpp"
#include "wireup_a2a.h"

namespace wireup::a2a {

class RdmaRank {
 public:
  // The context: configuration (--config, --set, WIREUP_*), device choice, listen address
  // (--addr, else the device port's interface). Throws wireup::Exception.
  explicit RdmaRank(const Options& o);
  ~RdmaRank();
  RdmaRank(const RdmaRank&) = delete;
  RdmaRank& operator=(const RdmaRank&) = delete;

  // A PD and a CQ on every rail's device (a CQ entry for every connection of the job, a SEND
  // and a RECV each), the wireup handle.
  // Throws wireup::Exception, or std::runtime_error for a verbs call.
  void open(uint32_t rank, uint32_t nranks, uint64_t job_key);

  wireup::Context& context() { return ctx_; }
  wireup::Wireup& wireup() { return *w_; }
  uint32_t lanes() const { return lanes_; }
  // Established lanes the peer disconnected (steady channel), e.g. because its process died.
  const std::set<std::pair<uint32_t, uint32_t>>& disconnected() const { return disconnected_; }
  // Disconnects (wireup_destroy), then destroys the QPs, CQ and PD; the context goes last.
  void close();

  size_t rails() const { return pds_.size(); }
  ibv_pd* pd(size_t rail) const { return pds_.at(rail); }
  ibv_cq* cq(size_t rail) const { return cqs_.at(rail); }

 private:
  ibv_qp* create_qp(const wireup::QpRequest& r);
  void release_qp(ibv_qp* qp);

  wireup::Context ctx_;
  uint32_t lanes_ = 1;
  ibv_qp_cap caps_{};
  std::vector<ibv_pd*> pds_;  // by rail (wireup_context_rail_ibv_context)
  std::vector<ibv_cq*> cqs_;
  std::set<ibv_qp*> qps_;  // every QP the factory made and not released yet
  std::set<std::pair<uint32_t, uint32_t>> disconnected_;
  std::optional<wireup::Wireup> w_;  // last: destroyed first, before the QPs it used
};

// The lanes the data checks leave out: every lane of a dead rank, and the lanes lost since they
// connected on either end (the QPN exchange learns the other end's: kLostBit).
struct Excluded {
  std::set<uint32_t> ranks;
  std::set<std::pair<uint32_t, uint32_t>> lanes;  // (peer, lane)
  bool has(uint32_t peer, uint32_t lane) const { return ranks.count(peer) != 0 || lanes.count({peer, lane}) != 0; }
};

// Whether result `r` is gone since it was handed over (a library without the field: never).
inline bool lost(const wireup_result_t& r) { return WIREUP_HAS_FIELD(&r, lost) && r.lost != 0; }
// What this rank recorded about result `r` for the QPN cross-check (kLostBit on a lost one).
inline QpnPair recorded(const wireup_result_t& r) { return {r.local_qpn | (lost(r) ? kLostBit : 0), r.remote_qpn}; }

// The checks' verbs (SEND, RDMA WRITE and READ) on a rank's established QPs, its PD and CQ; the
// lanes `skip` has and the lanes lost on this side take no part.
class VerbsDataPath : public DataPath {
 public:
  VerbsDataPath(RdmaRank& rr, const Excluded& skip);
  ~VerbsDataPath() override;
  VerbsDataPath(const VerbsDataPath&) = delete;
  VerbsDataPath& operator=(const VerbsDataPath&) = delete;
  const std::vector<DataLane>& lanes() const { return lanes_; }
  Problem register_buffer(char* buf, size_t len) override;
  Problem post_recv(size_t i, uint64_t wr_id, char* addr, uint32_t len) override;
  Problem post_send(size_t i, uint64_t wr_id, const char* addr, uint32_t len) override;
  int poll(Completion* wc, int n, Problem& error) override;
  std::string status_text(int status) const override;
  std::string one_sided_missing() const override { return {}; }
  RemoteSlot remote_slot(size_t lane, const char* addr) const override;
  Problem post_write(size_t i, uint64_t wr_id, const char* addr, uint32_t len, RemoteSlot to) override;
  Problem post_read(size_t i, uint64_t wr_id, char* addr, uint32_t len, RemoteSlot from) override;

 private:
  Problem post_one_sided(size_t i, uint64_t wr_id, ibv_wr_opcode op, char* addr, uint32_t len, RemoteSlot to);
  RdmaRank& rr_;
  std::vector<DataLane> lanes_;
  std::vector<ibv_qp*> qps_;
  std::vector<uint32_t> rail_;   // by lane: the rail its QP is on
  std::vector<ibv_mr*> mrs_;     // by rail: the buffer registered on that rail's PD
};

// What this rank contributes to the summary, from the public API's results, errors,
// counters, tallies and phase samples.
RankReport make_report(uint32_t rank, RdmaRank& rr, double wireup_s, const std::set<uint32_t>& dead);

}  // namespace wireup::a2a
