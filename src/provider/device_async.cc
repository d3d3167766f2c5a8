// A device's async events as the library reads them: from the native source (library mode)
// or from the inbox the transport fills (transport mode), and their dispatch to the sinks.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>

#include "common/log.h"
#include "provider/provider.h"

namespace wireup::prov {

const char* to_string(AsyncOwner o) { return o == AsyncOwner::transport ? "transport" : "library"; }

// Posted from any thread, read by the one that progresses: a mutex around the queue, and a
// count readable without it (async_worth_reading is asked at every progress).
struct Device::Inbox {
  std::mutex mu;
  std::deque<DeviceEvent> queue;
  std::atomic<size_t> count{0};
  int efd = -1;  // readable while the queue is not empty (a counter, cleared when it drains)
};

Device::Device() : inbox_(std::make_unique<Inbox>()) {}

Device::~Device() {
  if (inbox_->efd >= 0) ::close(inbox_->efd);
}

int Device::async_fd() const {
  if (!owner_) return -1;
  if (*owner_ == AsyncOwner::library) return native_async_fd();
  std::lock_guard<std::mutex> lk(inbox_->mu);
  if (inbox_->efd < 0) {
    inbox_->efd = ::eventfd(inbox_->queue.empty() ? 0 : 1, EFD_NONBLOCK | EFD_CLOEXEC);
    if (inbox_->efd < 0) WIREUP_LOG(error, "eventfd for the async events of %s: errno %d", info().name.c_str(), errno);
  }
  return inbox_->efd;
}

Result<DeviceEvent> Device::get_async_event() {
  if (!owner_) return Status::would_block<"ibv_get_async_event">();
  if (*owner_ == AsyncOwner::library) return native_get_async_event();
  std::lock_guard<std::mutex> lk(inbox_->mu);
  if (inbox_->queue.empty()) return Status::would_block<"the async events the transport posted">();
  DeviceEvent e = std::move(inbox_->queue.front());
  inbox_->queue.pop_front();
  inbox_->count.store(inbox_->queue.size(), std::memory_order_relaxed);
  if (inbox_->queue.empty() && inbox_->efd >= 0) {
    uint64_t v = 0;
    (void)!::read(inbox_->efd, &v, sizeof v);  // EAGAIN when it was not readable: fine
  }
  return e;
}

bool Device::async_pending() const {
  if (!owner_) return false;
  if (*owner_ == AsyncOwner::library) return native_async_pending();
  return inbox_->count.load(std::memory_order_relaxed) > 0;
}

bool Device::async_worth_reading(Nanos now) {
  if (!owner_) return false;
  if (*owner_ == AsyncOwner::library) return native_async_worth_reading(now);
  return inbox_->count.load(std::memory_order_relaxed) > 0;
}

Status Device::claim_async(AsyncOwner o) {
  if (owner_ && *owner_ != o)
    return Error::make(ErrorCode::invalid_argument, "device.async_events",
                       "the async events of device " + info().name + " are already owned by the " +
                           to_string(*owner_) + " (another engine on it chose so); this one asks for the " +
                           to_string(o) + ": every user of one device must choose the same");
  if (o == AsyncOwner::library && !native_ready_) {
    if (Status s = native_take_async(); !s) return s;
    native_ready_ = true;
  }
  owner_ = o;
  ++claims_;
  return Status::ok();
}

void Device::release_async(AsyncOwner o) {
  if (!owner_ || *owner_ != o || claims_ == 0) return;
  if (--claims_ == 0) owner_.reset();
}

std::optional<AsyncOwner> Device::async_owner() const { return owner_; }

void Device::post_async_event(DeviceEvent ev) {
  if (ev.device.empty()) ev.device = info().name;
  std::lock_guard<std::mutex> lk(inbox_->mu);
  inbox_->queue.push_back(std::move(ev));
  inbox_->count.store(inbox_->queue.size(), std::memory_order_relaxed);
  if (inbox_->queue.size() == 1 && inbox_->efd >= 0) {
    const uint64_t one = 1;
    (void)!::write(inbox_->efd, &one, sizeof one);
  }
}

size_t Device::posted_pending() const { return inbox_->count.load(std::memory_order_relaxed); }

void Device::add_sink(DeviceEventSink* s) {
  if (std::find(sinks_.begin(), sinks_.end(), s) == sinks_.end()) sinks_.push_back(s);
}

void Device::remove_sink(DeviceEventSink* s) { sinks_.erase(std::remove(sinks_.begin(), sinks_.end(), s), sinks_.end()); }

Result<DeviceSubscription> DeviceSubscription::make(Device& d, DeviceEventSink& s, AsyncOwner o) {
  if (Status st = d.claim_async(o); !st) return st.error();
  DeviceSubscription sub;
  sub.dev_ = &d;
  sub.sink_ = &s;
  sub.owner_ = o;
  d.add_sink(&s);
  return sub;
}

DeviceSubscription& DeviceSubscription::operator=(DeviceSubscription&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::exchange(o.dev_, nullptr);
    sink_ = o.sink_;
    owner_ = o.owner_;
  }
  return *this;
}

void DeviceSubscription::reset() {
  if (dev_ != nullptr) {
    dev_->remove_sink(sink_);
    dev_->release_async(owner_);
  }
  dev_ = nullptr;
}

bool deliver_device_event(Device& dev, const DeviceEvent& ev) {
  // A copy of the list: a sink may unsubscribe (or subscribe another) while it handles one.
  std::vector<DeviceEventSink*> sinks(dev.sinks().begin(), dev.sinks().end());
  if (sinks.empty()) {
    WIREUP_LOG(info, "async event nobody listens for: %s", ev.describe().c_str());
    return false;
  }
  if (scope_of(ev.type) == DeviceEventScope::qp) {
    auto owner = std::find_if(sinks.begin(), sinks.end(), [&](DeviceEventSink* s) { return s->owns_qp(ev.qpn); });
    if (owner != sinks.end()) {
      (*owner)->on_device_event(ev);
      return true;
    }
  }
  for (DeviceEventSink* s : sinks) s->on_device_event(ev);
  return true;
}

int dispatch_device_events(Device& dev, int max, size_t* unclaimed) {
  int n = 0;
  for (; n < max; ++n) {
    auto ev = dev.get_async_event();
    if (!ev) {
      if (ev.code() != ErrorCode::would_block)
        WIREUP_LOG(error, "async events of %s: %s", dev.info().name.c_str(), ev.error().message().c_str());
      break;
    }
    if (!deliver_device_event(dev, *ev) && unclaimed != nullptr) ++*unclaimed;
  }
  return n;
}

}  // namespace wireup::prov
