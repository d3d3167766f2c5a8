// The MPI driver: one rank per process, provider rdma. MPI is only the out-of-band channel
// (job key, addresses, the checks' exchange, the reports); every connection goes through the
// public API (wireup.hpp over wireup.h) and the RDMA CM, with QPs this process makes itself,
// exactly as a transport links the library.
//
// On demand (--mode on-demand) the addresses still come from one MPI_Allgather: the table is
// complete before start(), so wireup never calls the address callback; only the asks follow
// the pattern (the pmix driver reads one peer's address per ask instead).
//
// A killed rank (--kill-rank) must not hang the others. Open MPI 4.1 has no ULFM, so a
// communicator cannot be shrunk after a failure: the survivors' communicator is split off before
// wireup starts, while the victim still takes part, and every collective after start() runs on
// it. mpirun must be told not to abort the job when a process dies (--enable-recovery), and the
// survivors skip MPI_Finalize, whose global fence would wait for the dead rank forever.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <thread>

#include "wireup_a2a_address_slot.h"
#include "wireup_a2a_driver.h"
#include "wireup_a2a_ondemand.h"
#include "wireup_a2a_trigger.h"

namespace wireup::a2a {
namespace {

constexpr auto kRoundEvery = std::chrono::milliseconds(200);
constexpr auto kPrintEvery = std::chrono::seconds(1);
// How long the loop sleeps in Wireup::wait when there is nothing to do. The engine wakes at
// once for a CM event or its own next timer, so this only bounds how late an MPI progress
// round is noticed. Short sleeps are not free: in the TCG VM a wakeup (poll, progress, MPI_Test)
// cost ~0.1 ms of CPU, and at 1-2 ms per sleep the ranks that were done or waiting took a
// quarter of the two vCPUs away from the ranks still connecting.
constexpr auto kIdleWait = std::chrono::milliseconds(20);

// Every rank says whether its step worked; one failure stops them all, each naming its reason.
bool all_ok(MPI_Comm comm, int rank, const Problem& p) {
  int mine = p.empty() ? 1 : 0, all = 0;
  if (!p.empty()) std::fprintf(stderr, "wireup_a2a: rank %d: %s\n", rank, p.c_str());
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

// Keeps MPI's own traffic off the device under test (and its CPU time out of the numbers):
// shared memory and TCP are plenty for the few collectives the runner does. Anything the user
// set (OMPI_MCA_* or mpirun --mca) wins.
void mpi_off_the_device() {
  setenv("OMPI_MCA_pml", "ob1", 0);
  setenv("OMPI_MCA_btl", "self,vader,tcp", 0);
  setenv("OMPI_MCA_osc", "^ucx,rdma", 0);
}

// Progresses the engine until every live rank is done. Rounds of MPI_Iallreduce over the live
// ranks carry {established, retries, done}: they end the loop together and feed rank 0's
// progress line. A rank that is done starts its next round at once, so the last one to finish
// ends the loop without waiting out a round interval.
// `finished`: this rank is done (bulk: the engine; on demand: every lane of its pattern settled).
// `trigger`: --run's, polled with this rank's established count on every turn.
WireupRun run_wireup(const Options& o, wireup::Wireup& e, MPI_Comm live, uint64_t planned,
                     const std::function<bool()>& finished, ConnTrigger& trigger) {
  int lr = 0, ln = 0;
  MPI_Comm_rank(live, &lr);
  MPI_Comm_size(live, &ln);
  WireupRun out;
  const auto t0 = Clock::now();
  const auto cpu0 = cpu_seconds();
  auto last_round = t0 - kRoundEvery, last_print = t0;
  bool done = false, printed = false;
  MPI_Request req = MPI_REQUEST_NULL;
  uint64_t send[3] = {}, recv[3] = {}, shown = 0;
  for (;;) {
    // Progress goes on after this rank is done: the steady channel still reports peers that
    // disconnect (a rank that died, say) while the others finish.
    int work = 0;
    if (out.error.empty()) out.error = attempt([&] { work = e.progress(); });
    trigger.poll(e.result_count());
    if (!done && (!out.error.empty() || finished())) {
      done = true, out.seconds = since(t0);
      const auto cpu = cpu_seconds();
      out.user_s = cpu.first - cpu0.first, out.sys_s = cpu.second - cpu0.second;
    }
    const auto now = Clock::now();
    if (req == MPI_REQUEST_NULL && (done || now - last_round >= kRoundEvery)) {
      const wireup_counters_t c = e.counters();
      send[0] = c.established_active;
      send[1] = c.retries;
      send[2] = done ? 1 : 0;
      MPI_Iallreduce(send, recv, 3, MPI_UINT64_T, MPI_SUM, live, &req);
      last_round = now;
    }
    int flag = 0;
    if (req != MPI_REQUEST_NULL) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      // A sum no job can produce means the ranks disagree about the rounds: say so and stop
      // rather than wait forever for a done count that cannot come.
      if (recv[2] > uint64_t(ln) || recv[0] > planned) {
        std::fprintf(stderr, "wireup_a2a: rank %d: impossible progress round (%llu established, %llu done of %d)\n",
                     lr, (unsigned long long)recv[0], (unsigned long long)recv[2], ln);
        MPI_Abort(live, 1);
      }
      if (recv[2] == uint64_t(ln)) break;
      if (lr == 0 && o.progress && now - last_print >= kPrintEvery) {
        progress_line(recv[0], planned, recv[1], since(t0));
        last_print = now, printed = true, shown = recv[0];
      }
    }
    if (work == 0 && out.error.empty()) out.error = attempt([&] { e.wait(kIdleWait); });
  }
  if (lr == 0 && printed && recv[0] != shown) progress_line(recv[0], planned, recv[1], since(t0));
  return out;
}

// QPN cross-check over MPI_Alltoall: to each live rank, what we recorded about it per lane.
// The lanes lost on either end since they connected go into `x`, for the data checks.
void qpn_exchange(wireup::Wireup& e, MPI_Comm live, const std::vector<int>& world_of, uint32_t me, uint32_t nranks,
                  uint32_t lanes, CheckCounts& c, Excluded& x) {
  // [peer * lanes + lane]: what this rank recorded; zeros where the lane is not established
  std::vector<QpnPair> table(size_t(nranks) * lanes);
  for (const wireup_result_t& r : e.results())
    if (r.peer < nranks && r.lane < lanes) table[size_t(r.peer) * lanes + r.lane] = recorded(r);
  const size_t ln = world_of.size();
  std::vector<uint32_t> out(ln * lanes * 2), in(ln * lanes * 2);
  for (size_t j = 0; j < ln; ++j)
    for (uint32_t l = 0; l < lanes; ++l) {
      const QpnPair& q = table[size_t(world_of[j]) * lanes + l];
      out[(j * lanes + l) * 2] = q.local;
      out[(j * lanes + l) * 2 + 1] = q.remote;
    }
  MPI_Alltoall(out.data(), int(lanes * 2), MPI_UINT32_T, in.data(), int(lanes * 2), MPI_UINT32_T, live);
  for (size_t j = 0; j < ln; ++j) {
    const uint32_t peer = uint32_t(world_of[j]);
    if (peer == me) continue;
    for (uint32_t l = 0; l < lanes; ++l) {
      QpnPair theirs{in[(j * lanes + l) * 2], in[(j * lanes + l) * 2 + 1]};
      if (cross_check(me, peer, l, table[size_t(peer) * lanes + l], theirs, c)) x.lanes.insert({peer, l});
    }
  }
}

// The SEND both ways: receives everywhere, a barrier so no SEND finds its receiver unready,
// then the SENDs, then every completion or the deadline.
Problem data_exchange(const Options& o, RdmaRank& rr, MPI_Comm live, uint32_t me, const Excluded& skip,
                      CheckCounts& c) {
  VerbsDataPath path(rr, skip);
  DataCheck dc(path.lanes(), path, me);
  const Problem posted = dc.post_recvs();
  int ok = posted.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, live);
  if (!posted.empty()) return posted;
  if (!all) return {};  // another rank could not post: it reports why
  if (Problem p = dc.post_sends(); !p.empty()) return p;
  return dc.wait(o.verify_timeout_s, c);
}

// RDMA WRITE and READ both ways: each live rank sends every peer its slot per lane
// (MPI_Alltoall of 16-byte slots, zeros where the lane is not established), then posts, then
// polls; after a barrier (every WRITE completed, so landed) it looks for the peers' WRITEs.
Problem one_sided_exchange(const Options& o, RdmaRank& rr, MPI_Comm live, const std::vector<int>& world_of,
                           uint32_t me, uint32_t lanes, const Excluded& skip, CheckCounts& c) {
  VerbsDataPath path(rr, skip);
  OneSidedCheck oc(path.lanes(), path, me);
  const Problem prepared = oc.prepare();
  int ok = prepared.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, live);
  if (!prepared.empty()) return prepared;
  if (!all) return {};  // another rank could not register: it reports why
  const size_t ln = world_of.size();
  std::vector<int> index_of_world(size_t(*std::max_element(world_of.begin(), world_of.end())) + 1, -1);
  for (size_t j = 0; j < ln; ++j) index_of_world[size_t(world_of[j])] = int(j);
  std::vector<RemoteSlot> out(ln * lanes), in(ln * lanes);
  for (size_t i = 0; i < oc.size(); ++i) {
    const DataLane& l = path.lanes()[i];
    if (l.peer < index_of_world.size() && index_of_world[l.peer] >= 0 && l.lane < lanes)
      out[size_t(index_of_world[l.peer]) * lanes + l.lane] = oc.slot(i);
  }
  MPI_Alltoall(out.data(), int(lanes * sizeof(RemoteSlot)), MPI_BYTE, in.data(), int(lanes * sizeof(RemoteSlot)),
               MPI_BYTE, live);
  for (size_t i = 0; i < oc.size(); ++i) {
    const DataLane& l = path.lanes()[i];
    if (l.peer < index_of_world.size() && index_of_world[l.peer] >= 0 && l.lane < lanes)
      oc.set_peer_slot(i, in[size_t(index_of_world[l.peer]) * lanes + l.lane]);
  }
  const Problem ran = oc.run(o.verify_timeout_s, c);
  MPI_Barrier(live);  // every rank's WRITEs have completed (or been given up on)
  if (ran.empty()) oc.check_landed(c);
  return ran;
}

