// What happens after and beside wireup, handed to the transport's callbacks: the steady
// channel's and the listener's CM events, and the device's asynchronous events.
#include "capi/handles.h"
#include "common/clock.h"

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

wireup_device_object_t object_kind(prov::DeviceEventScope s) {
  switch (s) {
    case prov::DeviceEventScope::qp: return WIREUP_DEVICE_OBJECT_QP;
    case prov::DeviceEventScope::cq: return WIREUP_DEVICE_OBJECT_CQ;
    case prov::DeviceEventScope::srq: return WIREUP_DEVICE_OBJECT_SRQ;
    case prov::DeviceEventScope::wq: return WIREUP_DEVICE_OBJECT_WQ;
    case prov::DeviceEventScope::port: return WIREUP_DEVICE_OBJECT_PORT;
    case prov::DeviceEventScope::device: break;
  }
  return WIREUP_DEVICE_OBJECT_DEVICE;
}

wireup_peer_down_cause_t down_cause(PeerDownCause c) {
  switch (c) {
    case PeerDownCause::disconnected: return WIREUP_PEER_DOWN_DISCONNECTED;
    case PeerDownCause::reported: return WIREUP_PEER_DOWN_REPORTED;
    case PeerDownCause::silent: return WIREUP_PEER_DOWN_SILENT;
  }
  return WIREUP_PEER_DOWN_NONE;
}

}  // namespace

namespace wireup::capi {

void watch_peer_downs(wireup_t* w) {
  w->engine->on_peer_down([w](const PeerDown& d) {
    // The service declared the silent ones itself; a death seen otherwise (the peer's DREQs,
    // wireup_fail_peer) stops this rank watching and suspecting it.
    if (w->liveness && d.cause != PeerDownCause::silent)
      w->liveness->learn(d.peer, SteadyClock::instance().now());
    if (w->event_fn == nullptr) return;
    wireup_event_t ev{};
    ev.struct_size = sizeof ev;
    ev.peer = d.peer;
    ev.lane = WIREUP_EVENT_LANE_ALL;
    ev.type = WIREUP_EVENT_PEER_DOWN;
    ev.name = "PEER_DOWN";
    ev.lanes_down = d.lanes;
    ev.cause = down_cause(d.cause);
    w->event_fn(w->event_arg, &ev);
  });
}

}  // namespace wireup::capi

extern "C" {

wireup_status_t wireup_on_event(wireup_t* w, wireup_event_fn fn_ptr, void* arg) {
  const char* fn = "wireup_on_event";
  if (w == nullptr) return null_handle(fn);
  return guarded(fn, &w->last_error, [&] {
    // Peer-down reports always go through watch_peer_downs' callback (the liveness service
    // hears of them whether or not the transport listens); it forwards to these.
    w->event_fn = fn_ptr;
    w->event_arg = arg;
    if (fn_ptr == nullptr) {
      w->engine->on_steady_event(nullptr);
      return WIREUP_OK;
    }
    w->engine->on_steady_event([fn_ptr, arg](const SteadyEvent& e) {
      const bool listener = e.scope == SteadyEvent::Scope::listener;
      const wireup_event_t ev{sizeof(wireup_event_t), listener ? WIREUP_EVENT_PEER_LISTENER : e.peer, listener ? WIREUP_EVENT_PEER_LISTENER : e.lane,
                              e.rtu_lost ? WIREUP_EVENT_RTU_LOST : event_type(e.type), e.status,
                              e.rtu_lost ? "RTU_LOST" : prov::to_string(e.type), 0, WIREUP_PEER_DOWN_NONE};
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
      ev.struct_size = sizeof ev;
      ev.type = static_cast<int>(r.event.type);  // the seam keeps enum ibv_event_type's values
      ev.name = prov::to_string(r.event.type);
      ev.device = r.event.device.c_str();
      ev.qpn = r.event.qpn;
      ev.port = r.event.port;
      ev.known = r.known ? 1 : 0;
      ev.peer = r.peer;
      ev.lane = r.lane;
      ev.object = object_kind(prov::scope_of(r.event.type));
      // The transport's own object, handed back as it named it: never written through here.
      ev.handle = const_cast<void*>(r.event.object);
      fn_ptr(arg, &ev);
    });
    return WIREUP_OK;
  });
}

// Any thread (a transport's async thread): reads only what never changes after create (the
// configuration, the adapter, the device's name), queues under the device's lock, and
// records a failure for the calling thread alone.
wireup_status_t wireup_context_async_event(wireup_context_t* ctx, const struct ibv_async_event* ev) {
  const char* fn = "wireup_context_async_event";
  return guarded(fn, nullptr, [&] {
    if (ctx == nullptr) return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the context is NULL");
    if (ev == nullptr) return fail(nullptr, WIREUP_ERR_INVALID_ARGUMENT, fn, "the event is NULL");
    if (ctx->config.settings().device.async_events != config::AsyncEvents::transport)
      return fail(nullptr, WIREUP_ERR_INVALID_STATE, fn,
                  "device.async_events is \"library\": wireup reads the async events of " +
                      ctx->device->info().name +
                      " itself (this one would be seen twice); set it to \"transport\" to hand them over");
    auto e = ctx->qps->event_of(*ev, *ctx->device);
    if (!e) return fail(nullptr, fn, e.error());
    ctx->device->post_async_event(std::move(e).value());
    return WIREUP_OK;
  });
}

}  // extern "C"
