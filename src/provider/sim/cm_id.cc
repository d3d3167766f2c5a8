// The rdma_cm calls of a simulated id: argument and state checks as librdmacm + the kernel make
// them (same errno values), then the IB CM machinery of ib_cm.cc.
#include "provider/sim/cm_id.h"

#include <cerrno>

#include "provider/sim/channel.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

const char* to_string(CmaState s) {
  static const char* names[] = {"IDLE",    "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY",
                                "ROUTE_RESOLVED", "CONNECT", "DISCONNECT", "ADDR_BOUND",
                                "LISTEN",  "DEVICE_REMOVAL"};
  auto i = static_cast<size_t>(s);
  return i < std::size(names) ? names[i] : "?";
}

const char* to_string(IbState s) {
  static const char* names[] = {"NONE",         "IDLE",         "REQ_SENT",    "MRA_REQ_RCVD",
                                "REQ_RCVD",     "MRA_REQ_SENT", "REP_SENT",    "MRA_REP_RCVD",
                                "REP_RCVD",     "MRA_REP_SENT", "ESTABLISHED", "DREQ_SENT",
                                "DREQ_RCVD",    "TIMEWAIT"};
  auto i = static_cast<size_t>(s);
  return i < std::size(names) ? names[i] : "?";
}

namespace {
// RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH: "use the device maximum".
constexpr uint8_t kUseMax = 0xFF;

std::string state_of(const SimCmId& id) {
  return std::string("id is ") + to_string(id.cma) + " (IB CM " + to_string(id.ib) + ")";
}

bool knows_peer(IbState s) {
  switch (s) {
    case IbState::req_rcvd:
    case IbState::mra_req_sent:
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
    case IbState::rep_rcvd:
    case IbState::mra_rep_sent:
    case IbState::established:
      return true;
    default:
      return false;
  }
}

// RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d
Gid ipv4_gid(uint32_t ip) {
  Gid g;
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = static_cast<uint8_t>(ip >> 24);
  g.raw[13] = static_cast<uint8_t>(ip >> 16);
  g.raw[14] = static_cast<uint8_t>(ip >> 8);
  g.raw[15] = static_cast<uint8_t>(ip);
  return g;
}

// enum ibv_mtu of a byte count: 256 -> 1 ... 4096 -> 5
uint32_t mtu_enum(uint32_t bytes) {
  uint32_t e = 1;
  while (e < 5 && (256u << e) <= bytes) ++e;
  return e;
}
}  // namespace

SimCmId::SimCmId(Core& c, uint32_t n, SimEventChannel* ch, PortSpace p, Route route)
    : CmId(route), core(c), node(n), ps(p) {
  self = core.ids.add(this);
  ++core.stats.ids_alive;
  attach(ch);
}

SimCmId::~SimCmId() { core.id_destroyed(*this); }

void SimCmId::attach(SimEventChannel* ch) {
  if (chan != nullptr) chan->remove_id(*this);
  chan = ch;
  if (chan != nullptr) chan->add_id(*this);
}

SimDevice* SimCmId::bound_device() const {
  if (dev < 0) return nullptr;
  return core.node(node).devices[static_cast<size_t>(dev)].get();
}

Device* SimCmId::device() const { return bound_device(); }
SockAddr SimCmId::local_addr() const { return bound ? SockAddr::ipv4(local_ip, local_port) : SockAddr(); }
SockAddr SimCmId::peer_addr() const { return has_peer ? SockAddr::ipv4(remote_ip, peer_port) : SockAddr(); }
EventChannel* SimCmId::channel() const { return chan; }

Error SimCmId::fail(const char* call, int err, std::string detail) const {
  Error e = Error::from_errno(call, err, std::move(detail));
  if (has_peer) e.peer = peer_addr().to_string();
  return e;
}

Status SimCmId::require_device(const char* call) const {
  SimDevice* d = bound_device();
  if (d == nullptr) return fail(call, EINVAL, "the id has no device yet (resolve_addr or bind first)");
  if (d->removed) return fail(call, ENODEV, "device " + d->info().name + " was removed");
  return Status::ok();
}

