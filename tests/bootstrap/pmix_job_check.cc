// The PMIx bootstrap under a real launcher (mpirun -np N, N >= 2), each step checked on every
// rank: rank, size and local rank against what the launcher also puts in the environment;
// Put + Commit, one collecting Fence, a Get per peer (bulk); a Get of one peer's key behind
// a fence that collects nothing, with PMIX_TIMEOUT (direct modex); a Get of a key nobody
// publishes, which must time out and say so; a fence one member reaches 3 s late, which must
// end on the other within its 1 s bound with a sentence naming the call and the ranks; with
// WIREUP_PMIX_DIRECT=off, the direct Get refused at once and said so; the death watch fed through PMIx's own event
// path (notify_self), read from its fd by this thread. Prints one line per failed check and
// "pmix_job_check: ok" from rank 0; exit 0 only if every rank passed.
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "bootstrap/pmix_death_watch.h"
#include "bootstrap/pmix_session.h"

using namespace wireup::bootstrap;

namespace {

int failures = 0;
uint32_t me = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "pmix_job_check: rank %u: FAILED: %s\n", me, what.c_str());
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace

int main() {
  PmixSession::Opened o = PmixSession::open();
  if (o.state != PmixOpen::connected) {
    std::fprintf(stderr, "pmix_job_check: FAILED: %s: %s (run it under mpirun)\n", to_string(o.state), o.why.c_str());
    return 1;
  }
  PmixSession& s = *o.session;
  me = s.rank();
  const uint32_t n = s.size();
  auto env_num = [](const char* v) { const char* e = std::getenv(v); return e ? long(std::atol(e)) : -1L; };
  check(n >= 2, "job size " + std::to_string(n) + " (run with -np 2 or more)");
  if (env_num("OMPI_COMM_WORLD_SIZE") >= 0) {
    check(long(n) == env_num("OMPI_COMM_WORLD_SIZE"), "PMIX_JOB_SIZE " + std::to_string(n) + " vs the launcher's");
    check(long(me) == env_num("OMPI_COMM_WORLD_RANK"), "PMIX_RANK " + std::to_string(me) + " vs the launcher's");
    check(long(s.local_rank()) == env_num("OMPI_COMM_WORLD_LOCAL_RANK"),
          "PMIX_LOCAL_RANK " + std::to_string(s.local_rank()) + " vs the launcher's");
  }

  // WIREUP_PMIX_DIRECT=off: the direct path refused at once, without asking PMIx, and said so
  // (the caller's cue to fall back to a collecting fence); the rest of the check unchanged.
  const char* dm = std::getenv("WIREUP_PMIX_DIRECT");
  const bool refused = dm != nullptr && std::string(dm) == "off";
  check(s.direct() == (refused ? DirectModex::refused : DirectModex::allowed), "the session's direct-modex state");
  // Direct modex, as on demand: the peer's key committed, then a fence that collects nothing
  // (a barrier: the peer HAS committed), then a Get of that one peer, which its server answers.
  // Seen with Open MPI 4.1.4 / PMIx 4.2.2: a Get of a key the peer has not committed yet is
  // NOT-FOUND at once (the server does not hold the request), and after a collecting fence a
  // key posted later is NOT-FOUND too (the peer's data counts as complete): so this comes
  // first, behind the barrier.
  check(s.put("check.direct", bytes("direct-" + std::to_string(me))).empty() && s.commit().empty(), "put direct");
  const std::string barrier = s.fence(false);
  check(barrier.empty(), barrier);
  const uint32_t peer = (me + 1) % n;
  const auto d0 = std::chrono::steady_clock::now();
  Fetched d = s.get(peer, "check.direct", 10);
  const double direct_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();
  if (refused) {
    check(!d.ok() && d.refused && d.error.find("direct modex refused") != std::string::npos &&
              d.error.find("rank " + std::to_string(peer)) != std::string::npos && direct_s < 0.5,
          "refused direct get of rank " + std::to_string(peer) + ": want it refused at once, naming the peer; got '" +
              d.error + "' after " + std::to_string(direct_s) + " s");
  } else {
    check(d.ok() && !d.refused && text(d.bytes) == "direct-" + std::to_string(peer),
          "direct get of rank " + std::to_string(peer) + ": " + (d.ok() ? "'" + text(d.bytes) + "'" : d.error));
  }

  // Bulk: Put + Commit, one Fence collecting, a Get per peer.
  check(s.put("check.bulk", bytes("bulk-" + std::to_string(me))).empty(), "put");
  check(s.commit().empty(), "commit");
  const auto f0 = std::chrono::steady_clock::now();
  const std::string fenced = s.fence(true);
  const double fence_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0).count();
  check(fenced.empty(), fenced);
  for (uint32_t r = 0; r < n; ++r) {
    Fetched f = s.get(r, "check.bulk", 0);
    check(f.ok() && text(f.bytes) == "bulk-" + std::to_string(r), "bulk get of rank " + std::to_string(r) + ": " +
                                                                      (f.ok() ? "'" + text(f.bytes) + "'" : f.error));
  }


  // A key nobody publishes: the timeout ends the wait, and the error says what timed out.
  const auto t0 = std::chrono::steady_clock::now();
  Fetched never = s.get(peer, "check.never_published", 1);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check(!never.ok(), "a key nobody published was found");
  check(never.error.find("PMIx_Get") != std::string::npos &&
            never.error.find("check.never_published") != std::string::npos,
        "the error names the call and the key: " + never.error);
  check(waited < 5, "the 1 s timeout took " + std::to_string(waited) + " s");

  // A fence that a member reaches late: rank 0 waits at most 1 s and gets the sentence naming
  // the call and its members; rank 1 arrives 3 s later, completing the abandoned fence (so no
  // collective is left open), and everybody meets again at a normal fence.
  if (n >= 2 && me <= 1) {
    if (me == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
    s.set_fence_timeout_s(me == 0 ? 1 : 30);
    const auto l0 = std::chrono::steady_clock::now();
    const std::string late = s.fence(false, {0, 1});
    const double late_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
    if (me == 0)
      check(late.find("PMIx_Fence(ranks 0-1)") != std::string::npos && late.find("within 1 s") != std::string::npos &&
                late_s < 2.5,
            "a fence rank 1 reaches 3 s late: want rank 0's sentence naming PMIx_Fence and ranks 0-1 within ~1 s; got '" +
                late + "' after " + std::to_string(late_s) + " s");
    else
      check(late.empty(), "rank 1's late fence: " + late);
    s.set_fence_timeout_s(PmixSession::kDefaultFenceTimeoutS);
  }
  const std::string again = s.fence(false);
  check(again.empty(), "the fence after the late one: " + again);

  // Death watch: the event through PMIx (its thread) -> eventfd -> this thread.
  std::string why;
  auto watch = PmixDeathWatch::create(s, why);
  check(watch != nullptr, "death watch: " + why);
  if (watch) {
    const uint32_t victim = (me + n - 1) % n;
    check(watch->take().empty(), "deaths before any event");
    const std::string raised = watch->notify_self(victim);
    check(raised.empty(), raised);
    pollfd p{watch->fd(), POLLIN, 0};
    check(poll(&p, 1, 5000) == 1, "the watch's fd did not become readable within 5 s");
    std::vector<PeerDeath> d2 = watch->take();
    check(d2.size() == 1 && d2[0].rank == victim,
          "want one death of rank " + std::to_string(victim) + ", got " + std::to_string(d2.size()) +
              (d2.empty() ? "" : " (rank " + std::to_string(d2[0].rank) + ", " + d2[0].event + ")"));
    check(watch->take().empty(), "a death taken twice");
  }
  std::printf("pmix_job_check: rank %u of %u (local rank %u): fence %.1f ms, direct get %s, timeout after %.2f s: %s\n",
              me, n, s.local_rank(), fence_ms, d.ok() ? "ok" : d.refused ? "refused" : "failed", waited, failures ? "FAILED" : "passed");
  std::fflush(stdout);
  // Every rank's verdict before anyone leaves (rank 0 answers for the job).
  check(s.put("check.verdict", bytes(failures ? "failed" : "ok")).empty() && s.commit().empty(), "put verdict");
  check(s.fence(true).empty(), "last fence");
  int bad = 0;
  for (uint32_t r = 0; r < n; ++r) {
    Fetched v = s.get(r, "check.verdict", 0);
    if (!v.ok() || text(v.bytes) != "ok") ++bad;
  }
  if (me == 0) std::printf(bad ? "pmix_job_check: %d rank(s) FAILED\n" : "pmix_job_check: ok\n", bad);
  watch.reset();
  return bad ? 1 : 0;
}
