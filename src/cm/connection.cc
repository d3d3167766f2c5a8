#include "cm/connection.h"

#include <algorithm>

#include "common/log.h"
#include "ece/flow.h"

namespace wireup::cm {

using prov::CmEventType;

const char* to_string(State s) {
  switch (s) {
    case State::resolving_addr: return "resolving_addr";
    case State::resolving_route: return "resolving_route";
    case State::route_resolved: return "route_resolved";
    case State::requested: return "requested";
    case State::connecting: return "connecting";
    case State::accepting: return "accepting";
    case State::established: return "established";
    case State::failed: return "failed";
    case State::disconnected: return "disconnected";
  }
  return "?";
}

const char* to_string(FailKind k) {
  switch (k) {
    case FailKind::none: return "none";
    case FailKind::rejected: return "rejected";
    case FailKind::unreachable: return "unreachable";
    case FailKind::address_error: return "address_error";
    case FailKind::route_error: return "route_error";
    case FailKind::connect_error: return "connect_error";
    case FailKind::device_removal: return "device_removal";
    case FailKind::ece_rejected: return "ece_rejected";
    case FailKind::local_error: return "local_error";
    case FailKind::disconnected: return "disconnected";
    case FailKind::timed_out: return "timed_out";
    case FailKind::rtu_lost: return "rtu_lost";
    case FailKind::bad_reply: return "bad_reply";
    case FailKind::abandoned: return "abandoned";
  }
  return "?";
}

std::string Failure::describe() const {
  std::string s = to_string(kind);
  if (kind == FailKind::rejected) s += " (reason " + std::to_string(status) + ")";
  else if (status != 0) s += " (status " + std::to_string(status) + ")";
  if (error.code != ErrorCode::ok) s += ": " + error.message();
  return s;
}

bool PrivateData::assign(std::span<const uint8_t> b) {
  if (b.size() > kCapacity) return false;
  std::copy(b.begin(), b.end(), data_.begin());
  size_ = static_cast<uint8_t>(b.size());
  return true;
}

const Failure& Connection::failure() const {
  static const Failure none;
  return failure_ ? *failure_ : none;
}

Connection::Connection(prov::Provider& p, Role r, const Spec& spec, ConnectionObserver* observer)
    : provider_(p), profile_(*spec.profile), observer_(observer),
      given_{spec.tag, spec.peer, spec.lane, r, spec.private_data},
      state_(r == Role::active ? State::resolving_addr : State::requested) {
  t_.start = now();
}

Connection::~Connection() = default;

Result<std::unique_ptr<Connection>> Connection::start(prov::Provider& p, prov::EventChannel& ch, const Spec& spec,
                                                     ConnectionObserver* observer) {
  std::unique_ptr<Connection> c(new Connection(p, Role::active, spec, observer));
  const Profile& pr = c->profile_;
  auto id = p.create_id(ch, prov::PortSpace::tcp, prov::Route(c.get()));
  if (!id) return Error(id.error()).with_peer(spec.remote.to_string());
  c->id_ = std::move(id).value();
  if (pr.tos) WIREUP_TRY(c->id_->set_tos(*pr.tos));
  const prov::SockAddr* src = pr.local ? &*pr.local : nullptr;
  WIREUP_TRY(c->id_->resolve_addr(src, spec.remote, pr.resolve_addr_timeout_ms));
  return c;
}

std::unique_ptr<Connection> Connection::from_request(prov::Provider& p, prov::CmEvent& req, const Spec& spec,
                                                    ConnectionObserver* observer) {
  std::unique_ptr<Connection> c(new Connection(p, Role::passive, spec, observer));
  c->id_ = std::move(req.new_id);
  c->id_->set_route(prov::Route(c.get()));
  c->ans_.remote_qpn = req.qp_num;
  c->ans_.peer_srq = req.srq;
  c->ans_.req_depths = Depths{req.initiator_depth, req.responder_resources};
  c->t_.request = c->t_.start;
  return c;
}

void Connection::fail(FailKind kind, Error e, int status) {
  if (e.peer.empty()) e.peer = "rank " + std::to_string(given_.peer) + " lane " + std::to_string(given_.lane);
  if (e.qpn == 0 && qp_) e.qpn = qp_->qpn();
  failure_ = std::make_unique<Failure>(Failure{kind, status, {}, std::move(e)});
  state_ = State::failed;
  // A QP that got past INIT may have work queued by the transport; flush it.
  if (qp_ && qp_->state() != prov::QpState::reset) (void)qp::to_error(*qp_);
}

void Connection::fail_event(FailKind kind, const prov::CmEvent& ev) {
  fail(kind, Error::make(ErrorCode::connect_error, prov::to_string(ev.type),
                         std::string("in state ") + to_string(state_)),
       ev.status);
  failure_->private_data = ev.private_data;
  switch (kind) {
    case FailKind::rejected: failure_->error.code = ErrorCode::rejected; break;
    case FailKind::unreachable: failure_->error.code = ErrorCode::unreachable; break;
    case FailKind::address_error: failure_->error.code = ErrorCode::address_error; break;
    case FailKind::route_error: failure_->error.code = ErrorCode::route_error; break;
    case FailKind::device_removal: failure_->error.code = ErrorCode::device_removed; break;
    default: break;
  }
}

Status Connection::make_qp(const qp::QpFactory& factory) {
  prov::Device* dev = id_->device();
  if (dev == nullptr)
    return Error::make(ErrorCode::invalid_state, "make_qp", "the CM id has no device yet");
  auto q = factory(qp::QpRequest{*dev, given_.peer, given_.lane, given_.role == Role::active});
  if (!q) return q.error();
  if (!*q) return Error::make(ErrorCode::invalid_argument, "QpFactory", "the factory returned no QP");
  qp_ = std::move(q).value();
  t_.qp_created = now();
  return qp::to_init(*qp_, *id_, profile_.qp, &ans_.given);
}

Result<prov::ConnParam> Connection::conn_param() const {
  const qp::QpOverrides& o = profile_.qp.get();
  auto local = local_depths(o.max_rd_atomic, o.max_dest_rd_atomic, qp_->device().info());
  if (!local) return Error(local.error()).with_qpn(qp_->qpn());
  const Depths d = given_.role == Role::active ? *local : answer_depths(*local, ans_.req_depths);
  prov::ConnParam p = profile_.param;
  p.qp_num = qp_->qpn();
  p.srq = qp_->has_srq() ? 1 : 0;  // the REQ's/REP's SRQ bit says what the QP is
  p.initiator_depth = d.initiator_depth;
  p.responder_resources = d.responder_resources;
  p.private_data.assign(given_.private_data.bytes().begin(), given_.private_data.bytes().end());
  return p;
}

Status Connection::connect(const qp::QpFactory& factory) {
  if (state_ != State::route_resolved)
    return Error::make(ErrorCode::invalid_state, "Connection::connect",
                       std::string("in state ") + to_string(state_));
  Status s = [&]() -> Status {
    WIREUP_TRY(make_qp(factory));
    auto offered = ece::prepare_active(profile_.ece, *qp_, *id_, ans_.ece);
    if (!offered) return offered.error();
    ans_.offered = *offered;
    auto p = conn_param();
    if (!p) return p.error();
    return id_->connect(*p);
  }();
  if (!s) {
    fail(FailKind::local_error, s.error());
    return s;
  }
  t_.request = now();
  state_ = State::connecting;
  return s;
}

Status Connection::send_notice() {
  if (state_ != State::route_resolved)
    return Error::make(ErrorCode::invalid_state, "Connection::send_notice",
                       std::string("in state ") + to_string(state_));
  ans_.qpless = true;
  prov::ConnParam p = profile_.param;
  p.qp_num = 0;
  p.private_data.assign(given_.private_data.bytes().begin(), given_.private_data.bytes().end());
  if (Status s = id_->connect(p); !s) {
    fail(FailKind::local_error, s.error());
    return s;
  }
  t_.request = now();
  state_ = State::connecting;
  return Status::ok();
}

Status Connection::accept(const qp::QpFactory& factory) {
  if (state_ != State::requested)
    return Error::make(ErrorCode::invalid_state, "Connection::accept",
                       std::string("in state ") + to_string(state_));
  bool refused = false;
  Status s = [&]() -> Status {
    // The active side set its ACK timeout on its own id; this side's QP takes its value from
    // this id (rdma_init_qp_attr for RTS), so it is set here too, before the QP reaches RTS.
    if (profile_.ack_timeout) WIREUP_TRY(id_->set_ack_timeout(*profile_.ack_timeout));
    WIREUP_TRY(make_qp(factory));
    auto refuse = [&](const ece::Decision& d) -> Status {
      refused = true;
      WIREUP_TRY(id_->reject_ece({}));
      return Error::make(ErrorCode::rejected, "rdma_reject_ece", d.why);
    };
    // ECE is set before RTR and read back after it: the firmware decides at that modify.
    auto d = ece::before_rtr_passive(profile_.ece, *qp_, *id_, ans_.ece);
    if (!d) return d.error();
    if (d->reject) return refuse(*d);
    // RTR only: the QP goes to RTS once the CM says the connection is established (the RTU,
    // or COMM_EST through notify_comm_est()). A QP in RTR that receives a request packet
    // before the RTU raises COMM_EST (IBA 11.6.3); one already in RTS raises nothing, and
    // the CM would go on waiting for an RTU that may be lost.
    auto p = conn_param();
    if (!p) return p.error();
    ans_.answered = qp::DepthCap{p->initiator_depth, p->responder_resources};
    WIREUP_TRY(qp::to_rtr(*qp_, *id_, profile_.qp, &ans_.given, &ans_.answered));
    auto taken = ece::confirm(profile_.ece, *std::move(d), *qp_, *id_, ans_.ece, true);
    if (!taken) return taken.error();
    if (taken->reject) return refuse(*taken);
    // The phase stamp keeps its meaning (the QP ready, the REP about to go): what follows,
    // up to ESTABLISHED, is the wait for the RTU (stats.h, Phase::establish).
    t_.rts = now();
    return id_->accept(*p);
  }();
  if (!s) {
    // Tell the peer now rather than letting it time out, with a reason it retries on.
    if (!refused) send_reject();
    fail(refused ? FailKind::ece_rejected : FailKind::local_error, s.error());
    return s;
  }
  state_ = State::accepting;
  return s;
}

void Connection::send_reject() {
  const PrivateData pd = observer_ != nullptr ? observer_->reject_data(*this) : PrivateData{};
  (void)id_->reject(pd.bytes());
}

void Connection::on_response(const prov::CmEvent& ev) {
  t_.response = now();
  ans_.remote_qpn = ev.qp_num;
  ans_.peer_srq = ev.srq;
  if (observer_ != nullptr) {
    if (Status ok = observer_->check_reply(*this, ev.private_data); !ok) {
      // Nothing of the peer's answer reaches the QP: it stays at INIT and is destroyed with
      // this connection (a transport's QP goes back through its release hook).
      send_reject();
      Error e = ok.error();
      if (e.qpn == 0) e.qpn = ev.qp_num;
      return fail(FailKind::bad_reply, std::move(e));
    }
  }
  bool refused = false;
  Status s = [&]() -> Status {
    // INIT again, now that the CM knows the connection: the first INIT was done before
    // rdma_connect, when the kernel had no IB CM id and answered access flags 0 (cma.c,
    // cma_ib_init_qp_attr), which leaves this QP refusing every RDMA WRITE, READ and atomic
    // aimed at it. ib_cm_init_qp_attr answers REMOTE_WRITE, and REMOTE_READ | REMOTE_ATOMIC
    // when the REP's initiator depth is not 0. librdmacm does the same for the QPs it owns
    // (cma.c, ucma_modify_qp_rtr). Before the ECE set: mlx5 hands the stored options to the
    // firmware at the next modify, which must be the RTR.
    WIREUP_TRY(qp::to_init(*qp_, *id_, profile_.qp, &ans_.given));
    auto refuse = [&](const ece::Decision& d) -> Status {
      refused = true;
      WIREUP_TRY(id_->reject_ece({}));
      return Error::make(ErrorCode::rejected, "rdma_reject_ece", d.why);
    };
    auto d = ece::before_rtr_active(profile_.ece, ans_.offered, *qp_, *id_, ans_.ece);
    if (!d) return d.error();
    if (d->reject) return refuse(*d);
    WIREUP_TRY(qp::to_rtr(*qp_, *id_, profile_.qp, &ans_.given));
    auto taken = ece::confirm(profile_.ece, *std::move(d), *qp_, *id_, ans_.ece, false);
    if (!taken) return taken.error();
    if (taken->reject) return refuse(*taken);
    WIREUP_TRY(qp::to_rts(*qp_, *id_, profile_.qp, &ans_.given));
    t_.rts = now();
    return id_->establish();
  }();
  if (!s) {
    if (!refused) send_reject();
    fail(refused ? FailKind::ece_rejected : FailKind::local_error, s.error());
    return;
  }
  t_.established = now();
  state_ = State::established;
}

void Connection::on_event(const prov::CmEvent& ev) {
  switch (ev.type) {
    case CmEventType::addr_resolved:
      if (state_ != State::resolving_addr) break;
      t_.addr_resolved = now();
      if (profile_.ack_timeout) {
        if (Status s = id_->set_ack_timeout(*profile_.ack_timeout); !s) return fail(FailKind::local_error, s.error());
      }
      if (Status s = id_->resolve_route(profile_.resolve_route_timeout_ms); !s)
        return fail(FailKind::local_error, s.error());
      state_ = State::resolving_route;
      return;
    case CmEventType::route_resolved:
      if (state_ != State::resolving_route) break;
      t_.route_resolved = now();
      state_ = State::route_resolved;
      return;
    case CmEventType::connect_response:
      if (state_ != State::connecting) break;
      if (ans_.qpless) {
        // Someone accepted a request that has no QP behind it: refuse the REP so that its
        // side does not wait for an RTU, and report what happened.
        send_reject();
        return fail(FailKind::local_error,
                    Error::make(ErrorCode::protocol_error, "CONNECT_RESPONSE",
                                "the peer accepted a request without a QP (qpn " + std::to_string(ev.qp_num) + ")"));
      }
      return on_response(ev);
    case CmEventType::established:
      if (state_ != State::accepting) break;
      if (Status s = qp::to_rts(*qp_, *id_, profile_.qp, &ans_.given, &ans_.answered); !s) {
        fail(FailKind::local_error, s.error());
        failure_->after_peer_established = true;
        return;
      }
      t_.established = now();
      state_ = State::established;
      return;
    case CmEventType::addr_error: return fail_event(FailKind::address_error, ev);
    case CmEventType::route_error: return fail_event(FailKind::route_error, ev);
    case CmEventType::rejected: return fail_event(FailKind::rejected, ev);
    case CmEventType::unreachable: return fail_event(FailKind::unreachable, ev);
    case CmEventType::connect_error: return fail_event(FailKind::connect_error, ev);
    case CmEventType::device_removal: return fail_event(FailKind::device_removal, ev);
    case CmEventType::disconnected:
      if (state_ == State::established) {
        state_ = State::disconnected;
        return;
      }
      return fail_event(FailKind::disconnected, ev);
    default: break;
  }
  WIREUP_LOG(debug, "rank %u lane %u: %s ignored in state %s", given_.peer, given_.lane,
             prov::to_string(ev.type), to_string(state_));
}

void Connection::on_cm_event(prov::CmEvent& ev) {
  on_event(ev);
  ev.ack();  // before the observer: it may migrate or destroy the id
  if (observer_ != nullptr) observer_->on_connection_changed(*this);
}

Status Connection::migrate(prov::EventChannel& to, prov::Route route) { return id_->migrate(to, route); }

Status Connection::notify_comm_est() {
  if (state_ != State::accepting || given_.role != Role::passive)
    return Error::make(ErrorCode::invalid_state, "Connection::notify_comm_est",
                       std::string("in state ") + to_string(state_));
  return id_->notify_comm_est();
}

Status Connection::disconnect() {
  if (state_ != State::established) return Status::ok();
  return id_->disconnect();
}

}  // namespace wireup::cm
