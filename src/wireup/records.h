// What the engine hands back: results (a withdrawn one is marked, never erased) and errors,
// each (peer, lane) owning one slot of each; and the steady-state events, passed to the
// transport's callback.
//
// A pair's result slot is given the first time it connects; every later connection of the
// same pair (on demand: the lane closed and asked again; bulk: an RTU repair) is written over
// it, and likewise its error slot each time it is given up. So an index never moves, and an
// on-demand engine that connects and disconnects forever holds one result and one error per
// (peer, lane) it ever used, nothing per cycle.
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "wireup/engine_types.h"

namespace wireup {

class Records {
 public:
  using SteadyCallback = std::function<void(const SteadyEvent&)>;
  using DeviceCallback = std::function<void(const DeviceEventReport&)>;
  using LaneCallback = std::function<void(const LaneEvent&)>;
  using PeerDownCallback = std::function<void(const PeerDown&)>;

  static constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();

  // Bulk: one slot per planned pair, so no growth on the per-connection path.
  void reserve(size_t pairs) {
    results_.reserve(pairs);
    result_slot_.reserve(pairs);
  }
  // Records the connection of pair `pair` (its PairTable index) in the pair's result slot,
  // given now if it has none; returns the slot.
  uint32_t put_result(uint32_t pair, ConnResult r);
  // The pair's result slot, kNoSlot if it never connected.
  uint32_t result_slot(uint32_t pair) const {
    return pair < result_slot_.size() ? result_slot_[pair] : kNoSlot;
  }
  // The index of `l` in the link table (ConnResult::link), added if new; nullopt once 65,536
  // distinct ones are in it (each a different device or ECE outcome: never in practice).
  std::optional<uint16_t> intern(const LinkInfo& l);
  const LinkInfo& link(uint16_t i) const { return links_.at(i); }
  // The engine took the connection back before the transport got it (RTU repair).
  void withdraw(uint32_t result);
  // The transport was given the connection in slot `result` (Engine::hand_over). One way for
  // that connection: the pair's next one, written over the slot, starts not handed over.
  void hand_over(uint32_t result) { results_.at(result).handed_over = true; }
  bool handed_over(uint32_t result) const { return results_.at(result).handed_over; }
  // The connection in slot `result` is gone (ConnResult::lost); the first cause stays.
  void mark_lost(uint32_t result, cm::FailKind why) {
    ConnResult& r = results_.at(result);
    if (r.lost == cm::FailKind::none) r.lost = why;
  }
  // Records why pair `pair` was given up in its error slot (given now if it has none).
  uint32_t put_error(uint32_t pair, PeerError e);

  const std::vector<ConnResult>& results() const { return results_; }
  const std::vector<PeerError>& errors() const { return errors_; }
  size_t withdrawn() const { return withdrawn_; }

  void on_steady_event(SteadyCallback cb) { steady_cb_ = std::move(cb); }
  void report(const SteadyEvent& e) const {
    if (steady_cb_) steady_cb_(e);
  }
  // A peer gone as a whole (peer_down.h): apart from the steady events, whose consumers count
  // CM events.
  void on_peer_down(PeerDownCallback cb) { down_cb_ = std::move(cb); }
  void report(const PeerDown& d) const {
    if (down_cb_) down_cb_(d);
  }
  void on_device_event(DeviceCallback cb) { device_cb_ = std::move(cb); }
  void report(const DeviceEventReport& e) const {
    if (device_cb_) device_cb_(e);
  }
  // Lane events wait for deliver_lanes(): the engine calls it when a progress() call's work is
  // done, so the callback may call back into the engine. Nothing is queued without a callback.
  void on_lane_event(LaneCallback cb) { lane_cb_ = std::move(cb); }
  void lane(const LaneEvent& e) {
    if (lane_cb_) lanes_.push_back(e);
  }
  int deliver_lanes();
  // Swaps the callback (close() listens in on the disconnects it waits for).
  SteadyCallback exchange_callback(SteadyCallback cb) { return std::exchange(steady_cb_, std::move(cb)); }

 private:
  static constexpr size_t kMaxLinks = std::numeric_limits<uint16_t>::max();
  std::vector<ConnResult> results_;
  std::vector<uint32_t> result_slot_;  // by pair index: its slot in results_, or kNoSlot
  std::vector<LinkInfo> links_;  // distinct, in first-use order
  uint16_t last_link_ = 0;
  std::vector<PeerError> errors_;
  // Pair index -> its slot in errors_: a map, as errors are few beside the pairs.
  std::unordered_map<uint32_t, uint32_t> error_slot_;
  size_t withdrawn_ = 0;
  SteadyCallback steady_cb_;
  DeviceCallback device_cb_;
  PeerDownCallback down_cb_;
  LaneCallback lane_cb_;
  std::vector<LaneEvent> lanes_;  // queued for deliver_lanes()
};

}  // namespace wireup
