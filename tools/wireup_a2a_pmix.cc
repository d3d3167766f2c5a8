// The PMIx driver (--bootstrap pmix): one rank per process under a PMIx launcher (mpirun,
// srun --mpi=pmix), provider rdma, and no MPI call at all. The launcher's PMIx server is the
// out-of-band channel: rank and size from it, every exchange a Put + Commit, a Fence and
// Gets (job key, addresses, QPN tables, reports, exit status), the barriers Fences, the end
// of wireup a background Fence among the live ranks. Connections go through the public API
// as in the MPI driver. No progress line: rank 0 would need the others' counts every round,
// a fence each (the MPI driver's rounds are a non-blocking allreduce).
//
// A killed rank (--kill-rank): the survivors learn of its death from PMIx's termination
// event or, for a peer on this node, from its pidfd (pmix_death_watch.h says why both), and
// give its pending lanes up at once (Wireup::fail_peer). Every fence after start() is among
// the survivors only; they skip PMIx_Finalize (mpirun needs --enable-recovery).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "bootstrap/local_exit_watch.h"
#include "bootstrap/pmix_death_watch.h"
#include "wireup_a2a_driver.h"
#include "wireup_a2a_ondemand.h"
#include "wireup_a2a_pmix.h"
#include "wireup_a2a_pmix_checks.h"
#include "wireup_a2a_pmix_exchange.h"
#include "wireup_a2a_trigger.h"

