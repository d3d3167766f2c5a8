// wireup_churn: ranks in one process connect and disconnect the same peers on demand, cycle
// after cycle, with crossing requests and a rank that restarts in between; after each phase
// the kernel's own counts of this process's RDMA objects (`rdma resource show`, by pid), the
// open fds and the RSS must be back where they were. Public C API only (wireup/wireup.h).
//
//   wireup_churn [--ranks N] [--cycles C] [--phase P] [--restart-every K] [--rss-growth-kib N]
//                [--config FILE] [--provider rdma|sim] [--node 1|2 --pair-dir D [--pair-tag T]]
//
// --node: the ranks split over the two guests of scripts/vm/pair.sh, one process per node
// (even ranks on node 1, odd on node 2: every ring pair crosses the link), meeting through
// files in D (PairLink, wireup_churn_pair.cc); each process checks its own kernel's counts.
//
// A cycle: every ring pair (i, i+1) connects (both ask at once on even cycles: the crossing
// rule keeps one connection; on odd cycles the lower rank asks), every lane becomes READY,
// then one side disconnects (alternating) and every lane is IDLE again. Every K cycles the
// last rank is destroyed and created again (a new listener, a new address given to the
// others). Every P cycles, and at the end, the counts are taken and compared with those
// taken after the first phase. Exit 0 only when nothing drifted, no QP was released twice and
// every lane got where it should within its bound.
#include <dirent.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "wireup/wireup.h"
#include "wireup_churn.h"

