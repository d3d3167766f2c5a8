// The rdma rank's own verbs objects (PD, CQ, QPs: the factory a transport would write), its
// SEND check path, and its report, all through the public API.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "wireup_a2a_rdma.h"

namespace wireup::a2a {
namespace {

uint32_t config_u32(wireup::Context& c, const char* key) {
  std::string v = c.config_value(key);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);  // "0x10"
  try {
    size_t used = 0;
    const unsigned long n = std::stoul(v, &used, 0);
    if (used != v.size() || n > UINT32_MAX) throw std::out_of_range(key);
    return static_cast<uint32_t>(n);
  } catch (const std::exception&) {
    throw std::runtime_error(std::string("config ") + key + " = \"" + v + "\" is not a number");
  }
}

wireup::ContextParams context_params(const Options& o) {
  wireup::ContextParams p;
  p.config_file = o.config_file;
  p.overrides = o.overrides;
  p.listen_ip = o.addr;
  return p;
}

// The names the sim's reports use for the same failures (src/common's ErrorCode names).
const char* status_name(wireup_status_t s) {
  switch (s) {
    case WIREUP_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case WIREUP_ERR_INVALID_STATE: return "invalid_state";
    case WIREUP_ERR_NO_DEVICE: return "no_device";
    case WIREUP_ERR_CONFIG: return "config_error";
    case WIREUP_ERR_NOT_SUPPORTED: return "not_supported";
    case WIREUP_ERR_TIMED_OUT: return "timed_out";
    case WIREUP_ERR_REJECTED: return "rejected";
    case WIREUP_ERR_UNREACHABLE: return "unreachable";
    case WIREUP_ERR_ADDRESS: return "address_error";
    case WIREUP_ERR_PROTOCOL: return "protocol_error";
    case WIREUP_ERR_DEVICE_REMOVED: return "device_removed";
    case WIREUP_ERR_RESOURCE: return "resource_exhausted";
    case WIREUP_ERR_SYSTEM: return "system_error";
    default: return "internal";
  }
}

// "rejected(35)", "local_error(not_supported)", "timed_out".
std::string failure_kind(const wireup_peer_error_t& e) {
  if (e.kind == WIREUP_ERROR_REJECTED) return "rejected(" + std::to_string(e.reject_reason) + ")";
  if (e.kind == WIREUP_ERROR_LOCAL) return "local_error(" + std::string(status_name(e.status)) + ")";
  return wireup_error_kind_name(e.kind);
}

std::string errno_text(const char* call, int err) { return std::string(call) + ": " + std::strerror(err); }

}  // namespace

VerbsDataPath::VerbsDataPath(RdmaRank& rr, const Excluded& skip) : rr_(rr) {
  for (const wireup_result_t& r : rr.wireup().results())
    if (r.qp != nullptr && !lost(r) && !skip.has(r.peer, r.lane)) {
      lanes_.push_back(DataLane{r.peer, r.lane, r.local_qpn, r.active != 0});
      qps_.push_back(r.qp);
      rail_.push_back(WIREUP_HAS_FIELD(&r, rail) ? r.rail : 0);
    }
}

VerbsDataPath::~VerbsDataPath() {
  for (ibv_mr* mr : mrs_)
    if (mr != nullptr) (void)ibv_dereg_mr(mr);
}

// On every rail's PD (a lane's QP uses its rail's). Remote write and read too: the one-sided
// check's peers WRITE into and READ from it.
Problem VerbsDataPath::register_buffer(char* buf, size_t len) {
  for (size_t r = 0; r < rr_.rails(); ++r) {
    ibv_mr* mr = ibv_reg_mr(rr_.pd(r), buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == nullptr) return errno_text("ibv_reg_mr", errno) + " (rail " + std::to_string(r) + ")";
    mrs_.push_back(mr);
  }
  return {};
}

std::string VerbsDataPath::status_text(int status) const {
  return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
}

RemoteSlot VerbsDataPath::remote_slot(size_t lane, const char* addr) const {
  const uint32_t rail = lane < rail_.size() ? rail_[lane] : 0;
  return RemoteSlot{reinterpret_cast<uint64_t>(addr), rail < mrs_.size() ? mrs_[rail]->rkey : 0, 0};
}

