// What the engine is given (options, the peer table) and what it hands back (results, errors,
// steady-state events).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cm/connection.h"
#include "common/clock.h"
#include "ece/policy.h"
#include "provider/provider.h"
#include "qp/factory.h"
#include "wireup/liveness.h"
#include "wireup/peer_down.h"
#include "wireup/incast.h"
#include "wireup/private_data.h"
#include "wireup/rail_routes.h"

namespace wireup {

// Every tunable's default lives in the configuration table (src/config/params.cc) and
// nowhere else: start from engine_defaults() (wireup/options.h), or from engine_options() of
// a loaded configuration. A default-constructed EngineOptions has zeros, which create()
// refuses, naming the field.
struct EngineOptions {
  uint32_t rank = 0;
  uint32_t nranks = 0;               // the job size: roles depend on it
  uint32_t lanes = 0;                // connections per peer
  // On demand (Engine::connect): the listener stays open until close(), any authenticated rank
  // of the job may connect, and start() connects only the eager set below. Off (bulk): start()
  // connects every peer of the table, roles from the plan, and wireup ends when all settle.
  bool on_demand = false;
  uint32_t eager_ring = 0;           // on demand: ring neighbours within this distance, at start
  std::vector<uint32_t> eager_peers; // on demand: these too, at start, as connect() would
  uint64_t job_key = 0;              // shared secret; 0 is refused (a job must pick one)
  prov::SockAddr listen_addr;        // where to listen (port 0: any free port)
  // Several rails (config device.rails): every rail's listen address (with listen_addr's port)
  // and subnet prefix, rail 0 first and at listen_addr's IP. Empty: one rail, listen_addr.
  // A listener per rail; the published address lists them all (format 2, rail_address.h).
  std::vector<RailAddress> rails;
  // For a peer with which no rail shares a subnet: which rail pairs have a route
  // (rail_routes.h). Null: every pair is taken, and each lane's address resolution decides.
  RailRoutes::RouteCheck route_check;
  int backlog = 0;                   // rdma_listen backlog (the kernel caps it at its sysctl)
  bool reuseaddr = false;            // RDMA_OPTION_ID_REUSEADDR on the listener (a fixed port)
  uint32_t connect_window = 0;       // active connects in flight
  uint32_t qp_window = 0;            // QPs created, not yet established, per role (admission.h)
  incast::Pacing incast;             // first connects paced by the listener's planned load (incast.h)
  uint32_t max_attempts = 0;         // per (peer, lane), first one included
  Nanos backoff_initial{0};
  Nanos backoff_max{0};
  double backoff_jitter = 0;         // the delay's random share, so that retries of many ranks do not align
  Nanos wireup_timeout{0};
  // How long the listener stays open after wireup ends (done()) if this rank initiated a
  // connection, so that a passive peer whose REP retries ran out can still ask about it
  // (repair.h). close() ends the linger. 0: close the listener at done().
  Nanos rtu_linger{0};
  int resolve_addr_timeout_ms = 0;
  int resolve_route_timeout_ms = 0;
  std::optional<uint8_t> tos;
  std::optional<uint8_t> ack_timeout;
  ece::Policy ece;
  qp::QpOverrides qp;
  prov::ConnParam param;             // resources and CM retry counts
  uint64_t seed = 0;                 // jitter RNG; 0 = derived from rank
  // Who reads the device's async events (config device.async_events): the engine itself, or
  // the transport, which hands it those it read (prov::Device::post_async_event).
  prov::AsyncOwner async_events = prov::AsyncOwner::library;
  // The liveness service (config liveness.*): run by the C API beside the engine, which only
  // hears its verdicts (Engine::declare_down).
  bool liveness = false;
  liveness::Params liveness_params;
};

struct Peer {
  uint32_t rank = 0;
  std::vector<uint8_t> address;  // what that rank's local_address() returned
};

// A connection's time stamps as its result keeps them: the attempt's stamps and the pair's
// first start, exact to the nanosecond. Offsets as floats kept a result in 64 bytes instead of
// 96 and lost precision past 16.7 ms; at 10,000 ranks x 4 lanes the 32 bytes are 1.3 MB per
// rank, small beside the 40,000 QPs' own memory, so the stamps stay exact (docs/results.md).
class ResultTimings {
 public:
  ResultTimings() = default;
  ResultTimings(const cm::Timings& t, Nanos first_start) : stamps_(t), first_start_(first_start) {}
  const cm::Timings& get() const { return stamps_; }
  // The pair's first attempt started (cm::kUnset if never recorded): the `total` phase.
  Nanos first_start() const { return first_start_; }