namespace wireup_churn {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

using Clock = std::chrono::steady_clock;

struct Rank {
  uint32_t rank = 0;
  std::unique_ptr<Transport> t;
  wireup_context_t* ctx = nullptr;
  wireup_t* w = nullptr;
  std::vector<uint8_t> addr;
};

struct Job {
  Options o;
  Backend* be = nullptr;
  PairLink link;  // node 0: every rank is here
  uint64_t addr_gen = 0;  // generation of the address file this node published last
  std::vector<Rank> ranks;  // every rank of the job; w only for those held here
  uint64_t job_key = 0x636875726eULL;
  uint64_t created = 0, destroyed = 0, doubles = 0;  // QPs of transports gone (restarts)
  uint64_t restarts = 0, ready_events = 0, closed_events = 0, failed_events = 0, idle_without_close = 0;
};

void on_lane(void* arg, const wireup_lane_event_t* ev);

struct LaneArg {
  Job* job;
  uint32_t rank;
};
// One per rank number, kept across its restarts (the run itself holds nothing per cycle).
std::map<uint32_t, std::unique_ptr<LaneArg>> lane_args;

bool make_rank(Job& j, uint32_t r) {
  Rank& k = j.ranks[r];
  k.rank = r;
  k.t = j.be->transport(r);
  k.ctx = j.be->context(r);
  wireup_params_t p;
  wireup_params_init(&p);
  p.rank = r;
  p.nranks = j.o.ranks;
  p.lanes = 1;
  p.job_key = j.job_key;
  p.qp_create = &Transport::create;
  p.qp_release = &Transport::release;
  p.qp_arg = k.t.get();
  if (wireup_create(k.ctx, &p, &k.w) != WIREUP_OK) {
    fail("wireup_create rank %u: %s", r, wireup_last_error(nullptr));
    return false;
  }
  std::unique_ptr<LaneArg>& arg = lane_args[r];
  if (!arg) arg = std::make_unique<LaneArg>(LaneArg{&j, r});
  (void)wireup_on_lane_event(k.w, &on_lane, arg.get());
  k.addr.assign(WIREUP_RAILS_ADDRESS_MAX, 0);  // several rails (device.rails) take more than WIREUP_ADDRESS_MAX
  size_t len = k.addr.size();
  if (wireup_local_address(k.w, k.addr.data(), &len) != WIREUP_OK) {
    fail("wireup_local_address rank %u: %s", r, wireup_last_error(k.w));
    return false;
  }
  k.addr.resize(len);
  return true;
}

void on_lane(void* arg, const wireup_lane_event_t* ev) {
  auto* la = static_cast<LaneArg*>(arg);
  Job& j = *la->job;
  Rank& k = j.ranks[la->rank];
  const uint64_t key = (uint64_t{ev->peer} << 16) | ev->lane;
  if (ev->type == WIREUP_LANE_EVENT_READY) {
    ++j.ready_events;
    wireup_result_t res;
    WIREUP_STRUCT_INIT(&res);
    if (wireup_result_get(k.w, ev->index, &res) != WIREUP_OK) {
      fail("wireup_result_get: %s", wireup_last_error(k.w));
      return;
    }
    if (k.t->lanes.count(key) != 0) fail("rank %u: READY for peer %u lane %u twice", k.rank, ev->peer, ev->lane);
    k.t->lanes[key] = res.qp;
  } else if (ev->type == WIREUP_LANE_EVENT_CLOSED) {
    ++j.closed_events;
    auto it = k.t->lanes.find(key);
    if (it == k.t->lanes.end()) return;  // closed before it was ever ready (a dropped ask)
    ibv_qp* q = it->second;
    k.t->lanes.erase(it);
    k.t->destroy(q, "closed (LANE_CLOSED)");
  } else {
    ++j.failed_events;
    fail("rank %u: peer %u lane %u FAILED", k.rank, ev->peer, ev->lane);
  }
}

// Pair mode: publishes this node's addresses (generation `gen`) and waits (at most 300 s) for
// the other node's of at least generation `other_gen`, taking them into j.ranks.
bool exchange(Job& j, uint64_t other_gen) {
  std::map<uint32_t, std::vector<uint8_t>> mine, theirs;
  for (auto& k : j.ranks)
    if (k.w != nullptr) mine[k.rank] = k.addr;
  if (!j.link.publish(mine, j.addr_gen)) {
    fail("cannot write %s", j.link.file("addr", j.link.node).c_str());
    return false;
  }
  const auto end = Clock::now() + std::chrono::seconds(300);
  while (!j.link.read(theirs, other_gen)) {
    if (Clock::now() > end || failures != 0) {
      fail("no addresses from node %u in %s", 3 - j.link.node, j.link.file("addr", 3 - j.link.node).c_str());
      return false;
    }
    poll(nullptr, 0, 20);
  }
  for (auto& [rank, a] : theirs)
    if (rank < j.ranks.size() && !j.link.local(rank)) j.ranks[rank].addr = a;
  return true;
}

std::vector<wireup_t*> local_handles(Job& j) {
  std::vector<wireup_t*> ws;
  for (auto& k : j.ranks)
    if (k.w != nullptr) ws.push_back(k.w);
  return ws;
}

// Pair mode: both nodes reach `step` before either goes on; this node's ranks keep progressing
// meanwhile (the other node's CM events need their answers). One process: nothing to wait for.
bool barrier(Job& j, uint64_t step) {
  if (j.link.node == 0) return true;
  j.link.arrive(step);
  if (j.be->drive(local_handles(j), [&] { return j.link.reached(step); })) return true;
  fail("node %u never reached step %llu", 3 - j.link.node, static_cast<unsigned long long>(step));
  return false;
}

bool start_all(Job& j) {
  if (j.link.node != 0 && !exchange(j, 0)) return false;
  std::vector<wireup_peer_t> table;
  for (auto& k : j.ranks) table.push_back({k.rank, k.addr.data(), k.addr.size()});
  for (auto& k : j.ranks) {
    if (k.w == nullptr) continue;
    if (wireup_set_peers(k.w, table.data(), table.size()) != WIREUP_OK || wireup_start(k.w) != WIREUP_OK) {
      fail("set_peers/start rank %u: %s", k.rank, wireup_last_error(k.w));
      return false;
    }
  }
  return true;
}

// Progresses every rank held here until `until()` holds (within the backend's bound).
bool drive(Job& j, const std::function<bool()>& until) { return j.be->drive(local_handles(j), until); }

// Every ring lane is in state `want` at the ends held here.
bool all_lanes(Job& j, wireup_lane_state_t want) {
  for (uint32_t i = 0; i < j.o.ranks; ++i) {
    const uint32_t n = (i + 1) % j.o.ranks;
    if (j.link.local(i) && wireup_lane_state(j.ranks[i].w, n, 0) != want) return false;
    if (j.link.local(n) && wireup_lane_state(j.ranks[n].w, i, 0) != want) return false;
  }
  return true;
}

// Rank r is destroyed and made again (a new listener, a new address) by the node that holds
// it; the others take its new address. Pair mode: the other node waits for the new address
// file (step `step`).
void restart(Job& j, uint32_t r, uint64_t step) {
  Rank& k = j.ranks[r];
  if (!j.link.local(r)) {
    if (!barrier(j, step) || !exchange(j, j.addr_gen + 1)) return;
    ++j.addr_gen;  // the other node's generation, which ours follows
    wireup_peer_t peer{r, k.addr.data(), k.addr.size()};
    for (auto& o : j.ranks)
      if (o.w != nullptr && wireup_add_peer(o.w, &peer) != WIREUP_OK) fail("wireup_add_peer: %s", wireup_last_error(o.w));
    ++j.restarts;
    return;
  }
  wireup_destroy(k.w);
  k.w = nullptr;
  j.created += k.t->created;
  j.destroyed += k.t->destroyed + k.t->live.size();  // live ones: destroyed with the transport
  j.doubles += k.t->double_release;
  k.t.reset();  // its QPs, CQ and PD: the process holds none of them afterwards
  if (!make_rank(j, r)) return;
  std::vector<wireup_peer_t> table;
  for (auto& o : j.ranks) table.push_back({o.rank, o.addr.data(), o.addr.size()});
  if (wireup_set_peers(k.w, table.data(), table.size()) != WIREUP_OK || wireup_start(k.w) != WIREUP_OK)
    fail("restart rank %u: %s", r, wireup_last_error(k.w));
  wireup_peer_t me{r, k.addr.data(), k.addr.size()};
  for (auto& o : j.ranks)
    if (o.rank != r && o.w != nullptr && wireup_add_peer(o.w, &me) != WIREUP_OK)
      fail("wireup_add_peer: %s", wireup_last_error(o.w));
  ++j.restarts;
  if (j.link.node != 0) {
    ++j.addr_gen;
    std::map<uint32_t, std::vector<uint8_t>> mine;
    for (auto& o : j.ranks)
      if (o.w != nullptr) mine[o.rank] = o.addr;
    if (!j.link.publish(mine, j.addr_gen)) fail("cannot write %s", j.link.file("addr", j.link.node).c_str());
    (void)barrier(j, step);
  }
}

// Pair mode: the steps of cycle c both nodes reach together (a restart, READY, IDLE).
uint64_t step_of(uint64_t c, int k) { return 1 + 3 * c + static_cast<uint64_t>(k); }

bool cycle(Job& j, uint64_t c) {
  const uint32_t n = j.o.ranks;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t next = (i + 1) % n;
    const uint32_t low = std::min(i, next), high = std::max(i, next);
    if (j.link.local(low)) (void)wireup_connect(j.ranks[low].w, high);
    if (c % 2 == 0 && j.link.local(high)) (void)wireup_connect(j.ranks[high].w, low);  // crossing requests
  }
  if (!drive(j, [&] { return all_lanes(j, WIREUP_LANE_READY); })) {
    fail("cycle %llu: lanes not READY within the bound", static_cast<unsigned long long>(c));
    return false;
  }
  if (!barrier(j, step_of(c, 1))) return false;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t next = (i + 1) % n;
    const uint32_t closer = c % 4 < 2 ? i : next;
    if (j.link.local(closer)) (void)wireup_disconnect(j.ranks[closer].w, closer == i ? next : i);
  }
  if (!drive(j, [&] { return all_lanes(j, WIREUP_LANE_IDLE); })) {
    fail("cycle %llu: lanes not IDLE within the bound", static_cast<unsigned long long>(c));
    return false;
  }
  if (!barrier(j, step_of(c, 2))) return false;
  // A handed-over QP is the transport's: one whose lane is idle again is destroyed now (its
  // LANE_CLOSED event did it already, where one came).
  for (auto& k : j.ranks) {
    if (k.w == nullptr) continue;
    for (auto it = k.t->lanes.begin(); it != k.t->lanes.end();) {
      const auto peer = static_cast<uint32_t>(it->first >> 16), lane = static_cast<uint32_t>(it->first & 0xffff);
      if (wireup_lane_state(k.w, peer, lane) != WIREUP_LANE_IDLE) {
        ++it;
        continue;
      }
      ++j.idle_without_close;
      ibv_qp* q = it->second;
      it = k.t->lanes.erase(it);
      k.t->destroy(q, "idle without LANE_CLOSED");
    }
  }
  return true;
}

}  // namespace
}  // namespace wireup_churn

