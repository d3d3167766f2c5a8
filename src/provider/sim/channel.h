// A simulated rdma_event_channel: a FIFO of events, and an eventfd that is readable exactly
// while the FIFO is not empty.
//
// The eventfd is created lazily, on the first fd() call: a 4096-node run with two channels per
// node would otherwise hold 8192 descriptors that nobody polls (the sim is driven through
// Provider::wait / SimFabric::step). fd() returns -1 only if eventfd() itself fails.
#pragma once

#include <deque>

#include "provider/sim/core.h"

namespace wireup::prov::sim {

class SimEventChannel final : public EventChannel {
 public:
  SimEventChannel(Core& core, uint32_t node);
  ~SimEventChannel() override;
  int fd() const override;
  Result<CmEvent> get_event() override;

  // --- sim internals ---
  void push(EventData ev);
  bool has_pending() const { return !pending_.empty(); }
  bool maybe_pending() const override { return has_pending(); }
  // Moves the pending events reported by `target` to `to`, in order (rdma_migrate_id).
  void move_events(Handle target, SimEventChannel& to);
  // Drops the pending events reported by `target` (the id is being destroyed).
  void drop_events(Handle target);

  // The ids whose events go here (SimCmId::attach keeps it), so that destroying the channel
  // finds them without scanning the fabric.
  void add_id(SimCmId& id);
  void remove_id(SimCmId& id);
  size_t ids_attached() const { return attached_.size(); }

  Core& core;
  uint32_t node;
  Handle self;
  bool in_ready = false;

 private:
  void sync_fd() const;

  std::deque<EventData> pending_;
  std::vector<Handle> attached_;
  mutable int efd_ = -1;
  mutable bool fd_readable_ = false;
};

}  // namespace wireup::prov::sim
