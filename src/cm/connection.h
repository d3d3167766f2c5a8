// One application-owned-QP connection driven through the CM, either side.
//
// Active:  start() -> ADDR_RESOLVED -> ROUTE_RESOLVED -> [owner grants a QP] connect() ->
//          CONNECT_RESPONSE -> ECE -> RTR -> RTS -> rdma_establish -> established
// Passive: from_request() (owner validated the private data first) -> accept() [QP, ECE,
//          RTR, rdma_accept with qp_num] -> ESTABLISHED (the RTU, or COMM_EST told to the CM
//          with notify_comm_est()) -> RTS -> established
// A connection is the sink of its own id's events (prov::dispatch hands them here); after
// each one it tells its observer, which may then grant a QP, migrate the id or retire the
// connection. A retired connection is detached first: it keeps absorbing (and acking) the
// events still queued for its id and reports none of them. Nothing here blocks.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "cm/depth.h"
#include "ece/policy.h"
#include "provider/provider.h"
#include "qp/factory.h"
#include "qp/transitions.h"

namespace wireup::cm {

enum class Role : uint8_t { active, passive };

enum class State : uint8_t {
  resolving_addr,   // active: rdma_resolve_addr issued
  resolving_route,  // active: rdma_resolve_route issued
  route_resolved,   // active: waiting for the owner to grant a QP (QP window)
  requested,        // passive: CONNECT_REQUEST validated, waiting for accept()
  connecting,       // active: REQ sent, waiting for CONNECT_RESPONSE
  accepting,        // passive: REP sent, waiting for ESTABLISHED (RTU)
  established,
  failed,
  disconnected,
};
const char* to_string(State s);

enum class FailKind : uint8_t {
  none,
  rejected,        // REJECTED by the peer (status = IB reject reason, private data kept)
  unreachable,     // UNREACHABLE: REQ/REP retries ran out
  address_error,   // ADDR_ERROR
  route_error,     // ROUTE_ERROR
  connect_error,   // CONNECT_ERROR
  device_removal,  // DEVICE_REMOVAL
  ece_rejected,    // this side refused the ECE answer (reason 35 sent)
  local_error,     // a local call failed (QP creation, modify, ...): see Failure::error
  disconnected,    // DISCONNECTED before the connection was established
  timed_out,       // the owner's deadline passed first
  rtu_lost,        // passive: the peer never confirmed our REP (RTU) and cannot reconnect
  bad_reply,       // active: the REP is not the one this connection waits for (the owner said
                   // why); refused with a REJ before the QP left INIT
  abandoned,       // passive: the peer gave up on the pair and said so (an abandon notice)
};
inline constexpr size_t kFailKinds = static_cast<size_t>(FailKind::abandoned) + 1;
const char* to_string(FailKind k);

struct Failure {
  FailKind kind = FailKind::none;
  int status = 0;                     // event status: reject reason, or -errno
  std::vector<uint8_t> private_data;  // REJECTED: the peer's reason bytes
  Error error;                        // call / errno / peer / QPN
  // Passive side: the failure came after ESTABLISHED (the RTU was in), so the peer holds an
  // established lane and will not retry it on its own: it has to be told.
  bool after_peer_established = false;
  std::string describe() const;
};

// Time stamps of the phases, from the provider's clock (virtual on sim).
// kUnset marks a phase not reached (a virtual clock starts at 0, so 0 is a real time).
inline constexpr Nanos kUnset{-1};
struct Timings {
  Nanos start = kUnset, addr_resolved = kUnset, route_resolved = kUnset, qp_created = kUnset,
        request = kUnset, response = kUnset, rts = kUnset, established = kUnset;
  // rts: the QP at RTS (passive: at RTR, as its REP goes; it reaches RTS with ESTABLISHED).
};

// What every connection of one owner shares (the engine's options): built once by the owner
// and referenced, never copied per connection. Must outlive the connections using it.
// No defaults of its own: the owner fills every field (the engine from its options).
struct Profile {
  std::optional<prov::SockAddr> local;  // active: source address to resolve from
  int resolve_addr_timeout_ms = 0;
  int resolve_route_timeout_ms = 0;
  std::optional<uint8_t> tos;
  std::optional<uint8_t> ack_timeout;
  ece::Policy ece;
  qp::CheckedOverrides qp;  // checked once by the owner, shared by every QP
  prov::ConnParam param;  // resources / retry counts; qp_num and private data are filled in
};

// Private data of one connection's REQ (active) or REP (passive), held inline: the REQ budget
// of RDMA_PS_TCP bounds it, and a connection should not need the heap for it.
class PrivateData {
 public:
  static constexpr size_t kCapacity = prov::private_data_limit::req_tcp;
  PrivateData() = default;
  // Bytes beyond kCapacity are refused (false), never truncated.
  bool assign(std::span<const uint8_t> b);
  template <class It>
  bool assign(It first, It last) {
    return assign(std::span<const uint8_t>(std::to_address(first), static_cast<size_t>(last - first)));
  }
  std::span<const uint8_t> bytes() const { return {data_.data(), size_}; }

