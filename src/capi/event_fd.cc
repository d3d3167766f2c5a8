#include "capi/event_fd.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/log.h"

namespace wireup::capi {

EventFd::~EventFd() {
  if (timerfd_ >= 0) ::close(timerfd_);
  if (epfd_ >= 0) ::close(epfd_);
}

Status EventFd::open() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Error::from_errno("epoll_create1", errno, "for wireup_fd()");
  // CLOCK_MONOTONIC is what std::chrono::steady_clock (the rdma provider's clock) reads.
  timerfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timerfd_ < 0) return Error::from_errno("timerfd_create", errno, "for wireup_fd()");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = timerfd_;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, timerfd_, &ev) != 0)
    return Error::from_errno("epoll_ctl(ADD)", errno, "timerfd");
  return Status::ok();
}

Status EventFd::update(const std::vector<int>& fds, std::optional<Nanos> at) {
  for (int fd : watched_) {
    if (std::find(fds.begin(), fds.end(), fd) != fds.end()) continue;
    // The fd is usually closed already (the setup channel went away), which removed it from
    // the set by itself: ENOENT/EBADF are the expected answers.
    if (epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) != 0 && errno != ENOENT && errno != EBADF)
      WIREUP_LOG(warn, "epoll_ctl(DEL, fd %d): %s", fd, std::strerror(errno));
  }
  for (int fd : fds) {
    if (std::find(watched_.begin(), watched_.end(), fd) != watched_.end()) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0)
      return Error::from_errno("epoll_ctl(ADD)", errno, "rdma_cm channel fd " + std::to_string(fd));
  }
  watched_ = fds;

  // The same time again: either it is still ahead (nothing fired, nothing to re-arm) or it
  // had passed when it was armed (the engine's clock reading of its last progress() comes
  // back while work is ready): that expiry stays unconsumed and the set readable, which is
  // what "due" asks for.
  if (armed_once_ && at == armed_) return Status::ok();
  // Consume a past expiry so the set is not readable for a timer already handled.
  uint64_t expirations = 0;
  while (::read(timerfd_, &expirations, sizeof expirations) > 0) {
  }
  itimerspec spec{};
  if (at) {
    // An absolute time of 0 would disarm the timer: due now means 1 ns past the epoch.
    const int64_t ns = std::max<int64_t>(at->count(), 1);
    spec.it_value.tv_sec = ns / 1000000000;
    spec.it_value.tv_nsec = ns % 1000000000;
  }
  if (timerfd_settime(timerfd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0)
    return Error::from_errno("timerfd_settime", errno, "arming wireup_fd()'s timer");
  armed_ = at;
  armed_once_ = true;
  return Status::ok();
}

}  // namespace wireup::capi