Problem VerbsDataPath::post_one_sided(size_t i, uint64_t wr_id, ibv_wr_opcode op, char* addr, uint32_t len,
                                      RemoteSlot to) {
  ibv_sge sge{reinterpret_cast<uint64_t>(addr), len, mrs_[rail_[i]]->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = wr_id, wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = op, wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = to.addr;
  wr.wr.rdma.rkey = to.rkey;
  const int rc = ibv_post_send(qps_[i], &wr, &bad);
  return rc == 0 ? Problem{}
                 : errno_text(op == IBV_WR_RDMA_WRITE ? "ibv_post_send(RDMA WRITE)" : "ibv_post_send(RDMA READ)", rc) +
                       " (rank " + std::to_string(lanes_[i].peer) + ")";
}

Problem VerbsDataPath::post_write(size_t i, uint64_t wr_id, const char* addr, uint32_t len, RemoteSlot to) {
  return post_one_sided(i, wr_id, IBV_WR_RDMA_WRITE, const_cast<char*>(addr), len, to);  // the HCA only reads it
}

Problem VerbsDataPath::post_read(size_t i, uint64_t wr_id, char* addr, uint32_t len, RemoteSlot from) {
  return post_one_sided(i, wr_id, IBV_WR_RDMA_READ, addr, len, from);
}

Problem VerbsDataPath::post_recv(size_t i, uint64_t wr_id, char* addr, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uint64_t>(addr), len, mrs_[rail_[i]]->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = wr_id, wr.sg_list = &sge, wr.num_sge = 1;
  const int rc = ibv_post_recv(qps_[i], &wr, &bad);
  return rc == 0 ? Problem{} : errno_text("ibv_post_recv", rc) + " (rank " + std::to_string(lanes_[i].peer) + ")";
}

Problem VerbsDataPath::post_send(size_t i, uint64_t wr_id, const char* addr, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uint64_t>(addr), len, mrs_[rail_[i]]->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = wr_id, wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_SEND, wr.send_flags = IBV_SEND_SIGNALED;
  const int rc = ibv_post_send(qps_[i], &wr, &bad);
  return rc == 0 ? Problem{} : errno_text("ibv_post_send", rc) + " (rank " + std::to_string(lanes_[i].peer) + ")";
}

int VerbsDataPath::poll(Completion* out, int n, Problem& error) {
  ibv_wc wc[64];
  int got = 0;
  for (size_t r = 0; r < rr_.rails() && got < n; ++r) {
    const int k = ibv_poll_cq(rr_.cq(r), std::min(n - got, 64), wc);
    if (k < 0) return error = "ibv_poll_cq failed (rail " + std::to_string(r) + ")", -1;
    for (int j = 0; j < k; ++j)
      out[got + j] = Completion{wc[j].wr_id, int(wc[j].status), wc[j].byte_len, wc[j].qp_num};
    got += k;
  }
  return got;
}

RdmaRank::RdmaRank(const Options& o) : ctx_(context_params(o)) {
  lanes_ = config_u32(ctx_, "engine.lanes");
  caps_.max_send_wr = config_u32(ctx_, "qp.max_send_wr");
  caps_.max_recv_wr = config_u32(ctx_, "qp.max_recv_wr");
  caps_.max_send_sge = config_u32(ctx_, "qp.max_send_sge");
  caps_.max_recv_sge = config_u32(ctx_, "qp.max_recv_sge");
  caps_.max_inline_data = config_u32(ctx_, "qp.max_inline_data");
}

RdmaRank::~RdmaRank() { close(); }

void RdmaRank::open(uint32_t rank, uint32_t nranks, uint64_t job_key) {
  // On every rail's device, as a transport would: its QPs go on the request's device.
  for (size_t r = 0; r < ctx_.num_rails(); ++r) {
    ibv_context* dev = ctx_.rail_ibv_context(r);
    ibv_pd* pd = ibv_alloc_pd(dev);
    if (pd == nullptr)
      throw std::runtime_error(errno_text("ibv_alloc_pd", errno) + " on " + ctx_.rail_device_name(r));
    pds_.push_back(pd);
    // One CQ per rail: a SEND and a RECV completion per connection during the check, plus slack
    // (any share of the lanes may land on one rail).
    const uint64_t conns = uint64_t(nranks - 1) * lanes_;
    const int entries = int(std::max<uint64_t>(256, 2 * conns + 64));
    ibv_cq* cq = ibv_create_cq(dev, entries, nullptr, nullptr, 0);
    if (cq == nullptr)
      throw std::runtime_error(errno_text("ibv_create_cq", errno) + " (" + std::to_string(entries) + " entries) on " +
                               ctx_.rail_device_name(r));
    cqs_.push_back(cq);
  }
  w_.emplace(ctx_, wireup::Params{rank, nranks, 0, job_key}, [this](const wireup::QpRequest& r) { return create_qp(r); },
             [this](const wireup::QpRequest&, ibv_qp* qp) { release_qp(qp); });
  w_->on_event([this](const wireup_event_t& ev) {
    if (ev.type == WIREUP_EVENT_DISCONNECTED || ev.type == WIREUP_EVENT_RTU_LOST) disconnected_.insert({ev.peer, ev.lane});
  });
}

ibv_qp* RdmaRank::create_qp(const wireup::QpRequest& r) {
  // The request's rail: its PD and CQ are on the device the CM resolved.
  const uint32_t rail = WIREUP_HAS_FIELD(&r, rail) ? r.rail : 0;
  if (rail >= pds_.size() || r.context != ctx_.rail_ibv_context(rail)) {
    errno = EXDEV;
    return nullptr;
  }
  ibv_qp_init_attr a{};
  a.send_cq = cqs_[rail];
  a.recv_cq = cqs_[rail];
  a.qp_type = IBV_QPT_RC;
  a.cap = caps_;
  ibv_qp* qp = ibv_create_qp(pds_[rail], &a);
  if (qp != nullptr) qps_.insert(qp);
  return qp;  // nullptr with errno set, as the factory contract wants
}

void RdmaRank::release_qp(ibv_qp* qp) {
  if (qps_.erase(qp)) (void)ibv_destroy_qp(qp);  // an attempt that did not connect: ours to destroy
}

void RdmaRank::close() {
  w_.reset();  // disconnects, waits up to 2 s for the peers; our QPs stay ours
  for (ibv_qp* qp : qps_) (void)ibv_destroy_qp(qp);
  qps_.clear();
  for (ibv_cq* cq : cqs_) (void)ibv_destroy_cq(cq);
  cqs_.clear();
  for (ibv_pd* pd : pds_) (void)ibv_dealloc_pd(pd);
  pds_.clear();
}

RankReport make_report(uint32_t rank, RdmaRank& rr, double wireup_s, const std::set<uint32_t>& dead) {
  wireup::Wireup& w = rr.wireup();
  RankReport r;
  r.rank = rank;
  r.wireup_s = wireup_s;
  const std::vector<wireup_result_t> results = w.results();
  const std::vector<wireup_peer_error_t> errors = w.errors();
  for (const wireup_result_t& c : results) {
    if (r.device.empty() && c.device != nullptr) r.device = c.device;
    const std::string rail = std::to_string(WIREUP_HAS_FIELD(&c, rail) ? c.rail : 0) + ":" + (c.device ? c.device : "?");
    if (c.device != nullptr) ++r.lanes_by_rail[rail];
    if (dead.count(c.peer)) {
      ++r.lost;
      r.errors_by_peer[c.peer][rr.disconnected().count({c.peer, c.lane}) ? "disconnected" : "lost"]++;
    } else if (lost(c)) {
      // Gone since it connected (its rail removed, say): not a connection of the job any more.
      ++r.lost_by_rail[rail];
      r.errors_by_peer[c.peer][std::string("lost:") + wireup_error_kind_name(c.lost)]++;
      if (c.active) ++r.lost_after;
    } else if (c.active) {
      ++r.active_to_live;
    }
  }
  // Several rails: every device that carried a lane, in rail order ("rxe0,rxe1").
  if (r.lanes_by_rail.size() > 1) {
    r.device.clear();
    for (const auto& e : r.lanes_by_rail) r.device += (r.device.empty() ? "" : ",") + e.first.substr(e.first.find(':') + 1);
  }
  r.planned = results.size() + errors.size();
  const wireup_counters_t n = w.counters();
  r.connects_started = n.connects_started;
  r.retries = n.retries;
  r.failed = n.failed;
  r.superseded = n.superseded;
  r.strangers = n.strangers;
  r.events = n.events;
  read_rail_stats(w.stats_json(), r);
  for (const wireup::Wireup::Tally& t : w.tallies()) {
    switch (t.group) {
      case WIREUP_TALLY_REJECTS_RECEIVED: r.rejects_received[int(t.key)] = t.count; break;
      case WIREUP_TALLY_REJECTS_SENT: r.rejects_sent[t.key_name] = t.count; break;
      case WIREUP_TALLY_FAILURES: r.failures[t.key_name] = t.count; break;
      case WIREUP_TALLY_ECE_OUTCOMES: r.ece_outcomes[t.key_name] = t.count; break;
    }
  }
  for (size_t p = 0; p < kPhases; ++p)
    for (uint64_t ns : w.phase_samples(static_cast<wireup_phase_t>(p))) r.samples[p].push_back(int64_t(ns));
  for (const wireup_peer_error_t& e : errors) r.errors_by_peer[e.peer][failure_kind(e)]++;
  return r;
}

}  // namespace wireup::a2a
