// The PMIx driver's checks after wireup (wireup_a2a_pmix.cc calls them in this order): the
// QPN cross-check, the SEND both ways, RDMA WRITE and READ both ways, and the job's summary,
// each through the exchanges of wireup_a2a_pmix_exchange.h among the live ranks.
#include "wireup_a2a_pmix_checks.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <utility>

#include "wireup_a2a_pmix_exchange.h"

namespace wireup::a2a {
namespace {

// The space-separated decimal numbers of `text`.
std::vector<uint32_t> numbers(const std::string& text) {
  std::vector<uint32_t> v;
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    const unsigned long x = std::strtoul(p, &end, 10);
    if (end == p) return v;
    v.push_back(uint32_t(x));
    p = end;
  }
}

}  // namespace

// The QPN cross-check: each live rank publishes what it recorded per (peer, lane), then reads
// what every other live rank recorded about it.
void qpn_exchange(bootstrap::PmixSession& s, wireup::Wireup& e, const std::vector<uint32_t>& live, uint32_t lanes,
                  CheckCounts& c, Excluded& x) {
  const uint32_t n = s.size(), me = s.rank();
  std::vector<QpnPair> table(size_t(n) * lanes);
  for (const wireup_result_t& r : e.results())
    if (r.peer < n && r.lane < lanes) table[size_t(r.peer) * lanes + r.lane] = recorded(r);
  std::string mine;
  for (const QpnPair& q : table) mine += std::to_string(q.local) + " " + std::to_string(q.remote) + " ";
  auto all = exchange(s, "a2a.qpns", mine, live);
  if (!all) {
    c.problem("rank " + std::to_string(me) + ": QPN exchange: " + all.error()), ++c.errors;
    return;
  }
  for (uint32_t peer : live) {
    if (peer == me) continue;
    const std::vector<uint32_t> v = numbers((*all)[peer]);
    if (v.size() != size_t(n) * lanes * 2) {
      c.problem("rank " + std::to_string(peer) + "'s QPN table has " + std::to_string(v.size()) + " numbers");
      ++c.errors;
      continue;
    }
    for (uint32_t l = 0; l < lanes; ++l) {
      const size_t i = (size_t(me) * lanes + l) * 2;
      if (cross_check(me, peer, l, table[size_t(peer) * lanes + l], QpnPair{v[i], v[i + 1]}, c))
        x.lanes.insert({peer, l});
    }
  }
}

// The SEND both ways: receives everywhere, a fence so no SEND finds its receiver unready,
// then the SENDs, then every completion or the deadline.
Problem data_exchange(const Options& o, RdmaRank& rr, bootstrap::PmixSession& s, const std::vector<uint32_t>& live,
                      const Excluded& skip, CheckCounts& c) {
  VerbsDataPath path(rr, skip);
  DataCheck dc(path.lanes(), path, s.rank());
  const Problem posted = dc.post_recvs();
  if (!all_ok(s, "recvs", posted, live)) return posted;  // "" when another rank could not: it says why
  if (Problem p = dc.post_sends(); !p.empty()) return p;
  return dc.wait(o.verify_timeout_s, c);
}

// RDMA WRITE and READ both ways: each live rank publishes its slot per (peer, lane) as
// "peer lane addr rkey" lines, reads what every peer published for it, posts and polls; after
// a fence (every WRITE completed, so landed) it looks for the peers' WRITEs.
Problem one_sided_exchange(const Options& o, RdmaRank& rr, bootstrap::PmixSession& s, const std::vector<uint32_t>& live,
                           const Excluded& skip, CheckCounts& c) {
  VerbsDataPath path(rr, skip);
  OneSidedCheck oc(path.lanes(), path, s.rank());
  const Problem prepared = oc.prepare();
  if (!all_ok(s, "one_sided", prepared, live)) return prepared;
  std::string mine;
  for (size_t i = 0; i < oc.size(); ++i) {
    const RemoteSlot slot = oc.slot(i);
    mine += std::to_string(path.lanes()[i].peer) + " " + std::to_string(path.lanes()[i].lane) + " " +
            std::to_string(slot.addr) + " " + std::to_string(slot.rkey) + "\n";
  }
  auto all = exchange(s, "a2a.slots", mine, live);
  if (!all) return "slot exchange: " + all.error();
  std::map<std::pair<uint32_t, uint32_t>, RemoteSlot> theirs;  // (peer, lane) -> the peer's slot for us
  for (uint32_t peer : live) {
    std::istringstream in((*all)[peer]);
    uint32_t to = 0, lane = 0;
    RemoteSlot slot;
    while (in >> to >> lane >> slot.addr >> slot.rkey)
      if (to == s.rank()) theirs[{peer, lane}] = slot;
  }
  for (size_t i = 0; i < oc.size(); ++i)
    if (auto it = theirs.find({path.lanes()[i].peer, path.lanes()[i].lane}); it != theirs.end())
      oc.set_peer_slot(i, it->second);
  const Problem ran = oc.run(o.verify_timeout_s, c);
  if (Problem f = barrier(s, "written", live); !f.empty()) return f;  // every rank's WRITEs have completed
  if (ran.empty()) oc.check_landed(c);
  return ran;
}

// Every live rank's report to rank `live[0]`, which prints the summary and publishes the exit
// status; returns it, the same on every live rank.
int summarize_job(bootstrap::PmixSession& s, const RankReport& rep, const std::vector<uint32_t>& live, const JobInfo& job,
                  bool json) {
  auto all = exchange(s, "a2a.report", serialize(rep), live);
  int status = 1;
  const bool first = s.rank() == live.front();
  if (first && all) {
    std::vector<RankReport> reports;
    for (uint32_t r : live) {
      auto one = deserialize((*all)[r]);
      if (!one) std::fprintf(stderr, "wireup_a2a: report of rank %u: %s\n", r, one.error().c_str());
      else reports.push_back(std::move(*one));
    }
    const Summary sum = summarize(job, reports);
    print_summary(sum, json);
    status = reports.size() == live.size() ? exit_status(sum) : 1;
  } else if (!all) {
    std::fprintf(stderr, "wireup_a2a: rank %u: %s\n", s.rank(), all.error().c_str());
  }
  auto st = exchange(s, "a2a.status", first ? std::to_string(status) : "", live);
  return st ? std::atoi((*st)[live.front()].c_str()) : 1;
}

}  // namespace wireup::a2a
