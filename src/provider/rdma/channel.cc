// rdma_event_channel wrapper: non-blocking get, events copied out and acked through RAII.
#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "provider/rdma/convert.h"
#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {
namespace {

class RdmaAck final : public EventAck {
 public:
  explicit RdmaAck(rdma_cm_event* ev) : ev_(ev) {}
  void ack() override {
    if (rdma_ack_cm_event(ev_) != 0) WIREUP_LOG(warn, "rdma_ack_cm_event: %s", std::strerror(errno));
  }

 private:
  rdma_cm_event* ev_;
};

}  // namespace

RdmaEventChannel::~RdmaEventChannel() {
  if (shared_->ids != 0) {
    WIREUP_LOG(error, "rdma event channel destroyed with %zu CM id(s) still on it: the ids must go first; "
               "the native channel is left open so that destroying them later stays safe", shared_->ids);
    shared_->owner = nullptr;
    return;
  }
  rdma_destroy_event_channel(shared_->ch);
  delete shared_;
}

bool RdmaEventChannel::worth_reading(Nanos now) {
  if (maybe_pending_) return true;
  if (!next_read_) next_read_ = now + kPollInterval;
  return now >= *next_read_;
}

Result<CmEvent> RdmaEventChannel::get_event() {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(shared_->ch, &ev) != 0) {
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      maybe_pending_ = false;
      next_read_.reset();
      return Status::would_block<"rdma_get_cm_event">();  // every idle progress(): no allocation
    }
    return Error::from_errno("rdma_get_cm_event", err);
  }
  maybe_pending_ = true;  // another may follow
  CmEvent out;
  out.set_ack(std::make_unique<RdmaAck>(ev));
  out.type = from_rdma(ev->event);
  out.status = ev->status;
  const bool has_conn = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
                        ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
                        ev->event == RDMA_CM_EVENT_ESTABLISHED ||
                        ev->event == RDMA_CM_EVENT_REJECTED ||
                        ev->event == RDMA_CM_EVENT_DISCONNECTED;
  if (has_conn && ev->param.conn.private_data != nullptr && ev->param.conn.private_data_len > 0) {
    auto* p = static_cast<const uint8_t*>(ev->param.conn.private_data);
    out.private_data.assign(p, p + ev->param.conn.private_data_len);
  }
  if (has_conn) {
    out.qp_num = ev->param.conn.qp_num;
    out.responder_resources = ev->param.conn.responder_resources;
    out.initiator_depth = ev->param.conn.initiator_depth;
    out.srq = ev->param.conn.srq;
  }
  if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    // librdmacm made a new id that inherited the listener's context; wrap it, re-point it.
    out.listen_id = static_cast<CmId*>(ev->listen_id->context);
    auto child = std::make_unique<RdmaCmId>(prov_, ev->id, *this, Route{});
    out.id = child.get();
    out.new_id = std::move(child);
  } else {
    out.id = static_cast<CmId*>(ev->id->context);
    if (ev->listen_id != nullptr) out.listen_id = static_cast<CmId*>(ev->listen_id->context);
  }
  return out;
}

}  // namespace wireup::prov::rdma
