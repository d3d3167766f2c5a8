// Connecting on demand through the C API (wireup_on_demand.h): connect, disconnect, add_peer,
// the address and lane callbacks, lane_state.
//
// The engine's lane events come at the end of its progress(), before the C API hands that
// call's results over; they wait in the handle until then (deliver_lanes), so that a READY
// names the hand-over table's index and the QP is the transport's when the callback runs;
// the closed lanes among them are noted before that hand-over (close_lanes). A lane keeps its
// index across reconnects (handed_over.h), so a READY is delivered only if it is its lane's
// last event of the call: a lane connected, closed and connected again within one call gets
// the CLOSED of its earlier connection and the READY of the new one, never a READY whose
// index already shows another connection.
#include <unordered_set>

#include "capi/handles.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

wireup_status_t null_handle(const char* fn) {
  return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the wireup handle is NULL");
}

wireup_lane_state_t to_c(LaneState s) {
  switch (s) {
    case LaneState::idle: return WIREUP_LANE_IDLE;
    case LaneState::connecting: return WIREUP_LANE_CONNECTING;
    case LaneState::ready: return WIREUP_LANE_READY;
    case LaneState::failed: return WIREUP_LANE_FAILED;
  }
  return WIREUP_LANE_IDLE;
}

// Calls into the engine made by the transport: its own lanes' events wait for progress().
template <class F>
wireup_status_t peer_call(wireup_t* w, const char* fn, F&& body) {
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (Status s = body(); !s) return fail(&w->last_error, fn, s.error());
    capi::refresh_poller(w);  // a queued connect makes progress() due
    return WIREUP_OK;
  });
}

}  // namespace

namespace wireup::capi {

void watch_lanes(wireup_t* w) {
  w->engine->on_lane_event([w](const LaneEvent& e) { w->lanes_pending.push_back(e); });
  w->engine->on_address_needed([w](uint32_t peer) {
    if (w->address_fn) w->address_fn(w->address_arg, peer);
  });
}

void close_lanes(wireup_t* w) {
  // Before the hand-over of the same call: a lane closed and connected again within one
  // progress() must have its old entry closed before the new connection is taken.
  for (const LaneEvent& e : w->lanes_pending)
    if (e.kind == LaneEvent::Kind::closed) w->handed.close_lane(e.index);
}

void deliver_lanes(wireup_t* w) {
  if (w->lanes_pending.empty()) return;
  std::vector<LaneEvent> now;
  now.swap(w->lanes_pending);
  // READYs overtaken by a later event of their lane in this batch (closed, failed, or another
  // READY after an RTU repair): marked from the back.
  std::vector<bool> overtaken(now.size(), false);
  std::unordered_set<uint64_t> later;
  for (size_t k = now.size(); k-- > 0;)
    if (!later.insert(pair_key(now[k].peer, now[k].lane)).second && now[k].kind == LaneEvent::Kind::ready)
      overtaken[k] = true;
  for (size_t k = 0; k < now.size(); ++k) {
    const LaneEvent& e = now[k];
    wireup_lane_event_t ev{sizeof(wireup_lane_event_t), e.peer, e.lane, WIREUP_LANE_EVENT_READY, e.index};
    switch (e.kind) {
      case LaneEvent::Kind::ready: {
        // Overtaken, or taken back within the same call (an RTU repair): never the transport's,
        // no event; the lane's next connection has its own.
        if (overtaken[k] || !w->handed.current(*w->engine, e.index)) continue;
        ev.index = *w->handed.index_of(e.index);
        break;
      }
      case LaneEvent::Kind::failed:
        ev.type = WIREUP_LANE_EVENT_FAILED;
        break;
      case LaneEvent::Kind::closed:
        ev.type = WIREUP_LANE_EVENT_CLOSED;  // close_lanes() did the bookkeeping
        ev.index = 0;                        // the public event names no index for a closed lane
        break;
    }
    if (w->lane_fn) w->lane_fn(w->lane_arg, &ev);
  }
}

}  // namespace wireup::capi

extern "C" {

wireup_status_t wireup_connect(wireup_t* w, uint32_t peer) {
  return peer_call(w, "wireup_connect", [&] { return w->engine->connect(peer); });
}

wireup_status_t wireup_disconnect(wireup_t* w, uint32_t peer) {
  return peer_call(w, "wireup_disconnect", [&] { return w->engine->disconnect(peer); });
}

wireup_status_t wireup_add_peer(wireup_t* w, const wireup_peer_t* peer) {
  const char* fn = "wireup_add_peer";
  if (w != nullptr && peer == nullptr) return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn, "peer is NULL");
  if (w != nullptr && peer->address == nullptr)
    return fail(&w->last_error, WIREUP_ERR_INVALID_ARGUMENT, fn,
                "rank " + std::to_string(peer->rank) + ": address is NULL");
  return peer_call(w, fn, [&] {
    return w->engine->add_peer(Peer{peer->rank, std::vector<uint8_t>(peer->address, peer->address + peer->address_len)});
  });
}

wireup_status_t wireup_on_address_needed(wireup_t* w, wireup_address_fn fn_ptr, void* arg) {
  if (w == nullptr) return null_handle("wireup_on_address_needed");
  w->address_fn = fn_ptr;
  w->address_arg = arg;
  return WIREUP_OK;
}

wireup_status_t wireup_on_lane_event(wireup_t* w, wireup_lane_fn fn_ptr, void* arg) {
  if (w == nullptr) return null_handle("wireup_on_lane_event");
  w->lane_fn = fn_ptr;
  w->lane_arg = arg;
  return WIREUP_OK;
}

wireup_lane_state_t wireup_lane_state(const wireup_t* w, uint32_t peer, uint32_t lane) {
  if (w == nullptr) return null_handle("wireup_lane_state"), WIREUP_LANE_IDLE;
  return to_c(w->engine->lane_state(peer, lane));
}

}  // extern "C"
