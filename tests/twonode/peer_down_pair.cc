// twonode_peer_down: one node's ranks for the pair's peer-down cases (tests/twonode/suite.sh
// kill9, powercut_live, partition_short, partition_long, lossy). Each rank is its own process
// (forked before any verbs call) on the public C++ API, so that one can be SIGKILLed; the
// address exchange is a file per rank in the pair directory (no launcher to lose).
//
//   twonode_peer_down --dir D --round R [--per-node K] [--lanes L] [--config F] [--set k=v]...
//                     [--expect none|disconnected|silent --victims A-B --at-file F
//                      --clock2 S --within-ms T]
//
// Every rank writes R.pid.<rank> and, once wired, R.wired.<rank>, then progresses until the file
// R.stop appears, noting each PEER_DOWN (CLOCK_REALTIME). With --expect (node 1), the parent
// then checks its own ranks: none -> no event at all; otherwise exactly one event per victim
// rank with that cause, each within T ms of the time in F (a date +%s.%N on node 2's clock,
// node 2 minus node 1 = S seconds). Prints "[twonode] ..." lines; exit 0 iff every check held.
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include <wireup/wireup.hpp>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kJobKey = 0x9d0f;

double realtime_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void publish(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  fs::rename(tmp, p);
}
std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}
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

struct Opts {
  fs::path dir;
  std::string round, expect, at_file;
  uint32_t node = 0, per_node = 2, lanes = 2, victim_lo = 0, victim_hi = 0;
  double clock2 = 0, within_ms = 1000;
  wireup::ContextParams cp;
  fs::path file(const std::string& what, uint32_t rank) const { return dir / (round + "." + what + "." + std::to_string(rank)); }
};

int rank_main(const Opts& o, uint32_t rank) {
  const uint32_t n = 2 * o.per_node;
  try {
    wireup::Context ctx(o.cp);
    ibv_pd* pd = ibv_alloc_pd(ctx.ibv_context());
    ibv_cq* cq = pd ? ibv_create_cq(ctx.ibv_context(), 256, nullptr, nullptr, 0) : nullptr;
    if (cq == nullptr) return std::printf("[twonode] FAILED: rank %u: ibv_alloc_pd/ibv_create_cq: %s\n", rank, std::strerror(errno)), 1;
    wireup::Wireup w(ctx, {rank, n, o.lanes, kJobKey}, [&](const wireup::QpRequest&) {
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq;
      a.qp_type = IBV_QPT_RC;
      a.cap.max_send_wr = a.cap.max_recv_wr = 4;
      a.cap.max_send_sge = a.cap.max_recv_sge = 1;
      return ibv_create_qp(pd, &a);
    });
    std::vector<std::string> seen;
    w.on_peer_down([&](const wireup::PeerDown& d) {
      char line[128];
      std::snprintf(line, sizeof line, "%u %u %s %.6f", d.peer, d.lanes, d.cause_name(), realtime_s());
      seen.push_back(line);
    });
    publish(o.file("pid", rank), std::to_string(::getpid()));
    publish(o.file("addr", rank), hex(w.local_address()));
    std::vector<wireup::PeerAddress> peers;
    for (uint32_t r = 0; r < n; ++r) {
      std::string a;
      for (const auto t0 = std::chrono::steady_clock::now(); (a = read_line(o.file("addr", r))).empty();) {
        if (std::chrono::steady_clock::now() - t0 > 90s) return std::printf("[twonode] FAILED: rank %u: no address from rank %u\n", rank, r), 1;
        std::this_thread::sleep_for(20ms);
      }
      peers.push_back({r, unhex(a)});
    }
    w.set_peers(peers);
    w.start();
    for (const auto t0 = std::chrono::steady_clock::now(); !w.done() && std::chrono::steady_clock::now() - t0 < 120s;)
      if (w.progress() == 0) w.wait(100ms);
    if (w.result_count() != (n - 1) * o.lanes)
      return std::printf("[twonode] FAILED: rank %u made %zu connections, not %u\n", rank, w.result_count(), (n - 1) * o.lanes), 1;
    publish(o.file("wired", rank), "1");
    const fs::path stop = o.dir / (o.round + ".stop");
    for (int i = 0; !fs::exists(stop); ++i) {
      for (int j = 0; j < 5; ++j) {
        w.progress();
        pollfd p{w.fd(), POLLIN, 0};
        ::poll(&p, 1, 10);
      }
    }
    w.progress();
    std::string all;
    for (const std::string& s : seen) all += s + "\n";
    publish(o.file("seen", rank), all + "end");
    // Stay until every rank has reported (5 s at most: a killed or powered-off rank never
    // will): a rank that left now would be the others' next peer down.
    const uint32_t everyone = n;
    for (const auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 5s;
         std::this_thread::sleep_for(20ms)) {
      uint32_t have = 0;
      for (uint32_t r = 0; r < everyone; ++r) have += fs::exists(o.file("seen", r));
      if (have == everyone) break;
    }
  } catch (const std::exception& e) {
    return std::printf("[twonode] FAILED: rank %u: %s\n", rank, e.what()), 1;
  }
  return 0;
}

