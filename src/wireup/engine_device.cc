// The events of the device itself: its async events (ibv_get_async_event, or in transport
// mode the copies the transport handed over: prov::Device reads whichever source its owner
// says, EngineOptions::async_events), COMM_EST answered with rdma_notify, the removal of the
// device (DEVICE_REMOVAL on every id, DEVICE_FATAL on the async fd) and ADDR_CHANGE.
//
// COMM_EST: a passive QP waits in RTR from its REP until the CM says the connection is
// established (cm/connection.h). If the active side's first packet arrives before the RTU (a
// lost or late RTU), the QP raises COMM_EST and the CM must be told, or it goes on resending
// the REP and may end with UNREACHABLE on a working lane. Told, the CM delivers ESTABLISHED
// as if the RTU had come, and the pair settles as usual.
//
// Removal: rdma_cm(7) asks for every id of a removed device to be destroyed, and the device
// cannot be released before (librdmacm closes a device context when its last id goes). So
// every affected connection is reported once and let go of: connecting ones through their
// failure, established ones (steady channel) destroyed here with the QP the transport did not
// take; the listener too, and every pair still open is given up (cause device_removed): a
// rank without its device accepts and starts nothing more.
#include "common/log.h"
#include "wireup/engine.h"

namespace wireup {

using prov::CmEventType;
using prov::DeviceEventType;

const Pair* Engine::pair_of_qpn(uint32_t qpn) const {
  if (qpn == 0) return nullptr;
  for (const Pair& p : pairs_) {
    if (auto* c = p.as<Connecting>(); c && c->conn && c->conn->qp() && c->conn->qp()->qpn() == qpn) return &p;
    // Established: by the result, which keeps the QPN after the transport took the QP.
    if (auto* e = p.as<Established>(); e && records_.results()[e->result].local_qpn == qpn) return &p;
  }
  return nullptr;
}

bool Engine::owns_qp(uint32_t qpn) const { return pair_of_qpn(qpn) != nullptr; }

void Engine::on_device_event(const prov::DeviceEvent& ev) {
  ++stats_[Counter::device_events];
  const Pair* found = prov::scope_of(ev.type) == prov::DeviceEventScope::qp ? pair_of_qpn(ev.qpn) : nullptr;
  Pair* p = found != nullptr ? pairs_.at(pairs_.index(*found)) : nullptr;
  const DeviceEventReport r{ev, p != nullptr, p ? p->peer : 0u, p ? uint32_t{p->lane} : 0u};
  switch (classify(ev.type, p != nullptr)) {
    case DeviceAction::tell_cm:
      return answer_comm_est(ev, p);
    case DeviceAction::lose_device: {
      WIREUP_LOG(error, "rank %u: %s", opt().rank, ev.describe().c_str());
      records_.report(r);
      const std::string why = "the device reported a fatal error (" + ev.device + ")";
      if (auto rail = rails_.rail_named(ev.device); rail && rails_.several() && lose_rail(*rail, why)) return;
      return lose_device(why);
    }
    case DeviceAction::port_down:
    case DeviceAction::port_up:
      port_changed(ev, ev.type == DeviceEventType::port_err);
      break;
    case DeviceAction::note_port:
      WIREUP_LOG(info, "rank %u: %s", opt().rank, ev.describe().c_str());
      break;
    case DeviceAction::warn_connection:
      WIREUP_LOG(warn, "rank %u: %s on the connection to rank %u lane %u", opt().rank, ev.describe().c_str(), p->peer,
                 p->lane);
      break;
    case DeviceAction::not_ours:
      WIREUP_LOG(info, "rank %u: %s (not a QP of this engine's)", opt().rank, ev.describe().c_str());
      break;
  }
  records_.report(r);
}

void Engine::answer_comm_est(const prov::DeviceEvent& ev, Pair* p) {
  auto* cs = p->as<Connecting>();
  // Established already: the RTU came first and the CM knows; nothing to tell.
  if (cs == nullptr || cs->conn->state() != cm::State::accepting) {
    WIREUP_LOG(debug, "rank %u: %s for rank %u lane %u, already %s", opt().rank, ev.describe().c_str(), p->peer,
               p->lane, to_string(p->state()));
    return;
  }
  if (Status s = cs->conn->notify_comm_est(); !s) {
    // The CM may have just moved on (the RTU raced the event): its own event says how.
    WIREUP_LOG(warn, "rank %u lane %u: COMM_EST: %s", p->peer, p->lane, s.message().c_str());
    return;
  }
  ++stats_[Counter::comm_est_notified];
  WIREUP_LOG(info, "rank %u: COMM_EST on qpn 0x%x (rank %u lane %u) before the RTU: told the CM", opt().rank,
             ev.qpn, p->peer, p->lane);
}

void Engine::on_listener_event(prov::CmEvent& ev) {
  switch (ev.type) {
    case CmEventType::device_removal: {
      ++stats_[Counter::device_removals];
      const std::string dev = ev.id->device() ? ev.id->device()->info().name : std::string("?");
      WIREUP_LOG(error, "rank %u: DEVICE_REMOVAL on the listener (%s, device %s): no more requests accepted",
                 opt().rank, ev.id->local_addr().to_string().c_str(), dev.c_str());
      if (channels_.setup) channels_.setup->listeners_removed.push_back(rail_of_tag(ev.id->route().tag));
      records_.report(SteadyEvent{0, 0, ev.type, ev.status, false, SteadyEvent::Scope::listener});
      if (rails_.several() && lose_rail(rail_of_tag(ev.id->route().tag), "the device " + dev + " was removed (DEVICE_REMOVAL on its listener)"))
        return;
      return lose_device("the device " + dev + " was removed (DEVICE_REMOVAL on the listener)");
    }
    case CmEventType::addr_change:
      ++stats_[Counter::addr_changes];
      WIREUP_LOG(warn, "rank %u: ADDR_CHANGE on the listener (%s): the published address may no longer reach it",
                 opt().rank, ev.id->local_addr().to_string().c_str());
      records_.report(SteadyEvent{0, 0, ev.type, ev.status, false, SteadyEvent::Scope::listener});
      return;
    default:
      WIREUP_LOG(warn, "rank %u: listener event %s", opt().rank, ev.describe().c_str());
      return;
  }
}

void Engine::lose_device(const std::string& why) {
  if (!watch_.lose()) return;
  if (channels_.setup) channels_.setup->closing = true;  // the listener takes nothing more
  cm::Failure f;
  f.kind = cm::FailKind::device_removal;
  f.error = Error::make(ErrorCode::device_removed, "wireup", why);
  for (Pair& p : pairs_) {
    if (!p.open()) continue;  // settled already, or idle
    f.error.peer = "rank " + std::to_string(p.peer) + " lane " + std::to_string(p.lane);
    give_up(p, f, PeerError::Cause::device_removed);
  }
  retries_.clear();
  notices_.drop_retries();
  admission_.drop_waiters();
}

void Engine::remove_established(Pair& p) {
  auto* e = p.as<Established>();
  if (e == nullptr || !e->id) return;
  ++stats_[Counter::device_removals];
  const bool transports = !e->qp || records_.handed_over(e->result);
  WIREUP_LOG(error, "rank %u: DEVICE_REMOVAL on the connection to rank %u lane %u%s", opt().rank, p.peer, p.lane,
             transports ? " (the transport holds its QP)" : " (its QP, never taken, is destroyed)");
  // Never handed over: taken back, like a repaired lane (marked withdrawn, its QP pointer
  // would dangle). A QP the transport holds stays its own (in ERR now); the event told it,
  // and its result stays, marked lost (the C API's wrapper of it is disarmed: burying it
  // below destroys nothing of the transport's).
  if (transports) records_.mark_lost(e->result, cm::FailKind::device_removal);
  else records_.withdraw(e->result);
  const prov::Device* dev = e->id->device();
  removed_.push_back(Removed{std::move(e->id), std::move(e->qp)});
  // One rail of several: only the connections on it are lost (each reported by its own event).
  if (rails_.several() && dev != nullptr &&
      lose_rail(rails_.rail_of(dev), "the device was removed (DEVICE_REMOVAL on an established connection)"))
    return;
  lose_device("the device was removed (DEVICE_REMOVAL on an established connection)");
}

void Engine::bury_removed() { removed_.clear(); }

}  // namespace wireup