 private:
  cm::Timings stamps_;
  Nanos first_start_ = cm::kUnset;
};

// What a connection's QP runs on and what ECE settled on it. Every connection to peers of one
// kind shares it, so a result names it by index (Records::link, Engine::link) instead of
// carrying its 32 bytes.
struct LinkInfo {
  const char* device = "";  // the QP's device name (owned by the provider, like the device)
  uint32_t rail = 0;        // the local rail the connection runs on (EngineOptions::rails)
  ece::Report ece;
  qp::QpGiven qp;           // what the QP was given on its way to RTS
  bool peer_srq = false;    // the peer's REQ/REP said its QP takes receives from an SRQ
  bool operator==(const LinkInfo& o) const {
    return device == o.device && rail == o.rail && ece.local == o.ece.local && ece.remote == o.ece.remote &&
           ece.accepted == o.ece.accepted && ece.outcome == o.ece.outcome && qp == o.qp &&
           peer_srq == o.peer_srq;
  }
};

// One established connection, as handed to the transport. Each (peer, lane) has one slot in
// the table (records.h): a connection the engine had to take back (an RTU repair before
// hand-over) stays there, marked `withdrawn`, until the pair's next connection takes the slot,
// so that indexes into it never move.
// One per established endpoint, so kept small: 96 bytes, 72 of them the time stamps (the
// device and ECE by index, lane and attempts in 16 bits: the configuration caps them at 1,024
// and 1,000). Its QP, while the
// engine holds it, is Engine::qp(index): the pair owns it, the result does not mirror it.
struct ConnResult {
  ResultTimings timings;        // .get() for the stamps, .first_start() for the total
  uint32_t peer = 0;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  uint16_t lane = 0;
  uint16_t attempts = 0;        // Engine::create refuses max_attempts above 65,535
  uint16_t link = 0;            // its LinkInfo: Engine::link(*this)
  cm::Role role = cm::Role::active;
  bool withdrawn = false;       // taken back before hand-over (see above; or its device was
                                // removed before the transport took the QP); no QP
  bool handed_over = false;     // the transport was given it (Engine::hand_over): never taken
                                // back for a repair, and a close leaves it a connection
  // Gone since it was made, as the steady event that told the transport said: its device (or
  // rail) removed, the peer's DREQ in bulk, the peer's RTU-lost notice; none while it stands.
  // Kept apart from `withdrawn`: a connection handed over stays the transport's record (and
  // QP) after it is lost, so its index and QP pointer stay readable for the teardown.
  cm::FailKind lost = cm::FailKind::none;
};
static_assert(sizeof(ConnResult) == 96, "a ConnResult grew");

// A (peer, lane) that could not be connected, and why.
struct PeerError {
  // What ended the pair, beyond the failure's kind.
  enum class Cause : uint8_t {
    failed,                       // `failure` says it all (and peer_reason, for a REJ of ours)
    timed_out,                    // no connection before the wireup timeout (active side)
    peer_never_connected,         // passive: the peer's REQ never came before the deadline
    rtu_peer_cannot_reconnect,    // passive: the peer had the lane and could not reconnect it
    rtu_no_attempts_left,         // either side: the RTU was lost and the attempts are used up
    rtu_listener_gone,            // passive: the active side's listener is gone (wireup ended)
    rtu_notice_undeliverable,     // passive: the notice never got an answer
    rtu_notice_refused,           // passive: the peer refused the notice with another code
    peer_gave_up,                 // passive: the active side gave up and said so (abandon notice)
    device_removed,               // either side: this rank's device went away (DEVICE_REMOVAL)
    peer_reported_dead,           // either side: the transport said the peer died (Engine::fail_peer)
  };
  uint32_t peer = 0;
  uint32_t lane = 0;
  cm::Role role = cm::Role::active;
  uint32_t attempts = 0;
  Cause cause = Cause::failed;
  // The peer's own reason, when its REJ carried our private data (none otherwise).
  RejectCode peer_reason = RejectCode::none;
  cm::Failure failure;
  std::string describe() const;
};
const char* to_string(PeerError::Cause c);

// What the steady channel reports after wireup (DISCONNECTED, DEVICE_REMOVAL, ADDR_CHANGE...),
// and what the listener is told (DEVICE_REMOVAL, ADDR_CHANGE: scope listener, no peer). That a
// peer is gone as a whole is reported apart (Records::PeerDownCallback, peer_down.h).
struct SteadyEvent {
  enum class Scope : uint8_t { connection, listener };
  uint32_t peer = 0;
  uint32_t lane = 0;
  prov::CmEventType type = prov::CmEventType::disconnected;
  int status = 0;
  // The passive peer reported that it never got this connection's RTU (its REP retries ran
  // out) after the lane had been handed over: the peer has no connection behind this QP.
  // Delivered as DISCONNECTED, status -ECONNRESET.
  bool rtu_lost = false;
  Scope scope = Scope::connection;
};

// An asynchronous event of the device (ibv_get_async_event) handed to the transport: every
// one but a COMM_EST the engine answered itself (rdma_notify on the connection's id).
struct DeviceEventReport {
  prov::DeviceEvent event;
  // The QP is one of this engine's connections (peer and lane say which); false for port and
  // device events and for a QP the engine does not know (the transport's own).
  bool known = false;
  uint32_t peer = 0;
  uint32_t lane = 0;
};

// On demand: what the transport learns of each (peer, lane) it or the peer asked for, from
// progress() once the call's own work is done (so that the callback may call connect() or
// disconnect()). `index` is the pair's slot in results() (ready; closed: Records::kNoSlot if
// it never connected) or in errors() (failed). A slot belongs to its (peer, lane) for good: a
// later READY of the lane names the same index, its record then the new connection's.
struct LaneEvent {
  enum class Kind : uint8_t { ready, failed, closed };  // closed: disconnected, idle again
  uint32_t peer = 0;
  uint32_t lane = 0;
  Kind kind = Kind::ready;
  uint32_t index = 0;
};

// Where a (peer, lane) stands, for a transport that queues sends until it is ready.
enum class LaneState : uint8_t {
  idle,        // nobody asked for it (or it was disconnected)
  connecting,  // asked for (by us or by the peer), or waiting for the peer's address
  ready,       // established: results() has it
  failed,      // given up: errors() says why; connect() asks again
};
const char* to_string(LaneState s);

// The peer's RejectCode carried in a REJ's private data, or none.
RejectCode peer_reject_code(const cm::Failure& f);

}  // namespace wireup