 private:
  std::array<uint8_t, kCapacity> data_{};
  uint8_t size_ = 0;
};

// The per-connection part of what to connect; everything shared is in the Profile.
struct Spec {
  uint32_t peer = 0;
  uint32_t lane = 0;
  uint64_t tag = 0;                  // the owner's name for this connection (tag())
  const Profile* profile = nullptr;  // required
  prov::SockAddr remote;             // active: the peer's listen address (used by start())
  PrivateData private_data;          // REQ (active) or REP (passive)
};

class Connection;

// Told after every event that reached a connection (the event is acked by then).
class ConnectionObserver {
 public:
  virtual void on_connection_changed(Connection& c) = 0;
  // Active side, on CONNECT_RESPONSE, before anything moves the QP past INIT: is this REP
  // (its private data) the answer this connection waits for? An error refuses it: the
  // connection sends a REJ (its reject data) and fails with FailKind::bad_reply and that error.
  virtual Status check_reply(const Connection& c, std::span<const uint8_t> private_data) = 0;
  // What a REJ of this connection carries when this side cannot make or move its QP or
  // refused a REP, so that the peer reads a reason (a transient one) rather than an empty
  // REJ. Asked only when such a REJ goes out (rare): nothing is built or kept per connection.
  virtual PrivateData reject_data(const Connection& c) = 0;

 protected:
  ~ConnectionObserver() = default;
};

class Connection final : public prov::CmEventSink {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Active side: creates the id on `ch` and issues rdma_resolve_addr.
  static Result<std::unique_ptr<Connection>> start(prov::Provider& p, prov::EventChannel& ch, const Spec& spec,
                                                   ConnectionObserver* observer);
  // Passive side: takes the new id out of a validated CONNECT_REQUEST.
  static std::unique_ptr<Connection> from_request(prov::Provider& p, prov::CmEvent& req, const Spec& spec,
                                                  ConnectionObserver* observer);

  // Active, in route_resolved: QP from the factory, INIT, ECE offer, rdma_connect.
  Status connect(const qp::QpFactory& factory);
  // Active, in route_resolved: rdma_connect with no QP at all (conn_param.qp_num 0): a
  // request that only carries private data and is always answered with a REJ. The kernel
  // takes qp_num from conn_param when the id has no QP and does not check it
  // (ib_send_cm_req / cm_validate_req_param); QPN 0 is never an RC QP, so it cannot be
  // mistaken for a real connection's QP. A CONNECT_RESPONSE to it is a protocol error.
  Status send_notice();
  bool qpless() const { return ans_.qpless; }
  // Passive, in requested: QP, INIT, ECE answer (reject_ece if refused), RTR, accept. The
  // QP goes to RTS on ESTABLISHED.
  Status accept(const qp::QpFactory& factory);
  // Passive, in accepting: the QP raised COMM_EST (data before the RTU): rdma_notify, and the
  // CM delivers ESTABLISHED as if the RTU had come.
  Status notify_comm_est();
  // Feeds one CM event of this connection's id. Errors end up in failure(), not here.
  void on_event(const prov::CmEvent& ev);
  // prov::CmEventSink: on_event, ack, then the observer (unless detached).
  void on_cm_event(prov::CmEvent& ev) override;
  // No more reports to the observer (the owner retired this connection).
  void detach() { observer_ = nullptr; }
  // rdma_migrate_id to `to`, its events then going to `route`; every event must be acked.
  Status migrate(prov::EventChannel& to, prov::Route route);
  Status disconnect();

