// Test-side plumbing for the conformance suite: a fabric of two nodes from one provider,
// event waits with a bound, and an application-owned QP with a small data path.
//
// The suite is written only against src/provider/provider.h so that it runs unchanged on
// every provider (rdma inside the soft-RoCE VM, sim in-process).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "provider/provider.h"

namespace wireup::conf {

using namespace std::chrono_literals;

class TestFabric {
 public:
  virtual ~TestFabric() = default;
  virtual std::string name() const = 0;
  // Node 0 is the passive side, node 1 the active side (the same provider on rdma).
  virtual prov::Provider& provider(int node) = 0;
  // A listen/connect address of `node` (port 0: the listener picks one).
  virtual prov::SockAddr address(int node) = 0;
  // Whether QPs carry data (SEND/RECV) on this provider.
  virtual bool has_data_path() const = 0;
  // Whether blocking calls (migrate, destroy with un-acked events) really block here.
  virtual bool calls_can_block() const = 0;
};

// Defined once per provider binary (rdma_fabric.cc, sim_fabric.cc). A fabric that cannot
// exist here returns an error whose message says why; the suite then skips loudly, except
// inside the VM (WIREUP_IN_VM=1), where that is a failure.
Result<std::unique_ptr<TestFabric>> make_fabric();

// Next event on `ch`, waiting at most `timeout` (virtual time on sim).
Result<prov::CmEvent> next_event(prov::Provider& p, prov::EventChannel& ch,
                                 Nanos timeout = std::chrono::seconds(10));

// Next event, which must be of type `want`; otherwise a gtest failure naming what came.
prov::CmEvent expect_event(prov::Provider& p, prov::EventChannel& ch, prov::CmEventType want,
                           Nanos timeout = std::chrono::seconds(10));

// No event arrives on `ch` within `window`.
void expect_no_event(prov::Provider& p, prov::EventChannel& ch, Nanos window);

// PD, CQ, one RC QP (optionally on an SRQ) and a registered buffer on one device: what a
// transport would own. The buffer: [0, 128) is sent from, [128, 256) received into, the rest
// is the one-sided operations' (registered for every remote access).
struct AppQp {
  std::unique_ptr<prov::Pd> pd;
  std::unique_ptr<prov::Cq> cq;
  std::unique_ptr<prov::Srq> srq;  // declared before qp: destroyed after it
  std::unique_ptr<prov::Qp> qp;
  std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
  std::unique_ptr<prov::Mr> mr;

  static Result<AppQp> create(prov::Device& dev, bool with_srq = false);
  uint64_t addr(size_t offset) { return reinterpret_cast<uint64_t>(buf.data() + offset); }
  // Drive the QP to `state` with the attributes rdma_init_qp_attr gives for it.
  Status to_state(prov::CmId& id, prov::QpState state);
  Status post_recv();
  Status send(const std::string& text);
  // Waits (busy poll, bounded) for a completion of the given opcode; returns its payload
  // for a RECV.
  Result<std::string> wait_completion(int opcode, std::chrono::milliseconds bound = 5000ms);
  // The next completion, whatever its status (busy poll, bounded).
  Result<prov::WorkCompletion> next_completion(std::chrono::milliseconds bound = 5000ms);
};

// A listening id on node 0 with its own channel.
struct Listener {
  std::unique_ptr<prov::EventChannel> ch;
  std::unique_ptr<prov::CmId> id;
  prov::SockAddr addr;  // with the port the listener got
  static Result<Listener> create(TestFabric& f, int backlog = 128);
};

// The active side of one connection, resolved up to ROUTE_RESOLVED.
struct Active {
  std::unique_ptr<prov::EventChannel> ch;
  std::unique_ptr<prov::CmId> id;
  static Result<Active> resolve(TestFabric& f, const prov::SockAddr& dst);
};

bool in_vm();

}  // namespace wireup::conf

// Skip loudly when the fabric cannot exist here; fail instead inside the VM.
#define WIREUP_REQUIRE_FABRIC(fabric_var)                                            \
  auto fabric_result_ = ::wireup::conf::make_fabric();                               \
  if (!fabric_result_) {                                                             \
    if (::wireup::conf::in_vm()) FAIL() << fabric_result_.error().message();         \
    GTEST_SKIP() << "SKIPPED LOUDLY: " << fabric_result_.error().message();          \
  }                                                                                  \
  auto& fabric_var = *fabric_result_.value()

namespace wireup::conf {

// Both ends of one application-owned-QP connection, established and verified.
struct Pair {
  Active active;
  AppQp active_qp;
  std::unique_ptr<prov::CmId> passive_id;  // on the listener's channel
  AppQp passive_qp;
  uint8_t req_srq = 0;  // the SRQ bit as CONNECT_REQUEST reported it
  uint8_t rep_srq = 0;  // and as CONNECT_RESPONSE did
};

struct PairOptions {
  std::vector<uint8_t> req_private_data;
  std::vector<uint8_t> rep_private_data;
  bool exchange_messages = true;  // a SEND each way (needs a data path)
  // The active QP is moved to INIT before rdma_connect, when the CM can answer only access
  // flags 0 (cma_ib_init_qp_attr without an IB CM id); librdmacm moves the QPs it manages to
  // INIT again from the CM once the REP is in (ucma_modify_qp_rtr). false: skip that redo.
  bool redo_init = true;
  bool active_srq = false;   // the QP takes its receives from an SRQ (and the REQ says so)
  bool passive_srq = false;  // the same for the passive QP (and the REP)
  uint8_t responder_resources = 1;  // both sides' rdma_conn_param
  uint8_t initiator_depth = 1;
  int passive_max_dest_rd_atomic = -1;  // >= 0: the passive RTR gets this instead of the CM's
};

// The ext-QP flow end to end: connect with qp_num and no QP on the id -> CONNECT_RESPONSE ->
// RTR/RTS -> establish; passive: CONNECT_REQUEST -> QP to RTS -> accept(qp_num) -> ESTABLISHED.
Result<Pair> connect_pair(TestFabric& f, Listener& l, const PairOptions& o = {});

}  // namespace wireup::conf

namespace wireup::conf {

// The active side of one connection with its REQ sent: resolved, QP at INIT, optional ECE
// offer and private data, rdma_connect with qp_num and no QP on the id.
struct Requested {
  Active active;
  AppQp qp;
  static Result<Requested> send(TestFabric& f, const prov::SockAddr& dst,
                                std::optional<prov::Ece> ece = std::nullopt,
                                std::vector<uint8_t> private_data = {});
};

// The passive side of one request: the CONNECT_REQUEST (still un-acked) and its new id.
struct Incoming {
  prov::CmEvent req;
  std::unique_ptr<prov::CmId> id;
  AppQp qp;
  static Result<Incoming> take(TestFabric& f, Listener& l);
  // A QP on the id's device, driven INIT -> RTR -> RTS by rdma_init_qp_attr.
  Status ready();
  // rdma_accept with qp_num (and private data), then the request's ack.
  Status accept(std::vector<uint8_t> private_data = {});
};

}  // namespace wireup::conf
