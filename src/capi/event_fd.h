// The one fd a transport polls for a wireup handle: an epoll set holding the engine's channel
// fds and a timerfd armed at the engine's next timed work (a retry, the wireup deadline), so a
// plain poll() loop wakes for timers as well as for CM events.
#pragma once

#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace wireup::capi {

class EventFd {
 public:
  EventFd() = default;
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  Status open();
  int fd() const { return epfd_; }
  // Watch exactly `fds` (plus the timer) from now on; arm the timer at `at` (steady clock,
  // i.e. CLOCK_MONOTONIC, ns), or disarm it with nullopt.
  Status update(const std::vector<int>& fds, std::optional<Nanos> at);

 private:
  int epfd_ = -1;
  int timerfd_ = -1;
  std::vector<int> watched_;
  // What the timer was last armed at (nullopt: disarmed), so that an update with the same
  // time costs no system call (wireup_progress() updates at every call).
  std::optional<Nanos> armed_;
  bool armed_once_ = false;
};

}  // namespace wireup::capi