// MPI_Allgather of fixed-size slots (wireup_a2a_address_slot.h), one per rank: every rank takes
// part, whatever its own slot says.
Expected<std::vector<wireup::PeerAddress>> exchange_addresses(const std::vector<uint8_t>& address, int nranks) {
  using Out = Expected<std::vector<wireup::PeerAddress>>;
  std::vector<uint8_t> mine(kAddressSlot, 0), all(kAddressSlot * size_t(nranks));
  const Problem put = put_address(mine, address);
  MPI_Allgather(mine.data(), int(kAddressSlot), MPI_BYTE, all.data(), int(kAddressSlot), MPI_BYTE, MPI_COMM_WORLD);
  if (!put.empty()) return Out::failure("this rank's address: " + put);
  std::vector<wireup::PeerAddress> peers;
  for (int r = 0; r < nranks; ++r) {
    auto a = take_address(std::span<const uint8_t>(all).subspan(size_t(r) * kAddressSlot, kAddressSlot));
    if (!a) return Out::failure("rank " + std::to_string(r) + "'s address: " + a.error());
    peers.push_back({uint32_t(r), std::move(*a)});
  }
  return peers;
}

// The peers this rank is given: everyone, or with --into R only R (R itself keeps everyone).
std::vector<wireup::PeerAddress> peer_table(const Options& o, std::vector<wireup::PeerAddress> all, int me) {
  if (o.into < 0 || o.into == me) return all;
  return {all[size_t(o.into)]};
}

