// Which peers died, as the PMIx server tells it: an event handler for the process-termination
// events, registered for the watch's life (PMIx_Register_event_handler / _Deregister).
//
// The handler runs on PMIx's own progress thread. It only records the rank under a mutex and
// bumps an eventfd; the thread that progresses the engine polls fd() with its other fds and
// calls take(), then gives the dead peers up (wireup::Wireup::fail_peer). Nothing of the
// engine is touched from the PMIx thread.
//
// Seen with Debian 12 (Open MPI 4.1.4's mpirun over OpenPMIx 4.2.2): the launcher does not
// deliver these events at all (its notification is refused inside the server: "PMIX ERROR:
// BAD-PARAM ... pmix_event_notification.c at line 1033"), so a transport must not rely on
// them alone there: see local_exit_watch.h. notify_self() raises the same event through
// PMIx to this process only, so the whole path can be tested under that launcher too.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/pmix_session.h"

namespace wireup::bootstrap {

struct PeerDeath {
  uint32_t rank = 0;
  std::string event;  // the PMIx status name, e.g. "PROC TERMINATED"
  double at_s = 0;    // CLOCK_REALTIME when the handler ran, seconds
};

class PmixDeathWatch {
 public:
  // Registers the handler (blocking until PMIx has it); returns null and sets `why` on failure.
  static std::unique_ptr<PmixDeathWatch> create(const PmixSession& s, std::string& why);
  ~PmixDeathWatch();  // deregisters the handler first, then closes the eventfd
  PmixDeathWatch(const PmixDeathWatch&) = delete;
  PmixDeathWatch& operator=(const PmixDeathWatch&) = delete;

  // Readable (POLLIN) while deaths wait to be taken.
  int fd() const { return efd_; }
  // The deaths reported since the last call (each rank once over the watch's life). Costs no
  // system call while nothing came (the progress loop asks at every turn).
  std::vector<PeerDeath> take();
  // PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, affected proc `rank`) with range
  // PMIX_RANGE_PROC_LOCAL: this process's own handler gets it from PMIx's thread. For tests.
  std::string notify_self(uint32_t rank);

  // Called by the PMIx handler (PMIx thread): records the death, wakes fd().
  void on_death_cb(uint32_t rank, const std::string& event);

 private:
  PmixDeathWatch(const PmixSession& s, int efd) : session_(s), efd_(efd) {}
  const PmixSession& session_;
  int efd_ = -1;
  size_t handler_ = 0;
  bool registered_ = false;
  std::mutex mu_;  // guards what the PMIx thread writes
  std::vector<PeerDeath> pending_;
  // Set by the handler after its eventfd write, cleared by take() before it reads the
  // eventfd: every write is followed by a take() that consumes it, so fd() never stays
  // readable with nothing pending.
  std::atomic<bool> signalled_{false};
  std::vector<uint32_t> seen_;
};

}  // namespace wireup::bootstrap