  Role role() const { return given_.role; }
  const Profile& profile() const { return profile_; }
  State state() const { return state_; }
  bool done() const { return state_ == State::established || state_ == State::failed || state_ == State::disconnected; }
  uint32_t peer() const { return given_.peer; }
  uint64_t tag() const { return given_.tag; }
  uint32_t lane() const { return given_.lane; }
  const Failure& failure() const;
  // The private data this connection sent (its REQ or REP): an answer must match it.
  std::span<const uint8_t> sent() const { return given_.private_data.bytes(); }
  const Timings& timings() const { return t_; }
  const ece::Report& ece() const { return ans_.ece; }
  uint32_t remote_qpn() const { return ans_.remote_qpn; }
  // The peer's REQ/REP said its QP takes its receives from an SRQ.
  bool peer_srq() const { return ans_.peer_srq != 0; }
  // What the QP was given on its way to RTS (complete once established).
  const qp::QpGiven& qp_given() const { return ans_.given; }
  prov::Qp* qp() const { return qp_.get(); }
  prov::CmId* id() const { return id_.get(); }
  // Hands the QP to the transport (the connection keeps the CM id).
  std::unique_ptr<prov::Qp> take_qp() { return std::move(qp_); }
  // The id, for owners that keep it after the connection object is gone.
  std::unique_ptr<prov::CmId> take_id() { return std::move(id_); }

  // The id's last events may arrive after the owner let go: "owned" says whether anyone
  // still listens (for teardown accounting).
  bool detached() const { return observer_ == nullptr; }

 private:
  Connection(prov::Provider& p, Role r, const Spec& spec, ConnectionObserver* observer);
  void fail(FailKind kind, Error e, int status = 0);
  void fail_event(FailKind kind, const prov::CmEvent& ev);
  // A REJ with the observer's reject_data (empty without an observer).
  void send_reject();
  Status make_qp(const qp::QpFactory& factory);
  // The rdma_conn_param of this side's REQ (active) or REP (passive): the profile's, with the
  // QP number, the private data and the READ/atomic depths (cm/depth.h) filled in.
  Result<prov::ConnParam> conn_param() const;
  void on_response(const prov::CmEvent& ev);
  Nanos now() const { return provider_.clock().now(); }

  prov::Provider& provider_;
  const Profile& profile_;
  ConnectionObserver* observer_;
  // What the owner said this connection is, fixed at creation.
  struct Given {
    uint64_t tag;
    uint32_t peer;
    uint32_t lane;
    Role role;
    PrivateData private_data;
  };
  Given given_;
  State state_;
  // Declared before qp_ so the id goes after the QP: a transport that never took the QP
  // gets it destroyed while the id still names the connection in logs.
  std::unique_ptr<prov::CmId> id_;
  std::unique_ptr<prov::Qp> qp_;
  // What the peer and the negotiation answered.
  struct Answered {
    std::optional<prov::Ece> offered;  // active: what our REQ carried
    ece::Report ece;
    uint32_t remote_qpn = 0;
    uint8_t peer_srq = 0;  // the SRQ bit of the peer's REQ (passive) or REP (active)
    bool qpless = false;  // a notice: connected without a QP (send_notice())
    Depths req_depths;    // passive: the REQ's READ/atomic depths, in this side's view
    qp::DepthCap answered;  // passive: the depths its REP carries, which cap its QP's
    qp::QpGiven given;
  };
  Answered ans_;
  // Only a failed connection has one: kept out of line so that the common case stays small.
  std::unique_ptr<Failure> failure_;
  Timings t_;
};

}  // namespace wireup::cm
