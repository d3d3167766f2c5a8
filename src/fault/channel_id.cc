// The fault provider's event channel and CM id (fault/wrap.h).
#include <cerrno>

#include "common/log.h"
#include "fault/wrap.h"

namespace wireup::fault {

// --- FaultChannel -----------------------------------------------------------------------------

Result<prov::CmEvent> FaultChannel::get_event() {
  if (!held_.empty()) {
    prov::CmEvent ev = std::move(held_.front());
    held_.pop_front();
    return ev;
  }
  auto r = inner_->get_event();
  if (!r) return r;  // would_block stays would_block; never counted, never injected
  const void* site = WIREUP_FAULT_SITE;
  auto ev = translate(std::move(r).value(), site);
  if (!ev) return ev;
  if (prov_.plan().hit(Kind::get_event, site)) {
    // The real read failed before the event left the kernel: it stays first in line. Its
    // native ack is done now, so that a destroy or migrate of its id cannot wait on it
    // (rdma_destroy_id waits for the acks of retrieved events; this one was not retrieved).
    ev->ack();
    held_.push_front(std::move(ev).value());
    return Plan::error(Kind::get_event);
  }
  return ev;
}

Result<prov::CmEvent> FaultChannel::translate(prov::CmEvent ev, const void* site) {
  if (ev.type == prov::CmEventType::connect_request && ev.new_id) {
    prov::Route r = ev.new_id->route();
    auto child = std::make_unique<FaultCmId>(prov_, std::move(ev.new_id), *this, r);
    ev.listen_id = prov_.id_of(ev.listen_id);
    ev.id = child.get();
    ev.new_id = std::move(child);
  } else {
    FaultCmId* id = prov_.id_of(ev.id);
    if (id == nullptr && ev.id != nullptr)
      WIREUP_LOG(error, "fault provider: %s for an id it did not make", ev.describe().c_str());
    ev.id = id;
    ev.listen_id = prov_.id_of(ev.listen_id);
  }
  // The error events of the kernel's own resolution handlers, in place of the success.
  if (ev.type == prov::CmEventType::addr_resolved && prov_.plan().hit(Kind::addr_event, site)) {
    ev.type = prov::CmEventType::addr_error;
    ev.status = -info(Kind::addr_event).err;
  } else if (ev.type == prov::CmEventType::route_resolved &&
             prov_.plan().hit(Kind::route_event, site)) {
    ev.type = prov::CmEventType::route_error;
    ev.status = -info(Kind::route_event).err;
  }
  return ev;
}

FaultChannel::~FaultChannel() {
  // Held events may own new ids whose destruction looks at held_: empty it first.
  std::deque<prov::CmEvent> held = std::move(held_);
  held_.clear();
}

std::vector<prov::CmEvent> FaultChannel::take_events_of(const prov::CmId* id) {
  std::vector<prov::CmEvent> out;
  for (auto it = held_.begin(); it != held_.end();) {
    const bool mine = it->id == id || (it->type == prov::CmEventType::connect_request && it->listen_id == id);
    if (mine) {
      out.push_back(std::move(*it));
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void FaultChannel::put_events(std::vector<prov::CmEvent> evs) {
  for (auto& e : evs) held_.push_back(std::move(e));
}

// --- FaultCmId --------------------------------------------------------------------------------

FaultCmId::FaultCmId(FaultProvider& p, std::unique_ptr<prov::CmId> inner, FaultChannel& ch, prov::Route r)
    : CmId(r), prov_(p), inner_(std::move(inner)), channel_(&ch) {
  prov_.add_id(*this);
}

FaultCmId::~FaultCmId() {
  // The kernel drops the queued events of an id it destroys (ucma_destroy_id ->
  // ucma_cleanup_ctx_events), a listener's pending requests with it: so do the held ones.
  { auto dropped = channel_->take_events_of(this); }
  prov_.remove_id(*this);
}

bool FaultCmId::fails(Kind k, const void* site) { return prov_.plan().hit(k, site); }

Error FaultCmId::failure(Kind k) const { return Plan::error(k, inner_->peer_addr().to_string()); }

#define WIREUP_FAULT_CALL(kind, call)                                          \
  do {                                                                         \
    if (fails(kind, WIREUP_FAULT_SITE)) return failure(kind);                 \
    return call;                                                               \
  } while (0)

Status FaultCmId::bind_addr(const prov::SockAddr& addr) {
  WIREUP_FAULT_CALL(Kind::bind_addr, inner_->bind_addr(addr));
}
Status FaultCmId::resolve_addr(const prov::SockAddr* src, const prov::SockAddr& dst, int timeout_ms) {
  if (fails(Kind::resolve_addr, WIREUP_FAULT_SITE)) return Plan::error(Kind::resolve_addr, dst.to_string());
  return inner_->resolve_addr(src, dst, timeout_ms);
}
Status FaultCmId::resolve_route(int timeout_ms) {
  WIREUP_FAULT_CALL(Kind::resolve_route, inner_->resolve_route(timeout_ms));
}
Status FaultCmId::listen(int backlog) { WIREUP_FAULT_CALL(Kind::listen, inner_->listen(backlog)); }
Status FaultCmId::connect(const prov::ConnParam& param) {
  WIREUP_FAULT_CALL(Kind::connect, inner_->connect(param));
}
Status FaultCmId::accept(const prov::ConnParam& param) {
  WIREUP_FAULT_CALL(Kind::accept, inner_->accept(param));
}
Status FaultCmId::reject(std::span<const uint8_t> private_data) {
  WIREUP_FAULT_CALL(Kind::reject, inner_->reject(private_data));
}
Status FaultCmId::reject_ece(std::span<const uint8_t> private_data) {
  WIREUP_FAULT_CALL(Kind::reject, inner_->reject_ece(private_data));
}
Status FaultCmId::establish() { WIREUP_FAULT_CALL(Kind::establish, inner_->establish()); }
Status FaultCmId::disconnect() { WIREUP_FAULT_CALL(Kind::disconnect, inner_->disconnect()); }
Status FaultCmId::set_tos(uint8_t tos) { WIREUP_FAULT_CALL(Kind::set_option, inner_->set_tos(tos)); }
Status FaultCmId::set_reuseaddr(bool on) {
  WIREUP_FAULT_CALL(Kind::set_option, inner_->set_reuseaddr(on));
}
Status FaultCmId::set_ack_timeout(uint8_t timeout) {
  WIREUP_FAULT_CALL(Kind::set_option, inner_->set_ack_timeout(timeout));
}
Result<prov::QpAttrWithMask> FaultCmId::init_qp_attr(prov::QpState state) {
  if (fails(Kind::init_qp_attr, WIREUP_FAULT_SITE)) return failure(Kind::init_qp_attr);
  return inner_->init_qp_attr(state);
}

Status FaultCmId::migrate_native(prov::EventChannel& to) {
  auto* target = dynamic_cast<FaultChannel*>(&to);
  if (target == nullptr)
    return Error::make(ErrorCode::invalid_argument, "rdma_migrate_id",
                       "the target channel is not one of the fault provider's");
  if (fails(Kind::migrate, WIREUP_FAULT_SITE)) return failure(Kind::migrate);
  if (Status s = inner_->migrate(target->inner(), inner_->route()); !s) return s;
  // Pending events travel with the id (rdma_migrate_id(3)).
  target->put_events(channel_->take_events_of(this));
  channel_ = target;
  return Status::ok();
}

prov::Device* FaultCmId::device() const { return prov_.device_of(inner_->device()); }

}  // namespace wireup::fault
