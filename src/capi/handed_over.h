// The results the C API has handed to the transport, each by its identity (peer, lane, QPN and
// the transport's own QP pointer): the table that wireup_result_count / wireup_result_get show.
//
// A connection is handed over at the end of the wireup_progress() call that made it (its READY
// lane event names its result slot in the engine), if it is still a connection then: the
// engine records it (Engine::hand_over: it never takes the connection back for an RTU repair,
// it reports the lane lost instead) and its QP's release callback is disarmed
// (TransportQp::hand_over).
// A connection the engine took back within that same call (withdrawn, or its lane closed) was
// never the transport's: it is not listed, and its QP was released like any attempt that did
// not connect.
//
// One entry per (peer, lane), in the order the lanes were first handed over: the engine keeps
// one result slot per pair (wireup/records.h), and a lane connected again on demand, after its
// LANE_CLOSED, gets its new connection written over its entry, so the index the transport was
// given stays the lane's and the table holds nothing per connect/disconnect cycle.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "wireup/engine.h"

struct ibv_qp;

namespace wireup::capi {

class HandedOver {
 public:
  struct Entry {
    uint32_t result = 0;  // the lane's result slot in the engine (Engine::results())
    uint32_t peer = 0;
    uint32_t lane = 0;
    uint32_t qpn = 0;
    ibv_qp* qp = nullptr;  // what the transport's factory returned
    bool closed = false;   // on demand: the lane was disconnected since (the QP stays the transport's)
  };

  // Hands over the connection now in the engine's result slot `result` (a READY lane event
  // named it), unless it is not one any more (withdrawn, or its lane closed, within the same
  // call) or was handed over already. Returns whether it handed it over.
  bool take(Engine& engine, uint32_t result);

  size_t size() const { return entries_.size(); }
  const Entry& operator[](size_t i) const { return entries_[i]; }
  // The table index of the engine's result slot `result`, if its lane was ever handed over.
  std::optional<size_t> index_of(uint32_t result) const;
  // Whether the entry of slot `result` is the connection the engine holds there now, handed
  // over and its lane not closed: what a READY of the lane may announce.
  bool current(const Engine& engine, uint32_t result) const;
  // On demand: the lane of result slot `result` was disconnected (Records::kNoSlot: it never
  // connected); its entry stays, closed, until the lane's next connection is written over it.
  void close_lane(uint32_t result);

  // How the engine's record of entry `e` stands against it; `qp` is the record's QP in the
  // engine now (Engine::qp).
  enum class Standing : uint8_t {
    same,             // the connection handed over (held), or for a closed lane the one
                      // it was (nothing holds its QP in the engine: the transport's)
    connected_again,  // the lane's next connection took the slot and is handed over when the
                      // wireup_progress() under way returns (seen only from its callbacks)
    lost,             // anything else: a bug (a result handed over is never withdrawn; one
                      // whose connection went is marked ConnResult::lost and stays `same`)
  };
  static Standing standing(const ConnResult& r, const prov::Qp* qp, const Entry& e);
  // "rank P lane L qpn 0x..", for messages.
  static std::string identity(const Entry& e);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<Entry> entries_;
  std::vector<uint32_t> index_of_slot_;  // by engine result slot: its entry, or kNone
};

}  // namespace wireup::capi
