// Admission: how much connecting may be in flight at once, per rail. Two windows: active
// connects (start to settle), and QPs created but not yet established, counted per role. The
// QP window is per role because active QPs wait on a remote peer's accept: if they could take
// the places passive accepts need, two ranks whose windows filled with their own connects
// would wait on each other forever.
//
// Every rail has its own windows, of the configured sizes: each rail is its own HCA here and
// its own listener (and backlog) at the peer, so a rail whose peers are slow or whose window
// is full must not hold back the lanes of another. A pair counts against the rail it runs on
// (an active lane's local rail, a passive one's listener), and gives its places back there.
// Pairs ready for a QP queue per rail and role in arrival order; active pairs whose attempt is
// due while their rail's connect window is full queue per rail too. With one rail this is
// exactly one set of windows. (The notices, which have no QP at all, go one per host in
// Notices' lines: notices.h.)
#pragma once

#include <cstdint>
#include <vector>

#include "cm/connection.h"
#include "wireup/fifo.h"

namespace wireup {

// A FIFO of pair keys (fifo.h): storage reused once the queue drains, released on demand.
using KeyQueue = Fifo<uint64_t>;

// The most a window ever held at once.
struct WindowPeaks {
  uint32_t connects = 0;
  uint32_t qps[2] = {0, 0};  // cm::Role as index
};

class Admission {
 public:
  Admission(uint32_t connect_window, uint32_t qp_window, uint32_t rails = 1);

  uint32_t rails() const { return static_cast<uint32_t>(rails_.size()); }

  // Active connects on `rail`.
  bool connect_room(uint32_t rail) const { return rails_[rail].connects < connect_window_; }
  bool try_acquire_connect(uint32_t rail);
  void release_connect(uint32_t rail);
  uint32_t connects_in_flight(uint32_t rail) const { return rails_[rail].connects; }
  // An active pair whose attempt is due but whose rail had no room: taken before any other
  // start on that rail (next_connect_waiter), in arrival order.
  void wait_for_connect(uint32_t rail, uint64_t key) { rails_[rail].due.push_back(key); }
  bool next_connect_waiter(uint32_t rail, uint64_t* key);
  // A rail with a pair waiting for its connect window and room for it.
  bool connect_ready() const;

  // QP places, per rail and role. A pair waits in its rail's queue of its role until
  // next_waiter() hands it over.
  void wait_for_qp(uint32_t rail, cm::Role r, uint64_t key) { rails_[rail].waiters[idx(r)].push_back(key); }
  // The next waiting key of role `r` on `rail` if a place is free there (the key leaves the
  // queue; the place is taken only by try_acquire_qp, once the caller checked the pair still
  // wants it, on this rail).
  bool next_waiter(uint32_t rail, cm::Role r, uint64_t* key);
  bool try_acquire_qp(uint32_t rail, cm::Role r);
  void release_qp(uint32_t rail, cm::Role r);
  uint32_t qps_in_flight(uint32_t rail, cm::Role r) const { return rails_[rail].qps[idx(r)]; }
  // A grant could happen now on some rail (a waiter and a free place of its role).
  bool qp_grant_ready() const;

  // Rail `rail` carries nothing more: every key waiting on it (for its connect window, then
  // for its QP places, both roles), its queues emptied. Places already held stay counted
  // until their pairs give them back.
  std::vector<uint64_t> take_waiters(uint32_t rail);

  // The peaks of one rail's windows, and of the sums over every rail.
  const WindowPeaks& peaks(uint32_t rail) const { return rails_[rail].peaks; }
  const WindowPeaks& peaks_total() const { return total_peaks_; }

  // Wireup over: nobody waits any more; release the queues' memory.
  void drop_waiters();

 private:
  static int idx(cm::Role r) { return static_cast<int>(r); }
  struct Rail {
    uint32_t connects = 0;
    uint32_t qps[2] = {0, 0};  // cm::Role as index
    KeyQueue due;              // active pairs due, waiting for the connect window
    KeyQueue waiters[2];       // pairs waiting for a QP place, by role
    WindowPeaks peaks;
  };

  uint32_t connect_window_;
  uint32_t qp_window_;
  std::vector<Rail> rails_;
  // The windows' sums over the rails now, and their peaks.
  WindowPeaks total_;
  WindowPeaks total_peaks_;
};

}  // namespace wireup
