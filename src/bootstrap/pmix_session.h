// The launcher's PMIx server as the out-of-band channel (bootstrap): who this process is
// (rank, job size, local rank), publishing its own record, the one fence that collects
// everybody's (bulk), and a Get of one peer's record when it is needed (direct modex).
//
// Optional: built only where OpenPMIx is (pkg-config pmix), never part of libwireup.a; a
// transport or wireup_a2a links it beside the library. Errors are sentences naming the PMIx
// call, its status and the peer or key. Thread safety: one thread calls a session's methods
// (PMIx itself runs its own progress thread; see pmix_death_watch.h for what runs there).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace wireup::bootstrap {

// How opening a session went.
enum class PmixOpen : uint8_t {
  connected,  // a PMIx server (mpirun, srun --mpi=pmix) answered: the session is usable
  no_server,  // nobody to talk to (a singleton run, a launcher without PMIx): fall back
  failed,     // a server was announced but PMIx_Init or a job fact failed
};
const char* to_string(PmixOpen s);

// Bytes of one peer's record, or why there are none.
struct Fetched {
  std::vector<uint8_t> bytes;
  std::string error;  // "" on success
  bool timed_out = false;
  // The launcher has no direct modex (PMIx NOT-SUPPORTED, as Flux answers a Get of a peer that
  // no fence has carried), or WIREUP_PMIX_DIRECT=off refused it here: no PMIx call was useful.
  bool refused = false;
  int retries = 0;  // NOT-FOUND answers before this one (pmix_session.cc: Slurm's server)
  bool ok() const { return error.empty(); }
};

// A fence under way in the background (PMIx_Fence_nb): the caller keeps progressing its
// engine and polls done(). Must outlive the fence (PMIx's thread writes it when it completes).
class PendingFence {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  // "" once done and successful, else the sentence (valid after done()).
  std::string result() const;
  void complete_cb(int status);  // PMIx's thread

 private:
  std::atomic<bool> done_{false};
  std::atomic<int> status_{0};
};

// Whether a Get with a timeout (direct modex: the peer's server asked for a key no fence has
// carried here) may be tried.
enum class DirectModex : uint8_t {
  allowed,  // tried; the launcher answers it (or says it cannot: Fetched::refused)
  refused,  // WIREUP_PMIX_DIRECT=off: every timed Get fails at once with refused set, so that
            // the caller's fallback (one collecting fence) runs as under a launcher without it
};

class PmixSession {
 public:
  // How long a fence may take before fence() gives up with a sentence (WIREUP_PMIX_TIMEOUT_S
  // overrides it): a fence that hangs (a rank that never arrives, a launcher's lost message)
  // must end in an error that says so, never in a hang.
  static constexpr int kDefaultFenceTimeoutS = 120;
  struct Opened {
    PmixOpen state = PmixOpen::failed;
    std::unique_ptr<PmixSession> session;  // set when connected
    std::string why;                       // the sentence when not connected
  };
  // PMIx_Init, then rank, job size and local rank. Without a server announced in the
  // environment it does not even try (PMIx_Init would look for one and fail slowly).
  static Opened open();
  // Whether the environment names a PMIx server (set by the launcher for its children).
  static bool server_announced();
  ~PmixSession();  // PMIx_Finalize
  PmixSession(const PmixSession&) = delete;
  PmixSession& operator=(const PmixSession&) = delete;

  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  uint32_t local_rank() const { return local_rank_; }
  const std::string& nspace() const { return nspace_; }

  // PMIx_Put with PMIX_GLOBAL scope (a byte object); visible to peers after commit().
  // Each returns "" or the sentence.
  std::string put(const std::string& key, std::span<const uint8_t> bytes);
  std::string commit();
  // PMIx_Fence over the whole job, or over `among` only (the survivors of a dead rank);
  // `collect`: PMIX_COLLECT_DATA, so that later Gets are served locally. Waits at most
  // fence_timeout_s(), then returns the sentence naming the fence and its members (PMIx does
  // not say which of them did not arrive); the abandoned fence's state is kept until the end.
  std::string fence(bool collect, const std::vector<uint32_t>& among = {});
  int fence_timeout_s() const { return fence_timeout_s_; }
  void set_fence_timeout_s(int s) { fence_timeout_s_ = s > 0 ? s : kDefaultFenceTimeoutS; }
  DirectModex direct() const { return direct_; }
  // The same fence without collecting data, in the background; `f` reports its end.
  std::string fence_start(PendingFence& f, const std::vector<uint32_t>& among);
  // PMIx_Get of `key` from `peer`. timeout_s > 0: PMIX_TIMEOUT (the peer may not have
  // published yet: the server asks its node, direct modex); 0: as long as PMIx takes.
  // A NOT-FOUND is asked again until the deadline (pmix_session.cc says why) unless !retry.
  Fetched get(uint32_t peer, const std::string& key, int timeout_s, bool retry = true) const;

 private:
  PmixSession() = default;
  std::string nspace_;
  uint32_t rank_ = 0, size_ = 0, local_rank_ = 0;
  bool initialized_ = false;
  int fence_timeout_s_ = kDefaultFenceTimeoutS;
  DirectModex direct_ = DirectModex::allowed;
  std::vector<std::unique_ptr<PendingFence>> abandoned_;  // timed-out fences PMIx may still complete
};

}  // namespace wireup::bootstrap
