// PmixDeathWatch: the PMIx event handler and its hand-over to the progressing thread.
#include "bootstrap/pmix_death_watch.h"

#include <pmix.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace wireup::bootstrap {
namespace {

// The codes a dead process may come as: PMIx 4 servers raise PROC_TERMINATED (with the
// affected proc and its exit code); older ones and abnormal ends use the others.
const pmix_status_t kDeathCodes[] = {PMIX_EVENT_PROC_TERMINATED, PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTED_BY_SIG,
                                     PMIX_ERR_PROC_TERM_WO_SYNC};

double realtime_s() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// pmix_notification_fn_t, on PMIx's thread. The watch comes back as PMIX_EVENT_RETURN_OBJECT.
void death_event_cb(size_t, pmix_status_t status, const pmix_proc_t* source, pmix_info_t info[], size_t ninfo,
                    pmix_info_t*, size_t, pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) {
  PmixDeathWatch* watch = nullptr;
  bool have_rank = false;
  uint32_t rank = 0;
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_RETURN_OBJECT) && info[i].value.type == PMIX_POINTER)
      watch = static_cast<PmixDeathWatch*>(info[i].value.data.ptr);
    else if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
      rank = info[i].value.data.proc->rank, have_rank = true;
  }
  // Without an affected proc the source is the one that ended (PMIx 3 servers).
  if (!have_rank && source != nullptr && source->rank != PMIX_RANK_WILDCARD) rank = source->rank, have_rank = true;
  if (watch != nullptr && have_rank) watch->on_death_cb(rank, PMIx_Error_string(status));
  // Let other handlers (Open MPI's own, say) see it too.
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, cbdata);
}

}  // namespace

std::unique_ptr<PmixDeathWatch> PmixDeathWatch::create(const PmixSession& s, std::string& why) {
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) {
    why = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<PmixDeathWatch> w(new PmixDeathWatch(s, efd));
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_EVENT_RETURN_OBJECT, w.get(), PMIX_POINTER);
  PMIX_INFO_LOAD(&info[1], PMIX_EVENT_HDLR_NAME, "wireup peer deaths", PMIX_STRING);
  // No callback: the call blocks until PMIx has the handler and returns its reference (>= 0).
  const pmix_status_t rc = PMIx_Register_event_handler(const_cast<pmix_status_t*>(kDeathCodes),
                                                       std::size(kDeathCodes), info, 2, death_event_cb, nullptr,
                                                       nullptr);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc < 0) {
    why = "rank " + std::to_string(s.rank()) + ": PMIx_Register_event_handler(process termination): " +
          PMIx_Error_string(rc) + " (" + std::to_string(rc) + ")";
    return nullptr;
  }
  w->handler_ = size_t(rc);
  w->registered_ = true;
  return w;
}

PmixDeathWatch::~PmixDeathWatch() {
  // First: after this no PMIx thread calls on_death_cb on a watch that is going away.
  if (registered_) (void)PMIx_Deregister_event_handler(handler_, nullptr, nullptr);
  if (efd_ >= 0) close(efd_);
}

void PmixDeathWatch::on_death_cb(uint32_t rank, const std::string& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(seen_.begin(), seen_.end(), rank) != seen_.end()) return;
    seen_.push_back(rank);
    pending_.push_back({rank, event, realtime_s()});
  }
  const uint64_t one = 1;
  // A full counter (2^64 - 2 unread wakeups) cannot happen; EAGAIN would still leave fd readable.
  (void)!write(efd_, &one, sizeof one);
  signalled_.store(true, std::memory_order_release);
}

std::vector<PeerDeath> PmixDeathWatch::take() {
  if (!signalled_.exchange(false, std::memory_order_acquire)) return {};
  uint64_t n = 0;
  (void)!read(efd_, &n, sizeof n);
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(pending_, {});
}

std::string PmixDeathWatch::notify_self(uint32_t rank) {
  pmix_proc_t me, dead;
  PMIX_LOAD_PROCID(&me, session_.nspace().c_str(), session_.rank());
  PMIX_LOAD_PROCID(&dead, session_.nspace().c_str(), rank);
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  PMIX_INFO_LOAD(&info, PMIX_EVENT_AFFECTED_PROC, &dead, PMIX_PROC);
  const pmix_status_t rc = PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, &me, PMIX_RANGE_PROC_LOCAL, &info, 1,
                                             nullptr, nullptr);
  PMIX_INFO_DESTRUCT(&info);
  if (rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED) return "";
  return "PMIx_Notify_event(PROC_TERMINATED, rank " + std::to_string(rank) + "): " + PMIx_Error_string(rc);
}

}  // namespace wireup::bootstrap