// Every live rank's report to live rank 0, which prints the summary; returns the job's exit
// status, the same on every live rank.
int summarize_job(const RankReport& rep, MPI_Comm live, const std::vector<int>& world_of, const JobInfo& job,
                  bool json) {
  int lr = 0, ln = 0;
  MPI_Comm_rank(live, &lr);
  MPI_Comm_size(live, &ln);
  const std::string text = serialize(rep);
  int len = int(text.size());
  std::vector<int> lens(static_cast<size_t>(ln)), offs(static_cast<size_t>(ln));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, live);
  std::string gathered;
  if (lr == 0) {
    for (int i = 1; i < ln; ++i) offs[size_t(i)] = offs[size_t(i - 1)] + lens[size_t(i - 1)];
    gathered.resize(size_t(offs[size_t(ln - 1)] + lens[size_t(ln - 1)]));
  }
  MPI_Gatherv(text.data(), len, MPI_CHAR, gathered.data(), lens.data(), offs.data(), MPI_CHAR, 0, live);
  int status = 0;
  if (lr == 0) {
    std::vector<RankReport> reports;
    for (int i = 0; i < ln; ++i) {
      auto r = deserialize(std::string_view(gathered).substr(size_t(offs[size_t(i)]), size_t(lens[size_t(i)])));
      if (!r)
        std::fprintf(stderr, "wireup_a2a: report of rank %d: %s\n", world_of[size_t(i)], r.error().c_str());
      else
        reports.push_back(std::move(*r));
    }
    Summary sum = summarize(job, reports);
    print_summary(sum, json);
    status = int(reports.size()) == ln ? exit_status(sum) : 1;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, live);
  return status;
}

}  // namespace