Status SimCmId::bind_addr(const SockAddr& addr) {
  const char* call = "rdma_bind_addr";
  if (cma != CmaState::idle) return fail(call, EINVAL, state_of(*this));
  if (addr.family() != AF_INET)
    return fail(call, EAFNOSUPPORT, "sim nodes have IPv4 addresses only");
  Node& n = core.node(node);
  int d = -1;
  if (uint32_t ip = addr.ipv4_addr(); ip != 0) {
    SimDevice* sd = core.device_at(ip);
    if (sd == nullptr || sd->node != node)
      return fail(call, EADDRNOTAVAIL,
                  addr.to_string() + " is not an address of sim node " + std::to_string(node));
    if (sd->removed) return fail(call, ENODEV, "device " + sd->info().name + " was removed");
    d = static_cast<int>(sd->index);
  }
  uint16_t port = addr.port();
  if (port == 0) {
    port = core.alloc_port(n, ps);
    if (port == 0) return fail(call, EADDRINUSE, "no ephemeral port left");
  } else if (!core.take_port(n, ps, port)) {
    return fail(call, EADDRINUSE, "port " + std::to_string(port) + " is in use");
  }
  port_taken = true;
  local_ip = addr.ipv4_addr();
  local_port = port;
  bound = true;
  dev = d;
  cma = CmaState::addr_bound;
  core.charge(node, core.latency.bind);
  return Status::ok();
}

Status SimCmId::resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) {
  const char* call = "rdma_resolve_addr";
  if (dst.family() != AF_INET)
    return Error::from_errno(call, EAFNOSUPPORT, "sim nodes have IPv4 addresses only")
        .with_peer(dst.to_string());
  if (cma == CmaState::idle) {
    WIREUP_TRY(bind_addr(src != nullptr ? *src : SockAddr::ipv4(0, 0)));
  } else if (cma != CmaState::addr_bound) {
    return fail(call, EINVAL, state_of(*this));
  }
  const uint32_t dip = dst.ipv4_addr();
  if ((dip & 0xFF000000u) != kSubnetBase)
    return Error::from_errno(call, ENETUNREACH, "only 10.0.0.0/8 is routed in the sim fabric")
        .with_peer(dst.to_string());
  SimDevice* target = core.device_at(dip);
  Node& n = core.node(node);
  if (dev < 0) {
    // Pick the local device on the same rail as the destination, else the first usable one.
    if (target != nullptr && target->index < n.devices.size() && n.devices[target->index]->usable())
      dev = static_cast<int>(target->index);
    for (size_t i = 0; dev < 0 && i < n.devices.size(); ++i)
      if (n.devices[i]->usable()) dev = static_cast<int>(i);
    if (dev < 0) return fail(call, ENODEV, "sim node " + std::to_string(node) + " has no usable device");
    local_ip = n.devices[static_cast<size_t>(dev)]->ip();
  }
  SimDevice* mine = bound_device();
  if (mine->removed) return fail(call, ENODEV, "device " + mine->info().name + " was removed");
  remote_ip = dip;
  peer_port = dst.port();
  has_peer = true;
  remote_node = target != nullptr ? target->node : UINT32_MAX;
  cma = CmaState::addr_query;
  ++op_token;
  // Unknown or silent address: the neighbour never resolves and the query times out
  // (addr.c requeues until timeout_ms, then -ETIMEDOUT).
  addr_ok = target != nullptr && !core.node(target->node).dead && target->usable() &&
            mine->usable() && !core.faults.addr_error();
  op_error = ETIMEDOUT;
  Nanos start = core.cpu_start(node);
  Nanos at = addr_ok ? start + core.latency.resolve_addr : start + std::chrono::milliseconds(timeout_ms);
  core.schedule_id(at, TimerKind::addr_done, *this, op_token);
  return Status::ok();
}

