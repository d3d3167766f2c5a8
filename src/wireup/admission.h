// Admission: how much connecting may be in flight at once. Two windows: active connects
// (start to settle), and QPs created but not yet established, counted per role. The QP
// window is per role because active QPs wait on a remote peer's accept: if they could take
// the places passive accepts need, two ranks whose windows filled with their own connects
// would wait on each other forever. Pairs ready for a QP queue here in arrival order.
// And NoticeLines, for the requests that have no QP at all (the abandon and rtu_lost notices).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// QP-less requests (abandon and rtu_lost notices): one on the wire per destination host, the
// rest wait in order. They all carry QPN 0, and the IB CM refuses a REQ whose sender (CA, QPN)
// one of its ids still holds with REJ 10 (cm_match_req's stale-connection check, one table
// per node): a second notice of ours reaching a node before the first is answered would be
// refused there, unseen by its engine. Notices to other hosts never meet, so they do not wait
// behind one whose host is slow to answer (or dead).
class NoticeLines {
 public:
  // `key` (a pair) has a notice for `host` (the peer's address without its port) ready to send.
  void wait(const std::string& host, uint64_t key);
  // On every line whose last notice is no longer on the wire (`on_wire(key)` false), offers the
  // waiting keys in order to `send` until one is on the wire (`send` true) or none is left.
  // Lines with nothing sent and nothing waiting are forgotten. Returns how many were sent.
  int pump(const std::function<bool(uint64_t)>& on_wire, const std::function<bool(uint64_t)>& send);
  size_t lines() const { return lines_.size(); }
  void clear() { lines_.clear(); }

 private:
  struct Line {
    std::optional<uint64_t> sent;  // the last notice sent on it
    KeyQueue waiting;
  };
  std::map<std::string, Line> lines_;
};

}  // namespace wireup
