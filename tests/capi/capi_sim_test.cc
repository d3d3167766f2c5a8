// The C API on the simulated fabric (src/testsupport/capi_seam.h): the same handles, factory,
// hand-over, results and events as libwireup.a, with a transport that owns its QPs and checks
// what the library does with them, as examples/c_transport relies on:
//  - the release callback never comes for a QP the transport was handed as a result;
//  - each QP the factory made is destroyed exactly once (released, or destroyed by the
//    transport at its teardown), never twice, never left over;
//  - a result handed over stays handed over: never withdrawn, never a second one per lane (a
//    lane connected again on demand shows its new connection at the same index);
//  - a lane lost after hand-over (every RTU lost) is reported: an event on the active side,
//    an error on the passive side -- never a silent teardown and reconnect under the
//    transport's feet.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <span>
#include <set>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "capi/transport_qp.h"
#include "testsupport/capi_seam.h"
#include "wireup/address.h"
#include "wireup/wireup.h"

namespace wireup {
namespace {

using namespace std::chrono_literals;
using capi_seam::as_ibv_qp;
using capi_seam::seam_device;
using capi_seam::seam_qp;

struct Event {
  uint32_t peer, lane;
  wireup_event_type_t type;
  int status;
  std::string name;
};

// One rank's transport: its PD and CQ on the node's device, the QPs it made (and owns).
struct Transport {
  prov::Device* dev = nullptr;
  std::unique_ptr<prov::Pd> pd;
  std::unique_ptr<prov::Cq> cq;
  std::map<prov::Qp*, std::unique_ptr<prov::Qp>> live;  // made and not destroyed yet
  std::set<prov::Qp*> given;                            // handed over as results
  std::set<std::pair<uint32_t, uint32_t>> lanes;        // (peer, lane) of those results
  std::vector<std::string> problems;
  std::vector<Event> events;
  std::vector<wireup_lane_event_t> lane_events;
  unsigned created = 0, released = 0;
  bool init_first = false;  // misuse: hand the QP over in INIT instead of fresh (RESET)

  void destroy(prov::Qp* q, const std::string& why) {
    if (live.erase(q) == 0) problems.push_back("QP destroyed twice (" + why + ")");
  }
  // Every result read earlier must read the same now: a result handed over stays.
  void reread_results(wireup_t* w) {
    for (size_t i = 0; i < wireup_result_count(w); ++i) {
      wireup_result_t r;
      WIREUP_STRUCT_INIT(&r);
      if (wireup_result_get(w, i, &r) != WIREUP_OK)
        problems.push_back("result " + std::to_string(i) + " read again: " + wireup_last_error(w));
      else if (given.count(seam_qp(r.qp)) == 0)
        problems.push_back("result " + std::to_string(i) + " read again: another QP");
    }
  }
  // Reads the results that are new since its last look, as a transport using lanes as they
  // come up: an index it has not seen, or one whose lane connected again (another QP there;
  // the lane's earlier QP stays the transport's until its teardown).
  std::vector<prov::Qp*> at_index;  // the QP each index showed last
  void read_results(wireup_t* w) {
    for (size_t i = 0; i < wireup_result_count(w); ++i) {
      wireup_result_t r;
      WIREUP_STRUCT_INIT(&r);
      if (wireup_result_get(w, i, &r) != WIREUP_OK) {
        problems.push_back(std::string("wireup_result_get: ") + wireup_last_error(w));
        continue;
      }
      if (i < at_index.size() && at_index[i] == seam_qp(r.qp)) continue;  // seen
      if (i >= at_index.size()) at_index.resize(i + 1, nullptr);
      at_index[i] = seam_qp(r.qp);
      const std::string who = "rank " + std::to_string(r.peer) + " lane " + std::to_string(r.lane);
      if (r.qp == nullptr) problems.push_back("result " + std::to_string(i) + " (" + who + ") has no QP");
      if (!lanes.insert({r.peer, r.lane}).second) problems.push_back("a second result for " + who);
      if (!given.insert(seam_qp(r.qp)).second) problems.push_back("the same QP handed over twice: " + who);
      if (r.qp != nullptr && seam_qp(r.qp)->qpn() != r.local_qpn) problems.push_back(who + ": local_qpn mismatch");
    }
  }
};

int create_qp(void* arg, const wireup_qp_request_t* req, ibv_qp** out) {
  auto* t = static_cast<Transport*>(arg);
  if (seam_device(req->context) != t->dev) return ENODEV;
  prov::QpInitAttr a;
  a.send_cq = a.recv_cq = t->cq.get();
  a.caps = prov::QpCaps{8, 8, 1, 1, 0};
  auto q = t->pd->create_qp(a);
  if (!q) return ENOMEM;
  prov::Qp* raw = q->get();
  if (t->init_first) {
    prov::QpAttr init;
    init.qp_state = prov::QpState::init;
    init.port_num = 1;
    init.qp_access_flags = prov::access::local_write;
    namespace m = prov::qp_mask;
    if (!raw->modify(init, m::state | m::pkey_index | m::port | m::access_flags)) return EIO;
  }
  t->live.emplace(raw, std::move(q).value());
  ++t->created;
  *out = as_ibv_qp(raw);
  return 0;
}

void release_qp(void* arg, const wireup_qp_request_t* req, ibv_qp* qp) {
  auto* t = static_cast<Transport*>(arg);
  ++t->released;
  const std::string who = "rank " + std::to_string(req->peer) + " lane " + std::to_string(req->lane);
  if (t->given.count(seam_qp(qp)) != 0) t->problems.push_back("release callback for " + who + "'s result QP");
  t->destroy(seam_qp(qp), "release callback for " + who);
}

// As a transport would: a closed lane is not held any more (its QP still is, until teardown);
// a READY names the result the lane has now.
void on_lane(void* arg, const wireup_lane_event_t* ev) {
  auto* t = static_cast<Transport*>(arg);
  t->lane_events.push_back(*ev);
  if (ev->type == WIREUP_LANE_EVENT_CLOSED) t->lanes.erase({ev->peer, ev->lane});
}

void on_event(void* arg, const wireup_event_t* ev) {
  static_cast<Transport*>(arg)->events.push_back(Event{ev->peer, ev->lane, ev->type, ev->status, ev->name});
}

// Every RTU from node `from` to node `to` before `until` is lost (as tests/engine/rtu_gap_test.cc):
// a window to 95 s covers the 16 RTUs of a connection made at t ~ 0, so the passive side's REP
// retries run out (UNREACHABLE) at ~98.3 s.
prov::sim::SimConfig rtu_flap(uint32_t from, uint32_t to, Nanos until) {
  prov::sim::SimConfig cfg;
  cfg.seed = 34;
  prov::sim::MessageRule r;
  r.types = prov::sim::msg_bit(prov::sim::CmMsg::rtu);
  r.src_node = from;
  r.dst_node = to;
  r.until = until;
  r.drop = 1;
  cfg.faults.rules.push_back(r);
  return cfg;
}

// `nodes` nodes; C API ranks on the first `live` of them (the rest: no process, nobody listens).
class SimJob {
 public:
  SimJob(uint32_t nodes, uint32_t live, prov::sim::SimConfig cfg, std::vector<std::string> overrides)
      : fab_(std::move(cfg)), nodes_(nodes), t_(live), ctx_(live, nullptr), w_(live, nullptr) {
    for (uint32_t i = 0; i < nodes; ++i) fab_.add_node();
    overrides_ = std::move(overrides);
  }
  ~SimJob() { teardown(); }

  // The job key each rank passes to wireup_create (default 0x5eed; 0: none, wireup_start waits
  // for wireup_set_job_key), and the key each then gives wireup_set_job_key once it published
  // its address, as Open MPI's BTL does after the modex fence (0 or absent: not called).
  void keys(std::vector<uint64_t> at_create, std::vector<uint64_t> set_later) {
    create_keys_ = std::move(at_create);
    set_keys_ = std::move(set_later);
  }

  // Contexts, handles, peer table, start.
  void start(uint32_t lanes) {
    ASSERT_NO_FATAL_FAILURE(create(lanes));
    ASSERT_NO_FATAL_FAILURE(set_peers());
    for (uint32_t r = 0; r < t_.size(); ++r) ASSERT_EQ(wireup_start(w_[r]), WIREUP_OK) << wireup_last_error(w_[r]);
  }

