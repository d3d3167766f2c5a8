// The simulated device's asynchronous events: a queue behind an eventfd, as the real
// ibv_context::async_fd is a file readable while an event is pending.
#include <sys/eventfd.h>
#include <unistd.h>

#include "provider/sim/verbs.h"

namespace wireup::prov::sim {

SimDevice::~SimDevice() {
  if (efd_ >= 0) ::close(efd_);
}

int SimDevice::native_async_fd() const {
  if (efd_ < 0) {
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    set_readable(!async_.empty());
  }
  return efd_;
}

void SimDevice::set_readable(bool want) const {
  if (efd_ < 0 || want == efd_readable_) return;
  uint64_t v = 1;
  const ssize_t rc = want ? ::write(efd_, &v, sizeof v) : ::read(efd_, &v, sizeof v);
  if (rc == static_cast<ssize_t>(sizeof v)) efd_readable_ = want;
}

void SimDevice::raise(DeviceEventType type, uint32_t qpn, uint8_t port, const void* object) {
  DeviceEvent e;
  e.type = type;
  e.qpn = qpn;
  e.port = port;
  e.object = object;
  e.device = info_.name;
  async_.push_back(std::move(e));
  ++core.stats.async_events;
  set_readable(true);
}

Result<DeviceEvent> SimDevice::native_get_async_event() {
  if (async_.empty()) return Status::would_block<"ibv_get_async_event">();
  DeviceEvent e = std::move(async_.front());
  async_.pop_front();
  set_readable(!async_.empty());
  return e;
}

}  // namespace wireup::prov::sim
