// twonode_ranks: one node's ranks of a wireup across the two-node pair (scripts/vm/pair.sh),
// every rank an engine in this process on the node's rxe0, the peers on the other node reached
// over the link. No MPI: the out-of-band exchange is a file per node and round in the pair
// directory (the shared build tree), so a node can power off and come back, or the link can
// be cut, without taking a launcher down with it.
//
//   twonode_ranks --dir D --node N --round R --per-node K [--lanes L] [--timeout-s S]
//                 [--before-start CMD] [--hold-until FILE] [--then ROUND2]... [--linger-s S]
//                 [--align-qpns RESFILE]
//
// Ranks: node 1 holds 0..K-1, node 2 K..2K-1. For round R the node writes D/R.addr.N (its
// ranks' addresses), waits for the other node's, runs CMD (e.g. netem on the link), wires up
// and writes D/R.res.N (every connection: rank, peer, lane, role, local and remote QPN); then
// it checks, against the other node's file, that every pair of the 2K ranks is connected once
// on every lane with crossed QPNs and opposite roles. --hold-until keeps the round's engines
// alive (progressing, counting their steady events) until FILE exists; each --then runs one
// more round with new engines while the earlier rounds' are still open (their kernel CM state
// is what a node that lost its peer keeps); --linger-s progresses every engine that long at the
// end. --align-qpns (a node that rebooted): before the first round, QPs are created and
// destroyed until the next QPN is the lowest local QPN this node had in RESFILE (an earlier
// round's results), so that the new connections reuse the old QPNs as a rebooted node's do
// whatever ran before the old round. Prints "[twonode] ..." lines (rejects by reason, retries, attempts, time) and one verdict
// line per round; the exit status has bit i set if round i (0 = --round) failed a check, 64 for
// bad usage or no device.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/vm/faults/faults_common.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace wireup;
using wireup::vmfaults::Rank;

namespace {

struct Args {
  std::string dir, round, before_start, hold_until, align_qpns;
  std::vector<std::string> then;
  uint32_t node = 0, per_node = 0, lanes = 1;
  int timeout_s = 120, linger_s = 0;
};

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}
std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return b;
}
double secs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Written under a temporary name and renamed: the other node never reads half a file.
bool publish(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream o(tmp);
    o << text << "END\n";
    if (!o) return false;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  return !ec;
}
// The other node's file, once it is complete (ends with END), or "" after `bound`.
std::string await(const fs::path& p, int bound_s) {
  const auto t0 = std::chrono::steady_clock::now();
  while (secs(t0) < bound_s) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string s = ss.str();
    if (s.size() >= 4 && s.compare(s.size() - 4, 4, "END\n") == 0) return s;
    std::this_thread::sleep_for(50ms);
  }
  return "";
}

using Conn = std::tuple<int, uint32_t, uint32_t>;                    // role, local, remote QPN
using ConnMap = std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Conn>;  // rank, peer, lane

void parse_results(const std::string& text, ConnMap& m) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string tag;
    uint32_t me, peer, lane, l, r;
    int role;
    if (ls >> tag >> me >> peer >> lane >> role >> l >> r && tag == "C") m[{me, peer, lane}] = {role, l, r};
  }
}