  // Contexts and handles; each rank's address taken (published), then the keys of set_later.
  void create(uint32_t lanes) {
    addrs_.assign(nodes_, {});
    std::vector<std::vector<uint8_t>>& addrs = addrs_;
    for (uint32_t r = 0; r < t_.size(); ++r) {
      prov::Provider& p = fab_.provider(r);
      auto devs = p.devices();
      ASSERT_TRUE(devs && !devs->empty());
      Transport& t = t_[r];
      t.dev = devs->front();
      auto pd = t.dev->alloc_pd();
      auto cq = t.dev->create_cq(64, false);
      ASSERT_TRUE(pd && cq);
      t.pd = std::move(pd).value();
      t.cq = std::move(cq).value();
      std::vector<const char*> ov;
      for (const std::string& o : overrides_) ov.push_back(o.c_str());
      const std::string ip = fab_.address(r).to_string();
      wireup_context_params_t cp;
      wireup_context_params_init(&cp);
      cp.listen_ip = ip.c_str();
      cp.config_overrides = ov.data();
      cp.num_config_overrides = ov.size();
      ASSERT_EQ(capi_seam::context_create(p, *t.dev, &cp, &ctx_[r]), WIREUP_OK) << wireup_last_error(nullptr);
      wireup_params_t wp;
      wireup_params_init(&wp);
      wp.rank = r;
      wp.nranks = nodes_;
      wp.lanes = lanes;
      wp.job_key = r < create_keys_.size() ? create_keys_[r] : 0x5eed;
      wp.qp_create = create_qp;
      wp.qp_release = release_qp;
      wp.qp_arg = &t;
      ASSERT_EQ(wireup_create(ctx_[r], &wp, &w_[r]), WIREUP_OK) << wireup_last_error(nullptr);
      ASSERT_EQ(wireup_on_event(w_[r], on_event, &t), WIREUP_OK);
      ASSERT_EQ(wireup_on_lane_event(w_[r], on_lane, &t), WIREUP_OK);
      uint8_t buf[WIREUP_ADDRESS_MAX];
      size_t len = sizeof buf;
      ASSERT_EQ(wireup_local_address(w_[r], buf, &len), WIREUP_OK) << wireup_last_error(w_[r]);
      addrs[r].assign(buf, buf + len);
      if (r < set_keys_.size() && set_keys_[r] != 0) {
        ASSERT_EQ(wireup_set_job_key(w_[r], set_keys_[r]), WIREUP_OK) << wireup_last_error(w_[r]);
      }
    }
    // Ranks without a process: their address all the same (as an allgather of a job whose
    // rank died after publishing it); nothing listens there.
    for (uint32_t r = t_.size(); r < nodes_; ++r) addrs[r] = address_of_absent(r, addrs[0]);
  }

  // Every rank's peer table (after create).
  void set_peers() {
    std::vector<wireup_peer_t> peers;
    for (uint32_t r = 0; r < nodes_; ++r) peers.push_back({r, addrs_[r].data(), addrs_[r].size()});
    for (uint32_t r = 0; r < t_.size(); ++r)
      ASSERT_EQ(wireup_set_peers(w_[r], peers.data(), peers.size()), WIREUP_OK) << wireup_last_error(w_[r]);
  }

  // Bulk: until each handle's setup channel closed too (the RTU linger). On demand it never
  // closes: until every lane asked for settled.
  Status run(Nanos bound, bool until_setup_closed = true, std::function<bool()> until = {}) {
    capi_seam::DriveOptions o;
    o.bound = bound;
    o.until_setup_closed = until_setup_closed;
    o.until = std::move(until);
    o.after_round = [this] {
      for (uint32_t r = 0; r < t_.size(); ++r) t_[r].read_results(w_[r]);
    };
    return capi_seam::drive(fab_, w_, o);
  }

  // wireup first, then the transport destroys the QPs it was handed (as c_transport does).
  void teardown() {
    for (uint32_t r = 0; r < t_.size(); ++r) {
      if (w_[r] == nullptr) continue;
      t_[r].read_results(w_[r]);
      t_[r].reread_results(w_[r]);
      wireup_destroy(w_[r]);
      w_[r] = nullptr;
      for (prov::Qp* q : t_[r].given) t_[r].destroy(q, "the transport's teardown of a result QP");
      EXPECT_EQ(wireup_context_destroy(ctx_[r]), WIREUP_OK);
      ctx_[r] = nullptr;
    }
  }

  Transport& t(uint32_t r) { return t_[r]; }
  wireup_t* w(uint32_t r) { return w_[r]; }
  wireup_context_t* ctx(uint32_t r) { return ctx_[r]; }
  prov::sim::SimFabric& fabric() { return fab_; }

 private:
  // The address that node's rank would have published: its device's IP, the port every
  // rank of the job listens on (the same configuration), in wireup's own format.
  std::vector<uint8_t> address_of_absent(uint32_t node, std::span<const uint8_t> of_rank0) {
    auto a0 = decode_address(of_rank0);
    prov::SockAddr a = fab_.address(node);
    a.set_port(a0 ? a0->port() : 0);
    return encode_address(a);
  }

