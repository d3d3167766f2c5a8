#include "capi/handed_over.h"

#include <algorithm>
#include <cstdio>

#include "common/log.h"

namespace wireup::capi {
namespace {

std::string identity(const HandedOver::Entry& e) {
  char qpn[16];
  std::snprintf(qpn, sizeof qpn, "0x%x", e.qpn);
  return "rank " + std::to_string(e.peer) + " lane " + std::to_string(e.lane) + " qpn " + qpn;
}

}  // namespace

size_t HandedOver::take_new(const Engine& engine) {
  const std::vector<ConnResult>& results = engine.results();
  size_t n = 0;
  for (; scanned_ < results.size(); ++scanned_) {
    const ConnResult& r = results[scanned_];
    prov::Qp* qp = engine.qp(static_cast<uint32_t>(scanned_));
    // Withdrawn (or its QP taken): not a connection any more, never the transport's.
    if (r.withdrawn || qp == nullptr) continue;
    Entry e{static_cast<uint32_t>(scanned_), r.peer, r.lane, qp->qpn(), static_cast<ibv_qp*>(qp->native())};
    // The engine connects a lane once; a second live result for a lane the transport holds
    // would be a second QP for it. Handed over all the same (it is connected and the
    // transport's), but said loudly.
    if (!lanes_.insert({r.peer, r.lane}).second)
      WIREUP_LOG(error, "wireup C API: %s is a second connection of a lane already handed over", identity(e).c_str());
    qp->keep();
    entries_.push_back(e);
    ++n;
  }
  return n;
}

std::optional<size_t> HandedOver::index_of(uint32_t result) const {
  // Appended in result order: sorted.
  auto it = std::lower_bound(entries_.begin(), entries_.end(), result,
                             [](const Entry& e, uint32_t r) { return e.result < r; });
  if (it == entries_.end() || it->result != result) return std::nullopt;
  return static_cast<size_t>(it - entries_.begin());
}

void HandedOver::close_lane(uint32_t peer, uint32_t lane) {
  if (lanes_.erase({peer, lane}) == 0) return;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->peer == peer && it->lane == lane && !it->closed) {
      it->closed = true;
      return;
    }
}

Status HandedOver::still_same(const ConnResult& r, const prov::Qp* qp, const Entry& e) {
  // A closed lane's record let go of the QP (the transport's now): nothing left to compare.
  if (e.closed && r.peer == e.peer && r.lane == e.lane && qp == nullptr) return Status::ok();
  if (!r.withdrawn && qp != nullptr && r.peer == e.peer && r.lane == e.lane && qp->qpn() == e.qpn &&
      qp->native() == static_cast<void*>(e.qp) && qp->kept())
    return Status::ok();
  return Error::make(ErrorCode::invalid_state, "C API hand-over",
                     "internal: the result handed over as " + identity(e) +
                         " is no longer that connection in the engine (" +
                         (r.withdrawn ? "withdrawn" : qp == nullptr ? "its QP taken" : "another QP") + ")");
}

}  // namespace wireup::capi
