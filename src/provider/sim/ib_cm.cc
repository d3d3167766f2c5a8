// The IB CM model: REQ/MRA/REJ/REP/RTU/DREQ/DREP, their retransmission timers, duplicates,
// TIMEWAIT, and the rdma_cm events each produces. It follows Linux drivers/infiniband/core
// cm.c (protocol) and cma.c (which IB CM event becomes which rdma_cm event).
#include <algorithm>
#include <cerrno>

#include "common/log.h"
#include "provider/sim/channel.h"
#include "provider/sim/cm_id.h"
#include "provider/sim/verbs.h"

#include "provider/sim/ib_cm_util.h"

namespace wireup::prov::sim {

using namespace ibcm;


// --- sending ------------------------------------------------------------------------------

void Core::arm_timer(SimCmId& id, Nanos at) {
  ++id.timer_token;
  schedule_id(at, TimerKind::id_timer, id, id.timer_token);
}

void Core::cancel_timer(SimCmId& id) { ++id.timer_token; }

void Core::send_req(SimCmId& id) {
  Msg m = base_msg(id, CmMsg::req);
  m.dst_comm = Handle{};
  m.dst_port = id.peer_port;
  m.qpn = id.local_qpn;
  m.psn = id.local_psn;
  m.ece = id.local_ece;
  m.responder_resources = id.responder_resources;
  m.initiator_depth = id.initiator_depth;
  m.retry_count = id.retry_count;
  m.rnr_retry_count = id.rnr_retry_count;
  m.srq = id.srq;
  m.mtu = port_mtu(id);
  m.private_data = id.sent_pd;
  Nanos depart = cpu_start(id.node);
  send(std::move(m), depart);
  arm_timer(id, depart + latency.cm_attempt_timeout());
}

void Core::send_rep(SimCmId& id) {
  Msg m = base_msg(id, CmMsg::rep);
  m.qpn = id.local_qpn;
  m.psn = id.local_psn;
  // librdmacm ucma_copy_ece_param_to_kern_rep: the REQ's vendor id, our accepted options.
  m.ece = Ece{id.remote_ece.vendor_id, id.local_ece.options};
  m.responder_resources = id.responder_resources;
  m.initiator_depth = id.initiator_depth;
  m.rnr_retry_count = id.sent_rnr_retry;
  m.srq = id.srq;
  m.mtu = port_mtu(id);
  m.private_data = id.sent_pd;
  Nanos depart = cpu_start(id.node);
  send(std::move(m), depart);
  arm_timer(id, depart + latency.cm_attempt_timeout());
}

void Core::send_dreq(SimCmId& id) {
  Nanos depart = cpu_start(id.node);
  send(base_msg(id, CmMsg::dreq), depart);
  arm_timer(id, depart + latency.cm_attempt_timeout());
}

void Core::send_simple(SimCmId& id, CmMsg type, bool user, int reason, std::span<const uint8_t> pd) {
  Msg m = base_msg(id, type);
  m.reason = reason;
  m.private_data.assign(pd.begin(), pd.end());
  if (type == CmMsg::mra) ++stats.mra_sent;
  send(std::move(m), user ? cpu_start(id.node) : now());
}

void Core::reply_to(const Msg& to, CmMsg type, int reason) {
  Msg r;
  r.type = type;
  r.src_node = to.dst_node;
  r.dst_node = to.src_node;
  r.src_ip = to.dst_ip;
  r.dst_ip = to.src_ip;
  r.src_comm = to.dst_comm;  // invalid when answering a REQ: "local comm id 0"
  r.dst_comm = to.src_comm;
  r.reason = reason;
  send(std::move(r), now());
}

void Core::enter_timewait(SimCmId& id) {
  id.ib = IbState::timewait;
  ++id.timer_token;
  schedule_id(now() + latency.timewait(), TimerKind::timewait_exit, id, id.timer_token);
}

void Core::forget_remote(SimCmId& id) {
  if (!id.is_passive() || !id.remote_comm.valid()) return;
  Node& n = node(id.node);
  const uint64_t key = id.remote_comm.packed();
  if (auto q = n.by_remote_qpn.find(remote_qpn_key(id.remote_ip, id.remote_qpn));
      q != n.by_remote_qpn.end() && q->second == id.self)
    n.by_remote_qpn.erase(q);
  auto it = n.by_remote.find(key);
  if (it == n.by_remote.end() || it->second != id.self) return;
  n.by_remote.erase(it);
  // The kernel keeps the connection's timewait info after the id is gone: a late duplicate
  // REQ is then answered with REJ "stale connection" instead of a new CONNECT_REQUEST.
  if (!accepted_state(id.ib)) return;
  n.tombstones[key] = now() + latency.timewait();
  if (n.tombstones.size() > n.tombstone_sweep_at) {
    std::erase_if(n.tombstones, [this](const auto& t) { return t.second <= now(); });
    n.tombstone_sweep_at = std::max<size_t>(64, 2 * n.tombstones.size());
  }
}

SimCmId* Core::find_listener(Node& n, PortSpace ps, uint32_t ip, uint16_t port) {
  SimCmId* wildcard = nullptr;
  for (Handle h : n.listeners) {
    SimCmId* l = ids.get(h);
    if (l == nullptr || l->ps != ps || l->local_port != port) continue;
    if (l->local_ip == ip) return l;
    if (l->local_ip == 0 && wildcard == nullptr) wildcard = l;
  }
  return wildcard;
}

// --- receiving ----------------------------------------------------------------------------

void Core::on_message(Msg& m) {
  Node& dst = node(m.dst_node);
  SimDevice* dev = device_at(m.dst_ip);
  if (dst.dead || dev == nullptr || dev->node != m.dst_node || !dev->usable()) {
    ++stats.messages_unroutable;  // nobody answers: the sender's timers will notice
    return;
  }
  ++stats.messages_delivered;
  if (m.type == CmMsg::req) {
    handle_req(m);
    return;
  }
  SimCmId* id = ids.get(m.dst_comm);
  if (id != nullptr && (id->node != m.dst_node ||
                        (id->remote_comm.valid() && id->remote_comm != m.src_comm)))
    id = nullptr;
  if (id == nullptr) {
    if (m.type == CmMsg::dreq) reply_to(m, CmMsg::drep, 0);  // cm_issue_drep
    return;
  }
  switch (m.type) {
    case CmMsg::rep: handle_rep(m, *id); break;
    case CmMsg::rtu: handle_rtu(*id); break;
    case CmMsg::rej: handle_rej(m, *id); break;
    case CmMsg::mra: handle_mra(*id); break;
    case CmMsg::dreq: handle_dreq(m, id); break;
    case CmMsg::drep: handle_drep(*id); break;
    case CmMsg::req: break;
  }
}

void Core::handle_req(Msg& m) {
  Node& n = node(m.dst_node);
  const uint64_t key = m.src_comm.packed();
  if (auto it = n.by_remote.find(key); it != n.by_remote.end()) {
    if (SimCmId* child = ids.get(it->second)) {
      // cm_dup_req_handler: MRA while the user holds the request, REJ stale in TIMEWAIT,
      // otherwise dropped (a REP answered it and has its own retransmission timer).
      if (child->ib == IbState::mra_req_sent) send_simple(*child, CmMsg::mra, false);
      else if (child->ib == IbState::timewait) reply_to(m, CmMsg::rej, kRejStaleConn);
      return;
    }
    n.by_remote.erase(it);
  }
  if (auto t = n.tombstones.find(key); t != n.tombstones.end()) {
    if (t->second > now()) {
      reply_to(m, CmMsg::rej, kRejStaleConn);
      return;
    }
    n.tombstones.erase(t);
  }
  // cm_match_req's stale-connection check: a REQ from a (device, QPN) that one of our ids
  // still holds is refused with REJ stale, and a connection behind that id is disconnected.
  // QP-less REQs all carry QPN 0: while one from a device waits here for its answer, the next
  // from that device (any process on its node, any destination on ours) is refused too.
  const uint64_t qkey = remote_qpn_key(m.src_ip, m.qpn);
  if (auto q = n.by_remote_qpn.find(qkey); q != n.by_remote_qpn.end()) {
    if (SimCmId* holder = ids.get(q->second)) {
      ++stats.stale_qpn_rejects;
      reply_to(m, CmMsg::rej, kRejStaleConn);
      if (holder->ib == IbState::established) {  // ib_send_cm_dreq; in any other state it refuses
        holder->ib = IbState::dreq_sent;
        holder->retries_left = latency.max_cm_retries;
        send_dreq(*holder);
      }
      return;
    }
    n.by_remote_qpn.erase(q);
  }
  SimCmId* l = find_listener(n, m.ps, m.dst_ip, m.dst_port);
  if (l == nullptr) {
    reply_to(m, CmMsg::rej, reject_reason::no_listener);  // IB_CM_REJ_INVALID_SERVICE_ID
    return;
  }
  if (int reason = faults.forced_reject(m.src_node, m.dst_node); reason != 0) {
    ++stats.forced_rejects;
    reply_to(m, CmMsg::rej, reason);
    return;
  }
  if (l->requests_waiting >= l->backlog) {
    // ucma_event_handler answers -ENOMEM; cm_destroy_id then drops the REQ without a REJ
    // ("do not reject to allow future retries"): the active side retransmits.
    ++stats.backlog_drops;
    return;
  }
  SimDevice* dev = device_at(m.dst_ip);
  auto child = std::make_unique<SimCmId>(*this, n.index, nullptr, m.ps, Route{});
  SimCmId& c = *child;
  c.passive = true;
  c.listener = l->self;
  c.cma = CmaState::connect;
  c.dev = static_cast<int>(dev->index);
  c.local_ip = m.dst_ip;
  c.local_port = m.dst_port;
  c.bound = true;
  c.peer_port = m.src_port;
  c.has_peer = true;
  c.remote_node = m.src_node;
  c.remote_comm = m.src_comm;
  c.remote_ip = m.src_ip;
  c.remote_qpn = m.qpn;
  c.remote_psn = m.psn;
  c.remote_ece = m.ece;
  // The passive side's view: its responder resources are the active's initiator depth.
  c.responder_resources = m.initiator_depth;
  c.initiator_depth = m.responder_resources;
  c.retry_count = m.retry_count;
  c.rnr_retry_count = m.rnr_retry_count;
  c.srq = m.srq;
  c.path_mtu_bytes = std::min(m.mtu, dev->spec().active_mtu);
  c.local_psn = static_cast<uint32_t>(rng() & 0xFFFFFF);
  // cma_ib_req_handler prepares a delayed MRA once the event is queued to the user.
  c.ib = IbState::mra_req_sent;
  n.by_remote[key] = c.self;
  n.by_remote_qpn[qkey] = c.self;

  EventData ev = event(CmEventType::connect_request);
  ev.private_data = padded(m.private_data, m.ps == PortSpace::tcp ? private_data_limit::req_tcp
                                                                   : private_data_limit::req_ib);
  ev.qp_num = m.qpn;
  ev.responder_resources = m.initiator_depth;
  ev.initiator_depth = m.responder_resources;
  ev.srq = m.srq;
  ev.child = std::move(child);
  ++l->requests_waiting;
  stats.backlog_peak = std::max<uint64_t>(stats.backlog_peak, static_cast<uint64_t>(l->requests_waiting));
  post_event(*l, std::move(ev));
}

void Core::handle_rep(Msg& m, SimCmId& id) {
  switch (id.ib) {
    case IbState::req_sent:
    case IbState::mra_req_rcvd: {
      cancel_timer(id);
      std::vector<uint8_t>().swap(id.sent_pd);  // the REQ will not be sent again
      id.remote_comm = m.src_comm;
      id.remote_qpn = m.qpn;
      id.remote_psn = m.psn;
      id.remote_ece = m.ece;
      id.initiator_depth = m.responder_resources;
      id.responder_resources = m.initiator_depth;
      id.rnr_retry_count = m.rnr_retry_count;
      id.path_mtu_bytes = std::min(m.mtu, port_mtu(id));
      id.ib = IbState::mra_rep_sent;  // cma prepares a delayed MRA before CONNECT_RESPONSE
      // The id never has a QP of its own in this library: CONNECT_RESPONSE, not ESTABLISHED.
      EventData ev = event(CmEventType::connect_response);
      ev.private_data = padded(m.private_data, private_data_limit::rep);
      ev.qp_num = m.qpn;
      ev.responder_resources = m.initiator_depth;
      ev.initiator_depth = m.responder_resources;
      ev.srq = m.srq;
      post_event(id, std::move(ev));
      return;
    }
    case IbState::mra_rep_sent:
      send_simple(id, CmMsg::mra, false);  // cm_dup_rep_handler
      return;
    case IbState::established:
      send_simple(id, CmMsg::rtu, false);  // our RTU was lost: say it again
      return;
    default:
      return;
  }
}

void Core::handle_rtu(SimCmId& id) {
  if (id.ib != IbState::rep_sent && id.ib != IbState::mra_rep_rcvd) return;  // duplicate
  cancel_timer(id);
  std::vector<uint8_t>().swap(id.sent_pd);  // the REP will not be sent again
  id.ib = IbState::established;
  post_event(id, event(CmEventType::established));
}

void Core::handle_rej(Msg& m, SimCmId& id) {
  switch (id.ib) {
    case IbState::req_sent:
    case IbState::mra_req_rcvd:
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
      cancel_timer(id);
      [[fallthrough]];
    case IbState::req_rcvd:
    case IbState::mra_req_sent:
      forget_remote(id);
      if (m.reason == kRejStaleConn) enter_timewait(id);
      else id.ib = IbState::idle;
      break;
    case IbState::rep_rcvd:
    case IbState::mra_rep_sent:
      enter_timewait(id);
      break;
    default:
      return;  // see fabric.h: a REJ for an established connection is ignored
  }
  EventData ev = event(CmEventType::rejected, m.reason);
  ev.private_data = padded(m.private_data, private_data_limit::rej);
  post_event(id, std::move(ev));
}

void Core::handle_mra(SimCmId& id) {
  if (id.ib == IbState::req_sent) id.ib = IbState::mra_req_rcvd;
  else if (id.ib == IbState::rep_sent) id.ib = IbState::mra_rep_rcvd;
  else if (id.ib != IbState::mra_req_rcvd && id.ib != IbState::mra_rep_rcvd) return;
  arm_timer(id, now() + latency.mra_timeout());  // cm_mra_handler: ib_modify_mad
}

void Core::handle_dreq(Msg&, SimCmId* id) {
  switch (id->ib) {
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
    case IbState::dreq_sent:
      cancel_timer(*id);
      break;
    case IbState::established:
      break;
    case IbState::timewait:
      send_simple(*id, CmMsg::drep, false);  // our DREP was lost
      return;
    default:
      return;
  }
  id->ib = IbState::dreq_rcvd;
  // No DREP yet: the kernel answers only when the user calls rdma_disconnect (or destroys
  // the id). Until then the peer's DISCONNECTED waits, up to its DREQ retries.
  if (id->cma == CmaState::connect) {
    id->cma = CmaState::disconnect;
    post_event(*id, event(CmEventType::disconnected));
  }
}

void Core::handle_drep(SimCmId& id) {
  if (id.ib != IbState::dreq_sent) return;
  cancel_timer(id);
  enter_timewait(id);
  if (id.cma == CmaState::connect) {
    id.cma = CmaState::disconnect;
    post_event(id, event(CmEventType::disconnected));
  }
}

}  // namespace wireup::prov::sim
