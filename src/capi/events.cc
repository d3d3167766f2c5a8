// What happens after and beside wireup, handed to the transport's callbacks: the steady
// channel's and the listener's CM events, and the device's asynchronous events.
#include "capi/handles.h"

using namespace wireup;
using capi::fail;
using capi::guarded;

namespace {

wireup_status_t null_handle(const char* fn) {
  return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the wireup handle is NULL");
}

wireup_event_type_t event_type(prov::CmEventType t) {
  switch (t) {
    case prov::CmEventType::disconnected: return WIREUP_EVENT_DISCONNECTED;
    case prov::CmEventType::device_removal: return WIREUP_EVENT_DEVICE_REMOVAL;
    case prov::CmEventType::addr_change: return WIREUP_EVENT_ADDR_CHANGE;
    case prov::CmEventType::timewait_exit: return WIREUP_EVENT_TIMEWAIT_EXIT;
    default: return WIREUP_EVENT_OTHER;
  }
}

}  // namespace

extern "C" {

wireup_status_t wireup_on_event(wireup_t* w, wireup_event_fn fn_ptr, void* arg) {
  const char* fn = "wireup_on_event";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (fn_ptr == nullptr) {
      w->engine->on_steady_event(nullptr);
      return WIREUP_OK;
    }
    w->engine->on_steady_event([fn_ptr, arg](const SteadyEvent& e) {
      const bool listener = e.scope == SteadyEvent::Scope::listener;
      const wireup_event_t ev{listener ? WIREUP_EVENT_PEER_LISTENER : e.peer, listener ? WIREUP_EVENT_PEER_LISTENER : e.lane,
                              event_type(e.type), e.status, e.rtu_lost ? "RTU_LOST" : prov::to_string(e.type)};
      fn_ptr(arg, &ev);
    });
    return WIREUP_OK;
  });
}

wireup_status_t wireup_on_device_event(wireup_t* w, wireup_device_event_fn fn_ptr, void* arg) {
  const char* fn = "wireup_on_device_event";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    if (fn_ptr == nullptr) {
      w->engine->on_device_report(nullptr);
      return WIREUP_OK;
    }
    w->engine->on_device_report([fn_ptr, arg](const DeviceEventReport& r) {
      wireup_device_event_t ev{};
      ev.type = static_cast<int>(r.event.type);  // the seam keeps enum ibv_event_type's values
      ev.name = prov::to_string(r.event.type);
      ev.device = r.event.device.c_str();
      ev.qpn = r.event.qpn;
      ev.port = r.event.port;
      ev.known = r.known ? 1 : 0;
      ev.peer = r.peer;
      ev.lane = r.lane;
      fn_ptr(arg, &ev);
    });
    return WIREUP_OK;
  });
}

}  // extern "C"
