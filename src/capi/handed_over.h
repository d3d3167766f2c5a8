// The results the C API has handed to the transport, each by its identity (peer, lane, QPN and
// the transport's own QP pointer), in the order they were handed over: the table that
// wireup_result_count / wireup_result_get show.
//
// A result is handed over at the end of the wireup_progress() call that recorded it (and
// before wireup_destroy closes the engine) if it is still a connection then: its QP is marked
// kept (prov::Qp::keep), which the engine honours (it never takes a kept QP back for an RTU
// repair: it reports the lane lost instead) and which disarms the release callback for it.
// A result the engine took back within that same call (withdrawn) was never the transport's:
// it is not listed, and its QP was released like any attempt that did not connect.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "wireup/engine.h"

struct ibv_qp;

namespace wireup::capi {

class HandedOver {
 public:
  struct Entry {
    uint32_t result = 0;  // index of the engine's record (Engine::results())
    uint32_t peer = 0;
    uint32_t lane = 0;
    uint32_t qpn = 0;
    ibv_qp* qp = nullptr;  // what the transport's factory returned
    bool closed = false;   // on demand: the lane was disconnected since (the QP stays the transport's)
  };

  // Hands over what the engine's results gained since the last call; returns how many were
  // handed over.
  size_t take_new(const Engine& engine);

  size_t size() const { return entries_.size(); }
  const Entry& operator[](size_t i) const { return entries_[i]; }
  bool holds(uint32_t peer, uint32_t lane) const { return lanes_.count({peer, lane}) != 0; }
  // The table index of the engine's result `result`, if it was handed over.
  std::optional<size_t> index_of(uint32_t result) const;
  // On demand: the lane was disconnected; its entry stays (closed), a later connection of the
  // lane is a new entry.
  void close_lane(uint32_t peer, uint32_t lane);

  // The engine's record of `e` must still be the connection handed over; a kept result is
  // never withdrawn, so a mismatch is a bug, named with the entry's identity.
  // `qp` is the result's QP in the engine now (Engine::qp).
  static Status still_same(const ConnResult& r, const prov::Qp* qp, const Entry& e);

 private:
  std::vector<Entry> entries_;
  std::set<std::tuple<uint32_t, uint32_t>> lanes_;  // (peer, lane) handed over
  size_t scanned_ = 0;  // engine records looked at so far (they are append-only)
};

}  // namespace wireup::capi