Status SimCmId::resolve_route(int timeout_ms) {
  const char* call = "rdma_resolve_route";
  if (cma != CmaState::addr_resolved) return fail(call, EINVAL, state_of(*this));
  WIREUP_TRY(require_device(call));
  cma = CmaState::route_query;
  ++op_token;
  // RoCE resolves the route locally (no SA query); it fails only on a dead port or by fault.
  addr_ok = bound_device()->usable() && !core.faults.route_error();
  op_error = ETIMEDOUT;
  Nanos start = core.cpu_start(node);
  Nanos at = addr_ok ? start + core.latency.resolve_route : start + std::chrono::milliseconds(timeout_ms);
  core.schedule_id(at, TimerKind::route_done, *this, op_token);
  return Status::ok();
}

Status SimCmId::listen(int bl) {
  if (cma == CmaState::idle) WIREUP_TRY(bind_addr(SockAddr::ipv4(0, 0)));
  if (cma != CmaState::addr_bound) return fail("rdma_listen", EINVAL, state_of(*this));
  backlog = (bl <= 0 || bl > core.max_backlog) ? core.max_backlog : bl;  // ucma_listen
  cma = CmaState::listen;
  core.node(node).listeners.push_back(self);
  return Status::ok();
}

Status SimCmId::connect(const ConnParam& param) {
  const char* call = "rdma_connect";
  if (cma != CmaState::route_resolved) return fail(call, EINVAL, state_of(*this)).with_qpn(param.qp_num);
  // The kernel (ib_send_cm_req) refuses more than the REQ's field minus the rdma_cm header.
  const size_t limit = ps == PortSpace::tcp ? private_data_limit::req_tcp : private_data_limit::req_ib;
  if (param.private_data.size() > limit)
    return fail(call, EINVAL,
                "private data of " + std::to_string(param.private_data.size()) +
                    " bytes exceeds the " + std::to_string(limit) + " bytes of a REQ in this port space")
        .with_qpn(param.qp_num);
  WIREUP_TRY(require_device(call));
  const uint8_t max = bound_device()->spec().max_rd_atomic;
  if ((param.responder_resources != kUseMax && param.responder_resources > max) ||
      (param.initiator_depth != kUseMax && param.initiator_depth > max))
    return fail(call, EINVAL, "responder_resources/initiator_depth above the device's " +
                                  std::to_string(max))
        .with_qpn(param.qp_num);
  responder_resources = param.responder_resources == kUseMax ? max : param.responder_resources;
  initiator_depth = param.initiator_depth == kUseMax ? max : param.initiator_depth;
  retry_count = param.retry_count;
  rnr_retry_count = param.rnr_retry_count;
  srq = param.srq;
  local_qpn = param.qp_num;
  local_psn = static_cast<uint32_t>(core.rng() & 0xFFFFFF);
  sent_pd = param.private_data;
  remote_comm = Handle{};
  cma = CmaState::connect;
  ib = IbState::req_sent;
  retries_left = core.latency.max_cm_retries;
  core.send_req(*this);
  return Status::ok();
}

Status SimCmId::accept(const ConnParam& param) {
  const char* call = "rdma_accept";
  if (!passive || (ib != IbState::req_rcvd && ib != IbState::mra_req_sent))
    return fail(call, EINVAL, "not a connection request awaiting an answer: " + state_of(*this))
        .with_qpn(param.qp_num);
  if (param.private_data.size() > private_data_limit::rep)
    return fail(call, EINVAL,
                "private data of " + std::to_string(param.private_data.size()) +
                    " bytes exceeds the 196 bytes of a REP")
        .with_qpn(param.qp_num);
  WIREUP_TRY(require_device(call));
  const uint8_t max = bound_device()->spec().max_rd_atomic;
  if ((param.responder_resources != kUseMax && param.responder_resources > max) ||
      (param.initiator_depth != kUseMax && param.initiator_depth > max))
    return fail(call, EINVAL, "responder_resources/initiator_depth above the device's " +
                                  std::to_string(max))
        .with_qpn(param.qp_num);
  // librdmacm rdma_accept: the user's values, or min(what the REQ asked, device maximum).
  responder_resources = param.responder_resources == kUseMax ? std::min(responder_resources, max)
                                                             : param.responder_resources;
  initiator_depth = param.initiator_depth == kUseMax ? std::min(initiator_depth, max)
                                                     : param.initiator_depth;
  sent_rnr_retry = param.rnr_retry_count;
  srq = param.srq;
  local_qpn = param.qp_num;
  sent_pd = param.private_data;
  ib = IbState::rep_sent;
  retries_left = core.latency.max_cm_retries;
  core.send_rep(*this);
  return Status::ok();
}

