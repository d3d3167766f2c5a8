// LocalExitWatch: pidfds polled without blocking.
#include "bootstrap/local_exit_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace wireup::bootstrap {
namespace {

double realtime_s() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

}  // namespace

PidFd::PidFd(pid_t pid, std::string& why) {
  // glibc 2.36 has no pidfd_open() wrapper: the system call itself.
  fd_ = int(syscall(SYS_pidfd_open, pid, 0));
  if (fd_ < 0) err_ = errno, why = "pidfd_open(" + std::to_string(pid) + "): " + std::strerror(err_);
}

PidFd::~PidFd() {
  if (fd_ >= 0) close(fd_);
}

std::string LocalExitWatch::add(uint32_t rank, pid_t pid) {
  std::string why;
  PidFd fd(pid, why);
  const bool gone = fd.already_gone();
  if (fd.fd() < 0 && !gone) return "rank " + std::to_string(rank) + ": " + why;
  watched_.push_back({rank, std::move(fd), gone ? Watch::gone_unreported : Watch::alive});
  return "";
}

std::vector<PeerDeath> LocalExitWatch::poll() {
  std::vector<PeerDeath> out;
  // One poll() for every live peer's pidfd (not one per peer).
  std::vector<pollfd> q;
  for (const Peer& p : watched_)
    if (p.state == Watch::alive) q.push_back(pollfd{p.fd.fd(), POLLIN, 0});
  const bool any = !q.empty() && ::poll(q.data(), q.size(), 0) > 0;
  size_t i = 0;
  for (Peer& p : watched_) {
    if (p.state == Watch::alive) {
      // A pidfd is readable once its process has ended (POLLIN), zombie or reaped.
      if (any && (q[i].revents & (POLLIN | POLLHUP)) != 0) p.state = Watch::gone_unreported;
      ++i;
    }
    if (p.state == Watch::gone_unreported) {
      out.push_back({p.rank, "process exited (pidfd)", realtime_s()});
      p.state = Watch::reported;
    }
  }
  return out;
}

}  // namespace wireup::bootstrap
