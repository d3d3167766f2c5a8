#include "provider/sim/channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "provider/sim/cm_id.h"

namespace wireup::prov::sim {
namespace {

// rdma_ack_cm_event of a simulated event: counts the ack on the id that reported it.
class SimAck final : public EventAck {
 public:
  SimAck(Core& core, Handle id) : core_(core), id_(id) {}
  void ack() override {
    if (SimCmId* id = core_.ids.get(id_)) {
      ++id->events_acked;
      --core_.stats.events_unacked;
    }
  }

 private:
  Core& core_;
  Handle id_;
};

}  // namespace

SimEventChannel::SimEventChannel(Core& c, uint32_t n) : core(c), node(n) {
  self = core.channels.add(this);
  ++core.stats.channels_alive;
}

SimEventChannel::~SimEventChannel() {
  // Pending events die with the channel; CONNECT_REQUEST ids among them are rejected.
  std::deque<EventData> dying = std::move(pending_);
  pending_.clear();
  core.stats.events_pending -= dying.size();
  for (EventData& ev : dying)
    if (ev.type == CmEventType::connect_request)
      if (SimCmId* l = core.ids.get(ev.target)) --l->requests_waiting;
  dying.clear();
  if (!attached_.empty()) {
    // The real stack would destroy those ids' kernel state with the channel's fd, and a later
    // rdma_destroy_id would fail on the closed fd. Here they just stop getting events.
    ++core.stats.channels_destroyed_with_ids;
    WIREUP_LOG(error, "sim: event channel destroyed with %zu CM id(s) still on it: the ids must go first",
               attached_.size());
    for (Handle h : attached_)
      if (SimCmId* id = core.ids.get(h)) id->chan = nullptr;
    attached_.clear();
  }
  if (efd_ >= 0) ::close(efd_);
  core.channels.remove(self);
  --core.stats.channels_alive;
}

int SimEventChannel::fd() const {
  if (efd_ < 0) {
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) {
      WIREUP_LOG(warn, "sim: eventfd for an event channel failed (errno %d)", errno);
      return -1;
    }
    fd_readable_ = false;
    sync_fd();
  }
  return efd_;
}

void SimEventChannel::sync_fd() const {
  if (efd_ < 0) return;
  const bool want = !pending_.empty();
  if (want == fd_readable_) return;
  uint64_t v = 1;
  ssize_t rc = want ? ::write(efd_, &v, sizeof v) : ::read(efd_, &v, sizeof v);
  if (rc == static_cast<ssize_t>(sizeof v)) fd_readable_ = want;
}

void SimEventChannel::add_id(SimCmId& id) {
  id.chan_slot = static_cast<uint32_t>(attached_.size());
  attached_.push_back(id.self);
}

void SimEventChannel::remove_id(SimCmId& id) {
  const uint32_t slot = id.chan_slot;
  if (slot >= attached_.size() || attached_[slot] != id.self) return;
  attached_[slot] = attached_.back();
  attached_.pop_back();
  if (slot < attached_.size())
    if (SimCmId* moved = core.ids.get(attached_[slot])) moved->chan_slot = slot;
}

void SimEventChannel::push(EventData ev) {
  pending_.push_back(std::move(ev));
  ++core.stats.events_pending;
  sync_fd();
  core.mark_ready(*this);
}

Result<CmEvent> SimEventChannel::get_event() {
  if (pending_.empty())
    return Status::would_block<"rdma_get_cm_event">();  // every idle progress(): no allocation
  EventData ev = std::move(pending_.front());
  pending_.pop_front();
  --core.stats.events_pending;
  sync_fd();
  // Events of destroyed ids were dropped from the channel, so the reporter exists.
  SimCmId* target = core.ids.get(ev.target);
  CmEvent out;
  out.type = ev.type;
  out.status = ev.status;
  out.private_data = std::move(ev.private_data);
  out.qp_num = ev.qp_num;
  out.responder_resources = ev.responder_resources;
  out.initiator_depth = ev.initiator_depth;
  out.srq = ev.srq;
  ++target->events_reported;
  ++core.stats.events_unacked;
  out.set_ack(std::make_unique<SimAck>(core, ev.target));
  if (ev.type == CmEventType::connect_request) {
    // The new id counts against the listener's backlog until retrieved, and lives on the
    // channel it was retrieved from (ucma creates its context here).
    --target->requests_waiting;
    ev.child->attach(this);
    out.listen_id = target;
    out.id = ev.child.get();
    out.new_id = std::move(ev.child);
  } else {
    out.id = target;
  }
  return out;
}

void SimEventChannel::move_events(Handle target, SimEventChannel& to) {
  if (&to == this) return;
  // The common case (an id migrated once its events were handled) has nothing to move: skip
  // the rebuild, whose fresh deque costs two allocations.
  if (std::none_of(pending_.begin(), pending_.end(), [&](const EventData& ev) { return ev.target == target; }))
    return;
  std::deque<EventData> keep;
  bool moved = false;
  for (EventData& ev : pending_) {
    if (ev.target == target) {
      to.pending_.push_back(std::move(ev));
      moved = true;
    } else {
      keep.push_back(std::move(ev));
    }
  }
  pending_ = std::move(keep);
  sync_fd();
  if (moved) {
    to.sync_fd();
    core.mark_ready(to);
  }
}

void SimEventChannel::drop_events(Handle target) {
  if (std::none_of(pending_.begin(), pending_.end(), [&](const EventData& ev) { return ev.target == target; }))
    return;
  std::deque<EventData> keep;
  std::deque<EventData> dying;
  for (EventData& ev : pending_) (ev.target == target ? dying : keep).push_back(std::move(ev));
  pending_ = std::move(keep);
  core.stats.events_pending -= dying.size();
  sync_fd();
  // Destroyed after the channel is consistent: a CONNECT_REQUEST id rejects its peer.
  dying.clear();
}

}  // namespace wireup::prov::sim