// Node 1 after the stop: what its ranks saw against what was expected.
int check(const Opts& o) {
  int failed = 0;
  auto fail = [&](const std::string& what) { std::printf("[twonode] FAILED: %s: %s\n", o.round.c_str(), what.c_str()), ++failed; };
  double at = 0;
  if (o.expect != "none") {
    const std::string a = read_line(o.at_file);
    if (a.empty()) return fail("no event time in " + o.at_file), 1;
    at = std::stod(a) - o.clock2;  // on node 1's clock
  }
  std::vector<double> delays;
  for (uint32_t i = 0; i < o.per_node; ++i) {
    const uint32_t rank = (o.node - 1) * o.per_node + i;
    std::ifstream in(o.file("seen", rank));
    std::map<uint32_t, int> per_peer;
    std::string line;
    bool ended = false;
    while (std::getline(in, line)) {
      if (line == "end") {
        ended = true;
        break;
      }
      uint32_t peer = 0, lanes = 0;
      char cause[32] = {0};
      double t = 0;
      if (std::sscanf(line.c_str(), "%u %u %31s %lf", &peer, &lanes, cause, &t) != 4) {
        fail("rank " + std::to_string(rank) + ": unreadable line '" + line + "'");
        continue;
      }
      ++per_peer[peer];
      const bool victim = peer >= o.victim_lo && peer <= o.victim_hi;
      if (o.expect == "none" || !victim || o.expect != cause) {
        fail("rank " + std::to_string(rank) + ": peer down for rank " + std::to_string(peer) + " (" + cause + ")");
        continue;
      }
      delays.push_back((t - at) * 1000);
      if (lanes != o.lanes) fail("rank " + std::to_string(rank) + ": " + std::to_string(lanes) + " lanes down");
    }
    if (!ended) fail("rank " + std::to_string(rank) + " wrote no report");
    if (o.expect == "none") continue;
    for (uint32_t v = o.victim_lo; v <= o.victim_hi; ++v)
      if (per_peer[v] != 1)
        fail("rank " + std::to_string(rank) + " saw rank " + std::to_string(v) + " down " + std::to_string(per_peer[v]) + " times");
  }
  if (!delays.empty()) {
    std::sort(delays.begin(), delays.end());
    std::printf("[twonode] %s: %zu peer-down events (cause %s), %.0f / %.0f / %.0f ms after the event on node 2 "
                "(first / median / last; limit %.0f ms)\n",
                o.round.c_str(), delays.size(), o.expect.c_str(), delays.front(), delays[delays.size() / 2],
                delays.back(), o.within_ms);
    if (delays.back() > o.within_ms) fail("the last one came after " + std::to_string(delays.back()) + " ms");
  } else if (o.expect == "none" && failed == 0) {
    std::printf("[twonode] %s: no peer declared down on node 1\n", o.round.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") o.dir = v;
    else if (k == "--round") o.round = v;
    else if (k == "--per-node") o.per_node = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--lanes") o.lanes = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--config") o.cp.config_file = v;
    else if (k == "--set") o.cp.overrides.push_back(v);
    else if (k == "--expect") o.expect = v;
    else if (k == "--victims") {
      const auto dash = v.find('-');
      o.victim_lo = static_cast<uint32_t>(std::stoul(v.substr(0, dash)));
      o.victim_hi = dash == std::string::npos ? o.victim_lo : static_cast<uint32_t>(std::stoul(v.substr(dash + 1)));
    } else if (k == "--at-file") o.at_file = v;
    else if (k == "--clock2") o.clock2 = std::stod(v);
    else if (k == "--within-ms") o.within_ms = std::stod(v);
    else return std::fprintf(stderr, "twonode_peer_down: unknown option %s\n", k.c_str()), 64;
  }
  const char* node_env = std::getenv("WIREUP_VM_NODE");
  o.node = node_env ? static_cast<uint32_t>(std::atoi(node_env)) : 0;
  if (o.dir.empty() || o.round.empty() || (o.node != 1 && o.node != 2))
    return std::fprintf(stderr, "twonode_peer_down: --dir and --round are required, on a node of the pair\n"), 64;
  if (!o.expect.empty() && o.expect != "none" && o.expect != "disconnected" && o.expect != "silent")
    return std::fprintf(stderr, "twonode_peer_down: --expect none|disconnected|silent\n"), 64;
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (uint32_t i = 0; i < o.per_node; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) return std::perror("fork"), 1;
    if (pid == 0) {
      const int rc = rank_main(o, (o.node - 1) * o.per_node + i);
      std::fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int bad = 0;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    // A rank the case killed on purpose ends by SIGKILL: node 1's check says whether it counted.
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) ++bad;
  }
  if (bad) std::printf("[twonode] FAILED: %s: %d rank(s) of node %u exited badly\n", o.round.c_str(), bad, o.node);
  const int rc = o.expect.empty() ? 0 : check(o);
  return bad || rc ? 1 : 0;
}
