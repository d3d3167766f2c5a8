#include "wireup/records.h"

namespace wireup {

const char* to_string(PeerError::Cause c) {
  using C = PeerError::Cause;
  switch (c) {
    case C::failed: return "failed";
    case C::timed_out: return "timed_out";
    case C::peer_never_connected: return "peer_never_connected";
    case C::rtu_peer_cannot_reconnect: return "rtu_peer_cannot_reconnect";
    case C::rtu_no_attempts_left: return "rtu_no_attempts_left";
    case C::rtu_listener_gone: return "rtu_listener_gone";
    case C::rtu_notice_undeliverable: return "rtu_notice_undeliverable";
    case C::rtu_notice_refused: return "rtu_notice_refused";
    case C::peer_gave_up: return "peer_gave_up";
    case C::device_removed: return "device_removed";
    case C::peer_reported_dead: return "peer_reported_dead";
  }
  return "?";
}

const char* to_string(LaneState s) {
  switch (s) {
    case LaneState::idle: return "idle";
    case LaneState::connecting: return "connecting";
    case LaneState::ready: return "ready";
    case LaneState::failed: return "failed";
  }
  return "?";
}

int Records::deliver_lanes() {
  if (lanes_.empty()) return 0;
  // Taken out first: the callback may make more (a connect() that fails at once).
  std::vector<LaneEvent> now;
  now.swap(lanes_);
  const int n = static_cast<int>(now.size());
  for (const LaneEvent& e : now)
    if (lane_cb_) lane_cb_(e);
  if (lanes_.empty()) {  // keep the capacity
    now.clear();
    lanes_.swap(now);
  }
  return n;
}

RejectCode peer_reject_code(const cm::Failure& f) {
  if (f.kind != cm::FailKind::rejected) return RejectCode::none;
  auto h = decode(f.private_data);
  return h && h->kind == WireKind::reject ? h->reason : RejectCode::none;
}

std::string PeerError::describe() const {
  std::string s = "rank " + std::to_string(peer) + " lane " + std::to_string(lane) + " (" +
                  (role == cm::Role::active ? "active" : "passive") + ", " + std::to_string(attempts) +
                  " attempt" + (attempts == 1 ? "" : "s") + "): " + failure.describe();
  if (peer_reason != RejectCode::none) s += " [peer said: " + std::string(to_string(peer_reason)) + "]";
  return s;
}

uint32_t Records::put_result(uint32_t pair, ConnResult r) {
  if (pair >= result_slot_.size()) result_slot_.resize(pair + 1, kNoSlot);
  uint32_t& slot = result_slot_[pair];
  if (slot == kNoSlot) {
    slot = static_cast<uint32_t>(results_.size());
    results_.push_back(std::move(r));
    return slot;
  }
  // The pair's earlier connection is over (closed, given up, or taken back for a repair):
  // its record goes, the index stays.
  ConnResult& old = results_[slot];
  if (old.withdrawn) --withdrawn_;
  old = std::move(r);
  return slot;
}

void Records::withdraw(uint32_t result) {
  ConnResult& r = results_.at(result);
  if (r.withdrawn) return;
  r.withdrawn = true;
  ++withdrawn_;
}

std::optional<uint16_t> Records::intern(const LinkInfo& l) {
  // A handful of entries in practice (one per kind of peer device): the last one used first.
  if (last_link_ < links_.size() && links_[last_link_] == l) return last_link_;
  for (size_t i = 0; i < links_.size(); ++i)
    if (links_[i] == l) return last_link_ = static_cast<uint16_t>(i);
  if (links_.size() > kMaxLinks) return std::nullopt;
  links_.push_back(l);
  return last_link_ = static_cast<uint16_t>(links_.size() - 1);
}

uint32_t Records::put_error(uint32_t pair, PeerError e) {
  auto [it, fresh] = error_slot_.try_emplace(pair, static_cast<uint32_t>(errors_.size()));
  if (fresh) {
    errors_.push_back(std::move(e));
  } else {
    errors_[it->second] = std::move(e);
  }
  return it->second;
}

}  // namespace wireup