  prov::sim::SimFabric fab_;
  uint32_t nodes_;
  std::vector<std::string> overrides_;
  std::vector<uint64_t> create_keys_, set_keys_;
  std::vector<std::vector<uint8_t>> addrs_;
  std::vector<Transport> t_;
  std::vector<wireup_context_t*> ctx_;
  std::vector<wireup_t*> w_;
};

void expect_clean(Transport& t, const char* who) {
  for (const std::string& p : t.problems) ADD_FAILURE() << who << ": " << p;
  EXPECT_TRUE(t.live.empty()) << who << ": " << t.live.size() << " of " << t.created
                              << " QPs never destroyed (neither released nor handed over)";
}

const wireup_peer_error_t* find_error(wireup_t* w, uint32_t peer, uint32_t lane, wireup_peer_error_t* out) {
  for (size_t i = 0; i < wireup_error_count(w); ++i) {
    wireup_peer_error_t e;
    WIREUP_STRUCT_INIT(&e);
    if (wireup_error_get(w, i, &e) == WIREUP_OK && e.peer == peer && e.lane == lane) return &(*out = e);
  }
  return nullptr;
}

TEST(CapiSim, EveryLaneConnectsAndEveryQpIsDestroyedOnce) {
  SimJob job(4, 4, prov::sim::SimConfig{}, {});
  ASSERT_NO_FATAL_FAILURE(job.start(2));
  Status s = job.run(300s);  // the RTU linger (150 s) included
  ASSERT_TRUE(s) << s.message();
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(wireup_result_count(job.w(r)), 6u) << "rank " << r;
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
    EXPECT_EQ(job.t(r).given.size(), 6u);
  }
  job.teardown();
  for (uint32_t r = 0; r < 4; ++r) expect_clean(job.t(r), ("rank " + std::to_string(r)).c_str());
}

// After every RTU from rank 0 to rank 1 was lost: rank 0 (active) had handed its result for
// rank 1 lane 0 over; the loss is reported on both sides, the result stays, and no QP is
// released that the transport holds or destroyed twice.
void expect_lane_lost_and_reported(SimJob& job) {
  Transport& a = job.t(0);
  Transport& p = job.t(1);
  // The active side: its result for rank 1 was handed over long before the notice came.
  EXPECT_EQ(a.lanes.count({1u, 0u}), 1u) << "the result for rank 1 lane 0 was not handed over";
  // Then the CM's own DISCONNECTED / TIMEWAIT_EXIT of the id wireup disconnected may follow.
  size_t lost = 0;
  std::string seen;
  for (const Event& e : a.events) {
    seen += " " + e.name + "(" + std::to_string(e.peer) + "," + std::to_string(e.lane) + ")";
    if (e.type != WIREUP_EVENT_RTU_LOST) continue;
    ++lost;
    EXPECT_EQ(e.peer, 1u);
    EXPECT_EQ(e.lane, 0u);
    EXPECT_EQ(e.name, "RTU_LOST");
    EXPECT_EQ(e.status, -ECONNRESET);
  }
  EXPECT_EQ(lost, 1u) << "the lane loss must be reported to the active side's transport exactly once; events:"
                      << seen;
  wireup_tally_t tally;
  WIREUP_STRUCT_INIT(&tally);
  uint64_t refused = 0;
  for (size_t i = 0; i < wireup_tally_count(job.w(0)); ++i)
    if (wireup_tally_get(job.w(0), i, &tally) == WIREUP_OK && tally.group == WIREUP_TALLY_REJECTS_SENT &&
        tally.key == WIREUP_REJECT_REPAIR_REFUSED) {
      EXPECT_STREQ(tally.key_name, "repair_refused");
      refused = tally.count;
    }
  EXPECT_EQ(refused, 1u) << "the notice must be answered repair_refused";
  // The same through the counters, on both sides.
  wireup_counters_t ca, cp;
  WIREUP_STRUCT_INIT(&ca);
  WIREUP_STRUCT_INIT(&cp);
  ASSERT_EQ(wireup_counters_get(job.w(0), &ca), WIREUP_OK);
  ASSERT_EQ(wireup_counters_get(job.w(1), &cp), WIREUP_OK);
  EXPECT_EQ(ca.rtu_lost_received, 1u);
  EXPECT_EQ(ca.repairs, 0u) << "a handed-over lane is never torn down to reconnect";
  EXPECT_EQ(ca.repairs_refused, 1u);
  EXPECT_GE(cp.rtu_lost_sent, 1u);
  // The passive side: no connection, an error saying why.
  EXPECT_EQ(p.lanes.count({0u, 0u}), 0u);
  wireup_peer_error_t e;
  WIREUP_STRUCT_INIT(&e);
  e.message = "";
  EXPECT_NE(find_error(job.w(1), 0, 0, &e), nullptr) << "the passive side reports nothing for rank 0 lane 0";
  EXPECT_EQ(e.kind, WIREUP_ERROR_RTU_LOST) << e.message;
  EXPECT_NE(std::string(e.message).find("could not reconnect"), std::string::npos) << e.message;
  std::printf("rank 0 events:%s\nrank 1: %s\n", seen.c_str(), e.message);
  job.teardown();
  expect_clean(a, "rank 0");
  expect_clean(p, "rank 1");
  std::printf("rank 0: %u QPs made, %u released; rank 1: %u made, %u released\n", a.created, a.released, p.created,
              p.released);
}

// Rank 0 initiates to rank 1 and is still wiring up (it waits for rank 2, which never comes)
// when rank 1's REP retries run out: the engine would repair the lane by tearing it down and
// reconnecting -- but the transport has been handed that lane's QP already. The repair is
// refused and the loss reported instead. (With the repair allowed, as before, this fails:
// no event, a second result for the lane, the first one withdrawn under the transport.)
TEST(CapiSim, ARepairOfAHandedOverLaneIsRefusedAndReported) {
  SimJob job(3, 2, rtu_flap(0, 1, 95s), {"engine.max_attempts=4", "engine.wireup_timeout_ms=200000"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  Status s = job.run(400s);
  ASSERT_TRUE(s) << s.message();
  expect_lane_lost_and_reported(job);
}

// Rank 0's wireup is over when the notice comes (its RTU linger answers it): the same answer.
TEST(CapiSim, ALaneLostAfterWireupEndedIsReported) {
  SimJob job(2, 2, rtu_flap(0, 1, 95s), {"engine.wireup_timeout_ms=300000"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  Status s = job.run(400s);
  ASSERT_TRUE(s) << s.message();
  expect_lane_lost_and_reported(job);
}

// Rank 0's device goes after its results were handed over (a bulk wireup, then an HCA
// removed): each connection's DEVICE_REMOVAL reaches the transport as an event, and every
// result stays readable at its index, with its QP (the transport's, to destroy) and `lost`
// saying why. Before results kept their QP this way, wireup_result_get called such a result
// INTERNAL ("no longer that connection in the engine") and the C++ wrapper threw.
TEST(CapiSim, ADeviceRemovedAfterHandOverLeavesEachResultReadableAndMarkedLost) {
  SimJob job(3, 3, prov::sim::SimConfig{}, {});
  ASSERT_NO_FATAL_FAILURE(job.start(2));
  Status s = job.run(300s);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(wireup_result_count(job.w(0)), 4u);
  job.fabric().remove_device(0, 0, job.fabric().now() + 1ms);
  auto removals = [&] {
    size_t n = 0;
    for (const Event& e : job.t(0).events) n += e.type == WIREUP_EVENT_DEVICE_REMOVAL && e.peer != WIREUP_EVENT_PEER_LISTENER;
    return n;
  };
  s = job.run(60s, false, [&] { return removals() >= 4; });
  ASSERT_TRUE(s) << s.message() << " (" << removals() << " DEVICE_REMOVAL events on rank 0)";
  for (size_t i = 0; i < wireup_result_count(job.w(0)); ++i) {
    wireup_result_t r;
    WIREUP_STRUCT_INIT(&r);
    ASSERT_EQ(wireup_result_get(job.w(0), i, &r), WIREUP_OK) << "result " << i << ": " << wireup_last_error(job.w(0));
    EXPECT_TRUE(WIREUP_HAS_FIELD(&r, lost));
    EXPECT_EQ(r.lost, WIREUP_ERROR_DEVICE_REMOVAL) << "result " << i;
    EXPECT_EQ(job.t(0).given.count(seam_qp(r.qp)), 1u) << "result " << i << ": the QP handed over, still there";
  }
  // The peers' results with rank 0 may still stand (nothing told them yet); theirs with each
  // other do.
  for (uint32_t rk : {1u, 2u})
    for (size_t i = 0; i < wireup_result_count(job.w(rk)); ++i) {
      wireup_result_t r;
      WIREUP_STRUCT_INIT(&r);
      ASSERT_EQ(wireup_result_get(job.w(rk), i, &r), WIREUP_OK) << wireup_last_error(job.w(rk));
      if (r.peer != 0) {
        EXPECT_EQ(r.lost, 0) << "rank " << rk << " result " << i;
      }
    }
  job.teardown();
  for (uint32_t r = 0; r < 3; ++r) expect_clean(job.t(r), ("rank " + std::to_string(r)).c_str());
}

// A factory that hands over a QP it already moved to INIT: named, and the QP handed back.
TEST(CapiSim, AQpNotFreshFromTheFactoryIsNamedAndHandedBack) {
  SimJob job(2, 2, prov::sim::SimConfig{}, {"engine.max_attempts=2", "engine.wireup_timeout_ms=5000"});
  job.t(0).init_first = job.t(1).init_first = true;
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  Status s = job.run(300s);
  ASSERT_TRUE(s) << s.message();
  wireup_peer_error_t e;
  WIREUP_STRUCT_INIT(&e);
  e.message = "";
  wireup_t* active = nullptr;
  for (uint32_t r = 0; r < 2; ++r) {
    wireup_peer_error_t x;
    WIREUP_STRUCT_INIT(&x);
    if (find_error(job.w(r), 1 - r, 0, &x) != nullptr && x.active) active = job.w(r), e = x;
  }
  ASSERT_NE(active, nullptr) << "no error on the active side";
  EXPECT_NE(std::string(e.message).find("the QP is in state INIT, not RESET"), std::string::npos) << e.message;
  std::printf("active side: %s\n", e.message);
  EXPECT_EQ(wireup_result_count(job.w(0)) + wireup_result_count(job.w(1)), 0u);
  job.teardown();
  for (uint32_t r = 0; r < 2; ++r) {
    expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
    EXPECT_EQ(job.t(r).released, job.t(r).created) << "every QP wireup did not use goes back to the transport";
  }
}

size_t count(const Transport& t, wireup_lane_event_type_t type, uint32_t peer) {
  size_t n = 0;
  for (const wireup_lane_event_t& e : t.lane_events) n += e.type == type && e.peer == peer;
  return n;
}

// On demand through the C API: two ranks ask for each other at once (crossing) and a third
// asks one of them; every READY names its result; a disconnect closes the lane on both sides
// without taking the transport's QP; the lane connects again, and every QP is destroyed once.
TEST(CapiSim, OnDemandCrossingDisconnectAndReconnect) {
  SimJob job(3, 3, prov::sim::SimConfig{}, {"engine.mode=on_demand"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  ASSERT_EQ(wireup_connect(job.w(0), 1), WIREUP_OK) << wireup_last_error(job.w(0));
  ASSERT_EQ(wireup_connect(job.w(1), 0), WIREUP_OK) << wireup_last_error(job.w(1));
  ASSERT_EQ(wireup_connect(job.w(2), 0), WIREUP_OK) << wireup_last_error(job.w(2));
  ASSERT_EQ(wireup_connect(job.w(2), 2), WIREUP_ERR_INVALID_ARGUMENT);
  Status s = job.run(60s, false);
  ASSERT_TRUE(s) << s.message();
  for (uint32_t r = 0; r < 3; ++r) {
    Transport& t = job.t(r);
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
    for (const wireup_lane_event_t& e : t.lane_events) {
      ASSERT_EQ(e.type, WIREUP_LANE_EVENT_READY) << "rank " << r;
      wireup_result_t res;
      WIREUP_STRUCT_INIT(&res);
      ASSERT_EQ(wireup_result_get(job.w(r), e.index, &res), WIREUP_OK) << wireup_last_error(job.w(r));
      EXPECT_EQ(res.peer, e.peer);
      EXPECT_EQ(res.lane, e.lane);
      EXPECT_EQ(wireup_lane_state(job.w(r), e.peer, e.lane), WIREUP_LANE_READY);
    }
  }
  EXPECT_EQ(job.t(0).lane_events.size(), 2u);
  EXPECT_EQ(job.t(1).lane_events.size(), 1u);
  EXPECT_EQ(wireup_lane_state(job.w(1), 2, 0), WIREUP_LANE_IDLE) << "nobody asked for 1-2";
  wireup_counters_t c0, c1;
  WIREUP_STRUCT_INIT(&c0);
  WIREUP_STRUCT_INIT(&c1);
  ASSERT_EQ(wireup_counters_get(job.w(0), &c0), WIREUP_OK);
  ASSERT_EQ(wireup_counters_get(job.w(1), &c1), WIREUP_OK);
  EXPECT_EQ(c0.crossed_yielded + c1.crossed_yielded, 1u) << "0 and 1 crossed once";
  const unsigned released_before = job.t(0).released + job.t(1).released;

  ASSERT_EQ(wireup_disconnect(job.w(0), 1), WIREUP_OK) << wireup_last_error(job.w(0));
  EXPECT_EQ(wireup_lane_state(job.w(0), 1, 0), WIREUP_LANE_IDLE);
  s = job.run(60s, false, [&] { return wireup_lane_state(job.w(1), 0, 0) == WIREUP_LANE_IDLE; });
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(count(job.t(0), WIREUP_LANE_EVENT_CLOSED, 1), 1u);
  EXPECT_EQ(count(job.t(1), WIREUP_LANE_EVENT_CLOSED, 0), 1u) << "the peer sees the disconnect";
  EXPECT_EQ(job.t(0).released + job.t(1).released, released_before) << "handed-over QPs stay the transport's";

  ASSERT_EQ(wireup_connect(job.w(1), 0), WIREUP_OK) << wireup_last_error(job.w(1));
  s = job.run(60s, false);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(count(job.t(0), WIREUP_LANE_EVENT_READY, 1), 2u);
  EXPECT_EQ(count(job.t(1), WIREUP_LANE_EVENT_READY, 0), 2u);
  EXPECT_EQ(wireup_lane_state(job.w(1), 0, 0), WIREUP_LANE_READY);
  EXPECT_EQ(wireup_result_count(job.w(0)), 2u) << "the lane connected again keeps its result index";
  job.teardown();
  for (uint32_t r = 0; r < 3; ++r) expect_clean(job.t(r), ("rank " + std::to_string(r)).c_str());
}

// The transport's QP as the engine holds it (capi::TransportQp): when the engine lets go, the
// release callback comes, once, after the view of the QP is gone -- unless the C API handed
// the QP over, and never does the wrapper destroy the QP itself.
TEST(CapiTransportQp, ReleasedWhenLetGoUnlessHandedOver) {
  prov::sim::SimFabric fab(prov::sim::SimConfig{});
  fab.add_node();
  auto devs = fab.provider(0).devices();
  ASSERT_TRUE(devs && !devs->empty());
  prov::Device& dev = *devs->front();
  auto pd = dev.alloc_pd();
  auto cq = dev.create_cq(8, false);
  ASSERT_TRUE(pd && cq);
  prov::QpInitAttr a;
  a.send_cq = a.recv_cq = cq->get();
  a.caps = prov::QpCaps{8, 8, 1, 1, 0};
  auto made = (*pd)->create_qp(a);
  ASSERT_TRUE(made) << made.error().message();
  prov::Qp& qp = **made;  // the transport's: it outlives every wrapper below
  auto adapter = capi_seam::seam_qp_adapter();
  int released = 0;
  auto wrap = [&] {
    auto view = adapter->view(as_ibv_qp(&qp), dev);
    EXPECT_TRUE(view) << view.error().message();
    return std::make_unique<capi::TransportQp>(std::move(view).value(), as_ibv_qp(&qp), [&] { ++released; });
  };

  auto let_go = wrap();
  EXPECT_EQ(let_go->qpn(), qp.qpn());
  EXPECT_EQ(let_go->native(), static_cast<void*>(as_ibv_qp(&qp))) << "the transport's own handle";
  let_go.reset();
  EXPECT_EQ(released, 1) << "a QP never handed over goes back to the transport";
  EXPECT_EQ(qp.state(), prov::QpState::reset) << "and is still there for it to destroy";

  auto handed = wrap();
  handed->hand_over();
  EXPECT_TRUE(handed->handed_over());
  handed.reset();
  EXPECT_EQ(released, 1) << "no release callback for a QP the transport was given";
}

// On the handle: the release callback comes for every QP the transport was not given (each
// attempt at a rank without a process), never for one it was -- neither when its lane closes
// nor at wireup_destroy -- and a closed lane's result stays what was handed over. The engine's
// record of the hand-over (Engine::hand_over) and the QP's (TransportQp::hand_over) both
// count: without the first, closing the lane would withdraw the result under the transport
// (wireup_result_get fails on it); without the second, the QP would be released.
TEST(CapiSim, OnlyQpsNeverHandedOverAreReleased) {
  constexpr uint32_t kLanes = 2;
  SimJob job(3, 2, prov::sim::SimConfig{},
             {"engine.mode=on_demand", "engine.max_attempts=2", "engine.wireup_timeout_ms=3000"});
  ASSERT_NO_FATAL_FAILURE(job.start(kLanes));
  Transport& t = job.t(0);
  auto lanes_to = [&](uint32_t r, uint32_t peer, wireup_lane_state_t want) {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (wireup_lane_state(job.w(r), peer, l) != want) return false;
    return true;
  };
  ASSERT_EQ(wireup_connect(job.w(0), 1), WIREUP_OK) << wireup_last_error(job.w(0));
  ASSERT_EQ(wireup_connect(job.w(0), 2), WIREUP_OK) << wireup_last_error(job.w(0));  // nobody there
  Status s = job.run(60s, false, [&] { return lanes_to(0, 1, WIREUP_LANE_READY) && lanes_to(0, 2, WIREUP_LANE_FAILED); });
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(t.given.size(), kLanes) << "the lanes to rank 1 were handed over";
  ASSERT_GT(t.created, kLanes) << "the attempts at rank 2 made QPs too";
  EXPECT_EQ(t.released, t.created - kLanes) << "every attempt at rank 2 went back, nothing else";

  const unsigned released_before = t.released;
  ASSERT_EQ(wireup_disconnect(job.w(0), 1), WIREUP_OK) << wireup_last_error(job.w(0));
  s = job.run(60s, false, [&] { return lanes_to(0, 1, WIREUP_LANE_IDLE) && lanes_to(1, 0, WIREUP_LANE_IDLE); });
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(t.released, released_before) << "a closed lane's QP stays the transport's";
  for (prov::Qp* q : t.given) EXPECT_EQ(t.live.count(q), 1u) << "a result's QP was destroyed under the transport";
  t.reread_results(job.w(0));  // each index still reads the QP handed over there

  job.teardown();  // wireup_destroy, then the transport destroys its results' QPs
  EXPECT_EQ(t.released, t.created - kLanes) << "wireup_destroy released a QP the transport was given";
  for (uint32_t r = 0; r < 2; ++r) expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
}

// On demand, a lane connected, closed and connected again, cycle after cycle, keeps one result
// index and one error index: the handle's tables hold one result and one error per (peer, lane)
// ever used, nothing per cycle. Every READY names the lane's index, and the result there is
// the new connection (a QP never seen before, its own QPN); the closed connections' QPs stay
// the transport's. The counters still count every connection. A lane to a rank without a
// process fails each time it is asked, and its error keeps its index too.
TEST(CapiSim, OnDemandReconnectsKeepEachLanesResultAndErrorIndex) {
  constexpr uint32_t kLanes = 2, kCycles = 24;
  SimJob job(3, 2, prov::sim::SimConfig{},
             {"engine.mode=on_demand", "engine.max_attempts=2", "engine.wireup_timeout_ms=3000"});
  ASSERT_NO_FATAL_FAILURE(job.start(kLanes));
  std::map<uint32_t, size_t> index_of_lane[2];  // per rank: lane -> the index its READYs name
  std::set<prov::Qp*> qps[2];                   // per rank: every QP a READY's result showed
  auto lanes_are = [&](wireup_lane_state_t want) {
    for (uint32_t l = 0; l < kLanes; ++l)
      if (wireup_lane_state(job.w(0), 1, l) != want || wireup_lane_state(job.w(1), 0, l) != want) return false;
    return true;
  };
  for (uint32_t c = 0; c < kCycles; ++c) {
    const size_t seen[2] = {job.t(0).lane_events.size(), job.t(1).lane_events.size()};
    const uint32_t asker = c % 2;
    ASSERT_EQ(wireup_connect(job.w(asker), 1 - asker), WIREUP_OK) << wireup_last_error(job.w(asker));
    if (c % 3 == 0) {
      ASSERT_EQ(wireup_connect(job.w(1 - asker), asker), WIREUP_OK);  // crossing
    }
    Status s = job.run(60s, false, [&] { return lanes_are(WIREUP_LANE_READY); });
    ASSERT_TRUE(s) << "cycle " << c << ": " << s.message();
    for (uint32_t r = 0; r < 2; ++r) {
      EXPECT_EQ(wireup_result_count(job.w(r)), kLanes) << "rank " << r << " cycle " << c << ": one result per lane";
      size_t ready = 0;
      for (size_t k = seen[r]; k < job.t(r).lane_events.size(); ++k) {
        const wireup_lane_event_t& e = job.t(r).lane_events[k];
        if (e.type != WIREUP_LANE_EVENT_READY) continue;
        ++ready;
        auto [it, first] = index_of_lane[r].emplace(e.lane, e.index);
        EXPECT_EQ(it->second, e.index) << "rank " << r << " lane " << e.lane << " cycle " << c << ": its index moved";
        wireup_result_t res;
        WIREUP_STRUCT_INIT(&res);
        ASSERT_EQ(wireup_result_get(job.w(r), e.index, &res), WIREUP_OK) << wireup_last_error(job.w(r));
        EXPECT_EQ(res.peer, 1 - r);
        EXPECT_EQ(res.lane, e.lane);
        ASSERT_NE(res.qp, nullptr);
        EXPECT_EQ(seam_qp(res.qp)->qpn(), res.local_qpn);
        EXPECT_TRUE(qps[r].insert(seam_qp(res.qp)).second)
            << "rank " << r << " lane " << e.lane << " cycle " << c << ": the result shows an earlier connection's QP";
      }
      EXPECT_EQ(ready, kLanes) << "rank " << r << " cycle " << c << ": a READY per lane";
    }
    const uint32_t closer = (c / 2) % 2;
    ASSERT_EQ(wireup_disconnect(job.w(closer), 1 - closer), WIREUP_OK) << wireup_last_error(job.w(closer));
    s = job.run(60s, false, [&] { return lanes_are(WIREUP_LANE_IDLE); });
    ASSERT_TRUE(s) << "cycle " << c << ": " << s.message();
  }
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(qps[r].size(), size_t{kLanes} * kCycles) << "rank " << r;
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
    wireup_counters_t cn;
    WIREUP_STRUCT_INIT(&cn);
    ASSERT_EQ(wireup_counters_get(job.w(r), &cn), WIREUP_OK);
    EXPECT_EQ(cn.established_active + cn.established_passive, uint64_t{kLanes} * kCycles) << "rank " << r;
    EXPECT_EQ(cn.lanes_closed, uint64_t{kLanes} * kCycles) << "rank " << r;
  }

  // Rank 2 has no process: each ask of its lanes fails, and each lane's error keeps its index.
  std::map<uint32_t, size_t> error_of_lane;
  for (uint32_t k = 0; k < 3; ++k) {
    const size_t seen = job.t(0).lane_events.size();
    ASSERT_EQ(wireup_connect(job.w(0), 2), WIREUP_OK) << wireup_last_error(job.w(0));
    Status s = job.run(60s, false, [&] {
      for (uint32_t l = 0; l < kLanes; ++l)
        if (wireup_lane_state(job.w(0), 2, l) != WIREUP_LANE_FAILED) return false;
      return true;
    });
    ASSERT_TRUE(s) << "ask " << k << ": " << s.message();
    EXPECT_EQ(wireup_error_count(job.w(0)), kLanes) << "ask " << k << ": one error per lane";
    EXPECT_EQ(wireup_result_count(job.w(0)), kLanes) << "ask " << k;
    size_t failed = 0;
    for (size_t i = seen; i < job.t(0).lane_events.size(); ++i) {
      const wireup_lane_event_t& e = job.t(0).lane_events[i];
      if (e.type != WIREUP_LANE_EVENT_FAILED) continue;
      ++failed;
      auto [it, first] = error_of_lane.emplace(e.lane, e.index);
      EXPECT_EQ(it->second, e.index) << "lane " << e.lane << " ask " << k << ": its error index moved";
      wireup_peer_error_t pe;
      WIREUP_STRUCT_INIT(&pe);
      ASSERT_EQ(wireup_error_get(job.w(0), e.index, &pe), WIREUP_OK) << wireup_last_error(job.w(0));
      EXPECT_EQ(pe.peer, 2u);
      EXPECT_EQ(pe.lane, e.lane);
      EXPECT_NE(pe.message, nullptr);
    }
    EXPECT_EQ(failed, kLanes) << "ask " << k;
  }
  wireup_counters_t c0;
  WIREUP_STRUCT_INIT(&c0);
  ASSERT_EQ(wireup_counters_get(job.w(0), &c0), WIREUP_OK);
  EXPECT_EQ(c0.failed, 3u * kLanes) << "every lane given up is counted";
  job.teardown();
  for (uint32_t r = 0; r < 2; ++r) expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
}

TEST(CapiSim, AContextOverAProviderNeedsItsListenAddress) {
  prov::sim::SimFabric fab;
  fab.add_node();
  auto devs = fab.provider(0).devices();
  ASSERT_TRUE(devs);
  wireup_context_t* c = nullptr;
  EXPECT_EQ(capi_seam::context_create(fab.provider(0), *devs->front(), nullptr, &c), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(wireup_last_error(nullptr)).find("listen_ip"), std::string::npos)
      << wireup_last_error(nullptr);
}

// --- the job key after wireup_create (wireup_set_job_key) ---
// Open MPI's modex publishes every address before its one fence and gives nothing back before
// it: its BTL creates the handle and publishes the address without a key, and learns the key
// rank 0 drew only after the fence. wireup_create takes key 0 (params and config) for that;
// wireup_start waits for wireup_set_job_key.

constexpr uint64_t kLateKey = 0x5eed0fc0ffee0002ULL;

// The count of one tally (group, key) of a handle; 0 if it has none.
uint64_t tally_of(wireup_t* w, wireup_tally_group_t group, uint32_t key) {
  for (size_t i = 0; i < wireup_tally_count(w); ++i) {
    wireup_tally_t t;
    WIREUP_STRUCT_INIT(&t);
    if (wireup_tally_get(w, i, &t) == WIREUP_OK && t.group == group && t.key == key) return t.count;
  }
  return 0;
}

// Misuse, in call order, on a handle created without a key: start refused naming the call
// that gives it, key 0 refused (and the handle still waits for one), the key taken, start,
// then no key change any more.
TEST(CapiSim, AHandleCreatedWithoutAJobKeyStartsOnlyOnceItIsSet) {
  SimJob job(2, 2, prov::sim::SimConfig{}, {});
  job.keys({0, 0}, {});
  ASSERT_NO_FATAL_FAILURE(job.create(1));  // key 0 in params and config: accepted
  ASSERT_NE(job.w(0), nullptr);
  EXPECT_STREQ(wireup_context_config_value(job.ctx(0), "engine.job_key"), "\"0x0\"");
  ASSERT_NO_FATAL_FAILURE(job.set_peers());
  wireup_t* w = job.w(0);

  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE);
  const std::string no_key = wireup_last_error(w);
  EXPECT_EQ(no_key.rfind("wireup_start: ", 0), 0u) << no_key;
  EXPECT_NE(no_key.find("wireup_set_job_key"), std::string::npos) << no_key;
  EXPECT_EQ(wireup_progress(w, nullptr), WIREUP_ERR_INVALID_STATE) << "the refused start did not start";

  EXPECT_EQ(wireup_set_job_key(w, 0), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(wireup_last_error(w)), "wireup_set_job_key: job_key is 0: a job's key is never 0");
  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE) << "key 0 is no key";
  EXPECT_NE(std::string(wireup_last_error(w)).find("wireup_set_job_key"), std::string::npos) << wireup_last_error(w);

  EXPECT_EQ(wireup_set_job_key(nullptr, kLateKey), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(wireup_last_error(nullptr)), "wireup_set_job_key: the wireup handle is NULL");

  ASSERT_EQ(wireup_set_job_key(w, kLateKey), WIREUP_OK) << wireup_last_error(w);
  ASSERT_EQ(wireup_set_job_key(w, kLateKey), WIREUP_OK) << "again before start: replaced";
  ASSERT_EQ(wireup_start(w), WIREUP_OK) << wireup_last_error(w);
  EXPECT_EQ(wireup_set_job_key(w, kLateKey ^ 1), WIREUP_ERR_INVALID_STATE);
  EXPECT_EQ(std::string(wireup_last_error(w)), "wireup_set_job_key: wireup_start() was called: the key is fixed");
  EXPECT_EQ(wireup_start(w), WIREUP_ERR_INVALID_STATE);
  EXPECT_EQ(std::string(wireup_last_error(w)), "wireup_start: already started");
  job.teardown();
  for (uint32_t r = 0; r < 2; ++r) expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
}

// Both ranks are created without a key, publish their addresses, then set the same key: every
// lane connects. A key change refused after start (rank 0 tries another key) leaves the key
// as it was: the connections are still made.
TEST(CapiSim, TwoRanksThatSetTheSameJobKeyAfterCreateConnect) {
  SimJob job(2, 2, prov::sim::SimConfig{}, {});
  job.keys({0, 0}, {kLateKey, kLateKey});
  ASSERT_NO_FATAL_FAILURE(job.start(2));
  EXPECT_EQ(wireup_set_job_key(job.w(0), kLateKey ^ 0xbad), WIREUP_ERR_INVALID_STATE);
  EXPECT_EQ(wireup_set_job_key(job.w(1), kLateKey), WIREUP_ERR_INVALID_STATE) << "even the same key";
  Status s = job.run(300s);
  ASSERT_TRUE(s) << s.message();
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(wireup_result_count(job.w(r)), 2u) << "rank " << r;
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
    wireup_counters_t c;
    WIREUP_STRUCT_INIT(&c);
    ASSERT_EQ(wireup_counters_get(job.w(r), &c), WIREUP_OK);
    EXPECT_EQ(c.strangers, 0u) << "rank " << r;
    EXPECT_EQ(tally_of(job.w(r), WIREUP_TALLY_REJECTS_SENT, WIREUP_REJECT_WRONG_JOB_KEY), 0u) << "rank " << r;
  }
  job.teardown();
  for (uint32_t r = 0; r < 2; ++r) expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
}

// The key set later is the job's key itself, the one another rank may pass to wireup_create,
// and it replaces a key given at create: rank 0 passes it at create, rank 1 sets it after a
// create without one, rank 2 sets it over another key it was created with. All connect.
TEST(CapiSim, AJobKeySetAfterCreateIsTheSameKeyAsOneGivenAtCreate) {
  SimJob job(3, 3, prov::sim::SimConfig{}, {});
  job.keys({kLateKey, 0, kLateKey ^ 0xbad}, {0, kLateKey, kLateKey});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  Status s = job.run(300s);
  ASSERT_TRUE(s) << s.message();
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(wireup_result_count(job.w(r)), 2u) << "rank " << r;
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
  }
  job.teardown();
  for (uint32_t r = 0; r < 3; ++r) expect_clean(job.t(r), ("rank " + std::to_string(r)).c_str());
}

// The race the modex leaves: ranks 0 and 2 have the key and start while rank 1, created
// without one and its address published, has not read it yet; rank 0 initiates to rank 1. For
// 2 s (virtual) ranks 0 and 2 progress alone; rank 1's handle reads nothing before its start.
// Then rank 1 sets the key and starts: every lane connects, and nobody was a stranger (the
// request that waited for rank 1 is read under the key rank 1 has by then).
TEST(CapiSim, ARankStillWaitingForItsJobKeyIsConnectedOnceItStarts) {
  SimJob job(3, 3, prov::sim::SimConfig{}, {});
  job.keys({kLateKey, 0, kLateKey}, {});
  ASSERT_NO_FATAL_FAILURE(job.create(1));
  ASSERT_NO_FATAL_FAILURE(job.set_peers());
  ASSERT_EQ(wireup_start(job.w(0)), WIREUP_OK) << wireup_last_error(job.w(0));
  ASSERT_EQ(wireup_start(job.w(2)), WIREUP_OK) << wireup_last_error(job.w(2));
  const Nanos t0 = job.fabric().now();
  while (job.fabric().now() < t0 + 2s) {
    for (uint32_t r : {0u, 2u}) ASSERT_EQ(wireup_progress(job.w(r), nullptr), WIREUP_OK) << wireup_last_error(job.w(r));
    job.fabric().run_for(1ms);
  }
  EXPECT_EQ(wireup_result_count(job.w(1)), 0u);
  EXPECT_EQ(wireup_lane_state(job.w(0), 1, 0), WIREUP_LANE_CONNECTING) << "rank 0's request to rank 1 is out";
  ASSERT_EQ(wireup_set_job_key(job.w(1), kLateKey), WIREUP_OK) << wireup_last_error(job.w(1));
  ASSERT_EQ(wireup_start(job.w(1)), WIREUP_OK) << wireup_last_error(job.w(1));
  Status s = job.run(300s);
  ASSERT_TRUE(s) << s.message();
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(wireup_result_count(job.w(r)), 2u) << "rank " << r;
    EXPECT_EQ(wireup_error_count(job.w(r)), 0u) << "rank " << r;
    wireup_counters_t c;
    WIREUP_STRUCT_INIT(&c);
    ASSERT_EQ(wireup_counters_get(job.w(r), &c), WIREUP_OK);
    EXPECT_EQ(c.strangers, 0u) << "rank " << r;
  }
  job.teardown();
  for (uint32_t r = 0; r < 3; ++r) expect_clean(job.t(r), ("rank " + std::to_string(r)).c_str());
}

// Two ranks created without a key that then set different keys are strangers to each other,
// as two ranks created with different keys (CapiVm.WrongJobKeyIsRejectedAsAStranger): the
// passive side refuses every request as wrong_job_key before any QP exists and times out; the
// active side cannot authenticate that refusal, retries it to its last attempt and reports
// the claimed reason in the message only.
TEST(CapiSim, TwoRanksThatSetDifferentJobKeysDoNotConnect) {
  SimJob job(2, 2, prov::sim::SimConfig{},
             {"engine.wireup_timeout_ms=3000", "engine.max_attempts=2", "engine.backoff_initial_ms=50"});
  job.keys({0, 0}, {kLateKey, kLateKey ^ 0xbad});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  Status s = job.run(60s);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(wireup_result_count(job.w(0)) + wireup_result_count(job.w(1)), 0u);
  ASSERT_EQ(wireup_error_count(job.w(0)), 1u);
  ASSERT_EQ(wireup_error_count(job.w(1)), 1u);
  wireup_peer_error_t e0, e1;
  WIREUP_STRUCT_INIT(&e0);
  WIREUP_STRUCT_INIT(&e1);
  ASSERT_EQ(wireup_error_get(job.w(0), 0, &e0), WIREUP_OK);
  ASSERT_EQ(wireup_error_get(job.w(1), 0, &e1), WIREUP_OK);
  ASSERT_NE(e0.active, e1.active);
  const wireup_peer_error_t& active = e0.active ? e0 : e1;
  const wireup_peer_error_t& passive = e0.active ? e1 : e0;
  wireup_t* passive_w = e0.active ? job.w(1) : job.w(0);
  EXPECT_EQ(active.kind, WIREUP_ERROR_REJECTED) << active.message;
  EXPECT_EQ(active.status, WIREUP_ERR_REJECTED);
  EXPECT_EQ(active.peer_reason, WIREUP_REJECT_NONE) << "an unauthenticated refusal is never taken: " << active.message;
  EXPECT_NE(std::string(active.message).find("its reason \"wrong_job_key\" not taken"), std::string::npos)
      << active.message;
  EXPECT_EQ(active.attempts, 2u) << active.message;
  EXPECT_EQ(passive.kind, WIREUP_ERROR_TIMED_OUT) << passive.message;
  EXPECT_EQ(tally_of(passive_w, WIREUP_TALLY_REJECTS_SENT, WIREUP_REJECT_WRONG_JOB_KEY), 2u)
      << "each attempt refused as wrong_job_key";
  wireup_counters_t c;
  WIREUP_STRUCT_INIT(&c);
  ASSERT_EQ(wireup_counters_get(passive_w, &c), WIREUP_OK);
  EXPECT_EQ(c.strangers, 2u);
  job.teardown();
  for (uint32_t r = 0; r < 2; ++r) expect_clean(job.t(r), r == 0 ? "rank 0" : "rank 1");
}

// --- the device's async events: who reads them (device.async_events) ---

struct DeviceEventSeen {
  int type;
  std::string name;
  uint32_t qpn;
  uint8_t port;
  int known;
  uint32_t peer;
  wireup_device_object_t object;
  void* handle;
};

void on_device_event(void* arg, const wireup_device_event_t* ev) {
  static_cast<std::vector<DeviceEventSeen>*>(arg)->push_back(
      DeviceEventSeen{ev->type, ev->name, ev->qpn, ev->port, ev->known, ev->peer, ev->object, ev->handle});
}

// One wireup_progress() on each handle, then `step` of virtual time, until `stop` or `bound`.
template <class Stop>
bool progress_until(SimJob& job, uint32_t ranks, Nanos bound, Stop stop, Nanos step = 1ms) {
  const Nanos until = job.fabric().now() + bound;
  while (job.fabric().now() < until) {
    for (uint32_t r = 0; r < ranks; ++r) {
      int k = 0;
      EXPECT_EQ(wireup_progress(job.w(r), &k), WIREUP_OK) << wireup_last_error(job.w(r));
    }
    if (stop()) return true;
    job.fabric().run_for(step);
  }
  return false;
}

// Every RTU from rank 0 (the initiator of the pair) to rank 1, for good: rank 1's QP waits in
// RTR until COMM_EST or the CM's REP retries.
prov::sim::SimConfig rtus_lost_for_good() { return rtu_flap(0, 1, Nanos::max()); }

// Rank 0 connected, rank 1 waiting for the RTU; then rank 0's transport sends on its QP, which
// makes rank 1's QP raise COMM_EST (the fabric delivers it at the next step).
void connect_and_send(SimJob& job, std::vector<char>& mem, std::unique_ptr<prov::Mr>& mr) {
  ASSERT_TRUE(progress_until(job, 2, 5s, [&] { return wireup_result_count(job.w(0)) == 1; }));
  ASSERT_EQ(wireup_result_count(job.w(1)), 0u);
  job.t(0).read_results(job.w(0));
  wireup_result_t r;
  WIREUP_STRUCT_INIT(&r);
  ASSERT_EQ(wireup_result_get(job.w(0), 0, &r), WIREUP_OK);
  mem.assign(64, 'x');
  auto m = job.t(0).pd->reg_mr(mem.data(), mem.size(), prov::access::local_write);
  ASSERT_TRUE(m) << m.error().message();
  mr = std::move(m).value();
  ASSERT_TRUE(seam_qp(r.qp)->post_send(1, prov::Sge{reinterpret_cast<uint64_t>(mem.data()), 16, mr->lkey()}, true));
}

// Transport mode: the library reads nothing of the device (the raised COMM_EST stays queued
// for the transport however long wireup progresses); the transport reads it, hands it over
// with wireup_context_async_event, and the passive side is established long before the CM's
// first REP retry (6 s). The control below shows the same without the hand-over.
TEST(CapiSimAsync, TransportModeTheTransportReadsCommEstAndHandsItOver) {
  SimJob job(2, 2, rtus_lost_for_good(), {"device.async_events=transport", "engine.rtu_linger_ms=0"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  std::vector<DeviceEventSeen> seen;
  ASSERT_EQ(wireup_on_device_event(job.w(1), on_device_event, &seen), WIREUP_OK);
  EXPECT_STREQ(wireup_context_config_value(job.ctx(1), "device.async_events"), "\"transport\"");
  std::vector<char> mem;
  std::unique_ptr<prov::Mr> mr;
  ASSERT_NO_FATAL_FAILURE(connect_and_send(job, mem, mr));
  // The packet lands, COMM_EST is raised: the library must leave it where it is.
  EXPECT_FALSE(progress_until(job, 2, 200ms, [&] { return wireup_result_count(job.w(1)) == 1; }));
  ASSERT_EQ(job.fabric().raised_pending(1, 0), 1u) << "transport mode: the library read the device's event";
  wireup_counters_t c;
  WIREUP_STRUCT_INIT(&c);
  ASSERT_EQ(wireup_counters_get(job.w(1), &c), WIREUP_OK);
  EXPECT_EQ(c.device_events, 0u);

  auto raised = job.fabric().read_raised(1, 0);  // the transport's ibv_get_async_event
  ASSERT_TRUE(raised) << raised.error().message();
  ASSERT_EQ(raised->type, prov::DeviceEventType::comm_est);
  prov::Qp* target = nullptr;
  for (auto& [q, owned] : job.t(1).live)
    if (q->qpn() == raised->qpn) target = q;
  ASSERT_NE(target, nullptr) << "COMM_EST names no QP rank 1's factory made";
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_COMM_EST;
  ev.element.qp = as_ibv_qp(target);
  const Nanos handed = job.fabric().now();
  ASSERT_EQ(wireup_context_async_event(job.ctx(1), &ev), WIREUP_OK) << wireup_last_error(nullptr);
  ASSERT_TRUE(progress_until(job, 2, 1s, [&] { return wireup_result_count(job.w(1)) == 1; }));
  EXPECT_LT(job.fabric().now() - handed, 100ms);
  ASSERT_EQ(wireup_counters_get(job.w(1), &c), WIREUP_OK);
  EXPECT_EQ(c.comm_est_notified, 1u);
  EXPECT_EQ(c.device_events, 1u);
  EXPECT_TRUE(seen.empty()) << "the COMM_EST the library answered is not reported back";
  EXPECT_EQ(wireup_error_count(job.w(1)), 0u);

  // A QP event of the transport's own QP, handed over: reported with its object kind.
  ev.event_type = IBV_EVENT_QP_FATAL;
  ev.element.qp = as_ibv_qp(target);
  ASSERT_EQ(wireup_context_async_event(job.ctx(1), &ev), WIREUP_OK) << wireup_last_error(nullptr);
  ASSERT_TRUE(progress_until(job, 2, 10ms, [&] { return seen.size() == 1; }));
  EXPECT_EQ(seen[0].type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(seen[0].object, WIREUP_DEVICE_OBJECT_QP);
  EXPECT_EQ(seen[0].qpn, target->qpn());
  EXPECT_EQ(seen[0].known, 1);
  EXPECT_EQ(seen[0].peer, 0u);

  // What is not an event wireup knows, or not on this device, is refused and named.
  ibv_async_event bad{};
  // Stored as the int a C transport could put there (a C++ cast to the enum would be UB).
  const int bogus = 77;
  std::memcpy(&bad.event_type, &bogus, sizeof bogus);
  EXPECT_EQ(wireup_context_async_event(job.ctx(1), &bad), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(wireup_last_error(nullptr)).find("77"), std::string::npos) << wireup_last_error(nullptr);
  bad.event_type = IBV_EVENT_QP_FATAL;
  bad.element.qp = nullptr;
  EXPECT_EQ(wireup_context_async_event(job.ctx(1), &bad), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_context_async_event(job.ctx(1), nullptr), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(wireup_context_async_event(nullptr, &ev), WIREUP_ERR_INVALID_ARGUMENT);
}

// The control: the same in transport mode without the hand-over: rank 1 stays unconnected
// (the library never read the COMM_EST that was raised).
TEST(CapiSimAsync, TransportModeWithoutTheHandOverThePassiveSideWaits) {
  SimJob job(2, 2, rtus_lost_for_good(), {"device.async_events=transport", "engine.rtu_linger_ms=0"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  std::vector<char> mem;
  std::unique_ptr<prov::Mr> mr;
  ASSERT_NO_FATAL_FAILURE(connect_and_send(job, mem, mr));
  EXPECT_FALSE(progress_until(job, 2, 2s, [&] { return wireup_result_count(job.w(1)) == 1; }, 10ms));
  EXPECT_EQ(job.fabric().raised_pending(1, 0), 1u);
}

// Library mode (the default): the library reads the same COMM_EST itself and answers it; a
// hand-over is refused (the event would be seen twice); the events it forwards name the kind
// of object they concern, and CQ/SRQ events the transport's object.
TEST(CapiSimAsync, LibraryModeReadsItselfAndForwardedEventsNameTheirObject) {
  SimJob job(2, 2, rtus_lost_for_good(), {"engine.rtu_linger_ms=0"});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  std::vector<DeviceEventSeen> seen;
  ASSERT_EQ(wireup_on_device_event(job.w(1), on_device_event, &seen), WIREUP_OK);
  std::vector<char> mem;
  std::unique_ptr<prov::Mr> mr;
  ASSERT_NO_FATAL_FAILURE(connect_and_send(job, mem, mr));
  ASSERT_TRUE(progress_until(job, 2, 1s, [&] { return wireup_result_count(job.w(1)) == 1; }));
  EXPECT_EQ(job.fabric().raised_pending(1, 0), 0u);
  wireup_counters_t c;
  WIREUP_STRUCT_INIT(&c);
  ASSERT_EQ(wireup_counters_get(job.w(1), &c), WIREUP_OK);
  EXPECT_EQ(c.comm_est_notified, 1u);

  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_PORT_ERR;
  ev.element.port_num = 1;
  EXPECT_EQ(wireup_context_async_event(job.ctx(1), &ev), WIREUP_ERR_INVALID_STATE);
  EXPECT_NE(std::string(wireup_last_error(nullptr)).find("device.async_events"), std::string::npos)
      << wireup_last_error(nullptr);

  // Stand-ins for the transport's ibv_srq / ibv_cq: only their addresses matter.
  int srq_marker = 0, cq_marker = 0;
  job.t(1).read_results(job.w(1));
  wireup_result_t r1;
  WIREUP_STRUCT_INIT(&r1);
  ASSERT_EQ(wireup_result_get(job.w(1), 0, &r1), WIREUP_OK);
  prov::sim::SimFabric& f = job.fabric();
  f.raise_device_event(1, 0, prov::DeviceEventType::srq_limit_reached, 0, &srq_marker);
  f.raise_device_event(1, 0, prov::DeviceEventType::cq_err, 0, &cq_marker);
  f.raise_device_event(1, 0, prov::DeviceEventType::port_err);
  f.raise_device_event(1, 0, prov::DeviceEventType::qp_last_wqe_reached, r1.local_qpn);
  ASSERT_TRUE(progress_until(job, 2, 10ms, [&] { return seen.size() == 4; }));
  EXPECT_EQ(seen[0].type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(seen[0].name, "SRQ_LIMIT_REACHED");
  EXPECT_EQ(seen[0].object, WIREUP_DEVICE_OBJECT_SRQ);
  EXPECT_EQ(seen[0].handle, &srq_marker);
  EXPECT_EQ(seen[1].type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(seen[1].object, WIREUP_DEVICE_OBJECT_CQ);
  EXPECT_EQ(seen[1].handle, &cq_marker);
  EXPECT_EQ(seen[2].type, IBV_EVENT_PORT_ERR);
  EXPECT_EQ(seen[2].object, WIREUP_DEVICE_OBJECT_PORT);
  EXPECT_EQ(seen[2].port, 1);
  EXPECT_EQ(seen[2].handle, nullptr);
  EXPECT_EQ(seen[3].type, IBV_EVENT_QP_LAST_WQE_REACHED);
  EXPECT_EQ(seen[3].object, WIREUP_DEVICE_OBJECT_QP);
  EXPECT_EQ(seen[3].qpn, r1.local_qpn);
  EXPECT_EQ(seen[3].known, 1);
  EXPECT_EQ(seen[3].handle, nullptr);
}

// A bad value of the key is a configuration error naming the key and the choices.
TEST(CapiSimAsync, AnUnknownOwnerIsAConfigError) {
  prov::sim::SimFabric fab;
  fab.add_node();
  auto devs = fab.provider(0).devices();
  ASSERT_TRUE(devs);
  const char* ov[] = {"device.async_events=both"};
  wireup_context_params_t cp;
  wireup_context_params_init(&cp);
  const std::string ip = fab.address(0).to_string();
  cp.listen_ip = ip.c_str();
  cp.config_overrides = ov;
  cp.num_config_overrides = 1;
  wireup_context_t* c = nullptr;
  EXPECT_EQ(capi_seam::context_create(fab.provider(0), *devs->front(), &cp, &c), WIREUP_ERR_CONFIG);
  const std::string msg = wireup_last_error(nullptr);
  EXPECT_NE(msg.find("device.async_events"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport"), std::string::npos) << msg;
}

// The struct_size rule on a live handle: wireup_create needs its factory in the params, an
// older caller's output struct (a prefix) is written only up to its size, a newer caller's
// gets its unknown tail zeroed, and every struct carries its size into the callbacks.
TEST(CapiSimAbi, ParamsAndOutputStructsFollowTheSizeRule) {
  SimJob job(2, 2, prov::sim::SimConfig{}, {});
  ASSERT_NO_FATAL_FAILURE(job.start(1));
  ASSERT_TRUE(job.run(300s));
  wireup_params_t p;
  wireup_params_init(&p);
  p.nranks = 2;
  p.job_key = 1;
  wireup_t* w = nullptr;
  EXPECT_EQ(wireup_create(job.ctx(0), &p, &w), WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(wireup_last_error(nullptr)), "wireup_create: params->qp_create (the QP factory) is NULL");
  EXPECT_EQ(w, nullptr);

  ASSERT_EQ(wireup_result_count(job.w(0)), 1u);
  wireup_result_t full;
  WIREUP_STRUCT_INIT(&full);
  ASSERT_EQ(wireup_result_get(job.w(0), 0, &full), WIREUP_OK) << wireup_last_error(job.w(0));
  EXPECT_NE(full.qp, nullptr);
  EXPECT_EQ(full.ece_outcome, WIREUP_ECE_NEGOTIATED) << wireup_ece_outcome_name(full.ece_outcome);
  // An older caller: its struct ends after remote_qpn.
  struct {
    wireup_result_t r;
    uint8_t guard[8];
  } older;
  std::memset(&older, 0xab, sizeof older);
  older.r.struct_size = offsetof(wireup_result_t, attempts);
  EXPECT_EQ(wireup_result_get(job.w(0), 0, &older.r), WIREUP_ERR_INVALID_ARGUMENT) << "below the first layout";
  EXPECT_NE(std::string(wireup_last_error(job.w(0))).find("wireup_result_t: invalid argument: struct_size 32 is below"), std::string::npos)
      << wireup_last_error(job.w(0));
  // A newer caller: fields past this library's read 0.
  struct {
    wireup_result_t r;
    uint64_t later;
  } newer;
  std::memset(&newer, 0xff, sizeof newer);
  newer.r.struct_size = sizeof newer;
  ASSERT_EQ(wireup_result_get(job.w(0), 0, &newer.r), WIREUP_OK) << wireup_last_error(job.w(0));
  EXPECT_EQ(newer.r.local_qpn, full.local_qpn);
  EXPECT_EQ(newer.later, 0u);
  EXPECT_EQ(newer.r.struct_size, sizeof newer);

  wireup_counters_t c;
  std::memset(&c, 0, sizeof c);  // struct_size 0: never initialized
  EXPECT_EQ(wireup_counters_get(job.w(0), &c), WIREUP_ERR_INVALID_ARGUMENT);
  WIREUP_STRUCT_INIT(&c);
  ASSERT_EQ(wireup_counters_get(job.w(0), &c), WIREUP_OK);
  EXPECT_EQ(c.established_active + c.established_passive, 1u);

  for (const wireup_lane_event_t& e : job.t(0).lane_events) EXPECT_EQ(e.struct_size, sizeof(wireup_lane_event_t));
  EXPECT_FALSE(job.t(0).lane_events.empty());
}

}  // namespace
}  // namespace wireup
