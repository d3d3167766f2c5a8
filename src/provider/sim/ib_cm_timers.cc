// The IB CM model, continued: its timers (REQ/REP retransmission and the CM response
// timeout, TIMEWAIT), address and route resolution completing, and teardown and faults (an id
// destroyed mid-protocol, a node that stops, a device removed). The protocol messages are in
// ib_cm.cc.
#include <algorithm>
#include <cerrno>

#include "common/log.h"
#include "provider/sim/channel.h"
#include "provider/sim/cm_id.h"
#include "provider/sim/ib_cm_util.h"
#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

using namespace ibcm;

// --- timers -------------------------------------------------------------------------------

void Core::on_id_timer(SimCmId& id) {
  const bool retry = id.retries_left > 0;
  switch (id.ib) {
    case IbState::req_sent:
    case IbState::mra_req_rcvd:
      if (retry) {
        --id.retries_left;
        ++stats.req_retransmits;
        send_req(id);
        return;
      }
      id.ib = IbState::idle;  // IB_CM_REQ_ERROR
      ++stats.unreachable;
      post_event(id, event(CmEventType::unreachable, -ETIMEDOUT));
      return;
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
      if (retry) {
        --id.retries_left;
        ++stats.rep_retransmits;
        send_rep(id);
        return;
      }
      forget_remote(id);
      id.ib = IbState::idle;  // IB_CM_REP_ERROR
      ++stats.unreachable;
      post_event(id, event(CmEventType::unreachable, -ETIMEDOUT));
      return;
    case IbState::dreq_sent:
      if (retry) {
        --id.retries_left;
        ++stats.dreq_retransmits;
        send_dreq(id);
        return;
      }
      enter_timewait(id);  // IB_CM_DREQ_ERROR
      if (id.cma == CmaState::connect) {
        id.cma = CmaState::disconnect;
        post_event(id, event(CmEventType::disconnected, -ETIMEDOUT));
      }
      return;
    default:
      return;
  }
}

void Core::on_timewait_exit(SimCmId& id) {
  if (id.ib != IbState::timewait) return;
  forget_remote(id);
  id.ib = IbState::idle;
  if (id.cma == CmaState::disconnect) post_event(id, event(CmEventType::timewait_exit));
}

void Core::on_addr_done(SimCmId& id) {
  if (id.cma != CmaState::addr_query) return;
  if (id.addr_ok) {
    id.cma = CmaState::addr_resolved;
    post_event(id, event(CmEventType::addr_resolved));
  } else {
    id.cma = CmaState::addr_bound;
    post_event(id, event(CmEventType::addr_error, -id.op_error));
  }
}

void Core::on_route_done(SimCmId& id) {
  if (id.cma != CmaState::route_query) return;
  if (id.addr_ok) {
    id.cma = CmaState::route_resolved;
    post_event(id, event(CmEventType::route_resolved));
  } else {
    id.cma = CmaState::addr_resolved;
    post_event(id, event(CmEventType::route_error, -id.op_error));
  }
}

// --- teardown and faults ------------------------------------------------------------------

void Core::id_destroyed(SimCmId& id) {
  if (shutting_down) {
    ids.remove(id.self);
    return;
  }
  if (id.events_reported > id.events_acked) {
    const uint32_t unacked = id.events_reported - id.events_acked;
    ++stats.destroyed_with_unacked;
    stats.events_unacked -= unacked;
    WIREUP_LOG(error,
               "sim: id (local %s, peer %s) destroyed with %u retrieved event(s) not acked; "
               "the real rdma_destroy_id would block forever",
               id.local_addr().to_string().c_str(), id.peer_addr().to_string().c_str(), unacked);
  }
  if (id.chan != nullptr) id.chan->drop_events(id.self);
  charge(id.node, latency.destroy_id);
  // cm_destroy_id: what the IB CM tells the peer about a connection that goes away. Sent
  // once (the id's timers die with it).
  switch (id.ib) {
    case IbState::req_sent:
    case IbState::mra_req_rcvd:
      send_simple(id, CmMsg::rej, false, kRejTimeout);
      break;
    case IbState::req_rcvd:
    case IbState::mra_req_sent:
    case IbState::rep_sent:
    case IbState::mra_rep_rcvd:
    case IbState::rep_rcvd:
    case IbState::mra_rep_sent:
      send_simple(id, CmMsg::rej, false, reject_reason::consumer);
      break;
    case IbState::established:
      send_simple(id, CmMsg::dreq, false);
      break;
    case IbState::dreq_rcvd:
      send_simple(id, CmMsg::drep, false);
      break;
    default:
      break;
  }
  forget_remote(id);
  Node& n = node(id.node);
  n.listeners.erase(std::remove(n.listeners.begin(), n.listeners.end(), id.self), n.listeners.end());
  if (id.port_taken) release_port(n, id.ps, id.local_port);
  id.attach(nullptr);
  ids.remove(id.self);
  --stats.ids_alive;
}

void Core::kill_node(uint32_t n) { nodes[n]->dead = true; }

void Core::fail_over(uint32_t n, uint32_t d) {
  std::vector<SimCmId*> hit;
  ids.for_each([&](SimCmId& id) {
    if (id.node == n && id.dev == static_cast<int>(d) && id.cma != CmaState::device_removal &&
        id.cma != CmaState::idle)
      hit.push_back(&id);
  });
  for (SimCmId* id : hit) post_event(*id, event(CmEventType::addr_change));
}

// As mlx5 (the kernel's drivers/infiniband/hw/mlx5/main.c: a port change event becomes
// IB_EVENT_PORT_ERR / IB_EVENT_PORT_ACTIVE naming the port) and rxe (rxe_net.c: NETDEV_DOWN ->
// rxe_port_down, NETDEV_UP -> rxe_port_up, port 1): the port's state and one async event.
// No QP changes state and no rdma_cm id hears of it: connections in RTS stay there (their
// traffic fails once its retries run out, SimQp::peer), and a CM exchange under way times out
// unless the port comes back before its retries end (Core::send, Core::on_message).
void Core::change_port(uint32_t n, uint32_t d, bool up) {
  SimDevice& dev = *nodes[n]->devices[d];
  const PortState to = up ? PortState::active : PortState::down;
  if (dev.removed || dev.spec().port_state == to) return;
  dev.set_port_state(to);
  dev.raise(up ? DeviceEventType::port_active : DeviceEventType::port_err, 0, 1);
}

void Core::remove_device(uint32_t n, uint32_t d) {
  SimDevice& dev = *nodes[n]->devices[d];
  if (dev.removed) return;
  dev.removed = true;
  std::vector<SimCmId*> hit;
  ids.for_each([&](SimCmId& id) {
    if (id.node == n && id.dev == static_cast<int>(d) && id.cma != CmaState::device_removal &&
        id.cma != CmaState::idle)
      hit.push_back(&id);
  });
  for (SimCmId* id : hit) {
    cancel_timer(*id);
    ++id->op_token;
    forget_remote(*id);
    if (id->ib != IbState::none) id->ib = IbState::idle;
    id->cma = CmaState::device_removal;
    post_event(*id, event(CmEventType::device_removal));
  }
  std::vector<SimQp*> qs;
  qps.for_each([&](SimQp& qp) {
    if (&qp.device() == &dev) qs.push_back(&qp);
  });
  for (SimQp* qp : qs) qp->to_error();
  // The device's async fd says so too: IBV_EVENT_DEVICE_FATAL, as the kernel's uverbs sends
  // to every open context of a device that is unregistered.
  dev.raise(DeviceEventType::device_fatal);
}

}  // namespace wireup::prov::sim