Status SimCmId::send_reject(const char* call, std::span<const uint8_t> pd, int reason) {
  if (pd.size() > private_data_limit::rej)
    return fail(call, EINVAL, "private data of " + std::to_string(pd.size()) +
                                  " bytes exceeds the 148 bytes of a REJ");
  switch (ib) {
    case IbState::req_rcvd:
    case IbState::mra_req_sent:
    case IbState::rep_rcvd:
    case IbState::mra_rep_sent:
      core.send_simple(*this, CmMsg::rej, true, reason, pd);
      core.forget_remote(*this);
      ib = IbState::idle;  // cm_send_rej_locked: cm_reset_to_idle
      return Status::ok();
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
      core.cancel_timer(*this);
      core.send_simple(*this, CmMsg::rej, true, reason, pd);
      core.forget_remote(*this);
      core.enter_timewait(*this);
      return Status::ok();
    default:
      return fail(call, EINVAL, "nothing to reject: " + state_of(*this));
  }
}

Status SimCmId::reject(std::span<const uint8_t> pd) {
  return send_reject("rdma_reject", pd, reject_reason::consumer);
}

Status SimCmId::reject_ece(std::span<const uint8_t> pd) {
  return send_reject("rdma_reject_ece", pd, reject_reason::vendor_option);
}

Status SimCmId::establish() {
  if (passive || (ib != IbState::rep_rcvd && ib != IbState::mra_rep_sent))
    return fail("rdma_establish", EINVAL, "no CONNECT_RESPONSE to answer: " + state_of(*this));
  ib = IbState::established;
  core.send_simple(*this, CmMsg::rtu, true);
  // The active side gets no event: ESTABLISHED is the passive side's, on the RTU.
  return Status::ok();
}

Status SimCmId::disconnect() {
  if (ib == IbState::none) return fail("rdma_disconnect", EINVAL, "never connected: " + state_of(*this));
  if (ib == IbState::established) {
    ib = IbState::dreq_sent;
    retries_left = core.latency.max_cm_retries;
    core.send_dreq(*this);
  } else if (ib == IbState::dreq_rcvd) {
    core.send_simple(*this, CmMsg::drep, true);
    core.enter_timewait(*this);
  }
  // Any other state: the kernel's DREQ and DREP both refuse, and rdma_disconnect still
  // returns 0. So does this.
  return Status::ok();
}

Status SimCmId::notify_comm_est() {
  if (ib == IbState::established) return fail("rdma_notify", EISCONN, state_of(*this));
  if (ib != IbState::rep_sent && ib != IbState::mra_rep_rcvd)
    return fail("rdma_notify", EINVAL, state_of(*this));
  // A receive completed before the RTU: the connection is established (IB_CM_USER_ESTABLISHED).
  core.cancel_timer(*this);
  ib = IbState::established;
  EventData ev;
  ev.type = CmEventType::established;
  core.post_event(*this, std::move(ev));
  return Status::ok();
}

Status SimCmId::set_tos(uint8_t t) {
  tos = t;
  return Status::ok();
}

Status SimCmId::set_reuseaddr(bool on) {
  // rdma_set_reuseaddr: before binding, or to turn it off while not listening.
  if (cma != CmaState::idle && (on || cma == CmaState::listen))
    return fail("rdma_set_option", EINVAL, "RDMA_OPTION_ID_REUSEADDR: " + state_of(*this));
  reuseaddr = on;
  return Status::ok();
}

Status SimCmId::set_ack_timeout(uint8_t t) {
  ack_timeout = t;
  ack_timeout_set = true;
  return Status::ok();
}