int run_mpi(const Options& o, int& argc, char**& argv) {
  mpi_off_the_device();
  MPI_Init(&argc, &argv);
  int wr = 0, wn = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &wn);
  if (wn < 2 || o.kill_rank >= wn || o.into >= wn) {
    if (wr == 0)
      std::fprintf(stderr, "wireup_a2a: %s\n", wn < 2 ? "needs at least 2 ranks (mpirun -np N, N >= 2)"
                                                : o.into >= wn ? "--into is not a rank of this job"
                                                               : "--kill-rank is not a rank of this job");
    MPI_Finalize();
    return 2;
  }
  const bool victim = o.kill_rank == wr;
  MPI_Comm live;
  MPI_Comm_split(MPI_COMM_WORLD, victim ? 1 : 0, wr, &live);
  std::set<uint32_t> dead;
  if (o.kill_rank >= 0) dead.insert(uint32_t(o.kill_rank));

  // --- setup: every rank's failure is reported, then all stop --------------------------------
  std::unique_ptr<RdmaRank> rr;
  if (!all_ok(MPI_COMM_WORLD, wr, attempt([&] { rr = std::make_unique<RdmaRank>(o); }))) return MPI_Finalize(), 1;
  bool od = false;
  std::optional<PatternPlan> plan;
  if (!all_ok(MPI_COMM_WORLD, wr, job_shape(o, *rr, uint32_t(wn), od, plan))) return MPI_Finalize(), 1;
  if (od && o.into >= 0) {  // parse_options refuses --mode on-demand --into; the environment's mode reaches here
    if (wr == 0) std::fprintf(stderr, "wireup_a2a: --into is a bulk incast, and engine.mode is on_demand\n");
    return MPI_Finalize(), 2;
  }
  uint64_t key = 0;
  if (!all_ok(MPI_COMM_WORLD, wr, wr == 0 ? attempt([&] { key = pick_job_key(o, rr->context()); }) : Problem{}))
    return MPI_Finalize(), 1;
  MPI_Bcast(&key, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (!all_ok(MPI_COMM_WORLD, wr, attempt([&] { rr->open(uint32_t(wr), uint32_t(wn), key); })))
    return MPI_Finalize(), 1;
  wireup::Wireup& wu = rr->wireup();
  std::vector<uint8_t> address;
  if (!all_ok(MPI_COMM_WORLD, wr, attempt([&] { address = wu.local_address(); }))) return MPI_Finalize(), 1;
  auto peers = exchange_addresses(address, wn);
  if (!all_ok(MPI_COMM_WORLD, wr,
              peers ? attempt([&] { wu.set_peers(peer_table(o, std::move(*peers), wr)); }) : peers.error()))
    return MPI_Finalize(), 1;
  std::unique_ptr<OnDemandRank> odr;
  if (od) odr = std::make_unique<OnDemandRank>(wu, *plan, uint32_t(wr), rr->lanes(), dead);

  // --- wireup ----------------------------------------------------------------------------
  const uint32_t lanes = rr->lanes();
  const uint64_t planned =
      (od ? plan->pairs() : o.into >= 0 ? uint64_t(wn - 1) : uint64_t(wn) * uint64_t(wn - 1) / 2) * lanes;
  if (wr == 0 && !o.json)
    std::fprintf(stderr, "[a2a] %d ranks x %u lanes = %llu connections%s%s; rank 0 on %s\n", wn, lanes,
                 (unsigned long long)planned, od ? " (on demand, pattern " : "",
                 od ? (plan->text() + ")").c_str() : "", rr->context().listen_source().c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  Problem started = attempt([&] { wu.start(); });
  if (started.empty() && odr) started = odr->ask_all();  // every peer of the pattern at once
  if (victim) run_victim(o, wu, wr);
  ConnTrigger trigger(o, wr);
  WireupRun w = run_wireup(o, wu, live, planned, [&] { return odr ? odr->settled() : wu.done(); }, trigger);
  if (w.error.empty()) w.error = attempt([&] { (void)wu.progress(); });  // steady events that came meanwhile
  if (!started.empty()) w.error = started;
  if (!w.error.empty()) std::fprintf(stderr, "wireup_a2a: rank %d: %s\n", wr, w.error.c_str());

  // --- checks, among the live ranks --------------------------------------------------------
  int ln = 0;
  MPI_Comm_size(live, &ln);
  std::vector<int> world_of(static_cast<size_t>(ln));
  MPI_Allgather(&wr, 1, MPI_INT, world_of.data(), 1, MPI_INT, live);
  double wall = 0;
  MPI_Reduce(&w.seconds, &wall, 1, MPI_DOUBLE, MPI_MAX, 0, live);
  RankReport rep;
  if (Problem p = attempt([&] { rep = make_report(uint32_t(wr), *rr, w.seconds, dead); }); !p.empty())
    rep.rank = uint32_t(wr), rep.check.problem("rank " + std::to_string(wr) + ": report: " + p), ++rep.check.errors;
  rep.user_s = w.user_s, rep.sys_s = w.sys_s;
  if (!w.error.empty()) rep.check.problem("rank " + std::to_string(wr) + ": " + w.error), ++rep.check.errors;
  if (odr) odr->report(rep);
  if (o.verify) {
    Excluded skip{dead, {}};
    qpn_exchange(wu, live, world_of, uint32_t(wr), uint32_t(wn), lanes, rep.check, skip);
    if (Problem d = data_exchange(o, *rr, live, uint32_t(wr), skip, rep.check); !d.empty())
      rep.check.problem("rank " + std::to_string(wr) + ": SEND check: " + d), ++rep.check.errors;
    MPI_Barrier(live);  // the SEND check is over everywhere before the one-sided one starts
    if (Problem d = one_sided_exchange(o, *rr, live, world_of, uint32_t(wr), lanes, skip, rep.check); !d.empty())
      rep.check.problem("rank " + std::to_string(wr) + ": one-sided check: " + d), ++rep.check.errors;
    MPI_Barrier(live);  // nobody tears down while a peer still polls
  }
  JobInfo job{uint32_t(wn), lanes, "rdma", "mpi", wall, o.verify, dead, o.into};
  if (od) job.on_demand = true, job.pattern = pattern_info(*plan, dead);
  const int status = summarize_job(rep, live, world_of, job, o.json);
  std::fflush(nullptr);
  if (o.hold_s > 0) std::this_thread::sleep_for(std::chrono::seconds(o.hold_s));  // QPs at RTS meanwhile
  rr->close();  // disconnect (up to 2 s), then our QPs, CQ and PD
  rr.reset();   // the context last
  trigger.finish(kRunWaitS);
  if (!dead.empty()) _exit(status);  // MPI_Finalize would wait for the dead rank
  MPI_Comm_free(&live);
  MPI_Finalize();
  return status;
}

}  // namespace wireup::a2a