// One round: engines for this node's ranks, the exchange, the wireup, the cross-node check.
int round(const Args& a, prov::Provider& p, const prov::SockAddr& listen, const std::string& name,
          std::vector<Rank>& ranks) {
  const uint32_t n = 2 * a.per_node, first = (a.node - 1) * a.per_node;
  const uint32_t other = 3 - a.node;
  vmfaults::Checks c;
  const auto t0 = std::chrono::steady_clock::now();
  ranks.resize(a.per_node);
  std::string mine;
  for (uint32_t i = 0; i < a.per_node; ++i) {
    EngineOptions o = vmfaults::vm_options(first + i, n, a.lanes, listen, std::chrono::seconds(a.timeout_s));
    if (Status s = vmfaults::make_rank(p, ranks[i], o); !s) return std::printf("[twonode] FAILED: %s\n", s.message().c_str()), 1;
    mine += std::to_string(first + i) + " " + hex(ranks[i].engine->local_address()) + "\n";
  }
  if (!publish(fs::path(a.dir) / (name + ".addr." + std::to_string(a.node)), mine))
    return std::printf("[twonode] FAILED: cannot write the address file in %s\n", a.dir.c_str()), 1;
  const std::string theirs = await(fs::path(a.dir) / (name + ".addr." + std::to_string(other)), 600);
  if (theirs.empty()) return std::printf("[twonode] FAILED: round %s: no addresses from node %u\n", name.c_str(), other), 1;
  std::vector<Peer> table;
  std::istringstream all(mine + theirs);
  for (std::string line; std::getline(all, line);) {
    std::istringstream ls(line);
    uint32_t r;
    std::string h;
    if (ls >> r >> h) table.push_back(Peer{r, unhex(h)});
  }
  c.expect(table.size() == n, "the address table has every rank");
  if (!a.before_start.empty()) {
    const int rc = std::system(a.before_start.c_str());
    c.expect(rc == 0, "--before-start '" + a.before_start + "' exited " + std::to_string(rc));
  }
  const auto tw = std::chrono::steady_clock::now();
  for (auto& r : ranks) {
    if (Status s = r.engine->set_peers(table); !s) return std::printf("[twonode] FAILED: %s\n", s.message().c_str()), 1;
    if (Status s = r.engine->start(); !s) return std::printf("[twonode] FAILED: %s\n", s.message().c_str()), 1;
  }
  Status st = vmfaults::run(p, ranks, std::chrono::seconds(a.timeout_s + 30));
  const double wire_s = secs(tw);
  c.expect(st.is_ok(), "the wireup ended: " + (st.is_ok() ? std::string() : st.message()));

  std::ostringstream res;
  uint64_t retries = 0, started = 0, conns = 0, max_attempts = 0;
  std::map<int, uint64_t> rejects;
  std::map<std::string, uint64_t> failures;
  for (uint32_t i = 0; i < a.per_node; ++i) {
    const Engine& e = *ranks[i].engine;
    for (const ConnResult& x : e.results()) {
      res << "C " << first + i << ' ' << x.peer << ' ' << x.lane << ' ' << int(x.role) << ' ' << x.local_qpn << ' '
          << x.remote_qpn << '\n';
      max_attempts = std::max<uint64_t>(max_attempts, x.attempts);
    }
    for (const PeerError& x : e.errors()) c.expect(false, "rank " + std::to_string(first + i) + ": " + x.describe());
    retries += e.stats()[Counter::retries], started += e.stats()[Counter::connects_started];
    conns += e.results().size();
    for (auto& [why, k] : e.stats().rejects_received_by_reason()) rejects[why] += k;
    for (auto& [why, k] : e.stats().failures_by_name()) failures[why] += k;
  }
  const std::string res_name = name + ".res.";
  c.expect(publish(fs::path(a.dir) / (res_name + std::to_string(a.node)), res.str()), "results written");
  ConnMap m;
  parse_results(res.str(), m);
  const std::string peer_res = await(fs::path(a.dir) / (res_name + std::to_string(other)), a.timeout_s + 120);
  c.expect(!peer_res.empty(), "node " + std::to_string(other) + "'s results arrived");
  parse_results(peer_res, m);
  uint32_t crossing = 0, checked = 0;
  for (uint32_t x = 0; x < n; ++x)
    for (uint32_t y = 0; y < n; ++y)
      for (uint32_t l = 0; l < a.lanes && x < y; ++l) {
        const auto u = m.find({x, y, l}), v = m.find({y, x, l});
        const std::string pair = std::to_string(x) + "<->" + std::to_string(y) + " lane " + std::to_string(l);
        if (u == m.end() || v == m.end()) {
          c.expect(false, pair + ": not connected on " + (u == m.end() ? "the first" : "the second") + " side");
          continue;
        }
        auto [ru, lu, xu] = u->second;
        auto [rv, lv, xv] = v->second;
        c.expect(xu == lv && xv == lu && ru != rv, pair + ": QPNs not crossed or roles equal");
        ++checked;
        crossing += (x < a.per_node) != (y < a.per_node);
      }
  c.expect(m.size() == size_t(n) * (n - 1) * a.lanes, "no connection twice or to an unplanned lane");
  std::string rj, fl;
  for (auto& [why, k] : rejects) rj += " " + std::to_string(why) + ":" + std::to_string(k);
  for (auto& [why, k] : failures) fl += " " + why + ":" + std::to_string(k);
  std::printf("[twonode] round %s node %u: %llu/%u endpoints, wireup %.2f s (%.2f s with the exchange); pairs "
              "checked %u (%u crossing nodes); connects %llu, retries %llu, max attempts %llu; rejects received {%s }; "
              "failures {%s }\n",
              name.c_str(), a.node, (unsigned long long)conns, a.per_node * (n - 1) * a.lanes, wire_s, secs(t0),
              checked, crossing, (unsigned long long)started, (unsigned long long)retries,
              (unsigned long long)max_attempts, rj.c_str(), fl.c_str());
  std::fflush(stdout);
  return c.failed ? 1 : 0;
}

void steady_counts(const std::string& name, uint32_t node, const std::vector<Rank>& ranks) {
  std::map<std::string, uint64_t> k;
  for (auto& r : ranks)
    for (const SteadyEvent& e : *r.steady) k[std::string(prov::to_string(e.type)) + "(" + std::to_string(e.status) + ")"]++;
  std::string s;
  for (auto& [t, v] : k) s += " " + t + ":" + std::to_string(v);
  std::printf("[twonode] round %s node %u: steady events {%s }\n", name.c_str(), node, s.c_str());
}