namespace wireup::a2a {
namespace {

using bootstrap::PmixSession;
constexpr auto kIdleWait = std::chrono::milliseconds(20);  // as the MPI driver (its comment)

// What each rank publishes before start(): its listen address, where it runs (for the exit
// watch) and its pid, as "host pid hex-address".
std::string my_record(const wireup::Wireup& e) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string r = std::string(host) + " " + std::to_string(getpid()) + " ";
  for (uint8_t b : e.local_address()) {
    static const char* const hex = "0123456789abcdef";
    r += hex[b >> 4], r += hex[b & 15];
  }
  return r;
}

struct PeerRecord {
  std::string host;
  pid_t pid = 0;
  std::vector<uint8_t> address;
};
Expected<PeerRecord> parse_record(uint32_t rank, const std::string& text) {
  PeerRecord p;
  const size_t a = text.find(' '), b = text.find(' ', a + 1);
  auto bad = [&](const char* why) {
    return Expected<PeerRecord>::failure("rank " + std::to_string(rank) + "'s record '" + text + "': " + why);
  };
  if (a == std::string::npos || b == std::string::npos) return bad("expected 'host pid address'");
  p.host = text.substr(0, a);
  p.pid = pid_t(std::atol(text.substr(a + 1, b - a - 1).c_str()));
  const std::string hex = text.substr(b + 1);
  if (p.pid <= 0 || hex.size() % 2 != 0 || hex.size() / 2 > WIREUP_RAILS_ADDRESS_MAX) return bad("bad pid or address");
  for (size_t i = 0; i < hex.size(); i += 2) {
    auto nib = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
    p.address.push_back(uint8_t(nib(hex[i]) << 4 | nib(hex[i + 1])));
  }
  return p;
}

// CLOCK_MONOTONIC_COARSE in ms: read from the vDSO even where the clocksource has none (the
// VM's hpet), at jiffy resolution (1-10 ms): for pacing only, never for a reported time.
int64_t coarse_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return int64_t(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

// The deaths both watches saw since the last call, each dead rank's pending lanes given up.
struct DeathWatches {
  // The pidfds are polled at most this often (a poll() per turn of a busy progress loop
  // otherwise): a death is seen this much later at worst, against the seconds of a CM timeout.
  static constexpr int64_t kLocalPollMs = 5;
  std::unique_ptr<bootstrap::PmixDeathWatch> pmix;
  bootstrap::LocalExitWatch local;
  int64_t next_local_poll_ms = 0;
  std::set<uint32_t> handled;
  // On demand: peers whose address could not be read (the address callback cannot give their
  // lanes up itself: it may run inside connect()).
  std::vector<std::pair<uint32_t, std::string>> no_address;
  void drain(wireup::Wireup& e, uint32_t me) {
    for (auto& [peer, why] : std::exchange(no_address, {})) {
      size_t n = 0;
      const Problem p = attempt([&] { n = e.fail_peer(peer, why); });
      std::fprintf(stderr, "[a2a] rank %u: %s: gave up %zu lane(s)%s%s\n", me, why.c_str(), n, p.empty() ? "" : ": ",
                   p.c_str());
    }
    std::vector<bootstrap::PeerDeath> seen;
    if (local.size() > 0) {
      const int64_t ms = coarse_ms();
      if (ms >= next_local_poll_ms) seen = local.poll(), next_local_poll_ms = ms + kLocalPollMs;
    }
    if (pmix) for (auto& d : pmix->take()) seen.push_back(std::move(d));
    for (const bootstrap::PeerDeath& d : seen) {
      if (!handled.insert(d.rank).second) continue;
      size_t n = 0;
      const std::string why = "rank " + std::to_string(d.rank) + " died (" + d.event + ")";
      const Problem p = attempt([&] { n = e.fail_peer(d.rank, why); });
      std::fprintf(stderr, "[a2a] rank %u: %s, seen at %.6f: gave up %zu pending lane(s)%s%s\n", me, why.c_str(),
                   d.at_s, n, p.empty() ? "" : ": ", p.c_str());
    }
  }
};

// On demand, the address callback: one PMIx_Get of that peer's record (direct modex, with a
// timeout; or from the collected data where the launcher has no direct modex), its process
// watched if it runs on this node, its address given to wireup.
void fetch_address(PmixSession& s, wireup::Wireup& e, DeathWatches& dw, uint32_t peer, bool direct) {
  bootstrap::Fetched f = s.get(peer, "wireup.address", direct ? kDirectGetTimeoutS : 0);
  auto rec = f.ok() ? parse_record(peer, text_of(f.bytes)) : Expected<PeerRecord>::failure(f.error);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  Problem p = rec ? Problem{} : rec.error();
  if (p.empty() && rec->host == host) p = dw.local.add(peer, rec->pid);
  if (p.empty()) p = attempt([&] { e.add_peer({peer, rec->address}); });
  if (!p.empty()) dw.no_address.emplace_back(peer, "no address for rank " + std::to_string(peer) + ": " + p);
}

// Progresses the engine (and the death watches) until every live rank is done (`finished`):
// a rank that is done joins a background fence of the live ranks; the loop ends when it
// completes.
// `trigger`: --run's, polled with this rank's established count on every turn.
WireupRun run_wireup(PmixSession& s, wireup::Wireup& e, const std::vector<uint32_t>& live, DeathWatches& dw,
                     const std::function<bool()>& finished, ConnTrigger& trigger) {
  WireupRun out;
  const auto t0 = Clock::now();
  const auto cpu0 = cpu_seconds();
  bool done = false;
  auto end = std::make_unique<bootstrap::PendingFence>();
  for (;;) {
    dw.drain(e, s.rank());
    int work = 0;
    if (out.error.empty()) out.error = attempt([&] { work = e.progress(); });
    trigger.poll(e.result_count());
    if (!done && (!out.error.empty() || finished())) {
      done = true, out.seconds = since(t0);
      const auto cpu = cpu_seconds();
      out.user_s = cpu.first - cpu0.first, out.sys_s = cpu.second - cpu0.second;
      if (Problem p = s.fence_start(*end, live); !p.empty()) {
        out.error = p;
        return out;
      }
    }
    if (done && end->done()) {
      if (Problem p = end->result(); !p.empty() && out.error.empty()) out.error = p;
      return out;
    }
    // The end fence is bounded as every other: a live rank that never finishes must not hang
    // the others (PendingFence must outlive PMIx's callback: it leaks on this path).
    if (done && since(t0) - out.seconds > s.fence_timeout_s()) {
      (void)end.release();
      out.error = "rank " + std::to_string(s.rank()) + ": the end-of-wireup PMIx_Fence_nb among the " +
                  std::to_string(live.size()) + " live ranks did not complete within " +
                  std::to_string(s.fence_timeout_s()) + " s (WIREUP_PMIX_TIMEOUT_S)";
      return out;
    }
    if (work == 0 && out.error.empty()) out.error = attempt([&] { e.wait(kIdleWait); });
  }
}

// Bulk: every rank's record through one collecting fence, a Get per peer, the peer table;
// the processes of the peers on this node watched.
Problem bulk_addresses(PmixSession& s, wireup::Wireup& wu, DeathWatches& dw) {
  auto records = exchange(s, "wireup.address", my_record(wu), {});
  if (!records) return records.error();
  std::vector<wireup::PeerAddress> peers;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (uint32_t r = 0; r < s.size(); ++r) {
    auto rec = parse_record(r, (*records)[r]);
    if (!rec) return rec.error();
    peers.push_back({r, rec->address});
    if (r != s.rank() && rec->host == host)
      if (Problem p = dw.local.add(r, rec->pid); !p.empty()) return p;
  }
  return attempt([&] { wu.set_peers(peers); });
}

}  // namespace

int run_pmix(const Options& o, std::unique_ptr<bootstrap::PmixSession> session) {
  PmixSession& s = *session;
  const int wr = int(s.rank()), wn = int(s.size());
  // --into (the incast of one rank) is the MPI driver's only: refused here, not ignored.
  if (wn < 2 || o.kill_rank >= wn || o.into >= 0) {
    if (wr == 0)
      std::fprintf(stderr, "wireup_a2a: %s\n",
                   wn < 2          ? "needs at least 2 ranks (mpirun -np N, N >= 2)"
                   : o.into >= 0   ? "--into needs --bootstrap mpi (the pmix bootstrap wires up all-to-all only)"
                                   : "--kill-rank is not a rank of this job");
    return 2;
  }
  const bool victim = o.kill_rank == wr;
  std::set<uint32_t> dead;
  if (o.kill_rank >= 0) dead.insert(uint32_t(o.kill_rank));
  std::vector<uint32_t> live;
  for (uint32_t r = 0; r < uint32_t(wn); ++r)
    if (!dead.count(r)) live.push_back(r);

  // --- setup: every rank's failure is reported, then all stop --------------------------------
  // On demand no fence collects before the addresses are read (exchange() says why).
  std::unique_ptr<RdmaRank> rr;
  uint64_t key = 0;
  bool od = false;
  std::optional<PatternPlan> plan;
  // The device choice ranks devices by the local rank: PMIx's (the user's --set still wins).
  Options ro = o;
  ro.overrides.insert(ro.overrides.begin(), "device.local_rank=" + std::to_string(s.local_rank()));
  Problem p = attempt([&] { rr = std::make_unique<RdmaRank>(ro); });
  if (p.empty()) p = job_shape(o, *rr, uint32_t(wn), od, plan);
  if (p.empty() && wr == 0) p = attempt([&] { key = pick_job_key(o, rr->context()); });
  // On demand wants direct modex (each address read from its owner's node when needed). A
  // launcher without it refuses the first such Get on every rank alike (Flux: "not
  // implemented"; WIREUP_PMIX_DIRECT=off here), so all switch together: every exchange,
  // the addresses included, through collecting fences, and each address read locally.
  bool direct = od;
  if (od) {
    Problem q = s.put("wireup.probe", bytes_of("1"));
    if (q.empty()) q = s.commit();
    if (Problem f = s.fence(false); q.empty()) q = f;
    bootstrap::Fetched f = s.get(uint32_t((wr + 1) % wn), "wireup.probe", kDirectGetTimeoutS);
    if (f.refused) {
      direct = false;
      if (wr == 0)
        std::fprintf(stderr, "[a2a] no direct modex (%s): on demand falls back to one collecting fence for the "
                     "addresses, each then read locally\n", f.error.c_str());
    } else if (q.empty() && !f.ok()) {
      q = "direct-modex probe: " + f.error;
    }
    if (p.empty()) p = q;
  }
  const bool collect = !direct;
  if (!all_ok(s, "context", p, {}, collect)) return 1;
  auto keys = exchange(s, "a2a.job_key", std::to_string(key), {}, collect);
  if (!keys) return std::fprintf(stderr, "wireup_a2a: rank %d: %s\n", wr, keys.error().c_str()), 1;
  key = std::strtoull((*keys)[0].c_str(), nullptr, 10);
  if (!all_ok(s, "open", attempt([&] { rr->open(uint32_t(wr), uint32_t(wn), key); }), {}, collect)) return 1;
  wireup::Wireup& wu = rr->wireup();
  DeathWatches dw;
  std::unique_ptr<OnDemandRank> odr;
  if (od) {
    // Our own record only (Put + Commit); each peer's is read when wireup asks for it.
    p = s.put("wireup.address", bytes_of(my_record(wu)));
    if (p.empty()) p = s.commit();
    if (p.empty()) p = attempt([&] { wu.on_address_needed([&](uint32_t peer) { fetch_address(s, wu, dw, peer, direct); }); });
    if (p.empty()) odr = std::make_unique<OnDemandRank>(wu, *plan, uint32_t(wr), rr->lanes(), dead);
  } else {
    p = bulk_addresses(s, wu, dw);
  }
  std::string why;
  if (p.empty() && !(dw.pmix = bootstrap::PmixDeathWatch::create(s, why))) p = why;
  if (!all_ok(s, "peers", p, {}, collect)) return 1;

  // --- wireup ----------------------------------------------------------------------------
  const uint32_t lanes = rr->lanes();
  const uint64_t planned = (od ? plan->pairs() : uint64_t(wn) * uint64_t(wn - 1) / 2) * lanes;
  if (wr == 0 && !o.json)
    std::fprintf(stderr, "[a2a] %d ranks x %u lanes = %llu connections (bootstrap pmix, %s%s%s); rank 0 on %s; %zu "
                 "peer(s) on this node watched by pidfd\n", wn, lanes, (unsigned long long)planned, s.nspace().c_str(),
                 od ? ", on demand, pattern " : "", od ? plan->text().c_str() : "",
                 rr->context().listen_source().c_str(), dw.local.size());
  if (Problem f = barrier(s, "start", {}, collect); !f.empty()) return std::fprintf(stderr, "wireup_a2a: %s\n", f.c_str()), 1;
  Problem started = attempt([&] { wu.start(); });
  if (started.empty() && odr) started = odr->ask_all();  // every peer of the pattern at once
  if (victim) run_victim(o, wu, wr);
  ConnTrigger trigger(o, wr);
  WireupRun w = run_wireup(s, wu, live, dw, [&] { return odr ? odr->settled() : wu.done(); }, trigger);
  if (w.error.empty()) w.error = attempt([&] { (void)wu.progress(); });  // steady events that came meanwhile
  if (!started.empty()) w.error = started;
  if (!w.error.empty()) std::fprintf(stderr, "wireup_a2a: rank %d: %s\n", wr, w.error.c_str());

  // --- checks, among the live ranks --------------------------------------------------------
  RankReport rep;
  if (Problem q = attempt([&] { rep = make_report(uint32_t(wr), *rr, w.seconds, dead); }); !q.empty())
    rep.rank = uint32_t(wr), rep.check.problem("rank " + std::to_string(wr) + ": report: " + q), ++rep.check.errors;
  rep.user_s = w.user_s, rep.sys_s = w.sys_s;
  if (!w.error.empty()) rep.check.problem("rank " + std::to_string(wr) + ": " + w.error), ++rep.check.errors;
  if (odr) odr->report(rep);
  if (o.verify) {
    Excluded skip{dead, {}};
    qpn_exchange(s, wu, live, lanes, rep.check, skip);
    if (Problem d = data_exchange(o, *rr, s, live, skip, rep.check); !d.empty())
      rep.check.problem("rank " + std::to_string(wr) + ": SEND check: " + d), ++rep.check.errors;
    if (Problem f = barrier(s, "sent", live); !f.empty())  // the SEND check is over everywhere
      rep.check.problem(f), ++rep.check.errors;
    if (Problem d = one_sided_exchange(o, *rr, s, live, skip, rep.check); !d.empty())
      rep.check.problem("rank " + std::to_string(wr) + ": one-sided check: " + d), ++rep.check.errors;
    if (Problem f = barrier(s, "one_sided", live); !f.empty())  // nobody tears down while a peer still polls
      rep.check.problem(f), ++rep.check.errors;
  }
  // The job's wall time: the slowest live rank's, which the summary takes from the reports.
  double wall = w.seconds;
  auto walls = exchange(s, "a2a.wall", std::to_string(w.seconds), live);
  if (walls)
    for (uint32_t r : live) wall = std::max(wall, std::atof((*walls)[r].c_str()));
  JobInfo job{uint32_t(wn), lanes, "rdma", "pmix", wall, o.verify, dead};
  if (od) job.on_demand = true, job.pattern = pattern_info(*plan, dead);
  const int status = summarize_job(s, rep, live, job, o.json);
  std::fflush(nullptr);
  if (o.hold_s > 0) std::this_thread::sleep_for(std::chrono::seconds(o.hold_s));  // QPs at RTS meanwhile
  dw.pmix.reset();  // the handler goes before the session
  rr->close();      // disconnect (up to 2 s), then our QPs, CQ and PD
  rr.reset();       // the context last
  trigger.finish(kRunWaitS);
  if (!dead.empty()) _exit(status);  // PMIx_Finalize may wait for the dead rank
  return status;
}

}  // namespace wireup::a2a
