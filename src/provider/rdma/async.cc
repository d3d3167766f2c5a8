// The device's asynchronous events: ibv_get_async_event on the context librdmacm opened (the
// one every CM id, PD and QP of the library lives on), each acked as soon as it is copied.
// Library mode only: in transport mode the transport reads them and posts copies made by
// device_event_of() (Device::post_async_event), and nothing here runs.
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {

// The seam reuses the verbs numbering of enum ibv_event_type.
static_assert(static_cast<int>(DeviceEventType::comm_est) == IBV_EVENT_COMM_EST &&
              static_cast<int>(DeviceEventType::device_fatal) == IBV_EVENT_DEVICE_FATAL &&
              static_cast<int>(DeviceEventType::port_err) == IBV_EVENT_PORT_ERR &&
              static_cast<int>(DeviceEventType::srq_limit_reached) == IBV_EVENT_SRQ_LIMIT_REACHED &&
              static_cast<int>(DeviceEventType::qp_last_wqe_reached) == IBV_EVENT_QP_LAST_WQE_REACHED &&
              static_cast<int>(DeviceEventType::gid_change) == IBV_EVENT_GID_CHANGE &&
              static_cast<int>(DeviceEventType::wq_fatal) == IBV_EVENT_WQ_FATAL);

Result<DeviceEvent> device_event_of(const ibv_async_event& e, const std::string& device) {
  // Read as the int it is stored as: the transport may hand over any value, and loading one
  // outside enum ibv_event_type's range through the enum type is undefined (UBSan says so).
  int t;
  static_assert(sizeof t == sizeof e.event_type);
  std::memcpy(&t, &e.event_type, sizeof t);
  if (t < 0 || t > static_cast<int>(DeviceEventType::wq_fatal))
    return Error::make(ErrorCode::invalid_argument, "async event",
                       "event_type " + std::to_string(t) + " of device " + device +
                           " is not an enum ibv_event_type value wireup knows (0..19)");
  DeviceEvent out;
  out.type = static_cast<DeviceEventType>(t);
  out.device = device;
  // ibv_async_event's union is read by the event's scope (verbs.h, ibv_get_async_event(3)).
  switch (scope_of(out.type)) {
    case DeviceEventScope::qp:
      if (e.element.qp == nullptr)
        return Error::make(ErrorCode::invalid_argument, "async event",
                           std::string(to_string(out.type)) + " of device " + device + " names no QP (element.qp NULL)");
      out.qpn = e.element.qp->qp_num;
      break;
    case DeviceEventScope::cq: out.object = e.element.cq; break;
    case DeviceEventScope::srq: out.object = e.element.srq; break;
    case DeviceEventScope::wq: out.object = e.element.wq; break;
    case DeviceEventScope::port: out.port = static_cast<uint8_t>(e.element.port_num); break;
    case DeviceEventScope::device: break;
  }
  return out;
}

Status RdmaDevice::native_take_async() {
  const int fd = ctx_->async_fd;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return Error::from_errno("fcntl(O_NONBLOCK)", errno, "on the async event fd of device " + info_.name);
  return Status::ok();
}

bool RdmaDevice::native_async_pending() const {
  pollfd p{ctx_->async_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

bool RdmaDevice::native_async_worth_reading(Nanos now) {
  if (maybe_pending_) return true;
  if (!next_read_) next_read_ = now + kAsyncPollInterval;
  return now >= *next_read_;
}

Result<DeviceEvent> RdmaDevice::native_get_async_event() {
  ibv_async_event e;
  if (ibv_get_async_event(ctx_, &e) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      maybe_pending_ = false;
      next_read_.reset();
      return Status::would_block<"ibv_get_async_event">();
    }
    return Error::from_errno("ibv_get_async_event", err, "device " + info_.name);
  }
  maybe_pending_ = true;  // another may follow
  auto out = device_event_of(e, info_.name);
  // Copied: ack now, or a destroy of the QP (or CQ) it names would wait for this ack.
  ibv_ack_async_event(&e);
  return out;
}

}  // namespace wireup::prov::rdma