int main(int argc, char** argv) {
  using namespace wireup_churn;
  Job j;
  if (!parse(argc, argv, j.o)) return 2;
  std::unique_ptr<Backend> be = j.o.provider == "sim" ? make_sim_backend() : make_rdma_backend();
  if (!be) {
    std::fprintf(stderr, "wireup_churn: this build has no simulated fabric\n");
    return 2;
  }
  j.be = be.get();
  j.link = PairLink{j.o.pair_dir, j.o.pair_tag, j.o.node};
  if (!be->open(j.o)) return 1;
  // librdmacm opens each device's PD on the first id bound to it (ucma_get_device in
  // librdmacm/cma.c) and keeps it for the life of the process: one rank made and destroyed
  // first, so that `before` already counts it.
  j.ranks.resize(1);
  if (!make_rank(j, 0)) return 1;
  wireup_destroy(j.ranks[0].w);
  j.ranks.clear();
  const Counts before = be->measure();
  if (kAsan) std::printf("wireup_churn: built with AddressSanitizer: RSS printed, not checked (its quarantine keeps freed memory)\n");
  j.ranks.resize(j.o.ranks);
  for (uint32_t r = 0; r < j.o.ranks; ++r) {
    j.ranks[r].rank = r;
    if (j.link.local(r) && !make_rank(j, r)) return 1;
  }
  if (!start_all(j)) return 1;
  if (j.link.node != 0) {
    std::printf("wireup_churn: node %u of 2, ranks", j.link.node);
    for (uint32_t r = 0; r < j.o.ranks; ++r)
      if (j.link.local(r)) std::printf(" %u", r);
    std::printf(" (pid %d)\n", static_cast<int>(getpid()));
  }

  std::optional<Counts> base;
  const auto t0 = Clock::now();
  uint64_t done = 0;  // cycles completed: a failure stops the run
  for (uint64_t c = 0; c < j.o.cycles && failures == 0; ++c) {
    if (j.o.restart_every != 0 && c > 0 && c % j.o.restart_every == 0) restart(j, j.o.ranks - 1, step_of(c, 0));
    if (!cycle(j, c)) break;
    done = c + 1;
    if ((c + 1) % j.o.phase == 0 || c + 1 == j.o.cycles) {
      const Counts now = be->measure();
      std::printf("cycle %llu: %s (%.1f s)\n", static_cast<unsigned long long>(c + 1), now.str().c_str(),
                  std::chrono::duration<double>(Clock::now() - t0).count());
      std::fflush(stdout);
      if (!base) {
        base = now;  // the first phase: every object the ranks keep exists by now
        continue;
      }
      if (!now.same_objects(*base) || now.fds != base->fds)
        fail("after cycle %llu: %s, after the first phase: %s", static_cast<unsigned long long>(c + 1),
                   now.str().c_str(), base->str().c_str());
      // RSS: within --rss-growth-kib of the first phase (the allocator's noise: a handle holds
      // one result and one error per lane it ever used, nothing per cycle, notes/abi.md).
      // Under AddressSanitizer its quarantine holds freed memory: RSS says nothing there.
      if (!kAsan && now.rss_kib > base->rss_kib + static_cast<long>(j.o.rss_growth_kib))
        fail("RSS grew from %ld to %ld KiB", base->rss_kib, now.rss_kib);
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t created = j.created, destroyed = j.destroyed, doubles = j.doubles;
  for (auto& k : j.ranks) {
    if (k.w == nullptr) continue;
    wireup_destroy(k.w);
    created += k.t->created;
    destroyed += k.t->destroyed + k.t->live.size();
    doubles += k.t->double_release;
    k.t.reset();
  }
  const Counts after = be->measure();
  be->close();
  std::printf("before: %s\nafter:  %s\n", before.str().c_str(), after.str().c_str());
  if (!after.same_objects(before))
    fail("the kernel holds more objects of this process once every rank is destroyed than before the first");
  std::printf(
      "wireup_churn: %u ranks, %llu cycles in %.1f s, %llu restarts, %llu READY / %llu CLOSED lane events, %llu QPs "
      "created, %llu destroyed, %llu released twice, %llu idle lanes without LANE_CLOSED: %s\n",
      j.o.ranks, static_cast<unsigned long long>(done), secs, static_cast<unsigned long long>(j.restarts),
      static_cast<unsigned long long>(j.ready_events), static_cast<unsigned long long>(j.closed_events),
      static_cast<unsigned long long>(created), static_cast<unsigned long long>(destroyed),
      static_cast<unsigned long long>(doubles), static_cast<unsigned long long>(j.idle_without_close),
      failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
