// One rdma_cm event as the provider hands it out: its fields copied out of the native event,
// the ack that releases the native one, and the sink an id's events are dispatched to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "provider/types.h"

namespace wireup::prov {

class CmId;

// Provider-private ack token of one retrieved event (rdma_ack_cm_event for rdma).
class EventAck {
 public:
  virtual ~EventAck() = default;
  virtual void ack() = 0;
};

// The provider's ack of one event, done at most once: when asked, when the token is replaced
// by another event's, or when it goes away.
class AckToken {
 public:
  AckToken() = default;
  explicit AckToken(std::unique_ptr<EventAck> a) : a_(std::move(a)) {}
  AckToken(AckToken&&) noexcept = default;
  AckToken& operator=(AckToken&& o) noexcept {
    if (this != &o) {
      ack();
      a_ = std::move(o.a_);
    }
    return *this;
  }
  ~AckToken() { ack(); }
  void ack() {
    if (a_) std::exchange(a_, nullptr)->ack();
  }
  bool pending() const { return a_ != nullptr; }

 private:
  std::unique_ptr<EventAck> a_;
};

// One rdma_cm_event, copied out of the provider (private data is owned here, so it stays
// readable after the ack). The event must be acked before its new_id is destroyed
// (rdma_destroy_id waits for the acks of its events): the ack token is the first member, so the
// defaulted move assignment acks the old event before it replaces new_id, and the destructor
// acks before any member goes. Moves are defaulted so that a field added here is moved too.
class CmEvent {
  AckToken ack_;  // first: see above

 public:
  CmEvent() = default;
  CmEvent(CmEvent&&) noexcept = default;
  CmEvent& operator=(CmEvent&&) noexcept = default;
  ~CmEvent() { ack(); }

  CmEventType type = CmEventType::addr_error;
  int status = 0;              // errno-like (negative) or IB reject reason for REJECTED
  CmId* id = nullptr;          // the id the event is for (CONNECT_REQUEST: the new one)
  CmId* listen_id = nullptr;   // CONNECT_REQUEST only
  std::vector<uint8_t> private_data;
  // rdma_conn_param of CONNECT_REQUEST / CONNECT_RESPONSE / ESTABLISHED
  uint32_t qp_num = 0;         // the remote QPN the peer put in its REQ/REP
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t srq = 0;
  // CONNECT_REQUEST: the new id; whoever takes it owns it. If nobody takes it, it is
  // destroyed with the event, after the ack.
  std::unique_ptr<CmId> new_id;

  void ack() { ack_.ack(); }
  bool acked() const { return !ack_.pending(); }
  void set_ack(std::unique_ptr<EventAck> a) { ack_ = AckToken(std::move(a)); }
  std::string describe() const;
};

// Handles the events of the ids routed to it. Called by dispatch() with the event un-acked;
// the event is acked when the handler returns, unless the handler acked it already.
class CmEventSink {
 public:
  virtual void on_cm_event(CmEvent& ev) = 0;

 protected:
  ~CmEventSink() = default;
};

}  // namespace wireup::prov
