// Peers on this node that exited, seen by the kernel: one pidfd per peer process (Linux 5.3+
// pidfd_open), readable once that process is gone, whatever killed it.
//
// Why beside the PMIx event: the launcher on Debian 12 never delivers the PMIx termination
// event (pmix_death_watch.h), and a process that died is known to its node's kernel at once.
// Each rank publishes its host name and pid through the bootstrap; a peer on the same host is
// watched here. Peers on other nodes are left to the PMIx event (or the CM's timeouts).
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/pmix_death_watch.h"

namespace wireup::bootstrap {

// One pidfd (RAII): closed with the object.
class PidFd {
 public:
  // pidfd_open(pid); fd() < 0 and `why` set when it fails (ESRCH: already gone).
  PidFd(pid_t pid, std::string& why);
  ~PidFd();
  PidFd(PidFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)), err_(o.err_) {}
  PidFd& operator=(PidFd&&) = delete;
  PidFd(const PidFd&) = delete;
  PidFd& operator=(const PidFd&) = delete;
  int fd() const { return fd_; }
  bool already_gone() const { return err_ == ESRCH; }  // the process had ended before

 private:
  int fd_ = -1;
  int err_ = 0;
};

class LocalExitWatch {
 public:
  // Watches `rank`'s process `pid` (of this host). "" or why not (already gone counts as a
  // death at the next poll()).
  std::string add(uint32_t rank, pid_t pid);
  // The watched ranks whose process ended since the last call (each once). Never blocks.
  std::vector<PeerDeath> poll();
  size_t size() const { return watched_.size(); }

 private:
  enum class Watch : uint8_t { alive, gone_unreported, reported };
  struct Peer {
    uint32_t rank;
    PidFd fd;
    Watch state;
  };
  std::vector<Peer> watched_;
};

}  // namespace wireup::bootstrap
