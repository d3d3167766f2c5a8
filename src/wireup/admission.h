// Admission: how much connecting may be in flight at once. Two windows: active connects
// (start to settle), and QPs created but not yet established, counted per role. The QP
// window is per role because active QPs wait on a remote peer's accept: if they could take
// the places passive accepts need, two ranks whose windows filled with their own connects
// would wait on each other forever. Pairs ready for a QP queue here in arrival order.
// (The notices, which have no QP at all, go one per host in Notices' lines: notices.h.)
#pragma once

#include <cstdint>

#include "cm/connection.h"
#include "wireup/fifo.h"

namespace wireup {

// A FIFO of pair keys (fifo.h): storage reused once the queue drains, released on demand.
using KeyQueue = Fifo<uint64_t>;

class Admission {
 public:
  Admission(uint32_t connect_window, uint32_t qp_window) : connect_window_(connect_window), qp_window_(qp_window) {}

  // Active connects.
  bool connect_room() const { return connects_ < connect_window_; }
  bool try_acquire_connect() { return connect_room() && (++connects_, true); }
  void release_connect();
  uint32_t connects_in_flight() const { return connects_; }

  // QP places, per role. A pair waits in its role's queue until grant() hands it a place.
  void wait_for_qp(cm::Role r, uint64_t key) { waiters_[idx(r)].push_back(key); }
  // The next waiting key of role `r` if a place is free (the key leaves the queue; the place
  // is taken only by try_acquire_qp, once the caller checked the pair still wants it).
  bool next_waiter(cm::Role r, uint64_t* key);
  bool try_acquire_qp(cm::Role r) { return qps_[idx(r)] < qp_window_ && (++qps_[idx(r)], true); }
  void release_qp(cm::Role r);
  uint32_t qps_in_flight(cm::Role r) const { return qps_[idx(r)]; }
  // A grant could happen now (a waiter and a free place of its role).
  bool qp_grant_ready() const;

  // Wireup over: nobody waits any more; release the queues' memory.
  void drop_waiters();

 private:
  static int idx(cm::Role r) { return static_cast<int>(r); }

  uint32_t connect_window_;
  uint32_t qp_window_;
  uint32_t connects_ = 0;
  uint32_t qps_[2] = {0, 0};  // cm::Role as index
  KeyQueue waiters_[2];
};

}  // namespace wireup