// Creates and destroys QPs on the first device until the next one gets `target` (rxe hands QPNs
// out cyclically). Returns the QPNs burned, or -1 if the allocator is already past `target`.
long align_qpns(prov::Provider& p, uint32_t target) {
  auto devs = p.devices();
  if (!devs || devs->empty()) return -1;
  auto pd = (*devs)[0]->alloc_pd();
  if (!pd) return -1;
  auto cq = (*devs)[0]->create_cq(4, false);
  if (!cq) return -1;
  for (long burned = 0; burned < 1'000'000; ++burned) {
    prov::QpInitAttr init;
    init.send_cq = init.recv_cq = cq->get();
    init.caps.max_send_wr = init.caps.max_recv_wr = 1;
    auto qp = (*pd)->create_qp(init);
    if (!qp) return -1;
    const uint32_t n = (*qp)->qpn();
    if (n + 1 == target) return burned + 1;
    if (n + 1 > target) return -1;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") a.dir = v;
    else if (k == "--node") a.node = std::stoul(v);
    else if (k == "--round") a.round = v;
    else if (k == "--per-node") a.per_node = std::stoul(v);
    else if (k == "--lanes") a.lanes = std::stoul(v);
    else if (k == "--timeout-s") a.timeout_s = std::stoi(v);
    else if (k == "--linger-s") a.linger_s = std::stoi(v);
    else if (k == "--before-start") a.before_start = v;
    else if (k == "--hold-until") a.hold_until = v;
    else if (k == "--align-qpns") a.align_qpns = v;
    else if (k == "--then") a.then.push_back(v);
    else return std::fprintf(stderr, "twonode_ranks: unknown option %s\n", k.c_str()), 64;
  }
  if (a.dir.empty() || a.round.empty() || (a.node != 1 && a.node != 2) || a.per_node == 0 || a.lanes == 0)
    return std::fprintf(stderr, "twonode_ranks: --dir, --round, --node 1|2 and --per-node are required\n"), 64;
  const char* addr = std::getenv("WIREUP_VM_ADDR");
  auto listen = prov::SockAddr::parse(addr ? addr : "");
  if (!listen) return std::printf("[twonode] FAILED: WIREUP_VM_ADDR is not an address (run inside the pair)\n"), 64;
  auto p = prov::create_rdma_provider();
  if (!p) return std::printf("[twonode] FAILED: %s\n", p.error().message().c_str()), 64;

  if (!a.align_qpns.empty()) {
    std::ifstream in(a.align_qpns);
    std::stringstream ss;
    ss << in.rdbuf();
    ConnMap old;
    parse_results(ss.str(), old);
    uint32_t lowest = UINT32_MAX;
    for (auto& [k, v] : old) lowest = std::min(lowest, std::get<1>(v));
    const long burned = lowest == UINT32_MAX ? -1 : align_qpns(**p, lowest);
    std::printf("[twonode] node %u: %s (lowest QPN of %s: %u)\n", a.node,
                burned < 0 ? "NOT aligned: the QPN allocator is already past it" : ("aligned: " + std::to_string(burned) + " QPNs skipped").c_str(),
                a.align_qpns.c_str(), lowest);
  }
  std::vector<std::vector<Rank>> rounds(1 + a.then.size());
  std::vector<std::string> names{a.round};
  names.insert(names.end(), a.then.begin(), a.then.end());
  int rc = 0;
  auto verdict = [&](size_t i, int r) {
    std::printf("[twonode] round %s node %u: %s\n", names[i].c_str(), a.node, r ? "FAIL" : "PASS");
    if (r) rc |= 1 << i;
  };
  verdict(0, round(a, **p, *listen, a.round, rounds[0]));
  if (!a.hold_until.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(a.hold_until) && secs(t0) < 900) vmfaults::linger(**p, rounds[0], 200ms);
    std::printf("[twonode] round %s node %u: held %.1f s until %s\n", a.round.c_str(), a.node, secs(t0),
                fs::exists(a.hold_until) ? "it appeared" : "the 900 s bound");
    steady_counts(a.round, a.node, rounds[0]);
  }
  for (size_t i = 1; i < rounds.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    verdict(i, round(a, **p, *listen, names[i], rounds[i]));
    std::printf("[twonode] round %s node %u: took %.2f s\n", names[i].c_str(), a.node, secs(t0));
  }
  if (a.linger_s > 0) {
    std::vector<Rank> all;
    for (auto& r : rounds)
      for (auto& x : r) all.push_back(std::move(x));
    vmfaults::linger(**p, all, std::chrono::seconds(a.linger_s));
    for (size_t i = 0, k = 0; i < rounds.size(); ++i)
      for (auto& x : rounds[i]) x = std::move(all[k++]);
  }
  for (size_t i = 0; i < rounds.size(); ++i) steady_counts(names[i], a.node, rounds[i]);
  std::fflush(stdout);
  return rc;
}
