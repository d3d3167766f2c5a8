#include "wireup/device_watch.h"

#include <algorithm>

namespace wireup {

using prov::DeviceEventType;

DeviceAction classify(DeviceEventType t, bool ours) {
  switch (t) {
    case DeviceEventType::comm_est:
      return ours ? DeviceAction::tell_cm : DeviceAction::not_ours;
    case DeviceEventType::device_fatal:
      return DeviceAction::lose_device;
    // A link going down raises PORT_ERR and coming back PORT_ACTIVE, naming the port: mlx5
    // (the kernel's drivers/infiniband/hw/mlx5/main.c, mlx5_ib_event: the firmware's port
    // change, and mlx5_netdev_event for RoCE, pass through rdma-core's providers/mlx5 to
    // ibv_get_async_event untouched) and rxe (drivers/infiniband/sw/rxe/rxe_net.c: the netdev
    // notifier's NETDEV_DOWN -> rxe_port_down, NETDEV_UP -> rxe_port_up, port 1). Neither
    // moves a QP: connections in RTS stay there and fail only if their traffic's retries run
    // out. So the port's rail takes no new attempt (rail_routes.h), and nothing is failed.
    case DeviceEventType::port_err:
      return DeviceAction::port_down;
    case DeviceEventType::port_active:
      return DeviceAction::port_up;
    case DeviceEventType::lid_change:
    case DeviceEventType::gid_change:
    case DeviceEventType::pkey_change:
    case DeviceEventType::sm_change:
    case DeviceEventType::client_reregister:
      return DeviceAction::note_port;
    default:
      return ours ? DeviceAction::warn_connection : DeviceAction::not_ours;
  }
}

const char* to_string(DeviceAction a) {
  switch (a) {
    case DeviceAction::tell_cm: return "tell_cm";
    case DeviceAction::lose_device: return "lose_device";
    case DeviceAction::port_down: return "port_down";
    case DeviceAction::port_up: return "port_up";
    case DeviceAction::note_port: return "note_port";
    case DeviceAction::warn_connection: return "warn_connection";
    case DeviceAction::not_ours: return "not_ours";
  }
  return "?";
}

Status DeviceWatch::watch(prov::Device& d, prov::DeviceEventSink& sink, prov::AsyncOwner owner) {
  if (std::any_of(subs_.begin(), subs_.end(), [&](const prov::DeviceSubscription& s) { return s.device() == &d; }))
    return Status::ok();
  auto sub = prov::DeviceSubscription::make(d, sink, owner);
  if (!sub) return sub.error();
  subs_.push_back(std::move(sub).value());
  return Status::ok();
}

std::vector<prov::Device*> DeviceWatch::devices() const {
  std::vector<prov::Device*> v;
  v.reserve(subs_.size());
  for (const prov::DeviceSubscription& s : subs_) v.push_back(s.device());
  return v;
}

int DeviceWatch::dispatch(Nanos now) {
  int n = 0;
  for (const prov::DeviceSubscription& s : subs_)
    if (prov::Device* d = s.device(); d != nullptr && d->async_worth_reading(now))
      n += prov::dispatch_device_events(*d, kPerDispatch);
  return n;
}

}  // namespace wireup
