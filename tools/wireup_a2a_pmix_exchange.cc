// The PMIx driver's exchanges (wireup_a2a_pmix_exchange.h): Put + Commit + Fence + a Get of
// every member's record, and the barrier and verdict built on it.
#include "wireup_a2a_pmix_exchange.h"

#include <algorithm>
#include <cstdio>

namespace wireup::a2a {

using bootstrap::PmixSession;

// One exchange: every rank in `among` (all when empty) publishes `key`, a fence, and each
// rank reads the others' records ("" stands for a rank that is not in `among`). `collect`:
// the fence collects (bulk); else it is a barrier and each Get asks the peer's server (direct
// modex): on demand no fence may collect before the addresses are read, since after one a
// key posted later is NOT-FOUND at once (tests/bootstrap/pmix_job_check.cc).
Expected<std::vector<std::string>> exchange(PmixSession& s, const std::string& key, const std::string& mine,
                                            const std::vector<uint32_t>& among, bool collect) {
  if (Problem p = s.put(key, bytes_of(mine)); !p.empty()) return Expected<std::vector<std::string>>::failure(p);
  if (Problem p = s.commit(); !p.empty()) return Expected<std::vector<std::string>>::failure(p);
  if (Problem p = s.fence(collect, among); !p.empty()) return Expected<std::vector<std::string>>::failure(p);
  std::vector<std::string> all(s.size());
  std::vector<uint32_t> silent;  // ranks whose record could not be read
  std::string first_error;
  for (uint32_t r = 0; r < s.size(); ++r) {
    if (!among.empty() && std::find(among.begin(), among.end(), r) == among.end()) continue;
    // Once one rank has not answered, the others are asked once each (no grace, 1 s direct),
    // so that a dead node costs one deadline, not one per rank on it.
    const bool first = silent.empty();
    bootstrap::Fetched f = s.get(r, key, collect ? 0 : (first ? kDirectGetTimeoutS : 1), first);
    if (f.retries > 0)
      std::fprintf(stderr, "[a2a] rank %u: PMIx_Get(rank %u, %s) answered NOT-FOUND %d time(s) before %s\n", s.rank(), r,
                   key.c_str(), f.retries, f.ok() ? "it found the key" : "giving up");
    if (f.refused) return Expected<std::vector<std::string>>::failure(f.error);
    if (!f.ok()) {
      if (first) first_error = f.error;
      silent.push_back(r);
      continue;
    }
    all[r] = text_of(f.bytes);
  }
  if (!silent.empty()) {
    std::string list;
    for (uint32_t r : silent) list += (list.empty() ? "" : " ") + std::to_string(r);
    return Expected<std::vector<std::string>>::failure("PMIx_Get of '" + key + "' after the fence: rank(s) " + list +
                                                        " did not answer (first: " + first_error + ")");
  }
  return all;
}

// A barrier among `among` that holds even where the launcher's fence does not: each rank's
// token is read back from every other (a Get retried while NOT-FOUND, pmix_session.cc), so
// nobody passes before every rank has reached it. Under Slurm 22.05 with SLURM_PMIX_DIRECT_CONN
// off a bare PMIx_Fence returned on node 1 before node 2's ranks had reached it (an RDMA
// WRITE checked after it was not there yet).
Problem barrier(PmixSession& s, const std::string& name, const std::vector<uint32_t>& among, bool collect) {
  auto all = exchange(s, "a2a.barrier." + name, "here", among, collect);
  return all ? Problem{} : "barrier " + name + ": " + all.error();
}

// Every rank says whether its step worked ("ok" or its problem); one failure stops them all.
bool all_ok(PmixSession& s, const std::string& step, const Problem& p, const std::vector<uint32_t>& among,
            bool collect) {
  if (!p.empty()) std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", s.rank(), p.c_str());
  auto all = exchange(s, "a2a.ok." + step, p.empty() ? "ok" : p, among, collect);
  if (!all) return std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", s.rank(), all.error().c_str()), false;
  for (uint32_t r = 0; r < s.size(); ++r)
    if (!(*all)[r].empty() && (*all)[r] != "ok") return false;
  return true;
}

}  // namespace wireup::a2a