Result<QpAttrWithMask> SimCmId::init_qp_attr(QpState state) {
  const char* call = "rdma_init_qp_attr";
  WIREUP_TRY(require_device(call));
  QpAttrWithMask out;
  QpAttr& a = out.attr;
  a.qp_state = state;
  a.port_num = 1;
  a.pkey_index = 0;
  if (ib == IbState::none) {
    // No IB CM id yet (before rdma_connect): cma_ib_init_qp_attr answers INIT attributes
    // whatever state was asked for, as the kernel does.
    a.qp_access_flags = 0;
    out.mask = qp_mask::state | qp_mask::pkey_index | qp_mask::port | qp_mask::access_flags;
    return out;
  }
  const bool connected = knows_peer(ib) || ib == IbState::req_sent || ib == IbState::mra_req_rcvd;
  switch (state) {
    case QpState::init:
      if (!connected) return fail(call, EINVAL, std::string("for INIT: ") + state_of(*this));
      a.qp_access_flags = access::remote_write;
      if (responder_resources != 0) a.qp_access_flags |= access::remote_read | access::remote_atomic;
      out.mask = qp_mask::state | qp_mask::access_flags | qp_mask::pkey_index | qp_mask::port;
      return out;
    case QpState::rtr:
      if (!knows_peer(ib))
        return fail(call, EINVAL, std::string("for RTR: the CM does not know the peer yet: ") + state_of(*this));
      a.ah_attr.dgid = ipv4_gid(remote_ip);
      a.ah_attr.is_global = 1;
      a.ah_attr.hop_limit = 64;  // RoCE v2: an IP TTL
      a.ah_attr.traffic_class = tos;
      a.ah_attr.port_num = 1;
      a.path_mtu = mtu_enum(path_mtu_bytes);
      a.dest_qp_num = remote_qpn;
      a.rq_psn = local_psn;  // cma: rq_psn = our own starting PSN, the one our REQ/REP carried
      a.max_dest_rd_atomic = responder_resources;
      a.min_rnr_timer = 0;
      out.mask = qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn |
                 qp_mask::rq_psn | qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer;
      return out;
    case QpState::rts:
      if (!knows_peer(ib))
        return fail(call, EINVAL, std::string("for RTS: the CM does not know the peer yet: ") + state_of(*this));
      a.sq_psn = remote_psn;
      // cm_init_av_by_path: packet lifetime + 1; RDMA_OPTION_ID_ACK_TIMEOUT overrides.
      a.timeout = ack_timeout_set ? ack_timeout : static_cast<uint8_t>(core.latency.packet_lifetime + 1);
      a.retry_cnt = retry_count;
      a.rnr_retry = rnr_retry_count;
      a.max_rd_atomic = initiator_depth;
      out.mask = qp_mask::state | qp_mask::sq_psn | qp_mask::timeout | qp_mask::retry_cnt |
                 qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic;
      return out;
    default:
      return fail(call, EINVAL, std::string("the CM gives attributes for INIT, RTR and RTS, not ") +
                                    prov::to_string(state));
  }
}

Status SimCmId::set_local_ece(const Ece& ece) {
  if (ece.vendor_id == 0) return fail("rdma_set_local_ece", EINVAL, "vendor_id 0");
  local_ece = ece;
  return Status::ok();
}

Result<Ece> SimCmId::get_remote_ece() { return remote_ece; }

Status SimCmId::migrate_native(EventChannel& to) {
  auto* target = dynamic_cast<SimEventChannel*>(&to);
  if (target == nullptr || &target->core != &core || target->node != node)
    return fail("rdma_migrate_id", EINVAL, "target channel belongs to another provider or node");
  if (events_reported > events_acked)
    return Error::make(ErrorCode::invalid_state, "rdma_migrate_id",
                       std::to_string(events_reported - events_acked) +
                           " retrieved event(s) of this id are not acked: the real call blocks "
                           "until they are; the single-threaded sim refuses instead")
        .with_peer(peer_addr().to_string());
  if (chan != nullptr) chan->move_events(self, *target);
  attach(target);
  return Status::ok();
}

}  // namespace wireup::prov::sim
