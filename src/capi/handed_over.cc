#include "capi/handed_over.h"

#include <cstdio>

#include "capi/transport_qp.h"
#include "common/log.h"

namespace wireup::capi {

std::string HandedOver::identity(const Entry& e) {
  char qpn[16];
  std::snprintf(qpn, sizeof qpn, "0x%x", e.qpn);
  return "rank " + std::to_string(e.peer) + " lane " + std::to_string(e.lane) + " qpn " + qpn;
}

bool HandedOver::take(Engine& engine, uint32_t result) {
  const std::vector<ConnResult>& results = engine.results();
  if (result >= results.size()) return false;
  const ConnResult& r = results[result];
  prov::Qp* qp = engine.qp(result);
  // Withdrawn or its lane closed since (not a connection any more, never the transport's), or
  // handed over already (a READY before it in the same call named the same slot).
  if (r.withdrawn || qp == nullptr || r.handed_over) return false;
  const Entry e{result, r.peer, r.lane, qp->qpn(), static_cast<ibv_qp*>(qp->native())};
  if (result >= index_of_slot_.size()) index_of_slot_.resize(result + 1, kNone);
  uint32_t& i = index_of_slot_[result];
  if (i == kNone) {
    i = static_cast<uint32_t>(entries_.size());
    entries_.push_back(e);
  } else {
    // The lane connected again: its earlier connection's LANE_CLOSED came first. One not
    // closed would mean a second QP for a lane the transport holds: handed over all the same
    // (it is connected and the transport's), but said loudly.
    if (!entries_[i].closed)
      WIREUP_LOG(error, "wireup C API: %s is a second connection of a lane already handed over (%s)",
                 identity(e).c_str(), identity(entries_[i]).c_str());
    entries_[i] = e;
  }
  // The engine's record (it never takes the connection back now) and the QP's own end of
  // life (no release callback for it).
  engine.hand_over(result);
  TransportQp::of(*qp).hand_over();
  return true;
}

std::optional<size_t> HandedOver::index_of(uint32_t result) const {
  if (result >= index_of_slot_.size() || index_of_slot_[result] == kNone) return std::nullopt;
  return index_of_slot_[result];
}

bool HandedOver::current(const Engine& engine, uint32_t result) const {
  const auto i = index_of(result);
  if (!i || entries_[*i].closed) return false;
  const prov::Qp* qp = engine.qp(result);
  return qp != nullptr && engine.results()[result].handed_over &&
         qp->native() == static_cast<void*>(entries_[*i].qp);
}

void HandedOver::close_lane(uint32_t result) {
  if (auto i = index_of(result)) entries_[*i].closed = true;
}

HandedOver::Standing HandedOver::standing(const ConnResult& r, const prov::Qp* qp, const Entry& e) {
  if (r.peer != e.peer || r.lane != e.lane) return Standing::lost;
  if (qp != nullptr && qp->native() == static_cast<void*>(e.qp))
    return !r.withdrawn && r.handed_over && qp->qpn() == e.qpn ? Standing::same : Standing::lost;
  if (qp == nullptr && !r.withdrawn && r.local_qpn == e.qpn) return Standing::same;
  // Another connection in the slot: the lane's next one, once this one closed (or is closing
  // in the call under way: its LANE_CLOSED not delivered yet).
  if (r.local_qpn != e.qpn || qp != nullptr) return Standing::connected_again;
  return Standing::lost;
}

}  // namespace wireup::capi
